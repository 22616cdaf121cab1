//! Every received sample held to its latency budget: one-way latency from
//! the writer's INFO_TS, within/over counts, causes and a histogram per
//! reader (issue 39; filled in by the budget work).

//! `--clock ptp:SPEC` of the pub-sub nodes: an in-process PTP slave steers
//! the clock samples are stamped and judged on.

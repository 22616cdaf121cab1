//! Why a round was slow: tail attribution from evidence recorded during the run.
//!
//! This kernel has no osnoise/timerlat tracer (where one exists, it sees the
//! same thing from inside the kernel); detpath measures noise from user
//! space the way osnoise does: each polling loop is a
//! [`NoiseProbe`](crate::noise::NoiseProbe) ([`crate::noise`]) that
//! records every iteration longer than a small bound (a *gap*: the thread
//! did not run its loop for that long), with the thread's involuntary
//! context switches across it (`getrusage(RUSAGE_THREAD)`, read only when a
//! gap is seen, so the hot path pays one clock read per iteration). A
//! [`Sampler`](crate::sampler::Sampler) thread ([`crate::sampler`]) reads the per-CPU counters of `/proc/stat` (steal),
//! `/proc/interrupts` and `/proc/softirqs` every few milliseconds.
//!
//! Each gap gets the first cause its evidence supports, in this order:
//! the guest kernel descheduled the thread (involuntary switches during the
//! gap); the hypervisor took the vCPU (the thread was not switched out yet
//! was charged almost none of the gap's CPU time: the guest's paravirt steal
//! clock took it; `CLOCK_THREAD_CPUTIME_ID` read at each gap); an interrupt
//! or softirq ran on the thread's core (its count in the sampling interval
//! around the gap exceeds the run's usual rate, periodic timer and scheduler
//! ticks left out); the core's steal time grew in that interval (steal at
//! /proc/stat's 10 ms resolution); kernel time on the core (the gap was
//! charged to the thread: the tick, a softirq, or its own system call); else
//! it is unexplained. Each
//! round slower than the threshold is then attributed, first match wins:
//! client sent late (a send while the round was out left later than the
//! threshold: the client was not polling), server slow, then the cause of the worst gap of the
//! client or server thread that overlaps the round and, inside it, covers at
//! least half of its excess over the median round trip ([`GAP_SHARE`]: each
//! round's own send is a gap of a few µs, which explains no slow round); no
//! such gap: unexplained.
//!
//! With `--trace-kernel` the kernel's own record of the run joins in
//! (`detpath-ktrace`: interrupts, softirqs, context switches and NAPI polls
//! per core, by BPF): a round that no gap of either polling thread explains
//! gets the kernel work that ran on a polling core inside the round and
//! covered at least half of its excess ([`detpath_ktrace::attribute()`] states
//! the rule), counted by class under *kernel (traced)*.

use crate::noise::{Gap, DEFAULT_GAP_BOUND_NS};
use crate::records::Record;
use crate::sampler::{CpuSample, SAMPLE_PERIOD};
use crate::stats::{quantile_unchecked, Quantile};
use serde::{Deserialize, Serialize};

/// The share of a slow round's excess (its round trip above the median's)
/// that one gap must cover inside the round to be its cause: the kernel
/// tracer's rule, one rule for both ([`detpath_ktrace::needed_ns`]).
pub const GAP_SHARE: f64 = detpath_ktrace::SHARE;

/// Which rounds count as the tail: above a multiple of the run's median, or above a fixed latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TailThreshold {
    /// Above this multiple of the run's median latency (`10x`, the default).
    TimesMedian(f64),
    /// Above this one-way latency, µs (`50us`, `0.2ms`).
    Micros(f64),
}

impl Default for TailThreshold {
    fn default() -> TailThreshold {
        TailThreshold::TimesMedian(10.0)
    }
}

impl std::str::FromStr for TailThreshold {
    type Err = String;
    /// `10x` (times the median), `50us`, `0.2ms`, or a bare number of µs.
    fn from_str(s: &str) -> Result<TailThreshold, String> {
        let bad = || format!("tail threshold `{s}`: give a multiple of the median (`10x`) or a latency (`50us`, `0.2ms`)");
        let s = s.trim();
        if let Some(n) = s.strip_suffix('x') {
            let v: f64 = n.trim().parse().map_err(|_| bad())?;
            return if v > 0.0 && v.is_finite() { Ok(TailThreshold::TimesMedian(v)) } else { Err(bad()) };
        }
        let ns = detpath::sys::units::parse_duration_ns(s, detpath::sys::units::Unit::Micros).map_err(|_| bad())?;
        if ns == 0 {
            return Err(bad());
        }
        Ok(TailThreshold::Micros(ns as f64 / 1e3))
    }
}

impl TailThreshold {
    /// The threshold in ns for a run whose median latency is `median_ns`.
    pub fn resolve(self, median_ns: u64) -> u64 {
        match self {
            TailThreshold::TimesMedian(k) => (median_ns as f64 * k).round() as u64,
            TailThreshold::Micros(us) => (us * 1e3).round() as u64,
        }
    }
}

/// Why a gap or a round was slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A send due while the round was out left later than the threshold: the client was not polling.
    ClientLate,
    /// The server took longer than the threshold between receiving and sending the pong.
    ServerSlow,
    /// The guest kernel switched the polling thread out (involuntary switches across the gap).
    Descheduled,
    /// More interrupts or softirqs than the run's usual rate on the thread's core around the gap.
    Interrupt,
    /// The hypervisor took the vCPU (the gap's time was not charged to the thread, or the core's steal grew).
    Steal,
    /// The gap was charged to the thread: kernel code ran on its core (the tick, a softirq, its own system call).
    KernelTime,
    /// No gap, but a core's ksoftirqd ran or waited more than usual around the round.
    DeferredSoftirq,
    /// No gap explained it; the kernel tracer found kernel work on a polling core covering half its excess.
    KernelTraced,
    /// Nothing the evidence supports.
    Unexplained,
}

impl Cause {
    /// The cause as the tables name it (`client sent late`, `hypervisor steal`, ...).
    pub fn describe(self) -> &'static str {
        match self {
            Cause::ClientLate => "client sent late",
            Cause::ServerSlow => "server slow",
            Cause::Descheduled => "thread descheduled",
            Cause::Interrupt => "interrupt/softirq",
            Cause::Steal => "hypervisor steal",
            Cause::KernelTime => "kernel time on the core",
            Cause::DeferredSoftirq => "softirq deferred to ksoftirqd",
            Cause::KernelTraced => "kernel (traced)",
            Cause::Unexplained => "unexplained",
        }
    }
}

/// The gaps of one polling thread and the CPU it ran on.
#[derive(Debug, Clone, Default)]
pub struct ThreadGaps {
    /// `client` or `server`.
    pub thread: &'static str,
    /// The core it was pinned to (whose counters explain its gaps).
    pub cpu: Option<u32>,
    /// What its noise probe saw, in time order.
    pub gaps: Vec<Gap>,
    /// Gaps it saw but could not keep (its buffer was full): rounds after
    /// that read "no gap" for want of a record.
    pub not_kept: u64,
}

/// One of the largest gaps, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapReport {
    /// The polling thread that had it (`client`, `server`).
    pub thread: String,
    /// Start, ms after the run's first measured probe (negative: during the warm-up).
    pub at_ms: f64,
    /// Its length, µs.
    pub len_us: f64,
    /// The first cause its evidence supports.
    pub cause: Cause,
}

/// The tail section of a run: how many rounds were slow and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TailReport {
    /// The threshold this run's tail is above, µs (resolved from [`TailThreshold`]).
    pub threshold_us: f64,
    /// Rounds above the threshold.
    pub rounds: u64,
    /// Tail rounds whose client sent late ([`Cause::ClientLate`]).
    pub client_late: u64,
    /// Tail rounds the server was slow on ([`Cause::ServerSlow`]).
    pub server_slow: u64,
    /// Tail rounds over a gap where a polling thread was switched out ([`Cause::Descheduled`]).
    pub descheduled: u64,
    /// Tail rounds over a gap with interrupts or softirqs on its core ([`Cause::Interrupt`]).
    pub interrupt: u64,
    /// Tail rounds over a gap the hypervisor took ([`Cause::Steal`]).
    pub steal: u64,
    /// The guest charged the gap to the thread: kernel code ran on its core
    /// (the tick, an interrupt not told apart by the counters, a softirq, or
    /// the thread's own system call, e.g. a send that runs the peer's receive).
    #[serde(default)]
    pub kernel: u64,
    /// No polling thread had a gap, but a core's ksoftirqd ran or waited to
    /// run more than usual around the round: the packet's softirq (on veth,
    /// the peer's NAPI on the sending core) was deferred to that thread.
    #[serde(default)]
    pub ksoftirqd: u64,
    /// Tail rounds nothing explained (those no gap overlapped are also in `unexplained_no_gap`).
    pub unexplained: u64,
    /// Rounds no gap explained that the kernel tracer did (`--trace-kernel`),
    /// by class of kernel work (`kernel: network softirq`, ...).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kernel_traced: std::collections::BTreeMap<String, u64>,
    /// The kernel tracer's own account: records, records lost, and its most frequent causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_trace: Option<KernelTraceSummary>,
    /// Of the unexplained, rounds that no gap of either polling thread
    /// overlapped: both loops ran, the packet waited elsewhere (in a softirq
    /// deferred to ksoftirqd, in a ring, or on the hypervisor's virtual wire).
    #[serde(default)]
    pub unexplained_no_gap: u64,
    /// Gaps the probes saw (client, server) and the largest ones.
    pub gaps_client: u64,
    /// Gaps the server's probe saw.
    pub gaps_server: u64,
    /// Gaps either probe saw but could not keep (its buffer was full); when
    /// not 0, "no gap" in the later rounds may be a missing record.
    #[serde(default)]
    pub gaps_not_kept: u64,
    /// The largest gaps of both threads (at most 10), largest first.
    pub largest_gaps: Vec<GapReport>,
    /// What the evidence was.
    pub method: String,
}

impl TailReport {
    fn count(&mut self, c: Cause) {
        match c {
            Cause::ClientLate => self.client_late += 1,
            Cause::ServerSlow => self.server_slow += 1,
            Cause::Descheduled => self.descheduled += 1,
            Cause::Interrupt => self.interrupt += 1,
            Cause::Steal => self.steal += 1,
            Cause::KernelTime => self.kernel += 1,
            Cause::DeferredSoftirq => self.ksoftirqd += 1,
            Cause::KernelTraced => {}
            Cause::Unexplained => self.unexplained += 1,
        }
    }

    /// "of 73 rounds above 42.1 µs: 61 hypervisor steal, 9 thread descheduled, 3 unexplained".
    pub fn line(&self) -> String {
        let mut parts: Vec<(u64, Cause)> = [
            (self.client_late, Cause::ClientLate),
            (self.server_slow, Cause::ServerSlow),
            (self.descheduled, Cause::Descheduled),
            (self.interrupt, Cause::Interrupt),
            (self.steal, Cause::Steal),
            (self.kernel, Cause::KernelTime),
            (self.ksoftirqd, Cause::DeferredSoftirq),
            (self.kernel_traced.values().sum(), Cause::KernelTraced),
            (self.unexplained, Cause::Unexplained),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .collect();
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        let causes = parts
            .iter()
            .map(|(n, c)| match c {
                Cause::Unexplained if self.unexplained_no_gap > 0 => {
                    format!("{n} unexplained ({} with no gap in either polling thread)", self.unexplained_no_gap)
                }
                Cause::KernelTraced => {
                    let by: Vec<String> = self.kernel_traced.iter().map(|(class, k)| format!("{k} {}", class.trim_start_matches("kernel: "))).collect();
                    format!("{n} kernel, traced ({})", by.join(", "))
                }
                _ => format!("{n} {}", c.describe()),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let not_kept =
            if self.gaps_not_kept > 0 { format!(" ({} gaps seen but not kept: the probes' buffers filled)", self.gaps_not_kept) } else { String::new() };
        let cost = match self.kernel_trace.as_ref().and_then(|k| k.cost.as_ref()) {
            Some(c) => format!(
                "; tracing cost, same run in alternating windows: median {:.2} µs traced / {:.2} µs not, p99 {:.1} / {:.1} µs ({} / {} rounds)",
                c.median_traced_us, c.median_untraced_us, c.p99_traced_us, c.p99_untraced_us, c.rounds_traced, c.rounds_untraced
            ),
            None => String::new(),
        };
        if self.rounds == 0 {
            format!("no rounds above {:.1} µs{cost}", self.threshold_us)
        } else {
            format!("of {} rounds above {:.1} µs: {causes}{not_kept}{cost}", self.rounds, self.threshold_us)
        }
    }
}

/// The samples just before `start` and just after `end` (or the ends of the list).
fn bracket(samples: &[CpuSample], start: u64, end: u64) -> Option<(&CpuSample, &CpuSample)> {
    if samples.len() < 2 {
        return None;
    }
    let before = samples.partition_point(|s| s.t_ns <= start).saturating_sub(1);
    let after = samples.partition_point(|s| s.t_ns < end).min(samples.len() - 1);
    (after > before).then(|| (&samples[before], &samples[after]))
}

/// The usual count of `f` per ns on `cpu` over the whole run.
fn rate(samples: &[CpuSample], cpu: usize, f: fn(&CpuSample) -> &Vec<u64>) -> f64 {
    let (Some(a), Some(b)) = (samples.first(), samples.last()) else { return 0.0 };
    let span = b.t_ns.saturating_sub(a.t_ns).max(1) as f64;
    let d = f(b).get(cpu).copied().unwrap_or(0).saturating_sub(f(a).get(cpu).copied().unwrap_or(0));
    d as f64 / span
}

/// The cause a gap's evidence supports (see the module docs).
pub fn classify_gap(gap: &Gap, cpu: Option<u32>, samples: &[CpuSample], irq_rate: f64, softirq_rate: f64) -> Cause {
    if gap.involuntary_switches > 0 {
        return Cause::Descheduled;
    }
    // Not switched out, yet given almost none of the gap: with paravirt steal
    // accounting the guest does not charge stolen time to the running task,
    // so the hypervisor had the vCPU (to the ns, where /proc/stat's steal
    // column counts 10 ms ticks).
    let len = gap.len_ns();
    if gap.charged_ns.is_some_and(|c| c < len / 4) {
        return Cause::Steal;
    }
    let charged_fully = gap.charged_ns.is_some_and(|c| c >= len * 3 / 4);
    let otherwise = if charged_fully { Cause::KernelTime } else { Cause::Unexplained };
    let (Some(cpu), Some((a, b))) = (cpu.map(|c| c as usize), bracket(samples, gap.start_ns, gap.end_ns)) else {
        return otherwise;
    };
    let delta = |f: fn(&CpuSample) -> &Vec<u64>| f(b).get(cpu).copied().unwrap_or(0).saturating_sub(f(a).get(cpu).copied().unwrap_or(0));
    let span = b.t_ns.saturating_sub(a.t_ns) as f64;
    // More interrupts than the run's usual rate predicts for this interval (plus a margin).
    let excess = |d: u64, r: f64| d as f64 > 2.0 * r * span + 1.0;
    if excess(delta(|s| &s.irqs), irq_rate) || excess(delta(|s| &s.softirqs), softirq_rate) {
        return Cause::Interrupt;
    }
    if delta(|s| &s.steal) > 0 && !charged_fully {
        return Cause::Steal;
    }
    otherwise
}

/// Whether a ksoftirqd of the polling threads' cores ran or waited more than
/// the run's usual rate predicts in the sampling interval around [start, end].
fn deferred_softirq(threads: &[ThreadGaps], samples: &[CpuSample], start: u64, end: u64) -> bool {
    let Some((a, b)) = bracket(samples, start, end) else { return false };
    let span = b.t_ns.saturating_sub(a.t_ns) as f64;
    threads.iter().filter_map(|t| t.cpu.map(|c| c as usize)).any(|cpu| {
        let d = b.ksoftirqd_ns.get(cpu).copied().unwrap_or(0).saturating_sub(a.ksoftirqd_ns.get(cpu).copied().unwrap_or(0));
        // More than twice the usual, and at least 20 µs: a deferral that could hold a round up.
        d as f64 > 2.0 * rate(samples, cpu, |s| &s.ksoftirqd_ns) * span && d > 20_000
    })
}

/// What the kernel tracer recorded during a run, ready to join with its rounds.
pub struct KernelTrace {
    /// The trace as intervals per core.
    pub timeline: detpath_ktrace::Timeline,
    /// The polling cores (the client's and the server's).
    pub cores: Vec<u32>,
    /// The polling threads' ids (never a cause).
    pub own_tids: Vec<u32>,
    /// Records and records lost.
    pub events: u64,
    /// Records lost (ring buffer full, trace full, undecodable).
    pub dropped: u64,
    /// When the tracer was attached in alternating windows (`--trace-cost`):
    /// the attached stretches, CLOCK_MONOTONIC ns. Empty: attached throughout.
    pub alternating: Vec<(u64, u64)>,
}

/// What tracing cost, from one run whose tracer was attached in alternating
/// windows: the rounds that lay wholly inside an attached window against
/// those wholly inside a detached one (a round across a switch is neither).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceCost {
    /// Rounds in attached windows.
    pub rounds_traced: u64,
    /// Rounds in detached windows.
    pub rounds_untraced: u64,
    /// Median one-way latency (µs) with the tracer attached.
    pub median_traced_us: f64,
    /// Median one-way latency (µs) without it.
    pub median_untraced_us: f64,
    /// p99 one-way latency (µs) with the tracer attached.
    pub p99_traced_us: f64,
    /// p99 one-way latency (µs) without it.
    pub p99_untraced_us: f64,
}

impl TraceCost {
    /// Splits `records` by the attached `windows` (sorted, disjoint) and
    /// measures both sides; rounds before the first window or across a
    /// switch count on neither side.
    pub fn measure(records: &[Record], windows: &[(u64, u64)]) -> TraceCost {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        let first = windows.first().map_or(u64::MAX, |w| w.0);
        for r in records {
            let Some(lat) = r.latency_ns() else { continue };
            let (a, b) = (r.client_send_ns, r.client_recv_ns);
            if a < first {
                continue;
            }
            // The last window starting at or before the send.
            let i = windows.partition_point(|w| w.0 <= a);
            let w = windows[i - 1];
            if b <= w.1 {
                on.push(lat);
            } else if a >= w.1 && windows.get(i).is_none_or(|next| b < next.0) {
                off.push(lat);
            }
        }
        on.sort_unstable();
        off.sort_unstable();
        let us = |v: &[u64], q: Quantile| quantile_unchecked(v, q).map_or(0.0, |ns| ns as f64 / 1e3);
        TraceCost {
            rounds_traced: on.len() as u64,
            rounds_untraced: off.len() as u64,
            median_traced_us: us(&on, Quantile::MEDIAN),
            median_untraced_us: us(&off, Quantile::MEDIAN),
            p99_traced_us: us(&on, Quantile::P99),
            p99_untraced_us: us(&off, Quantile::P99),
        }
    }
}

/// The tracer's account in a run's tail section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelTraceSummary {
    /// Records the tracer kept.
    pub events: u64,
    /// Records it lost (ring buffer full, trace full, undecodable).
    pub dropped: u64,
    /// The rule a kernel cause had to meet.
    pub rule: String,
    /// The most frequent kernel causes with the work that met the rule (`softirq NET_RX on cpu 1`), with counts.
    pub top: Vec<(String, u64)>,
    /// With `--trace-cost`: the same run with and without the tracer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TraceCost>,
}

/// Attributes every round slower than `threshold_ns` (see the module docs).
/// Gap times are given from the first measured send (the timeline's zero);
/// `start_ns` (the run's first scheduled send) when no round was sent.
pub fn attribute(records: &[Record], threshold_ns: u64, threads: &[ThreadGaps], samples: &[CpuSample], start_ns: u64) -> TailReport {
    attribute_traced(records, threshold_ns, threads, samples, start_ns, None)
}

/// [`attribute`], with the kernel tracer's record for the rounds no gap explains.
pub fn attribute_traced(
    records: &[Record],
    threshold_ns: u64,
    threads: &[ThreadGaps],
    samples: &[CpuSample],
    start_ns: u64,
    kernel: Option<&KernelTrace>,
) -> TailReport {
    let start_ns = records.iter().map(|r| r.client_send_ns).filter(|&t| t != 0).min().unwrap_or(start_ns);
    let mut report = TailReport {
        threshold_us: threshold_ns as f64 / 1e3,
        method: format!(
            "user-space noise probe in each polling loop (gaps > {} µs, involuntary switches per gap); /proc/stat steal, /proc/interrupts, /proc/softirqs per CPU every {} ms; this kernel has no osnoise tracer",
            DEFAULT_GAP_BOUND_NS / 1000,
            SAMPLE_PERIOD.as_millis()
        ),
        ..TailReport::default()
    };
    // Each gap's cause, once.
    let mut classified: Vec<Vec<(Gap, Cause)>> = Vec::new();
    for t in threads {
        let cpu = t.cpu.map(|c| c as usize);
        let (ir, sr) = cpu.map(|c| (rate(samples, c, |s| &s.irqs), rate(samples, c, |s| &s.softirqs))).unwrap_or((0.0, 0.0));
        classified.push(t.gaps.iter().map(|g| (*g, classify_gap(g, t.cpu, samples, ir, sr))).collect());
    }
    for (t, gaps) in threads.iter().zip(&classified) {
        report.gaps_not_kept += t.not_kept;
        match t.thread {
            "client" => report.gaps_client = gaps.len() as u64,
            _ => report.gaps_server = gaps.len() as u64,
        }
    }
    let mut largest: Vec<GapReport> = threads
        .iter()
        .zip(&classified)
        .flat_map(|(t, gs)| {
            gs.iter().map(move |(g, c)| GapReport {
                thread: t.thread.to_string(),
                at_ms: (g.start_ns as f64 - start_ns as f64) / 1e6,
                len_us: g.len_ns() as f64 / 1e3,
                cause: *c,
            })
        })
        .collect();
    largest.sort_by(|a, b| b.len_us.total_cmp(&a.len_us));
    largest.truncate(10);
    report.largest_gaps = largest;
    // The median round: a slow round's excess is its round trip above it.
    let median_ns = {
        let mut l: Vec<u64> = records.iter().filter_map(Record::latency_ns).collect();
        l.sort_unstable();
        l.get(l.len() / 2).copied().unwrap_or(0)
    };
    let mut top: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let Some(lat) = r.latency_ns() else { continue };
        if lat <= threshold_ns {
            continue;
        }
        report.rounds += 1;
        // The client was not running its loop while this round was out: one of
        // its sends from this round's until its pong came in left late. (A
        // stalled client does not slow the round it sends late, whose latency
        // starts at the actual send, but the rounds in flight: their pongs
        // wait for it.)
        let client_stalled = records[i..].iter().take_while(|o| o.client_send_ns <= r.client_recv_ns).any(|o| o.send_lateness_ns > threshold_ns);
        let cause = if client_stalled {
            Cause::ClientLate
        } else if r.server_time_ns().is_some_and(|s| s > threshold_ns) {
            Cause::ServerSlow
        } else {
            // The worst-ranked evidence among the gaps that overlap the round
            // and, inside it, cover at least half of its excess: the loop's own
            // send (a gap of a few µs in every round) explains no slow round.
            let excess_ns = 2 * lat.saturating_sub(median_ns);
            let need_ns = detpath_ktrace::needed_ns(excess_ns);
            let mut overlapped = false;
            let covering = classified.iter().flat_map(|gs| {
                let from = gs.partition_point(|(g, _)| g.end_ns < r.client_send_ns);
                gs[from..].iter().take_while(|(g, _)| g.start_ns <= r.client_recv_ns)
            });
            let mut gap_cause = None;
            for (g, c) in covering {
                overlapped = true;
                let inside = detpath_ktrace::overlap_ns((g.start_ns, g.end_ns), (r.client_send_ns, r.client_recv_ns));
                let cause = match (*c, g.charged_ns) {
                    // A gap partly charged to the thread: the uncharged part was the
                    // hypervisor's, the charged part kernel time; either explains the
                    // round when its share of the gap inside the round covers half.
                    (Cause::Unexplained, Some(charged)) => {
                        let part = |p: u64| (inside as u128 * p.min(g.len_ns()) as u128 / g.len_ns().max(1) as u128) as u64;
                        if part(g.len_ns() - charged.min(g.len_ns())) >= need_ns {
                            Some(Cause::Steal)
                        } else if part(charged) >= need_ns {
                            Some(Cause::KernelTime)
                        } else {
                            None
                        }
                    }
                    (c, _) => (inside >= need_ns).then_some(c),
                };
                if let Some(c) = cause {
                    gap_cause = Some(gap_cause.map_or(c, |worst: Cause| worst.min(c)));
                }
            }
            match gap_cause {
                Some(c) if c != Cause::Unexplained => c,
                // A gap that explains nothing, or no gap at all: the round is the tracer's.
                _ => {
                    let traced = kernel.and_then(|k| {
                        let round =
                            detpath_ktrace::Round { start_ns: r.client_send_ns, end_ns: r.client_recv_ns, excess_ns: 2 * lat.saturating_sub(median_ns) };
                        detpath_ktrace::attribute(&k.timeline, &round, &k.cores, &k.own_tids)
                    });
                    if let Some(c) = traced {
                        *report.kernel_traced.entry(c.work.class().to_string()).or_default() += 1;
                        *top.entry(format!("{} on cpu {}", c.work.label(), c.cpu)).or_default() += 1;
                        Cause::KernelTraced
                    } else if overlapped {
                        Cause::Unexplained
                    } else if deferred_softirq(threads, samples, r.client_send_ns, r.client_recv_ns) {
                        Cause::DeferredSoftirq
                    } else {
                        report.unexplained_no_gap += 1;
                        Cause::Unexplained
                    }
                }
            }
        };
        report.count(cause);
    }
    if let Some(k) = kernel {
        let mut top: Vec<(String, u64)> = top.into_iter().collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        top.truncate(8);
        report.kernel_trace = Some(KernelTraceSummary {
            events: k.events,
            dropped: k.dropped,
            rule: format!(
                "kernel work on a polling core (cpus {:?}) inside the round, one kind per core (an IRQ line, a softirq vector, the timer, IPIs, other tasks), covering at least {:.0}% of the round's excess over the median round trip",
                k.cores,
                detpath_ktrace::SHARE * 100.0
            ),
            top,
            cost: (!k.alternating.is_empty()).then(|| TraceCost::measure(records, &k.alternating)),
        });
        report.method.push_str("; kernel tracer (BPF raw tracepoints: irq, timer, IPIs, softirq, sched_switch, napi_poll) for rounds no gap explains");
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::*;
    use crate::sampler::*;
    use crate::records::Status;

    fn rec(seq: u64, t0: u64, lat_ns: u64, lateness: u64, server: u64) -> Record {
        Record {
            seq,
            client_send_ns: t0,
            server_recv_ns: t0 + 100,
            server_send_ns: t0 + 100 + server,
            client_recv_ns: t0 + 2 * lat_ns,
            send_lateness_ns: lateness,
            status: Status::Ok,
        }
    }

    /// 100 rounds of 10 us one-way, 1 ms apart; rounds 50 and 70 took 60 us
    /// one-way (100 us of excess round trip). The trace: 70 us of NET_RX on
    /// the server's core in round 50, only a 4 us tick in round 70.
    fn two_slow_rounds_and_their_trace() -> (Vec<Record>, KernelTrace) {
        use detpath_ktrace::{Event, Kind, Timeline};
        let mut records: Vec<Record> = (0..100).map(|i| rec(i, 1_000_000 + i * 1_000_000, 10_000, 0, 500)).collect();
        records[50] = rec(50, 51_000_000, 60_000, 0, 500);
        records[70] = rec(70, 71_000_000, 60_000, 0, 500);
        let ev =
            |cpu: u32, kind: Kind, num: u16, start: u64, end: u64| Event { start_ns: start, end_ns: end, cpu, kind, num, pid: 0, arg: 0, comm: String::new() };
        let trace = KernelTrace {
            timeline: Timeline::new(&[ev(1, Kind::Softirq, 3, 51_010_000, 51_080_000), ev(0, Kind::Timer, 0, 71_010_000, 71_014_000)]),
            cores: vec![0, 1],
            own_tids: vec![],
            events: 2,
            dropped: 0,
            alternating: vec![],
        };
        (records, trace)
    }

    #[test]
    fn the_trace_cost_splits_rounds_by_the_attached_windows() {
        // Rounds every 1 ms, 10 us one-way; attached 0-20 ms and 40-60 ms:
        // 20 us one-way inside those windows, 10 us outside.
        let records: Vec<Record> = (0..80u64).map(|i| rec(i, 100_000 + i * 1_000_000, 10_000, 0, 500)).collect();
        let windows = [(0, 20_000_000), (40_000_000, 60_000_000)];
        let records: Vec<Record> = records
            .into_iter()
            .map(|r| if windows.iter().any(|w| r.client_send_ns >= w.0 && r.client_send_ns < w.1) { rec(r.seq, r.client_send_ns, 20_000, 0, 500) } else { r })
            .collect();
        let c = TraceCost::measure(&records, &windows);
        // Round 19 (19-19.04 ms) fits its window; round 59 too; none straddles.
        assert_eq!((c.rounds_traced, c.rounds_untraced), (40, 40), "{c:?}");
        assert_eq!((c.median_traced_us, c.median_untraced_us), (20.0, 10.0));
        // A round across a switch is on neither side; before the first window, neither.
        let across = [rec(0, 19_990_000, 20_000, 0, 500), rec(1, 39_990_000, 20_000, 0, 500)];
        let c = TraceCost::measure(&across, &windows);
        assert_eq!((c.rounds_traced, c.rounds_untraced), (0, 0));
        assert_eq!(TraceCost::measure(&records, &[]).rounds_traced, 0);
    }

    #[test]
    fn the_kernel_trace_explains_a_no_gap_round_only_when_it_covers_half_the_excess() {
        let (records, trace) = two_slow_rounds_and_their_trace();
        let threads = [
            ThreadGaps { thread: "client", cpu: Some(0), gaps: vec![], not_kept: 0 },
            ThreadGaps { thread: "server", cpu: Some(1), gaps: vec![], not_kept: 0 },
        ];
        let r = attribute_traced(&records, 30_000, &threads, &[], 0, Some(&trace));
        assert_eq!(r.rounds, 2);
        assert_eq!(r.kernel_traced.get("kernel: network softirq"), Some(&1), "{r:?}");
        assert_eq!((r.unexplained, r.unexplained_no_gap), (1, 1), "the tick alone explains nothing");
        assert!(r.line().contains("1 kernel, traced (1 network softirq)"), "{}", r.line());
        assert_eq!(r.kernel_trace.as_ref().unwrap().top, vec![("softirq NET_RX on cpu 1".to_string(), 1)]);
        // Without the trace both stay unexplained, as before.
        assert_eq!(attribute(&records, 30_000, &threads, &[], 0).unexplained, 2);
    }

    #[test]
    fn the_kernel_trace_also_explains_a_round_whose_gap_explains_nothing() {
        // As above, but the server's loop had a gap in rounds 50 and 70 that
        // its own evidence cannot explain (not switched out, CPU time unknown).
        let (records, trace) = two_slow_rounds_and_their_trace();
        let gap = |start: u64| Gap { start_ns: start, end_ns: start + 70_000, involuntary_switches: 0, charged_ns: None };
        let threads = [
            ThreadGaps { thread: "client", cpu: Some(0), gaps: vec![], not_kept: 0 },
            ThreadGaps { thread: "server", cpu: Some(1), gaps: vec![gap(51_005_000), gap(71_005_000)], not_kept: 0 },
        ];
        let r = attribute_traced(&records, 30_000, &threads, &[], 0, Some(&trace));
        assert_eq!(r.rounds, 2);
        assert_eq!(r.kernel_traced.get("kernel: network softirq"), Some(&1), "{r:?}");
        // Round 70 had a gap: unexplained, but not one "with no gap".
        assert_eq!((r.unexplained, r.unexplained_no_gap), (1, 0), "{r:?}");
        // Untraced, both gaps stay unexplained.
        let r = attribute(&records, 30_000, &threads, &[], 0);
        assert_eq!((r.unexplained, r.unexplained_no_gap), (2, 0), "{r:?}");
    }

    #[test]
    fn a_traced_reader_reads_only_steal_and_ksoftirqd() {
        let s = ProcReader::host().traced().sample(1);
        assert!(!s.steal.is_empty() && !s.ksoftirqd_ns.is_empty(), "{s:?}");
        assert!(s.irqs.is_empty() && s.softirqs.is_empty(), "{s:?}");
    }

    #[test]
    fn parsers_read_the_kernel_formats() {
        let stat = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 83619 154108 25845 24436 795 0 396 1852 0 0\ncpu1 85034 148827 33454 19683 1634 0 518 1900 0 0\nintr 5\n";
        assert_eq!(parse_steal(stat), vec![1852, 1900]);
        let irq = "           CPU0       CPU1       \n 24:          1          0  IO-APIC   5-edge      ACPI:Ged\nLOC:    500    600   Local timer interrupts\nERR:          0\n";
        assert_eq!(parse_per_cpu_table(irq, &["LOC"]), vec![1, 0]);
        assert_eq!(parse_per_cpu_table(irq, &[]), vec![501, 600]);
        assert!(parse_per_cpu_table("", &[]).is_empty());
        let real = ProcReader::host().sample(1);
        assert!(!real.steal.is_empty() && !real.irqs.is_empty() && !real.softirqs.is_empty(), "{real:?}");
        assert_eq!(parse_schedstat("2099735970 90261380625 66890\n"), 2099735970 + 90261380625);
        assert!(real.ksoftirqd_ns.len() == real.irqs.len() && real.ksoftirqd_ns.iter().all(|&n| n > 0), "every CPU's ksoftirqd found: {real:?}");
    }

    #[test]
    fn thresholds_parse() {
        assert_eq!("10x".parse::<TailThreshold>().unwrap().resolve(4_000), 40_000);
        assert_eq!("50us".parse::<TailThreshold>().unwrap().resolve(4_000), 50_000);
        assert_eq!("0.2ms".parse::<TailThreshold>().unwrap().resolve(1), 200_000);
        assert_eq!("75".parse::<TailThreshold>().unwrap().resolve(1), 75_000);
        assert!("fast".parse::<TailThreshold>().unwrap_err().contains("10x"));
        assert!("-3x".parse::<TailThreshold>().is_err());
    }

    /// Steal and interrupt attribution against a fake /proc tree, sampled for real.
    #[test]
    fn gaps_are_classified_from_fake_proc_counters() {
        let dir = std::env::temp_dir().join(format!("detpath-tail-{}", std::process::id()));
        let reader = ProcReader::new(&dir);
        let mut samples = Vec::new();
        // t=0, 10, 20, 30 ms: steady counters, then cpu1 steal +3 between 10 and 20 ms,
        // then cpu0 a burst of 50 device interrupts between 20 and 30 ms.
        for (t, steal, irqs) in [(0u64, [0u64, 0], [10u64, 10]), (10, [0, 0], [11, 11]), (20, [0, 3], [12, 12]), (30, [0, 3], [62, 13])] {
            write_fake_proc(&dir, &steal, &irqs, &[5, 5]).unwrap();
            samples.push(reader.sample(t * 1_000_000));
        }
        let _ = std::fs::remove_dir_all(&dir);
        let ms = 1_000_000;
        let (ir0, sr0) = (rate(&samples, 0, |s| &s.irqs), rate(&samples, 0, |s| &s.softirqs));
        let (ir1, sr1) = (rate(&samples, 1, |s| &s.irqs), rate(&samples, 1, |s| &s.softirqs));
        let g = |a: u64, b: u64, sw: u32| Gap { start_ns: a * ms, end_ns: b * ms, involuntary_switches: sw, charged_ns: None };
        assert_eq!(classify_gap(&g(12, 14, 0), Some(1), &samples, ir1, sr1), Cause::Steal);
        assert_eq!(classify_gap(&g(12, 14, 0), Some(0), &samples, ir0, sr0), Cause::Unexplained);
        assert_eq!(classify_gap(&g(22, 24, 0), Some(0), &samples, ir0, sr0), Cause::Interrupt);
        assert_eq!(classify_gap(&g(22, 24, 2), Some(0), &samples, ir0, sr0), Cause::Descheduled, "switches come first");
        assert_eq!(classify_gap(&g(2, 4, 0), Some(1), &samples, ir1, sr1), Cause::Unexplained);
        // The CPU time the thread was charged during the gap: none of it is
        // the hypervisor's (even without a steal tick); all of it is kernel
        // time on the core, which a /proc/stat steal tick does not overrule.
        let charged = |gap: Gap, c: u64| Gap { charged_ns: Some(c * ms / 10), ..gap };
        assert_eq!(classify_gap(&charged(g(2, 4, 0), 1), Some(1), &samples, ir1, sr1), Cause::Steal);
        assert_eq!(classify_gap(&charged(g(2, 4, 0), 1), None, &samples, ir1, sr1), Cause::Steal, "no CPU known: still told");
        assert_eq!(classify_gap(&charged(g(2, 4, 0), 19), Some(1), &samples, ir1, sr1), Cause::KernelTime);
        assert_eq!(classify_gap(&charged(g(12, 14, 0), 20), Some(1), &samples, ir1, sr1), Cause::KernelTime);
        assert_eq!(classify_gap(&charged(g(2, 4, 0), 10), Some(1), &samples, ir1, sr1), Cause::Unexplained, "half charged: neither");
        assert_eq!(classify_gap(&charged(g(22, 24, 1), 0), Some(0), &samples, ir0, sr0), Cause::Descheduled, "switches still come first");
    }

    #[test]
    fn a_round_no_gap_overlapped_is_a_deferred_softirq_when_ksoftirqd_ran() {
        let dir = std::env::temp_dir().join(format!("detpath-ksirq-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_fake_proc(&dir, &[0, 0], &[0, 0], &[0, 0]).unwrap();
        write_fake_ksoftirqd(&dir, 0, 11, 0, 0).unwrap();
        write_fake_ksoftirqd(&dir, 1, 12, 0, 0).unwrap();
        let reader = ProcReader::new(&dir);
        let ms = 1_000_000;
        let mut samples = Vec::new();
        // ksoftirqd/0 runs 10 µs per 10 ms, except 900 µs (run + wait) between 30 and 40 ms.
        for (t, k0) in [(0u64, 0u64), (10, 10_000), (20, 20_000), (30, 30_000), (40, 930_000), (50, 940_000)] {
            write_fake_ksoftirqd(&dir, 0, 11, k0 / 2, k0 - k0 / 2).unwrap();
            samples.push(reader.sample(t * ms));
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(samples[4].ksoftirqd_ns, vec![930_000, 0], "found by comm, run + wait");
        let threads = [
            ThreadGaps { thread: "client", cpu: Some(0), gaps: vec![], not_kept: 0 },
            ThreadGaps { thread: "server", cpu: Some(1), gaps: vec![], not_kept: 0 },
        ];
        let records = vec![rec(0, 5 * ms, 90_000, 0, 1_000), rec(1, 35 * ms, 90_000, 0, 1_000), rec(2, 45 * ms, 4_000, 0, 1_000)];
        let r = attribute(&records, 50_000, &threads, &samples, 0);
        assert_eq!((r.rounds, r.ksoftirqd, r.unexplained, r.unexplained_no_gap), (2, 1, 1, 1), "{r:?}");
        assert!(r.line().contains("1 softirq deferred to ksoftirqd"), "{}", r.line());
    }

    #[test]
    fn a_gap_explains_a_round_only_when_it_covers_half_its_excess() {
        // 99 rounds of 10 us one-way (the median), 1 ms apart; round 50 took
        // 60 us one-way: 100 us of excess round trip.
        let mut records: Vec<Record> = (0..99u64).map(|i| rec(i, 1_000_000 + i * 1_000_000, 10_000, 0, 500)).collect();
        records[50] = rec(50, 51_000_000, 60_000, 0, 500);
        let gap = |start: u64, len: u64| Gap { start_ns: start, end_ns: start + len, involuntary_switches: 1, charged_ns: None };
        let threads = |gaps: Vec<Gap>| [ThreadGaps { thread: "client", cpu: None, gaps, not_kept: 0 }];
        // The round's own send: a descheduled 3 us gap inside it is no cause.
        let r = attribute(&records, 30_000, &threads(vec![gap(51_000_100, 3_000)]), &[], 0);
        assert_eq!((r.rounds, r.descheduled, r.unexplained, r.unexplained_no_gap), (1, 0, 1, 0), "{}", r.line());
        // 49 us of 100 is short of half; 50 us inside the round is enough.
        let r = attribute(&records, 30_000, &threads(vec![gap(51_000_100, 49_000)]), &[], 0);
        assert_eq!(r.descheduled, 0, "{}", r.line());
        let r = attribute(&records, 30_000, &threads(vec![gap(51_000_100, 50_000)]), &[], 0);
        assert_eq!(r.descheduled, 1, "{}", r.line());
        // Only the part inside the round counts: a long gap ending 20 us into it is not enough.
        let r = attribute(&records, 30_000, &threads(vec![gap(50_000_000, 1_020_000)]), &[], 0);
        assert_eq!(r.descheduled, 0, "{}", r.line());
        // A gap of 80 us half charged to the thread (neither cause alone by the
        // gap's rule): 40 us uncharged is short of 50; 70 of 80 uncharged is steal.
        let part = |charged: u64| Gap { involuntary_switches: 0, charged_ns: Some(charged), ..gap(51_000_100, 80_000) };
        let r = attribute(&records, 30_000, &threads(vec![part(40_000)]), &[], 0);
        assert_eq!((r.steal, r.kernel, r.unexplained), (0, 0, 1), "{}", r.line());
        let r = attribute(&records, 30_000, &threads(vec![part(30_000)]), &[], 0);
        assert_eq!((r.steal, r.kernel), (1, 0), "{}", r.line());
        let r = attribute(&records, 30_000, &threads(vec![part(55_000)]), &[], 0);
        assert_eq!((r.steal, r.kernel), (0, 1), "{}", r.line());
    }

    #[test]
    fn rounds_take_the_first_matching_cause() {
        let ms = 1_000_000;
        let t = |sec_ms: u64| sec_ms * ms;
        let records = vec![
            rec(0, t(1), 5_000, 0, 1_000),       // fast
            rec(1, t(2), 90_000, 80_000, 1_000), // client late
            rec(2, t(3), 90_000, 0, 70_000),     // server slow
            rec(3, t(4), 90_000, 0, 1_000),      // overlaps a descheduled client gap
            rec(4, t(5), 90_000, 0, 1_000),      // overlaps an unexplained server gap only
            rec(5, t(6), 90_000, 0, 1_000),      // no gap at all
        ];
        let client = ThreadGaps {
            thread: "client",
            cpu: None,
            gaps: vec![Gap { start_ns: t(4) + 10, end_ns: t(4) + 60_000, involuntary_switches: 1, charged_ns: None }],
            not_kept: 0,
        };
        let server = ThreadGaps {
            thread: "server",
            cpu: None,
            gaps: vec![Gap { start_ns: t(5) + 10, end_ns: t(5) + 60_000, involuntary_switches: 0, charged_ns: None }],
            not_kept: 0,
        };
        let r = attribute(&records, 50_000, &[client, server], &[], t(0));
        assert_eq!((r.rounds, r.client_late, r.server_slow, r.descheduled, r.unexplained, r.unexplained_no_gap), (5, 1, 1, 1, 2, 1));
        assert_eq!((r.gaps_client, r.gaps_server, r.largest_gaps.len()), (1, 1, 2));
        assert!(r.line().starts_with("of 5 rounds above 50.0 µs: 2 unexplained (1 with no gap in either polling thread)"), "{}", r.line());
        let quiet = attribute(&records[..1], 50_000, &[], &[], 0);
        assert_eq!(quiet.rounds, 0);
        assert_eq!(quiet.line(), "no rounds above 50.0 µs");
    }
}

//! Joining the kernel trace with the benchmark's rounds: which kernel work
//! made a round slow.
//!
//! **The rule** (so that it cannot be gamed by a busy trace): a round's
//! *excess* is its round-trip time minus the run's median. Kernel work is a
//! cause of the round only when
//! 1. it ran on a core that held the packet during the round: in a
//!    ping-pong each polling core does (the sender's core runs the transmit
//!    path and, on veth, the receive softirq that delivers the frame to the
//!    peer's queue; the receiver's polling thread must then run to take it;
//!    the reply does the same the other way), so these are the client's and
//!    the server's polling cores, and only the part of the work inside the
//!    round's window [client send, client receive] counts; and
//! 2. all the work of one kind on one core in that window (one IRQ line, one
//!    softirq vector, the timer interrupt, IPIs, or other tasks: a CPU load
//!    of several processes takes turns) adds up to at least [`SHARE`] of the
//!    excess.
//!
//! The largest such group is the cause (for tasks, named by the task that
//! ran longest in the window). A timer tick that merely overlaps
//! (a few µs against an excess of tens of µs) is never one; a round whose
//! largest group falls short stays unexplained. The polling threads
//! themselves and the idle task are never causes.

use crate::event::{softirq_name, Event, Kind};
use std::collections::BTreeMap;

/// The share of a round's excess that one group of kernel work must cover to be its cause.
pub const SHARE: f64 = 0.5;

/// How much of a round's excess one cause must cover (ns, at least 1): [`SHARE`] of it.
pub fn needed_ns(excess_ns: u64) -> u64 {
    ((excess_ns as f64 * SHARE).ceil() as u64).max(1)
}

/// The part of [a_start, a_end] inside [b_start, b_end], ns.
pub fn overlap_ns((a_start, a_end): (u64, u64), (b_start, b_end): (u64, u64)) -> u64 {
    a_end.min(b_end).saturating_sub(a_start.max(b_start))
}

/// What ran on a core, as an interval.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// A device interrupt handler (the IRQ number).
    Irq(u16),
    /// A softirq (the vector).
    Softirq(u16),
    /// The local timer interrupt.
    Timer,
    /// Reschedule or call-function IPIs.
    Ipi,
    /// Another task (thread id and name).
    Task(u32, String),
}

impl Work {
    /// A short label, e.g. `softirq NET_RX`, `task kworker/1:1 (412)`.
    pub fn label(&self) -> String {
        match self {
            Work::Irq(n) => format!("irq {n}"),
            Work::Softirq(v) => format!("softirq {}", softirq_name(*v)),
            Work::Timer => "timer interrupt".into(),
            Work::Ipi => "IPI".into(),
            Work::Task(pid, comm) => format!("task {comm} ({pid})"),
        }
    }

    /// The cause class used in tables (`kernel: softirq`, ...).
    pub fn class(&self) -> &'static str {
        match self {
            Work::Irq(_) => "kernel: device interrupt",
            Work::Softirq(3) | Work::Softirq(2) => "kernel: network softirq",
            Work::Softirq(_) => "kernel: other softirq",
            Work::Timer => "kernel: timer interrupt",
            Work::Ipi => "kernel: IPI",
            Work::Task(_, _) => "kernel: another task on the core",
        }
    }
}

/// One interval of work on one core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// End, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// What ran.
    pub work: Work,
}

/// The trace as intervals per core, sorted by start, ready to be joined with rounds.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    per_cpu: BTreeMap<u32, Vec<Span>>,
    /// The longest span on any core (bounds the search window).
    longest_ns: u64,
}

impl Timeline {
    /// Builds the timeline: interrupts and softirqs are intervals already;
    /// tasks come from the context switches (a task ran on its core from the
    /// previous switch there until the switch that took it off).
    pub fn new(events: &[Event]) -> Timeline {
        let mut per_cpu: BTreeMap<u32, Vec<Span>> = BTreeMap::new();
        let mut last_switch: BTreeMap<u32, u64> = BTreeMap::new();
        let mut switches: Vec<&Event> = events.iter().filter(|e| e.kind == Kind::Switch).collect();
        switches.sort_by_key(|e| (e.cpu, e.end_ns));
        for e in switches {
            if let Some(from) = last_switch.insert(e.cpu, e.end_ns) {
                if e.pid != 0 {
                    per_cpu.entry(e.cpu).or_default().push(Span { start_ns: from, end_ns: e.end_ns, work: Work::Task(e.pid, e.comm.clone()) });
                }
            }
        }
        for e in events {
            let work = match e.kind {
                Kind::Irq => Work::Irq(e.num),
                Kind::Softirq => Work::Softirq(e.num),
                Kind::Timer => Work::Timer,
                Kind::IpiResched | Kind::IpiCall => Work::Ipi,
                Kind::Switch | Kind::Napi => continue,
            };
            per_cpu.entry(e.cpu).or_default().push(Span { start_ns: e.start_ns, end_ns: e.end_ns, work });
        }
        let mut longest_ns = 0;
        for spans in per_cpu.values_mut() {
            spans.sort_by_key(|s| s.start_ns);
            longest_ns = spans.iter().map(|s| s.end_ns.saturating_sub(s.start_ns)).max().unwrap_or(0).max(longest_ns);
        }
        Timeline { per_cpu, longest_ns }
    }

    /// The spans of `cpu` that overlap [from, to].
    pub fn overlapping(&self, cpu: u32, from: u64, to: u64) -> impl Iterator<Item = &Span> {
        let spans = self.per_cpu.get(&cpu).map(Vec::as_slice).unwrap_or(&[]);
        // Spans are sorted by start; none starting before from - longest can reach from.
        let first = spans.partition_point(|s| s.start_ns.saturating_add(self.longest_ns) < from);
        spans[first..].iter().take_while(move |s| s.start_ns <= to).filter(move |s| s.end_ns >= from)
    }
}

/// One slow round, as the benchmark saw it.
#[derive(Clone, Copy, Debug)]
pub struct Round {
    /// When the client sent (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// When the client received the reply.
    pub end_ns: u64,
    /// Its round-trip time minus the run's median.
    pub excess_ns: u64,
}

/// The kernel work found to be a round's cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelCause {
    /// The core it ran on.
    pub cpu: u32,
    /// What it was.
    pub work: Work,
    /// How much of its group (all other tasks, for a task) fell inside the round (ns).
    pub overlap_ns: u64,
}

/// The cause of `round` under the rule above, or `None`.
/// `cores`: the polling cores; `own`: the polling threads' ids (never a cause).
pub fn attribute(timeline: &Timeline, round: &Round, cores: &[u32], own: &[u32]) -> Option<KernelCause> {
    // A group is one kind of work on one core; all other tasks of a core are one group.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Group {
        Work(Work),
        Tasks,
    }
    let mut groups: BTreeMap<(u32, Group), u64> = BTreeMap::new();
    let mut tasks: BTreeMap<(u32, Work), u64> = BTreeMap::new();
    for &cpu in cores {
        for s in timeline.overlapping(cpu, round.start_ns, round.end_ns) {
            let overlap = overlap_ns((s.start_ns, s.end_ns), (round.start_ns, round.end_ns));
            let group = match &s.work {
                Work::Task(pid, _) if own.contains(pid) => continue,
                Work::Task(..) => {
                    *tasks.entry((cpu, s.work.clone())).or_default() += overlap;
                    Group::Tasks
                }
                w => Group::Work(w.clone()),
            };
            *groups.entry((cpu, group)).or_default() += overlap;
        }
    }
    let need = needed_ns(round.excess_ns);
    let ((cpu, group), overlap_ns) = groups.into_iter().filter(|(_, overlap)| *overlap >= need).max_by_key(|(_, overlap)| *overlap)?;
    let work = match group {
        Group::Work(w) => w,
        Group::Tasks => tasks.into_iter().filter(|((c, _), _)| *c == cpu).max_by_key(|(_, t)| *t).map(|((_, w), _)| w)?,
    };
    Some(KernelCause { cpu, work, overlap_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, cpu: u32, start: u64, end: u64, num: u16, pid: u32, comm: &str) -> Event {
        Event { start_ns: start, end_ns: end, cpu, kind, num, pid, arg: 0, comm: comm.into() }
    }

    fn round(start: u64, end: u64, excess: u64) -> Round {
        Round { start_ns: start, end_ns: end, excess_ns: excess }
    }

    #[test]
    fn a_softirq_covering_most_of_the_excess_is_the_cause() {
        let t = Timeline::new(&[ev(Kind::Softirq, 0, 1_000, 41_000, 3, 0, ""), ev(Kind::Timer, 1, 5_000, 7_000, 0, 0, "")]);
        let c = attribute(&t, &round(0, 60_000, 50_000), &[0, 1], &[]).unwrap();
        assert_eq!((c.cpu, c.work.clone(), c.overlap_ns), (0, Work::Softirq(3), 40_000));
        assert_eq!(c.work.label(), "softirq NET_RX");
    }

    #[test]
    fn a_tick_that_merely_overlaps_is_not_a_cause() {
        let t = Timeline::new(&[ev(Kind::Timer, 1, 5_000, 9_000, 0, 0, "")]);
        assert_eq!(attribute(&t, &round(0, 60_000, 50_000), &[0, 1], &[]), None);
    }

    #[test]
    fn work_on_another_core_or_outside_the_window_does_not_count() {
        let t = Timeline::new(&[ev(Kind::Irq, 2, 0, 60_000, 11, 0, ""), ev(Kind::Irq, 0, 70_000, 200_000, 11, 0, "")]);
        assert_eq!(attribute(&t, &round(0, 60_000, 50_000), &[0, 1], &[]), None);
        // Only the part inside the window counts: 30 of 100 us is short of half of 80.
        let t = Timeline::new(&[ev(Kind::Irq, 0, 30_000, 130_000, 11, 0, "")]);
        assert_eq!(attribute(&t, &round(0, 60_000, 80_000), &[0], &[]), None);
        assert!(attribute(&t, &round(0, 60_000, 50_000), &[0], &[]).is_some());
    }

    #[test]
    fn tasks_come_from_switches_and_own_threads_and_idle_are_excluded() {
        // On cpu 1: idle until 10us, then "stress-ng" until 50us, then our poller (pid 7) until 90us.
        let evs = [
            ev(Kind::Switch, 1, 0, 0, 0, 7, "poller"),
            ev(Kind::Switch, 1, 10_000, 10_000, 0, 0, "swapper/1"),
            ev(Kind::Switch, 1, 50_000, 50_000, 1, 99, "stress-ng"),
            ev(Kind::Switch, 1, 90_000, 90_000, 0, 7, "poller"),
        ];
        let t = Timeline::new(&evs);
        let c = attribute(&t, &round(0, 100_000, 60_000), &[1], &[7]).unwrap();
        assert_eq!(c.work, Work::Task(99, "stress-ng".into()));
        assert_eq!(c.overlap_ns, 40_000);
        assert_eq!(c.work.class(), "kernel: another task on the core");
        // Without excluding the poller, it (40 us, from 50 to 90) ties; own threads must never win.
        assert_ne!(attribute(&t, &round(0, 100_000, 60_000), &[1], &[7]).unwrap().work, Work::Task(7, "poller".into()));
    }

    #[test]
    fn tasks_taking_turns_add_up_and_the_longest_names_them() {
        let evs = [
            ev(Kind::Switch, 0, 0, 0, 0, 7, "poller"),
            ev(Kind::Switch, 0, 20_000, 20_000, 1, 51, "stress-ng-cpu"),
            ev(Kind::Switch, 0, 30_000, 30_000, 1, 52, "stress-ng-cpu"),
            ev(Kind::Switch, 0, 55_000, 55_000, 1, 51, "stress-ng-cpu"),
        ];
        // 20 + 10 + 25 = 55 us of other tasks against 80 us of excess: a cause, named by pid 51 (45 us).
        let c = attribute(&Timeline::new(&evs), &round(0, 60_000, 80_000), &[0], &[7]).unwrap();
        assert_eq!((c.work, c.overlap_ns), (Work::Task(51, "stress-ng-cpu".into()), 55_000));
    }

    #[test]
    fn several_spans_of_one_kind_add_up() {
        let evs: Vec<Event> = (0..5).map(|i| ev(Kind::Softirq, 0, i * 10_000, i * 10_000 + 6_000, 3, 0, "")).collect();
        let c = attribute(&Timeline::new(&evs), &round(0, 50_000, 50_000), &[0], &[]).unwrap();
        assert_eq!(c.overlap_ns, 30_000);
    }
}

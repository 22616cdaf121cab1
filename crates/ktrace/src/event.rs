//! One record of the kernel trace, as `bpf/ktrace.bpf.c` writes it
//! (`struct kt_event`, 48 bytes, native endian), and what it means.

/// What happened on a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A device interrupt handler ran (`num` = the IRQ).
    Irq,
    /// A softirq ran (`num` = the vector: see [`softirq_name`]).
    Softirq,
    /// The local APIC timer interrupt (the tick, hrtimers).
    Timer,
    /// A reschedule IPI (another core asked this one to schedule).
    IpiResched,
    /// A call-function IPI (e.g. a TLB shootdown or an smp_call_function).
    IpiCall,
    /// A context switch: the task in `pid`/`comm` was switched out (a point).
    Switch,
    /// One NAPI poll ended; `arg` frames were processed (a point).
    Napi,
}

impl Kind {
    fn from_code(code: u16) -> Option<Kind> {
        Some(match code {
            1 => Kind::Irq,
            2 => Kind::Softirq,
            3 => Kind::Timer,
            4 => Kind::IpiResched,
            5 => Kind::IpiCall,
            6 => Kind::Switch,
            7 => Kind::Napi,
            _ => return None,
        })
    }
}

/// One record: an interval (interrupts, softirqs) or a point (switches, NAPI polls).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC ns the interval began (= `end_ns` for a point).
    pub start_ns: u64,
    /// CLOCK_MONOTONIC ns it ended.
    pub end_ns: u64,
    /// The core it ran on.
    pub cpu: u32,
    /// What it was.
    pub kind: Kind,
    /// The IRQ or softirq vector; for a switch, 1 when the task was preempted.
    pub num: u16,
    /// For a switch: the thread id switched out.
    pub pid: u32,
    /// For a switch: the task state it left in (0 = runnable); for NAPI: frames processed.
    pub arg: u32,
    /// For a switch: the name of the thread switched out.
    pub comm: String,
}

/// The size of one record in the ring buffer.
pub(crate) const RECORD_LEN: usize = 48;

impl Event {
    /// Decodes one ring-buffer record; `None` for a short record or an unknown kind
    /// (a program of another version), which the tracer counts and skips.
    pub fn decode(b: &[u8]) -> Option<Event> {
        if b.len() < RECORD_LEN {
            return None;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u16_at = |o: usize| u16::from_ne_bytes(b[o..o + 2].try_into().expect("2 bytes"));
        let kind = Kind::from_code(u16_at(20))?;
        let comm = &b[32..48];
        let comm_len = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
        Some(Event {
            start_ns: u64_at(0),
            end_ns: u64_at(8),
            cpu: u32_at(16),
            kind,
            num: u16_at(22),
            pid: u32_at(24),
            arg: u32_at(28),
            comm: String::from_utf8_lossy(&comm[..comm_len]).into_owned(),
        })
    }

    /// How long it ran (0 for a point).
    pub fn len_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// The kernel's name of a softirq vector (include/linux/interrupt.h).
pub fn softirq_name(vec: u16) -> &'static str {
    match vec {
        0 => "HI",
        1 => "TIMER",
        2 => "NET_TX",
        3 => "NET_RX",
        4 => "BLOCK",
        5 => "IRQ_POLL",
        6 => "TASKLET",
        7 => "SCHED",
        8 => "HRTIMER",
        9 => "RCU",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u16, comm: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; RECORD_LEN];
        b[0..8].copy_from_slice(&100u64.to_ne_bytes());
        b[8..16].copy_from_slice(&250u64.to_ne_bytes());
        b[16..20].copy_from_slice(&1u32.to_ne_bytes());
        b[20..22].copy_from_slice(&kind.to_ne_bytes());
        b[22..24].copy_from_slice(&3u16.to_ne_bytes());
        b[24..28].copy_from_slice(&42u32.to_ne_bytes());
        b[32..32 + comm.len()].copy_from_slice(comm);
        b
    }

    #[test]
    fn decodes_the_c_layout() {
        let e = Event::decode(&record(2, b"ksoftirqd/1")).unwrap();
        assert_eq!((e.start_ns, e.end_ns, e.cpu, e.kind, e.num, e.pid), (100, 250, 1, Kind::Softirq, 3, 42));
        assert_eq!(e.comm, "ksoftirqd/1");
        assert_eq!(e.len_ns(), 150);
        assert_eq!(softirq_name(e.num), "NET_RX");
    }

    #[test]
    fn refuses_short_and_unknown_records() {
        assert!(Event::decode(&record(2, b"x")[..47]).is_none());
        assert!(Event::decode(&record(99, b"x")).is_none());
        // A comm that fills all 16 bytes (no NUL) is kept whole.
        assert_eq!(Event::decode(&record(6, b"0123456789abcdef")).unwrap().comm, "0123456789abcdef");
    }
}

//! The best-master choice (IEEE 1588-2008 clause 9.3) as far as an ordinary
//! clock with one port needs it: the foreign masters heard in Announce
//! messages, which of them qualify (clause 9.3.2.5: two Announces within
//! four announce intervals), which has gone silent (announceReceiptTimeout,
//! three intervals by default), and the dataset comparison of clause 9.3.4
//! that picks the best.
//!
//! A slave-only port (`slaveOnly 1` in linuxptp) follows the best
//! qualified foreign master; a master-only port never gives up its role, so
//! it needs no comparison against itself.

use super::wire::{Announce, PortIdentity};
use std::cmp::Ordering;
use std::net::Ipv4Addr;

/// Announces a foreign master must send within [`FOREIGN_MASTER_WINDOW`] intervals to qualify.
pub(crate) const FOREIGN_MASTER_THRESHOLD: usize = 2;
/// The qualification window, in announce intervals.
pub const FOREIGN_MASTER_WINDOW: u64 = 4;
/// Announce intervals without an Announce after which a master is gone (the default announceReceiptTimeout).
pub(crate) const ANNOUNCE_RECEIPT_TIMEOUT: u64 = 3;

/// The logMessageInterval a received message may claim, 2^-7 s to 2^6 s: a
/// forged Announce claiming 2^127 s must not keep a master that went silent
/// for good (with at most 2^6 s it is gone 3 × 64 s after its last Announce).
pub const RECEIVED_LOG_INTERVALS: std::ops::RangeInclusive<i8> = -7..=6;

/// logMessageInterval 0x7F: no interval given (a unicast Sync, Follow_Up or
/// Delay_Resp; a Delay_Req always).
pub(crate) const LOG_INTERVAL_UNSPECIFIED: i8 = 0x7f;

/// A received logMessageInterval clamped to [`RECEIVED_LOG_INTERVALS`]; `true` when it had to be.
pub(crate) fn received_log_interval(log: i8) -> (i8, bool) {
    let clamped = log.clamp(*RECEIVED_LOG_INTERVALS.start(), *RECEIVED_LOG_INTERVALS.end());
    (clamped, clamped != log)
}

/// What clause 9.3.4 compares: the grandmaster's dataset as announced, and who sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dataset {
    /// The Announce's grandmaster fields.
    pub announce: Announce,
    /// The port that sent the Announce.
    pub sender: PortIdentity,
}

/// Clause 9.3.4, figures 27/28 for two masters heard on the same port:
/// `Less` means `a` is the better master.
pub fn compare(a: &Dataset, b: &Dataset) -> Ordering {
    let (x, y) = (&a.announce, &b.announce);
    if x.gm_identity != y.gm_identity {
        // Different grandmasters: the grandmaster's attributes decide, then its identity.
        return (x.priority1, x.clock_class, x.clock_accuracy, x.variance, x.priority2, x.gm_identity).cmp(&(
            y.priority1,
            y.clock_class,
            y.clock_accuracy,
            y.variance,
            y.priority2,
            y.gm_identity,
        ));
    }
    // The same grandmaster over two paths: the shorter path, then the sender's identity.
    x.steps_removed.cmp(&y.steps_removed).then(a.sender.cmp(&b.sender))
}

/// One foreign master heard on the port.
#[derive(Debug, Clone)]
pub struct ForeignMaster {
    /// Its latest dataset.
    pub dataset: Dataset,
    /// Where its messages come from (for the Delay_Req).
    pub addr: Ipv4Addr,
    /// Its announce interval, ns (from the Announce's logMessageInterval).
    pub interval_ns: u64,
    /// CLOCK_MONOTONIC arrival of its recent Announces (newest last, at most the threshold's worth).
    heard: Vec<u64>,
}

impl ForeignMaster {
    /// Qualified at `now`: enough Announces within the window (clause 9.3.2.5).
    pub fn qualified(&self, now: u64) -> bool {
        let window = self.interval_ns.saturating_mul(FOREIGN_MASTER_WINDOW);
        self.heard.iter().filter(|&&t| now.saturating_sub(t) <= window).count() >= FOREIGN_MASTER_THRESHOLD
    }
    /// Silent for longer than the receipt timeout at `now`.
    pub(crate) fn timed_out(&self, now: u64) -> bool {
        let last = self.heard.last().copied().unwrap_or(0);
        now.saturating_sub(last) > self.interval_ns.saturating_mul(ANNOUNCE_RECEIPT_TIMEOUT)
    }
}

/// The foreign masters of one port and the choice among them.
#[derive(Debug, Clone, Default)]
pub struct ForeignMasters {
    list: Vec<ForeignMaster>,
}

/// At most this many foreign masters are tracked: a flood of forged
/// identities cannot grow the table without bound.
pub(crate) const MAX_FOREIGN_MASTERS: usize = 16;

impl ForeignMasters {
    /// Records an Announce from `sender` at `addr`, received at `now` (CLOCK_MONOTONIC ns),
    /// its interval clamped to [`RECEIVED_LOG_INTERVALS`].
    /// `false` when the table is full of others (the Announce is dropped).
    pub fn heard(&mut self, sender: PortIdentity, addr: Ipv4Addr, announce: Announce, log_interval: i8, now: u64) -> bool {
        let interval_ns = interval_ns(received_log_interval(log_interval).0);
        self.list.retain(|f| !f.timed_out(now) || f.dataset.sender == sender);
        let entry = match self.list.iter_mut().position(|f| f.dataset.sender == sender) {
            Some(i) => &mut self.list[i],
            None => {
                if self.list.len() >= MAX_FOREIGN_MASTERS {
                    return false;
                }
                self.list.push(ForeignMaster { dataset: Dataset { announce, sender }, addr, interval_ns, heard: Vec::new() });
                self.list.last_mut().expect("just pushed")
            }
        };
        entry.dataset.announce = announce;
        entry.addr = addr;
        entry.interval_ns = interval_ns;
        entry.heard.push(now);
        if entry.heard.len() > FOREIGN_MASTER_THRESHOLD {
            entry.heard.remove(0);
        }
        true
    }

    /// The best qualified master that has not timed out at `now` (clause 9.3.2.3's Erbest).
    pub fn best(&self, now: u64) -> Option<&ForeignMaster> {
        self.list.iter().filter(|f| f.qualified(now) && !f.timed_out(now)).min_by(|a, b| compare(&a.dataset, &b.dataset))
    }

    /// Masters tracked.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when none is tracked.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// 2^log seconds in ns (log clamped to ±30; a forged value cannot overflow).
pub fn interval_ns(log: i8) -> u64 {
    let log = (log as i32).clamp(-30, 30);
    if log >= 0 {
        1_000_000_000u64 << log
    } else {
        1_000_000_000u64 >> (-log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptp::wire::Timestamp;

    fn ann(priority1: u8, gm: u8) -> Announce {
        Announce {
            origin: Timestamp::default(),
            utc_offset: 37,
            priority1,
            clock_class: 248,
            clock_accuracy: 0xfe,
            variance: 0xffff,
            priority2: 128,
            gm_identity: [gm; 8],
            steps_removed: 0,
            time_source: 0xa0,
        }
    }
    fn id(n: u8) -> PortIdentity {
        PortIdentity { clock: [n; 8], port: 1 }
    }

    #[test]
    fn priority_then_class_then_identity_decide() {
        let a = Dataset { announce: ann(100, 9), sender: id(9) };
        let b = Dataset { announce: ann(128, 1), sender: id(1) };
        assert_eq!(compare(&a, &b), Ordering::Less);
        let mut c = b;
        c.announce.priority1 = 100;
        c.announce.clock_class = 6;
        assert_eq!(compare(&c, &a), Ordering::Less);
        let d = Dataset { announce: ann(100, 1), sender: id(1) };
        assert_eq!(compare(&d, &a), Ordering::Less, "equal attributes: the lower identity");
        let mut e = a;
        e.announce.steps_removed = 1;
        e.sender = id(3);
        assert_eq!(compare(&a, &e), Ordering::Less, "same grandmaster: fewer steps");
    }

    #[test]
    fn a_master_qualifies_after_two_announces_and_times_out() {
        let mut f = ForeignMasters::default();
        let s = 1_000_000_000;
        let addr = Ipv4Addr::new(10, 77, 0, 2);
        f.heard(id(2), addr, ann(128, 2), 0, s);
        assert!(f.best(s).is_none(), "one Announce does not qualify");
        f.heard(id(2), addr, ann(128, 2), 0, 2 * s);
        assert_eq!(f.best(2 * s).map(|m| m.dataset.sender), Some(id(2)));
        // A better one appears and qualifies.
        f.heard(id(1), addr, ann(10, 1), 0, 2 * s + 1);
        assert_eq!(f.best(2 * s + 1).map(|m| m.dataset.sender), Some(id(2)));
        f.heard(id(1), addr, ann(10, 1), 0, 3 * s);
        assert_eq!(f.best(3 * s).map(|m| m.dataset.sender), Some(id(1)));
        // Silent for more than three intervals: gone; the other went silent too.
        assert!(f.best(7 * s).is_none());
    }

    #[test]
    fn a_silent_forged_master_claiming_a_huge_interval_times_out() {
        let mut f = ForeignMasters::default();
        let s = 1_000_000_000u64;
        let (real, forger) = (Ipv4Addr::new(10, 77, 0, 2), Ipv4Addr::new(10, 77, 0, 66));
        // The real master announces every second from 1 s on; a better forged one twice, at 2 s,
        // claiming logMessageInterval 127, then never again.
        f.heard(id(2), real, ann(128, 2), 0, s);
        f.heard(id(1), forger, ann(1, 1), 127, 2 * s);
        f.heard(id(1), forger, ann(1, 1), 127, 2 * s + 1);
        let mut t = 2 * s;
        while t < 400 * s {
            f.heard(id(2), real, ann(128, 2), 0, t);
            let best = f.best(t).map(|m| m.dataset.sender);
            if t <= 2 * s + 3 * (64 * s) {
                assert_eq!(best, Some(id(1)), "at {} s the forged master still counts", t / s);
            } else {
                assert_eq!(best, Some(id(2)), "at {} s the forged master is gone", t / s);
            }
            t += s;
        }
        assert_eq!(received_log_interval(127), (6, true));
        assert_eq!(received_log_interval(-128), (-7, true));
        assert_eq!(received_log_interval(-2), (-2, false));
    }

    #[test]
    fn the_table_is_bounded() {
        let mut f = ForeignMasters::default();
        let addr = Ipv4Addr::new(10, 77, 0, 2);
        for n in 0..40u8 {
            f.heard(id(n), addr, ann(128, n), 0, 1_000);
        }
        assert_eq!(f.len(), MAX_FOREIGN_MASTERS);
        assert_eq!(interval_ns(-2), 250_000_000);
        assert_eq!(interval_ns(127), 1_000_000_000 << 30);
    }
}

//! Plausibility guards for what a remote endpoint claims. RTPS carries no
//! integrity check of its own, so a corrupted or forged HEARTBEAT, GAP,
//! ACKNACK or DATA looks like any other: these guards bound how much state one
//! such message can change, and let the real peer's traffic win back any
//! state a forgery did change.
//!
//! - Counts (HEARTBEAT, ACKNACK, HEARTBEAT_FRAG, NACK_FRAG) only filter
//!   duplicates: a forged count far ahead would make every real message
//!   after it look stale, so a run of [`STALE_RESYNC`] stale counts in a row
//!   is taken as the real sender's numbering and adopted ([`CountGuard`]).
//! - Sequence numbers may move at most [`SN_SLACK`] past the highest one the
//!   writer is known to have reached; a bigger jump is taken only when
//!   [`CONFIRM`] claims with strictly rising keys (counts, or sequence numbers)
//!   agree on it ([`JumpGuard`]). Repeats of one datagram never confirm.
//! - No sequence number above [`SN_MAX`] is taken at all, confirmed or not.

/// The highest sequence number the engine takes from the wire. A writer
/// writing a sample every nanosecond needs 146 years to get there, so a
/// number above it is a corruption or a forgery; refusing it (as
/// implausible) keeps every `sn + n` the engine computes from a received
/// number (the reorder window's end, the next expected sample, a NACK's
/// range) far from `i64::MAX`.
pub(crate) const SN_MAX: i64 = 1 << 62;

/// Whether `sn` can be a real sequence number: 1..=[`SN_MAX`].
pub(crate) fn sn_plausible(sn: i64) -> bool {
    (1..=SN_MAX).contains(&sn)
}

/// How far past the highest known sequence number a claim may reach and
/// still be applied at once (a writer sending 65,536 samples while none of
/// them, nor any heartbeat, reached us is a loss confirmed by [`CONFIRM`] claims).
pub(crate) const SN_SLACK: i64 = 1 << 16;

/// Claims that must agree (with rising counts or sequence numbers) before a
/// jump beyond [`SN_SLACK`], or a regression below what we expect, is applied.
pub(crate) const CONFIRM: u32 = 3;

/// Stale counts in a row after which the sender's numbering is adopted.
pub(crate) const STALE_RESYNC: u32 = 4;

/// What [`CountGuard::check`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CountVerdict {
    /// Newer than any before: process it.
    Fresh,
    /// A duplicate or reordered message: skip it.
    Stale,
    /// The last of a run of stale counts: the sender's numbering is adopted and the message processed.
    Resynced,
}

/// Duplicate filter for a count (HEARTBEAT, ACKNACK, ...).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CountGuard {
    last: Option<i32>,
    stale_run: u32,
}

impl Default for CountGuard {
    fn default() -> Self {
        CountGuard::new()
    }
}

impl CountGuard {
    pub const fn new() -> CountGuard {
        CountGuard { last: None, stale_run: 0 }
    }
    /// Takes `count` as the newest (the sender's numbering, confirmed otherwise).
    pub fn adopt(&mut self, count: i32) {
        self.last = Some(count);
        self.stale_run = 0;
    }
    /// Whether a message with `count` is new.
    pub fn check(&mut self, count: i32) -> CountVerdict {
        match self.last {
            Some(last) if count <= last => {
                self.stale_run += 1;
                if self.stale_run >= STALE_RESYNC {
                    self.last = Some(count);
                    self.stale_run = 0;
                    CountVerdict::Resynced
                } else {
                    CountVerdict::Stale
                }
            }
            _ => {
                self.last = Some(count);
                self.stale_run = 0;
                CountVerdict::Fresh
            }
        }
    }
}

/// Collects evidence for a claim the current state calls implausible (a far
/// jump ahead, or a regression behind): it is applied only after [`CONFIRM`]
/// claims, each with a strictly higher key than the one before (a count or a
/// sequence number, so that repeats of one datagram never add up) and each
/// within [`SN_SLACK`] of the previous claim.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JumpGuard {
    claim: i64,
    key: i64,
    seen: u32,
}

impl JumpGuard {
    /// One more implausible claim `sn` with key `key`; true when confirmed (the guard resets).
    pub fn confirm(&mut self, sn: i64, key: i64) -> bool {
        if self.seen > 0 && key > self.key && sn.abs_diff(self.claim) <= SN_SLACK as u64 {
            self.seen += 1;
        } else {
            self.seen = 1;
        }
        self.claim = sn;
        self.key = key;
        if self.seen >= CONFIRM {
            *self = JumpGuard::default();
            true
        } else {
            false
        }
    }
    /// A plausible claim came: the evidence so far is dropped.
    pub fn clear(&mut self) {
        self.seen = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_filter_duplicates_and_resync_after_a_forged_leap() {
        let mut g = CountGuard::new();
        assert_eq!(g.check(5), CountVerdict::Fresh);
        assert_eq!(g.check(5), CountVerdict::Stale);
        assert_eq!(g.check(6), CountVerdict::Fresh);
        // A forged count far ahead is taken ...
        assert_eq!(g.check(i32::MAX - 3), CountVerdict::Fresh);
        // ... but the real sender's next counts win it back.
        assert_eq!(g.check(7), CountVerdict::Stale);
        assert_eq!(g.check(8), CountVerdict::Stale);
        assert_eq!(g.check(9), CountVerdict::Stale);
        assert_eq!(g.check(10), CountVerdict::Resynced);
        assert_eq!(g.check(11), CountVerdict::Fresh);
        assert_eq!(g.check(10), CountVerdict::Stale);
    }

    #[test]
    fn jumps_need_rising_agreeing_claims_and_repeats_never_confirm() {
        let mut j = JumpGuard::default();
        for _ in 0..10 {
            assert!(!j.confirm(1 << 40, 7), "a repeated datagram confirmed a jump");
        }
        let mut j = JumpGuard::default();
        assert!(!j.confirm(1_000_000, 1));
        assert!(!j.confirm(5_000_000_000, 2), "far from the previous claim: starts over");
        assert!(!j.confirm(5_000_000_001, 3));
        assert!(j.confirm(5_000_000_002, 4));
        // Reset after confirming.
        assert!(!j.confirm(5_000_000_003, 5));
        j.clear();
        assert!(!j.confirm(5_000_000_004, 6));
    }
}

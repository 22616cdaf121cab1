//! Where an over-budget ping's time went, from evidence the run records on
//! both sides (issue 39, item 2's causes, for each ping of a detpath arm).
//!
//! A ping is judged on its *delivered* one-way latency: the answering
//! side's clock reading right after it took the ping from its reader,
//! minus the pinging side's reading right before it wrote it (the
//! testbed's two namespaces share CLOCK_MONOTONIC). That latency is split
//! into the parts the run measured, and the engine's rule
//! ([`detpath_pubsub::budget::attribute`], the instrument's rule for a slow
//! round) names the cause:
//!
//! - the sender's part: the write to the first hand-off of its datagram to
//!   the datapath ([`SendLog`]: the slot scheduler's release in the
//!   priority arm, the send call's return in the fifo arm) → `sent_late`;
//! - repaired: its datagram was handed off more than once, and the pong
//!   side's receive stamp is not before the second hand-off (it came by the
//!   retransmission) → `retransmission`;
//! - the reader's part: the datapath's receive stamp to the take → `reader_late`;
//! - what no part covers: `network` (the datapath's queues, the wire, the
//!   receive path up to the stamp).
//!
//! Pings never answered are counted `lost`, apart. `budget_violations`
//! (the arrival one-way, as before) stays the goal's count; these causes
//! are of the delivered latency, which is at least as large.

use super::send_log::SendLog;
use super::{Phases, CONTROL_RATE_HZ};
use detpath_instrument::records::{Record, Status};
use detpath_pubsub::budget::{attribute, Cause, Parts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The causes of the over-budget pings while bulk ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ViolationCauses {
    /// What latency was judged (`delivered`: taken on the pong side minus written on the ping side).
    pub judged_on: String,
    /// Answered pings judged.
    pub judged: u64,
    /// Of them, over the budget.
    pub over: u64,
    /// Over-budget pings per cause (`sent_late`, `retransmission`, `reader_late`, `network`).
    pub causes: BTreeMap<String, u64>,
    /// Pings never answered (not judged, not in `over`).
    pub lost: u64,
    /// Pings whose hand-off the send log never saw (their sender's part unknown).
    pub unseen_sends: u64,
}

/// The parts of one answered ping's delivered latency, with its sends.
pub fn parts_of(r: &Record, sends: &[u64]) -> Parts {
    Parts {
        sender_ns: sends.first().map(|&s| s.saturating_sub(r.client_send_ns)),
        repaired: sends.get(1).is_some_and(|&second| r.server_recv_ns >= second),
        reader_ns: Some(r.server_send_ns.saturating_sub(r.server_recv_ns)),
    }
}

/// The causes of the pings sent while bulk ran (`phases`) whose delivered
/// latency exceeded `budget_ns`, with `log`'s record of their hand-offs.
pub fn violation_causes(records: &[Record], phases: Phases, budget_ns: u64, log: &SendLog) -> ViolationCauses {
    let period = 1_000_000_000 / CONTROL_RATE_HZ;
    let mut out = ViolationCauses { judged_on: "delivered".into(), ..ViolationCauses::default() };
    for c in Cause::ALL {
        out.causes.insert(c.name().into(), 0);
    }
    for r in records.iter().filter(|r| phases.bulk_on(r.seq * period)) {
        if r.status != Status::Ok {
            out.lost += 1;
            continue;
        }
        out.judged += 1;
        let latency = r.server_send_ns.saturating_sub(r.client_send_ns);
        if latency <= budget_ns {
            continue;
        }
        out.over += 1;
        let sends = log.sends(r.seq);
        out.unseen_sends += u64::from(sends.is_empty());
        let cause = attribute(latency, budget_ns, parts_of(r, &sends));
        *out.causes.entry(cause.name().into()).or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, sent: u64, rx: u64, taken: u64) -> Record {
        Record { seq, client_send_ns: sent, server_recv_ns: rx, server_send_ns: taken, client_recv_ns: taken + 10_000, status: Status::Ok, ..Record::default() }
    }

    #[test]
    fn the_engine_and_the_instrument_share_one_rule() {
        assert_eq!(detpath_pubsub::budget::ATTRIBUTION_SHARE, detpath_instrument::tail::GAP_SHARE);
    }

    #[test]
    fn each_part_names_its_cause_and_the_network_gets_the_rest() {
        // Bulk on for the whole second; 100 µs budget.
        let phases = Phases { on_ns: 0, off_ns: 1_000_000_000, end_ns: 1_000_000_000, samples: None, alone_on_ns: 0, alone_off_ns: 0 };
        let log = SendLog::default();
        let ms = 1_000_000u64;
        let datagram = |seq: u64| crate::mixed::send_log::tests::ping_datagram(seq);
        // 0: within. 1: held 300 µs by the scheduler. 2: sent twice, came by the
        // repair. 3: stamped in time, taken 400 µs later. 4: left at once, arrived
        // 300 µs later. 5: lost. 6: over, its send never seen.
        let records = vec![
            rec(0, 0, 40_000, 45_000),
            rec(1, ms, ms + 320_000, ms + 325_000),
            rec(2, 2 * ms, 2 * ms + 20_000_000, 2 * ms + 20_000_100),
            rec(3, 3 * ms, 3 * ms + 30_000, 3 * ms + 430_000),
            rec(4, 4 * ms, 4 * ms + 300_000, 4 * ms + 301_000),
            Record { seq: 5, status: Status::Lost, ..Record::default() },
            rec(6, 6 * ms, 6 * ms + 300_000, 6 * ms + 301_000),
        ];
        for (seq, at) in [(0, 1_000), (1, ms + 300_000), (2, 2 * ms + 1_000), (2, 2 * ms + 19_000_000), (3, 3 * ms + 1_000), (4, 4 * ms + 1_000)] {
            log.note(&datagram(seq), at);
        }
        let c = violation_causes(&records, phases, 100_000, &log);
        assert_eq!((c.judged, c.over, c.lost, c.unseen_sends), (6, 5, 1, 1));
        let n = |k: &str| c.causes[k];
        assert_eq!((n("sent_late"), n("retransmission"), n("reader_late"), n("network")), (1, 1, 1, 2));
    }
}

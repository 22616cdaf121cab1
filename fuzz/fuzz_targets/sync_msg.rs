//! Any bytes into the clock-sync message parser (`detpath sched sync`: every
//! datagram to the master's or the slave's port reaches it): never a panic,
//! and what it accepts encodes back to the same bytes but the reserved two.
//! The parser is compiled from its production file (crates/sched/src/sync_wire.rs)
//! by path: no copy, and no need to build the datapaths here.
#![no_main]

#[path = "../../crates/sched/src/sync_wire.rs"]
#[allow(dead_code)]
mod sync_wire;

use libfuzzer_sys::fuzz_target;
use sync_wire::{SyncMsg, MSG_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = SyncMsg::parse(data) {
        assert_eq!(data.len(), MSG_LEN);
        let b = m.encode();
        assert_eq!((&b[..6], &b[8..]), (&data[..6], &data[8..]), "re-encoding changed the message");
        assert_eq!(SyncMsg::parse(&b), Ok(m));
    }
});

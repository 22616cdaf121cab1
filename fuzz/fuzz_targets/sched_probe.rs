//! Any bytes into the slot-scheduler benchmark's payload parser (`detpath
//! sched bench`'s receiver parses every datagram on its port): never a
//! panic, and an accepted header writes back to the same first 24 bytes but
//! the reserved two. The parser is compiled from its production file
//! (crates/sched-bench/src/probe_payload.rs) by path: no copy, and no need
//! to build the benchmark's dependencies here.
#![no_main]

#[path = "../../crates/sched-bench/src/probe_payload.rs"]
#[allow(dead_code)]
mod probe_payload;

use libfuzzer_sys::fuzz_target;
use probe_payload::{Header, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Some(h) = Header::parse(data) {
        assert!(data.len() >= HEADER_LEN);
        let mut b = data.to_vec();
        h.write(&mut b);
        assert_eq!((&b[..6], &b[8..]), (&data[..6], &data[8..]), "writing the header back changed the payload");
        assert_eq!(Header::parse(&b), Some(h));
    }
});

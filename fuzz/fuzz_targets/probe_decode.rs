//! Any bytes into the ping-pong probe decoder and the server's in-place
//! helpers: never a panic, and a decoded probe re-encodes to the same header.
#![no_main]

use detpath_wire::probe::{self, Probe, Stamp};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let decoded = Probe::decode(data);
    let _ = probe::seq_nonce(data);
    let mut copy = data.to_vec();
    let stamped = probe::stamp(&mut copy, Stamp::ServerRecv, 42);
    assert_eq!(stamped.is_ok(), decoded.is_ok(), "stamp and decode disagree on validity");
    if let Ok(p) = decoded {
        let mut buf = vec![0u8; data.len()];
        p.encode(&mut buf).expect("a decoded probe fits its own length");
        assert_eq!(Probe::decode(&buf).expect("re-encoded probe decodes"), p);
    }
});

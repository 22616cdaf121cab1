//! Any bytes into the frame endpoints' receive strip (afxdp and xdppoll
//! frame endpoints, pub-sub's raweth transport: anyone on the link sends
//! these): never a panic; an accepted frame is for us (our MAC or a group),
//! of our EtherType, and its payload is exactly the bytes after the header.
//! The payload then goes through the RTPS parser pub-sub runs on it.
#![no_main]

use detpath_pubsub::wire::Message;
use detpath_wire::raweth::{frame_is_for, strip_eth_frame, StripError};
use detpath_wire::MacAddr;
use libfuzzer_sys::fuzz_target;

const ME: MacAddr = MacAddr([2, 0x64, 0x70, 0, 0, 0x0a]);

fuzz_target!(|data: &[u8]| {
    for want in [Some(0x1ce8u16), None] {
        match strip_eth_frame(data, ME, want) {
            Ok(f) => {
                assert!(frame_is_for(ME, data));
                assert_eq!(f.payload, &data[14..]);
                assert_eq!(f.src.0, data[6..12]);
                assert!(want.is_none_or(|w| w == f.ethertype));
                let _ = Message::parse(f.payload);
            }
            Err(StripError::Truncated) => assert!(data.len() < 14),
            Err(StripError::OtherEthertype(et)) => assert!(want.is_some_and(|w| w != et) && et == u16::from_be_bytes([data[12], data[13]])),
            Err(StripError::NotForMe) => assert!(!frame_is_for(ME, data)),
        }
    }
});

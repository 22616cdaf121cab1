//! Any bytes into the frame parser: it must never panic, and whatever it
//! accepts must survive a rebuild: building a frame from the parsed addresses
//! and payload and parsing that gives the same view back.
#![no_main]

use detpath_wire::{build_udp_frame, parse_udp_frame, UdpFrameHeader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for verify in [true, false] {
        if let Ok(f) = parse_udp_frame(data, verify) {
            assert!(f.payload_offset + f.payload_len <= data.len());
            let h = UdpFrameHeader { src_mac: f.src_mac, dst_mac: f.dst_mac, src: f.src, dst: f.dst, ip_id: 0, ttl: 64 };
            let mut buf = vec![0u8; data.len() + 64];
            let n = build_udp_frame(&mut buf, &h, f.payload(data)).expect("a parsed payload fits again");
            let g = parse_udp_frame(&buf[..n], true).expect("a rebuilt frame parses");
            assert_eq!((g.src, g.dst, g.payload(&buf[..n])), (f.src, f.dst, f.payload(data)));
        }
    }
});

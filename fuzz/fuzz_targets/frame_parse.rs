//! Any bytes into the frame parser: it must never panic, and whatever it
//! accepts must survive a rebuild: building a frame from the parsed addresses
//! and payload and parsing that gives the same view back. The same bytes,
//! cut into frames at each 0xfe byte, also go through the fragment parser
//! into one reassembler: never a panic, and a reassembled payload is never
//! longer than the fragments offered.
#![no_main]

use detpath_wire::{build_udp_frame, parse_fragment, parse_udp_frame, Reassembler, UdpFrameHeader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for verify in [true, false] {
        if let Ok(f) = parse_udp_frame(data, verify) {
            assert!(f.payload_offset + f.payload_len <= data.len());
            let h = UdpFrameHeader { src_mac: f.src_mac, dst_mac: f.dst_mac, src: f.src, dst: f.dst, ip_id: 0, ttl: 64, tos: 0 };
            let mut buf = vec![0u8; data.len() + 64];
            let n = build_udp_frame(&mut buf, &h, f.payload(data)).expect("a parsed payload fits again");
            let g = parse_udp_frame(&buf[..n], true).expect("a rebuilt frame parses");
            assert_eq!((g.src, g.dst, g.payload(&buf[..n])), (f.src, f.dst, f.payload(data)));
        }
    }
    let mut r = Reassembler::new(2, 1_000);
    let mut offered = 0usize;
    for (t, frame) in data.split(|&b| b == 0xfe).enumerate() {
        if let Ok(frag) = parse_fragment(frame) {
            offered += frag.data.len();
            if let Ok(Some(d)) = r.offer(&frag, t as u64 * 300, t % 2 == 0) {
                assert!(d.payload.len() <= offered);
            }
        }
    }
});

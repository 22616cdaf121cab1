//! Any bytes into the ARP parser a DPDK endpoint runs on every ARP frame of
//! its link (a neighbour, or anyone on the link, controls them): never a
//! panic; what it accepts rebuilds into a frame that parses the same; the
//! reply to an accepted request parses as a reply to its sender.
#![no_main]

use detpath_wire::arp::{build_arp_frame, is_arp, parse_arp_frame, ArpOp, ARP_FRAME_LEN};
use detpath_wire::MacAddr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = parse_arp_frame(data);
    if let Ok(p) = parsed {
        assert!(is_arp(data), "accepted a frame is_arp refuses");
        let mut buf = [0u8; 64];
        let n = build_arp_frame(&mut buf, &p, 60).expect("an ARP frame fits 64 bytes");
        assert!(n >= ARP_FRAME_LEN);
        assert_eq!(parse_arp_frame(&buf[..n]).expect("a rebuilt ARP frame parses"), p);
        if p.op == ArpOp::Request {
            let me = MacAddr([2, 0x64, 0x70, 0, 0, 0x0b]);
            let r = p.reply_to(me);
            let n = build_arp_frame(&mut buf, &r, 60).expect("the reply fits");
            let back = parse_arp_frame(&buf[..n]).expect("the reply parses");
            assert_eq!((back.op, back.target_ip, back.target_mac, back.sender_ip), (ArpOp::Reply, p.sender_ip, p.sender_mac, p.target_ip));
        }
    }
});

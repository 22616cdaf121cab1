//! Wire formats of detpath: the Ethernet/IPv4/UDP frames every datapath that
//! builds its own frames sends and parses. Header fields are named, not
//! spelled as offsets: each header module (`ethernet`, `ipv4`, `udp`, `arp`)
//! has a `field` module of byte ranges and a view with accessors. Pure functions over byte slices:
//! no allocation (the reassembler allocates its slots once, when created),
//! no OS calls, no panics on any input (fuzzed in `fuzz/`).
//!
//! ```
//! use std::net::SocketAddrV4;
//! use detpath_wire::{build_udp_frame, parse_udp_frame, MacAddr, UdpFrameHeader};
//! let header = UdpFrameHeader {
//!     src_mac: MacAddr([2, 0, 0, 0, 0, 1]),
//!     dst_mac: MacAddr([2, 0, 0, 0, 0, 2]),
//!     src: "10.0.0.1:4000".parse::<SocketAddrV4>().unwrap(),
//!     dst: "10.0.0.2:5000".parse().unwrap(),
//!     ip_id: 1,
//!     ttl: 64,
//!     tos: 0,
//! };
//! let mut buf = [0u8; 128];
//! let len = build_udp_frame(&mut buf, &header, b"hello").expect("fits in 128 bytes");
//! let frame = parse_udp_frame(&buf[..len], true)?; // checksums verified
//! assert_eq!((frame.src, frame.dst), (header.src, header.dst));
//! assert_eq!(frame.payload(&buf[..len]), b"hello");
//! # Ok::<(), detpath_wire::FrameError>(())
//! ```

#![warn(missing_docs)]

pub mod checksum;
pub mod dscp;
pub mod ethernet;
pub mod field;
pub mod frame;
pub mod ipv4;
pub mod reasm;
pub mod udp;

pub use ethernet::EthernetFrame;
pub use frame::{build_udp_fragment, build_udp_frame, parse_udp_frame, udp_fragment_count, FrameError, MacAddr, UdpFrame, UdpFrameHeader, MAX_UDP_PAYLOAD};
pub use ipv4::Ipv4Packet;
pub use reasm::{parse_fragment, FragError, Reassembled, Reassembler};
pub use udp::UdpPacket;

/// Ethernet header length (no VLAN tag).
pub const ETH_HLEN: usize = ethernet::field::PAYLOAD;
/// IPv4 header length without options.
pub const IPV4_HLEN: usize = ipv4::HEADER_LEN;
/// UDP header length.
pub const UDP_HLEN: usize = udp::field::PAYLOAD;
/// Bytes of headers in front of the payload of a frame detpath builds.
pub const HEADERS_LEN: usize = ETH_HLEN + IPV4_HLEN + UDP_HLEN;

/// Largest UDP payload that fits one frame on a link with the given MTU
/// (the MTU counts the IPv4 packet, not the Ethernet header).
pub const fn max_payload_for_mtu(mtu: usize) -> usize {
    mtu.saturating_sub(IPV4_HLEN + UDP_HLEN)
}
pub mod arp;
pub mod probe;
pub mod raweth;

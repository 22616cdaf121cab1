//! Crafted RTPS datagrams, as a peer (or a forger) would send them: for the
//! sans-IO tests that feed an engine by hand.

use detpath_pubsub::discovery::{builtin, ParticipantData};
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::*;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The address the crafted participants announce as theirs.
pub const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 66, 0, 9);

/// A message from participant `prefix` with what `f` builds.
pub fn message(prefix: GuidPrefix, f: impl FnOnce(&mut MessageBuilder<'_>) -> Result<(), WireError>) -> Vec<u8> {
    let mut buf = vec![0u8; 1024];
    let mut b = MessageBuilder::new(&mut buf, prefix, VendorId::DETPATH).unwrap();
    f(&mut b).unwrap();
    let n = b.finish();
    buf.truncate(n);
    buf
}

/// Participant `prefix`'s SPDP announcement (sequence number 1): its
/// locators on PEER_IP:`port`, its lease and user data as given.
pub fn spdp_announcement(prefix: GuidPrefix, lease_ns: i64, port: u16, user_data: &[u8]) -> Vec<u8> {
    let loc = Locator::udpv4(SocketAddrV4::new(PEER_IP, port));
    let pd = ParticipantData {
        guid_prefix: prefix,
        protocol_version: ProtocolVersion::V2_1,
        vendor: VendorId::DETPATH,
        domain_id: Some(0),
        default_unicast: vec![loc],
        metatraffic_unicast: vec![loc],
        metatraffic_multicast: Vec::new(),
        lease_ns,
        builtin_endpoints: builtin::DETPATH,
        user_data: user_data.to_vec(),
        host_id: None,
    };
    let mut payload = vec![0u8; 512];
    let n = {
        let mut w = ByteWriter::new(&mut payload, true);
        w.bytes(&[0, 3, 0, 0]).unwrap();
        pd.write(&mut w).unwrap();
        w.pos()
    };
    message(prefix, |b| b.data_bytes(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(1), None, &payload[..n]))
}

//! A burst of corrupted and forged RTPS at a running pong, as a hostile or
//! careless neighbour would send it: live traffic captured off the testbed
//! link (AF_PACKET, the ping side's outgoing RTPS to the pong), mutated (bit
//! flips, truncations, submessage length fields, junk after the header,
//! repeats, heartbeats and GAPs with huge sequence numbers, the live SPDP
//! turned into goodbyes) plus forged SPDP (infinite leases, thousands of
//! GUIDs), and sent from the ping's namespace with a plain UDP socket. Used
//! by `tests/corrupt_burst.rs` and `examples/burst_recovery.rs`.
// Compiled into the test and the example separately, each using a part
// (KINDS is for readers, through the docs): the rest is dead code to each.
#![allow(dead_code)]

use detpath::testbed::Side;
use detpath_pubsub::discovery::{builtin, ParticipantData};
use detpath_pubsub::wire::bytes::ByteWriter;
use detpath_pubsub::wire::{EntityId, GuidPrefix, Locator, MessageBuilder, ProtocolVersion, SequenceNumber, VendorId};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

/// One captured datagram: its UDP destination and payload.
pub type Datagram = (SocketAddrV4, Vec<u8>);

/// Captures, for `dur`, the RTPS datagrams `side` sends to `dst_ip`
/// (outgoing on its interface: an AF_PACKET socket in its namespace).
pub fn capture(side: &Side, dst_ip: Ipv4Addr, dur: Duration) -> Vec<Datagram> {
    side.run(|| capture_here(&side.iface, dst_ip, dur)).expect("enter the namespace").expect("AF_PACKET capture (needs root)")
}

fn capture_here(iface: &str, dst_ip: Ipv4Addr, dur: Duration) -> detpath::sys::Result<Vec<Datagram>> {
    let sock = detpath::sys::packet::PacketSocket::open(iface)?;
    let (mut out, mut buf) = (Vec::new(), vec![0u8; 65536]);
    let end = Instant::now() + dur;
    while Instant::now() < end {
        if let Some(n) = sock.recv_sent(&mut buf, Duration::from_millis(100))? {
            if let Some(d) = udp_rtps(&buf[..n], dst_ip) {
                out.push(d);
            }
        }
    }
    Ok(out)
}

/// The UDP payload of an Ethernet/IPv4/UDP frame to `dst_ip` when it is RTPS (unfragmented).
fn udp_rtps(f: &[u8], dst_ip: Ipv4Addr) -> Option<Datagram> {
    if f.len() < 14 + 20 + 8 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = &f[14..];
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
    if ip[9] != 17 || frag != 0 || ip.len() < ihl + 8 || Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]) != dst_ip {
        return None;
    }
    let udp = &ip[ihl..];
    let port = u16::from_be_bytes([udp[2], udp[3]]);
    let len = (u16::from_be_bytes([udp[4], udp[5]]) as usize).min(udp.len());
    let payload = udp.get(8..len)?;
    payload.starts_with(b"RTPS").then(|| (SocketAddrV4::new(dst_ip, port), payload.to_vec()))
}

/// A small deterministic PRNG (xorshift).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Offsets of the submessages of an RTPS message (id at the offset, flags, length).
fn submessages(m: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut o = 20;
    while o + 4 <= m.len() {
        v.push(o);
        let le = m[o + 1] & 1 != 0;
        let len = if le { u16::from_le_bytes([m[o + 2], m[o + 3]]) } else { u16::from_be_bytes([m[o + 2], m[o + 3]]) } as usize;
        if len == 0 {
            break;
        }
        o += 4 + len;
    }
    v
}

/// Writes a sequence number (high i32, low u32) at `at` in the submessage's byte order.
fn put_sn(m: &mut [u8], at: usize, le: bool, sn: i64) {
    if at + 8 > m.len() {
        return;
    }
    let (hi, lo) = ((sn >> 32) as i32, sn as u32);
    let (h, l) = if le { (hi.to_le_bytes(), lo.to_le_bytes()) } else { (hi.to_be_bytes(), lo.to_be_bytes()) };
    m[at..at + 4].copy_from_slice(&h);
    m[at + 4..at + 8].copy_from_slice(&l);
}

const HEARTBEAT: u8 = 0x07;
const GAP: u8 = 0x08;
const DATA: u8 = 0x15;

/// A forged SPDP announcement of a participant that does not exist, with an infinite lease.
pub fn forged_spdp(rng: &mut Rng, to: Ipv4Addr) -> Vec<u8> {
    let mut p = [0u8; 12];
    for b in p.iter_mut() {
        *b = rng.next() as u8;
    }
    let prefix = GuidPrefix(p);
    let loc = Locator::udpv4(SocketAddrV4::new(to, 7400 + rng.below(200) as u16));
    let pd = ParticipantData {
        guid_prefix: prefix,
        protocol_version: ProtocolVersion::V2_1,
        vendor: VendorId::DETPATH,
        domain_id: Some(0),
        default_unicast: vec![loc],
        metatraffic_unicast: vec![loc],
        metatraffic_multicast: Vec::new(),
        lease_ns: i64::MAX,
        builtin_endpoints: builtin::DETPATH,
        user_data: b"DDSPerf:0:1:forged".to_vec(),
        host_id: None,
    };
    let mut payload = vec![0u8; 512];
    let n = {
        let mut w = ByteWriter::new(&mut payload, true);
        w.bytes(&[0, 3, 0, 0]).unwrap();
        pd.write(&mut w).unwrap();
        w.pos()
    };
    let mut buf = vec![0u8; 1024];
    let mut b = MessageBuilder::new(&mut buf, prefix, VendorId::DETPATH).unwrap();
    b.data_bytes(EntityId::SPDP_READER, EntityId::SPDP_WRITER, SequenceNumber(1), None, &payload[..n]).unwrap();
    let len = b.finish();
    buf.truncate(len);
    buf
}

/// Kinds of mutation [`corpus`] makes (an empty list: all of them).
pub const KINDS: &str = "0-1 bit flips, 2 truncation, 3 submessage length, 4 junk after the header, 5 repeats, 6-7 huge sequence numbers and counts, 8 key flag (goodbyes), 9 forged SPDP";

/// `n` datagrams mutated from `seed` (the captured traffic), each to its
/// original destination; `kinds` picks the mutations (see [`KINDS`]; empty: all).
pub fn corpus(seed: &[Datagram], n: usize, rng_seed: u64, kinds: &[usize]) -> Vec<Datagram> {
    assert!(!seed.is_empty(), "nothing captured to mutate");
    let mut rng = Rng(rng_seed | 1);
    let mut out: Vec<Datagram> = Vec::with_capacity(n);
    while out.len() < n {
        let (dst, orig) = &seed[rng.below(seed.len())];
        let mut m = orig.clone();
        let subs = submessages(&m);
        let kind = if kinds.is_empty() { rng.below(10) } else { kinds[rng.below(kinds.len())] };
        match kind {
            // Bit flips anywhere after the magic.
            0 | 1 => {
                for _ in 0..1 + rng.below(4) {
                    let i = 4 + rng.below(m.len() - 4);
                    m[i] ^= 1 << rng.below(8);
                }
            }
            // Truncation.
            2 => m.truncate(rng.below(m.len())),
            // A submessage length field made wrong.
            3 => {
                if let Some(&o) = subs.get(rng.below(subs.len())) {
                    let v = [0u16, 1, 3, 0xffff, rng.next() as u16][rng.below(5)];
                    m[o + 2..o + 4].copy_from_slice(&v.to_le_bytes());
                }
            }
            // Junk after the header.
            4 => {
                m.truncate(20);
                for _ in 0..rng.below(200) {
                    m.push(rng.next() as u8);
                }
            }
            // Repeats of one datagram, unchanged.
            5 => {
                for _ in 0..rng.below(20) {
                    out.push((*dst, m.clone()));
                }
            }
            // Heartbeats, GAPs and DATA of the live writers with huge (or inverted) sequence numbers.
            6 | 7 => {
                for &o in &subs {
                    let le = m[o + 1] & 1 != 0;
                    let huge = [1i64 << 40, 0x7fff_ffff, 1 << 31, i64::MAX >> 1, 1 << 20, 0x7f00_0000][rng.below(6)];
                    match m[o] {
                        HEARTBEAT => {
                            put_sn(&mut m, o + 12, le, 1 + rng.below(3) as i64);
                            put_sn(&mut m, o + 20, le, huge);
                            // And a count far ahead.
                            if o + 32 <= m.len() {
                                m[o + 28..o + 32].copy_from_slice(&(i32::MAX - rng.below(1000) as i32).to_le_bytes());
                            }
                        }
                        GAP => {
                            put_sn(&mut m, o + 12, le, 1);
                            put_sn(&mut m, o + 20, le, huge);
                        }
                        DATA => put_sn(&mut m, o + 16, le, huge),
                        _ => {}
                    }
                }
            }
            // A live participant's message with the key flag set on its DATA (a goodbye, for SPDP).
            8 => {
                for &o in &subs {
                    if m[o] == DATA {
                        m[o + 1] |= 0x08;
                    }
                }
            }
            // A participant that does not exist, with an infinite lease.
            _ => m = forged_spdp(&mut rng, Ipv4Addr::new(10, 99, 0, 7)),
        }
        out.push((*dst, m));
    }
    out.truncate(n);
    out
}

/// Sends `corpus` from `side`'s namespace (a plain UDP socket on its address),
/// spread over `over`. Returns when the last datagram is sent.
pub fn send(side: &Side, corpus: &[Datagram], over: Duration) {
    let addr = side.addr;
    let sock = side.run(|| UdpSocket::bind(SocketAddrV4::new(addr, 0))).expect("enter the namespace").expect("bind the burst socket");
    let start = Instant::now();
    let per = over.as_secs_f64() / corpus.len().max(1) as f64;
    for (i, (dst, m)) in corpus.iter().enumerate() {
        // Errors (e.g. ENOBUFS) are part of a burst; the rest still goes.
        let _ = sock.send_to(m, dst);
        if i % 64 == 63 {
            let due = start + Duration::from_secs_f64(per * (i + 1) as f64);
            if let Some(d) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
        }
    }
}

/// ddsperf's per-second round-trip lines: (seconds since it started, round trips counted that second).
pub fn ddsperf_counts(text: &str) -> Vec<(f64, u64)> {
    text.lines()
        .filter(|l| l.contains(" size ") && l.contains(" cnt "))
        .filter_map(|l| {
            let t = l.split_whitespace().nth(1)?.parse::<f64>().ok()?;
            let c = l.split(" cnt ").nth(1)?.trim().parse::<u64>().ok()?;
            Some((t, c))
        })
        .collect()
}

/// Seconds from `burst_end_s` until the end of the first one-second report
/// that lies wholly after the burst and has round trips in it: an upper
/// bound of the recovery time, at a one-second resolution (so at least 1 s);
/// None when none came.
pub fn recovery_s(counts: &[(f64, u64)], burst_end_s: f64) -> Option<f64> {
    counts.iter().find(|(t, c)| *t - 1.0 >= burst_end_s && *c > 0).map(|(t, _)| t - burst_end_s)
}

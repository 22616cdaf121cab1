//! The shared sender driven through a port made of byte buffers: every
//! frame it puts on the "wire" is parsed back with `detpath_wire` (whole
//! datagrams with `parse_udp_frame`, fragments through its reassembler).
//! The datapaths' own testbed tests (tests/afxdp.rs, tests/dpdk.rs,
//! tests/fragments.rs) drive the same code over real sockets and ports.

use super::*;
use detpath_wire::reasm::{parse_fragment, Reassembler};
use detpath_wire::{parse_udp_frame, HEADERS_LEN};
use std::collections::HashMap;

const MAX_PAYLOAD: usize = 1472;
const ME: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

fn local() -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 1), 7000)
}
fn peer() -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 9, 0, 2), 7001)
}

/// A port whose buffers are byte vectors, whose neighbour table is a map
/// the test edits, and whose wire is a list of frames.
struct BytesPort {
    name: Arc<str>,
    bufs: Vec<Vec<u8>>,
    free: Vec<usize>,
    neigh: HashMap<Ipv4Addr, Lookup>,
    staged: Vec<(usize, usize)>,
    wire: Vec<Vec<u8>>,
    /// Frames the queue takes before it is full (`send_parked` refuses).
    queue_room: usize,
    /// Lookups answered so far, and after how many the peer resolves (if set).
    lookups: usize,
    ready_after: Option<usize>,
    counters: Counters,
}

impl BytesPort {
    fn new(bufs: usize) -> BytesPort {
        BytesPort {
            name: "fake0".into(),
            bufs: vec![vec![0u8; MAX_PAYLOAD + HEADERS_LEN]; bufs],
            free: (0..bufs).rev().collect(),
            neigh: HashMap::new(),
            staged: Vec::new(),
            wire: Vec::new(),
            queue_room: usize::MAX,
            lookups: 0,
            ready_after: None,
            counters: Counters::default(),
        }
    }

    fn with_peer(mut self, l: Lookup) -> BytesPort {
        self.neigh.insert(*peer().ip(), l);
        self
    }

    /// Every buffer is free again or on the wire (none leaked).
    fn assert_no_leak(&self, parked: usize) {
        assert_eq!(self.free.len() + parked, self.bufs.len(), "buffers are free or parked");
        assert!(self.staged.is_empty(), "nothing left staged");
    }
}

impl TxPort for BytesPort {
    type Buf = usize;
    fn resolve(&mut self, ip: Ipv4Addr) -> Lookup {
        self.lookups += 1;
        if self.ready_after.is_some_and(|n| self.lookups > n) {
            self.neigh.insert(ip, Lookup::Ready(PEER_MAC));
        }
        self.neigh.get(&ip).copied().unwrap_or(Lookup::OffLink)
    }
    fn unresolved(&self, ip: Ipv4Addr) -> Error {
        Error::NoNeighbour { peer: ip, iface: self.name.clone(), why: "test resolver gave up" }
    }
    fn name(&self) -> &Arc<str> {
        &self.name
    }
    fn counters(&mut self) -> &mut Counters {
        &mut self.counters
    }
    fn reserve(&mut self, want: usize) -> Result<usize> {
        match want.min(self.free.len()) {
            0 => Err(Error::io("no buffer", std::io::Error::from_raw_os_error(libc::ENOBUFS))),
            n => Ok(n),
        }
    }
    fn spare(&mut self) -> usize {
        self.free.len()
    }
    fn take(&mut self) -> Result<usize> {
        self.free.pop().ok_or_else(|| Error::io("no buffer", std::io::Error::from_raw_os_error(libc::ENOBUFS)))
    }
    fn room(&mut self, b: usize) -> &mut [u8] {
        &mut self.bufs[b]
    }
    fn stage(&mut self, b: usize, len: usize) {
        self.staged.push((b, len));
    }
    fn flush(&mut self) -> Result<()> {
        for (b, len) in std::mem::take(&mut self.staged) {
            self.wire.push(self.bufs[b][..len].to_vec());
            self.free.push(b);
        }
        Ok(())
    }
    fn send_parked(&mut self, b: usize, len: usize) -> bool {
        if self.queue_room == 0 {
            return false;
        }
        self.queue_room -= 1;
        self.stage(b, len);
        true
    }
    fn give_back(&mut self, b: usize) {
        self.free.push(b);
    }
}

fn sender() -> Sender<usize> {
    Sender::new(ME, local(), MAX_PAYLOAD, detpath_wire::MAX_UDP_PAYLOAD)
}

fn fill(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// The datagrams on the wire, put back together: (destination MAC, payload).
fn datagrams(wire: &[Vec<u8>]) -> Vec<(MacAddr, Vec<u8>)> {
    let mut reasm = Reassembler::new(4, u64::MAX);
    let mut out = Vec::new();
    for f in wire {
        let mac = MacAddr(f[..6].try_into().unwrap());
        match parse_fragment(f) {
            Ok(frag) => {
                if let Some(d) = reasm.offer(&frag, 0, true).expect("a well-formed fragment") {
                    assert_eq!((d.src, d.dst), (local(), peer()));
                    out.push((mac, d.payload.to_vec()));
                }
            }
            Err(_) => {
                let u = parse_udp_frame(f, true).expect("a well-formed UDP frame");
                assert_eq!((u.src, u.dst, u.src_mac), (local(), peer(), ME));
                out.push((u.dst_mac, u.payload(f).to_vec()));
            }
        }
    }
    out
}

#[test]
fn a_resolved_datagram_is_one_frame_and_counted_once() {
    let mut port = BytesPort::new(8).with_peer(Lookup::Ready(PEER_MAC));
    let mut tx = sender();
    let payload = fill(1, 300);
    tx.send(&mut port, &payload, peer(), 0xb8).unwrap();
    assert_eq!(port.wire.len(), 1);
    assert_eq!(port.wire[0][ETH_TOS], 0xb8, "the type of service byte is the mark's");
    assert_eq!(datagrams(&port.wire), [(PEER_MAC, payload)]);
    assert_eq!((port.counters.tx_packets, port.counters.tx_bytes), (1, 300));
    port.assert_no_leak(0);
}

/// Offset of the IPv4 type of service byte in a frame.
const ETH_TOS: usize = detpath_wire::ETH_HLEN + 1;

#[test]
fn a_datagram_above_one_frame_goes_as_fragments_that_reassemble() {
    let mut port = BytesPort::new(4).with_peer(Lookup::Ready(PEER_MAC));
    let mut tx = sender();
    // More fragments than buffers: the sender stages as the port has room.
    let payload = fill(2, 9000);
    tx.send(&mut port, &payload, peer(), 0).unwrap();
    assert_eq!(port.wire.len(), detpath_wire::udp_fragment_count(9000, MAX_PAYLOAD + IPV4_HLEN + UDP_HLEN));
    assert!(port.wire.len() > 4);
    assert_eq!(datagrams(&port.wire), [(PEER_MAC, payload)]);
    assert_eq!((port.counters.tx_packets, port.counters.tx_bytes), (1, 9000), "one datagram, however many frames");
    port.assert_no_leak(0);
}

#[test]
fn datagrams_to_a_resolving_peer_park_and_go_once_it_resolves() {
    let mut port = BytesPort::new(16).with_peer(Lookup::Resolving);
    let mut tx = sender();
    let (small, large) = (fill(3, 100), fill(4, 4000));
    tx.send(&mut port, &small, peer(), 0).unwrap();
    tx.send(&mut port, &large, peer(), 0).unwrap();
    assert!(port.wire.is_empty() && tx.has_parked());
    assert_eq!(port.counters.tx_packets, 0, "a parked datagram is not sent yet");
    tx.service_parked(&mut port);
    assert!(port.wire.is_empty(), "still resolving: still parked");
    port.neigh.insert(*peer().ip(), Lookup::Ready(PEER_MAC));
    tx.service_parked(&mut port);
    assert!(!tx.has_parked());
    assert_eq!(datagrams(&port.wire), [(PEER_MAC, small), (PEER_MAC, large)], "in order, with the resolved MAC");
    assert_eq!((port.counters.tx_packets, port.counters.tx_bytes), (2, 4100));
    port.assert_no_leak(0);
}

#[test]
fn a_full_queue_keeps_parked_frames_for_the_next_call() {
    let mut port = BytesPort::new(16).with_peer(Lookup::Resolving);
    let mut tx = sender();
    for i in 0..3 {
        tx.send(&mut port, &fill(i, 64), peer(), 0).unwrap();
    }
    port.neigh.insert(*peer().ip(), Lookup::Ready(PEER_MAC));
    port.queue_room = 1;
    tx.service_parked(&mut port);
    assert_eq!((port.wire.len(), port.counters.tx_packets), (1, 1));
    port.queue_room = usize::MAX;
    tx.service_parked(&mut port);
    assert_eq!(datagrams(&port.wire).into_iter().map(|d| d.1).collect::<Vec<_>>(), (0..3).map(|i| fill(i, 64)).collect::<Vec<_>>());
    assert_eq!(port.counters.tx_packets, 3);
}

#[test]
fn a_peer_that_never_resolves_drops_its_parked_datagrams_counted_once_each() {
    let mut port = BytesPort::new(16).with_peer(Lookup::Resolving);
    let mut tx = sender();
    tx.send(&mut port, &fill(5, 100), peer(), 0).unwrap();
    tx.send(&mut port, &fill(6, 5000), peer(), 0).unwrap();
    port.neigh.insert(*peer().ip(), Lookup::Unresolved);
    tx.service_parked(&mut port);
    assert!(port.wire.is_empty() && !tx.has_parked());
    assert_eq!(port.counters.tx_no_neigh, 2, "two datagrams, however many fragments");
    assert_eq!(port.counters.tx_packets, 0);
    port.assert_no_leak(0);
    // A send to it now fails at once, naming the resolver's reason.
    let e = tx.send(&mut port, &fill(7, 10), peer(), 0).unwrap_err();
    assert!(e.to_string().contains("test resolver gave up"), "{e}");
    assert_eq!(port.counters.tx_no_neigh, 3);
}

#[test]
fn parking_is_bounded_and_a_fragmented_datagram_parks_whole_or_not_at_all() {
    let mut port = BytesPort::new(PARK_SLOTS + 8).with_peer(Lookup::Resolving);
    let mut tx = sender();
    // Fill all but 2 slots, then a 4-fragment datagram does not fit: none of it parks.
    for i in 0..PARK_SLOTS - 2 {
        tx.send(&mut port, &fill(i as u8, 20), peer(), 0).unwrap();
    }
    let e = tx.send(&mut port, &fill(9, 5000), peer(), 0).unwrap_err();
    assert!(e.to_string().contains("too few parking slots"), "{e}");
    assert_eq!(port.counters.tx_no_neigh, 1);
    port.assert_no_leak(PARK_SLOTS - 2);
    // Two more small ones fit; the next one finds every slot taken.
    for _ in 0..2 {
        tx.send(&mut port, &fill(1, 20), peer(), 0).unwrap();
    }
    let e = tx.send(&mut port, &fill(1, 20), peer(), 0).unwrap_err();
    assert!(e.to_string().contains("every parking slot is taken"), "{e}");
    assert_eq!(port.counters.tx_no_neigh, 2);
    port.assert_no_leak(PARK_SLOTS);
    port.neigh.insert(*peer().ip(), Lookup::Ready(PEER_MAC));
    tx.service_parked(&mut port);
    assert_eq!(port.counters.tx_packets, PARK_SLOTS as u64);
    port.assert_no_leak(0);
}

#[test]
fn off_link_and_oversized_datagrams_fail_at_once() {
    let mut port = BytesPort::new(8);
    let mut tx = sender();
    let e = tx.send(&mut port, &[0; 10], peer(), 0).unwrap_err();
    assert!(matches!(e, Error::NoRoute { .. }), "{e}");
    assert_eq!(port.counters.tx_no_route, 1);
    port.neigh.insert(*peer().ip(), Lookup::Ready(PEER_MAC));
    let e = tx.send(&mut port, &vec![0; detpath_wire::MAX_UDP_PAYLOAD + 1], peer(), 0).unwrap_err();
    assert!(matches!(e, Error::PayloadTooLarge { .. }), "{e}");
    assert!(port.wire.is_empty());
    port.assert_no_leak(0);
}

#[test]
fn a_batch_sends_what_precedes_a_failure_and_says_how_many() {
    let mut port = BytesPort::new(8).with_peer(Lookup::Ready(PEER_MAC));
    let mut tx = sender();
    let other = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 9);
    let (a, b, big) = (fill(1, 10), fill(2, 20), fill(3, 3000));
    let batch = [
        TxDatagram { payload: &a, peer: peer() },
        TxDatagram { payload: &big, peer: peer() },
        TxDatagram { payload: &b, peer: peer() },
        TxDatagram { payload: &a, peer: other },
        TxDatagram { payload: &b, peer: peer() },
    ];
    assert_eq!(tx.send_batch(&mut port, &batch, 2).unwrap(), 3, "the off-link fourth ends the batch");
    assert_eq!(datagrams(&port.wire), [(PEER_MAC, a.clone()), (PEER_MAC, big.clone()), (PEER_MAC, b.clone())]);
    assert_eq!((port.counters.tx_packets, port.counters.tx_no_route), (3, 1));
    // A batch whose first datagram fails reports the error itself.
    assert!(matches!(tx.send_batch(&mut port, &batch[3..], 2), Err(Error::NoRoute { .. })));
    port.assert_no_leak(0);
}

#[test]
fn a_datagram_sent_as_its_peer_resolves_goes_after_those_parked_for_it() {
    let mut port = BytesPort::new(16).with_peer(Lookup::Resolving);
    let mut tx = sender();
    let (first, second, third) = (fill(1, 40), fill(2, 3000), fill(3, 50));
    tx.send(&mut port, &first, peer(), 0).unwrap();
    // The resolver learns the MAC between two sends (or within one batch).
    port.neigh.insert(*peer().ip(), Lookup::Ready(PEER_MAC));
    tx.send(&mut port, &second, peer(), 0).unwrap();
    tx.send_batch(&mut port, &[TxDatagram { payload: &third, peer: peer() }], 8).unwrap();
    assert!(!tx.has_parked(), "the call that found the MAC sent what waited");
    assert_eq!(datagrams(&port.wire), [(PEER_MAC, first), (PEER_MAC, second), (PEER_MAC, third)], "in the order sent");
    assert_eq!(port.counters.tx_packets, 3);
    port.assert_no_leak(0);
}

#[test]
fn a_peer_resolving_in_the_middle_of_a_pass_gets_its_parked_frames_in_order() {
    let mut port = BytesPort::new(16).with_peer(Lookup::Resolving);
    let mut tx = sender();
    let sent: Vec<Vec<u8>> = (0..6).map(|i| fill(i, 30 + i as usize)).collect();
    for p in &sent {
        tx.send(&mut port, p, peer(), 0).unwrap();
    }
    assert!(port.wire.is_empty());
    // The resolver answers on the second lookup of the next pass (the kernel
    // learnt the MAC between two parked frames).
    port.ready_after = Some(port.lookups + 1);
    tx.service_parked(&mut port);
    tx.service_parked(&mut port);
    assert_eq!(datagrams(&port.wire).into_iter().map(|d| d.1).collect::<Vec<_>>(), sent, "in the order sent");
    port.assert_no_leak(0);
}

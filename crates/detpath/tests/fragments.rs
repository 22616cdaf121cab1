//! IPv4 fragments on the datapaths that parse frames themselves (afxdp,
//! xdppoll, dpdk): a kernel UDP sender fragments datagrams above the MTU (as
//! CycloneDDS's 14,720-byte RTPS messages are); the endpoint's XDP program
//! hands every fragment of a datagram to its port to user space, which
//! reassembles it. Fragmented datagrams to other ports still reach the
//! kernel. Real veth pair between two namespaces; needs root.

mod common;

use common::assert_no_xdp;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Endpoint, RecvMode, RxBatch};
use std::net::UdpSocket;
use std::time::Duration;

const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

fn fill(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(7)) as u8).collect()
}

/// The next datagram at `sock`, calling `ep` meanwhile: a datagram to a
/// peer still resolving is parked and leaves on a later call on the endpoint.
fn recv_driving(ep: &mut dyn Endpoint, sock: &UdpSocket, buf: &mut [u8]) -> std::io::Result<(usize, std::net::SocketAddr)> {
    sock.set_nonblocking(true)?;
    let t0 = std::time::Instant::now();
    let mut scratch = [0u8; 64];
    loop {
        match sock.recv_from(buf) {
            Ok(got) => return Ok(got),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && t0.elapsed() < Duration::from_secs(2) => {
                let _ = ep.recv(&mut scratch, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(5)) });
            }
            Err(e) => return Err(e),
        }
    }
}

#[test]
fn fragmented_datagrams_are_reassembled_and_others_reach_the_kernel() {
    let tb = Testbed::up(TestbedConfig::unique("frag")).unwrap();
    for (i, dp) in ["afxdp", "xdppoll", "dpdk"].into_iter().enumerate() {
        let port = 7500 + 10 * i as u16;
        let uri = tb.b().uri(dp, port) + if dp == "dpdk" { "&huge=off" } else { "" };
        let mut ep: Box<dyn Endpoint> = tb.b().run(|| detpath_open::open(&uri)).unwrap().unwrap_or_else(|e| panic!("{uri}: {e}"));
        // A kernel socket on the same address, another port, beside the program.
        let kernel = tb.b().run(|| UdpSocket::bind((tb.b().addr, port + 1)).unwrap()).unwrap();
        kernel.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let client = tb.a().run(|| UdpSocket::bind((tb.a().addr, 0)).unwrap()).unwrap();
        let mut buf = vec![0u8; 70_000];
        let sizes = [1472, 1473, 2000, 9000, 14_720, 30_000, 65_507, 100];
        for (k, &len) in sizes.iter().enumerate() {
            let p = fill(k, len);
            client.send_to(&p, ep.local_addr()).unwrap();
            let m = ep.recv(&mut buf, WAIT).unwrap().unwrap_or_else(|| panic!("{dp}: {len} B datagram not received"));
            assert_eq!(m.len, len, "{dp}: length");
            assert!(buf[..len] == p[..], "{dp}: {len} B payload differs");
            assert_eq!(m.peer, std::net::SocketAddrV4::new(tb.a().addr, client.local_addr().unwrap().port()));
        }
        // Batches too: three 5000-byte datagrams in a row.
        for k in 0..3 {
            client.send_to(&fill(100 + k, 5000), ep.local_addr()).unwrap();
        }
        let mut batch = RxBatch::new(8, 8192);
        let mut got = Vec::new();
        while got.len() < 3 {
            assert!(ep.recv_batch(&mut batch, WAIT).unwrap() > 0, "{dp}: batch of fragmented datagrams");
            got.extend(batch.iter().map(|(_, p)| p.to_vec()));
        }
        assert_eq!(got, (0..3).map(|k| fill(100 + k, 5000)).collect::<Vec<_>>(), "{dp}: batched datagrams");
        // The kernel's own fragmented datagram (another port) is not taken
        // (dpdk owns its queue: net_af_xdp takes every frame, as a PCI port would).
        if dp != "dpdk" {
            let q = fill(9, 6000);
            client.send_to(&q, (tb.b().addr, port + 1)).unwrap();
            let (n, _) = kernel.recv_from(&mut buf).expect("the kernel socket gets its fragmented datagram");
            assert!(n == q.len() && buf[..n] == q[..], "{dp}: kernel datagram");
        }
        // And back: a datagram above the MTU from the endpoint to a kernel socket
        // (afxdp and dpdk fragment it themselves; xdppoll sends through the kernel).
        if ep.capabilities().max_datagram > ep.capabilities().max_payload || dp == "xdppoll" {
            client.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            for len in [1473, 9000, 65_507] {
                let r = fill(len, len);
                ep.send_to(&r, std::net::SocketAddrV4::new(tb.a().addr, client.local_addr().unwrap().port()))
                    .unwrap_or_else(|e| panic!("{dp}: send {len} B: {e}"));
                let (n, _) = recv_driving(&mut *ep, &client, &mut buf).unwrap_or_else(|e| panic!("{dp}: the kernel got no {len} B datagram: {e}"));
                assert!(n == len && buf[..n] == r[..], "{dp}: {len} B datagram to the kernel differs");
            }
            assert!(ep.send_to(&vec![0u8; 65_508], std::net::SocketAddrV4::new(tb.a().addr, 9)).is_err(), "{dp}: above 65,507 B is refused");
            // A batch with one datagram above the MTU among small ones: all arrive, in order.
            let to = std::net::SocketAddrV4::new(tb.a().addr, client.local_addr().unwrap().port());
            let sizes = [100usize, 5000, 200];
            let datagrams: Vec<Vec<u8>> = sizes.iter().map(|&n| fill(n + 1, n)).collect();
            let batch: Vec<detpath::TxDatagram> = datagrams.iter().map(|p| detpath::TxDatagram { payload: p, peer: to }).collect();
            assert_eq!(ep.send_batch(&batch).unwrap(), 3, "{dp}: batch sent");
            for p in &datagrams {
                let (n, _) = recv_driving(&mut *ep, &client, &mut buf).unwrap_or_else(|e| panic!("{dp}: batch datagram of {} B missing: {e}", p.len()));
                assert!(n == p.len() && buf[..n] == p[..], "{dp}: batch datagram of {} B differs (got {n} B)", p.len());
            }
        }
        let c = ep.counters();
        assert_eq!(c.rx_malformed, 0, "{dp}: {c:?}");
        assert_eq!(c.rx_packets, sizes.len() as u64 + 3, "{dp}: {c:?}");
    }
    assert_no_xdp(tb.b());
}

/// The first datagram an endpoint sends to a fresh peer (no neighbour entry
/// yet) is above the MTU: every fragment is parked while the peer resolves
/// and all go out, in order, on later calls (afxdp resolves through the
/// kernel's table, dpdk by its own ARP).
#[test]
fn a_fragmented_first_datagram_to_a_fresh_peer_arrives() {
    let tb = Testbed::up(TestbedConfig::unique("frfr")).unwrap();
    for (i, dp) in ["afxdp", "dpdk"].into_iter().enumerate() {
        let port = 7700 + 10 * i as u16;
        let _ = std::process::Command::new("ip").args(["-n", &tb.b().netns, "neigh", "flush", "dev", &tb.b().iface]).status();
        let uri = tb.b().uri(dp, port) + if dp == "dpdk" { "&huge=off" } else { "" };
        let mut ep: Box<dyn Endpoint> = tb.b().run(|| detpath_open::open(&uri)).unwrap().unwrap_or_else(|e| panic!("{uri}: {e}"));
        let peer = tb.a().run(|| UdpSocket::bind((tb.a().addr, port)).unwrap()).unwrap();
        peer.set_nonblocking(true).unwrap();
        let to = std::net::SocketAddrV4::new(tb.a().addr, port);
        let p = fill(i, 3000);
        ep.send_to(&p, to).unwrap_or_else(|e| panic!("{dp}: first datagram, 3000 B, to a fresh peer: {e}"));
        let mut buf = vec![0u8; 4096];
        let t0 = std::time::Instant::now();
        let n = loop {
            if let Ok((n, _)) = peer.recv_from(&mut buf) {
                break n;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{dp}: the datagram never arrived: {:?}", ep.counters());
            // Later calls send what was parked.
            let _ = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(10)) }).unwrap();
        };
        assert!(n == p.len() && buf[..n] == p[..], "{dp}: {n} B arrived, 3000 B sent");
        let c = ep.counters();
        assert_eq!((c.tx_packets, c.tx_no_neigh), (1, 0), "{dp}: {c:?}");
    }
    assert_no_xdp(tb.b());
}

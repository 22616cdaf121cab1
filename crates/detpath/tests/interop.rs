//! The interop matrix: every (client datapath, server datapath) pair in the
//! testbed exchanges 10,000 datagrams both ways (client → server → client),
//! with payload sizes cycling from 1 byte to the largest the MTU allows,
//! checking every payload byte and exact counts on both sides.
//!
//! Needs root (namespaces, XDP). One test per pair, so a failure names the pair.

use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Endpoint, RecvMode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const DATAGRAMS: u64 = 10_000;
const SERVER_PORT: u16 = 7000;
const CLIENT_PORT: u16 = 7001;
const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

/// Payload of datagram `i`: its size cycles 1..=max, its bytes depend on i and position.
fn payload(i: u64, max: usize, buf: &mut [u8]) -> usize {
    let len = (i as usize % max) + 1;
    for (k, b) in buf[..len].iter_mut().enumerate() {
        *b = (i as usize).wrapping_mul(31).wrapping_add(k.wrapping_mul(7)) as u8;
    }
    len
}

fn open_in(side: &detpath::testbed::Side, datapath: &str, port: u16) -> Box<dyn Endpoint> {
    let uri = side.uri(datapath, port);
    side.run(|| detpath_open::open(&uri)).unwrap().unwrap_or_else(|e| panic!("opening {uri} in {}: {e}", side.netns))
}

fn exchange(client_dp: &str, server_dp: &str) {
    let tb = Testbed::up(TestbedConfig::unique("interop")).expect("testbed up");
    let mut server = open_in(tb.b(), server_dp, SERVER_PORT);
    let mut client = open_in(tb.a(), client_dp, CLIENT_PORT);
    let server_addr = server.local_addr();
    let max = client.capabilities().max_payload.min(server.capabilities().max_payload);
    assert!(max >= 1400, "max payload {max} on a 1500-byte MTU");

    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let server_thread = std::thread::spawn(move || {
        let mut buf = vec![0u8; 4096];
        let mut echoed = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            if let Some(rx) = server.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(50)) }).unwrap() {
                server.send_to(&buf[..rx.len], rx.peer).unwrap();
                echoed += 1;
            }
        }
        (echoed, server.counters())
    });

    let mut out = vec![0u8; 4096];
    let mut back = vec![0u8; 4096];
    for i in 0..DATAGRAMS {
        let len = payload(i, max, &mut out);
        client.send_to(&out[..len], server_addr).unwrap_or_else(|e| panic!("{client_dp}->{server_dp}: send #{i}: {e}"));
        let rx = client.recv(&mut back, WAIT).unwrap().unwrap_or_else(|| panic!("{client_dp}->{server_dp}: no echo of datagram #{i} ({len} B) within 2 s"));
        assert_eq!(rx.peer, server_addr, "echo from the wrong peer");
        assert_eq!(rx.len, len, "datagram #{i}: echoed length");
        assert_eq!(&back[..len], &out[..len], "datagram #{i}: payload bytes");
    }
    // Nothing extra arrives.
    assert!(client.recv(&mut back, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(100)) }).unwrap().is_none());
    stop.store(true, Ordering::Relaxed);
    let (echoed, sc) = server_thread.join().unwrap();
    let cc = client.counters();
    assert_eq!(echoed, DATAGRAMS);
    assert_eq!((sc.rx_packets, sc.tx_packets), (DATAGRAMS, DATAGRAMS), "server counters {sc:?}");
    assert_eq!((cc.rx_packets, cc.tx_packets), (DATAGRAMS, DATAGRAMS), "client counters {cc:?}");
    assert_eq!(sc.rx_malformed + cc.rx_malformed, 0);
    drop(client);
    drop(tb);
}

macro_rules! pair {
    ($name:ident, $c:literal, $s:literal) => {
        #[test]
        fn $name() {
            exchange($c, $s);
        }
    };
}

pair!(udp_to_udp, "udp", "udp");
pair!(udp_to_xdppoll, "udp", "xdppoll");
pair!(udp_to_afxdp, "udp", "afxdp");
pair!(udp_to_dpdk, "udp", "dpdk");
pair!(xdppoll_to_udp, "xdppoll", "udp");
pair!(xdppoll_to_xdppoll, "xdppoll", "xdppoll");
pair!(xdppoll_to_afxdp, "xdppoll", "afxdp");
pair!(xdppoll_to_dpdk, "xdppoll", "dpdk");
pair!(afxdp_to_udp, "afxdp", "udp");
pair!(afxdp_to_xdppoll, "afxdp", "xdppoll");
pair!(afxdp_to_afxdp, "afxdp", "afxdp");
pair!(afxdp_to_dpdk, "afxdp", "dpdk");
pair!(dpdk_to_udp, "dpdk", "udp");
pair!(dpdk_to_xdppoll, "dpdk", "xdppoll");
pair!(dpdk_to_afxdp, "dpdk", "afxdp");
pair!(dpdk_to_dpdk, "dpdk", "dpdk");

#[test]
fn every_registered_datapath_is_in_the_matrix() {
    let names: Vec<_> = detpath::datapath::transports().map(|d| d.name).collect();
    assert_eq!(names, ["udp", "xdppoll", "afxdp", "dpdk"], "add the new datapath's pairs above");
}

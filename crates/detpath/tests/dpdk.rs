//! The `dpdk` datapath in real namespaces: a DPDK endpoint (net_af_xdp over
//! a veth) against a kernel UDP socket in the other namespace, both ways,
//! with real ARP; typed errors; and the interface's state after drop.
//!
//! Needs root and Debian's DPDK. Every test makes its own testbed
//! (`detpath-dpdk-<pid>-<n>-{a,b}`, removed on drop even on panic); the
//! testbed turns tx checksum offload off on both veth ends.

#![cfg(feature = "dpdk")]

use detpath::datapath::dpdk::DpdkError;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::{Endpoint, Error, RecvMode, RxBatch, TxDatagram};
use std::net::{SocketAddrV4, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

const N: u64 = 10_000;
const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

fn testbed() -> Testbed {
    Testbed::up(TestbedConfig::unique("dpdk")).expect("testbed up (needs root)")
}

fn open(side: &Side, query: &str) -> detpath::Result<Box<dyn Endpoint>> {
    let uri = format!("dpdk://{}?addr={}&{query}", side.iface, side.addr);
    side.run(|| detpath_open::open(&uri)).expect("entering the namespace")
}

fn kernel_socket(side: &Side, port: u16) -> UdpSocket {
    let s = side.run(|| UdpSocket::bind(SocketAddrV4::new(side.addr, port))).unwrap().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

/// Payload of datagram `i`: size cycles 1..=max, bytes depend on i and position.
fn payload(i: u64, max: usize, buf: &mut [u8]) -> usize {
    let len = (i as usize % max) + 1;
    for (k, b) in buf[..len].iter_mut().enumerate() {
        *b = (i as usize).wrapping_mul(31).wrapping_add(k.wrapping_mul(7)) as u8;
    }
    len
}

fn ip_in(ns: &str, args: &[&str]) -> String {
    let out = Command::new("ip").arg("-n").arg(ns).args(args).output().expect("ip");
    assert!(out.status.success(), "ip -n {ns} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The length of the next datagram at `sock`, calling `ep` meanwhile: a
/// datagram to a peer still resolving is parked and leaves on a later call.
fn recv_driving(ep: &mut dyn Endpoint, sock: &UdpSocket, buf: &mut [u8]) -> usize {
    sock.set_nonblocking(true).unwrap();
    let t0 = Instant::now();
    let mut scratch = [0u8; 64];
    loop {
        if let Ok((n, _)) = sock.recv_from(buf) {
            sock.set_nonblocking(false).unwrap();
            return n;
        }
        assert!(t0.elapsed() < Duration::from_secs(2), "no datagram within 2 s: {:?}", ep.counters());
        let _ = ep.recv(&mut scratch, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(5)) });
    }
}

fn dpdk_err(e: &Error) -> &DpdkError {
    DpdkError::of(e).unwrap_or_else(|| panic!("expected a DPDK error, got: {e}"))
}

/// DPDK client → kernel echo server, then kernel client → DPDK echo server
/// (batched), 10,000 datagrams each way, sizes 1..=max, every byte checked.
#[test]
fn exchanges_with_a_kernel_socket_both_ways() {
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let mut ep = open(&a, "port=7000").unwrap_or_else(|e| panic!("open: {e}"));
    let caps = ep.capabilities().clone();
    assert_eq!(caps.datapath, "dpdk");
    assert!(caps.notes.iter().any(|n| n == "pmd=net_af_xdp"), "{:?}", caps.notes);
    let max = caps.max_payload;
    assert_eq!(max, 1472, "max payload on a 1500-byte MTU");
    let server = SocketAddrV4::new(b.addr, 7100);

    // 1. DPDK client, kernel echo server. The first send resolves b by ARP.
    let sock = kernel_socket(&b, 7100);
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        for _ in 0..N {
            let (n, from) = sock.recv_from(&mut buf).expect("kernel server: no datagram within 2 s");
            sock.send_to(&buf[..n], from).unwrap();
        }
        sock
    });
    let (mut out, mut back) = (vec![0u8; 2048], vec![0u8; 2048]);
    let t0 = Instant::now();
    for i in 0..N {
        let len = payload(i, max, &mut out);
        ep.send_to(&out[..len], server).unwrap_or_else(|e| panic!("send #{i}: {e}"));
        let rx = ep.recv(&mut back, WAIT).unwrap().unwrap_or_else(|| panic!("no echo of #{i} ({len} B)"));
        assert_eq!((rx.peer, rx.len, rx.truncated), (server, len, false), "#{i}");
        assert_eq!(&back[..len], &out[..len], "#{i}: payload bytes");
    }
    let rtt = t0.elapsed() / N as u32;
    let sock = echo.join().unwrap();
    eprintln!("dpdk client -> kernel server: {N} echoes, mean RTT {rtt:?}");

    // 2. Kernel client, DPDK echo server with recv_batch/send_batch. The
    //    kernel resolves the DPDK endpoint's address: DPDK answers the ARP.
    let me = ep.local_addr();
    let server_thread = std::thread::spawn(move || {
        let mut batch = RxBatch::new(32, 2048);
        let mut echoed = 0u64;
        while echoed < N {
            let n = ep.recv_batch(&mut batch, WAIT).unwrap();
            assert!(n > 0, "dpdk server: nothing within 2 s after {echoed}");
            let out: Vec<TxDatagram> = batch.iter().map(|(m, p)| TxDatagram { payload: p, peer: m.peer }).collect();
            assert_eq!(ep.send_batch(&out).unwrap(), n);
            echoed += n as u64;
        }
        ep
    });
    let client_addr = sock.local_addr().unwrap();
    for i in 0..N {
        let len = payload(i, max, &mut out);
        sock.send_to(&out[..len], me).unwrap();
        let (n, from) = sock.recv_from(&mut back).unwrap_or_else(|e| panic!("kernel client: no echo of #{i}: {e}"));
        assert_eq!((from, n), (std::net::SocketAddr::V4(me), len), "#{i}");
        assert_eq!(&back[..n], &out[..len], "#{i}: payload bytes");
    }
    let ep = server_thread.join().unwrap();
    let c = ep.counters();
    assert_eq!((c.tx_packets, c.rx_packets), (2 * N, 2 * N), "{c:?}");
    assert_eq!((c.rx_malformed, c.tx_errors, c.rx_truncated), (0, 0, 0), "{c:?}");
    assert!(client_addr.port() == 7100);

    // ARP for real: the kernel learned the DPDK side's MAC by asking (not a static entry).
    let neigh = ip_in(&b.netns, &["neigh", "show", "dev", &b.iface, &a.addr.to_string()]);
    assert!(neigh.contains(&a.mac) && !neigh.contains("PERMANENT"), "kernel neighbour entry: {neigh}");
    drop(ep);
}

/// ARP: an address nobody has is not resolved (the send does not wait; the
/// datagram is counted in tx_no_neigh, then a typed error within the timeout);
/// a static `neigh=` entry is used without asking.
#[test]
fn arp_unresolved_is_typed_and_static_neighbours_work() {
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let mut ep = open(&a, "port=7000&arp_timeout=300").unwrap();
    let t0 = Instant::now();
    // The send does not wait for ARP: the datagram is parked while the request is out...
    ep.send_to(b"x", "10.77.0.99:9".parse().unwrap()).unwrap();
    assert!(t0.elapsed() < Duration::from_millis(200), "the send waited for ARP: {:?}", t0.elapsed());
    // ...and dropped and counted when no reply came within arp_timeout.
    let mut buf = [0u8; 64];
    assert!(ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(500)) }).unwrap().is_none());
    assert_eq!(ep.counters().tx_no_neigh, 1, "{:?}", ep.counters());
    // Remembered as unresolved: the next send fails at once, typed, naming the fix.
    let e = ep.send_to(b"x", "10.77.0.99:9".parse().unwrap()).unwrap_err();
    assert!(matches!(dpdk_err(&e), DpdkError::Unresolved { ms: 300, .. }), "{e}");
    assert!(e.is_per_datagram(), "a server goes on after it: {e}");
    assert_eq!(ep.counters().tx_no_neigh, 2);
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(e.to_string().contains("neigh=10.77.0.99@"), "the fix is named: {e}");
    // Off-link: refused at once, counted, no ARP.
    let e = ep.send_to(b"x", "10.99.0.7:9".parse().unwrap()).unwrap_err();
    assert!(matches!(e, Error::NoRoute { .. }) && e.is_per_datagram(), "{e}");
    assert_eq!(ep.counters().tx_no_route, 1);
    drop(ep);

    // A static neighbour: b's real MAC, given in the spec. b gets the datagram.
    let sock = kernel_socket(&b, 7200);
    let mut ep = open(&a, &format!("port=7001&neigh={}@{}", b.addr, b.mac)).unwrap();
    ep.send_to(b"static", SocketAddrV4::new(b.addr, 7200)).unwrap();
    let mut buf = [0u8; 64];
    let (n, _) = sock.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"static");
}

/// Typed errors: no such interface, interface down, no such PCI port, port
/// already in use, no hugepages, pool exhausted, bad keys.
#[test]
fn typed_errors() {
    let tb = testbed();
    let a = tb.a().clone();
    let e = a.run(|| detpath_open::open("dpdk://nosuchif0?port=7000")).unwrap().err().unwrap();
    assert!(matches!(e, Error::Sys(detpath::sys::Error::NoSuchInterface { ref iface }) if iface == "nosuchif0"), "{e}");

    let e = detpath_open::open("dpdk://0000:ff:1f.7?addr=10.0.0.1&port=7000").err().unwrap();
    assert!(matches!(dpdk_err(&e), DpdkError::NoSuchPort { .. }), "{e}");
    assert!(e.to_string().contains("no such PCI device"), "{e}");

    let e = open(&a, "port=7000&huge=on").err().unwrap();
    if hugepages_free_mb() < 256 {
        assert!(matches!(dpdk_err(&e), DpdkError::NoHugepages { .. }), "{e}");
        assert!(e.to_string().contains("/proc/sys/vm/nr_hugepages"), "{e}");
    }

    let e = open(&a, "port=7000&mbufs=600").err().unwrap();
    assert!(matches!(dpdk_err(&e), DpdkError::PoolExhausted { .. }), "{e}");

    let first = open(&a, "port=7000").unwrap();
    let e = open(&a, "port=7001").err().unwrap();
    assert!(matches!(dpdk_err(&e), DpdkError::PortInUse { .. }), "{e}");
    drop(first);
    // Released on drop: the port can be opened again.
    drop(open(&a, "port=7000").unwrap());

    let e = open(&a, "port=7000&vdev=pcap").err().unwrap();
    assert!(matches!(e, Error::BadSpec { .. }), "{e}");

    ip_in(&a.netns, &["link", "set", &a.iface, "down"]);
    let e = open(&a, "port=7000").err().unwrap();
    assert!(matches!(e, Error::Sys(detpath::sys::Error::InterfaceDown { .. })), "{e}");
    ip_in(&a.netns, &["link", "set", &a.iface, "up"]);
}

fn hugepages_free_mb() -> u64 {
    let t = std::fs::read_to_string("/proc/meminfo").unwrap();
    let f = |k: &str| t.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap()).unwrap();
    f("HugePages_Free:") * f("Hugepagesize:") / 1024
}

/// After drop the interface is as it was: same promiscuity, up, no XDP
/// program, and every neighbour entry back (stopping a DPDK port on a veth
/// wipes them, even permanent ones).
#[test]
fn interface_state_is_restored_after_drop() {
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    ip_in(&a.netns, &["neigh", "replace", "10.77.0.50", "lladdr", "02:00:00:00:00:50", "dev", &a.iface, "nud", "permanent"]);
    let sock = kernel_socket(&a, 7300); // kernel socket on a's side, to learn b's MAC the kernel way
    sock.send_to(b"hi", SocketAddrV4::new(b.addr, 9)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let link_before = ip_in(&a.netns, &["-d", "link", "show", "dev", &a.iface]);
    let neigh_before = ip_in(&a.netns, &["neigh", "show", "dev", &a.iface]);
    assert!(neigh_before.contains("10.77.0.50") && neigh_before.contains(&b.mac), "{neigh_before}");

    let mut ep = open(&a, "port=7000").unwrap();
    let during = ip_in(&a.netns, &["link", "show", "dev", &a.iface]);
    assert!(during.contains("xdp"), "net_af_xdp attached its program: {during}");
    let peer = kernel_socket(&b, 7301);
    ep.send_to(b"ping", SocketAddrV4::new(b.addr, 7301)).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(recv_driving(&mut *ep, &peer, &mut buf), 4);
    drop(ep);

    let link_after = ip_in(&a.netns, &["-d", "link", "show", "dev", &a.iface]);
    assert!(!link_after.contains("xdp"), "XDP program left behind: {link_after}");
    assert!(link_after.contains("state UP"), "{link_after}");
    let promisc = |s: &str| s.contains("PROMISC") || s.contains("promiscuity 1");
    assert_eq!(promisc(&link_after), promisc(&link_before), "promiscuity: before {link_before} after {link_after}");
    let neigh_after = ip_in(&a.netns, &["neigh", "show", "dev", &a.iface]);
    assert!(neigh_after.contains("10.77.0.50 lladdr 02:00:00:00:00:50 PERMANENT"), "permanent entry not restored: {neigh_after}");
    assert!(neigh_after.contains(&b.mac), "learned entry not restored: {neigh_after}");
    // No libxdp pins or DPDK runtime files for this process's device remain on the interface.
    drop(sock);
}

/// Two DPDK endpoints in one process (one EAL), one per namespace, talk to each other.
#[test]
fn two_dpdk_endpoints_share_the_eal() {
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let mut x = open(&a, "port=7000").unwrap();
    let mut y = open(&b, "port=7000").unwrap();
    let (xa, ya) = (x.local_addr(), y.local_addr());
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        for _ in 0..1000 {
            let rx = y.recv(&mut buf, WAIT).unwrap().expect("y: nothing within 2 s");
            y.send_to(&buf[..rx.len], rx.peer).unwrap();
        }
        y
    });
    let (mut out, mut back) = ([0u8; 2048], [0u8; 2048]);
    for i in 0..1000u64 {
        let len = payload(i, 1472, &mut out);
        x.send_to(&out[..len], ya).unwrap();
        let rx = x.recv(&mut back, WAIT).unwrap().expect("x: no echo");
        assert_eq!((rx.peer, rx.len), (ya, len));
        assert_eq!(&back[..len], &out[..len]);
    }
    let y = t.join().unwrap();
    assert_eq!(x.counters().rx_packets, 1000);
    assert_eq!(xa.port(), 7000);
    drop((x, y));
}

/// A fresh peer that does not answer ARP yet: the first datagram, and a
/// 3000-byte one (three fragments), are accepted by `send_to` and parked,
/// nothing goes out, and the send does not wait on the receive path (a
/// frame already in the RX queue is still unpolled after it: the 5 ms
/// first-contact wait that polled is gone). Once the peer answers ARP, later
/// calls on the endpoint send both, whole and in order.
#[test]
fn a_fresh_peer_gets_parked_datagrams_and_fragments_once_it_answers_arp() {
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let mut ep = open(&a, "port=7000&arp_timeout=10000").unwrap();
    let sock = kernel_socket(&b, 7300);
    sock.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    ip_in(&b.netns, &["link", "set", "dev", &b.iface, "arp", "off"]);
    // A frame for nobody (another port), in the endpoint's RX queue before the sends.
    let stray = {
        let mut f = vec![0u8; 128];
        let h = detpath_wire::UdpFrameHeader {
            src_mac: detpath_wire::MacAddr::parse(&b.mac).unwrap(),
            dst_mac: detpath_wire::MacAddr::parse(&a.mac).unwrap(),
            src: SocketAddrV4::new(b.addr, 7300),
            dst: SocketAddrV4::new(a.addr, 7999),
            ip_id: 1,
            ttl: 64,
            tos: 0,
        };
        let n = detpath_wire::build_udp_frame(&mut f, &h, b"stray").unwrap();
        f.truncate(n);
        f
    };
    b.run(|| detpath::sys::packet::PacketSocket::open(&b.iface).unwrap().send(&stray).unwrap()).unwrap();
    std::thread::sleep(Duration::from_millis(200));

    let to = SocketAddrV4::new(b.addr, 7300);
    let big: Vec<u8> = (0..3000u32).map(|i| (i * 13) as u8).collect();
    ep.send_to(b"first", to).unwrap();
    ep.send_to(&big, to).expect("a fragmented datagram to a peer still resolving is parked, not refused");
    let c = ep.counters();
    // The sends returned with the peer silent: parked, not sent, not
    // dropped (each send while resolving polls RX once, so the stray
    // frame may already be counted).
    assert_eq!((c.tx_packets, c.tx_no_neigh), (0, 0), "parked, not sent: {c:?}");
    let mut buf = vec![0u8; 4096];
    assert!(sock.recv_from(&mut buf).is_err(), "nothing leaves before the peer answers ARP");

    ip_in(&b.netns, &["link", "set", "dev", &b.iface, "arp", "on"]);
    let mut got = Vec::new();
    let t0 = Instant::now();
    while got.len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(8), "parked datagrams never left: got {got:?}, {:?}", ep.counters());
        // Receive calls drive the parked datagrams (ARP retried every 200 ms).
        let _ = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(20)) }).unwrap();
        sock.set_nonblocking(true).unwrap();
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            got.push(buf[..n].to_vec());
        }
    }
    assert_eq!(got, vec![b"first".to_vec(), big], "both datagrams, whole and in order");
    let c = ep.counters();
    assert_eq!((c.tx_packets, c.tx_no_neigh, c.rx_not_for_me), (2, 0, 1), "{c:?}");
}

#[test]
fn an_endpoint_that_only_sends_resolves_its_peer() {
    // A slot scheduler's sender never receives: its sends alone must learn
    // the peer's MAC (one RX burst per send while resolving) and let the
    // parked datagrams go, first one included, in order.
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let mut ep = open(&a, "port=7000").unwrap();
    let sock = kernel_socket(&b, 7301);
    sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let to = SocketAddrV4::new(b.addr, 7301);
    for i in 0..50u32 {
        ep.send_to(&i.to_be_bytes(), to).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while let Ok((n, _)) = sock.recv_from(&mut buf) {
        assert_eq!(n, 4);
        got.push(u32::from_be_bytes(buf[..4].try_into().unwrap()));
    }
    assert_eq!(got, (0..50).collect::<Vec<_>>(), "every datagram, in order, with no receive call: {:?}", ep.counters());
}

/// This thread's voluntary context switches so far (each sleep that ended is one).
fn voluntary_switches() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("voluntary_ctxt_switches:")).expect("a voluntary_ctxt_switches line");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A blocking receive on net_af_xdp sleeps in the kernel on the PMD's
/// AF_XDP socket, not in naps between polls: an empty 300 ms wait wakes
/// the thread a handful of times at most (20 µs naps would wake it
/// thousands of times) and ends empty. Each datagram that arrives while
/// the receive sleeps wakes it and is delivered by that call, the first
/// one included: its request went to a peer still resolving (parked), so
/// the sleeping receive also read the ARP reply, sent the parked datagram
/// and answered the peer's own ARP request.
#[test]
fn a_blocking_receive_sleeps_on_the_socket_and_wakes_for_each_datagram() {
    const ROUNDS: u32 = 20;
    let tb = testbed();
    let (a, b) = (tb.a().clone(), tb.b().clone());
    let mut ep = open(&a, "port=7000").unwrap();
    let notes = ep.capabilities().notes.clone();
    assert!(notes.iter().any(|n| n.contains("sleeps in poll(2) on net_af_xdp's socket")), "{notes:?}");
    let mut buf = [0u8; 64];

    let before = voluntary_switches();
    let got = ep.recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_millis(300)) }).unwrap();
    let woken = voluntary_switches() - before;
    assert!(got.is_none(), "nothing was sent: {got:?}");
    assert!(woken < 100, "an empty blocking wait of 300 ms woke the thread {woken} times: it naps instead of sleeping on the socket");

    let sock = kernel_socket(&b, 7302);
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        for _ in 0..ROUNDS {
            let (n, from) = sock.recv_from(&mut buf).expect("kernel echo: no datagram within 2 s");
            // Answer only once the endpoint's receive has gone to sleep.
            std::thread::sleep(Duration::from_millis(20));
            sock.send_to(&buf[..n], from).unwrap();
        }
    });
    let to = SocketAddrV4::new(b.addr, 7302);
    for i in 0..ROUNDS {
        ep.send_to(&i.to_be_bytes(), to).unwrap();
        let rx = ep
            .recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_secs(5)) })
            .unwrap()
            .unwrap_or_else(|| panic!("no echo of #{i} within 5 s: {:?}", ep.counters()));
        assert_eq!((rx.peer, &buf[..rx.len]), (to, &i.to_be_bytes()[..]), "#{i}");
    }
    echo.join().unwrap();
    let c = ep.counters();
    assert_eq!((c.tx_packets, c.rx_packets, c.tx_no_neigh), (ROUNDS as u64, ROUNDS as u64, 0), "{c:?}");
}

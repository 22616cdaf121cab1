//! The `afxdp` datapath over a real veth pair between two namespaces (the
//! library's testbed guard: `10.77.0.1` on `dpa` in `<ns>-a`, `10.77.0.2` on
//! `dpb` in `<ns>-b`, tx checksum offload off, MTU 1500, one queue).
//!
//! Needs root (namespaces, XDP, AF_XDP). Each test makes its own uniquely
//! named namespaces and removes them on drop, even when it fails.

mod common;

use common::{assert_malformed_frames_counted, assert_no_xdp, assert_other_traffic_reaches_the_kernel};
use detpath::datapath::afxdp::open_afxdp;
use detpath::sys::netdev::NetDev;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::{Endpoint, EndpointSpec, Error, RecvMode, RxBatch, TxDatagram, XdpMode};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PORT: u16 = 7100;
const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

fn spec(side: &Side, port: u16, extra: &str) -> EndpointSpec {
    format!("{}{extra}", side.uri("afxdp", port)).parse().unwrap()
}

fn open_in(side: &Side, port: u16, extra: &str) -> detpath::Result<detpath::datapath::afxdp::AfxdpEndpoint> {
    let s = spec(side, port, extra);
    side.run(|| open_afxdp(&s)).expect("enter namespace")
}

fn payload(i: usize, len: usize, buf: &mut [u8]) {
    for (k, b) in buf[..len].iter_mut().enumerate() {
        *b = (i.wrapping_mul(131) ^ k.wrapping_mul(7)) as u8;
    }
}

/// Runs an afxdp echo server in side b on a thread until `stop`; returns its counters.
fn echo_server(mut ep: impl Endpoint + 'static, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, detpath::Counters)> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 2048];
        let mut echoed = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if let Some(rx) = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(20)) }).unwrap() {
                ep.send_to(&buf[..rx.len], rx.peer).unwrap();
                echoed += 1;
            }
        }
        (echoed, ep.counters())
    })
}

/// afxdp server (in `mode`) echoing to a kernel UDP client: every size 1..=max, every byte.
fn echo_with_kernel_client(mode: &str, want: XdpMode) {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let ep = open_in(tb.b(), PORT, &format!("&mode={mode}")).unwrap_or_else(|e| panic!("open afxdp mode={mode}: {e}"));
    let caps = ep.capabilities().clone();
    assert_eq!(caps.xdp_mode, Some(want), "{caps:?}");
    assert_eq!(caps.zero_copy, Some(false));
    assert_eq!(caps.queue, Some(0));
    assert_eq!(caps.need_wakeup, Some(true));
    assert_eq!(caps.max_payload, 1472);
    eprintln!("afxdp {mode}: {} {:?}", caps.summary(), caps.notes);
    let server = ep.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let srv = echo_server(ep, stop.clone());

    let max = caps.max_payload;
    let client = tb.a().run(|| UdpSocket::bind((tb.a().addr, 0)).unwrap()).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let (mut out, mut back) = (vec![0u8; 2048], vec![0u8; 2048]);
    let mut rtts = Vec::with_capacity(max);
    for len in 1..=max {
        payload(len, len, &mut out);
        let t0 = std::time::Instant::now();
        client.send_to(&out[..len], server).unwrap();
        let (n, from) = client.recv_from(&mut back).unwrap_or_else(|e| panic!("mode={mode}: no echo of {len} B: {e}"));
        rtts.push(t0.elapsed());
        assert_eq!(from, std::net::SocketAddr::V4(server));
        assert_eq!(n, len, "echoed length");
        assert_eq!(&back[..n], &out[..len], "payload bytes of {len} B");
    }
    // One more than max does not fit the MTU for the server's send path; nothing else arrives.
    client.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    assert!(client.recv_from(&mut back).is_err(), "an extra datagram arrived");
    stop.store(true, Ordering::Relaxed);
    let (echoed, c) = srv.join().unwrap();
    rtts.sort();
    eprintln!("afxdp {mode} echo to kernel UDP: median RTT {:?}", rtts[rtts.len() / 2]);
    assert_eq!(echoed, max as u64);
    assert_eq!((c.rx_packets, c.tx_packets, c.rx_malformed), (max as u64, max as u64, 0), "{c:?}");
    assert_no_xdp(tb.b());
}

#[test]
fn echo_skb_mode_to_kernel_udp() {
    echo_with_kernel_client("skb", XdpMode::Skb);
}

#[test]
fn echo_native_mode_to_kernel_udp() {
    echo_with_kernel_client("native", XdpMode::Native);
}

#[test]
fn auto_mode_reports_what_it_picked() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let ep = open_in(tb.b(), PORT, "").unwrap();
    let caps = ep.capabilities();
    assert_eq!(caps.xdp_mode, Some(XdpMode::Native), "veth at MTU 1500 takes native XDP: {caps:?}");
    assert!(caps.notes.iter().any(|n| n.contains("auto picked native")), "{:?}", caps.notes);
    drop(ep);
    assert_no_xdp(tb.b());
}

/// afxdp on both ends, batched both ways, in different modes.
#[test]
fn batches_between_two_afxdp_endpoints() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let mut server = open_in(tb.b(), PORT, "&mode=native&batch=32").unwrap();
    let mut client = open_in(tb.a(), PORT + 1, "&mode=skb&batch=32").unwrap();
    assert_eq!(client.capabilities().max_batch, 32);
    let server_addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let srv = std::thread::spawn(move || {
        let mut batch = RxBatch::new(32, 2048);
        let mut echoed = 0u64;
        let mut bufs: Vec<Vec<u8>> = (0..32).map(|_| Vec::with_capacity(2048)).collect();
        while !stop2.load(Ordering::Relaxed) {
            let n = server.recv_batch(&mut batch, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(20)) }).unwrap();
            if n == 0 {
                continue;
            }
            let mut peer = None;
            for (i, (m, p)) in batch.iter().enumerate() {
                bufs[i].clear();
                bufs[i].extend_from_slice(p);
                peer = Some(m.peer);
            }
            let out: Vec<TxDatagram> = bufs[..n].iter().map(|b| TxDatagram { payload: b, peer: peer.unwrap() }).collect();
            assert_eq!(server.send_batch(&out).unwrap(), n);
            echoed += n as u64;
        }
        (echoed, server.counters())
    });

    const ROUNDS: usize = 40;
    const PER: usize = 25;
    let mut payloads: Vec<Vec<u8>> = Vec::new();
    let mut batch = RxBatch::new(32, 2048);
    let mut total = 0usize;
    for r in 0..ROUNDS {
        payloads.clear();
        for k in 0..PER {
            let len = 1 + (r * PER + k) * 37 % 1472;
            let mut p = vec![0u8; len];
            payload(r * PER + k, len, &mut p);
            payloads.push(p);
        }
        let out: Vec<TxDatagram> = payloads.iter().map(|p| TxDatagram { payload: p, peer: server_addr }).collect();
        assert_eq!(client.send_batch(&out).unwrap(), PER);
        let mut got = 0;
        while got < PER {
            let n = client.recv_batch(&mut batch, WAIT).unwrap();
            assert!(n > 0, "round {r}: only {got} of {PER} echoes");
            for (m, p) in batch.iter() {
                assert_eq!(m.peer, server_addr);
                assert_eq!(p, &payloads[got][..], "round {r} datagram {got}");
                got += 1;
            }
        }
        total += got;
    }
    stop.store(true, Ordering::Relaxed);
    let (echoed, sc) = srv.join().unwrap();
    let cc = client.counters();
    assert_eq!(total, ROUNDS * PER);
    assert_eq!(echoed, (ROUNDS * PER) as u64);
    assert_eq!((cc.tx_packets, cc.rx_packets, cc.rx_malformed), (total as u64, total as u64, 0), "{cc:?}");
    assert_eq!((sc.tx_packets, sc.rx_packets, sc.rx_malformed), (total as u64, total as u64, 0), "{sc:?}");
    drop(client);
    assert_no_xdp(tb.a());
    assert_no_xdp(tb.b());
}

/// While the endpoint is open, another UDP port and TCP still reach the kernel.
#[test]
fn other_traffic_still_reaches_the_kernel() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    for mode in ["skb", "native"] {
        let ep = open_in(tb.b(), PORT, &format!("&mode={mode}")).unwrap();
        assert_other_traffic_reaches_the_kernel(&tb, &ep, PORT, &format!("afxdp {mode}"));
        drop(ep);
        assert_no_xdp(tb.b());
    }
}

#[test]
fn second_endpoint_on_the_interface_is_busy_and_names_the_program() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let first = open_in(tb.b(), PORT, "&mode=skb").unwrap();
    let id = first.prog_id();
    let err = open_in(tb.b(), PORT + 1, "&mode=skb").err().expect("second endpoint must fail");
    match &err {
        Error::Sys(detpath::sys::Error::XdpBusy { iface, prog_id }) => assert_eq!((iface.as_str(), *prog_id), ("dpb", id)),
        e => panic!("expected XdpBusy, got {e}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&id.to_string()) && msg.contains("xdp off"), "{msg}");
    // The first endpoint's program is untouched.
    let attached = tb.b().run(|| detpath::sys::xdp::query(NetDev::lookup("dpb").unwrap().ifindex).unwrap()).unwrap();
    assert_eq!(attached.any(), Some(id));
    drop(first);
    assert_no_xdp(tb.b());
}

#[test]
fn zero_copy_on_veth_is_refused() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let err = open_in(tb.b(), PORT, "&zerocopy=true").err().expect("veth has no zero-copy");
    assert!(matches!(err, Error::ZeroCopyRefused { ref iface, queue: 0 } if iface == "dpb"), "{err}");
    assert!(err.to_string().contains("zerocopy=false"), "{err}");
    assert_no_xdp(tb.b());
}

#[test]
fn bad_interface_queue_and_spec() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let s: EndpointSpec = "afxdp://nosuch0?port=7000".parse().unwrap();
    let e = tb.b().run(|| open_afxdp(&s).err().unwrap()).unwrap();
    assert!(matches!(e, Error::Sys(detpath::sys::Error::NoSuchInterface { ref iface }) if iface == "nosuch0"), "{e}");
    let e = open_in(tb.b(), PORT, "&queue=3").err().unwrap();
    assert!(matches!(e, Error::NoSuchQueue { queue: 3, count: 1, .. }), "{e}");
    let e = open_in(tb.b(), PORT, "&frame=1000").err().unwrap();
    assert!(matches!(e, Error::BadSpec { .. }), "{e}");
    let e = open_in(tb.b(), PORT, "&addr=10.1.2.3").err().unwrap();
    assert!(matches!(e, Error::Sys(detpath::sys::Error::AddressNotOnInterface { .. })), "{e}");
    let e = open_in(tb.b(), 0, "").err().unwrap();
    assert!(e.to_string().contains("port=N"), "{e}");
    assert_no_xdp(tb.b());
}

#[test]
fn receive_modes_time_out_empty() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let mut ep = open_in(tb.b(), PORT, "&mode=skb").unwrap();
    let mut buf = [0u8; 64];
    assert!(ep.recv(&mut buf, RecvMode::NonBlocking).unwrap().is_none());
    for mode in [RecvMode::BusyPoll { timeout: Some(Duration::from_millis(30)) }, RecvMode::Blocking { timeout: Some(Duration::from_millis(30)) }] {
        let t0 = std::time::Instant::now();
        assert!(ep.recv(&mut buf, mode).unwrap().is_none());
        let took = t0.elapsed();
        // Not before the timeout (the property; 1 ms for the clocks'
        // granularity), and back at all: 1 s is 33 timeouts, far beyond a
        // loaded VM's scheduling delay (tens of ms at load 6), so only a
        // receive that ignored its timeout fails it.
        assert!(took >= Duration::from_millis(29) && took < Duration::from_secs(1), "{mode:?} took {took:?}");
    }
    // Blocking wakes up for a datagram, and a short buffer truncates it.
    let a = tb.a().addr;
    let dst = ep.local_addr();
    let sender = std::thread::spawn({
        let side = tb.a().clone();
        move || {
            side.run(|| {
                std::thread::sleep(Duration::from_millis(50));
                UdpSocket::bind((a, 0)).unwrap().send_to(&[9u8; 100], dst).unwrap();
            })
            .unwrap()
        }
    });
    let rx = ep.recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_secs(2)) }).unwrap().expect("woken by the datagram");
    assert_eq!((rx.len, rx.truncated), (64, true));
    assert!(buf.iter().all(|&b| b == 9));
    assert_eq!(ep.counters().rx_truncated, 1);
    sender.join().unwrap();
}

/// Raw frames to the endpoint's port that are malformed are counted and never delivered.
#[test]
fn malformed_frames_are_counted_and_dropped() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let mut ep = open_in(tb.b(), PORT, "&mode=skb").unwrap();
    assert_malformed_frames_counted(&tb, &mut ep);
    drop(ep);
    assert_no_xdp(tb.b());
}

fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Round-trip figures (printed, never asserted): afxdp client and server,
/// busy-polling, pinned to different cores. `--release --nocapture` to read them.
#[test]
fn round_trip_figures_afxdp_to_afxdp() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    for (mode, size) in [("native", 64usize), ("native", 1024), ("skb", 64)] {
        let server = open_in(tb.b(), PORT, &format!("&mode={mode}")).unwrap();
        let mut client = open_in(tb.a(), PORT + 1, &format!("&mode={mode}")).unwrap();
        let server_addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let srv = {
            let stop = stop.clone();
            let mut ep = server;
            std::thread::spawn(move || {
                pin_to(1 % cpus);
                let mut buf = vec![0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    if let Some(rx) = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(20)) }).unwrap() {
                        ep.send_to(&buf[..rx.len], rx.peer).unwrap();
                    }
                }
            })
        };
        pin_to(0);
        let out = vec![7u8; size];
        let mut back = vec![0u8; 2048];
        let n = 5000;
        let mut rtt = Vec::with_capacity(n);
        for i in 0..n + 500 {
            let t0 = detpath::monotonic_ns();
            client.send_to(&out, server_addr).unwrap();
            let rx = client.recv(&mut back, WAIT).unwrap().expect("echo");
            if i >= 500 {
                rtt.push(rx.rx_ns - t0);
            }
        }
        stop.store(true, Ordering::Relaxed);
        srv.join().unwrap();
        rtt.sort_unstable();
        eprintln!(
            "afxdp<->afxdp {mode:6} {size:4} B: median {:.1} us, p99 {:.1} us, max {:.1} us over {n} round trips",
            rtt[n / 2] as f64 / 1e3,
            rtt[n * 99 / 100] as f64 / 1e3,
            rtt[n - 1] as f64 / 1e3
        );
        drop(client);
    }
    assert_no_xdp(tb.a());
    assert_no_xdp(tb.b());
}

/// A program detpath did not attach (here: loaded by `ip link`, through
/// netlink) is never replaced: opening fails with XdpBusy naming it, and it
/// stays attached.
#[test]
fn foreign_xdp_program_is_never_replaced() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let b = tb.b();
    let obj = concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o");
    let st = std::process::Command::new("ip").args(["-n", &b.netns, "link", "set", "dev", &b.iface, "xdpgeneric", "obj", obj, "sec", "xdp"]).status().unwrap();
    assert!(st.success(), "ip link set xdpgeneric obj failed");
    let ifindex = b.run(|| NetDev::lookup(&b.iface).unwrap().ifindex).unwrap();
    let foreign = b.run(|| detpath::sys::xdp::query(ifindex).unwrap().any()).unwrap().expect("foreign program attached");
    for mode in ["skb", "native", "auto"] {
        let err = open_in(b, PORT, &format!("&mode={mode}")).err().expect("must not attach over a foreign program");
        assert!(matches!(err, Error::Sys(detpath::sys::Error::XdpBusy { prog_id, .. }) if prog_id == foreign), "{mode}: {err}");
    }
    assert_eq!(b.run(|| detpath::sys::xdp::query(ifindex).unwrap().any()).unwrap(), Some(foreign), "the foreign program was touched");
    let st = std::process::Command::new("ip").args(["-n", &b.netns, "link", "set", "dev", &b.iface, "xdpgeneric", "off"]).status().unwrap();
    assert!(st.success());
    assert_no_xdp(b);
}

const CHILD_NETNS: &str = "DETPATH_AFXDP_TEST_CHILD_NETNS";

/// Not a test on its own: the body of the child process of
/// `killed_process_leaves_no_xdp_program`, which holds an endpoint until killed.
#[test]
#[ignore]
fn child_holds_an_endpoint_until_killed() {
    let Ok(ns) = std::env::var(CHILD_NETNS) else { return };
    let s: EndpointSpec = format!("afxdp://dpb?port={PORT}&mode=native").parse().unwrap();
    let _ep = detpath::sys::netns::run_in(&ns, || open_afxdp(&s)).unwrap().unwrap();
    println!("OPEN");
    std::thread::sleep(Duration::from_secs(30));
}

/// The attachment is a BPF link: even SIGKILL (no handler, no Drop) leaves
/// no XDP program behind.
#[test]
fn killed_process_leaves_no_xdp_program() {
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    let b = tb.b();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_holds_an_endpoint_until_killed", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_NETNS, &b.netns)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ifindex = b.run(|| NetDev::lookup(&b.iface).unwrap().ifindex).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while b.run(|| detpath::sys::xdp::query(ifindex).unwrap().any()).unwrap().is_none() {
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the child never attached its program");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while b.run(|| detpath::sys::xdp::query(ifindex).unwrap().any()).unwrap().is_some() {
        assert!(std::time::Instant::now() < deadline, "XDP program left behind by a killed process");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_no_xdp(b);
}

/// Not a test on its own: the child of `missing_capabilities_are_named`,
/// run with a reduced capability set; prints the error it gets.
#[test]
#[ignore]
fn child_opens_with_reduced_capabilities() {
    // Started by `ip netns exec`: already in the namespace.
    if std::env::var(CHILD_NETNS).is_err() {
        return;
    }
    let s: EndpointSpec = format!("afxdp://dpb?port={PORT}&mode=skb").parse().unwrap();
    match open_afxdp(&s) {
        Ok(_) => println!("RESULT: opened"),
        Err(e) => println!("RESULT: {e}"),
    }
}

/// The privilege errors for real: the test binary re-run inside the
/// namespace (`ip netns exec`) by `setpriv` with only some capabilities.
#[test]
fn missing_capabilities_are_named() {
    let setpriv = std::process::Command::new("setpriv").arg("--version").output().is_ok();
    if !detpath_testkit::need("missing_capabilities_are_named", "setpriv", setpriv, "apt-get install util-linux; `make deps` installs it") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    for (keep, want) in [
        ("", "CAP_NET_RAW"),
        // Without CAP_IPC_LOCK the 16 MiB UMEM counts against RLIMIT_MEMLOCK (set to 8 MiB).
        (",+net_raw", "locked-memory limit"),
        (",+net_raw,+ipc_lock", "CAP_BPF"),
        (",+net_raw,+ipc_lock,+bpf", "CAP_NET_ADMIN"),
    ] {
        let caps = format!("-all{keep}");
        let out = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &tb.b().netns,
                "prlimit",
                "--memlock=8388608",
                "setpriv",
                "--inh-caps",
                &caps,
                "--ambient-caps",
                "-all",
                "--bounding-set",
                &caps,
                "--",
            ])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", "child_opens_with_reduced_capabilities", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CHILD_NETNS, &tb.b().netns)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.contains("RESULT:")).unwrap_or_else(|| panic!("child printed no result: {text}"));
        assert!(line.contains(want), "with caps {keep}: expected a {want} error, got `{line}`");
        assert_no_xdp(tb.b());
    }
}

/// Native XDP on a jumbo-MTU veth: an explicit request fails naming the MTU
/// and its limit; `auto` falls back to skb and says why.
#[test]
fn jumbo_mtu_refuses_native_and_auto_says_so() {
    use detpath::datapath::filter::{FilterConfig, FilterProgram};
    use detpath::sys::xdp::NATIVE_MAX_MTU;
    static OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o"));
    let tb = Testbed::up(TestbedConfig::unique("afx")).unwrap();
    for s in [tb.a(), tb.b()] {
        assert!(std::process::Command::new("ip").args(["-n", &s.netns, "link", "set", "dev", &s.iface, "mtu", "9000"]).status().unwrap().success());
    }
    let e = open_in(tb.b(), PORT, "&mode=native").err().unwrap();
    assert!(matches!(e, Error::Sys(detpath::sys::Error::MtuTooLarge { mtu: 9000, max, .. }) if max == NATIVE_MAX_MTU), "{e}");
    assert!(e.to_string().contains("mtu"), "{e}");
    let filter = FilterConfig::udp(tb.b().addr, PORT);
    tb.b()
        .run(|| {
            let dev = NetDev::lookup(&tb.b().iface).unwrap();
            let e = FilterProgram::attach(OBJ, "xsk_redirect", &dev, Some(XdpMode::Native), filter).unwrap_err();
            assert!(matches!(e, Error::Sys(detpath::sys::Error::MtuTooLarge { .. })), "{e}");
            let p = FilterProgram::attach(OBJ, "xsk_redirect", &dev, None, filter).unwrap();
            assert_eq!(p.mode(), XdpMode::Skb);
            assert!(p.notes().iter().any(|n| n.contains("native refused")), "{:?}", p.notes());
            assert_eq!(p.stats(), Default::default());
            assert!(p.map_handle("xsks_map").is_ok());
            assert!(p.map_handle("no_such_map").is_err());
        })
        .unwrap();
    assert_no_xdp(tb.b());
}

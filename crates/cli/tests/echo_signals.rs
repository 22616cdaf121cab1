//! SIGTERM and SIGINT to a process holding an XDP endpoint (`detpath echo`)
//! detach its program: the process exits cleanly and the interface has no
//! XDP program afterwards. One test per (datapath, signal).
//!
//! Needs root (namespaces, XDP).

use detpath::testbed::{Testbed, TestbedConfig};
use std::net::{SocketAddrV4, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

fn signal_detaches(datapath: &str, signal: &str) {
    let tb = Testbed::up(TestbedConfig::unique("sig")).expect("testbed up");
    let port = 9200;
    let spec = tb.b().uri(datapath, port);
    let mut child =
        Command::new(BIN).args(["echo", &spec, "--netns", &tb.b().netns]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start detpath echo");
    // Wait until it answers (the program is attached and the endpoint polls).
    let a = tb.a().addr;
    let server = SocketAddrV4::new(tb.b().addr, port);
    let answered = tb
        .a()
        .run(|| {
            let s = UdpSocket::bind((a, 0)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            let mut buf = [0u8; 64];
            (0..50).any(|_| {
                s.send_to(b"hello", server).unwrap();
                matches!(s.recv_from(&mut buf), Ok((5, _)))
            })
        })
        .unwrap();
    if !answered {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!("{datapath}: detpath echo never answered: {}", String::from_utf8_lossy(&out.stderr));
    }
    let ifindex = tb.b().run(|| detpath::sys::netdev::ifindex(&tb.b().iface)).unwrap().unwrap();
    let attached = || tb.b().run(|| detpath::sys::xdp::query(ifindex)).unwrap().unwrap().any();
    assert!(attached().is_some(), "{datapath}: no XDP program while the endpoint is open");

    let rc = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
    assert!(rc.success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("{datapath}: still running 10 s after SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    assert!(status.success(), "{datapath} SIG{signal}: exit {status}: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("echoed "), "{stdout}");
    assert_eq!(attached(), None, "{datapath}: XDP program left after SIG{signal}");
}

#[test]
fn sigterm_detaches_xdppoll() {
    signal_detaches("xdppoll", "TERM");
}

#[test]
fn sigint_detaches_xdppoll() {
    signal_detaches("xdppoll", "INT");
}

#[test]
fn sigterm_detaches_afxdp() {
    signal_detaches("afxdp", "TERM");
}

#[test]
fn sigint_detaches_afxdp() {
    signal_detaches("afxdp", "INT");
}

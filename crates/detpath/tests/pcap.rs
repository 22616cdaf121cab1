//! The `pcap` layer over the testbed: `pcap=FILE` on a udp and an afxdp
//! datagram endpoint and on an afxdp frame endpoint writes every datagram
//! or frame sent and received, and an independent reader (scapy, from
//! deps/pip-core.txt) finds them all, with their addresses, payloads and
//! wall-clock time stamps.
//!
//! Needs root (namespaces) and python3 with scapy.

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::{MacAddr, RecvMode};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const WAIT: RecvMode = RecvMode::Blocking { timeout: Some(Duration::from_secs(5)) };
const ETHERTYPE: u16 = 0x88b5;

/// One record as scapy read it: (src, dst, sport or EtherType, dport, payload hex, time in s).
#[derive(Debug)]
struct Rec {
    src: String,
    dst: String,
    sport: u32,
    dport: u32,
    payload: String,
    time: f64,
}

/// Reads `file` with scapy: IPv4/UDP records as addresses and ports, other
/// Ethernet frames as MACs and the EtherType.
fn read_with_scapy(file: &Path) -> Vec<Rec> {
    let script = r#"
import sys
from scapy.all import rdpcap, Ether, IP, UDP
for p in rdpcap(sys.argv[1]):
    assert isinstance(p, Ether), repr(p)
    if UDP in p:
        print(p[IP].src, p[IP].dst, p[UDP].sport, p[UDP].dport, bytes(p[UDP].payload).hex() or "-", float(p.time))
    else:
        print(p.src, p.dst, p.type, 0, bytes(p.payload).hex() or "-", float(p.time))
"#;
    let out = Command::new("python3").args(["-c", script]).arg(file).output().expect("python3 runs");
    assert!(out.status.success(), "scapy could not read {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            Rec {
                src: f[0].into(),
                dst: f[1].into(),
                sport: f[2].parse().unwrap(),
                dport: f[3].parse().unwrap(),
                payload: f[4].into(),
                time: f[5].parse().unwrap(),
            }
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn now_s() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// A client on side a (plain udp) sends five datagrams to a `dp` endpoint
/// with `pcap=` on side b, which echoes each; the file holds ten records.
fn datagrams_are_captured(tb: &Testbed, dp: &str, port: u16, dir: &Path) {
    let file = dir.join(format!("{dp}.pcap"));
    let spec = format!("{}&pcap={}", tb.b().uri(dp, port), file.display());
    let (b, a): (&Side, &Side) = (tb.b(), tb.a());
    let mut server = b.run(|| detpath_open::open(&spec)).unwrap().unwrap_or_else(|e| panic!("{spec}: {e}"));
    assert!(server.capabilities().notes.iter().any(|n| n.starts_with("pcap:")), "{:?}", server.capabilities().notes);
    let client_spec = a.uri("udp", port + 1);
    let mut client = a.run(|| detpath_open::open(&client_spec)).unwrap().unwrap();
    let (to, from) = (server.local_addr(), client.local_addr());
    let started = now_s();
    let payloads: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 10 + 40 * i as usize]).collect();
    let mut buf = [0u8; 2048];
    for p in &payloads {
        client.send_to(p, to).unwrap();
        let m = server.recv(&mut buf, WAIT).unwrap().expect("the server receives");
        assert_eq!(&buf[..m.len], &p[..]);
        server.send_to(&buf[..m.len], m.peer).unwrap();
        let back = client.recv(&mut buf, WAIT).unwrap().expect("the echo comes back");
        assert_eq!(back.len, p.len());
    }
    drop(server); // flushes the capture
    let recs = read_with_scapy(&file);
    assert_eq!(recs.len(), 10, "{dp}: {recs:?}");
    for (i, p) in payloads.iter().enumerate() {
        let (rx, tx) = (&recs[2 * i], &recs[2 * i + 1]);
        assert_eq!((rx.src.as_str(), rx.dst.as_str()), (from.ip().to_string().as_str(), to.ip().to_string().as_str()), "{dp}: {rx:?}");
        assert_eq!((rx.sport, rx.dport), (from.port() as u32, to.port() as u32), "{dp}: {rx:?}");
        assert_eq!((tx.src.as_str(), tx.sport, tx.dport), (to.ip().to_string().as_str(), to.port() as u32, from.port() as u32), "{dp}: {tx:?}");
        assert_eq!((&rx.payload, &tx.payload), (&hex(p), &hex(p)), "{dp}: record {i}");
        // Wall-clock stamps of this run, in order: each reply after its receive.
        assert!(rx.time >= started - 1.0 && rx.time <= now_s() + 1.0, "{dp}: {rx:?} (started {started})");
        assert!(tx.time >= rx.time, "{dp}: {tx:?} before {rx:?}");
    }
}

#[test]
fn udp_and_afxdp_datagrams_and_afxdp_frames_are_captured() {
    let tb = Testbed::up(TestbedConfig::unique("pcap")).expect("testbed up (needs root)");
    let dir = tempfile::tempdir().unwrap();
    datagrams_are_captured(&tb, "udp", 8300, dir.path());
    datagrams_are_captured(&tb, "afxdp", 8310, dir.path());

    // Frames: afxdp frames with pcap= on b, packet frames from a.
    let file = dir.path().join("frames.pcap");
    let spec = format!("afxdp://{}?port={ETHERTYPE}&pcap={}", tb.b().iface, file.display());
    let mut rx = tb.b().run(|| detpath_open::open_frames(&spec)).unwrap().unwrap_or_else(|e| panic!("{spec}: {e}"));
    let tx_spec = format!("packet://{}?port={ETHERTYPE}", tb.a().iface);
    let mut tx = tb.a().run(|| detpath_open::open_frames(&tx_spec)).unwrap().unwrap();
    let (a_mac, b_mac) = (MacAddr::parse(&tb.a().mac).unwrap(), MacAddr::parse(&tb.b().mac).unwrap());
    let mut buf = [0u8; 2048];
    let payloads: Vec<Vec<u8>> = (0..3u8).map(|i| vec![0xa0 + i; 60 + i as usize]).collect();
    for p in &payloads {
        tx.send_frame(p, b_mac, ETHERTYPE).unwrap();
        let m = rx.recv_frame(&mut buf, WAIT).unwrap().expect("the frame arrives");
        assert_eq!(&buf[..m.len], &p[..]);
        rx.send_frame(&buf[..m.len], m.src, ETHERTYPE).unwrap();
    }
    drop(rx);
    let recs = read_with_scapy(&file);
    assert_eq!(recs.len(), 6, "{recs:?}");
    let mac = |m: MacAddr| m.0.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    for (i, p) in payloads.iter().enumerate() {
        let (got, sent) = (&recs[2 * i], &recs[2 * i + 1]);
        assert_eq!((got.src.clone(), got.dst.clone(), got.sport), (mac(a_mac), mac(b_mac), ETHERTYPE as u32), "{got:?}");
        assert_eq!((sent.src.clone(), sent.dst.clone(), sent.sport), (mac(b_mac), mac(a_mac), ETHERTYPE as u32), "{sent:?}");
        assert_eq!((&got.payload, &sent.payload), (&hex(p), &hex(p)));
    }
}

#[test]
fn a_capture_file_that_cannot_be_made_is_refused_before_the_endpoint_opens() {
    let e = detpath_open::open("udp://127.0.0.1:0?pcap=/nonexistent-dir/x.pcap").err().unwrap().to_string();
    assert!(e.contains("capture file /nonexistent-dir/x.pcap"), "{e}");
    let e = detpath_open::open("udp://127.0.0.1:0?pcap=").err().unwrap().to_string();
    assert!(e.contains("`pcap` takes a file name"), "{e}");
}

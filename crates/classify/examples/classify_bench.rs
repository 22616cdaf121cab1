//! Packets per second through the classifier against a no-op XDP program on
//! the same interface, in the same run. Needs root.
//!
//!     cargo run --release -p detpath-classify --example classify_bench -- [SECONDS]
//!
//! Two namespaces joined by a veth pair. The generator is BPF_PROG_RUN in
//! live-frames mode on the G side (a program returning XDP_TX, so every run
//! transmits the frame out of gE); the frame is the paper's nesting
//! (Ethernet / IPv4 / UDP / VXLAN / Ethernet / IPv4 / UDP / GTP-U + PDU
//! session container / IPv4 / UDP / 64 B). On eE, first the classifier (16
//! rules over 2 masks, the frame's rule drops it), then a no-op program that
//! counts and drops. The receiving veth runs its NAPI threaded, so the XDP
//! program has its own core. Also the per-frame cost of both programs under
//! BPF_PROG_TEST_RUN (no I/O).
use detpath_classify::frames::{build, Layer};
use detpath_classify::{parse_intent, Classifier, XdpMode};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sh(args: &[&str]) -> bool {
    Command::new(args[0]).args(&args[1..]).status().map(|s| s.success()).unwrap_or(false)
}

struct Ns(Vec<String>);
impl Drop for Ns {
    fn drop(&mut self) {
        for n in &self.0 {
            sh(&["ip", "netns", "del", n]);
        }
    }
}

fn frame(teid: u32) -> Vec<u8> {
    build(
        &[
            Layer::eth([0x02, 0x64, 0x63, 0, 2, 0x0e], [0x02, 0x64, 0x63, 0, 2, 1]),
            Layer::Ip { src: "10.97.0.1".parse().unwrap(), dst: "10.97.0.2".parse().unwrap() },
            Layer::Udp { sport: 40000, dport: 4789 },
            Layer::Vxlan { vni: 100 },
            Layer::eth([2, 0, 0, 0, 0, 0xe1], [2, 0, 0, 0, 0, 0x51]),
            Layer::Ip { src: "10.200.0.2".parse().unwrap(), dst: "10.200.0.1".parse().unwrap() },
            Layer::Udp { sport: 2152, dport: 2152 },
            Layer::Gtpu { teid, exts: vec![Layer::pdu_session(1)], msg_type: 0xff },
            Layer::Ip { src: "172.16.0.1".parse().unwrap(), dst: "172.17.0.1".parse().unwrap() },
            Layer::Udp { sport: 30000, dport: 5000 },
        ],
        &[0u8; 64],
    )
}

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Runs the generator for `secs` and returns (frames offered, frames counted by `counted`).
fn run(gen: &Classifier, g: &str, ge: &str, f: &[u8], secs: f64, counted: &dyn Fn() -> u64) -> (u64, u64, f64) {
    let before = counted();
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut offered = 0u64;
    let _guard = detpath_sys::netns::enter(g).expect("namespace");
    let ifindex = detpath_sys::netdev::ifindex(ge).unwrap();
    while t0.elapsed().as_secs_f64() < secs && !stop.load(Ordering::Relaxed) {
        let batch = 100_000;
        gen.live_frames("cls_gen", f, ifindex, batch).expect("live frames");
        offered += batch as u64;
    }
    let el = t0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(100));
    (offered, counted() - before, el)
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let tag = std::process::id() % 100000;
    let (g, e) = (format!("detpath-cls-{}-bench-g", std::process::id()), format!("detpath-cls-{}-bench-e", std::process::id()));
    let (ge, ee) = (format!("dc{tag}bg"), format!("dc{tag}be"));
    let _ns = Ns(vec![g.clone(), e.clone()]);
    for n in [&g, &e] {
        assert!(sh(&["ip", "netns", "add", n]), "ip netns add");
    }
    assert!(sh(&["ip", "-n", &g, "link", "add", &ge, "type", "veth", "peer", "name", &ee, "netns", &e]));
    assert!(sh(&["ip", "-n", &g, "link", "set", &ge, "address", "02:64:63:00:02:01", "up"]));
    assert!(sh(&["ip", "-n", &e, "link", "set", &ee, "address", "02:64:63:00:02:0e", "up"]));
    // veth has NAPI only while an XDP program is attached: set threaded after each attach.
    let set_threaded = || sh(&["ip", "netns", "exec", &e, "sh", "-c", &format!("echo 1 > /sys/class/net/{ee}/threaded 2>/dev/null")]);

    let f = frame(0x1005);
    let gen = Classifier::load(1).expect("load (root needed)");
    // The classifier with 16 services: 8 prioritised by TEID, the bench flow's rule drops.
    let mut cls = Classifier::load(64).expect("load");
    for s in 0..16u32 {
        let action = if s == 5 { r#""actionName": "DROP""# } else { r#""actionName": "PASS""# };
        let res = if s < 8 {
            format!(r#"{{"encapsulationID1": "{:08X}", "encapsulationType1": "gtp"}}"#, 0x1000 + s)
        } else {
            format!(r#"{{"encapsulationID1": "64", "encapsulationType1": "vxlan"}}, {{"dstPort": {}}}"#, 6000 + s)
        };
        let r = parse_intent(format!(r#"{{"Resources": [{res}], "Action": {{"actionType": "INSERT", {action}}}}}"#).as_bytes()).unwrap();
        cls.install(&r, None).unwrap();
    }

    // Per-frame cost without I/O.
    pin(0);
    let (v, _, ns_cls) = cls.test_run_prog("cls_main", &f, 2_000_000).unwrap();
    assert_eq!(v, 1, "the frame's rule drops it");
    let (_, _, ns_noop) = cls.test_run_prog("cls_noop", &f, 2_000_000).unwrap();

    // Through the interface.
    let counted_drop = || cls.total("drop").packets;
    let link = {
        let _g = detpath_sys::netns::enter(&e).unwrap();
        cls.attach_helper("cls_main", &ee, XdpMode::Native).expect("attach classifier")
    };
    let threaded = set_threaded();
    let (off_c, got_c, el_c) = run(&gen, &g, &ge, &f, secs, &counted_drop);
    drop(link);
    let link = {
        let _g = detpath_sys::netns::enter(&e).unwrap();
        cls.attach_helper("cls_noop", &ee, XdpMode::Native).expect("attach no-op")
    };
    let threaded = threaded && set_threaded();
    let counted_noop = || cls.noop_count();
    let (off_n, got_n, el_n) = run(&gen, &g, &ge, &f, secs, &counted_noop);
    drop(link);

    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .unwrap_or("")
        .split(':')
        .nth(1)
        .unwrap_or("")
        .trim()
        .to_string();
    println!(
        "detpath classify bench: kernel {} cpu {} ({} online), veth native XDP, NAPI threaded: {threaded}",
        kernel.trim(),
        cpu,
        detpath_tune::Host::real().online_cpus().iter().collect::<Vec<_>>().len()
    );
    println!(
        "frame: {} B, VXLAN+GTP-U(+PDU session)+IPv4/UDP; classifier: 16 rules, 2 masks; generator: BPF_PROG_RUN live frames, XDP_TX out of the peer veth",
        f.len()
    );
    println!();
    println!("{:<34} {:>12} {:>12} {:>12}", "program on the receiving veth", "offered Mpps", "seen Mpps", "loss %");
    for (name, off, got, el) in [("classifier (cls_main)", off_c, got_c, el_c), ("no-op (cls_noop)", off_n, got_n, el_n)] {
        println!("{:<34} {:>12.3} {:>12.3} {:>12.2}", name, off as f64 / el / 1e6, got as f64 / el / 1e6, 100.0 * (1.0 - got as f64 / off.max(1) as f64));
    }
    let rc = got_c as f64 / el_c;
    let rn = got_n as f64 / el_n;
    println!("ratio classifier / no-op through the interface: {:.3}", rc / rn.max(1.0));
    println!();
    println!(
        "BPF_PROG_TEST_RUN, one core, no I/O: classifier {} ns/frame ({:.2} Mpps), no-op {} ns/frame ({:.2} Mpps), classification costs {} ns",
        ns_cls,
        1e3 / ns_cls.max(1) as f64,
        ns_noop,
        1e3 / ns_noop.max(1) as f64,
        ns_cls.saturating_sub(ns_noop)
    );
}

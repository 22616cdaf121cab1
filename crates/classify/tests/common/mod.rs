//! Namespaces, links and a daemon for the integration tests. Every name
//! contains `detpath-cls-<pid>`; everything is removed on drop, even when
//! the test fails.
// Each test binary compiles this module and uses only part of it (spread.rs
// uses no daemon, metrics.rs no temporary directory): the rest is dead code there.
#![allow(dead_code)]

use detpath_classify::client::Target;
use detpath_classify::server::{serve, Endpoints, ServeConfig};
use detpath_sys::netns::enter as enter_netns;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

pub fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().expect("running a command");
    assert!(out.status.success(), "{:?} failed: {}", args, String::from_utf8_lossy(&out.stderr));
}

pub fn sh_out(args: &[&str]) -> String {
    let out = Command::new(args[0]).args(&args[1..]).output().expect("running a command");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Named namespaces removed on drop.
pub struct Namespaces {
    pub prefix: String,
    pub tag: String,
    names: Vec<String>,
}

static N: AtomicU32 = AtomicU32::new(0);

impl Namespaces {
    pub fn new() -> Namespaces {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        Namespaces { prefix: format!("detpath-cls-{pid}-{n}"), tag: format!("{}{n}", pid % 100000), names: Vec::new() }
    }

    /// Creates namespace `<prefix>-<suffix>` with lo up and IPv6 off (no stray traffic).
    pub fn add(&mut self, suffix: &str) -> String {
        let name = format!("{}-{suffix}", self.prefix);
        sh(&["ip", "netns", "add", &name]);
        self.names.push(name.clone());
        sh(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        for k in
            ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
        {
            sh(&["ip", "netns", "exec", &name, "sysctl", "-q", "-w", k]);
        }
        name
    }

    /// An interface name (<= 15 characters) unique to this test.
    pub fn ifname(&self, s: &str) -> String {
        format!("dc{}{s}", self.tag)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in self.names.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Drops the namespaces and checks none of them is left.
pub fn remove_and_check(ns: Namespaces) {
    let prefix = format!("{}-", ns.prefix);
    drop(ns);
    let list = sh_out(&["ip", "netns", "list"]);
    assert!(!list.contains(&prefix), "namespaces left: {list}");
}

/// A veth pair `a` (in ns_a) <-> `b` (in ns_b), both up, with fixed MACs and MTU 1500.
pub fn veth(ns_a: &str, a: &str, mac_a: &str, ns_b: &str, b: &str, mac_b: &str) {
    sh(&["ip", "-n", ns_a, "link", "add", a, "type", "veth", "peer", "name", b, "netns", ns_b]);
    sh(&["ip", "-n", ns_a, "link", "set", a, "address", mac_a, "mtu", "1500", "up"]);
    sh(&["ip", "-n", ns_b, "link", "set", b, "address", mac_b, "mtu", "1500", "up"]);
}

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(ns: &Namespaces, what: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("{}-{what}", ns.prefix));
        std::fs::create_dir_all(&d).expect("temp dir");
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The daemon on a thread: API in this namespace, classifier in `netns`.
pub struct Daemon {
    /// Where the API is served.
    pub at: Endpoints,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<detpath_classify::Result<()>>>,
}

impl Daemon {
    pub fn start(cfg: ServeConfig) -> detpath_classify::Result<Daemon> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let s = stop.clone();
        let thread = std::thread::spawn(move || serve(cfg, s, Some(tx)));
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(at) => Ok(Daemon { at, stop, thread: Some(thread) }),
            Err(_) => Err(thread.join().expect("daemon thread").expect_err("the daemon stopped without an error")),
        }
    }

    /// A request over the Unix socket (or TCP when there is none), no token.
    pub fn req(&self, method: &str, path: &str, body: Option<&str>) -> (u16, serde_json::Value) {
        detpath_classify::client::request(&self.at.target(), None, method, path, body.map(|b| b.as_bytes())).expect("talking to the daemon")
    }

    /// The TCP address (the daemon was started with `listen`).
    pub fn tcp(&self) -> Target {
        Target::Tcp(self.at.tcp.expect("the daemon listens on TCP"))
    }

    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("daemon thread").expect("daemon returned an error");
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `f` with the calling thread inside `ns`.
pub fn in_ns<T>(ns: &str, f: impl FnOnce() -> T) -> T {
    let _g = enter_netns(ns).expect("entering namespace");
    f()
}

/// Whether an interface has an XDP program (`ip link` shows `xdp`).
pub fn has_xdp(ns: &str, iface: &str) -> bool {
    let s = sh_out(&["ip", "-n", ns, "-d", "link", "show", "dev", iface]);
    s.contains("prog/xdp") || s.contains(" xdp")
}

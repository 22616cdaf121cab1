//! The built-in testbed: two network namespaces joined by a veth pair.
//!
//! ```text
//!   namespace detpath-a               namespace detpath-b
//!   dpa  10.77.0.1/24  <--- veth --->  dpb  10.77.0.2/24
//!   02:64:70:00:00:0a                  02:64:70:00:00:0b
//! ```
//!
//! Both ends have tx checksum offload off, so frames the kernel sends carry a
//! complete UDP checksum (over veth the kernel otherwise leaves a partial one,
//! which a frame-parsing receiver would reject), and IPv6 off, so the link
//! carries no traffic but what a test sends. MTU 1500, one queue.
//!
//! [`Testbed::up`] is idempotent and safe after a crash: a complete testbed
//! of the same names is adopted, leftovers are removed and rebuilt. A
//! [`Testbed`] removes its namespaces on drop (and on SIGINT/SIGTERM) unless
//! [`Testbed::keep`] was called, as `detpath testbed up` does.

use crate::error::{Error, Result};
use detpath_sys::cleanup::{self, CleanupHandle};
use detpath_sys::netns;
use detpath_sys::NetDev;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// One side of the testbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    pub netns: String,
    pub iface: String,
    pub addr: Ipv4Addr,
    pub mac: String,
}

impl Side {
    /// The endpoint spec string for `datapath` on this side at `port`,
    /// e.g. `afxdp://dpa?addr=10.77.0.1&port=7000`.
    pub fn uri(&self, datapath: &str, port: u16) -> String {
        format!("{datapath}://{}?addr={}&port={port}", self.iface, self.addr)
    }

    /// Runs `f` on the calling thread inside this side's namespace.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        Ok(netns::run_in(&self.netns, f)?)
    }

    /// Runs `f` on a new thread inside this side's namespace.
    pub fn spawn<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<Result<T>> {
        let ns = self.netns.clone();
        std::thread::spawn(move || Ok(netns::run_in(&ns, f)?))
    }
}

/// Names and addresses of a testbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestbedConfig {
    pub a: Side,
    pub b: Side,
    pub prefix_len: u8,
    pub mtu: u32,
}

impl TestbedConfig {
    /// The documented testbed of `detpath testbed up`.
    pub fn builtin() -> TestbedConfig {
        Self::named("detpath-a", "detpath-b")
    }

    /// The testbed whose namespaces are `<prefix>-a` and `<prefix>-b`
    /// (`detpath` gives the built-in one).
    pub fn with_prefix(prefix: &str) -> TestbedConfig {
        Self::named(&format!("{prefix}-a"), &format!("{prefix}-b"))
    }

    /// A testbed with names no other process uses (for tests running in parallel).
    pub fn unique(tag: &str) -> TestbedConfig {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let base = format!("detpath-{tag}-{}-{n}", std::process::id());
        Self::named(&format!("{base}-a"), &format!("{base}-b"))
    }

    fn named(a: &str, b: &str) -> TestbedConfig {
        TestbedConfig {
            a: Side { netns: a.into(), iface: "dpa".into(), addr: Ipv4Addr::new(10, 77, 0, 1), mac: "02:64:70:00:00:0a".into() },
            b: Side { netns: b.into(), iface: "dpb".into(), addr: Ipv4Addr::new(10, 77, 0, 2), mac: "02:64:70:00:00:0b".into() },
            prefix_len: 24,
            mtu: 1500,
        }
    }
}

/// What `status` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub a: Option<NetDev>,
    pub b: Option<NetDev>,
}

impl Status {
    /// Both sides exist, are up and carry their addresses.
    pub fn complete(&self, cfg: &TestbedConfig) -> bool {
        let ok = |d: &Option<NetDev>, s: &Side| d.as_ref().is_some_and(|d| d.up && d.ipv4.iter().any(|(a, _)| *a == s.addr));
        ok(&self.a, &cfg.a) && ok(&self.b, &cfg.b)
    }
}

/// A live testbed; removes itself on drop unless kept.
pub struct Testbed {
    cfg: TestbedConfig,
    keep: bool,
    _cleanup: Option<CleanupHandle>,
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| Error::io("running `ip` (install iproute2)", e))?;
    if out.status.success() {
        Ok(())
    } else {
        let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if msg.contains("Operation not permitted") {
            return Err(detpath_sys::Error::MissingCapability { cap: "CAP_SYS_ADMIN and CAP_NET_ADMIN", what: format!("`ip {}`", args.join(" ")) }.into());
        }
        Err(detpath_sys::Error::Netns { ns: args.join(" "), why: msg }.into())
    }
}

fn in_ns(ns: &str, cmd: &[&str]) -> Result<()> {
    let mut args = vec!["netns", "exec", ns];
    args.extend_from_slice(cmd);
    ip(&args)
}

fn delete_ns(name: &str) {
    if netns::exists(name) {
        let _ = ip(&["netns", "del", name]);
    }
}

fn side_status(s: &Side) -> Option<NetDev> {
    if !netns::exists(&s.netns) {
        return None;
    }
    netns::run_in(&s.netns, || NetDev::lookup(&s.iface).ok()).ok().flatten()
}

impl Testbed {
    /// Brings the testbed up (or adopts a complete one of the same names).
    pub fn up(cfg: TestbedConfig) -> Result<Testbed> {
        if !Self::status(&cfg).complete(&cfg) {
            Self::down(&cfg);
            if let Err(e) = Self::create(&cfg) {
                Self::down(&cfg);
                return Err(e);
            }
        }
        let (a, b) = (cfg.a.netns.clone(), cfg.b.netns.clone());
        let handle = cleanup::register(
            format!("testbed namespaces {a} and {b}"),
            Box::new(move || {
                delete_ns(&a);
                delete_ns(&b);
            }),
        );
        Ok(Testbed { cfg, keep: false, _cleanup: Some(handle) })
    }

    fn create(cfg: &TestbedConfig) -> Result<()> {
        let (a, b) = (&cfg.a, &cfg.b);
        ip(&["netns", "add", &a.netns])?;
        ip(&["netns", "add", &b.netns])?;
        ip(&["link", "add", &a.iface, "netns", &a.netns, "type", "veth", "peer", "name", &b.iface, "netns", &b.netns])?;
        let mtu = cfg.mtu.to_string();
        for s in [a, b] {
            let addr = format!("{}/{}", s.addr, cfg.prefix_len);
            ip(&["-n", &s.netns, "link", "set", &s.iface, "address", &s.mac, "mtu", &mtu])?;
            in_ns(&s.netns, &["sysctl", "-qw", &format!("net.ipv6.conf.{}.disable_ipv6=1", s.iface)])?;
            ip(&["-n", &s.netns, "addr", "add", &addr, "dev", &s.iface])?;
            in_ns(&s.netns, &["ethtool", "-K", &s.iface, "tx", "off"])?;
            ip(&["-n", &s.netns, "link", "set", "lo", "up"])?;
            ip(&["-n", &s.netns, "link", "set", &s.iface, "up"])?;
        }
        // Wait for carrier on both ends.
        let deadline = Instant::now() + Duration::from_secs(3);
        while !Self::status(cfg).complete(cfg) {
            if Instant::now() > deadline {
                return Err(detpath_sys::Error::Netns { ns: a.netns.clone(), why: "the veth pair did not come up within 3 s".into() }.into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Removes both namespaces (the veth pair goes with them). Idempotent.
    pub fn down(cfg: &TestbedConfig) {
        delete_ns(&cfg.a.netns);
        delete_ns(&cfg.b.netns);
    }

    /// What exists now.
    pub fn status(cfg: &TestbedConfig) -> Status {
        Status { a: side_status(&cfg.a), b: side_status(&cfg.b) }
    }

    /// Leaves the namespaces in place when this value drops.
    pub fn keep(mut self) -> TestbedConfig {
        self.keep = true;
        self.cfg.clone()
    }

    pub fn config(&self) -> &TestbedConfig {
        &self.cfg
    }
    pub fn a(&self) -> &Side {
        &self.cfg.a
    }
    pub fn b(&self) -> &Side {
        &self.cfg.b
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if !self.keep {
            Self::down(&self.cfg);
        }
    }
}

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
//! [`Testbed`] removes its namespaces on drop (and on SIGINT/SIGTERM or a
//! panic) unless [`Testbed::keep`] was called, as `detpath testbed up` does.
//!
//! One naming rule ([`TestbedName`]): every testbed namespace is
//! `<base>-a` / `<base>-b` with a base starting `detpath`; a testbed made
//! for one process (tests, `sched bench`, `pubsub bench`) has the base
//! `detpath-<tag>-<pid>-<n>` ([`process_prefix`]), so [`find`] can tell one
//! whose process is gone (a SIGKILL leaves its namespaces) from one in use.
//! `detpath testbed down` removes those leftovers with the named testbed.

use crate::error::{Error, Result};
use detpath_sys::cleanup::UndoGuard;
use detpath_sys::netns;
use detpath_sys::NetDev;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// One side of the testbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The network namespace's name (`ip netns`).
    pub netns: String,
    /// The veth end inside it.
    pub iface: String,
    /// Its IPv4 address (on the testbed's `/prefix_len` subnet).
    pub addr: Ipv4Addr,
    /// Its MAC address, `aa:bb:cc:dd:ee:ff` (fixed, so captures and neighbours are predictable).
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
    /// The first side (`10.77.0.1` on `dpa`, in namespace `<prefix>-a`).
    pub a: Side,
    /// The second side (`10.77.0.2` on `dpb`, in namespace `<prefix>-b`).
    pub b: Side,
    /// The subnet's prefix length, bits (24).
    pub prefix_len: u8,
    /// The MTU of both veth ends, bytes (1500).
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

    /// A testbed with names no other process uses (for tests running in
    /// parallel), named after this process ([`process_prefix`]).
    pub fn unique(tag: &str) -> TestbedConfig {
        Self::with_prefix(&process_prefix(tag))
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
    /// Side a's interface as found in its namespace; `None`: no namespace or no interface.
    pub a: Option<NetDev>,
    /// Side b's interface, likewise.
    pub b: Option<NetDev>,
}

impl Status {
    /// Both sides exist, are up and carry their addresses.
    pub fn complete(&self, cfg: &TestbedConfig) -> bool {
        let ok = |d: &Option<NetDev>, s: &Side| d.as_ref().is_some_and(|d| d.up && d.ipv4.iter().any(|(a, _)| *a == s.addr));
        ok(&self.a, &cfg.a) && ok(&self.b, &cfg.b)
    }
}

/// The base of namespace names made by detpath.
pub(crate) const NAME_PREFIX: &str = "detpath";

/// A testbed base no other testbed uses, owned by this process:
/// `detpath-<tag>-<pid>-<n>` (the naming rule of [`TestbedName`]). `tag` is
/// letters and digits (e.g. `sch`), so the pid is always the second-last field.
pub fn process_prefix(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{NAME_PREFIX}-{tag}-{}-{n}", std::process::id())
}

/// A namespace name read by the naming rule: `<base>-a` or `<base>-b`, the
/// base starting `detpath`; a per-process base (`detpath-<tag>-<pid>-<n>`,
/// or `detpath-sch<pid>` from earlier versions' `sched bench`) names its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestbedName {
    /// What `--testbed` takes (`detpath`, `detpath-sch-4242-0`).
    pub base: String,
    /// `'a'` or `'b'`.
    pub side: char,
    /// The process that made it, when the name says.
    pub owner: Option<u32>,
}

impl TestbedName {
    /// Reads a namespace name; `None` when it is not a detpath testbed's.
    pub fn parse(netns: &str) -> Option<TestbedName> {
        let (base, side) = netns.strip_suffix("-a").map(|b| (b, 'a')).or_else(|| netns.strip_suffix("-b").map(|b| (b, 'b')))?;
        if base != NAME_PREFIX && !base.strip_prefix(NAME_PREFIX).is_some_and(|r| r.starts_with('-') && r.len() > 1) {
            return None;
        }
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        let fields: Vec<&str> = base.split('-').collect();
        let owner = match fields.as_slice() {
            // detpath-<tag>-<pid>-<n>
            [_, tag, pid, n] if !tag.is_empty() && digits(pid) && digits(n) => pid.parse().ok(),
            // detpath-sch<pid> (sched bench before the rule)
            [_, legacy] => legacy.strip_prefix("sch").filter(|p| digits(p)).and_then(|p| p.parse().ok()),
            _ => None,
        };
        Some(TestbedName { base: base.to_string(), side, owner })
    }

    /// Whether the owner process is gone (a testbed without an owner in its name is never orphaned).
    pub fn orphaned(&self) -> bool {
        self.owner.is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    }
}

/// Every namespace named by the rule of [`TestbedName`], sorted by name.
pub fn find() -> Vec<(String, TestbedName)> {
    let mut found: Vec<(String, TestbedName)> = std::fs::read_dir(netns::NETNS_RUN_DIR)
        .map(|d| d.flatten().filter_map(|e| e.file_name().into_string().ok()).filter_map(|n| TestbedName::parse(&n).map(|t| (n, t))).collect())
        .unwrap_or_default();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Removes one namespace (its veth end goes with it). Idempotent.
pub fn remove_netns(name: &str) {
    delete_ns(name);
}

/// A live testbed; removes itself on drop unless kept.
pub struct Testbed {
    cfg: TestbedConfig,
    /// Removes the namespaces: on drop, or from cleanup on a signal or a panic.
    cleanup: Option<UndoGuard>,
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
        let base = a.strip_suffix("-a").unwrap_or(&a).to_string();
        let guard = UndoGuard::new(format!("testbed namespaces {a} and {b}"), Some(format!("detpath testbed down --testbed {base}")), move || {
            delete_ns(&a);
            delete_ns(&b);
            match [&a, &b].into_iter().find(|n| netns::exists(n)) {
                Some(left) => Err(format!("namespace {left} is still there")),
                None => Ok(()),
            }
        });
        Ok(Testbed { cfg, cleanup: Some(guard) })
    }

    /// Like [`Testbed::up`], except that a complete testbed already there
    /// belongs to whoever made it (a user's `detpath testbed up`, with their
    /// `echo` running in it): it is used as it is and left in place when
    /// this value drops. One this call builds (or repairs) is removed as usual.
    pub fn up_or_use(cfg: TestbedConfig) -> Result<Testbed> {
        if Self::status(&cfg).complete(&cfg) {
            return Ok(Testbed { cfg, cleanup: None });
        }
        Self::up(cfg)
    }

    /// Whether dropping this value removes the namespaces (false for a
    /// testbed [`Testbed::up_or_use`] found, or after [`Testbed::keep`]).
    pub fn owned(&self) -> bool {
        self.cleanup.is_some()
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
        if let Some(g) = self.cleanup.take() {
            g.disarm();
        }
        self.cfg.clone()
    }

    /// The names and addresses it was brought up with.
    pub fn config(&self) -> &TestbedConfig {
        &self.cfg
    }
    /// Side a.
    pub fn a(&self) -> &Side {
        &self.cfg.a
    }
    /// Side b.
    pub fn b(&self) -> &Side {
        &self.cfg.b
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        // Runs the undo (unless a signal's cleanup already did): the namespaces go.
        drop(self.cleanup.take());
    }
}

/// One IPv4 frame a [`WireTap`] saw: the header fields tests read off the
/// wire (a datagram's DSCP, its fragments) and the start of its UDP payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TappedFrame {
    /// IPv4 source and destination.
    pub src: Ipv4Addr,
    /// IPv4 destination.
    pub dst: Ipv4Addr,
    /// The type of service byte (DSCP << 2 | ECN).
    pub tos: u8,
    /// IPv4 identification (one per datagram, shared by its fragments).
    pub ip_id: u16,
    /// Fragment offset, bytes (0: a whole datagram or its first fragment).
    pub frag_offset: usize,
    /// More fragments follow.
    pub more_frags: bool,
    /// The UDP ports and the payload's first bytes, in a whole datagram or first fragment.
    pub udp: Option<(u16, u16, Vec<u8>)>,
}

/// What one side's interface receives, read with an AF_PACKET socket in its
/// namespace: the headers as they crossed the veth, whatever the sender
/// (kernel, AF_XDP, DPDK) built. For tests that check what went on the wire.
pub struct WireTap {
    sock: detpath_sys::packet::PacketSocket,
}

impl WireTap {
    /// Starts reading what `side`'s interface receives (open before sending).
    pub fn open(side: &Side) -> Result<WireTap> {
        let sock = side.run(|| detpath_sys::packet::PacketSocket::open(&side.iface))??;
        Ok(WireTap { sock })
    }

    /// The IPv4 frames received within `wait` (until `done` says it has what
    /// it needs, or the time is up); other frames (ARP, IPv6) are skipped.
    /// `done` is called at least every millisecond, so it can drive the
    /// sender (a scheduler's slots, parked datagrams) while the tap reads.
    pub fn read(&self, wait: Duration, mut done: impl FnMut(&[TappedFrame]) -> bool) -> Result<Vec<TappedFrame>> {
        let end = Instant::now() + wait;
        let (mut out, mut buf) = (Vec::new(), vec![0u8; 65_536]);
        while !done(&out) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let Some(n) = self.sock.recv(&mut buf, left.min(Duration::from_millis(1)))? else { continue };
            if let Some(f) = tapped(&buf[..n]) {
                out.push(f);
            }
        }
        Ok(out)
    }
}

fn tapped(frame: &[u8]) -> Option<TappedFrame> {
    use detpath_wire::{EthernetFrame, Ipv4Packet, UdpPacket};
    let eth = EthernetFrame::new_checked(frame)?;
    if eth.ethertype() != 0x0800 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload())?;
    let body = eth.payload().get(ip.header_len()..)?;
    let udp = (ip.protocol() == 17 && ip.frag_offset() == 0)
        .then(|| UdpPacket::new_checked(body).map(|u| (u.src_port(), u.dst_port(), body[8..body.len().min(8 + 64)].to_vec())))
        .flatten();
    Some(TappedFrame {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        tos: ip.tos(),
        ip_id: ip.ident(),
        frag_offset: ip.frag_offset(),
        more_frags: ip.more_frags(),
        udp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(base: &str, side: char, owner: Option<u32>) -> Option<TestbedName> {
        Some(TestbedName { base: base.into(), side, owner })
    }

    #[test]
    fn the_naming_rule_reads_every_testbed_detpath_makes() {
        assert_eq!(TestbedName::parse("detpath-a"), name("detpath", 'a', None));
        assert_eq!(TestbedName::parse("detpath-b"), name("detpath", 'b', None));
        assert_eq!(TestbedName::parse("detpath-sch-4242-0-b"), name("detpath-sch-4242-0", 'b', Some(4242)));
        assert_eq!(TestbedName::parse("detpath-psb-17-3-a"), name("detpath-psb-17-3", 'a', Some(17)));
        // sched bench before the rule
        assert_eq!(TestbedName::parse("detpath-sch4242-a"), name("detpath-sch4242", 'a', Some(4242)));
        // a fixed --testbed name: found, no owner
        assert_eq!(TestbedName::parse("detpath-lab-a"), name("detpath-lab", 'a', None));
        assert_eq!(TestbedName::parse("detpath-schs99-b"), name("detpath-schs99", 'b', None));
        for other in ["detpath", "detpath-", "detpath--a", "detpathx-a", "lab-a", "detpath-cls-1-bench-g", "detpath-a-c", "netns-a"] {
            assert_eq!(TestbedName::parse(other), None, "{other}");
        }
    }

    #[test]
    fn a_process_prefix_follows_the_rule_and_names_this_process() {
        let p = process_prefix("sch");
        let n = TestbedName::parse(&format!("{p}-a")).unwrap();
        assert_eq!(n.base, p);
        assert_eq!(n.owner, Some(std::process::id()));
        assert!(!n.orphaned(), "this process is alive");
        assert_ne!(process_prefix("sch"), p, "two calls, two bases");
        let cfg = TestbedConfig::unique("t");
        assert_eq!(TestbedName::parse(&cfg.b.netns).unwrap().owner, Some(std::process::id()));
    }

    #[test]
    fn an_owner_that_is_gone_makes_an_orphan() {
        // A child that has exited and been reaped: its pid names no process.
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        let n = TestbedName::parse(&format!("detpath-sch-{pid}-0-a")).unwrap();
        assert!(n.orphaned());
        assert!(!TestbedName::parse("detpath-a").unwrap().orphaned());
    }
}

//! What this host offers a slot scheduler, probed per interface (in the
//! calling thread's network namespace), reported as obtained or not with the
//! reason. Nothing is changed on the host.
//!
//! - **Line rate**: a completion-counted slot clock and placeholder frames
//!   need a NIC that sends at a fixed line rate. A veth (or any interface
//!   without a link speed) completes transmissions as fast as the CPU copies
//!   them: there a completion count tracks the CPU, not time.
//! - **PTP hardware clock**: as `ethtool -T` shows it (a PHC index, or none).
//! - **Launch time** (SO_TXTIME offloaded to the NIC): needs the ETF qdisc
//!   (`sch_etf`) and a driver that offloads it; this only checks what can be
//!   checked without changing anything (the qdisc module and a PHC).
//!
//! The NIC facts come through [`NicFacts`] ([`KernelNic`]: the ethtool and
//! interface ioctls of `detpath_sys`, in the calling thread's namespace) and
//! the kernel's files are read under a root directory, so [`probe_on`] runs
//! on a fake NIC and a fake tree in tests.

use detpath::sys::{ethtool, netdev};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One capability: obtained, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capability {
    /// Capability name (line-rate, completion-clock, placeholder-frames, ptp-hardware-clock, launch-time).
    pub name: &'static str,
    /// Whether this host has it for the interface.
    pub obtained: bool,
    /// What was found, or why not.
    pub detail: String,
}

/// The probe's findings for one interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// Interface probed.
    pub iface: String,
    /// Its driver (ethtool -i).
    pub driver: Option<String>,
    /// Its link speed, if it reports one.
    pub speed_mbps: Option<u64>,
    /// One entry per capability.
    pub capabilities: Vec<Capability>,
}

impl Probe {
    /// Whether capability `name` was obtained.
    pub fn has(&self, name: &str) -> bool {
        self.capabilities.iter().any(|c| c.name == name && c.obtained)
    }
    /// One line per capability: "line-rate: not obtained (veth has no link speed)".
    pub fn lines(&self) -> Vec<String> {
        self.capabilities.iter().map(|c| format!("{}: {} ({})", c.name, if c.obtained { "obtained" } else { "not obtained" }, c.detail)).collect()
    }
}

/// What the probe asks about an interface. [`KernelNic`] asks the kernel;
/// a test answers for a NIC this machine does not have.
pub trait NicFacts {
    /// Whether `iface` exists.
    fn exists(&self, iface: &str) -> bool;
    /// Its driver (`ethtool -i`).
    fn driver(&self, iface: &str) -> Option<String>;
    /// Its link speed in Mb/s, if it reports one.
    fn speed_mbps(&self, iface: &str) -> Option<u64>;
    /// The index of its PTP hardware clock, if it has one.
    fn phc_index(&self, iface: &str) -> Option<u32>;
}

/// The interfaces of the calling thread's network namespace, through the
/// ioctls of `detpath_sys` (`if_nametoindex`, `SIOCETHTOOL`).
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelNic;

impl NicFacts for KernelNic {
    fn exists(&self, iface: &str) -> bool {
        netdev::ifindex(iface).is_ok()
    }
    fn driver(&self, iface: &str) -> Option<String> {
        ethtool::driver(iface).ok()
    }
    fn speed_mbps(&self, iface: &str) -> Option<u64> {
        ethtool::speed_mbps(iface).ok().flatten()
    }
    fn phc_index(&self, iface: &str) -> Option<u32> {
        ethtool::phc_index(iface).ok().flatten()
    }
}

/// A host path under `root`.
fn under(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// Whether the kernel under `root` has qdisc module `name` (`sch_etf`) with
/// config symbol `config` (`CONFIG_NET_SCH_ETF`): loaded, configured in
/// /proc/config.gz, or listed among the modules; `None` when nothing tells.
fn kernel_has_qdisc(root: &Path, name: &str, config: &str) -> Option<bool> {
    if under(root, "/sys/module").join(name).exists() {
        return Some(true);
    }
    let config_gz = under(root, "/proc/config.gz");
    if config_gz.exists() {
        if let Ok(out) = std::process::Command::new("zcat").arg(&config_gz).output() {
            if out.status.success() {
                let text = String::from_utf8_lossy(&out.stdout);
                let set = text.lines().any(|l| l == format!("{config}=y") || l == format!("{config}=m"));
                return Some(set);
            }
        }
    }
    let release = std::fs::read_to_string(under(root, "/proc/sys/kernel/osrelease")).ok()?;
    let dir = under(root, "/lib/modules").join(release.trim());
    let builtin = std::fs::read_to_string(dir.join("modules.builtin")).unwrap_or_default();
    let listed = std::fs::read_to_string(dir.join("modules.dep")).unwrap_or_default();
    if builtin.is_empty() && listed.is_empty() {
        return None;
    }
    let needle = format!("/{name}.ko");
    Some(builtin.contains(&needle) || listed.contains(&needle))
}

/// Probes `iface` as seen from the calling thread's network namespace
/// (driver, speed and PTP clock through the ethtool ioctl; no binary needed).
pub fn probe(iface: &str) -> Probe {
    probe_on(&KernelNic, Path::new("/"), iface)
}

/// [`probe`] with the NIC facts from `nic` and the kernel's files under
/// `root` (`/` on the machine; a fake tree in tests).
pub fn probe_on(nic: &dyn NicFacts, root: &Path, iface: &str) -> Probe {
    let exists = nic.exists(iface);
    let driver = nic.driver(iface);
    let speed = nic.speed_mbps(iface);
    let phc = nic.phc_index(iface);
    let mut caps = Vec::new();
    let line_rate = match (exists, speed, driver.as_deref()) {
        (false, _, _) => Capability { name: "line-rate", obtained: false, detail: format!("no interface {iface} in this namespace") },
        (true, _, Some("veth")) => Capability {
            name: "line-rate",
            obtained: false,
            detail: "veth has no line rate (its reported speed is nominal): a TX completion arrives as soon as the CPU has copied the frame, so a completion-counted clock would track the CPU".into(),
        },
        (true, Some(mbps), _) => Capability { name: "line-rate", obtained: true, detail: format!("link speed {mbps} Mb/s") },
        (true, None, d) => Capability {
            name: "line-rate",
            obtained: false,
            detail: format!("driver {} reports no link speed", d.unwrap_or("unknown")),
        },
    };
    let rate_ok = line_rate.obtained;
    caps.push(line_rate);
    caps.push(Capability {
        name: "completion-clock",
        obtained: false,
        detail: if rate_ok {
            "the NIC has a line rate, but detpath's Endpoint does not expose a TX completion count yet; the completion-counted clock runs on the ring model (simulated)".into()
        } else {
            "needs a line-rate NIC; the completion-counted clock runs on the ring model (simulated)".into()
        },
    });
    caps.push(Capability {
        name: "placeholder-frames",
        obtained: false,
        detail: if rate_ok {
            "not implemented: keeping the ring full with discardable frames needs a datapath that owns the TX ring (dpdk/afxdp on a real port)".into()
        } else {
            "pointless without a line rate: placeholders would only burn CPU".into()
        },
    });
    let has_phc = phc.is_some();
    caps.push(Capability {
        name: "ptp-hardware-clock",
        obtained: has_phc,
        detail: match &phc {
            Some(n) => format!("/dev/ptp{n}"),
            None => "the interface has no PTP hardware clock (ethtool -T: none): the slot clock is the only clock to steer".into(),
        },
    });
    let etf = kernel_has_qdisc(root, "sch_etf", "CONFIG_NET_SCH_ETF");
    caps.push(Capability {
        name: "launch-time",
        obtained: false,
        detail: match (etf, has_phc) {
            (Some(false), _) => {
                "this kernel has no ETF qdisc (CONFIG_NET_SCH_ETF), so SO_TXTIME launch times are not enforced; veth ignores them anyway".into()
            }
            (None, _) => "cannot tell whether the kernel has the ETF qdisc (no modules list)".into(),
            (Some(true), false) => "ETF exists but the interface has no PTP clock: no hardware launch time".into(),
            (Some(true), true) => "ETF and a PHC exist; offload not attempted (would change the qdisc)".into(),
        },
    });
    Probe { iface: iface.to_string(), driver, speed_mbps: speed, capabilities: caps }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_no_line_rate() {
        let p = probe("lo");
        assert!(!p.has("line-rate"), "{:?}", p.lines());
        assert!(!p.has("completion-clock"));
        assert_eq!(p.capabilities.len(), 5);
    }

    #[test]
    fn missing_interface_is_reported() {
        let p = probe("no-such-if0");
        assert!(p.lines()[0].contains("no interface"));
    }

    /// A NIC this machine does not have: a line-rate port with a PHC, or a veth.
    struct FakeNic {
        driver: &'static str,
        speed: Option<u64>,
        phc: Option<u32>,
    }

    impl NicFacts for FakeNic {
        fn exists(&self, iface: &str) -> bool {
            iface == "fake0"
        }
        fn driver(&self, _: &str) -> Option<String> {
            Some(self.driver.into())
        }
        fn speed_mbps(&self, _: &str) -> Option<u64> {
            self.speed
        }
        fn phc_index(&self, _: &str) -> Option<u32> {
            self.phc
        }
    }

    fn fake_tree(files: &[(&str, &str)]) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!("detpath-probe-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        for (path, text) in files {
            let p = under(&root, path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn a_line_rate_nic_with_a_phc_on_a_kernel_with_etf() {
        let root = fake_tree(&[("/sys/module/sch_etf/refcnt", "0\n")]);
        let p = probe_on(&FakeNic { driver: "ixgbe", speed: Some(10_000), phc: Some(2) }, &root, "fake0");
        assert_eq!((p.driver.as_deref(), p.speed_mbps), (Some("ixgbe"), Some(10_000)));
        assert!(p.has("line-rate"), "{:?}", p.lines());
        assert!(p.has("ptp-hardware-clock"));
        assert!(p.lines().iter().any(|l| l.contains("/dev/ptp2")), "{:?}", p.lines());
        assert!(p.lines().iter().any(|l| l.starts_with("launch-time") && l.contains("ETF and a PHC exist")), "{:?}", p.lines());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_veth_has_no_line_rate_and_the_modules_list_tells_about_etf() {
        // No /sys/module/sch_etf: the modules list of the running release decides.
        let listed = fake_tree(&[("/proc/sys/kernel/osrelease", "6.1.0-test\n"), ("/lib/modules/6.1.0-test/modules.dep", "kernel/net/sched/sch_etf.ko:\n")]);
        let veth = FakeNic { driver: "veth", speed: Some(10_000), phc: None };
        let p = probe_on(&veth, &listed, "fake0");
        assert!(!p.has("line-rate") && p.lines()[0].contains("veth has no line rate"), "{:?}", p.lines());
        assert!(p.lines().iter().any(|l| l.starts_with("launch-time") && l.contains("no PTP clock")), "{:?}", p.lines());
        let absent = fake_tree(&[("/proc/sys/kernel/osrelease", "6.1.0-test\n"), ("/lib/modules/6.1.0-test/modules.builtin", "kernel/net/core/foo.ko\n")]);
        let p = probe_on(&veth, &absent, "fake0");
        assert!(p.lines().iter().any(|l| l.starts_with("launch-time") && l.contains("no ETF qdisc")), "{:?}", p.lines());
        let silent = fake_tree(&[]);
        let p = probe_on(&veth, &silent, "fake0");
        assert!(p.lines().iter().any(|l| l.starts_with("launch-time") && l.contains("cannot tell")), "{:?}", p.lines());
        // A NIC without a speed, and one that is not there.
        let p = probe_on(&FakeNic { driver: "mlx5_core", speed: None, phc: None }, &silent, "fake0");
        assert!(p.lines()[0].contains("driver mlx5_core reports no link speed"), "{:?}", p.lines());
        assert!(probe_on(&veth, &silent, "fake1").lines()[0].contains("no interface fake1"));
        for d in [listed, absent, silent] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn a_veth_is_probed_through_the_ioctls_in_its_namespace() {
        // A veth pair in a namespace of this test's own: the kernel's answers
        // (driver veth, the nominal 10 Gb/s, no PHC) reach the probe without
        // the ethtool binary.
        let ns = format!("dpprobe{}", std::process::id());
        let ip = |args: &[&str]| std::process::Command::new("ip").args(args).status().map(|s| s.success()).unwrap_or(false);
        assert!(ip(&["netns", "add", &ns]), "ip netns add (needs root)");
        let ok = ip(&["-n", &ns, "link", "add", "pa", "type", "veth", "peer", "name", "pb"]);
        let p = ok.then(|| detpath::sys::netns::run_in(&ns, || probe("pa")).expect("enter the namespace"));
        ip(&["netns", "del", &ns]);
        let p = p.expect("veth pair created");
        assert_eq!(p.driver.as_deref(), Some("veth"), "{p:?}");
        assert_eq!(p.speed_mbps, Some(10_000), "veth reports a nominal 10 Gb/s (ethtool: Speed: 10000Mb/s)");
        assert!(!p.has("line-rate") && !p.has("ptp-hardware-clock"), "{:?}", p.lines());
    }
}

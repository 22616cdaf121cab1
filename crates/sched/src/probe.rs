//! What this host offers a slot scheduler, probed per interface (in the
//! calling thread's network namespace), reported as obtained or not with the
//! reason. Nothing is changed on the host.
//!
//! - **Line rate**: a completion-counted slot clock and placeholder frames
//!   need a NIC that sends at a fixed line rate. A veth (or any interface
//!   without a link speed) completes transmissions as fast as the CPU copies
//!   them: there a completion count tracks the CPU, not time.
//! - **PTP hardware clock**: `ethtool -T` (a PHC index, or none).
//! - **Launch time** (SO_TXTIME offloaded to the NIC): needs the ETF qdisc
//!   (`sch_etf`) and a driver that offloads it; this only checks what can be
//!   checked without changing anything (the qdisc module and a PHC).

use serde::Serialize;
use std::path::Path;

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

fn read_trimmed(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// `ethtool ARGS IFACE` run in the calling thread's network namespace (a
/// child process inherits it; /sys would show the namespace it was mounted in).
fn ethtool(args: &[&str], iface: &str) -> Option<String> {
    let out = std::process::Command::new("ethtool").args(args).arg(iface).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value after `key:` on the first line that has it.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.trim().strip_prefix(key).and_then(|r| r.strip_prefix(':')).map(str::trim))
}

/// Whether `iface` exists in the calling thread's network namespace.
fn exists(iface: &str) -> bool {
    let Ok(name) = std::ffi::CString::new(iface) else {
        return false;
    };
    // SAFETY: `name` is a valid NUL-terminated string.
    unsafe { libc::if_nametoindex(name.as_ptr()) != 0 }
}

/// Whether the running kernel has qdisc module `name` (`sch_etf`) with
/// config symbol `config` (`CONFIG_NET_SCH_ETF`): loaded, configured in
/// /proc/config.gz, or listed among the modules; `None` when nothing tells.
fn kernel_has_qdisc(name: &str, config: &str) -> Option<bool> {
    if Path::new("/sys/module").join(name).exists() {
        return Some(true);
    }
    if Path::new("/proc/config.gz").exists() {
        if let Ok(out) = std::process::Command::new("zcat").arg("/proc/config.gz").output() {
            if out.status.success() {
                let text = String::from_utf8_lossy(&out.stdout);
                let set = text.lines().any(|l| l == format!("{config}=y") || l == format!("{config}=m"));
                return Some(set);
            }
        }
    }
    let release = read_trimmed(Path::new("/proc/sys/kernel/osrelease"))?;
    let dir = Path::new("/lib/modules").join(&release);
    let builtin = std::fs::read_to_string(dir.join("modules.builtin")).unwrap_or_default();
    let listed = std::fs::read_to_string(dir.join("modules.dep")).unwrap_or_default();
    if builtin.is_empty() && listed.is_empty() {
        return None;
    }
    let needle = format!("/{name}.ko");
    Some(builtin.contains(&needle) || listed.contains(&needle))
}

/// Probes `iface` as seen from the calling thread's network namespace
/// (driver, speed and PTP clock from `ethtool`, which must be installed).
pub fn probe(iface: &str) -> Probe {
    let exists = exists(iface);
    let driver = ethtool(&["-i"], iface).and_then(|t| field(&t, "driver").map(str::to_string));
    // "Speed: 10000Mb/s", "Speed: Unknown!" or nothing.
    let speed = ethtool(&[], iface).and_then(|t| field(&t, "Speed").and_then(|v| v.strip_suffix("Mb/s")).and_then(|v| v.parse::<u64>().ok()));
    let phc = ethtool(&["-T"], iface).and_then(|t| field(&t, "PTP Hardware Clock").map(str::to_string)).filter(|v| v != "none");
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
            None => "ethtool -T reports none: the slot clock is the only clock to steer".into(),
        },
    });
    let etf = kernel_has_qdisc("sch_etf", "CONFIG_NET_SCH_ETF");
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
}

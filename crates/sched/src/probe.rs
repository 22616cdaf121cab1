//! What this host offers a slot scheduler, probed per interface (in the
//! calling thread's network namespace), reported as obtained or not with the
//! reason. Nothing is changed on the host.
//!
//! - **Line rate**: a completion-counted slot clock and placeholder frames
//!   need a NIC that sends at a fixed line rate. A veth (or any interface
//!   without a link speed) completes transmissions as fast as the CPU copies
//!   them: there a completion count tracks the CPU, not time.
//! - **PTP hardware clock**: `/sys/class/net/<if>/device/ptp/`.
//! - **Launch time** (SO_TXTIME offloaded to the NIC): needs the ETF qdisc
//!   (`sch_etf`) and a driver that offloads it; this only checks what can be
//!   checked without changing anything (the qdisc module and a PHC).

use serde::Serialize;
use std::path::Path;

/// One capability: obtained, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capability {
    pub name: &'static str,
    pub obtained: bool,
    pub detail: String,
}

/// The probe's findings for one interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub iface: String,
    pub driver: Option<String>,
    pub speed_mbps: Option<u64>,
    pub capabilities: Vec<Capability>,
}

impl Probe {
    /// Whether capability `name` was obtained.
    pub fn has(&self, name: &str) -> bool {
        self.capabilities.iter().any(|c| c.name == name && c.obtained)
    }
    /// One line per capability: "line-rate: not obtained (veth has no link speed)".
    pub fn lines(&self) -> Vec<String> {
        self.capabilities
            .iter()
            .map(|c| format!("{}: {} ({})", c.name, if c.obtained { "obtained" } else { "not obtained" }, c.detail))
            .collect()
    }
}

fn read_trimmed(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// The driver of `iface`: the name of `device/driver`, or what the uevent says (veth has no device).
fn driver(sys: &Path) -> Option<String> {
    if let Ok(target) = std::fs::read_link(sys.join("device/driver")) {
        return target.file_name().map(|n| n.to_string_lossy().into_owned());
    }
    let uevent = read_trimmed(&sys.join("uevent"))?;
    uevent.lines().find_map(|l| l.strip_prefix("DEVTYPE=")).map(str::to_string)
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

/// Probes `iface` as seen from the calling thread's network namespace.
pub fn probe(iface: &str) -> Probe {
    let sys = Path::new("/sys/class/net").join(iface);
    let exists = sys.exists();
    let driver = driver(&sys);
    // `speed` reads -1 or fails (EINVAL) on interfaces without a link speed.
    let speed = read_trimmed(&sys.join("speed")).and_then(|s| s.parse::<i64>().ok()).filter(|&s| s > 0).map(|s| s as u64);
    let mut caps = Vec::new();
    let line_rate = match (exists, speed, driver.as_deref()) {
        (false, _, _) => Capability { name: "line-rate", obtained: false, detail: format!("no interface {iface} in this namespace") },
        (true, _, Some("veth")) => Capability {
            name: "line-rate",
            obtained: false,
            detail: "veth has no line rate: a TX completion arrives as soon as the CPU has copied the frame, so a completion-counted clock would track the CPU".into(),
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
    let phc = sys.join("device/ptp");
    let has_phc = phc.read_dir().map(|mut d| d.next().is_some()).unwrap_or(false);
    caps.push(Capability {
        name: "ptp-hardware-clock",
        obtained: has_phc,
        detail: if has_phc { format!("{}", phc.display()) } else { format!("no {}: the slot clock is the only clock to steer", phc.display()) },
    });
    let etf = kernel_has_qdisc("sch_etf", "CONFIG_NET_SCH_ETF");
    caps.push(Capability {
        name: "launch-time",
        obtained: false,
        detail: match (etf, has_phc) {
            (Some(false), _) => "this kernel has no ETF qdisc (CONFIG_NET_SCH_ETF), so SO_TXTIME launch times are not enforced; veth ignores them anyway".into(),
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

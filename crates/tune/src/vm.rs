//! Is this a virtual machine, and how much did the hypervisor take? The
//! audit reports both: steal time is latency no setting inside the guest
//! can remove.

use crate::cpus::CpuList;
use crate::host::Host;
use std::time::Duration;

/// The hypervisor's name when the host looks like a guest: the CPU's
/// `hypervisor` flag, named by DMI (`/sys/class/dmi/id/sys_vendor`) when it says.
pub fn hypervisor(host: &Host) -> Option<String> {
    let cpuinfo = host.read_trim("/proc/cpuinfo").unwrap_or_default();
    let flagged = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let vendor = host.read_trim("/sys/class/dmi/id/sys_vendor").filter(|v| !v.is_empty());
    let product = host.read_trim("/sys/class/dmi/id/product_name").filter(|v| !v.is_empty());
    match (flagged, vendor) {
        (false, _) => None,
        (true, Some(v)) => Some(match product {
            Some(p) => format!("{v} {p}"),
            None => v,
        }),
        (true, None) => Some("unknown hypervisor".into()),
    }
}

/// Steal time of `cores` so far, in USER_HZ ticks (`/proc/stat`, 8th value of each `cpuN` line).
pub(crate) fn steal_ticks(host: &Host, cores: &CpuList) -> u64 {
    let stat = host.read_trim("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let n: usize = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            cores.contains(n).then(|| f.nth(7).and_then(|v| v.parse::<u64>().ok())).flatten()
        })
        .sum()
}

/// What the audit says about the VM: hypervisor and the steal `cores` saw over `window`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VmReport {
    /// What the guest knows of its hypervisor (DMI vendor and product, or "unknown hypervisor").
    pub hypervisor: String,
    /// How long the steal time was watched, ms.
    pub window_ms: u64,
    /// Steal time of the datapath cores during the window, ms (USER_HZ = 100: 10 ms resolution).
    pub steal_ms: u64,
}

/// Watches the steal time of `cores` for `window` when the host is a guest; `None` on bare metal.
pub fn watch(host: &Host, cores: &CpuList, window: Duration) -> Option<VmReport> {
    let hypervisor = hypervisor(host)?;
    let before = steal_ticks(host, cores);
    std::thread::sleep(window);
    let after = steal_ticks(host, cores);
    Some(VmReport { hypervisor, window_ms: window.as_millis() as u64, steal_ms: after.saturating_sub(before) * 10 })
}

/// What tuning can and cannot remove, for the audit's closing lines.
pub const WHAT_TUNING_REMOVES: &str = "Tuning removes: other threads on the datapath cores (isolcpus, SCHED_FIFO polling threads), \
interrupts there (IRQ affinity, rcu_nocbs, nohz_full), C-state and frequency wake-up delays (cpu_dma_latency, governor), NIC coalescing delays. \
It cannot remove: the hypervisor taking the vCPU (steal time: pin and isolate the vCPUs on the host, or run on bare metal), \
SMIs and firmware, and noise on the peer or the wire. `detpath bench` names each slow round's cause.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_guest_and_its_steal() {
        let dir = std::env::temp_dir().join(format!("detpath-vm-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::create_dir_all(dir.join("sys/class/dmi/id")).unwrap();
        std::fs::write(dir.join("proc/cpuinfo"), "processor\t: 0\nflags\t\t: fpu vme hypervisor lm\n").unwrap();
        std::fs::write(dir.join("sys/class/dmi/id/sys_vendor"), "QEMU\n").unwrap();
        std::fs::write(dir.join("proc/stat"), "cpu  1 1 1 1 1 1 1 9 0 0\ncpu0 1 1 1 1 1 1 1 5 0 0\ncpu1 1 1 1 1 1 1 1 4 0 0\n").unwrap();
        let host = Host::at(&dir);
        assert_eq!(hypervisor(&host).as_deref(), Some("QEMU"));
        assert_eq!(steal_ticks(&host, &CpuList::parse("1").unwrap()), 4);
        assert_eq!(steal_ticks(&host, &CpuList::parse("0-1").unwrap()), 9);
        std::fs::write(dir.join("proc/cpuinfo"), "flags\t\t: fpu vme lm\n").unwrap();
        assert_eq!(hypervisor(&host), None, "no hypervisor flag: bare metal");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! What a DPDK virtual device changes on the Linux interface under it, and
//! how it is put back.
//!
//! Checked on this project's hosts: stopping a DPDK port on a veth wipes the
//! interface's neighbour entries (even permanent ones), a PMD may leave the
//! interface promiscuous, and net_af_xdp attaches an XDP program that must go
//! when the endpoint closes. [`HostState::snapshot`] records the interface's
//! flags, neighbours and XDP attachment before the device is created;
//! [`HostState::restore`] puts them back. Both run inside the endpoint's
//! network namespace: [`in_netns`] runs a closure on a short-lived thread
//! there, so drop and signal handlers work from any thread.

use crate::netdev;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::process::Command;

/// Runs `f` on a new thread inside the network namespace `ns` and waits.
pub(crate) fn in_netns<T: Send>(ns: &File, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: ns is an open network namespace file; the thread is ours and ends with the scope.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(format!("entering the endpoint's network namespace: {}", std::io::Error::last_os_error()));
            }
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| Err("the restore thread panicked".into()))
    })
}

/// One neighbour entry as `ip neigh` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Neigh {
    pub dst: String,
    pub lladdr: String,
    /// permanent, noarp, or stale (for any learned state: the kernel revalidates it).
    pub nud: &'static str,
}

/// Parses `ip neigh show dev X` output; entries without a link-layer address are skipped.
pub(crate) fn parse_neigh(text: &str) -> Vec<Neigh> {
    text.lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let dst = t.first()?;
            let at = t.iter().position(|w| *w == "lladdr")?;
            let lladdr = t.get(at + 1)?;
            let nud = match t.last().copied().unwrap_or("") {
                "PERMANENT" => "permanent",
                "NOARP" => "noarp",
                "FAILED" | "INCOMPLETE" => return None,
                _ => "stale",
            };
            Some(Neigh { dst: dst.to_string(), lladdr: lladdr.to_string(), nud })
        })
        .collect()
}

fn ip_neigh_show(iface: &str) -> Vec<Neigh> {
    let mut all = Vec::new();
    for fam in ["-4", "-6"] {
        if let Ok(out) = Command::new("ip").args([fam, "neigh", "show", "dev", iface]).output() {
            all.extend(parse_neigh(&String::from_utf8_lossy(&out.stdout)));
        }
    }
    all
}

/// Interface flags (IFF_*), or None when the interface is gone.
pub(crate) fn if_flags(iface: &str) -> Option<i32> {
    // SAFETY: plain socket(2); closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: ifreq is plain data; zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(iface.bytes().take(libc::IFNAMSIZ - 1)) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS with a valid ifreq naming the interface.
    let r = unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut ifr as *mut libc::ifreq) };
    // SAFETY: the kernel filled the flags member when r == 0.
    let flags = unsafe { ifr.ifr_ifru.ifru_flags } as i32;
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    (r == 0).then_some(flags)
}

fn set_if_flags(iface: &str, flags: i32) -> bool {
    // SAFETY: plain socket(2); closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return false;
    }
    // SAFETY: ifreq is plain data; zero is valid.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(iface.bytes().take(libc::IFNAMSIZ - 1)) {
        *d = s as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = flags as libc::c_short;
    // SAFETY: SIOCSIFFLAGS with a valid ifreq.
    let r = unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &mut ifr as *mut libc::ifreq) };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    r == 0
}

/// The XDP program ids attached to the interface: (driver, skb, offload).
pub(crate) fn xdp_prog_ids(ifindex: u32) -> (u32, u32, u32) {
    let Ok(null) = File::open("/dev/null") else { return (0, 0, 0) };
    // Xdp::query ignores the program fd it is built with.
    let xdp = libbpf_rs::Xdp::new(null.as_fd());
    match xdp.query(ifindex as i32, libbpf_rs::XdpFlags::NONE) {
        Ok(q) => (q.drv_prog_id, q.skb_prog_id, q.hw_prog_id),
        Err(_) => (0, 0, 0),
    }
}

fn xdp_detach(ifindex: u32, skb: bool) {
    let Ok(null) = File::open("/dev/null") else { return };
    let xdp = libbpf_rs::Xdp::new(null.as_fd());
    let flags = if skb { libbpf_rs::XdpFlags::SKB_MODE } else { libbpf_rs::XdpFlags::DRV_MODE };
    let _ = xdp.detach(ifindex as i32, flags);
}

/// The state of an interface before a DPDK virtual device was put on it.
#[derive(Debug, Clone)]
pub(crate) struct HostState {
    pub iface: String,
    pub ifindex: u32,
    pub flags: i32,
    pub neighbours: Vec<Neigh>,
}

impl HostState {
    /// Records the interface's state (call in its namespace).
    pub fn snapshot(iface: &str) -> Option<HostState> {
        Some(HostState { iface: iface.to_string(), ifindex: netdev::ifindex(iface).ok()?, flags: if_flags(iface)?, neighbours: ip_neigh_show(iface) })
    }

    /// Puts the state back (call in its namespace): removes the XDP programs
    /// `attached` names (those the PMD attached, if still there), restores
    /// IFF_UP and IFF_PROMISC, and re-adds every neighbour entry that is gone
    /// or changed. Returns what could not be restored.
    pub fn restore(&self, attached: (u32, u32)) -> Vec<String> {
        let mut failed = Vec::new();
        // The interface may be gone (namespace deleted): nothing to restore.
        if netdev::ifindex(&self.iface).ok() != Some(self.ifindex) {
            return failed;
        }
        let (drv, skb, _) = xdp_prog_ids(self.ifindex);
        if attached.0 != 0 && drv == attached.0 {
            xdp_detach(self.ifindex, false);
        }
        if attached.1 != 0 && skb == attached.1 {
            xdp_detach(self.ifindex, true);
        }
        let keep = libc::IFF_UP | libc::IFF_PROMISC;
        if let Some(now) = if_flags(&self.iface) {
            if now & keep != self.flags & keep {
                let want = (now & !keep) | (self.flags & keep);
                if !set_if_flags(&self.iface, want) {
                    failed.push(format!("flags of {} (promisc/up)", self.iface));
                }
            }
        }
        let now = ip_neigh_show(&self.iface);
        for n in &self.neighbours {
            if now.contains(n) {
                continue;
            }
            let ok = Command::new("ip")
                .args(["neigh", "replace", &n.dst, "lladdr", &n.lladdr, "dev", &self.iface, "nud", n.nud])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            if !ok {
                failed.push(format!("neighbour {} lladdr {} on {}", n.dst, n.lladdr, self.iface));
            }
        }
        failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbour_lines() {
        let text = "10.77.0.2 lladdr 02:64:70:00:00:0b PERMANENT\n\
                    10.77.0.3 lladdr 02:64:70:00:00:0c REACHABLE\n\
                    10.77.0.4 FAILED\n\
                    10.77.0.5 lladdr 02:64:70:00:00:0d router STALE\n\
                    10.77.0.6 INCOMPLETE\n";
        let n = parse_neigh(text);
        assert_eq!(n.len(), 3);
        assert_eq!(n[0], Neigh { dst: "10.77.0.2".into(), lladdr: "02:64:70:00:00:0b".into(), nud: "permanent" });
        assert_eq!(n[1].nud, "stale");
        assert_eq!(n[2].lladdr, "02:64:70:00:00:0d");
        assert!(parse_neigh("garbage\n\n lladdr").is_empty());
    }
}

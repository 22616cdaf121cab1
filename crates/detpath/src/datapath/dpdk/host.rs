//! What a DPDK virtual device changes on the Linux interface under it, and
//! how it is put back.
//!
//! Checked on this project's hosts: stopping a DPDK port on a veth wipes the
//! interface's neighbour entries (even permanent ones), a PMD may leave the
//! interface promiscuous, and net_af_xdp attaches an XDP program that must go
//! when the endpoint closes. [`HostState::snapshot`] records the interface's
//! flags, neighbours and XDP attachment before the device is created;
//! [`HostState::restore`] puts them back. Both run inside the endpoint's
//! network namespace (`detpath_sys::netns::run_on_thread_in`), so drop and
//! signal handlers work from any thread. Every kernel object is reached
//! through `detpath_sys`: no `ip` command runs.

use detpath_sys::neigh::{self, NeighEntry};
use detpath_sys::netdev;
use detpath_sys::xdp::{self, XdpMode};

/// The state of an interface before a DPDK virtual device was put on it.
#[derive(Debug, Clone)]
pub(crate) struct HostState {
    pub iface: String,
    pub ifindex: u32,
    pub flags: i32,
    pub neighbours: Vec<NeighEntry>,
}

impl HostState {
    /// Records the interface's state (call in its namespace).
    pub fn snapshot(iface: &str) -> detpath_sys::Result<HostState> {
        let ifindex = netdev::ifindex(iface)?;
        Ok(HostState { iface: iface.to_string(), ifindex, flags: netdev::flags(iface)?, neighbours: neigh::table(ifindex)? })
    }

    /// Puts the state back (call in its namespace): removes the XDP programs
    /// `attached` names (those the PMD attached, if still there), restores
    /// IFF_UP, IFF_PROMISC and IFF_ALLMULTI (`group=`), and re-adds every neighbour entry that is gone
    /// or changed. Returns what could not be restored.
    pub fn restore(&self, attached: (u32, u32)) -> Vec<String> {
        let mut failed = Vec::new();
        // The interface may be gone (namespace deleted): nothing to restore.
        if netdev::ifindex(&self.iface).ok() != Some(self.ifindex) {
            return failed;
        }
        let now = xdp::query(self.ifindex).unwrap_or_default();
        for (id, mode) in [(attached.0, XdpMode::Native), (attached.1, XdpMode::Skb)] {
            if id != 0 && now.mode_of(id) == Some(mode) {
                if let Err(e) = xdp::detach(self.ifindex, mode) {
                    failed.push(format!("XDP program id {id} on {} ({e})", self.iface));
                }
            }
        }
        let keep = libc::IFF_UP | libc::IFF_PROMISC | libc::IFF_ALLMULTI;
        if let Ok(now) = netdev::flags(&self.iface) {
            if now & keep != self.flags & keep && netdev::set_flags(&self.iface, (now & !keep) | (self.flags & keep)).is_err() {
                failed.push(format!("flags of {} (promisc/allmulti/up)", self.iface));
            }
        }
        let now = neigh::table(self.ifindex).unwrap_or_default();
        for n in self.neighbours.iter().filter(|n| !now.contains(n)) {
            if let Err(e) = neigh::replace(self.ifindex, n) {
                failed.push(format!("neighbour {} lladdr {} on {} ({e})", n.dst, n.mac, self.iface));
            }
        }
        failed
    }
}

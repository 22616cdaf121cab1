//! The endpoint's neighbour cache: DPDK bypasses the kernel, so the
//! endpoint answers and sends ARP itself and keeps what it learnt here
//! (fixed capacity; static `neigh=` entries stay).

use super::*;
#[derive(Clone, Copy)]
pub(super) struct NeighEntry {
    pub(super) ip: Ipv4Addr,
    pub(super) mac: MacAddr,
    pub(super) fixed: bool,
    pub(super) stamp: u64,
}

/// Fixed-capacity neighbour cache: static entries stay, learned ones are
/// replaced oldest first when full.
pub(super) struct NeighCache {
    pub(super) entries: Vec<NeighEntry>,
    pub(super) cap: usize,
    pub(super) clock: u64,
}

impl NeighCache {
    pub(super) fn new(fixed: &[(Ipv4Addr, MacAddr)]) -> NeighCache {
        let cap = NEIGH_SLOTS + fixed.len();
        let mut entries = Vec::with_capacity(cap);
        entries.extend(fixed.iter().map(|&(ip, mac)| NeighEntry { ip, mac, fixed: true, stamp: 0 }));
        NeighCache { entries, cap, clock: 0 }
    }

    pub(super) fn get(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.entries.iter().find(|e| e.ip == ip).map(|e| e.mac)
    }

    pub(super) fn learn(&mut self, ip: Ipv4Addr, mac: MacAddr) {
        self.clock += 1;
        if let Some(e) = self.entries.iter_mut().find(|e| e.ip == ip) {
            if !e.fixed {
                e.mac = mac;
                e.stamp = self.clock;
            }
            return;
        }
        let e = NeighEntry { ip, mac, fixed: false, stamp: self.clock };
        if self.entries.len() < self.cap {
            self.entries.push(e);
        } else if let Some(old) = self.entries.iter_mut().filter(|e| !e.fixed).min_by_key(|e| e.stamp) {
            *old = e;
        }
    }
}

//! detpath's own XDP filter programs (the C in `bpf/`, compiled at build
//! time): load one, write its filter, attach it, read its counters. Loading
//! and attaching are `detpath_sys::xdp`'s; this module knows only what the
//! programs share, `bpf/detpath_filter.h`: the match (IPv4/UDP to one
//! address and port; everything else `XDP_PASS`), the `dp_config` map (a
//! [`FilterConfig`]) and the `dp_stats` map ([`FilterStats`]).
//!
//! Used by the `afxdp` datapath (`bpf/xsk_redirect.bpf.c`) and the `xdppoll`
//! datapath (`bpf/xdppoll.bpf.c`).

use crate::error::Result;
use detpath_sys::xdp::{self, XdpLink, XdpMode};
use detpath_sys::NetDev;
use libbpf_rs::{MapCore, MapFlags, MapHandle, Object};
use std::net::Ipv4Addr;

/// What the program matches: IPv4/UDP frames to this destination address
/// and port, or (`ethertype` not 0) Ethernet frames of that EtherType.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterConfig {
    pub addr: Ipv4Addr,
    pub port: u16,
    /// 0: match by address and port; else match frames of this EtherType.
    pub ethertype: u16,
    /// Time-stamp each matched frame in the program (`DP_CFG_RX_STAMP`).
    pub rx_stamp: bool,
}

/// `DP_CFG_RX_STAMP` in bpf/detpath_filter.h.
const DP_CFG_RX_STAMP: u32 = 1;
/// `struct dp_rx_meta` (bpf/detpath_filter.h): `__u64 rx_ns; __u32 magic; __u32 reserved;`.
pub(crate) const RX_META_LEN: usize = 16;
const DP_RX_META_MAGIC: u32 = 0x6470_7473;

/// Takes the program's receive time stamp from the `struct dp_rx_meta` at
/// `meta` (the RX_META_LEN bytes in front of a received frame) and clears
/// its magic, so a reused buffer never shows a stale stamp. `None` when the
/// program did not write one for this frame (or `meta` is too short).
pub(crate) fn take_rx_stamp(meta: &mut [u8]) -> Option<u64> {
    let meta = meta.get_mut(..RX_META_LEN)?;
    let magic = u32::from_ne_bytes([meta[8], meta[9], meta[10], meta[11]]);
    meta[8..12].fill(0);
    (magic == DP_RX_META_MAGIC).then(|| u64::from_ne_bytes(meta[..8].try_into().expect("8 bytes")))
}

/// Notes once in `caps` that frames come without the program's stamp
/// (`rx_stamp=xdp` on a driver without XDP metadata): user-space time is used.
pub(crate) fn note_unstamped(caps: &mut crate::Capabilities) {
    if !caps.notes.iter().any(|n| n.starts_with("rx_stamp=xdp")) {
        caps.notes.push("rx_stamp=xdp: a frame came without the XDP program's time stamp (no metadata from this driver?); user-space time used".into());
    }
}

impl FilterConfig {
    /// Matches IPv4/UDP to `addr:port`.
    pub fn udp(addr: Ipv4Addr, port: u16) -> FilterConfig {
        FilterConfig { addr, port, ethertype: 0, rx_stamp: false }
    }
    /// Matches every frame of `ethertype`.
    pub fn ethertype(ethertype: u16) -> FilterConfig {
        FilterConfig { addr: Ipv4Addr::UNSPECIFIED, port: 0, ethertype, rx_stamp: false }
    }
    /// The same match, time-stamping each matched frame when `on`.
    pub fn stamped(self, on: bool) -> FilterConfig {
        FilterConfig { rx_stamp: on, ..self }
    }
    /// The bytes of `struct dp_filter_config` (`bpf/detpath_filter.h`):
    /// `__be32 addr; __be16 port; __be16 ethertype; __u32 flags;`.
    fn to_bytes(self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[0..4].copy_from_slice(&self.addr.octets());
        b[4..6].copy_from_slice(&self.port.to_be_bytes());
        b[6..8].copy_from_slice(&self.ethertype.to_be_bytes());
        let flags = if self.rx_stamp { DP_CFG_RX_STAMP } else { 0 };
        b[8..12].copy_from_slice(&flags.to_ne_bytes());
        b
    }
}

/// The program's counters (`dp_stats`), summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterStats {
    /// Frames that were ours and were handed to user space (redirected to the
    /// AF_XDP socket, pushed into the ring).
    pub matched: u64,
    /// Frames that were not ours, passed to the kernel stack.
    pub passed: u64,
    /// Frames that were ours but could not be handed over (no socket on that
    /// queue, ring full), dropped.
    pub dropped: u64,
}

/// A loaded detpath filter program attached to one interface. Dropping it
/// detaches the program (only this one) and unloads it.
pub struct FilterProgram {
    prog_id: u32,
    stats: MapHandle,
    /// Declared before `object`: the link detaches before the program is unloaded.
    link: XdpLink,
    object: Object,
}

impl std::fmt::Debug for FilterProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterProgram").field("prog_id", &self.prog_id).field("link", &self.link).finish_non_exhaustive()
    }
}

impl FilterProgram {
    /// Loads `object`, writes `filter` into its `dp_config` map and attaches
    /// its program `prog_name` to `dev` (`mode`: see [`XdpLink::attach`]).
    pub fn attach(object: &'static [u8], prog_name: &str, dev: &NetDev, mode: Option<XdpMode>, filter: FilterConfig) -> Result<FilterProgram> {
        // Refuse a taken interface before loading anything.
        xdp::require_free(dev)?;
        let obj = xdp::load(object, prog_name)?;
        let config = xdp::map(&obj, "dp_config")?;
        config
            .update(&0u32.to_ne_bytes(), &filter.to_bytes(), MapFlags::ANY)
            .map_err(|e| detpath_sys::Error::Bpf { what: format!("writing the filter config of `{prog_name}`"), source: e })?;
        let stats = xdp::map(&obj, "dp_stats")?;
        let prog = xdp::program(&obj, prog_name)?;
        let prog_id = xdp::program_id(prog)?;
        let link = XdpLink::attach(prog, prog_name, dev, mode)?;
        Ok(FilterProgram { prog_id, stats, link, object: obj })
    }

    /// The mode the program runs in.
    pub fn mode(&self) -> XdpMode {
        self.link.mode()
    }

    /// The kernel's id for the program (as in `ip -d link show`, `bpftool prog show id N`).
    pub fn prog_id(&self) -> u32 {
        self.prog_id
    }

    /// The interface the program is attached to.
    pub fn iface(&self) -> &str {
        self.link.iface()
    }

    /// How the mode was chosen (for `mode=auto`, what was refused), for capability reports.
    pub fn notes(&self) -> &[String] {
        self.link.notes()
    }

    /// An owned handle to one of the program's maps, e.g. `xsks_map` or a ring buffer.
    pub fn map_handle(&self, name: &str) -> Result<MapHandle> {
        Ok(xdp::map(&self.object, name)?)
    }

    /// The program's counters, summed over CPUs (zeros if the map cannot be read).
    pub fn stats(&self) -> FilterStats {
        let read = |idx: u32| -> u64 {
            match self.stats.lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY) {
                Ok(Some(per_cpu)) => per_cpu.iter().filter_map(|v| v.get(..8)).map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]))).sum(),
                _ => 0,
            }
        };
        FilterStats { matched: read(0), passed: read(1), dropped: read(2) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_config_layout_matches_the_c_struct() {
        let b = FilterConfig::udp(Ipv4Addr::new(10, 77, 0, 1), 7000).to_bytes();
        assert_eq!(b, [10, 77, 0, 1, 0x1b, 0x58, 0, 0, 0, 0, 0, 0]);
        let b = FilterConfig::ethertype(0x7400).stamped(true).to_bytes();
        assert_eq!(b[6..12], [0x74, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn a_stamp_counts_only_with_its_magic_and_is_taken_once() {
        let mut m = [0u8; RX_META_LEN];
        m[..8].copy_from_slice(&123_456_789u64.to_ne_bytes());
        assert_eq!(take_rx_stamp(&mut m), None, "no magic: not written for this frame");
        m[8..12].copy_from_slice(&DP_RX_META_MAGIC.to_ne_bytes());
        assert_eq!(take_rx_stamp(&mut m), Some(123_456_789));
        assert_eq!(take_rx_stamp(&mut m), None, "the magic is cleared: a reused buffer shows no stale stamp");
        assert_eq!(take_rx_stamp(&mut m[..8]), None, "too short");
    }
}

//! detpath's own XDP filter programs (the C in `bpf/`, compiled at build
//! time): load one, write its filter, attach it, read its counters. Loading
//! and attaching are `detpath_sys::xdp`'s; this module knows only what the
//! programs share, `bpf/detpath_filter.h`: the match (IPv4/UDP to one
//! address and port; everything else `XDP_PASS`), the `dp_config` map (a
//! [`FilterConfig`]) and the `dp_stats` map ([`FilterStats`]).
//!
//! Used by the `afxdp` datapath (`bpf/xsk_redirect.bpf.c`) and the `xdppoll`
//! datapath (`bpf/xdppoll.bpf.c`).

//!
//! The structs the programs share with user space (`struct dp_filter_config`,
//! `struct dp_rx_meta`) are mirrored here as `#[repr(C)]` types with the C
//! field names, checked at compile time against the layout clang computes
//! for the headers (`build.rs`, `detpath_bpf_build::layout_checks`): a
//! header change the mirrors do not follow fails the build.

#[macro_use]
mod layout {
    include!(concat!(env!("OUT_DIR"), "/filter_layout.rs"));
}

use crate::error::Result;
use detpath_sys::xdp::{self, XdpLink, XdpMode};
use detpath_sys::NetDev;
use libbpf_rs::{MapCore, MapFlags, MapHandle, Object};
use std::net::Ipv4Addr;

/// What the program matches: IPv4/UDP frames to this destination address
/// and port, or (`ethertype` not 0) Ethernet frames of that EtherType.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterConfig {
    /// The IPv4 destination address matched (the endpoint's own).
    pub addr: Ipv4Addr,
    /// The UDP destination port matched, host order (the map gets it in network order).
    pub port: u16,
    /// 0: match by address and port; else match frames of this EtherType.
    pub ethertype: u16,
    /// Time-stamp each matched frame in the program (`DP_CFG_RX_STAMP`).
    pub rx_stamp: bool,
}

/// `DP_CFG_RX_STAMP` in bpf/detpath_filter.h.
const DP_CFG_RX_STAMP: u32 = layout::DP_CFG_RX_STAMP as u32;
/// `DP_RX_META_MAGIC` in bpf/detpath_meta.h.
const DP_RX_META_MAGIC: u32 = layout::DP_RX_META_MAGIC as u32;

/// `struct dp_filter_config` (bpf/detpath_filter.h): network byte order
/// but `flags` (host order).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct DpFilterConfig {
    addr: [u8; 4],
    port: [u8; 2],
    ethertype: [u8; 2],
    flags: u32,
}
check_dp_filter_config!(DpFilterConfig);

/// `struct dp_rx_meta` (bpf/detpath_meta.h), host order.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct DpRxMeta {
    rx_ns: u64,
    magic: u32,
    reserved: u32,
}
check_dp_rx_meta!(DpRxMeta);

/// Bytes of `struct dp_rx_meta` in front of a frame that carries one.
pub(crate) const RX_META_LEN: usize = std::mem::size_of::<DpRxMeta>();

/// The byte range of a field of `T`, e.g. `field_range!(DpRxMeta, magic: u32)`.
macro_rules! field_range {
    ($t:ty, $f:ident: $ft:ty) => {
        std::mem::offset_of!($t, $f)..std::mem::offset_of!($t, $f) + std::mem::size_of::<$ft>()
    };
}

/// Takes the program's receive time stamp from the `struct dp_rx_meta` at
/// `meta` (the RX_META_LEN bytes in front of a received frame) and clears
/// its magic, so a reused buffer never shows a stale stamp. `None` when the
/// program did not write one for this frame (or `meta` is too short).
pub(crate) fn take_rx_stamp(meta: &mut [u8]) -> Option<u64> {
    let meta = meta.get_mut(..RX_META_LEN)?;
    let magic_at = field_range!(DpRxMeta, magic: u32);
    let magic = u32::from_ne_bytes(meta[magic_at.clone()].try_into().expect("4 bytes"));
    meta[magic_at].fill(0);
    (magic == DP_RX_META_MAGIC).then(|| u64::from_ne_bytes(meta[field_range!(DpRxMeta, rx_ns: u64)].try_into().expect("8 bytes")))
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
    /// The bytes of `struct dp_filter_config` (`bpf/detpath_filter.h`).
    fn to_bytes(self) -> [u8; std::mem::size_of::<DpFilterConfig>()] {
        let c = DpFilterConfig {
            addr: self.addr.octets(),
            port: self.port.to_be_bytes(),
            ethertype: self.ethertype.to_be_bytes(),
            flags: if self.rx_stamp { DP_CFG_RX_STAMP } else { 0 },
        };
        let mut b = [0u8; std::mem::size_of::<DpFilterConfig>()];
        b[field_range!(DpFilterConfig, addr: [u8; 4])].copy_from_slice(&c.addr);
        b[field_range!(DpFilterConfig, port: [u8; 2])].copy_from_slice(&c.port);
        b[field_range!(DpFilterConfig, ethertype: [u8; 2])].copy_from_slice(&c.ethertype);
        b[field_range!(DpFilterConfig, flags: u32)].copy_from_slice(&c.flags.to_ne_bytes());
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

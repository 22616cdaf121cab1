//! What feeds an AF_XDP socket: detpath's own redirect program, or
//! (`xdp=shared`) the XDP program already attached to the interface, such as
//! `detpath classify`'s, whose XSKMAP the socket joins at its queue.
//!
//! The shared case is how a classifier in one process hands a prioritised
//! flow to a deterministic endpoint in another: the endpoint finds the
//! attached program's id, reads its map ids from the kernel, opens the one
//! XSKMAP among them by id (needs CAP_SYS_ADMIN) and inserts its socket. No
//! pinning, so no bpffs mount is needed. On drop it removes its socket again.

use crate::datapath::filter::{FilterConfig, FilterProgram, FilterStats};
use crate::error::{Error, Result};
use detpath_sys::xdp::{self, XdpMode};
use detpath_sys::NetDev;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};
use std::os::fd::RawFd;

pub(super) enum XdpFeed {
    Own(FilterProgram),
    Shared { xsks: MapHandle, queue: u32, prog_id: u32, mode: Option<XdpMode>, iface: String },
}

impl XdpFeed {
    /// Attaches detpath's redirect program (refusing an interface that has one
    /// already) and puts `xsk` in its XSKMAP at `queue`.
    pub(super) fn own(object: &'static [u8], dev: &NetDev, mode: Option<XdpMode>, filter: FilterConfig, queue: u32, xsk: RawFd) -> Result<XdpFeed> {
        let prog = FilterProgram::attach(object, "xsk_redirect", dev, mode, filter)?;
        insert(&prog.map_handle("xsks_map")?, queue, xsk, "xsks_map")?;
        Ok(XdpFeed::Own(prog))
    }

    /// Joins the XSKMAP of the program already attached to `dev`.
    pub(super) fn shared(dev: &NetDev, queue: u32, xsk: RawFd) -> Result<XdpFeed> {
        let attached = xdp::query(dev.ifindex)?;
        let Some(prog_id) = attached.any() else {
            return Err(Error::Unsupported {
                datapath: "afxdp",
                what: format!("`xdp=shared` on `{}`: no XDP program is attached there; start the program that owns the XSKMAP first (e.g. `detpath classify serve --iface {}`), or drop `xdp=shared`", dev.name, dev.name),
            });
        };
        let mode = attached.mode_of(prog_id);
        let mut xskmaps: Vec<(u32, MapHandle)> = xdp::program_maps(prog_id)?.into_iter().filter(|(_, m)| m.map_type() == MapType::Xskmap).collect();
        let (map_id, xsks) = match xskmaps.len() {
            1 => xskmaps.remove(0),
            0 => {
                return Err(Error::Unsupported {
                    datapath: "afxdp",
                    what: format!("`xdp=shared`: XDP program id {prog_id} on `{}` has no XSKMAP to join", dev.name),
                })
            }
            n => {
                return Err(Error::Unsupported {
                    datapath: "afxdp",
                    what: format!("`xdp=shared`: XDP program id {prog_id} on `{}` has {n} XSKMAPs; which one to join is ambiguous", dev.name),
                })
            }
        };
        insert(&xsks, queue, xsk, &format!("XSKMAP id {map_id}"))?;
        Ok(XdpFeed::Shared { xsks, queue, prog_id, mode, iface: dev.name.clone() })
    }

    pub(super) fn prog_id(&self) -> u32 {
        match self {
            XdpFeed::Own(p) => p.prog_id(),
            XdpFeed::Shared { prog_id, .. } => *prog_id,
        }
    }

    pub(super) fn mode(&self) -> Option<XdpMode> {
        match self {
            XdpFeed::Own(p) => Some(p.mode()),
            XdpFeed::Shared { mode, .. } => *mode,
        }
    }

    pub(super) fn iface(&self) -> &str {
        match self {
            XdpFeed::Own(p) => p.iface(),
            XdpFeed::Shared { iface, .. } => iface,
        }
    }

    /// Our program's counters; a shared program's are its owner's (zeros here).
    pub(super) fn stats(&self) -> FilterStats {
        match self {
            XdpFeed::Own(p) => p.stats(),
            XdpFeed::Shared { .. } => FilterStats::default(),
        }
    }

    /// Lines for the capabilities' notes.
    pub(super) fn notes(&self) -> Vec<String> {
        match self {
            XdpFeed::Own(p) => {
                let mut v = p.notes().to_vec();
                v.push(format!("XDP program xsk_redirect id {}", p.prog_id()));
                v
            }
            XdpFeed::Shared { prog_id, queue, .. } => {
                vec![format!("xdp=shared: fed by XDP program id {prog_id} (not ours) through its XSKMAP slot {queue}; it decides which frames come here")]
            }
        }
    }
}

impl Drop for XdpFeed {
    fn drop(&mut self) {
        if let XdpFeed::Shared { xsks, queue, .. } = self {
            // The kernel also clears the slot when the socket closes; this makes it immediate.
            let _ = xsks.delete(&queue.to_ne_bytes());
        }
    }
}

fn insert(map: &MapHandle, queue: u32, xsk: RawFd, name: &str) -> Result<()> {
    map.update(&queue.to_ne_bytes(), &(xsk as u32).to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| detpath_sys::Error::Bpf { what: format!("registering the AF_XDP socket at queue {queue} in {name}"), source: e }.into())
}

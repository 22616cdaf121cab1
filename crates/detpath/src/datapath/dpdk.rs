//! The `dpdk` datapath: Debian's DPDK (EAL + a poll-mode driver) behind the
//! same [`Endpoint`] as the kernel datapaths, sending the same
//! Ethernet/IPv4/UDP frames (built and parsed by `detpath-wire`), so a DPDK
//! endpoint talks to a kernel UDP socket.
//!
//! # Spec forms
//!
//! ```text
//! dpdk://<pci address>?addr=A&port=P[&...]      a real port bound to vfio-pci
//! dpdk://<iface>?port=P[&addr=A][&vdev=af_xdp]  a DPDK virtual device over a Linux interface
//! ```
//!
//! Keys (besides the common `addr`, `port`, `queue`, `ring`, `batch`, `checksum`):
//!
//! | key          | default   | meaning |
//! |--------------|-----------|---------|
//! | `vdev`       | `af_xdp`  | virtual device over the interface: `af_xdp` (net_af_xdp, fastest on veth), `af_packet`, `tap` (net_tap with `remote=<iface>`) |
//! | `neigh`      | —         | static neighbours, `IP@MAC[,IP@MAC...]`; others are resolved by ARP |
//! | `mbufs`      | 8191      | mbufs in the endpoint's pool (data room 2048 B each) |
//! | `mem`        | 256       | MB of memory for the EAL (`-m`), shared by all endpoints of the process |
//! | `huge`       | `auto`    | `on`: use hugepages or fail with the fix; `off`: `--no-huge`; `auto`: hugepages when enough are free |
//! | `arp_timeout`| 1000      | ms after which a peer that did not answer ARP counts as unresolved (its datagrams are then dropped and counted in `tx_no_neigh` for 1 s; sends never wait for it) |
//! | `log`        | `error`   | DPDK log level: error, warning, notice, info, debug |
//! | `group`      | —         | also receive UDP datagrams to this IPv4 multicast group and port, `A:P` (e.g. RTPS's SPDP group `239.255.0.1:7400`) |
//!
//! `ring` sets the RX and TX descriptor counts (adjusted to the driver's
//! limits), `batch` the burst size (at most 512).
//!
//! # What the endpoint does because DPDK owns the port
//!
//! The kernel no longer sees the port's traffic, so the endpoint answers ARP
//! requests for its own address and resolves its peers with ARP requests (a
//! fixed-size cache; `neigh=` entries are static). Frames not for the
//! endpoint are dropped and counted in `rx_not_for_me`. Sending is on-link
//! only: the destination is ARPed directly (no gateway); a multicast
//! destination goes to its Ethernet group address (no ARP).
//!
//! Nor does the kernel see the port's multicast, so a socket joined to a
//! group on the interface would hear nothing: `group=A:P` makes the endpoint
//! itself take datagrams to that group and port besides its own address (the
//! frame reaches the queue on a veth, which filters no MAC; on a NIC the
//! port must accept the group's MAC, e.g. promiscuous).
//!
//! # Host changes, undone
//!
//! On a virtual device the endpoint snapshots the interface's flags
//! (promiscuous, up), neighbour entries (`ip neigh`) and XDP attachment
//! before creating the device, and restores them when it closes (drop) or the
//! process is stopped by SIGINT/SIGTERM ([`crate::sys::cleanup`]): stopping a DPDK
//! port on a veth wipes its neighbour entries, even permanent ones, and
//! net_af_xdp attaches its own XDP program.
//!
//! # The EAL
//!
//! Initialised once per process by the first endpoint (see `dpdk/eal.rs` for the
//! arguments): `--no-huge -m <mem> --no-shconf` without hugepages,
//! `--in-memory -m <mem>` with them, `--no-pci` for virtual devices, a
//! per-process `--file-prefix`. Later endpoints share it and hot-plug their
//! device; one that needs different EAL options is refused clearly.
//!
//! # Receive modes
//!
//! `BusyPoll` spins on the RX queue. `Blocking` on net_af_xdp sleeps in
//! poll(2) on the driver's AF_XDP socket, so the kernel wakes it when a
//! frame lands; net_af_packet, net_tap and PCI ports have no socket to
//! sleep on, so there it polls with 20 µs naps (about 120 µs each on a VM).
//!
//! Built only with the `dpdk` cargo feature (default); without it, opening
//! says the build lacks DPDK and how to rebuild.

use crate::datapath::entry::{Datapath, FrameDatapath, GroupReception};
use crate::datapath::keys;
use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::frame::FrameEndpoint;
use crate::spec::EndpointSpec;
use detpath_wire::MacAddr;
use std::net::{Ipv4Addr, SocketAddrV4};

#[cfg(feature = "dpdk")]
mod eal;
#[cfg(feature = "dpdk")]
mod host;
#[cfg(feature = "dpdk")]
mod port;

#[cfg(feature = "dpdk")]
pub(crate) use eal::route_library_logs;
/// Without DPDK in the build there is no EAL or af_xdp driver to route.
#[cfg(not(feature = "dpdk"))]
pub(crate) fn route_library_logs(_file: &std::fs::File, _tee: bool) -> std::io::Result<()> {
    Ok(())
}

/// The `dpdk` datapath's registry entry: its keys, its datagram opener,
/// and its frame side ([`FRAME_DATAPATH`]).
pub(crate) static DATAPATH: Datapath = Datapath {
    name: "dpdk",
    display: "DPDK",
    summary: "DPDK poll-mode driver (real port by PCI address, or net_af_xdp over an interface)",
    arrival_stamp: Some("rx_stamp=xdp"),
    group_reception: GroupReception::Endpoint,
    keys: &["queue", "ring", "batch", "vdev", "neigh", "mbufs", "mem", "huge", "arp_timeout", "log", "rx_stamp", "group"],
    open: Some(open),
    frames: Some(&FRAME_DATAPATH),
};

// The error type is defined at the bottom of the crate (error.rs), so no import runs back up here.
pub use crate::error::DpdkError;

/// Which virtual device to put over a Linux interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vdev {
    /// net_af_xdp: an AF_XDP socket under DPDK (its own XDP program on the interface).
    AfXdp,
    /// net_af_packet: a PACKET_MMAP socket; the kernel stack also sees every frame.
    AfPacket,
    /// net_tap with `remote=<iface>`: a tap device fed by TC redirect rules.
    Tap,
}

impl Vdev {
    /// The DPDK driver name that creates it (the devargs prefix).
    pub fn driver(self) -> &'static str {
        match self {
            Vdev::AfXdp => "net_af_xdp",
            Vdev::AfPacket => "net_af_packet",
            Vdev::Tap => "net_tap",
        }
    }
}

/// Hugepage policy: the `huge` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hugepages {
    /// Hugepages when enough are free for `mem=`, else `--no-huge` (the default).
    Auto,
    /// Hugepages, or an error with the command that reserves them.
    On,
    /// `--no-huge`: ordinary memory (fine for virtual devices, not for DMA to a real NIC).
    Off,
}

/// The DPDK-specific settings of a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// PCI address for a real port; `None` for a virtual device over `iface`.
    pub pci: Option<String>,
    /// The Linux interface a virtual device is put over; `None` for a PCI port.
    pub iface: Option<String>,
    /// Which virtual device (`vdev=`; ignored for a PCI port).
    pub vdev: Vdev,
    /// Static neighbours (`neigh=IP@MAC,...`): never ARPed.
    pub neigh: Vec<(Ipv4Addr, MacAddr)>,
    /// mbufs in the endpoint's pool (`mbufs=`, 512 to 2^20; default 8191).
    pub mbufs: u32,
    /// The EAL's memory (`mem=`, `-m`), MB; shared by every endpoint of the process.
    pub mem_mb: u32,
    /// True when the spec gave `mem=`: an EAL already running with another size is then an error.
    pub mem_explicit: bool,
    /// Hugepage policy (`huge=`).
    pub hugepages: Hugepages,
    /// How long a peer may take to answer ARP before its sends fail (`arp_timeout=`), ms.
    pub arp_timeout_ms: u64,
    /// DPDK's log level by name (`log=`: emergency, error, warning, notice, info, debug).
    pub log_level: String,
    /// Most mbufs one RX or TX burst moves (`batch=`, at most 512).
    pub burst: u16,
    /// RX and TX descriptors asked for (`ring=`, at most 16384; the driver may adjust).
    pub ring: u16,
    /// The interface's queue a virtual device serves (`queue=`, default 0; a PCI port uses 0).
    pub queue: u32,
    /// Verify UDP checksums on receive (`checksum=verify`, default; `skip` accepts partial ones).
    pub verify_checksum: bool,
    /// A frame endpoint of this EtherType (the frame datapath); `None`: UDP.
    pub ethertype: Option<u16>,
    /// `rx_stamp=xdp`: net_af_xdp loads our time-stamping program (bpf/xsk_stamp.bpf.c).
    pub xdp_stamp: bool,
    /// `group=A:P`: datagrams to this multicast group and port are received too.
    pub group: Option<SocketAddrV4>,
}

/// True for `0000:03:00.0` or `03:00.0`.
pub(crate) fn is_pci_address(s: &str) -> bool {
    let (dom, rest) = match s.matches(':').count() {
        2 => s.split_once(':').unwrap_or(("", s)),
        1 => ("0000", s),
        _ => return false,
    };
    let Some((bus_dev, func)) = rest.rsplit_once('.') else { return false };
    let Some((bus, dev)) = bus_dev.split_once(':') else { return false };
    let hex = |x: &str, n: usize| x.len() == n && x.chars().all(|c| c.is_ascii_hexdigit());
    hex(dom, 4) && hex(bus, 2) && hex(dev, 2) && func.len() == 1 && func.chars().all(|c| ('0'..='7').contains(&c))
}

impl Config {
    /// Reads and checks the DPDK keys of `spec`.
    pub(crate) fn from_spec(spec: &EndpointSpec) -> Result<Config> {
        let bad = |why: String| Error::BadSpec { spec: spec.to_string(), why };
        let num = |k: &str, d: u64, lo: u64, hi: u64| -> Result<u64> {
            match spec.extra.get(k) {
                None => Ok(d),
                Some(v) => match v.parse::<u64>() {
                    Ok(n) if (lo..=hi).contains(&n) => Ok(n),
                    _ => Err(bad(format!("`{k}` takes a number from {lo} to {hi}, not `{v}`"))),
                },
            }
        };
        let (pci, iface) = match (&spec.device, &spec.iface) {
            (Some(d), _) if is_pci_address(d) => (Some(d.clone()), None),
            (Some(d), _) => return Err(bad(format!("`{d}` is neither a PCI address (0000:03:00.0) nor an interface name"))),
            (None, Some(i)) if is_pci_address(i) => (Some(i.clone()), None),
            (None, Some(i)) => (None, Some(i.clone())),
            (None, None) => {
                return Err(bad("the dpdk datapath needs a PCI address (`dpdk://0000:03:00.0?addr=A&port=P`) or an interface (`dpdk://veth0?port=P`)".into()))
            }
        };
        if pci.is_some() && spec.addr.is_none() {
            return Err(bad("a PCI port needs `addr=<IPv4>`: DPDK owns the port, so the kernel has no address for it".into()));
        }
        let vdev = match spec.extra.get("vdev").map(String::as_str) {
            None | Some("af_xdp") | Some("net_af_xdp") => Vdev::AfXdp,
            Some("af_packet") | Some("net_af_packet") => Vdev::AfPacket,
            Some("tap") | Some("net_tap") => Vdev::Tap,
            Some(v) => return Err(bad(format!("`vdev` takes af_xdp, af_packet or tap, not `{v}`"))),
        };
        if pci.is_some() && spec.extra.contains_key("vdev") {
            return Err(bad("`vdev` is for an interface, not a PCI port".into()));
        }
        let mut neigh = Vec::new();
        if let Some(list) = spec.extra.get("neigh") {
            for item in list.split(',').filter(|s| !s.is_empty()) {
                let parsed = item.split_once('@').and_then(|(ip, mac)| Some((ip.parse::<Ipv4Addr>().ok()?, MacAddr::parse(mac)?)));
                match parsed {
                    Some(p) => neigh.push(p),
                    None => return Err(bad(format!("`neigh` takes IP@MAC[,IP@MAC...], e.g. 10.0.0.2@02:00:00:00:00:02, not `{item}`"))),
                }
            }
        }
        let hugepages = match spec.extra.get("huge").map(String::as_str) {
            None | Some("auto") => Hugepages::Auto,
            Some("on") | Some("true") | Some("yes") | Some("1") => Hugepages::On,
            Some("off") | Some("false") | Some("no") | Some("0") => Hugepages::Off,
            Some(v) => return Err(bad(format!("`huge` takes on, off or auto, not `{v}`"))),
        };
        let log_level = spec.extra.get("log").cloned().unwrap_or_else(|| "error".into());
        if !["emergency", "error", "warning", "notice", "info", "debug"].contains(&log_level.as_str()) {
            return Err(bad(format!("`log` takes error, warning, notice, info or debug, not `{log_level}`")));
        }
        let queue: u32 = spec.key("queue", 0, |v| keys::number("queue", v))?;
        let ring = spec.key("ring", 2048, keys::ring)?;
        let batch = spec.key("batch", 64, keys::batch)?;
        let verify_checksum = spec.key("checksum", true, keys::checksum)?;
        if queue != 0 && pci.is_some() {
            return Err(bad("a PCI port uses queue 0 only".into()));
        }
        if ring > 16384 {
            return Err(bad(format!("`ring` at most 16384 for DPDK, not {ring}")));
        }
        let burst = batch.min(512) as u16;
        let xdp_stamp = spec.rx_stamp(&[crate::RxStamp::Xdp])? == crate::RxStamp::Xdp;
        if xdp_stamp && (pci.is_some() || vdev != Vdev::AfXdp) {
            return Err(bad("`rx_stamp=xdp` needs `vdev=af_xdp` over an interface (the stamp is written by the XDP program net_af_xdp loads)".into()));
        }
        let mbufs = num("mbufs", 8191, 512, 1 << 20)? as u32;
        let group = match spec.extra.get("group") {
            None => None,
            Some(v) => match v.parse::<SocketAddrV4>() {
                Ok(g) if g.ip().is_multicast() && g.port() != 0 => Some(g),
                _ => return Err(bad(format!("`group` takes an IPv4 multicast group and port, e.g. 239.255.0.1:7400, not `{v}`"))),
            },
        };
        Ok(Config {
            pci,
            iface,
            vdev,
            neigh,
            mbufs,
            mem_mb: num("mem", 256, 64, 1 << 20)? as u32,
            mem_explicit: spec.extra.contains_key("mem"),
            hugepages,
            arp_timeout_ms: num("arp_timeout", 1000, 1, 60_000)?,
            log_level,
            burst,
            ring: ring as u16,
            queue,
            verify_checksum,
            ethertype: None,
            xdp_stamp,
            group,
        })
    }
}

/// The frame datapath on the same port, pool and queues: frames of the
/// spec's `port` as EtherType (`dpdk://dpa?port=7400`); ARP is not
/// answered (the endpoint has no IPv4 address of its own then).
pub static FRAME_DATAPATH: FrameDatapath = FrameDatapath {
    name: "dpdk",
    summary: "DPDK poll-mode driver carrying frames of one EtherType",
    keys: &["queue", "ring", "batch", "vdev", "mbufs", "mem", "huge", "log", "rx_stamp"],
    open: open_frames,
};

fn open(spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    let cfg = Config::from_spec(spec)?;
    #[cfg(feature = "dpdk")]
    {
        Ok(Box::new(port::open(spec, cfg)?))
    }
    #[cfg(not(feature = "dpdk"))]
    {
        let _ = cfg;
        Err(no_dpdk())
    }
}

fn open_frames(spec: &EndpointSpec) -> Result<Box<dyn FrameEndpoint>> {
    let mut cfg = Config::from_spec(spec)?;
    let ethertype = spec.require_port()?;
    if ethertype < 0x0600 {
        return Err(Error::BadSpec { spec: spec.to_string(), why: format!("EtherType {ethertype} (the `port` key) is an 802.3 length; use at least 1536") });
    }
    cfg.ethertype = Some(ethertype);
    #[cfg(feature = "dpdk")]
    {
        Ok(Box::new(port::open(spec, cfg)?))
    }
    #[cfg(not(feature = "dpdk"))]
    {
        let _ = cfg;
        Err(no_dpdk())
    }
}

#[cfg(not(feature = "dpdk"))]
fn no_dpdk() -> Error {
    Error::Unsupported {
        datapath: "dpdk",
        what: "opening an endpoint in this build, which lacks DPDK (built without the `dpdk` cargo feature); install DPDK with `apt-get install libdpdk-dev pkg-config` (or `make deps`) and rebuild with default features".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(s: &str) -> Result<Config> {
        Config::from_spec(&s.parse().unwrap())
    }

    #[test]
    fn pci_addresses() {
        for ok in ["0000:03:00.0", "03:00.0", "0000:af:1f.7"] {
            assert!(is_pci_address(ok), "{ok}");
        }
        for no in ["veth0", "0000:03:00", "0000:03:00.8", "03.00.0", "1:2:3:4", "zzzz:03:00.0"] {
            assert!(!is_pci_address(no), "{no}");
        }
    }

    #[test]
    fn spec_forms() {
        let c = cfg("dpdk://0000:03:00.0?addr=10.0.0.1&port=7000").unwrap();
        assert_eq!(c.pci.as_deref(), Some("0000:03:00.0"));
        let c = cfg("dpdk://veth0?port=7000&vdev=af_packet&neigh=10.0.0.2@02:00:00:00:00:02,10.0.0.3@02:00:00:00:00:03&mbufs=4095&huge=off").unwrap();
        assert_eq!((c.iface.as_deref(), c.vdev, c.hugepages, c.mbufs), (Some("veth0"), Vdev::AfPacket, Hugepages::Off, 4095));
        assert_eq!(c.neigh.len(), 2);
        assert_eq!(c.neigh[1], ("10.0.0.3".parse().unwrap(), MacAddr([2, 0, 0, 0, 0, 3])));
        assert_eq!(cfg("dpdk://veth0?port=1").unwrap().vdev, Vdev::AfXdp);
        assert_eq!(cfg("dpdk://veth0?port=1").unwrap().group, None);
        assert_eq!(cfg("dpdk://veth0?port=1&group=239.255.0.1:7400").unwrap().group, Some("239.255.0.1:7400".parse().unwrap()));
    }

    #[test]
    fn spec_errors_name_the_key() {
        for (s, needle) in [
            ("dpdk://0000:03:00.0?port=7", "addr="),
            ("dpdk://veth0?port=7&vdev=pcap", "`vdev`"),
            ("dpdk://veth0?port=7&neigh=10.0.0.2", "IP@MAC"),
            ("dpdk://veth0?port=7&neigh=10.0.0.2@zz", "IP@MAC"),
            ("dpdk://veth0?port=7&huge=maybe", "`huge`"),
            ("dpdk://veth0?port=7&mbufs=3", "`mbufs`"),
            ("dpdk://veth0?port=7&log=loud", "`log`"),
            ("dpdk://veth0?port=7&group=10.0.0.2:7400", "`group`"),
            ("dpdk://veth0?port=7&group=239.255.0.1", "`group`"),
        ] {
            let e = cfg(s).unwrap_err().to_string();
            assert!(e.contains(needle), "{s}: {e}");
        }
        let spec: EndpointSpec = "dpdk://veth0?port=7&colour=blue".parse().unwrap();
        assert!(DATAPATH.check_keys(&spec).unwrap_err().to_string().contains("dpdk datapath has no key `colour`"));
    }

    #[test]
    fn errors_round_trip_through_error() {
        let e: Error = DpdkError::PortInUse { device: "x".into(), by: "here".into() }.into();
        assert!(matches!(DpdkError::of(&e), Some(DpdkError::PortInUse { .. })));
        assert!(e.to_string().contains("already in use"), "{e}");
        assert!(DpdkError::of(&Error::Sys(detpath_sys::Error::NoSuchInterface { iface: "x".into() })).is_none());
    }
}

//! The DPDK endpoint: one port, one RX and one TX queue, one mbuf pool.
//!
//! Hot path: `rx_burst` into a preallocated array, each frame classified
//! (ARP answered on the spot, UDP for us queued as the mbuf itself, anything
//! else dropped and counted), payloads copied out of the mbuf into the
//! caller's buffer; sends allocate mbufs from the pool, build the frame in
//! place with `build_udp_frame` and `tx_burst` them. No heap allocation, no
//! lock, no syscall beyond what the PMD does (net_af_xdp kicks the kernel
//! with `sendto` when its TX ring needs it).

use super::eal;
use super::host::HostState;
use super::{Config, DpdkError, Vdev};
use crate::endpoint::{monotonic_ns, Capabilities, Counters, Endpoint, RecvMode, RxBatch, RxMeta, TxDatagram};
use crate::error::{Error, Result};
use crate::spec::EndpointSpec;
use detpath_dpdk_sys as sys;
use detpath_sys::cleanup::{self, CleanupHandle};
use detpath_sys::netns;
use detpath_sys::xdp;
use detpath_sys::NetDev;
use detpath_sys::XdpMode;
use detpath_wire::arp::{self, ArpOp, ArpPacket};
use detpath_wire::{build_udp_frame, parse_udp_frame, FrameError, MacAddr, UdpFrameHeader, HEADERS_LEN};
use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Ethernet minimum frame without FCS; shorter frames are zero-padded.
const MIN_FRAME: usize = 60;
/// Received datagrams held for the caller (while resolving a peer, say).
const PENDING: usize = 1024;
/// Neighbour cache slots (static entries may add more).
const NEIGH_SLOTS: usize = 64;
/// ARP requests are repeated this often while resolving.
const ARP_RETRY: Duration = Duration::from_millis(200);
/// A send gives up when the TX queue stays full this long.
const TX_STALL: Duration = Duration::from_millis(200);
/// How long a port's link may take to come up after start.
const LINK_WAIT: Duration = Duration::from_secs(3);
/// How long opening waits for a just-closed AF_XDP socket to release its queue.
const QUEUE_RELEASE_WAIT: Duration = Duration::from_secs(1);
/// Nap between empty polls in `RecvMode::Blocking`.
const BLOCKING_NAP: Duration = Duration::from_micros(20);
/// Data bytes of one mbuf (RTE_MBUF_DEFAULT_BUF_SIZE minus the headroom).
const MBUF_DATA: usize = 2048;

static NEXT_ID: AtomicU32 = AtomicU32::new(0);
static CLAIMED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A port claimed by an endpoint of this process; released on drop.
struct Claim(String);

impl Claim {
    fn take(key: String, device: &str) -> Result<Claim> {
        let mut c = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        if c.contains(&key) {
            return Err(DpdkError::PortInUse { device: device.to_string(), by: "by another dpdk endpoint of this process; close it first".into() }.into());
        }
        c.push(key.clone());
        Ok(Claim(key))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut c = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        c.retain(|k| k != &self.0);
    }
}

fn call_err(what: impl Into<String>, code: i32) -> Error {
    DpdkError::Call { what: what.into(), code, msg: sys::strerror(code) }.into()
}

/// What to put back on the host, shared between the endpoint and its signal undo.
struct Restore {
    host: HostState,
    /// XDP program ids (driver, skb) the PMD attached.
    xdp: (u32, u32),
}

/// Owns what opening did, and undoes it on drop, in this order: stop and
/// close the port, remove the device, free the pool, restore the host.
struct PortOwner {
    port: Option<u16>,
    bus: &'static str,
    dev_name: String,
    probed: bool,
    pool: *mut sys::rte_mempool,
    /// net_af_xdp's socket (fd, inode), closed after the port if DPDK leaked it.
    xsk: Option<(i32, u64)>,
    ns: Option<Arc<File>>,
    restore: Arc<Mutex<Option<Restore>>>,
    _cleanup: Option<CleanupHandle>,
    _claim: Claim,
}

/// What [`teardown`] undoes on the DPDK side (plain data, so it can move to
/// the thread that runs in the endpoint's namespace).
#[derive(Clone, Copy)]
struct DeviceParts {
    port: Option<u16>,
    probed: bool,
    pool: usize,
    xsk: Option<(i32, u64)>,
}

/// Stops and closes the port, closes a leaked AF_XDP socket, removes the
/// device, frees the pool. Runs in the endpoint's namespace (net_af_xdp
/// detaches its XDP program by ifindex, which is per namespace).
fn teardown(d: DeviceParts, bus: &str, name: &str) {
    if let Some(p) = d.port {
        // SAFETY: p is a port this endpoint configured; nothing else uses it (its owner is going).
        unsafe {
            sys::detpath_dpdk_port_stop(p);
            sys::detpath_dpdk_port_close(p);
        }
    }
    if let Some((fd, ino)) = d.xsk {
        release_leaked_xsk(fd, ino);
    }
    if d.probed {
        let (b, n) = (CString::new(bus).unwrap_or_default(), CString::new(name).unwrap_or_default());
        // SAFETY: valid C strings; the device's port was closed above.
        unsafe { sys::detpath_dpdk_hotplug_remove(b.as_ptr(), n.as_ptr()) };
    }
    if d.pool != 0 {
        // SAFETY: the pool was created by this endpoint; the port that used it is closed.
        unsafe { sys::detpath_dpdk_pool_free(d.pool as *mut sys::rte_mempool) };
    }
}

impl PortOwner {
    fn parts(&self) -> DeviceParts {
        DeviceParts { port: self.port, probed: self.probed, pool: self.pool as usize, xsk: self.xsk }
    }

    /// Undoes the DPDK side only, on the calling thread (already in the
    /// endpoint's namespace), so opening can try again.
    fn release_device(&mut self) {
        teardown(self.parts(), self.bus, &self.dev_name);
        self.port = None;
        self.probed = false;
        self.pool = std::ptr::null_mut();
        self.xsk = None;
    }
}

impl Drop for PortOwner {
    fn drop(&mut self) {
        let parts = self.parts();
        let (bus, name) = (self.bus, self.dev_name.clone());
        let restore = self.restore.clone();
        let work = move || {
            teardown(parts, bus, &name);
            let r = restore.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(r) = r {
                for f in r.host.restore(r.xdp) {
                    eprintln!("detpath: dpdk: could not restore {f}");
                }
            }
        };
        let done = match &self.ns {
            Some(ns) => netns::run_on_thread_in(ns, work),
            None => {
                work();
                Ok(())
            }
        };
        if let Err(e) = done {
            eprintln!("detpath: dpdk: closing {}: {e}", self.dev_name);
        }
    }
}

/// One received datagram still in its mbuf.
#[derive(Clone, Copy)]
struct Pending {
    m: *mut sys::rte_mbuf,
    data: *const u8,
    len: u16,
    peer: SocketAddrV4,
    rx_ns: u64,
}

#[derive(Clone, Copy)]
struct NeighEntry {
    ip: Ipv4Addr,
    mac: MacAddr,
    fixed: bool,
    stamp: u64,
}

/// Fixed-capacity neighbour cache: static entries stay, learned ones are
/// replaced oldest first when full.
struct NeighCache {
    entries: Vec<NeighEntry>,
    cap: usize,
    clock: u64,
}

impl NeighCache {
    fn new(fixed: &[(Ipv4Addr, MacAddr)]) -> NeighCache {
        let cap = NEIGH_SLOTS + fixed.len();
        let mut entries = Vec::with_capacity(cap);
        entries.extend(fixed.iter().map(|&(ip, mac)| NeighEntry { ip, mac, fixed: true, stamp: 0 }));
        NeighCache { entries, cap, clock: 0 }
    }

    fn get(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.entries.iter().find(|e| e.ip == ip).map(|e| e.mac)
    }

    fn learn(&mut self, ip: Ipv4Addr, mac: MacAddr) {
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

pub(crate) struct DpdkEndpoint {
    port: u16,
    pool: *mut sys::rte_mempool,
    device: String,
    local: SocketAddrV4,
    mac: MacAddr,
    caps: Capabilities,
    counters: Counters,
    verify_checksum: bool,
    burst: u16,
    mbufs: u32,
    max_payload: usize,
    rx_buf: Vec<*mut sys::rte_mbuf>,
    tx_buf: Vec<*mut sys::rte_mbuf>,
    tx_macs: Vec<MacAddr>,
    pending: VecDeque<Pending>,
    pending_dropped: u64,
    neigh: NeighCache,
    /// Subnets of the interface, for the on-link check (empty: no check).
    subnets: Vec<(Ipv4Addr, u8)>,
    arp_timeout: Duration,
    ip_id: u16,
    stats_base: [u64; 8],
    _owner: PortOwner,
}

// SAFETY: the raw pointers are the endpoint's own mbuf pool and mbufs. DPDK
// lets any thread use a port's queue and a pool as long as one thread at a
// time uses the queue; the endpoint is the only user of its queue and `&mut
// self` on every call that touches it gives that exclusivity.
unsafe impl Send for DpdkEndpoint {}

fn on_link(subnets: &[(Ipv4Addr, u8)], ip: Ipv4Addr) -> bool {
    subnets.iter().any(|(a, p)| {
        let mask = if *p == 0 { 0 } else { u32::MAX << (32 - *p as u32) };
        u32::from(*a) & mask == u32::from(ip) & mask
    })
}

fn normalise_pci(p: &str) -> String {
    let p = p.to_ascii_lowercase();
    if p.matches(':').count() == 1 {
        format!("0000:{p}")
    } else {
        p
    }
}

/// Opens a `dpdk` endpoint (the calling thread's namespace is the endpoint's).
pub(crate) fn open(spec: &EndpointSpec, cfg: Config) -> Result<Box<dyn Endpoint>> {
    let port_no = spec.require_port()?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    match cfg.pci.clone() {
        Some(pci) => open_pci(spec, cfg, normalise_pci(&pci), port_no, id),
        None => open_vdev(spec, cfg, port_no, id),
    }
}

fn open_vdev(spec: &EndpointSpec, cfg: Config, port_no: u16, id: u32) -> Result<Box<dyn Endpoint>> {
    let iface = cfg.iface.clone().unwrap_or_default();
    let dev = NetDev::lookup(&iface)?;
    dev.require_up()?;
    let addr = dev.pick_ipv4(spec.addr)?;
    if spec.queue >= dev.queues {
        return Err(Error::NoSuchQueue { iface: iface.clone(), queue: spec.queue, count: dev.queues });
    }
    let ns = netns::current()?;
    let ino = netns::inode(&ns)?;
    let claim = Claim::take(format!("netns:{ino}/{iface}"), &iface)?;
    if cfg.vdev == Vdev::AfXdp {
        xdp::require_free(&dev)?;
    }
    let snapshot = HostState::snapshot(&iface)?;
    let eal = eal::ensure(&cfg)?;

    let (name, args) = match cfg.vdev {
        Vdev::AfXdp => (format!("net_af_xdp{id}"), format!("iface={iface},start_queue={},queue_count=1", spec.queue)),
        Vdev::AfPacket => (format!("net_af_packet{id}"), format!("iface={iface},qpairs=1")),
        Vdev::Tap => (format!("net_tap{id}"), format!("iface=dtap{id},remote={iface}")),
    };
    let devargs = format!("{name},{args}");

    // From here on, the owner undoes whatever has been done, on drop and on signals.
    let ns = Arc::new(ns);
    let restore = Arc::new(Mutex::new(Some(Restore { host: snapshot, xdp: (0, 0) })));
    let undo = {
        let (ns, restore) = (ns.clone(), restore.clone());
        cleanup::register(
            format!("DPDK device {devargs} (XDP program, promiscuity, neighbours)"),
            Box::new(move || {
                // DPDK itself is left alone (another thread may be polling it);
                // the kernel state it changed is put back, and the rest ends with the process.
                let r = restore.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(r) = r {
                    let _ = netns::run_on_thread_in(&ns, || r.host.restore(r.xdp));
                }
            }),
        )
    };
    let mut owner = PortOwner {
        port: None,
        bus: "vdev",
        dev_name: name.clone(),
        probed: false,
        pool: std::ptr::null_mut(),
        xsk: None,
        ns: Some(ns),
        restore,
        _cleanup: Some(undo),
        _claim: claim,
    };
    let t0 = Instant::now();
    let (port, facts) = loop {
        let port = probe_vdev(&mut owner, &devargs, &name, &iface, cfg.vdev)?;
        match configure(&mut owner, &cfg, port, id, &devargs) {
            Ok(facts) => break (port, facts),
            // The kernel frees a closed AF_XDP socket's hold on its queue in a
            // deferred work item: right after another endpoint on this queue
            // closed, binding fails (net_af_xdp says EINVAL) for a few ms.
            // net_af_xdp leaks mbufs on that failure, so start over cleanly.
            Err(Configure::QueueBusy) if t0.elapsed() < QUEUE_RELEASE_WAIT => {
                owner.release_device();
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Configure::QueueBusy) => {
                return Err(DpdkError::PortInUse {
                    device: format!("{iface} queue {}", spec.queue),
                    by: "by an AF_XDP socket the kernel has not let go of (net_af_xdp could not bind it for 1 s)".into(),
                }
                .into())
            }
            Err(Configure::Failed(e)) => return Err(e),
        }
    };
    let setup = Setup {
        device: iface.clone(),
        devargs,
        mac: dev.mac,
        mtu: dev.mtu,
        local: SocketAddrV4::new(addr, port_no),
        subnets: dev.ipv4.clone(),
        ifindex: Some(dev.ifindex),
        eal_note: eal.note(),
        queue: spec.queue,
    };
    finish(spec, &cfg, owner, port, facts, setup)
}

/// The inode of the socket behind `fd`, when `fd` is an AF_XDP socket.
fn xsk_inode(fd: i32) -> Option<u64> {
    let mut domain: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: an int option into a local of the right size.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_DOMAIN, (&mut domain as *mut libc::c_int).cast(), &mut len) };
    if r != 0 || domain != libc::AF_XDP {
        return None;
    }
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open (getsockopt succeeded); st is writable.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_ino)
}

/// Closes net_af_xdp's socket if DPDK 22.11 left it open (see the shim's
/// `detpath_dpdk_af_xdp_fd`), after unmapping any ring still mapped. Only
/// when `fd` still is the very socket recorded at setup.
fn release_leaked_xsk(fd: i32, ino: u64) {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if link != format!("socket:[{ino}]") {
        return; // DPDK closed it; the number may belong to someone else now.
    }
    let tag = format!("socket:[{ino}]");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    for line in maps.lines().filter(|l| l.trim_end().ends_with(&tag)) {
        let range = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = range.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                // SAFETY: a ring of the leaked socket that nothing uses any more (its port is closed).
                unsafe { libc::munmap(a as *mut libc::c_void, b - a) };
            }
        }
    }
    // SAFETY: fd is the leaked socket (checked above); nothing else refers to it.
    unsafe { libc::close(fd) };
}

/// Creates the virtual device and finds its port.
fn probe_vdev(owner: &mut PortOwner, devargs: &str, name: &str, iface: &str, vdev: Vdev) -> Result<u16> {
    let c = CString::new(devargs).map_err(|_| detpath_sys::Error::NoSuchInterface { iface: iface.to_string() })?;
    // SAFETY: c is a valid C string; the EAL is initialised.
    let r = unsafe { sys::detpath_dpdk_dev_probe(c.as_ptr()) };
    if r < 0 {
        let why = format!(
            "{} could not be created over `{iface}` ({}); run with `log=info` to see the driver's reason{}",
            vdev.driver(),
            sys::strerror(r),
            match vdev {
                Vdev::AfXdp => ", or try `vdev=af_packet`",
                Vdev::Tap => "; net_tap's remote mode needs the multiq qdisc and flower classifier (`modprobe sch_multiq cls_flower`), or use `vdev=af_xdp`",
                Vdev::AfPacket => "",
            }
        );
        return Err(if r == -libc::EBUSY || r == -libc::EEXIST {
            DpdkError::PortInUse { device: devargs.to_string(), by: "(the driver says busy)".into() }.into()
        } else {
            DpdkError::NoSuchPort { device: devargs.to_string(), why }.into()
        });
    }
    owner.probed = true;
    let port = port_by_name(name)
        .ok_or_else(|| Error::from(DpdkError::NoSuchPort { device: devargs.to_string(), why: "the device was created but has no ethdev port".into() }))?;
    owner.port = Some(port);
    Ok(port)
}

fn port_by_name(name: &str) -> Option<u16> {
    let c = CString::new(name).ok()?;
    let mut port = 0u16;
    // SAFETY: c is a valid C string, port a valid out-pointer.
    (unsafe { sys::detpath_dpdk_port_by_name(c.as_ptr(), &mut port) } == 0).then_some(port)
}

fn open_pci(spec: &EndpointSpec, cfg: Config, pci: String, port_no: u16, id: u32) -> Result<Box<dyn Endpoint>> {
    let sysfs = std::path::Path::new("/sys/bus/pci/devices").join(&pci);
    if !sysfs.exists() {
        return Err(DpdkError::NoSuchPort {
            device: pci,
            why: "there is no such PCI device on this host (see `dpdk-devbind.py --status` or `lspci -D`)".into(),
        }
        .into());
    }
    let driver = std::fs::read_link(sysfs.join("driver")).ok().and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    let bind_hint = format!(
        "it is bound to {}, not to a DPDK-capable driver; `modprobe vfio-pci && dpdk-devbind.py --bind=vfio-pci {pci}` (see docs/dpdk.md)",
        driver.as_deref().map(|d| format!("`{d}`")).unwrap_or_else(|| "no driver".into())
    );
    if !matches!(driver.as_deref(), Some("vfio-pci") | Some("uio_pci_generic") | Some("igb_uio") | Some("mlx5_core") | Some("mlx4_core")) {
        return Err(DpdkError::NoSuchPort { device: pci, why: bind_hint }.into());
    }
    let claim = Claim::take(format!("pci:{pci}"), &pci)?;
    let eal = eal::ensure(&cfg)?;
    let mut probed = false;
    let port = match port_by_name(&pci) {
        Some(p) => p,
        None => {
            let c = CString::new(pci.as_str()).map_err(|_| Error::from(DpdkError::NoSuchPort { device: pci.clone(), why: bind_hint.clone() }))?;
            // SAFETY: valid C string; the EAL is initialised.
            let r = unsafe { sys::detpath_dpdk_dev_probe(c.as_ptr()) };
            if r == -libc::EBUSY {
                return Err(DpdkError::PortInUse { device: pci, by: "by another process (its VFIO group is busy)".into() }.into());
            }
            probed = r >= 0;
            port_by_name(&pci).ok_or_else(|| Error::from(DpdkError::NoSuchPort { device: pci.clone(), why: bind_hint.clone() }))?
        }
    };
    let owner = PortOwner {
        port: Some(port),
        bus: "pci",
        dev_name: pci.clone(),
        probed,
        pool: std::ptr::null_mut(),
        xsk: None,
        ns: None,
        restore: Arc::new(Mutex::new(None)),
        _cleanup: None,
        _claim: claim,
    };
    let mut mac = [0u8; 6];
    // SAFETY: port is valid; mac has 6 bytes.
    let r = unsafe { sys::detpath_dpdk_port_mac(port, mac.as_mut_ptr()) };
    if r != 0 {
        return Err(call_err(format!("reading the MAC address of {pci}"), r));
    }
    let mut mtu = 1500u16;
    // SAFETY: port is valid; mtu a valid out-pointer.
    unsafe { sys::detpath_dpdk_port_mtu(port, &mut mtu) };
    let addr = spec.addr.unwrap_or(Ipv4Addr::UNSPECIFIED);
    let setup = Setup {
        device: pci.clone(),
        devargs: pci,
        mac: MacAddr(mac),
        mtu: mtu as u32,
        local: SocketAddrV4::new(addr, port_no),
        subnets: Vec::new(),
        ifindex: None,
        eal_note: eal.note(),
        queue: 0,
    };
    let mut owner = owner;
    let facts = match configure(&mut owner, &cfg, port, id, &setup.devargs) {
        Ok(f) => f,
        Err(Configure::Failed(e)) => return Err(e),
        Err(Configure::QueueBusy) => return Err(call_err(format!("setting up the queues of {}", setup.devargs), -libc::EINVAL)),
    };
    finish(spec, &cfg, owner, port, facts, setup)
}

struct Setup {
    device: String,
    devargs: String,
    mac: MacAddr,
    mtu: u32,
    local: SocketAddrV4,
    subnets: Vec<(Ipv4Addr, u8)>,
    ifindex: Option<u32>,
    eal_note: String,
    queue: u32,
}

/// Pool, queues, start, link; then the endpoint.
/// Why [`configure`] failed.
enum Configure {
    /// net_af_xdp could not bind its queue (likely still held by a just-closed socket).
    QueueBusy,
    Failed(Error),
}

/// What [`configure`] learnt about the port.
struct PortFacts {
    driver: String,
    max_rx_pktlen: u32,
    rxd: u16,
    txd: u16,
}

fn port_facts(port: u16, devargs: &str) -> Result<PortFacts> {
    let mut driver = [0 as libc::c_char; 64];
    let mut devname = [0 as libc::c_char; 128];
    let (mut if_index, mut max_rx_pktlen, mut max_mtu, mut max_rxd, mut max_txd) = (0u32, 0u32, 0u16, 0u16, 0u16);
    // SAFETY: every pointer refers to a live local of the declared size.
    let r = unsafe {
        sys::detpath_dpdk_port_info(
            port,
            driver.as_mut_ptr(),
            driver.len(),
            devname.as_mut_ptr(),
            devname.len(),
            &mut if_index,
            &mut max_rx_pktlen,
            &mut max_mtu,
            &mut max_rxd,
            &mut max_txd,
        )
    };
    if r != 0 {
        return Err(call_err(format!("reading the device info of {devargs}"), r));
    }
    // SAFETY: the shim wrote a NUL-terminated string (snprintf).
    let driver = unsafe { CStr::from_ptr(driver.as_ptr()) }.to_string_lossy().into_owned();
    Ok(PortFacts { driver, max_rx_pktlen, rxd: 0, txd: 0 })
}

/// Creates the pool and sets up one RX and one TX queue (not started).
fn configure(owner: &mut PortOwner, cfg: &Config, port: u16, id: u32, devargs: &str) -> std::result::Result<PortFacts, Configure> {
    let pool_name = CString::new(format!("detpath_pool{id}")).unwrap_or_default();
    let virtual_device = owner.bus == "vdev";
    // Virtual devices get a pool in one contiguous chunk (net_af_xdp makes it
    // its UMEM); real ports the ordinary, DMA-able pool.
    // SAFETY: valid C string; the EAL is initialised.
    let pool = unsafe {
        if virtual_device {
            sys::detpath_dpdk_pool_create_va(pool_name.as_ptr(), cfg.mbufs, 0, sys::RTE_MBUF_DEFAULT_BUF_SIZE)
        } else {
            sys::detpath_dpdk_pool_create(pool_name.as_ptr(), cfg.mbufs, 0, sys::RTE_MBUF_DEFAULT_BUF_SIZE)
        }
    };
    if pool.is_null() {
        // SAFETY: reads the calling thread's rte_errno.
        let e = unsafe { sys::detpath_dpdk_errno() };
        return Err(Configure::Failed(if e == libc::ENOMEM {
            DpdkError::PoolExhausted { what: format!("the EAL's memory has no room for a pool of {} mbufs", cfg.mbufs), mbufs: cfg.mbufs }.into()
        } else {
            call_err(format!("creating the mbuf pool for {devargs}"), -e)
        }));
    }
    owner.pool = pool;
    let mut facts = port_facts(port, devargs).map_err(Configure::Failed)?;
    let (mut rxd, mut txd) = (cfg.ring, cfg.ring);
    // SAFETY: port and pool are valid; rxd/txd are valid in-out pointers.
    let r = unsafe { sys::detpath_dpdk_port_setup(port, pool, &mut rxd, &mut txd) };
    if r != 0 {
        // SAFETY: pool is valid.
        let avail = unsafe { sys::detpath_dpdk_pool_avail(pool) };
        if r == -libc::ENOMEM || (avail as usize) < rxd as usize {
            return Err(Configure::Failed(
                DpdkError::PoolExhausted { what: format!("setting up {devargs} (ring={}) found {avail} free mbufs", cfg.ring), mbufs: cfg.mbufs }.into(),
            ));
        }
        if r == -libc::EINVAL && facts.driver == "net_af_xdp" {
            return Err(Configure::QueueBusy);
        }
        return Err(Configure::Failed(call_err(format!("setting up the queues of {devargs} (ring={})", cfg.ring), r)));
    }
    if facts.driver == "net_af_xdp" {
        let n = CString::new(owner.dev_name.as_str()).unwrap_or_default();
        // SAFETY: n is a valid C string naming the device just set up.
        let fd = unsafe { sys::detpath_dpdk_af_xdp_fd(n.as_ptr()) };
        owner.xsk = if fd >= 0 { xsk_inode(fd).map(|ino| (fd, ino)) } else { None };
    }
    facts.rxd = rxd;
    facts.txd = txd;
    Ok(facts)
}

fn finish(spec: &EndpointSpec, cfg: &Config, owner: PortOwner, port: u16, facts: PortFacts, s: Setup) -> Result<Box<dyn Endpoint>> {
    let pool = owner.pool;
    let PortFacts { driver, max_rx_pktlen, rxd, txd } = facts;
    // The XDP program the PMD attached, to remove it on close if the PMD does not.
    let mut xdp_mode = None;
    if let Some(ifindex) = s.ifindex {
        let now = xdp::query(ifindex).unwrap_or_default();
        let (drv, skb) = (now.drv_prog_id, now.skb_prog_id);
        if let Some(r) = owner.restore.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            r.xdp = (drv, skb);
        }
        xdp_mode = if drv != 0 {
            Some(XdpMode::Native)
        } else if skb != 0 {
            Some(XdpMode::Skb)
        } else {
            None
        };
    }
    // SAFETY: the port is configured.
    let r = unsafe { sys::detpath_dpdk_port_start(port) };
    if r != 0 {
        return Err(call_err(format!("starting {}", s.devargs), r));
    }
    let t0 = Instant::now();
    let mut speed = 0u32;
    loop {
        // SAFETY: port valid; speed a valid out-pointer.
        let up = unsafe { sys::detpath_dpdk_link(port, &mut speed) };
        if up == 1 {
            break;
        }
        if t0.elapsed() > LINK_WAIT {
            return Err(DpdkError::LinkDown { device: s.device.clone(), waited_ms: LINK_WAIT.as_millis() as u64 }.into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }

    let room = MBUF_DATA.min(max_rx_pktlen.max(MBUF_DATA as u32) as usize);
    let max_payload = detpath_wire::max_payload_for_mtu(s.mtu as usize).min(room - HEADERS_LEN);
    let mut notes = vec![
        format!("pmd={driver}"),
        format!("device={}", s.devargs),
        s.eal_note.clone(),
        format!("mbufs={} rxd={rxd} txd={txd} burst={}", cfg.mbufs, cfg.burst),
        "arp=answers+resolves".to_string(),
    ];
    if speed != 0 && s.ifindex.is_none() {
        notes.push(format!("link={speed}Mb/s"));
    }
    let caps = Capabilities {
        datapath: "dpdk",
        iface: Some(s.device.clone()),
        queue: Some(s.queue),
        xdp_mode,
        zero_copy: None,
        need_wakeup: None,
        busy_poll: true,
        max_payload,
        max_batch: cfg.burst as usize,
        notes,
    };
    let mut stats_base = [0u64; 8];
    // SAFETY: port valid; stats_base has 8 slots.
    unsafe { sys::detpath_dpdk_port_stats(port, stats_base.as_mut_ptr()) };
    let burst = cfg.burst.max(1);
    Ok(Box::new(DpdkEndpoint {
        port,
        pool,
        device: s.device,
        local: s.local,
        mac: s.mac,
        caps,
        counters: Counters::default(),
        verify_checksum: spec.verify_checksum,
        burst,
        mbufs: cfg.mbufs,
        max_payload,
        rx_buf: vec![std::ptr::null_mut(); burst as usize],
        tx_buf: vec![std::ptr::null_mut(); burst as usize],
        tx_macs: vec![MacAddr::default(); burst as usize],
        pending: VecDeque::with_capacity(PENDING),
        pending_dropped: 0,
        neigh: NeighCache::new(&cfg.neigh),
        subnets: s.subnets,
        arp_timeout: Duration::from_millis(cfg.arp_timeout_ms),
        ip_id: 0,
        stats_base,
        _owner: owner,
    }))
}

impl DpdkEndpoint {
    fn free(&mut self, m: *mut sys::rte_mbuf) {
        // SAFETY: m is an mbuf this endpoint received or allocated and still owns.
        unsafe { sys::detpath_dpdk_mbuf_free(m) };
    }

    /// One RX burst, every frame classified. Returns the number of frames taken.
    fn poll_rx(&mut self) -> usize {
        // SAFETY: rx_buf has room for `burst` pointers; the port and queue 0 are started.
        let n = unsafe { sys::detpath_dpdk_rx_burst(self.port, 0, self.rx_buf.as_mut_ptr(), self.burst) } as usize;
        if n == 0 {
            return 0;
        }
        let now = monotonic_ns();
        for i in 0..n {
            let m = self.rx_buf[i];
            self.classify(m, now);
        }
        n
    }

    fn classify(&mut self, m: *mut sys::rte_mbuf, now: u64) {
        let (mut len, mut segs) = (0u32, 0u16);
        // SAFETY: m is a received mbuf we own.
        let data = unsafe { sys::detpath_dpdk_mbuf_data(m, &mut len, &mut segs) };
        if data.is_null() || segs != 1 {
            self.counters.rx_malformed += 1;
            return self.free(m);
        }
        // SAFETY: the first (only) segment holds `len` bytes at `data`, alive until the mbuf is freed.
        let frame = unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) };
        if arp::is_arp(frame) {
            let parsed = arp::parse_arp_frame(frame);
            self.free(m);
            match parsed {
                Ok(p) => self.on_arp(&p),
                Err(_) => self.counters.rx_not_for_me += 1,
            }
            return;
        }
        match parse_udp_frame(frame, self.verify_checksum) {
            Ok(f) if f.dst == self.local => {
                if self.pending.len() >= PENDING {
                    self.pending_dropped += 1;
                    return self.free(m);
                }
                // SAFETY: payload_offset + payload_len lies within the frame (checked by the parser).
                let p = unsafe { (data as *const u8).add(f.payload_offset) };
                self.pending.push_back(Pending { m, data: p, len: f.payload_len as u16, peer: f.src, rx_ns: now });
            }
            Ok(_) | Err(FrameError::NotIpv4(_)) | Err(FrameError::NotUdp(_)) => {
                self.counters.rx_not_for_me += 1;
                self.free(m);
            }
            Err(_) => {
                self.counters.rx_malformed += 1;
                self.free(m);
            }
        }
    }

    fn on_arp(&mut self, p: &ArpPacket) {
        let me = *self.local.ip();
        if p.is_request_for(me) {
            if !p.sender_ip.is_unspecified() {
                self.neigh.learn(p.sender_ip, p.sender_mac);
            }
            let reply = p.reply_to(self.mac);
            self.send_arp(&reply);
        } else if p.op == ArpOp::Reply && p.target_ip == me {
            self.neigh.learn(p.sender_ip, p.sender_mac);
        } else {
            // Someone else's request, or a gratuitous announcement: refresh what we know.
            if self.neigh.get(p.sender_ip).is_some_and(|m| m != p.sender_mac) {
                self.neigh.learn(p.sender_ip, p.sender_mac);
            }
            self.counters.rx_not_for_me += 1;
        }
    }

    /// Sends one ARP frame; failures are counted, not returned (ARP retries).
    fn send_arp(&mut self, p: &ArpPacket) {
        let mut m: *mut sys::rte_mbuf = std::ptr::null_mut();
        // SAFETY: pool is ours; m is a valid out-slot for one pointer.
        if unsafe { sys::detpath_dpdk_mbuf_alloc_bulk(self.pool, &mut m, 1) } != 0 {
            self.counters.tx_errors += 1;
            return;
        }
        // SAFETY: m is a fresh mbuf with at least MIN_FRAME bytes of room.
        let data = unsafe { sys::detpath_dpdk_mbuf_set_len(m, MIN_FRAME as u16) };
        if data.is_null() {
            self.counters.tx_errors += 1;
            return self.free(m);
        }
        // SAFETY: data points to MIN_FRAME writable bytes of m.
        let buf = unsafe { std::slice::from_raw_parts_mut(data, MIN_FRAME) };
        if arp::build_arp_frame(buf, p, MIN_FRAME).is_none() {
            self.counters.tx_errors += 1;
            return self.free(m);
        }
        let mut one = [m];
        // SAFETY: one holds one built mbuf; the port is started.
        if unsafe { sys::detpath_dpdk_tx_burst(self.port, 0, one.as_mut_ptr(), 1) } != 1 {
            self.counters.tx_errors += 1;
            self.free(m);
        }
    }

    /// The MAC for `ip`: cached, static, or resolved by ARP now.
    fn resolve(&mut self, ip: Ipv4Addr) -> Result<MacAddr> {
        if let Some(m) = self.neigh.get(ip) {
            return Ok(m);
        }
        if ip.is_broadcast() {
            return Ok(MacAddr::BROADCAST);
        }
        if !self.subnets.is_empty() && !on_link(&self.subnets, ip) {
            return Err(Error::Unsupported {
                datapath: "dpdk",
                what: format!("sending to {ip}, which is not on a subnet of `{}` (on-link only, no gateway routing)", self.device),
            });
        }
        let request = ArpPacket::request(self.mac, *self.local.ip(), ip);
        let start = Instant::now();
        let mut next = start;
        loop {
            let now = Instant::now();
            if now >= next {
                self.send_arp(&request);
                next = now + ARP_RETRY;
            }
            self.poll_rx();
            if let Some(m) = self.neigh.get(ip) {
                return Ok(m);
            }
            if now.duration_since(start) >= self.arp_timeout {
                return Err(DpdkError::Unresolved { peer: ip, device: self.device.clone(), ms: self.arp_timeout.as_millis() as u64 }.into());
            }
            std::hint::spin_loop();
        }
    }

    /// Transmits tx_buf[..n], retrying while the queue is full.
    fn tx_all(&mut self, n: usize) -> Result<()> {
        let mut sent = 0usize;
        let mut stalled_since: Option<Instant> = None;
        while sent < n {
            // SAFETY: tx_buf[sent..n] hold built mbufs we own; the port is started.
            let k = unsafe { sys::detpath_dpdk_tx_burst(self.port, 0, self.tx_buf.as_mut_ptr().add(sent), (n - sent) as u16) } as usize;
            sent += k;
            if sent < n && k == 0 {
                match stalled_since {
                    None => {
                        self.counters.tx_ring_full += 1;
                        stalled_since = Some(Instant::now());
                    }
                    Some(t) if t.elapsed() > TX_STALL => {
                        let rest = n - sent;
                        // SAFETY: the unsent mbufs are still ours.
                        unsafe { sys::detpath_dpdk_mbuf_free_bulk(self.tx_buf.as_mut_ptr().add(sent), rest as u32) };
                        self.counters.tx_errors += rest as u64;
                        return Err(DpdkError::TxStalled { device: self.device.clone(), ms: TX_STALL.as_millis() as u64 }.into());
                    }
                    Some(_) => {}
                }
                // Keep answering ARP while waiting: the peer may be resolving us.
                self.poll_rx();
            }
        }
        Ok(())
    }

    fn alloc(&mut self, n: usize) -> Result<()> {
        // SAFETY: tx_buf has room for n <= burst pointers; pool is ours.
        if unsafe { sys::detpath_dpdk_mbuf_alloc_bulk(self.pool, self.tx_buf.as_mut_ptr(), n as u32) } != 0 {
            self.counters.tx_errors += n as u64;
            // SAFETY: pool is ours.
            let avail = unsafe { sys::detpath_dpdk_pool_avail(self.pool) };
            return Err(DpdkError::PoolExhausted { what: format!("no {n} free mbufs to send on `{}` ({avail} free)", self.device), mbufs: self.mbufs }.into());
        }
        Ok(())
    }

    /// Builds a datagram into tx_buf[i] (already allocated).
    fn build(&mut self, i: usize, payload: &[u8], peer: SocketAddrV4, dst_mac: MacAddr) -> bool {
        let len = (HEADERS_LEN + payload.len()).max(MIN_FRAME);
        // SAFETY: tx_buf[i] is a fresh mbuf; set_len checks the room.
        let data = unsafe { sys::detpath_dpdk_mbuf_set_len(self.tx_buf[i], len as u16) };
        if data.is_null() {
            return false;
        }
        // SAFETY: data points to `len` writable bytes of the mbuf.
        let buf = unsafe { std::slice::from_raw_parts_mut(data, len) };
        self.ip_id = self.ip_id.wrapping_add(1);
        let h = UdpFrameHeader { src_mac: self.mac, dst_mac, src: self.local, dst: peer, ip_id: self.ip_id, ttl: 64 };
        match build_udp_frame(buf, &h, payload) {
            Some(n) => {
                buf[n..].fill(0);
                true
            }
            None => false,
        }
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len > self.max_payload {
            return Err(Error::PayloadTooLarge { iface: self.device.clone(), len, max: self.max_payload });
        }
        Ok(())
    }

    /// Waits per `mode` until a datagram is pending; false when the wait ended empty.
    fn wait_pending(&mut self, mode: RecvMode) -> bool {
        if !self.pending.is_empty() || self.poll_rx() > 0 && !self.pending.is_empty() {
            return true;
        }
        let (timeout, nap) = match mode {
            RecvMode::NonBlocking => return false,
            RecvMode::BusyPoll { timeout } => (timeout, false),
            RecvMode::Blocking { timeout } => (timeout, true),
        };
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut spins = 0u32;
        loop {
            self.poll_rx();
            if !self.pending.is_empty() {
                return true;
            }
            spins = spins.wrapping_add(1);
            if nap {
                std::thread::sleep(BLOCKING_NAP);
            }
            if let Some(d) = deadline {
                if (nap || spins & 63 == 0) && Instant::now() >= d {
                    return false;
                }
            }
        }
    }

    /// Copies the oldest pending datagram into `buf` and frees its mbuf.
    fn deliver(&mut self, buf: &mut [u8]) -> Option<RxMeta> {
        let p = self.pending.pop_front()?;
        let full = p.len as usize;
        let len = full.min(buf.len());
        // SAFETY: p.data points to p.len payload bytes inside p.m, which we still own.
        buf[..len].copy_from_slice(unsafe { std::slice::from_raw_parts(p.data, len) });
        self.free(p.m);
        self.counters.rx_packets += 1;
        self.counters.rx_bytes += len as u64;
        if full > len {
            self.counters.rx_truncated += 1;
        }
        Some(RxMeta { len, truncated: full > len, peer: p.peer, rx_ns: p.rx_ns })
    }
}

impl Endpoint for DpdkEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn counters(&self) -> Counters {
        let mut c = self.counters;
        let mut s = [0u64; 8];
        // SAFETY: port valid; s has 8 slots.
        if unsafe { sys::detpath_dpdk_port_stats(self.port, s.as_mut_ptr()) } == 0 {
            let d = |i: usize| s[i].saturating_sub(self.stats_base[i]);
            c.rx_kernel_dropped = d(4) + d(7);
        }
        c.rx_kernel_dropped += self.pending_dropped;
        c
    }

    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> Result<()> {
        self.check_len(payload.len())?;
        let mac = self.resolve(*peer.ip())?;
        self.alloc(1)?;
        if !self.build(0, payload, peer, mac) {
            self.free(self.tx_buf[0]);
            self.counters.tx_errors += 1;
            return Err(Error::PayloadTooLarge { iface: self.device.clone(), len: payload.len(), max: self.max_payload });
        }
        self.tx_all(1)?;
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += payload.len() as u64;
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        if !self.wait_pending(mode) {
            return Ok(None);
        }
        Ok(self.deliver(buf))
    }

    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        let mut done = 0usize;
        for chunk in batch.chunks(self.burst as usize) {
            // Resolve first: a failure sends what was resolved before it.
            let mut n = 0;
            let mut failure = None;
            for d in chunk {
                let r = self.check_len(d.payload.len()).and_then(|_| self.resolve(*d.peer.ip()));
                match r {
                    Ok(mac) => {
                        self.tx_macs[n] = mac;
                        n += 1;
                    }
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if n > 0 {
                if let Err(e) = self.alloc(n) {
                    return if done == 0 { Err(e) } else { Ok(done) };
                }
                for (i, d) in chunk[..n].iter().enumerate() {
                    if !self.build(i, d.payload, d.peer, self.tx_macs[i]) {
                        // Cannot happen after check_len; keep the mbufs consistent anyway.
                        // SAFETY: tx_buf[..n] are ours and unsent.
                        unsafe { sys::detpath_dpdk_mbuf_free_bulk(self.tx_buf.as_mut_ptr(), n as u32) };
                        self.counters.tx_errors += n as u64;
                        let e = Error::PayloadTooLarge { iface: self.device.clone(), len: d.payload.len(), max: self.max_payload };
                        return if done == 0 { Err(e) } else { Ok(done) };
                    }
                }
                if let Err(e) = self.tx_all(n) {
                    return if done == 0 { Err(e) } else { Ok(done) };
                }
                self.counters.tx_packets += n as u64;
                self.counters.tx_bytes += chunk[..n].iter().map(|d| d.payload.len() as u64).sum::<u64>();
                done += n;
            }
            if let Some(e) = failure {
                return if done == 0 { Err(e) } else { Ok(done) };
            }
        }
        Ok(done)
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        batch.clear();
        if !self.wait_pending(mode) {
            return Ok(0);
        }
        while let Some(slot) = batch.next_slot() {
            if self.pending.is_empty() && (self.poll_rx() == 0 || self.pending.is_empty()) {
                break;
            }
            match self.deliver(slot) {
                Some(meta) => batch.commit(meta),
                None => break,
            }
        }
        Ok(batch.len())
    }
}

impl Drop for DpdkEndpoint {
    fn drop(&mut self) {
        while let Some(p) = self.pending.pop_front() {
            self.free(p.m);
        }
        // `_owner` (a field) drops next: port, device, pool, host state.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbour_cache_keeps_static_and_evicts_oldest() {
        let fixed = [(Ipv4Addr::new(10, 0, 0, 9), MacAddr([9; 6]))];
        let mut c = NeighCache::new(&fixed);
        c.learn(Ipv4Addr::new(10, 0, 0, 9), MacAddr([1; 6]));
        assert_eq!(c.get(Ipv4Addr::new(10, 0, 0, 9)), Some(MacAddr([9; 6])), "static entries are not overwritten");
        for i in 0..(NEIGH_SLOTS as u32 + 10) {
            c.learn(Ipv4Addr::from(0x0b00_0000 + i), MacAddr([i as u8; 6]));
        }
        assert_eq!(c.entries.len(), c.cap);
        assert!(c.entries.capacity() == c.cap, "never grows past its capacity");
        assert!(c.get(Ipv4Addr::from(0x0b00_0000)).is_none(), "oldest learned entry evicted");
        assert!(c.get(Ipv4Addr::from(0x0b00_0000 + NEIGH_SLOTS as u32 + 9)).is_some());
        assert!(c.get(Ipv4Addr::new(10, 0, 0, 9)).is_some());
    }

    #[test]
    fn pci_names_are_normalised() {
        assert_eq!(normalise_pci("03:00.0"), "0000:03:00.0");
        assert_eq!(normalise_pci("0000:AF:00.1"), "0000:af:00.1");
    }
}

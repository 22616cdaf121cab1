//! Opening an AF_XDP endpoint: check the spec and the interface, create the
//! socket, register the UMEM and map the four rings, bind a queue (copy or
//! zero-copy, need_wakeup), feed it from an XDP program, turn on kernel busy
//! polling. Everything after `open_afxdp` returns is the hot path in `mod.rs`.

use super::feed::XdpFeed;
use super::ring::{Ring, RingKind};
use super::umem::Umem;
use super::{AfxdpEndpoint, AfxdpKeys, Framing, XDP_PACKET_HEADROOM};
use crate::datapath::filter::FilterConfig;
use crate::datapath::tx::Sender;
use crate::endpoint::{Capabilities, Counters, RxStamp};
use crate::error::{last_os_error, Error, Result};
use crate::spec::EndpointSpec;
use detpath_sys::neigh::Neighbours;
use detpath_sys::xdp::{self, XdpMode};
use detpath_sys::NetDev;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

static XSK_REDIRECT_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_redirect.bpf.o"));

/// Entries of the program's XSKMAP (queue indices it can serve).
const XSKMAP_ENTRIES: u32 = 256;
/// SO_BUSY_POLL value (microseconds the kernel busy-polls per call).
const BUSY_POLL_US: i32 = 20;
const SO_PREFER_BUSY_POLL: i32 = 69;
const SO_BUSY_POLL_BUDGET: i32 = 70;
/// How long binding retries a queue that is busy (a socket closed just before
/// releases its queue asynchronously).
const BIND_BUSY_RETRY: Duration = Duration::from_millis(500);

fn sockopt<T>(fd: &OwnedFd, level: i32, name: i32, v: &T) -> std::io::Result<()> {
    // SAFETY: v is a live value of the option's type, passed with its size.
    let r = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (v as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_os_error())
    }
}

fn bad_spec(spec: &EndpointSpec, why: String) -> Error {
    Error::BadSpec { spec: spec.to_string(), why }
}

/// What a spec asks of an AF_XDP endpoint, checked.
struct Settings {
    /// Join the XSKMAP of the program already attached (`xdp=shared`).
    shared: bool,
    frame_size: u32,
    ring_size: u32,
    want_zero_copy: bool,
    /// `rx_stamp=xdp`: our program writes a receive time stamp into each frame's metadata.
    xdp_stamp: bool,
    /// The spec's typed keys.
    keys: AfxdpKeys,
}

impl Settings {
    fn from_spec(spec: &EndpointSpec) -> Result<Settings> {
        let shared = match spec.extra.get("xdp").map(String::as_str) {
            None | Some("own") => false,
            Some("shared") => true,
            Some(v) => return Err(bad_spec(spec, format!("`xdp` takes own or shared, not `{v}`"))),
        };
        let keys = AfxdpKeys::from_spec(spec)?;
        let (frame_size, ring_size) = (keys.frame_size, keys.ring_size);
        if !(2048..=4096).contains(&frame_size) || !frame_size.is_power_of_two() {
            return Err(bad_spec(spec, format!("`frame` must be 2048 or 4096 (an AF_XDP chunk is a power of two between 2 KiB and a page), not {frame_size}")));
        }
        if !(64..=16384).contains(&ring_size) {
            return Err(bad_spec(spec, format!("`ring` must be between 64 and 16384 for afxdp, not {ring_size}")));
        }
        let xdp_stamp = spec.rx_stamp(&[RxStamp::Xdp])? == RxStamp::Xdp;
        if xdp_stamp && shared {
            return Err(bad_spec(spec, "`rx_stamp=xdp` needs our own XDP program; with `xdp=shared` the program is someone else's".into()));
        }
        Ok(Settings { shared, frame_size, ring_size, want_zero_copy: keys.zero_copy == Some(true), xdp_stamp, keys })
    }
}

/// Refuses an interface the endpoint cannot work on, before anything is created.
fn check_device(spec: &EndpointSpec, dev: &NetDev, s: &Settings) -> Result<()> {
    dev.require_up()?;
    if s.keys.queue >= dev.queues || s.keys.queue >= XSKMAP_ENTRIES {
        return Err(Error::NoSuchQueue { iface: dev.name.clone(), queue: s.keys.queue, count: dev.queues.min(XSKMAP_ENTRIES) });
    }
    // An interface with an XDP program already attached is refused with that
    // program's id, unless we are to join it.
    if !s.shared {
        xdp::require_free(dev)?;
    }
    if s.keys.mode == Some(XdpMode::Native) && dev.mtu > xdp::NATIVE_MAX_MTU {
        return Err(detpath_sys::Error::MtuTooLarge { iface: dev.name.clone(), mtu: dev.mtu, max: xdp::NATIVE_MAX_MTU, mode: "native" }.into());
    }
    let frame_need = dev.mtu + 14 + XDP_PACKET_HEADROOM;
    if frame_need > s.frame_size {
        return Err(bad_spec(spec, format!("a {}-byte MTU frame plus the kernel's {XDP_PACKET_HEADROOM}-byte headroom needs `frame` of at least {frame_need}; use frame=4096 or lower the MTU of `{}`", dev.mtu, dev.name)));
    }
    Ok(())
}

/// A new AF_XDP socket.
fn xdp_socket() -> Result<OwnedFd> {
    // SAFETY: plain socket(2); checked below.
    let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        let e = last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EAFNOSUPPORT) => Error::Unsupported { datapath: "afxdp", what: "AF_XDP sockets (this kernel lacks CONFIG_XDP_SOCKETS)".into() },
            _ => Error::os("creating an AF_XDP socket", e, "CAP_NET_RAW"),
        });
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The UMEM and the four rings of a socket, the RX frames already given to the kernel.
struct Rings {
    umem: Umem,
    fill: Ring<u64>,
    comp: Ring<u64>,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    /// Free TX frame addresses (capacity fixed here: never reallocates).
    tx_free: Vec<u64>,
}

/// Registers a UMEM of `2 × ring` frames (first half RX, second half TX),
/// sizes and maps the rings, and fills the fill ring.
fn umem_and_rings(fd: &OwnedFd, s: &Settings) -> Result<Rings> {
    let (frame_size, ring_size) = (s.frame_size, s.ring_size);
    let nframes = 2 * ring_size;
    let umem = Umem::new(nframes, frame_size)?;
    let reg = libc::xdp_umem_reg { addr: umem.base() as u64, len: umem.len() as u64, chunk_size: frame_size, headroom: 0, flags: 0, tx_metadata_len: 0 };
    sockopt(fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg).map_err(|e| -> Error {
        match e.raw_os_error() {
            Some(libc::ENOBUFS) | Some(libc::ENOMEM) | Some(libc::EPERM) => detpath_sys::Error::MemlockLimit {
                what: format!("registering {} KiB of AF_XDP UMEM ({nframes} frames of {frame_size} B: 2 x ring={ring_size}; a smaller `ring=` needs less, CAP_IPC_LOCK lifts the limit)", umem.len() / 1024),
                limit: detpath_sys::caps::memlock_limit(),
            }
            .into(),
            _ => Error::io(format!("registering the AF_XDP UMEM ({nframes} frames of {frame_size} B; chunks must be a power of two from 2048 to the page size, the area page-aligned)"), e),
        }
    })?;
    // The fill ring has room for every RX frame twice, so recycled frames always fit.
    let fill_size = 2 * ring_size;
    for (opt, size, what) in [
        (libc::XDP_UMEM_FILL_RING, fill_size, "fill"),
        (libc::XDP_UMEM_COMPLETION_RING, ring_size, "completion"),
        (libc::XDP_RX_RING, ring_size, "RX"),
        (libc::XDP_TX_RING, ring_size, "TX"),
    ] {
        sockopt(fd, libc::SOL_XDP, opt, &size).map_err(|e| Error::io(format!("sizing the AF_XDP {what} ring to {size} (must be a power of two)"), e))?;
    }
    // SAFETY: xdp_mmap_offsets is plain data; zero is a valid value.
    let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
    let mut optlen = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: off/optlen describe a writable xdp_mmap_offsets.
    if unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_MMAP_OFFSETS, (&mut off as *mut libc::xdp_mmap_offsets).cast(), &mut optlen) } != 0 {
        return Err(Error::io("reading the AF_XDP ring offsets", last_os_error()));
    }
    if optlen as usize != std::mem::size_of::<libc::xdp_mmap_offsets>() {
        return Err(Error::Unsupported { datapath: "afxdp", what: "AF_XDP rings without a flags word (kernel older than 5.4)".into() });
    }
    let mut fill: Ring<u64> = Ring::map(fd, &off, RingKind::Fill, fill_size)?;
    let comp: Ring<u64> = Ring::map(fd, &off, RingKind::Completion, ring_size)?;
    let rx: Ring<libc::xdp_desc> = Ring::map(fd, &off, RingKind::Rx, ring_size)?;
    let tx: Ring<libc::xdp_desc> = Ring::map(fd, &off, RingKind::Tx, ring_size)?;
    // Give the kernel every RX frame.
    let n = fill.free(ring_size).min(ring_size);
    for i in 0..n {
        fill.write(i, umem.frame_addr(i));
    }
    fill.submit(n);
    let mut tx_free = Vec::with_capacity(ring_size as usize);
    tx_free.extend((ring_size..nframes).rev().map(|i| umem.frame_addr(i)));
    Ok(Rings { umem, fill, comp, rx, tx, tx_free })
}

/// What binding obtained.
struct Bound {
    need_wakeup: bool,
    zero_copy: bool,
}

/// Binds the socket to `dev`'s `queue`: copy mode unless zero-copy was asked
/// for (then zero-copy or an error); need_wakeup if the kernel has it.
fn bind_queue(fd: &OwnedFd, dev: &NetDev, queue: u32, want_zc: bool) -> Result<Bound> {
    let mode_flag = if want_zc { libc::XDP_ZEROCOPY } else { libc::XDP_COPY };
    let mut need_wakeup = true;
    // A socket closed just before (even our own, a moment ago) releases its
    // queue in deferred kernel work: EBUSY is retried for a short while.
    let busy_until = Instant::now() + BIND_BUSY_RETRY;
    let mut r = loop {
        let r = bind(fd, dev.ifindex, queue, mode_flag | libc::XDP_USE_NEED_WAKEUP);
        if r.as_ref().err().and_then(|e| e.raw_os_error()) != Some(libc::EBUSY) || Instant::now() >= busy_until {
            break r;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if r.as_ref().err().and_then(|e| e.raw_os_error()) == Some(libc::EINVAL) && bind(fd, dev.ifindex, queue, mode_flag).is_ok() {
        need_wakeup = false;
        r = Ok(());
    }
    if let Err(e) = r {
        return Err(match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) | Some(libc::EPROTONOSUPPORT) if want_zc => Error::ZeroCopyRefused { iface: dev.name.clone(), queue },
            Some(libc::EBUSY) => Error::io(
                format!("binding AF_XDP to `{}` queue {queue}: another AF_XDP socket (or a zero-copy user) still holds that queue after {} ms; close it or use another `queue=`", dev.name, BIND_BUSY_RETRY.as_millis()),
                e,
            ),
            Some(libc::EPERM) => detpath_sys::Error::MissingCapability { cap: "CAP_NET_RAW", what: format!("binding AF_XDP to `{}`", dev.name) }.into(),
            _ => Error::io(format!("binding AF_XDP to `{}` queue {queue}", dev.name), e),
        });
    }
    // What we really got.
    let mut xopts = libc::xdp_options { flags: 0 };
    let mut xlen = std::mem::size_of::<libc::xdp_options>() as libc::socklen_t;
    // SAFETY: xopts/xlen describe a writable xdp_options.
    let zero_copy = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_OPTIONS, (&mut xopts as *mut libc::xdp_options).cast(), &mut xlen) }
        == 0
        && xopts.flags & libc::XDP_OPTIONS_ZEROCOPY != 0;
    if want_zc && !zero_copy {
        return Err(Error::ZeroCopyRefused { iface: dev.name.clone(), queue });
    }
    Ok(Bound { need_wakeup, zero_copy })
}

/// Turns on kernel busy polling for the socket; `Err` is the note saying why not.
fn enable_busy_poll(fd: &OwnedFd, budget: i32) -> std::result::Result<(), String> {
    sockopt(fd, libc::SOL_SOCKET, SO_PREFER_BUSY_POLL, &1i32)
        .map_err(|e| ("SO_PREFER_BUSY_POLL", e))
        .and_then(|_| sockopt(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, &BUSY_POLL_US).map_err(|e| ("SO_BUSY_POLL", e)))
        .and_then(|_| sockopt(fd, libc::SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget).map_err(|e| ("SO_BUSY_POLL_BUDGET", e)))
        .map_err(|(opt, e)| format!("{opt} refused ({e}): busy-poll receive spins on the ring without kernel busy polling"))
}

/// Opens an AF_XDP endpoint (the concrete type, for callers that want
/// [`AfxdpEndpoint::xsk_stats`] or [`AfxdpEndpoint::filter_stats`]).
/// Call it on a thread inside the interface's network namespace.
pub fn open_afxdp(spec: &EndpointSpec) -> Result<AfxdpEndpoint> {
    open_afxdp_framing(spec, Framing::Udp)
}

/// Opens an AF_XDP endpoint carrying UDP datagrams or bare Ethernet frames.
pub(crate) fn open_afxdp_framing(spec: &EndpointSpec, framing: Framing) -> Result<AfxdpEndpoint> {
    let settings = Settings::from_spec(spec)?;
    let port = spec.require_port()?;
    let dev = NetDev::lookup(spec.require_iface()?)?;
    check_device(spec, &dev, &settings)?;
    // A frame endpoint needs no IPv4 address on the interface.
    let (addr, filter, headers) = match framing {
        Framing::Udp => {
            let addr = dev.pick_ipv4(spec.addr)?;
            (addr, FilterConfig::udp(addr, port), detpath_wire::HEADERS_LEN)
        }
        Framing::Ether { ethertype } => {
            if ethertype < 0x0600 {
                return Err(bad_spec(spec, format!("EtherType {ethertype} (the `port` key) is an 802.3 length; use at least 1536")));
            }
            (std::net::Ipv4Addr::UNSPECIFIED, FilterConfig::ethertype(ethertype), detpath_wire::ETH_HLEN)
        }
    };
    let max_payload = match framing {
        Framing::Udp => detpath_wire::max_payload_for_mtu(dev.mtu as usize),
        Framing::Ether { .. } => dev.mtu as usize,
    };

    let fd = xdp_socket()?;
    let Rings { umem, fill, comp, rx, tx, tx_free } = umem_and_rings(&fd, &settings)?;
    let bound = bind_queue(&fd, &dev, settings.keys.queue, settings.want_zero_copy)?;
    // The XDP program (ours, or the one we join), with our socket in its XSKMAP at our queue.
    let feed = if settings.shared {
        XdpFeed::shared(&dev, settings.keys.queue, fd.as_raw_fd())?
    } else {
        XdpFeed::own(XSK_REDIRECT_OBJ, &dev, settings.keys.mode, filter.stamped(settings.xdp_stamp), settings.keys.queue, fd.as_raw_fd())?
    };

    let ring_size = settings.ring_size;
    let mut caps = Capabilities {
        datapath: "afxdp",
        iface: Some(dev.name.clone()),
        queue: Some(settings.keys.queue),
        xdp_mode: feed.mode(),
        zero_copy: Some(bound.zero_copy),
        need_wakeup: Some(bound.need_wakeup),
        busy_poll: false,
        max_payload: max_payload.min((settings.frame_size - XDP_PACKET_HEADROOM) as usize - headers),
        // UDP datagrams above one frame go as IPv4 fragments (frames carry no IP).
        max_datagram: if framing == Framing::Udp { detpath_wire::MAX_UDP_PAYLOAD } else { 0 },
        max_batch: settings.keys.batch.min(ring_size) as usize,
        rx_stamp: if settings.xdp_stamp { RxStamp::Xdp } else { RxStamp::User },
        notes: feed.notes(),
    };
    if !bound.need_wakeup {
        caps.notes.push("the kernel refused XDP_USE_NEED_WAKEUP: every receive and send makes a syscall".into());
    }
    if settings.keys.busy_poll {
        match enable_busy_poll(&fd, settings.keys.batch.min(ring_size) as i32) {
            Ok(()) => caps.busy_poll = true,
            Err(note) => caps.notes.push(note),
        }
    }
    let neigh = Neighbours::new(&dev)?;
    Ok(AfxdpEndpoint {
        feed,
        rx,
        tx,
        fill,
        comp,
        fd,
        umem,
        tx_free,
        fill_pending: Vec::with_capacity(ring_size as usize),
        iface: dev.name.as_str().into(),
        neigh,
        sender: Sender::new(dev.mac, SocketAddrV4::new(addr, port), caps.max_payload, caps.max_datagram),
        staged: 0,
        framing,
        local: SocketAddrV4::new(addr, port),
        src_mac: dev.mac,
        verify_checksum: settings.keys.verify_checksum,
        xdp_stamp: settings.xdp_stamp,
        defrag: Default::default(),
        zero_copy: bound.zero_copy,
        kernel_busy_poll: caps.busy_poll,
        batch: caps.max_batch as u32,
        caps,
        counters: Counters::default(),
    })
}

fn bind(fd: &OwnedFd, ifindex: u32, queue: u32, flags: u16) -> std::io::Result<()> {
    let sa = libc::sockaddr_xdp { sxdp_family: libc::AF_XDP as u16, sxdp_flags: flags, sxdp_ifindex: ifindex, sxdp_queue_id: queue, sxdp_shared_umem_fd: 0 };
    // SAFETY: sa is a complete sockaddr_xdp passed with its size.
    let r = unsafe { libc::bind(fd.as_raw_fd(), (&sa as *const libc::sockaddr_xdp).cast(), std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_os_error())
    }
}

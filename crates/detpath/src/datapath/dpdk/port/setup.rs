//! Opening a DPDK endpoint: a virtual device over a Linux interface or a
//! PCI port, the mbuf pool and queues, start and link, then the endpoint.

use super::*;

/// The program net_af_xdp loads instead of its default under `rx_stamp=xdp`.
static XSK_STAMP_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xsk_stamp.bpf.o"));

/// The time-stamping XDP object written to a file for net_af_xdp's
/// `xdp_prog=` argument (it loads by path); removed (on drop) once the port
/// is set up. A random name created with O_EXCL, never a predictable one.
struct StampObject(tempfile::TempPath);

impl StampObject {
    fn write(id: u32) -> Result<StampObject> {
        use std::io::Write;
        let what = |e| Error::io("writing the XDP object for net_af_xdp to a temporary file", e);
        let mut f = tempfile::Builder::new().prefix(&format!("detpath-xsk-stamp-{id}-")).suffix(".bpf.o").tempfile().map_err(what)?;
        f.write_all(XSK_STAMP_OBJ).and_then(|()| f.flush()).map_err(what)?;
        Ok(StampObject(f.into_temp_path()))
    }
}

pub(super) fn normalise_pci(p: &str) -> String {
    let p = p.to_ascii_lowercase();
    if p.matches(':').count() == 1 {
        format!("0000:{p}")
    } else {
        p
    }
}

/// Opens a `dpdk` endpoint (the calling thread's namespace is the endpoint's).
pub(crate) fn open(spec: &EndpointSpec, cfg: Config) -> Result<DpdkEndpoint> {
    let port_no = spec.require_port()?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    match cfg.pci.clone() {
        Some(pci) => open_pci(spec, cfg, normalise_pci(&pci), port_no, id),
        None => open_vdev(spec, cfg, port_no, id),
    }
}

pub(super) fn open_vdev(spec: &EndpointSpec, cfg: Config, port_no: u16, id: u32) -> Result<DpdkEndpoint> {
    let iface = cfg.iface.clone().unwrap_or_default();
    let dev = NetDev::lookup(&iface)?;
    dev.require_up()?;
    // A frame endpoint needs no IPv4 address on the interface.
    let addr = match cfg.ethertype {
        Some(_) => spec.addr.unwrap_or(Ipv4Addr::UNSPECIFIED),
        None => dev.pick_ipv4(spec.addr)?,
    };
    if cfg.queue >= dev.queues {
        return Err(Error::NoSuchQueue { iface: iface.clone(), queue: cfg.queue, count: dev.queues });
    }
    let ns = netns::current()?;
    let ino = netns::inode(&ns)?;
    let claim = Claim::take(format!("netns:{ino}/{iface}"), &iface)?;
    if cfg.vdev == Vdev::AfXdp {
        xdp::require_free(&dev)?;
    }
    let snapshot = HostState::snapshot(&iface)?;
    let eal = eal::ensure(&cfg)?;

    let stamp_object = if cfg.xdp_stamp { Some(StampObject::write(id)?) } else { None };
    let (name, args) = match cfg.vdev {
        Vdev::AfXdp => {
            let mut args = format!("iface={iface},start_queue={},queue_count=1", cfg.queue);
            if let Some(obj) = &stamp_object {
                args += &format!(",xdp_prog={}", obj.0.display());
            }
            (format!("net_af_xdp{id}"), args)
        }
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
                    device: format!("{iface} queue {}", cfg.queue),
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
        queue: cfg.queue,
    };
    // net_af_xdp loaded the program while configuring the queue.
    drop(stamp_object);
    finish(&cfg, owner, port, facts, setup)
}

/// Asks for every multicast frame (`group=`): a NIC drops group MACs nobody
/// joined, and the kernel joins none for DPDK. The port's own all-multicast
/// first; a PMD without it (net_af_xdp) over a Linux interface gets the
/// interface's IFF_ALLMULTI, which the host restore puts back on close.
fn all_multicast(port: u16, s: &Setup) -> String {
    // SAFETY: the port is started.
    let r = unsafe { sys::detpath_dpdk_allmulticast_enable(port) };
    if r == 0 {
        return "all-multicast on the port".into();
    }
    if s.ifindex.is_some() {
        let set = detpath_sys::netdev::flags(&s.device).and_then(|f| detpath_sys::netdev::set_flags(&s.device, f | libc::IFF_ALLMULTI));
        return match set {
            Ok(()) => format!("IFF_ALLMULTI on {} (the PMD has no all-multicast; put back on close)", s.device),
            Err(e) => format!("no all-multicast ({e}): {} must accept the group's MAC (promiscuous)", s.device),
        };
    }
    format!("the PMD refused all-multicast ({r}): the port must accept the group's MAC (promiscuous)")
}

/// Creates the virtual device and finds its port.
pub(super) fn probe_vdev(owner: &mut PortOwner, devargs: &str, name: &str, iface: &str, vdev: Vdev) -> Result<u16> {
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

pub(super) fn port_by_name(name: &str) -> Option<u16> {
    let c = CString::new(name).ok()?;
    let mut port = 0u16;
    // SAFETY: c is a valid C string, port a valid out-pointer.
    (unsafe { sys::detpath_dpdk_port_by_name(c.as_ptr(), &mut port) } == 0).then_some(port)
}

pub(super) fn open_pci(spec: &EndpointSpec, cfg: Config, pci: String, port_no: u16, id: u32) -> Result<DpdkEndpoint> {
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
    finish(&cfg, owner, port, facts, setup)
}

pub(super) struct Setup {
    pub(super) device: String,
    pub(super) devargs: String,
    pub(super) mac: MacAddr,
    pub(super) mtu: u32,
    pub(super) local: SocketAddrV4,
    pub(super) subnets: Vec<(Ipv4Addr, u8)>,
    pub(super) ifindex: Option<u32>,
    pub(super) eal_note: String,
    pub(super) queue: u32,
}

/// Pool, queues, start, link; then the endpoint.
/// Why [`configure`] failed.
pub(super) enum Configure {
    /// net_af_xdp could not bind its queue (likely still held by a just-closed socket).
    QueueBusy,
    Failed(Error),
}

/// What [`configure`] learnt about the port.
pub(super) struct PortFacts {
    pub(super) driver: String,
    pub(super) max_rx_pktlen: u32,
    pub(super) rxd: u16,
    pub(super) txd: u16,
}

pub(super) fn port_facts(port: u16, devargs: &str) -> Result<PortFacts> {
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
pub(super) fn configure(owner: &mut PortOwner, cfg: &Config, port: u16, id: u32, devargs: &str) -> std::result::Result<PortFacts, Configure> {
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

pub(super) fn finish(cfg: &Config, owner: PortOwner, port: u16, facts: PortFacts, s: Setup) -> Result<DpdkEndpoint> {
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
    let max_payload = match cfg.ethertype {
        None => detpath_wire::max_payload_for_mtu(s.mtu as usize).min(room - HEADERS_LEN),
        Some(_) => (s.mtu as usize).min(room - ETH_HLEN),
    };
    let mut notes = vec![
        format!("pmd={driver}"),
        format!("device={}", s.devargs),
        s.eal_note.clone(),
        format!("mbufs={} rxd={rxd} txd={txd} burst={}", cfg.mbufs, cfg.burst),
        match cfg.ethertype {
            None => "arp=answers+resolves".to_string(),
            Some(et) => format!("frames of EtherType {et:#06x} (no ARP)"),
        },
    ];
    notes.push(match owner.xsk {
        Some(_) => "blocking receive sleeps in poll(2) on net_af_xdp's socket".into(),
        None => format!("blocking receive naps {} µs between polls", BLOCKING_NAP.as_micros()),
    });
    if let Some(g) = cfg.group {
        notes.push(format!("group={g} received besides {}, {}", s.local, all_multicast(port, &s)));
    }
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
        // UDP datagrams above one frame go as IPv4 fragments (frames carry no IP).
        max_datagram: if cfg.ethertype.is_none() { detpath_wire::MAX_UDP_PAYLOAD } else { 0 },
        max_batch: cfg.burst as usize,
        rx_stamp: if cfg.xdp_stamp { RxStamp::Xdp } else { RxStamp::User },
        notes,
    };
    let mut stats_base = [0u64; 8];
    // SAFETY: port valid; stats_base has 8 slots.
    unsafe { sys::detpath_dpdk_port_stats(port, stats_base.as_mut_ptr()) };
    let burst = cfg.burst.max(1);
    // UDP datagrams above one frame go as fragments; a frame endpoint's sender says max_payload.
    let sender = Sender::new(s.mac, s.local, max_payload, caps.max_datagram.max(max_payload));
    Ok(DpdkEndpoint {
        port,
        ethertype: cfg.ethertype,
        pool,
        device_name: s.device.as_str().into(),
        device: s.device,
        local: s.local,
        group: cfg.group,
        mac: s.mac,
        caps,
        counters: Counters::default(),
        verify_checksum: cfg.verify_checksum,
        xdp_stamp: cfg.xdp_stamp,
        burst,
        mbufs: cfg.mbufs,
        max_payload,
        rx_buf: vec![std::ptr::null_mut(); burst as usize],
        tx_buf: vec![std::ptr::null_mut(); burst as usize],
        staged: 0,
        pending: VecDeque::with_capacity(PENDING),
        pending_dropped: 0,
        defrag: Default::default(),
        assembled: Default::default(),
        neigh: NeighCache::new(&cfg.neigh),
        arp_pending: Vec::with_capacity(NEIGH_SLOTS),
        sender,
        subnets: s.subnets,
        arp_timeout: Duration::from_millis(cfg.arp_timeout_ms),
        stats_base,
        rx_fd: owner.xsk.map(|(fd, _)| fd),
        _owner: owner,
    })
}

//! The engine's transport over a detpath endpoint: a datagram
//! [`detpath::Endpoint`] (RTPS over UDPv4 on udp, afxdp, xdppoll, dpdk) or a
//! frame [`detpath::FrameEndpoint`] (RTPS directly in Ethernet frames,
//! CycloneDDS's `raweth`, on packet or afxdp).
//!
//! Spec: a datagram endpoint spec as `detpath_open::open` takes it
//! (`afxdp://dpa?port=7410`), or `raweth+<frame datapath>://<iface>?port=<EtherType>`
//! (`raweth+afxdp://dpa?port=7400`; `raweth://dpa` is `raweth+packet://dpa`,
//! and the EtherType defaults to 7400, CycloneDDS's for domain 0).

use crate::driver::Transport;
use crate::priority::{ClassKind, MarkTable, PriorityError, PriorityPolicy, TxMark};
use crate::wire::{Addr, EthAddr};
use detpath::{Endpoint, FrameEndpoint, MacAddr, Mark, RecvMode};
use std::time::Duration;

/// The EtherType CycloneDDS's raweth transport uses in domain 0 (the
/// discovery port 7400, 0x1ce8): every raweth participant of the domain
/// sends and receives on it.
pub const RAWETH_DEFAULT_ETHERTYPE: u16 = 7400;

/// How the polling thread waits for datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Spin on the ring or socket (lowest latency, one core busy).
    Busy,
    /// Sleep in the kernel until something arrives.
    Block,
    /// Spin for up to `spin_ns` after the last send or receive (an answer is
    /// usually due within tens of µs), then sleep in the kernel: the answer
    /// is caught without a wake-up, and an idle side leaves its core to the
    /// OS (what sockperf's and SO_BUSY_POLL's spin-then-sleep do).
    Hybrid {
        /// How long to spin after the last send or receive, ns.
        spin_ns: u64,
    },
    /// Spin while the thread has its core to itself; when it has waited on
    /// the run queue for over a tenth of the last 10 ms (another task wants
    /// the core, so spinning only takes turns with it, a scheduler slice at
    /// a time), wait as [`Wait::Hybrid`] for a second, then try spinning
    /// again. The default: busy-polling's latency on a quiet core, a
    /// sleeper's wake-up preference on a loaded one.
    Adaptive {
        /// How long to spin after the last datagram while waiting as
        /// [`Wait::Hybrid`], ns.
        spin_ns: u64,
    },
}

impl Wait {
    /// The default [`Wait::Adaptive`], spinning 50 µs after each datagram while it yields.
    pub const ADAPTIVE: Wait = Wait::Adaptive { spin_ns: 50_000 };
}

/// How often an adaptive wait looks at its run-queue wait.
const CONTENTION_WINDOW_NS: u64 = 10_000_000;
/// How long an adaptive wait sleeps between datagrams once contended.
const CONTENTION_HOLD_NS: u64 = 1_000_000_000;

/// Whether the polling thread shares its core, for [`Wait::Adaptive`]: its
/// run-queue wait (`/proc/thread-self/schedstat`) over windows of 10 ms.
#[derive(Debug, Default)]
struct CoreShare {
    /// Opened by the polling thread on its first wait (the file names the thread that opens it).
    run_queue: Option<detpath::sys::thread::RunQueueWait>,
    opened: bool,
    window_start_ns: u64,
    waited_at_start_ns: u64,
    /// Until when the thread sleeps between datagrams (0: it spins).
    yield_until_ns: u64,
    /// Times the thread found its core shared and started yielding.
    yields: u64,
}

impl CoreShare {
    /// Whether to yield the core at `now`.
    fn contended(&mut self, now: u64) -> bool {
        if !self.opened {
            self.opened = true;
            self.run_queue = detpath::sys::thread::RunQueueWait::of_this_thread();
        }
        let Some(rq) = &self.run_queue else { return false };
        if now < self.yield_until_ns {
            return true;
        }
        let elapsed = now.saturating_sub(self.window_start_ns);
        if self.yield_until_ns != 0 || elapsed >= CONTENTION_WINDOW_NS {
            let waited = rq.read_ns().unwrap_or(self.waited_at_start_ns);
            // A window that started the hold's end only begins the measurement.
            let shared = self.yield_until_ns == 0 && self.window_start_ns != 0 && waited.saturating_sub(self.waited_at_start_ns) > elapsed / 10;
            self.window_start_ns = now;
            self.waited_at_start_ns = waited;
            self.yield_until_ns = 0;
            if shared {
                self.yields += 1;
                self.yield_until_ns = now + CONTENTION_HOLD_NS;
                return true;
            }
        }
        false
    }
}

/// What carries the datagrams.
pub enum Link {
    /// UDPv4 datagrams.
    Datagram(Box<dyn Endpoint>),
    /// Bare Ethernet payloads of one EtherType (raweth).
    Frames(Box<dyn FrameEndpoint>),
}

/// A detpath endpoint as a driver transport.
pub struct EndpointTransport {
    /// The endpoint datagrams or frames go over.
    pub link: Link,
    /// How the polling thread waits for them.
    pub wait: Wait,
    /// Sends the endpoint refused.
    pub send_errors: u64,
    /// Datagrams cut off by the receive buffer (dropped).
    pub truncated: u64,
    /// Sends to an address of the other kind (a UDP locator on a raweth link): dropped.
    pub wrong_kind: u64,
    max_datagram: usize,
    local: Addr,
    /// When the last datagram went out or came in (for [`Wait::Hybrid`]).
    last_activity_ns: u64,
    /// Whether the core is shared (for [`Wait::Adaptive`]).
    core: CoreShare,
    /// The SPDP multicast group's receiver ([`open_spdp_group`]), if joined.
    group: Option<Box<dyn Endpoint>>,
    /// When the group is looked at next.
    group_poll_ns: u64,
}

/// How often the multicast group is looked at while the unicast endpoint is
/// polled or waited on: discovery traffic, so a few ms of delay cost nothing
/// and the unicast hot path pays one extra receive call per interval.
const GROUP_POLL_NS: u64 = 5_000_000;

/// Opens the receiver of RTPS's SPDP multicast group (239.255.0.1, port
/// 7400 + 250·domain) on `iface`, on the kernel UDP datapath: a socket of
/// its own (all participants of a host share the group's port).
pub fn open_spdp_group(iface: &str, domain: u32) -> detpath::Result<Box<dyn Endpoint>> {
    let port = crate::discovery::ports::metatraffic_multicast(domain);
    detpath_open::open(&format!("udp://{iface}?addr={}&port={port}", crate::discovery::SPDP_MULTICAST))
}

/// How a datagram endpoint's node hears the SPDP multicast group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupReception {
    /// A kernel socket joined to the group beside the endpoint
    /// ([`open_spdp_group`]): on `udp`, and on `afxdp` and `xdppoll`, whose XDP
    /// programs take only the endpoint's own address and port and pass the
    /// group's datagrams on to the kernel (`bpf/detpath_filter.h`).
    KernelSocket,
    /// The endpoint itself, opened with `group=<group>:<port>` (see
    /// [`spdp_group_spec`]): on `dpdk`, where net_af_xdp's program hands the
    /// whole queue to DPDK, so the kernel never sees the group's datagrams.
    Endpoint,
}

/// How a node on the datagram datapath `scheme` (the spec's `udp`, `afxdp`,
/// ...) hears the SPDP multicast group, as its registry entry says
/// ([`detpath::datapath::Datapath::group_reception`]); `Err` names why it
/// cannot and the fix.
pub fn spdp_group_reception(scheme: &str) -> Result<GroupReception, String> {
    use detpath::datapath::GroupReception as Registered;
    match detpath::datapath::find(scheme).map(|d| d.group_reception) {
        Some(Registered::KernelSocket) => Ok(GroupReception::KernelSocket),
        Some(Registered::Endpoint) => Ok(GroupReception::Endpoint),
        None if scheme == "fault" => Err("the fault datapath wraps another (inner=) and does not open the group beside it: give --peer".into()),
        _ => Err(format!("the {scheme} datapath cannot receive the SPDP multicast group: give --peer")),
    }
}

/// `spec` with the SPDP group of `domain` (`group=239.255.0.1:7400+250·domain`)
/// for a datapath that receives the group itself ([`GroupReception::Endpoint`]).
pub fn spdp_group_spec(spec: &str, domain: u32) -> String {
    // A group the user named is left as it is.
    if spec.split_once('?').is_some_and(|(_, q)| q.split('&').any(|kv| kv.starts_with("group="))) {
        return spec.to_string();
    }
    let port = crate::discovery::ports::metatraffic_multicast(domain);
    let group = format!("{}:{port}", crate::discovery::SPDP_MULTICAST);
    // Built on the typed spec; a spec that does not parse is left for open to refuse.
    detpath_open::parse(spec).and_then(|s| s.with_key("group", group)).map(|s| s.to_string()).unwrap_or_else(|_| spec.to_string())
}

/// A spec split into the frame datapath spec (`Some`) when it asks for raweth.
pub fn raweth_spec(spec: &str) -> Option<String> {
    let rest = spec.strip_prefix("raweth")?;
    let (dp, rest) = if let Some(r) = rest.strip_prefix("://") {
        ("packet", r)
    } else {
        let r = rest.strip_prefix('+')?;
        let (dp, r) = r.split_once("://")?;
        (dp, r)
    };
    let has_port = rest.split_once('?').is_some_and(|(_, q)| q.split('&').any(|kv| kv.starts_with("port=")));
    let sep = if rest.contains('?') { '&' } else { '?' };
    Some(if has_port { format!("{dp}://{rest}") } else { format!("{dp}://{rest}{sep}port={RAWETH_DEFAULT_ETHERTYPE}") })
}

/// Opens the spec's endpoint (datagram or, for `raweth...`, frames) on the calling thread.
/// Both open with `detpath_open` (every layer), so a datagram spec may send
/// through the slot scheduler (`...&sched=slots&slot_ns=...`).
pub fn open(spec: &str) -> detpath::Result<Link> {
    match raweth_spec(spec) {
        Some(frames) => Ok(Link::Frames(detpath_open::open_frames(&frames)?)),
        None => Ok(Link::Datagram(detpath_open::open(spec)?)),
    }
}

impl EndpointTransport {
    /// Wraps an open datagram endpoint.
    pub fn new(ep: Box<dyn Endpoint>, wait: Wait) -> EndpointTransport {
        Self::on(Link::Datagram(ep), wait)
    }

    /// Wraps an open link.
    pub fn on(link: Link, wait: Wait) -> EndpointTransport {
        let (max_payload, local) = match &link {
            // Above one frame the datapath fragments (max_datagram), where it can.
            Link::Datagram(ep) => (ep.capabilities().max_payload.max(ep.capabilities().max_datagram), Addr::Udp(ep.local_addr())),
            Link::Frames(ep) => (ep.capabilities().max_payload, Addr::Eth(EthAddr { mac: ep.local_mac().0, ethertype: ep.ethertype() })),
        };
        EndpointTransport {
            link,
            wait,
            send_errors: 0,
            truncated: 0,
            wrong_kind: 0,
            max_datagram: max_payload.clamp(256, 65507),
            local,
            last_activity_ns: 0,
            core: CoreShare::default(),
            group: None,
            group_poll_ns: 0,
        }
    }

    /// Also receives (and sends to) a multicast group through `group` ([`open_spdp_group`]).
    pub fn with_group(mut self, group: Box<dyn Endpoint>) -> EndpointTransport {
        self.group = Some(group);
        self
    }

    /// The multicast group's endpoint, if joined.
    pub fn group(&self) -> Option<&dyn Endpoint> {
        self.group.as_deref()
    }

    /// A datagram from the multicast group, when it is time to look.
    fn recv_group(&mut self, buf: &mut [u8]) -> Option<(usize, bool, Addr, u64)> {
        let g = self.group.as_mut()?;
        let now = detpath::monotonic_ns();
        if now < self.group_poll_ns {
            return None;
        }
        match g.recv(buf, RecvMode::NonBlocking) {
            Ok(Some(m)) => Some((m.len, m.truncated, Addr::Udp(m.peer), m.rx_ns)),
            _ => {
                self.group_poll_ns = now + GROUP_POLL_NS;
                None
            }
        }
    }

    /// One receive in `mode`: (length, truncated, source, rx time).
    fn recv_once(&mut self, buf: &mut [u8], mode: RecvMode) -> Option<(usize, bool, Addr, u64)> {
        match &mut self.link {
            Link::Datagram(ep) => {
                let m = ep.recv(buf, mode).ok()??;
                Some((m.len, m.truncated, Addr::Udp(m.peer), m.rx_ns))
            }
            Link::Frames(ep) => {
                let m = ep.recv_frame(buf, mode).ok()??;
                let ethertype = match self.local {
                    Addr::Eth(e) => e.ethertype,
                    Addr::Udp(_) => 0,
                };
                Some((m.len, m.truncated, Addr::Eth(EthAddr { mac: m.src.0, ethertype }), m.rx_ns))
            }
        }
    }

    /// Times an adaptive wait found its core shared and began to sleep between datagrams.
    pub fn core_yields(&self) -> u64 {
        self.core.yields
    }

    /// The endpoint's counters.
    pub fn counters(&self) -> detpath::Counters {
        match &self.link {
            Link::Datagram(ep) => ep.counters(),
            Link::Frames(ep) => ep.counters(),
        }
    }

    /// The endpoint's capabilities.
    pub fn capabilities(&self) -> &detpath::Capabilities {
        match &self.link {
            Link::Datagram(ep) => ep.capabilities(),
            Link::Frames(ep) => ep.capabilities(),
        }
    }

    /// The slot scheduler's classes on this endpoint (name and kind, by
    /// class number); `None` without a scheduler.
    pub fn scheduler_classes(&self) -> Option<Vec<(String, ClassKind)>> {
        let classes = detpath_sched::spec::classes_of(self.capabilities())?;
        Some(
            classes
                .into_iter()
                .map(|(n, k)| (n, if k == detpath_sched::ClassKind::RealTime { ClassKind::RealTime } else { ClassKind::BestEffort }))
                .collect(),
        )
    }

    /// THE way to put priorities on the wire over this endpoint: resolves
    /// the priority policy (DSCP map, optional `PRIORITY=CLASS` map)
    /// against this endpoint's slot scheduler, for
    /// [`engine::Config::priority`](crate::engine::Config::priority). A
    /// class the scheduler does not have, or a class map without a
    /// scheduler, is an error naming the scheduler's classes; a writer
    /// whose priority no class covers is refused when it is created
    /// ([`EngineError::Priority`](crate::engine::EngineError::Priority)).
    pub fn priority_marks(&self, policy: &PriorityPolicy) -> Result<MarkTable, PriorityError> {
        MarkTable::resolve(policy, self.scheduler_classes().as_deref())
    }
}

impl Transport for EndpointTransport {
    fn send(&mut self, dst: Addr, bytes: &[u8]) {
        self.send_marked(dst, bytes, TxMark::NONE);
    }
    /// The mark's DSCP goes into the IPv4 header and its class picks the
    /// scheduler's slots (datagram endpoints; frames and the multicast
    /// group's kernel socket go unmarked).
    fn send_marked(&mut self, dst: Addr, bytes: &[u8], mark: TxMark) {
        let r = match (&mut self.link, dst) {
            (Link::Datagram(_), Addr::Udp(a)) if a.ip().is_multicast() && self.group.is_some() => self.group.as_mut().map_or(Ok(()), |g| g.send_to(bytes, a)),
            (Link::Datagram(ep), Addr::Udp(a)) if mark == TxMark::NONE => ep.send_to(bytes, a),
            (Link::Datagram(ep), Addr::Udp(a)) => ep.send_marked(bytes, a, Mark { dscp: mark.dscp, class: mark.class }),
            (Link::Frames(ep), Addr::Eth(e)) => ep.send_frame(bytes, MacAddr(e.mac), e.ethertype),
            _ => {
                self.wrong_kind += 1;
                return;
            }
        };
        if r.is_err() {
            self.send_errors += 1;
        }
        if matches!(self.wait, Wait::Hybrid { .. } | Wait::Adaptive { .. }) {
            self.last_activity_ns = detpath::monotonic_ns();
        }
    }
    fn recv(&mut self, buf: &mut [u8], wait_ns: u64) -> Option<(usize, Addr, u64)> {
        if let Some((len, truncated, src, rx_ns)) = self.recv_group(buf) {
            if truncated {
                self.truncated += 1;
                return None;
            }
            return Some((len, src, rx_ns));
        }
        // With a group to look at, no wait on the unicast endpoint outlasts the poll interval.
        let wait_ns = if self.group.is_some() { wait_ns.min(GROUP_POLL_NS) } else { wait_ns };
        let busy = |n: u64| RecvMode::BusyPoll { timeout: Some(Duration::from_nanos(n)) };
        let block = |n: u64| if n == 0 { RecvMode::NonBlocking } else { RecvMode::Blocking { timeout: Some(Duration::from_nanos(n)) } };
        let wait = match self.wait {
            Wait::Adaptive { spin_ns } if wait_ns > 0 => {
                if self.core.contended(detpath::monotonic_ns()) {
                    Wait::Hybrid { spin_ns }
                } else {
                    Wait::Busy
                }
            }
            w => w,
        };
        let got = match (wait_ns, wait) {
            (0, _) => self.recv_once(buf, RecvMode::NonBlocking),
            (n, Wait::Busy | Wait::Adaptive { .. }) => self.recv_once(buf, busy(n)),
            (n, Wait::Block) => self.recv_once(buf, block(n)),
            (n, Wait::Hybrid { spin_ns }) => {
                let now = detpath::monotonic_ns();
                let spin = (self.last_activity_ns + spin_ns).saturating_sub(now).min(n);
                let spun = if spin > 0 { self.recv_once(buf, busy(spin)) } else { None };
                spun.or_else(|| {
                    let rest = n.saturating_sub(detpath::monotonic_ns() - now);
                    self.recv_once(buf, block(rest))
                })
            }
        };
        let (len, truncated, src, rx_ns) = got?;
        self.last_activity_ns = rx_ns;
        if truncated {
            self.truncated += 1;
            return None;
        }
        Some((len, src, rx_ns))
    }
    fn now_ns(&self) -> u64 {
        detpath::monotonic_ns()
    }
    fn local_addr(&self) -> Addr {
        self.local
    }
    fn max_datagram(&self) -> usize {
        self.max_datagram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_wait_receives_while_spinning_and_after_it_sleeps() {
        use crate::driver::Transport as _;
        let a = detpath_open::open("udp://127.0.0.1:0").unwrap();
        let b = detpath_open::open("udp://127.0.0.1:0").unwrap();
        let b_addr = b.local_addr();
        let mut a = EndpointTransport::new(a, Wait::Hybrid { spin_ns: 50_000_000 });
        let mut b = EndpointTransport::new(b, Wait::Block);
        let mut buf = [0u8; 64];
        // Nothing there: the wait ends empty after about its length, spin then sleep.
        let t0 = detpath::monotonic_ns();
        assert!(a.recv(&mut buf, 20_000_000).is_none());
        let waited = detpath::monotonic_ns() - t0;
        assert!((20_000_000..2_000_000_000).contains(&waited), "{waited} ns");
        // An answer inside the spin window (just after a send), and one long after it.
        for pause_ms in [1u64, 120] {
            a.send(Addr::Udp(b_addr), b"ping");
            let (n, from, _) = b.recv(&mut buf, 1_000_000_000).expect("b gets the ping");
            assert_eq!(&buf[..n], b"ping");
            std::thread::sleep(Duration::from_millis(pause_ms));
            b.send(from, b"pong");
            let (n, _, _) = a.recv(&mut buf, 1_000_000_000).expect("a gets the pong");
            assert_eq!(&buf[..n], b"pong", "after {pause_ms} ms");
        }
    }

    #[test]
    fn an_adaptive_wait_yields_a_core_it_shares_with_a_spinner_and_still_receives() {
        use crate::driver::Transport as _;
        use std::sync::atomic::{AtomicBool, Ordering};
        let core = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
        let pin = move || {
            // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays in bounds.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(core, &mut set) };
            // SAFETY: the calling thread, a valid set of the right size.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        };
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let spinner = std::thread::spawn(move || {
            pin();
            while !s.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        pin();
        let a = detpath_open::open("udp://127.0.0.1:0").unwrap();
        let mut b = detpath_open::open("udp://127.0.0.1:0").unwrap();
        let a_addr = a.local_addr();
        let mut a = EndpointTransport::new(a, Wait::ADAPTIVE);
        let mut buf = [0u8; 64];
        // 300 ms of waiting for nothing beside a spinner: spinning would wait
        // on the run queue about half the time, so the wait starts to yield.
        let t0 = detpath::monotonic_ns();
        while detpath::monotonic_ns() - t0 < 300_000_000 && a.core_yields() == 0 {
            assert!(a.recv(&mut buf, 20_000_000).is_none());
        }
        let yields = a.core_yields();
        // Yielding, it still gets what arrives.
        b.send_to(b"late", a_addr).unwrap();
        let got = a.recv(&mut buf, 1_000_000_000).map(|(n, _, _)| buf[..n].to_vec());
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(yields >= 1, "never yielded a core it shared with a spinner");
        assert_eq!(got.as_deref(), Some(&b"late"[..]));
    }

    #[test]
    fn raweth_specs_name_the_frame_datapath_and_default_the_ethertype() {
        assert_eq!(raweth_spec("raweth://dpa").as_deref(), Some("packet://dpa?port=7400"));
        assert_eq!(raweth_spec("raweth+afxdp://dpa?mode=skb").as_deref(), Some("afxdp://dpa?mode=skb&port=7400"));
        assert_eq!(raweth_spec("raweth+packet://dpa?port=7410").as_deref(), Some("packet://dpa?port=7410"));
        assert_eq!(raweth_spec("afxdp://dpa?port=7410"), None);
        assert_eq!(raweth_spec("rawethx://dpa"), None);
    }
}

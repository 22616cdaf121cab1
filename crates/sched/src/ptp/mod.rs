//! IEEE 1588-2008 (PTPv2) over UDP/IPv4 for the slot clock: end-to-end
//! delay request-response, two-step Sync/Follow_Up, Delay_Req/Delay_Resp,
//! Announce and the best-master choice as far as one master and one slave
//! need it, with software time stamps. It interoperates with `ptp4l -4 -S`
//! (linuxptp) in both roles (crates/sched/tests/ptp4l.rs).
//!
//! KeepON (paper 003, §5) keeps its slot clock in step with a PTP master
//! without touching the host's clocks; so does this module: the slave steers
//! a [`PtpClock`] (the slot clock over its tick source, mapped to
//! CLOCK_REALTIME) with the [`PiServo`], and nothing here ever sets or slews
//! a host clock.
//!
//! Ports, as `ptp4l -4` uses them:
//!
//! - the **detpath endpoint** of the user's spec (any datapath, e.g.
//!   `afxdp://dpa?port=319&rx_stamp=xdp`) owns the event port's unicast
//!   traffic: the slave's Delay_Req to its master and the master's Sync to
//!   each slave it has heard from; its `rx_ns` (the XDP program's or the
//!   kernel's arrival stamp under `rx_stamp=xdp|kernel`) stamps what
//!   arrives there;
//! - a kernel socket on the group 224.0.1.129, event port 319, carries the
//!   multicast event messages (a ptp4l master's Sync, a ptp4l slave's
//!   Delay_Req, the master's Sync before it knows a slave), with the
//!   kernel's software stamps ([`net`]);
//! - a kernel socket on the general port 320 (group and unicast): Announce,
//!   Follow_Up, Delay_Resp.
//!
//! Time scale: ptp4l with software stamps runs on CLOCK_REALTIME and
//! announces an arbitrary timescale (its `ptpTimescale` flag clear), so a
//! detpath master does the same and a detpath slave takes a master's times
//! as they come (minus `currentUtcOffset` only when a master announces the
//! PTP timescale with a valid offset).
//!
//! Modules: [`wire`] (the message codec), [`bmca`] (foreign masters and the
//! dataset comparison), [`net`] (the group sockets).

pub mod bmca;
pub mod net;
pub mod wire;

use crate::clock::{OverlaySource, SlotClock, TickSource};
use crate::servo::{PiServo, ServoConfig, ServoOutput, ServoState};
use crate::slot::Ring;
use crate::sync::{DelayFilter, SyncReport, SyncSample};
use bmca::ForeignMasters;
use detpath::{monotonic_ns, Endpoint, RecvMode};
use net::{PtpSocket, Received, EVENT_PORT, GENERAL_PORT, PTP_GROUP};
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddrV4};
use thiserror::Error;
use wire::{Announce, Body, Header, Message, MsgType, PortIdentity, Timestamp};

/// A PTP node could not start.
#[derive(Debug, Error)]
pub enum PtpError {
    /// The PTP endpoint could not be opened.
    #[error("{spec}: {source}")]
    Open {
        /// The endpoint spec as given.
        spec: String,
        /// Why detpath could not open it.
        source: detpath::Error,
    },
    /// The spec binds a port other than the event port (319).
    #[error("{spec}: the PTP event port is {EVENT_PORT} (ptp4l's); the spec binds {port}: use `port={EVENT_PORT}`")]
    Port {
        /// The endpoint spec as given.
        spec: String,
        /// The port the spec binds.
        port: u16,
    },
    /// The spec names no interface to join the PTP group on.
    #[error("{spec}: the endpoint names no interface to join {PTP_GROUP} on: use `<datapath>://<iface>?port={EVENT_PORT}`")]
    NoIface {
        /// The endpoint spec as given.
        spec: String,
    },
    /// The spec puts the endpoint behind the slot scheduler.
    #[error("{spec}: `sched=` keys schedule sends, and a PTP message's transmit time must be known when it leaves: drop them from the PTP endpoint")]
    Scheduled {
        /// The endpoint spec as given.
        spec: String,
    },
    /// The interface's facts (index, address) could not be read.
    #[error("interface {iface}: {source}")]
    Iface {
        /// The interface.
        iface: String,
        /// The kernel's answer.
        source: detpath::sys::Error,
    },
    /// A kernel socket for the PTP group or the general port could not be opened.
    #[error("opening PTP port {port} on {iface}: {source}")]
    Socket {
        /// The interface.
        iface: String,
        /// The port (319 or 320).
        port: u16,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// Sending or receiving on a kernel PTP socket failed.
    #[error("PTP I/O on {what}: {source}")]
    Io {
        /// Which socket or step.
        what: &'static str,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// Receiving on the detpath endpoint failed.
    #[error("receiving on the PTP endpoint: {0}")]
    Recv(detpath::Error),
}

/// The slot clock of a PTP node: a [`SlotClock`] over a free-running
/// [`OverlaySource`] (CLOCK_MONOTONIC with an injected rate error), mapped
/// to CLOCK_REALTIME at start plus an injected offset. The servo steers the
/// [`SlotClock`]'s offset and rate; the tick count (the slots) never moves,
/// and no host clock is read for anything but the mapping and the truth.
#[derive(Debug, Clone)]
pub struct PtpClock {
    src: OverlaySource,
    clock: SlotClock,
    start_mono: u64,
    injected_offset_ns: i64,
    injected_drift_ppb: i64,
}

impl PtpClock {
    /// A clock that reads CLOCK_REALTIME + `offset_ns` now and runs `drift_ppb` fast.
    pub fn new(offset_ns: i64, drift_ppb: i64) -> PtpClock {
        let start_mono = monotonic_ns();
        let real = start_mono as i128 + net::real_minus_mono() + offset_ns as i128;
        let src = OverlaySource { epoch_mono: start_mono, offset_ns: 0, drift_ppb };
        let clock = SlotClock::new(Ring { slot_ns: 10_000, slots: 100 }, real.clamp(0, u64::MAX as i128) as u64);
        PtpClock { src, clock, start_mono, injected_offset_ns: offset_ns, injected_drift_ppb: drift_ppb }
    }

    /// The clock's reading (ns since the epoch, REALTIME scale) at CLOCK_MONOTONIC instant `mono`.
    pub fn time_at(&self, mono: u64) -> i128 {
        self.clock.time_i128(self.src.elapsed_ns(mono))
    }

    /// The clock's reading minus CLOCK_REALTIME at `mono`: its true error when the
    /// master runs on this host's CLOCK_REALTIME (ptp4l with software stamps in the testbed).
    pub fn error_ns(&self, mono: u64) -> i64 {
        (self.time_at(mono) - (mono as i128 + net::real_minus_mono())) as i64
    }

    /// CLOCK_MONOTONIC instant the clock started.
    pub fn start_mono(&self) -> u64 {
        self.start_mono
    }

    /// The injected offset and drift.
    pub fn injected(&self) -> (i64, i64) {
        (self.injected_offset_ns, self.injected_drift_ppb)
    }

    /// The servo's rate adjustment in force, ppb.
    pub fn rate_ppb(&self) -> i64 {
        self.clock.rate_ppb()
    }

    /// The slot count at `mono` (unchanged by every adjustment).
    pub fn slot(&self, mono: u64) -> u64 {
        self.clock.count(self.src.elapsed_ns(mono))
    }

    /// Applies a servo output at `mono`: a step (state Jump) and the rate.
    pub fn apply(&mut self, mono: u64, out: &ServoOutput) {
        let elapsed = self.src.elapsed_ns(mono);
        match out.state {
            ServoState::Unlocked => {}
            ServoState::Jump => {
                self.clock.step(out.step_ns);
                self.clock.set_rate(elapsed, out.rate_ppb.round() as i64);
            }
            ServoState::Locked => self.clock.set_rate(elapsed, out.rate_ppb.round() as i64),
        }
    }
}

/// What a PTP node runs with.
#[derive(Debug, Clone, Copy)]
pub struct PtpConfig {
    /// Offset injected into the slot clock, ns.
    pub offset_ns: i64,
    /// Rate error injected into the slot clock's oscillator, ppb.
    pub drift_ppb: i64,
    /// How long to run, ns.
    pub duration_ns: u64,
    /// Locked: |residual| within this, ns.
    pub lock_threshold_ns: u64,
    /// Master: log2 of the Sync interval, s (-2: four a second).
    pub log_sync_interval: i8,
    /// Master: log2 of the Announce interval, s (-1: two a second).
    pub log_announce_interval: i8,
    /// Master: grandmasterPriority1 (lower wins the best-master choice).
    pub priority1: u8,
    /// domainNumber.
    pub domain: u8,
}

impl Default for PtpConfig {
    fn default() -> PtpConfig {
        PtpConfig {
            offset_ns: 0,
            drift_ppb: 0,
            duration_ns: 30_000_000_000,
            lock_threshold_ns: 20_000,
            log_sync_interval: -2,
            log_announce_interval: -1,
            priority1: 128,
            domain: 0,
        }
    }
}

/// Datagrams a node dropped, by reason (nothing from the network ends a node).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Drops {
    /// Not a PTPv2 message (short, bad version or length).
    pub malformed: u64,
    /// PTP messages this node does not use (peer delay, signalling, management).
    pub unused: u64,
    /// Another domain.
    pub other_domain: u64,
    /// From a port that is not this node's master, or answering another requester.
    pub not_ours: u64,
    /// Foreign masters beyond the table's bound.
    pub table_full: u64,
    /// This port's own multicast, heard back.
    pub own: u64,
}

/// The node's ports: the detpath endpoint and the two group sockets.
pub struct Ports {
    ep: Box<dyn Endpoint>,
    event: PtpSocket,
    general: PtpSocket,
    /// This port's identity (from the interface's MAC).
    pub me: PortIdentity,
    /// The interface.
    pub iface: String,
    /// The endpoint's datapath and its receive stamp (e.g. `afxdp, rx_stamp=xdp`).
    pub endpoint: String,
    buf: Vec<u8>,
}

/// Where a message came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Endpoint,
    Event,
    General,
}

impl Ports {
    /// Opens the endpoint of `spec` (event port 319, any datapath) and the group sockets on its interface.
    pub fn open(spec: &str) -> Result<Ports, PtpError> {
        let open_err = |source| PtpError::Open { spec: spec.to_string(), source };
        // Parsed with the scheduler's layer only, to see whether it asks for one.
        static SCHED: detpath::layer::Registry = &[&crate::spec::LAYER];
        if detpath::EndpointSpec::parse_with(spec, SCHED).map_err(open_err)?.layer_keys("sched").is_some() {
            return Err(PtpError::Scheduled { spec: spec.to_string() });
        }
        let ep = detpath::open(spec).map_err(open_err)?;
        let local = ep.local_addr();
        if local.port() != EVENT_PORT {
            return Err(PtpError::Port { spec: spec.to_string(), port: local.port() });
        }
        let Some(iface) = ep.capabilities().iface.clone() else { return Err(PtpError::NoIface { spec: spec.to_string() }) };
        let dev = detpath::sys::NetDev::lookup(&iface).map_err(|source| PtpError::Iface { iface: iface.clone(), source })?;
        let sock = |port, group| {
            PtpSocket::open(&iface, dev.ifindex, *local.ip(), port, group).map_err(|source| PtpError::Socket { iface: iface.clone(), port, source })
        };
        let event = sock(EVENT_PORT, true)?;
        let general = sock(GENERAL_PORT, false)?;
        let caps = ep.capabilities();
        let endpoint = format!("{} {} (rx_stamp={:?})", caps.datapath, local, caps.rx_stamp).to_lowercase();
        Ok(Ports { me: PortIdentity::from_mac(dev.mac.0), ep, event, general, iface, endpoint, buf: vec![0u8; 2048] })
    }

    /// The next waiting datagram from any of the three, with its arrival stamp (CLOCK_MONOTONIC).
    fn poll(&mut self) -> Result<Option<(Via, usize, SocketAddrV4, u64)>, PtpError> {
        if let Some(rx) = self.ep.recv(&mut self.buf, RecvMode::NonBlocking).map_err(PtpError::Recv)? {
            return Ok(Some((Via::Endpoint, rx.len, rx.peer, rx.rx_ns)));
        }
        for (via, sock) in [(Via::Event, &mut self.event), (Via::General, &mut self.general)] {
            let got: Option<Received> = sock.recv(&mut self.buf).map_err(|source| PtpError::Io { what: "a PTP group socket", source })?;
            if let Some(r) = got {
                return Ok(Some((via, r.len, r.peer, r.rx_ns)));
            }
        }
        Ok(None)
    }

    /// Sends an event message unicast through the detpath endpoint; returns its software transmit time.
    fn send_event_unicast(&mut self, msg: &Message, to: Ipv4Addr) -> Option<u64> {
        let mut b = [0u8; wire::ANNOUNCE_LEN];
        let n = msg.encode(&mut b)?;
        let t = monotonic_ns();
        self.ep.send_to(&b[..n], SocketAddrV4::new(to, EVENT_PORT)).ok().map(|_| t)
    }

    /// Sends an event message to the group; returns the kernel's transmit stamp.
    fn send_event_group(&mut self, msg: &Message) -> Option<u64> {
        let mut b = [0u8; wire::ANNOUNCE_LEN];
        let n = msg.encode(&mut b)?;
        self.event.send_stamped(&b[..n], SocketAddrV4::new(PTP_GROUP, EVENT_PORT)).ok().map(|(t, _)| t)
    }

    /// Sends a general message to `to` (the group or a unicast peer).
    fn send_general(&mut self, msg: &Message, to: Ipv4Addr) -> bool {
        let mut b = [0u8; wire::ANNOUNCE_LEN];
        let Some(n) = msg.encode(&mut b) else { return false };
        self.general.send(&b[..n], SocketAddrV4::new(to, GENERAL_PORT)).is_ok()
    }
}

/// Parses a datagram, counting what it drops.
fn parse(b: &[u8], domain: u8, drops: &mut Drops) -> Option<Message> {
    match Message::parse(b) {
        Ok(m) if m.header.domain == domain => Some(m),
        Ok(_) => {
            drops.other_domain += 1;
            None
        }
        Err(wire::WireError::Other(_)) => {
            drops.unused += 1;
            None
        }
        Err(_) => {
            drops.malformed += 1;
            None
        }
    }
}

fn ts_of(local: i128) -> Timestamp {
    Timestamp::from_ns(local.clamp(0, u64::MAX as i128) as u64)
}

/// Sleeps briefly when nothing arrived: the arrival stamps come from the
/// kernel or the XDP program, so the poll period only delays the servo.
fn idle() {
    std::thread::sleep(std::time::Duration::from_micros(200));
}

/// The slave's summary.
#[derive(Debug, Clone, Serialize)]
pub struct SlaveReport {
    /// The servo's samples and the residual (the slot clock's true error
    /// against CLOCK_REALTIME, which the ptp4l master's time is on).
    pub sync: SyncReport,
    /// The residual stayed within the threshold for the last 5 s of the run.
    pub locked: bool,
    /// Seconds the run lasted.
    pub run_s: f64,
    /// The master followed (its port identity), if any.
    pub master: Option<String>,
    /// Median one-way path delay at the end, ns.
    pub path_delay_ns: i64,
    /// Sync/Follow_Up pairs completed.
    pub syncs: u64,
    /// Delay_Req sent through the endpoint.
    pub delay_reqs: u64,
    /// Delay_Resp matched.
    pub delay_resps: u64,
    /// Dropped datagrams by reason.
    pub drops: Drops,
    /// The endpoint the Delay_Reqs went through.
    pub endpoint: String,
    /// Injected offset and drift.
    pub injected_offset_ns: i64,
    /// Injected drift, ppb.
    pub injected_drift_ppb: i64,
}

/// A Sync waiting for its Follow_Up (or the other way round).
#[derive(Debug, Clone, Copy)]
struct PendingSync {
    seq: u16,
    t1: Option<i128>,
    t2: Option<i128>,
    corr: i64,
}

/// Runs a slave-only port on `ports` for `cfg.duration_ns` (or until `stop`):
/// follows the best master heard, steers `clock`, and reports.
pub fn run_slave(ports: &mut Ports, clock: &mut PtpClock, cfg: &PtpConfig, stop: &dyn Fn() -> bool) -> Result<SlaveReport, PtpError> {
    let start = monotonic_ns();
    let end = start + cfg.duration_ns;
    let mut masters = ForeignMasters::default();
    let mut master: Option<(PortIdentity, Ipv4Addr, Header)> = None;
    let mut servo: Option<PiServo> = None;
    let mut pending: Option<PendingSync> = None;
    let mut last_pair: Option<(i128, i128)> = None;
    let mut delay = DelayFilter::default();
    let mut delay_req: Option<(u16, i128, u64)> = None;
    let mut next_req_ns = 0u64;
    let mut req_interval_ns = 0u64;
    let mut req_seq = 0u16;
    let (mut syncs, mut reqs, mut resps) = (0u64, 0u64, 0u64);
    let mut drops = Drops::default();
    let mut samples = Vec::new();
    while monotonic_ns() < end && !stop() {
        let Some((via, len, peer, rx_ns)) = ports.poll()? else {
            idle();
            continue;
        };
        let Some(m) = parse(&ports.buf[..len], cfg.domain, &mut drops) else { continue };
        if m.header.source == ports.me {
            drops.own += 1;
            continue;
        }
        let now = monotonic_ns();
        match (via, m.body) {
            (Via::General, Body::Announce(a)) => {
                if !masters.heard(m.header.source, *peer.ip(), a, m.header.log_interval, now) {
                    drops.table_full += 1;
                }
                let best = masters.best(now).map(|f| (f.dataset.sender, f.addr));
                match (best, &master) {
                    (Some((id, addr)), Some((cur, _, _))) if id == *cur => {
                        if let Some(mm) = &mut master {
                            mm.1 = addr;
                            if m.header.source == id {
                                mm.2 = m.header;
                            }
                        }
                    }
                    (Some((id, addr)), _) => {
                        // A new master: start the servo and the delay estimate over.
                        master = Some((id, addr, m.header));
                        servo = None;
                        pending = None;
                        last_pair = None;
                        delay = DelayFilter::default();
                        delay_req = None;
                    }
                    (None, _) => {}
                }
            }
            (Via::Event | Via::Endpoint, Body::Sync(origin)) | (Via::General, Body::FollowUp(origin)) => {
                let Some((id, _, ann)) = master else { continue };
                if m.header.source != id {
                    drops.not_ours += 1;
                    continue;
                }
                // A master announcing the PTP timescale sends TAI; the slot clock is on CLOCK_REALTIME (UTC).
                let utc = if ann.flags & wire::FLAG_PTP_TIMESCALE != 0 && ann.flags & wire::FLAG_UTC_OFFSET_VALID != 0 {
                    match masters.best(now).map(|f| f.dataset.announce.utc_offset) {
                        Some(o) => o as i128 * 1_000_000_000,
                        None => 0,
                    }
                } else {
                    0
                };
                let p = match pending {
                    Some(p) if p.seq == m.header.sequence => p,
                    _ => PendingSync { seq: m.header.sequence, t1: None, t2: None, corr: 0 },
                };
                let mut p = p;
                p.corr += m.header.correction_ns();
                if m.header.msg_type == MsgType::Sync {
                    p.t2 = Some(clock.time_at(rx_ns));
                    if m.header.flags & wire::FLAG_TWO_STEP == 0 {
                        p.t1 = Some(origin.to_ns() - utc);
                    }
                } else {
                    p.t1 = Some(origin.to_ns() - utc);
                }
                pending = Some(p);
                let (Some(t1), Some(t2)) = (p.t1, p.t2) else { continue };
                pending = None;
                syncs += 1;
                let t1 = t1 + p.corr as i128;
                last_pair = Some((t1, t2));
                let interval_s = bmca::interval_ns(m.header.log_interval).clamp(7_812_500, 16_000_000_000) as f64 / 1e9;
                let s = servo.get_or_insert_with(|| PiServo::new(ServoConfig::linuxptp(interval_s)));
                if delay.len() >= crate::sync::WARMUP_EXCHANGES as usize {
                    let offset = (t2 - t1 - delay.median() as i128) as i64;
                    let out = s.sample(offset, t2.clamp(0, u64::MAX as i128) as u64);
                    let now = monotonic_ns();
                    clock.apply(now, &out);
                    samples.push(SyncSample {
                        t_s: (now - start) as f64 / 1e9,
                        state: out.state,
                        measured_offset_ns: offset,
                        delay_ns: delay.median(),
                        rate_ppb: out.rate_ppb,
                        true_offset_ns: clock.error_ns(now),
                    });
                }
                // A Delay_Req after the Sync, at most once per the master's logMinDelayReqInterval.
                let now = monotonic_ns();
                let stale = delay_req.is_some_and(|(_, _, sent)| now > sent + 1_000_000_000);
                if (delay_req.is_none() || stale) && now >= next_req_ns {
                    let Some((_, addr, _)) = master else { continue };
                    req_seq = req_seq.wrapping_add(1);
                    let mut h = Header::new(MsgType::DelayReq, ports.me, req_seq, 0x7f);
                    h.domain = cfg.domain;
                    let msg = Message { header: h, body: Body::DelayReq(Timestamp::default()) };
                    if let Some(tx) = ports.send_event_unicast(&msg, addr) {
                        delay_req = Some((req_seq, clock.time_at(tx), tx));
                        reqs += 1;
                        next_req_ns = now + req_interval_ns;
                    }
                }
            }
            (Via::General, Body::DelayResp(t4, requester)) => {
                let Some((id, _, _)) = master else { continue };
                if m.header.source != id || requester != ports.me {
                    drops.not_ours += 1;
                    continue;
                }
                let Some((seq, t3, _)) = delay_req else { continue };
                if seq != m.header.sequence {
                    continue;
                }
                delay_req = None;
                resps += 1;
                req_interval_ns = bmca::interval_ns(m.header.log_interval).min(16_000_000_000);
                let Some((t1, t2)) = last_pair else { continue };
                let t4 = t4.to_ns() - m.header.correction_ns() as i128;
                let d = ((t2 - t1) + (t4 - t3)) / 2;
                delay.push(d.clamp(i64::MIN as i128, i64::MAX as i128) as i64);
            }
            _ => drops.not_ours += 1,
        }
    }
    let run_s = (monotonic_ns() - start) as f64 / 1e9;
    let drift = servo.as_ref().map(|s| s.drift_ppb()).unwrap_or(0.0);
    let sync = SyncReport::from_samples(samples, cfg.lock_threshold_ns, drift);
    let locked = sync.time_to_lock_s.is_some_and(|t| run_s - t >= 5.0);
    let (injected_offset_ns, injected_drift_ppb) = clock.injected();
    Ok(SlaveReport {
        sync,
        locked,
        run_s,
        master: master.map(|(id, addr, _)| format!("{id} at {addr}")),
        path_delay_ns: delay.median(),
        syncs,
        delay_reqs: reqs,
        delay_resps: resps,
        drops,
        endpoint: ports.endpoint.clone(),
        injected_offset_ns,
        injected_drift_ppb,
    })
}

/// A slave the master has heard a Delay_Req from.
#[derive(Debug, Clone, Serialize)]
pub struct SlaveSeen {
    /// Its port identity.
    pub port: String,
    /// Its address.
    pub addr: Ipv4Addr,
    /// Delay_Reqs answered.
    pub delay_reqs: u64,
    /// Of which came through the detpath endpoint (unicast).
    pub via_endpoint: u64,
    #[serde(skip)]
    last_ns: u64,
}

/// The master's summary.
#[derive(Debug, Clone, Serialize)]
pub struct MasterReport {
    /// Seconds the run lasted.
    pub run_s: f64,
    /// Announce messages sent.
    pub announces: u64,
    /// Sync rounds sent to the group (no slave known yet).
    pub syncs_group: u64,
    /// Syncs sent unicast through the detpath endpoint, one per known slave per round.
    pub syncs_unicast: u64,
    /// Delay_Resp sent.
    pub delay_resps: u64,
    /// The slaves heard from.
    pub slaves: Vec<SlaveSeen>,
    /// Dropped datagrams by reason.
    pub drops: Drops,
    /// The endpoint the unicast Syncs went through.
    pub endpoint: String,
    /// Injected offset, ns.
    pub injected_offset_ns: i64,
    /// Injected drift, ppb.
    pub injected_drift_ppb: i64,
    /// CLOCK_MONOTONIC ns at which the slot clock started (its error is
    /// `offset + drift·(t − start)`: what a slave on CLOCK_REALTIME must see).
    pub start_mono_ns: u64,
    /// The slot clock minus CLOCK_REALTIME at the end, ns.
    pub final_error_ns: i64,
}

/// A slave that sent no Delay_Req for this long is forgotten (and Syncs go to the group again if none is left).
const SLAVE_TIMEOUT_NS: u64 = 5_000_000_000;
/// Most slaves the master keeps (a flood of forged requesters cannot grow the table).
const MAX_SLAVES: usize = 16;

/// Runs a master-only port on `ports` for `cfg.duration_ns` (or until
/// `stop`): Announce every 2^log_announce_interval s to the group; a
/// two-step Sync every 2^log_sync_interval s, to the group while it knows no
/// slave and unicast through the detpath endpoint to each slave it has heard
/// a Delay_Req from (a slave whose requests stop gets the group again);
/// answers every Delay_Req with the arrival time on its slot clock.
pub fn run_master(ports: &mut Ports, clock: &PtpClock, cfg: &PtpConfig, stop: &dyn Fn() -> bool) -> Result<MasterReport, PtpError> {
    let start = monotonic_ns();
    let end = start + cfg.duration_ns;
    let sync_ns = bmca::interval_ns(cfg.log_sync_interval);
    let announce_ns = bmca::interval_ns(cfg.log_announce_interval);
    let (mut next_sync, mut next_announce) = (start, start);
    let (mut sync_seq, mut ann_seq) = (0u16, 0u16);
    let (mut announces, mut syncs_group, mut syncs_unicast, mut resps) = (0u64, 0u64, 0u64, 0u64);
    let mut slaves: Vec<SlaveSeen> = Vec::new();
    let mut drops = Drops::default();
    let me = ports.me;
    let header = |t: MsgType, seq: u16, log: i8| {
        let mut h = Header::new(t, me, seq, log);
        h.domain = cfg.domain;
        h
    };
    let announce = Announce {
        origin: Timestamp::default(),
        utc_offset: 37,
        priority1: cfg.priority1,
        clock_class: 248,
        clock_accuracy: 0xfe,
        variance: 0xffff,
        priority2: 128,
        gm_identity: ports.me.clock,
        steps_removed: 0,
        time_source: 0xa0,
    };
    while monotonic_ns() < end && !stop() {
        let now = monotonic_ns();
        if now >= next_announce {
            ann_seq = ann_seq.wrapping_add(1);
            let a = Announce { origin: ts_of(clock.time_at(now)), ..announce };
            let msg = Message { header: header(MsgType::Announce, ann_seq, cfg.log_announce_interval), body: Body::Announce(a) };
            announces += ports.send_general(&msg, PTP_GROUP) as u64;
            next_announce += announce_ns;
        }
        if now >= next_sync {
            sync_seq = sync_seq.wrapping_add(1);
            slaves.retain(|s| now.saturating_sub(s.last_ns) < SLAVE_TIMEOUT_NS);
            let mut h = header(MsgType::Sync, sync_seq, cfg.log_sync_interval);
            h.flags = wire::FLAG_TWO_STEP;
            let mut fup = header(MsgType::FollowUp, sync_seq, cfg.log_sync_interval);
            if slaves.is_empty() {
                if let Some(tx) = ports.send_event_group(&Message { header: h, body: Body::Sync(Timestamp::default()) }) {
                    let msg = Message { header: fup, body: Body::FollowUp(ts_of(clock.time_at(tx))) };
                    ports.send_general(&msg, PTP_GROUP);
                    syncs_group += 1;
                }
            } else {
                h.flags |= wire::FLAG_UNICAST;
                fup.flags |= wire::FLAG_UNICAST;
                let addrs: Vec<Ipv4Addr> = slaves.iter().map(|s| s.addr).collect();
                for addr in addrs {
                    if let Some(tx) = ports.send_event_unicast(&Message { header: h, body: Body::Sync(Timestamp::default()) }, addr) {
                        let msg = Message { header: fup, body: Body::FollowUp(ts_of(clock.time_at(tx))) };
                        ports.send_general(&msg, addr);
                        syncs_unicast += 1;
                    }
                }
            }
            next_sync += sync_ns;
            // A master that fell behind (a stopped process) does not burst to catch up.
            if next_sync < now {
                next_sync = now + sync_ns;
            }
        }
        let Some((via, len, peer, rx_ns)) = ports.poll()? else {
            idle();
            continue;
        };
        let Some(m) = parse(&ports.buf[..len], cfg.domain, &mut drops) else { continue };
        if m.header.source == ports.me {
            drops.own += 1;
            continue;
        }
        match (via, m.body) {
            (Via::Endpoint | Via::Event, Body::DelayReq(_)) => {
                let t4 = clock.time_at(rx_ns);
                let unicast = via == Via::Endpoint;
                let mut h = header(MsgType::DelayResp, m.header.sequence, cfg.log_sync_interval);
                h.correction = m.header.correction;
                if unicast {
                    h.flags = wire::FLAG_UNICAST;
                }
                let msg = Message { header: h, body: Body::DelayResp(ts_of(t4), m.header.source) };
                let to = if unicast { *peer.ip() } else { PTP_GROUP };
                resps += ports.send_general(&msg, to) as u64;
                let now = monotonic_ns();
                let n = slaves.len();
                match slaves.iter_mut().find(|s| s.addr == *peer.ip()) {
                    Some(s) => {
                        s.delay_reqs += 1;
                        s.via_endpoint += unicast as u64;
                        s.last_ns = now;
                        s.port = m.header.source.to_string();
                    }
                    None if n < MAX_SLAVES => slaves.push(SlaveSeen {
                        port: m.header.source.to_string(),
                        addr: *peer.ip(),
                        delay_reqs: 1,
                        via_endpoint: unicast as u64,
                        last_ns: now,
                    }),
                    None => drops.table_full += 1,
                }
            }
            // Another master's messages: this port is master-only and keeps its role.
            _ => drops.not_ours += 1,
        }
    }
    let (injected_offset_ns, injected_drift_ppb) = clock.injected();
    Ok(MasterReport {
        run_s: (monotonic_ns() - start) as f64 / 1e9,
        announces,
        syncs_group,
        syncs_unicast,
        delay_resps: resps,
        slaves,
        drops,
        endpoint: ports.endpoint.clone(),
        injected_offset_ns,
        injected_drift_ppb,
        start_mono_ns: clock.start_mono(),
        final_error_ns: clock.error_ns(monotonic_ns()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_carries_the_injected_error_and_follows_the_servo() {
        let mut c = PtpClock::new(-250_000, 100_000);
        let t0 = c.start_mono();
        let e0 = c.error_ns(t0);
        assert!((e0 + 250_000).abs() < 50_000, "{e0}");
        // 1 s later the oscillator is 100 µs further ahead.
        let e1 = c.error_ns(t0 + 1_000_000_000);
        assert!((e1 - e0 - 100_000).abs() < 50_000, "{e0} {e1}");
        let slot = c.slot(t0 + 5_000_000);
        c.apply(t0 + 1_000_000_000, &ServoOutput { state: ServoState::Jump, rate_ppb: -100_000.0, step_ns: -e1 });
        assert!(c.error_ns(t0 + 1_000_000_000).abs() < 50_000);
        assert!(c.error_ns(t0 + 2_000_000_000).abs() < 60_000, "{}", c.error_ns(t0 + 2_000_000_000));
        assert_eq!(c.slot(t0 + 5_000_000), slot, "the servo never moves the slot count");
    }
}

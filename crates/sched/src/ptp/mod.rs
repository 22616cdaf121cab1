//! IEEE 1588-2008 (PTPv2) over UDP/IPv4 for the slot clock: end-to-end
//! delay request-response, two-step Sync/Follow_Up, Delay_Req/Delay_Resp,
//! Announce and the best-master choice as far as one master and one slave
//! need it, with software time stamps. It interoperates with `ptp4l -4 -S`
//! (linuxptp) in both roles (crates/sched/tests/ptp4l.rs).
//!
//! KeepON (paper 003, §5) keeps its slot clock in step with a PTP master
//! without touching the host's clocks; so does this module: the slave steers
//! a [`PtpClock`] (the slot clock over its tick source, mapped to
//! CLOCK_REALTIME) with the [`PiServo`](crate::servo::PiServo) behind a
//! [`SpikeFilter`] (a forged time stamp is counted, not followed), and
//! nothing here ever sets or slews a host clock.
//!
//! Ports, as `ptp4l -4` uses them:
//!
//! - the **detpath endpoint** of the user's spec (any datapath, e.g.
//!   `afxdp://dpa?port=319&rx_stamp=xdp`) owns the event port's unicast
//!   traffic: the slave's Delay_Req to its master, and at a master the
//!   unicast Delay_Req of a slave (ptp4l's `hybrid_e2e`, a detpath slave);
//!   its `rx_ns` (the XDP program's or the kernel's arrival stamp under
//!   `rx_stamp=xdp|kernel`) stamps what arrives there;
//! - a kernel socket on the group 224.0.1.129, event port 319, carries the
//!   multicast event messages (a master's Sync, always to the group as
//!   ptp4l's; a ptp4l slave's Delay_Req), with the kernel's software stamps
//!   ([`net`]);
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
pub mod shared;
pub mod wire;

use crate::clock::{OverlaySource, SlotClock, TickSource};
use crate::servo::{spike_threshold_ns, ServoConfig, ServoOutput, ServoState, SpikeFilter};
use crate::slot::Ring;
use crate::sync::{path_delay_ns, plausible_delay, saturate, DelayFilter, SyncReport, SyncSample};
use bmca::ForeignMasters;
use detpath::{monotonic_ns, Endpoint, RecvMode};
use net::{PtpSocket, Received, EVENT_PORT, GENERAL_PORT, PTP_GROUP};
pub use shared::{SharedPtpClock, SlaveClock};
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
    pub(crate) fn error_ns(&self, mono: u64) -> i64 {
        saturate(self.time_at(mono) - (mono as i128 + net::real_minus_mono()))
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
        let ep = spec.parse().and_then(|s| detpath::open_spec(&s)).map_err(open_err)?;
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
    /// Sync samples not fed to the servo: their offset disagreed with the
    /// samples it follows by more than the spike threshold (a forged or held-up
    /// time stamp; see [`SpikeFilter`]).
    pub outliers: u64,
    /// Delay_Resp whose path delay could not be one (negative or over 1 s): not taken.
    pub bad_delays: u64,
    /// Messages whose logMessageInterval was outside [`bmca::RECEIVED_LOG_INTERVALS`] (clamped into it).
    pub clamped_intervals: u64,
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

impl PendingSync {
    /// Adds the master's Sync (arrived at slave time `t2`) or Follow_Up
    /// (`origin`, the master's time, minus `utc`) to the pair of its
    /// sequence, or starts a new pair.
    fn add(pending: Option<PendingSync>, m: &Message, origin: Timestamp, t2: i128, utc: i128) -> PendingSync {
        let mut p = match pending {
            Some(p) if p.seq == m.header.sequence => p,
            _ => PendingSync { seq: m.header.sequence, t1: None, t2: None, corr: 0 },
        };
        // Saturated: 65,537 forged Syncs of one sequence with the most negative
        // correctionField would overflow the sum.
        p.corr = p.corr.saturating_add(m.header.correction_ns());
        if m.header.msg_type == MsgType::Sync {
            p.t2 = Some(t2);
            if m.header.flags & wire::FLAG_TWO_STEP == 0 {
                p.t1 = Some(origin.to_ns() - utc);
            }
        } else {
            p.t1 = Some(origin.to_ns() - utc);
        }
        p
    }

    /// (t1 corrected, t2) once both halves are in.
    fn pair(&self) -> Option<(i128, i128)> {
        Some((self.t1? + self.corr as i128, self.t2?))
    }
}

/// A received logMessageInterval within [`bmca::RECEIVED_LOG_INTERVALS`];
/// `clamped` counts the messages that claimed more or less.
fn claimed_log_interval(log: i8, clamped: &mut u64) -> i8 {
    let (log, was) = bmca::received_log_interval(log);
    *clamped += was as u64;
    log
}

/// Runs a slave-only port on `ports` for `cfg.duration_ns` (or until `stop`):
/// follows the best master heard, steers `clock` (a [`PtpClock`] it owns,
/// or a [`SharedPtpClock`] others read meanwhile), and reports.
pub fn run_slave<C: SlaveClock>(ports: &mut Ports, clock: &mut C, cfg: &PtpConfig, stop: &dyn Fn() -> bool) -> Result<SlaveReport, PtpError> {
    let start = monotonic_ns();
    let end = start + cfg.duration_ns;
    let mut masters = ForeignMasters::default();
    let mut master: Option<(PortIdentity, Ipv4Addr, Header)> = None;
    let mut servo: Option<SpikeFilter> = None;
    let mut pending: Option<PendingSync> = None;
    let mut last_pair: Option<(i128, i128)> = None;
    let mut delay = DelayFilter::default();
    let mut delay_req: Option<(u16, i128, u64)> = None;
    let mut next_req_ns = 0u64;
    let mut req_interval_ns = 0u64;
    let mut req_seq = 0u16;
    let (mut syncs, mut reqs, mut resps) = (0u64, 0u64, 0u64);
    let (mut outliers, mut bad_delays, mut clamped_intervals) = (0u64, 0u64, 0u64);
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
                let log = claimed_log_interval(m.header.log_interval, &mut clamped_intervals);
                if !masters.heard(m.header.source, *peer.ip(), a, log, now) {
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
                        outliers += servo.take().map_or(0, |s| s.outliers());
                        pending = None;
                        last_pair = None;
                        delay = DelayFilter::default();
                        delay_req = None;
                    }
                    (None, _) => {}
                }
            }
            (Via::Event | Via::Endpoint, Body::Sync(origin)) | (Via::General, Body::FollowUp(origin)) => {
                let Some((id, addr, ann)) = master else { continue };
                if m.header.source != id || *peer.ip() != addr {
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
                let p = PendingSync::add(pending, &m, origin, clock.time_at(rx_ns), utc);
                pending = Some(p);
                let Some((t1, t2)) = p.pair() else { continue };
                pending = None;
                syncs += 1;
                last_pair = Some((t1, t2));
                // A unicast Sync gives no interval (0x7f): the servo's gains then follow the configured one.
                let log = match m.header.log_interval {
                    bmca::LOG_INTERVAL_UNSPECIFIED => cfg.log_sync_interval,
                    log => claimed_log_interval(log, &mut clamped_intervals),
                };
                let interval_s = bmca::interval_ns(log) as f64 / 1e9;
                let s = servo.get_or_insert_with(|| SpikeFilter::new(ServoConfig::linuxptp(interval_s), spike_threshold_ns(cfg.lock_threshold_ns)));
                if delay.len() >= crate::sync::WARMUP_EXCHANGES as usize {
                    // Saturated, not wrapped: a forged origin makes it absurd, and the spike filter drops it.
                    let offset = saturate(t2 - t1 - delay.median() as i128);
                    if let Some(out) = s.sample(offset, t2.clamp(0, u64::MAX as i128) as u64) {
                        let now = monotonic_ns();
                        clock.apply(now, &out);
                        let sample = SyncSample {
                            t_s: (now - start) as f64 / 1e9,
                            state: out.state,
                            measured_offset_ns: offset,
                            delay_ns: delay.median(),
                            rate_ppb: out.rate_ppb,
                            true_offset_ns: clock.error_ns(now),
                        };
                        clock.record(&sample);
                        samples.push(sample);
                    }
                }
                // A Delay_Req after the Sync, at most once per the master's logMinDelayReqInterval.
                let now = monotonic_ns();
                let stale = delay_req.is_some_and(|(_, _, sent)| now > sent + 1_000_000_000);
                if (delay_req.is_none() || stale) && now >= next_req_ns {
                    req_seq = req_seq.wrapping_add(1);
                    let mut h = Header::new(MsgType::DelayReq, ports.me, req_seq, bmca::LOG_INTERVAL_UNSPECIFIED);
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
                let Some((id, addr, _)) = master else { continue };
                if m.header.source != id || *peer.ip() != addr || requester != ports.me {
                    drops.not_ours += 1;
                    continue;
                }
                let Some((seq, t3, _)) = delay_req else { continue };
                if seq != m.header.sequence {
                    continue;
                }
                delay_req = None;
                resps += 1;
                // A unicast Delay_Resp gives no interval (0x7f): keep the one in force.
                if m.header.log_interval != bmca::LOG_INTERVAL_UNSPECIFIED {
                    req_interval_ns = bmca::interval_ns(claimed_log_interval(m.header.log_interval, &mut clamped_intervals));
                }
                let Some((t1, t2)) = last_pair else { continue };
                let t4 = t4.to_ns() - m.header.correction_ns() as i128;
                // A delay that cannot be one (a forged time) is counted, not clamped into the filter.
                match plausible_delay(path_delay_ns(t1, t2, t3, t4)) {
                    Some(d) => {
                        delay.push(d);
                    }
                    None => bad_delays += 1,
                }
            }
            _ => drops.not_ours += 1,
        }
    }
    let run_s = (monotonic_ns() - start) as f64 / 1e9;
    let drift = servo.as_ref().map(|s| s.servo().drift_ppb()).unwrap_or(0.0);
    outliers += servo.as_ref().map_or(0, |s| s.outliers());
    let sync = SyncReport { outliers, ..SyncReport::from_samples(samples, cfg.lock_threshold_ns, drift) };
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
        outliers,
        bad_delays,
        clamped_intervals,
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
    /// Sync rounds sent to the group (every round).
    pub syncs_group: u64,
    /// Syncs sent unicast: none, every Sync goes to the group (what a
    /// Delay_Req says about its sender must not decide where Syncs go). Kept
    /// so the summary keeps its shape.
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

/// A slave that sent no Delay_Req for this long is forgotten (from the report's list).
const SLAVE_TIMEOUT_NS: u64 = 5_000_000_000;
/// Most slaves the master lists (a flood of forged requesters cannot grow the table).
const MAX_SLAVES: usize = 16;

/// Runs a master-only port on `ports` for `cfg.duration_ns` (or until
/// `stop`): Announce every 2^log_announce_interval s to the group; a
/// two-step Sync every 2^log_sync_interval s to the group; answers every
/// Delay_Req with the arrival time on its slot clock, unicast to a request
/// that came unicast (through the detpath endpoint), to the group otherwise,
/// and lists the slaves it heard from.
pub fn run_master(ports: &mut Ports, clock: &PtpClock, cfg: &PtpConfig, stop: &dyn Fn() -> bool) -> Result<MasterReport, PtpError> {
    let start = monotonic_ns();
    let end = start + cfg.duration_ns;
    let sync_ns = bmca::interval_ns(cfg.log_sync_interval);
    let announce_ns = bmca::interval_ns(cfg.log_announce_interval);
    let (mut next_sync, mut next_announce) = (start, start);
    let (mut sync_seq, mut ann_seq) = (0u16, 0u16);
    let (mut announces, mut syncs_group, mut resps) = (0u64, 0u64, 0u64);
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
            // Always to the group, as ptp4l -4 does: a new slave starts on the
            // group's Syncs, and a Delay_Req (any sender can forge one) must not
            // turn them off or turn this port into a sender of Syncs to its address.
            if let Some(tx) = ports.send_event_group(&Message { header: h, body: Body::Sync(Timestamp::default()) }) {
                let fup = header(MsgType::FollowUp, sync_seq, cfg.log_sync_interval);
                let msg = Message { header: fup, body: Body::FollowUp(ts_of(clock.time_at(tx))) };
                ports.send_general(&msg, PTP_GROUP);
                syncs_group += 1;
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
        syncs_unicast: 0,
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

    fn sync_from(master: PortIdentity, seq: u16, correction: i64) -> Message {
        let mut h = Header::new(MsgType::Sync, master, seq, -2);
        h.flags = wire::FLAG_TWO_STEP;
        h.correction = correction;
        Message { header: h, body: Body::Sync(Timestamp::default()) }
    }

    #[test]
    fn forged_corrections_of_one_sequence_saturate() {
        // 70,000 Syncs of one sequence, each with correctionField i64::MIN (-2^47 ns):
        // their sum leaves an i64 after 65,537 of them.
        let master = PortIdentity { clock: [7; 8], port: 1 };
        let forged = sync_from(master, 9, i64::MIN);
        let mut p = None;
        for _ in 0..70_000 {
            p = Some(PendingSync::add(p, &forged, Timestamp::default(), 5_000, 0));
        }
        let p = p.expect("collected");
        assert_eq!((p.seq, p.corr, p.t2), (9, i64::MIN, Some(5_000)));
        // Its Follow_Up completes a pair that is merely absurd (the spike filter's business).
        let mut fup = forged;
        fup.header.msg_type = MsgType::FollowUp;
        let p = PendingSync::add(Some(p), &fup, Timestamp::from_ns(1_000), 0, 0);
        assert_eq!(p.pair(), Some((1_000 + i64::MIN as i128, 5_000)));
        // Another sequence starts a new pair.
        assert_eq!(PendingSync::add(Some(p), &sync_from(master, 10, 0), Timestamp::default(), 7, 0).corr, 0);
    }

    #[test]
    fn a_forged_delay_resp_gives_no_path_delay() {
        // t1..t3 of a real exchange (30 µs each way, slave 300 µs ahead), then the
        // Delay_Resp's t4: genuine, forged as the latest time there is, forged as 0.
        let (t1, t2, t3) = (1_000_000_000i128, 1_000_330_000, 1_000_400_000);
        let t4 = |ts: Timestamp, corr: i64| {
            let mut h = Header::new(MsgType::DelayResp, PortIdentity::default(), 1, -2);
            h.correction = corr;
            ts.to_ns() - h.correction_ns() as i128
        };
        assert_eq!(plausible_delay(path_delay_ns(t1, t2, t3, t4(Timestamp::from_ns(1_000_130_000), 0))), Some(30_000));
        let latest = Timestamp { seconds: 0xffff_ffff_ffff, nanos: 999_999_999 };
        assert_eq!(plausible_delay(path_delay_ns(t1, t2, t3, t4(latest, i64::MIN))), None);
        assert_eq!(plausible_delay(path_delay_ns(t1, t2, t3, t4(Timestamp::default(), 0))), None);
    }
}

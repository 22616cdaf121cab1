//! The ping-pong loops of paper 000's method, over any [`Endpoint`].
//!
//! Client: sends probe `i` at `start + i * period` (absolute deadlines, so
//! a stall never shifts the schedule) and records how late each send was;
//! between sends it polls for pongs. Each probe carries a sequence id, a
//! random nonce and four timestamps: client send (t0, just before the send
//! call), server receive (t1, when the server took it off its ring/socket),
//! server send (t2, just before the echo), client receive (t3).
//! Open loop: a lost pong never stalls the run; a pong later than the loss
//! timeout counts as lost.
//!
//! Server: echoes every ping over the same datapath, filling t1 and t2 and
//! marking it a pong ([`probe::FLAG_PONG`]); a probe that is already a pong
//! is never echoed (see [`is_pong`]). The client takes pongs from the
//! server's address only (see [`from_server`]).
//! Faults (drop, duplicate, delay, corrupt) are not the runner's business: a
//! server opened on the `fault` datapath (`fault://...?inner=udp&drop=...`)
//! misbehaves at chosen sends, which is how the loss accounting is tested.

use detpath_instrument::records::{Record, Status};
use detpath_instrument::noise::{gap_capacity, Gap, NoiseProbe, DEFAULT_GAP_BOUND_NS};
use detpath::sys::cputime::{ThreadCpu, ThreadMeter};
use detpath::{monotonic_ns, Endpoint, RecvMode};
use detpath_wire::probe::{self, Probe};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What to measure.
#[derive(Debug, Clone)]
pub struct PingPongConfig {
    /// UDP payload bytes of every probe (at least [`probe::HEADER_LEN`]).
    pub size: usize,
    /// Send period in ns.
    pub period_ns: u64,
    /// Measured rounds (after warm-up).
    pub rounds: u64,
    /// Rounds sent first and left out of the statistics (ARP, caches, page faults).
    pub warmup: u64,
    /// A pong arriving later than this after its ping counts as lost.
    pub loss_timeout_ns: u64,
    /// Test hook: sleep this long just after sending this round (an artificially
    /// stalled client: that round's pong waits for it, and the sends due
    /// meanwhile leave late).
    pub stall: Option<(u64, Duration)>,
    /// When set, once the last probe's pong is in, the client sleeps until this
    /// long before the next send deadline instead of spinning, so a SCHED_FIFO
    /// client leaves its core to the OS between rounds (tuned runs on a host
    /// with few cores). `None`: busy-poll all the time (the paper's method).
    pub sleep_slack_ns: Option<u64>,
}

impl PingPongConfig {
    /// Rounds the client sends: the warm-up and the measured ones.
    pub fn total_rounds(&self) -> u64 {
        self.warmup + self.rounds
    }
}

/// What happened to one round, from the client's side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// The random number the ping carried; its pong must carry it back.
    pub nonce: u64,
    /// t0..t3 in ns (t1, t2 on the server's clock); 0 = not happened.
    /// t0: the client sent the ping (CLOCK_MONOTONIC ns).
    pub client_tx: u64,
    /// t1: the server received it (ns, the server's CLOCK_MONOTONIC).
    pub server_rx: u64,
    /// t2: the server sent the pong (ns, the server's CLOCK_MONOTONIC).
    pub server_tx: u64,
    /// t3: the client received the pong (CLOCK_MONOTONIC ns).
    pub client_rx: u64,
    /// t0 - scheduled send time, ns.
    pub lateness: u64,
    /// Further pongs for this round after the first.
    pub duplicates: u32,
    /// A pong came whose nonce or send time did not match the ping.
    pub corrupted: bool,
    /// The pong came, but later than the loss timeout after the ping: counted lost.
    pub late: bool,
    /// Arrived after a higher sequence number had.
    pub reordered: bool,
}

impl Round {
    /// A matching pong came within the loss timeout.
    pub fn answered(&self) -> bool {
        self.client_rx != 0 && !self.corrupted && !self.late
    }
    /// t3 - t0, ns, when answered.
    pub fn rtt(&self) -> Option<u64> {
        self.answered().then(|| self.client_rx.saturating_sub(self.client_tx))
    }
}

impl ClientOutcome {
    /// The measured rounds (warm-up left out) as raw records, one per sent
    /// round plus one per duplicate.
    pub fn records(&self, warmup: u64) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.sent as usize);
        for (seq, r) in self.rounds.iter().enumerate().take(self.sent as usize).skip(warmup as usize) {
            let status = if r.corrupted {
                Status::Corrupted
            } else if !r.answered() {
                Status::Lost
            } else if r.reordered {
                Status::Reordered
            } else {
                Status::Ok
            };
            let answered = r.answered();
            out.push(Record {
                seq: seq as u64,
                client_send_ns: r.client_tx,
                server_recv_ns: if answered { r.server_rx } else { 0 },
                server_send_ns: if answered { r.server_tx } else { 0 },
                client_recv_ns: if answered { r.client_rx } else { 0 },
                send_lateness_ns: r.lateness,
                status,
            });
            for _ in 0..r.duplicates {
                out.push(Record { seq: seq as u64, status: Status::Duplicate, ..Record::default() });
            }
        }
        out
    }
}

/// Everything the client saw.
#[derive(Debug, Clone)]
pub struct ClientOutcome {
    /// Indexed by sequence id: warm-up rounds first.
    pub rounds: Vec<Round>,
    /// Rounds actually sent (less than total when interrupted).
    pub sent: u64,
    /// Datagrams that were not probes at all, not from the server's address
    /// (a forged pong), or not for a round we sent: ignored.
    pub foreign: u64,
    /// Probes whose send failed for that datagram alone (its neighbour still
    /// resolving with every parking slot taken, a full ring, ...: see
    /// [`detpath::Error::is_per_datagram`]): their rounds go unanswered,
    /// lost like a dropped ping, and the run goes on.
    pub not_sent: u64,
    /// The first such failure, as the endpoint said it.
    pub first_not_sent: Option<String>,
    /// The run stopped (the `stop` flag) before every round was sent.
    pub interrupted: bool,
    /// The first round's send deadline, CLOCK_MONOTONIC ns (1 ms after the client started).
    pub started_ns: u64,
    /// When the client stopped waiting for pongs, CLOCK_MONOTONIC ns.
    pub finished_ns: u64,
    /// What the client's noise probe saw (iterations of its loop longer than
    /// [`DEFAULT_GAP_BOUND_NS`]), for tail attribution.
    pub gaps: Vec<Gap>,
    /// Gaps the probe saw but could not keep (see [`detpath_instrument::noise::gap_capacity`]).
    pub gaps_not_kept: u64,
    /// The client thread's CPU time over the run (named `client`; measured
    /// by the thread itself from its first to its last round, warm-up included).
    pub cpu: ThreadCpu,
}

/// Runs the client side. `progress` is called with the number of rounds
/// sent, every 4096 rounds. `stop` ends the run early (kept as interrupted).
pub fn run_client(
    ep: &mut dyn Endpoint,
    server: SocketAddrV4,
    cfg: &PingPongConfig,
    stop: &AtomicBool,
    mut progress: impl FnMut(u64),
) -> detpath::Result<ClientOutcome> {
    let meter = ThreadMeter::start("client");
    let total = cfg.total_rounds();
    let size = cfg.size.max(probe::HEADER_LEN);
    let mut rounds = vec![Round::default(); total as usize];
    let mut tx = vec![0u8; size];
    let mut rx = vec![0u8; size.max(2048)];
    let mut rng = XorShift::seeded();
    let mut foreign = 0u64;
    let (mut not_sent, mut first_not_sent) = (0u64, None);
    let mut next = 0u64;
    let mut answered = 0u64;
    let mut highest_seen: Option<u64> = None;
    let start = monotonic_ns() + 1_000_000;
    let mut last_send = start;
    let mut interrupted = false;
    let mut probe = NoiseProbe::with_capacity(DEFAULT_GAP_BOUND_NS, gap_capacity(total, cfg.period_ns));
    loop {
        let now = monotonic_ns();
        probe.tick(now);
        if next < total {
            let deadline = start + next * cfg.period_ns;
            if now >= deadline {
                let nonce = rng.next();
                let t0 = monotonic_ns();
                let p = Probe { seq: next, nonce, client_send_ns: t0, ..Probe::default() };
                p.encode(&mut tx).expect("probe buffer sized above");
                match ep.send_to(&tx, server) {
                    Ok(()) => {}
                    Err(e) if e.is_per_datagram() => {
                        not_sent += 1;
                        first_not_sent.get_or_insert_with(|| e.to_string());
                    }
                    Err(e) => return Err(e),
                }
                rounds[next as usize] = Round { nonce, client_tx: t0, lateness: t0 - deadline, ..Round::default() };
                last_send = t0;
                if let Some((seq, pause)) = cfg.stall {
                    if seq == next {
                        std::thread::sleep(pause);
                    }
                }
                next += 1;
                if next.is_multiple_of(4096) {
                    progress(next);
                    if stop.load(Ordering::Relaxed) {
                        interrupted = next < total;
                        break;
                    }
                }
                continue;
            }
        } else if answered == total || now > last_send + cfg.loss_timeout_ns {
            break;
        }
        if let Some(slack) = cfg.sleep_slack_ns {
            let deadline = start + next * cfg.period_ns;
            let last_answered = next == 0 || rounds[next as usize - 1].client_rx != 0;
            if next < total && last_answered && deadline > now + slack {
                probe.pause();
                sleep_until_ns(deadline - slack);
                continue;
            }
        }
        if let Some(meta) = ep.recv(&mut rx, RecvMode::NonBlocking)? {
            if !from_server(meta.peer, server) {
                foreign += 1;
                continue;
            }
            let Ok(p) = Probe::decode(&rx[..meta.len]) else {
                foreign += 1;
                continue;
            };
            let Some(r) = rounds.get_mut(p.seq as usize).filter(|_| p.seq < next) else {
                foreign += 1;
                continue;
            };
            if r.client_rx != 0 || r.corrupted {
                r.duplicates += 1;
            } else if p.nonce != r.nonce || p.client_send_ns != r.client_tx {
                r.corrupted = true;
            } else {
                r.client_rx = meta.rx_ns;
                r.server_rx = p.server_recv_ns;
                r.server_tx = p.server_send_ns;
                r.late = meta.rx_ns.saturating_sub(r.client_tx) > cfg.loss_timeout_ns;
                r.reordered = highest_seen.is_some_and(|h| p.seq < h);
                highest_seen = Some(highest_seen.map_or(p.seq, |h| h.max(p.seq)));
                answered += 1;
            }
        }
    }
    progress(next);
    let finished_ns = monotonic_ns();
    let cpu = meter.stop();
    let (gaps, gaps_not_kept) = probe.into_gaps();
    Ok(ClientOutcome { rounds, sent: next, foreign, not_sent, first_not_sent, interrupted, started_ns: start, finished_ns, gaps, gaps_not_kept, cpu })
}

/// Whether a datagram from `peer` may be the server's pong. Anyone can send
/// the client a probe with a seq it already sent: taken, a forged pong would
/// mark its round corrupted (or a duplicate) and the real pong a duplicate.
/// A datapath that does not report the sender (`0.0.0.0:0`) cannot be
/// checked, and a server addressed as `0.0.0.0` (this host) answers from an
/// address of its choosing: then only what can be compared is.
pub fn from_server(peer: SocketAddrV4, server: SocketAddrV4) -> bool {
    if peer.ip().is_unspecified() {
        return true;
    }
    peer.port() == server.port() && (server.ip().is_unspecified() || peer.ip() == server.ip())
}

/// Whether a probe is already an echo (it carries [`probe::FLAG_PONG`]): a
/// reflector never echoes it. Answering one lets a single probe whose
/// source is forged to be another reflector's make the two echo each other
/// forever.
pub fn is_pong(p: &Probe) -> bool {
    p.flags & probe::FLAG_PONG != 0
}

/// Readies a datagram for a raw echo (`detpath echo`, which echoes any
/// datagram): a detpath ping is marked a pong ([`probe::FLAG_PONG`]), so no
/// detpath reflector answers the echo; anything else is left as it is.
/// Returns false for a detpath pong, which must not be echoed ([`is_pong`]).
pub fn ready_raw_echo(datagram: &mut [u8]) -> bool {
    match Probe::decode(datagram) {
        Ok(p) if is_pong(&p) => false,
        Ok(_) => probe::set_flags(datagram, probe::FLAG_PONG).is_ok(),
        Err(_) => true,
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `t` ns (absolute, so no drift).
fn sleep_until_ns(t: u64) {
    let ts = libc::timespec { tv_sec: (t / 1_000_000_000) as libc::time_t, tv_nsec: (t % 1_000_000_000) as libc::c_long };
    // SAFETY: a valid timespec; a null remainder is allowed with TIMER_ABSTIME. EINTR just ends the sleep early.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

/// What the server did.
#[derive(Debug, Clone, Default)]
pub struct ServerReport {
    /// Probes echoed back to their sender.
    pub echoed: u64,
    /// Datagrams received that were not probes (left unanswered).
    pub not_probes: u64,
    /// Probes that were already pongs ([`probe::FLAG_PONG`]), left
    /// unanswered: echoing them could make two reflectors echo each other
    /// forever ([`is_pong`]).
    pub not_a_ping: u64,
    /// Probes whose echo could not be sent (off-link or unresolved source,
    /// full ring, ...): the endpoint counted each by cause and the server went on.
    pub not_sent: u64,
    /// What the server's noise probe saw, for tail attribution.
    pub gaps: Vec<Gap>,
    /// Gaps the probe saw but could not keep.
    pub gaps_not_kept: u64,
    /// The server thread's CPU time (named `server`) from the first ping it
    /// received to the stop (`None`: no ping came; other datagrams do not
    /// start it), and the wall time of that span in seconds.
    pub cpu: Option<(ThreadCpu, f64)>,
}

/// Echoes pings until `stop` is set, busy-polling (a ping whose echo cannot
/// be sent is counted in [`ServerReport::not_sent`] and the endpoint's
/// counters; only an endpoint error ends the loop): each look is one
/// zero-timeout busy-poll receive (so datapaths with kernel busy polling
/// kick the driver), and the loop itself is the server's noise probe.
///
/// `gaps` is how many noise gaps its probe keeps (the client's run:
/// [`gap_capacity`]; not known: [`detpath_instrument::noise::GAP_CAPACITY`]).
pub fn run_server(ep: &mut dyn Endpoint, stop: &AtomicBool, gaps: usize) -> detpath::Result<ServerReport> {
    let mut buf = vec![0u8; 4096];
    let mut report = ServerReport::default();
    let look = RecvMode::BusyPoll { timeout: Some(Duration::ZERO) };
    let mut probe = NoiseProbe::with_capacity(DEFAULT_GAP_BOUND_NS, gaps);
    // Started at the first ping: the spinning before the client starts is
    // not the run's cost (and has no round to divide by), and a stray or
    // forged datagram must not start it early.
    let mut meter: Option<(ThreadMeter, u64)> = None;
    while !stop.load(Ordering::Relaxed) {
        probe.tick(monotonic_ns());
        let Some(meta) = ep.recv(&mut buf, look)? else {
            std::hint::spin_loop();
            continue;
        };
        let Ok(mut p) = Probe::decode(&buf[..meta.len]) else {
            report.not_probes += 1;
            continue;
        };
        if is_pong(&p) {
            report.not_a_ping += 1;
            continue;
        }
        if meter.is_none() {
            meter = Some((ThreadMeter::start("server"), monotonic_ns()));
        }
        p.flags |= probe::FLAG_PONG;
        p.server_recv_ns = meta.rx_ns;
        p.server_send_ns = monotonic_ns();
        p.encode(&mut buf[..meta.len]).expect("decoded from this length");
        match ep.send_to(&buf[..meta.len], meta.peer) {
            Ok(()) => report.echoed += 1,
            // One datagram's problem (a forged or silent source): counted, go on.
            Err(e) if e.is_per_datagram() => report.not_sent += 1,
            Err(e) => return Err(e),
        }
    }
    (report.gaps, report.gaps_not_kept) = probe.into_gaps();
    report.cpu = meter.map(|(m, t0)| (m.stop(), monotonic_ns().saturating_sub(t0) as f64 / 1e9));
    Ok(report)
}

/// xorshift64*: nonces need to be unpredictable to a confused peer, not secure.
struct XorShift(u64);

impl XorShift {
    fn seeded() -> XorShift {
        let mut seed = [0u8; 8];
        // SAFETY: getrandom writes at most 8 bytes into seed.
        unsafe { libc::getrandom(seed.as_mut_ptr().cast(), 8, 0) };
        XorShift(u64::from_ne_bytes(seed) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

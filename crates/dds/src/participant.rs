//! The participant: the RTPS engine on a detpath endpoint, run by a thread of
//! its own. The engine lives in one place ([`Shared::state`], behind a
//! mutex); application calls take the lock for the moment they act. Writes
//! leave their datagrams in an outbox the engine thread sends at once when
//! it comes up from waiting for datagrams (at most
//! [`ParticipantOptions::poll`] later). Readers waiting for samples sleep on
//! a condition variable the engine thread signals after each batch of
//! datagrams.

use crate::error::{Error, Result};
use detpath_pubsub::driver::{Transport, TransportOutbox};
use detpath_pubsub::app;
use detpath_pubsub::engine::{Config, Counters, Event, Participant, ReaderId, SampleInfo, VecOutbox};
use detpath_pubsub::transport::{EndpointTransport, Wait};
use detpath_pubsub::wire::Guid;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How a participant is opened and run.
#[derive(Clone, Debug)]
pub struct ParticipantOptions {
    /// Open the endpoint inside this network namespace.
    pub netns: Option<String>,
    /// Highest participant index whose metatraffic port SPDP goes to on each peer.
    pub max_index: u32,
    /// How the engine thread waits for datagrams: [`Wait::Block`] sleeps in
    /// the kernel (the default); [`Wait::Busy`] spins (lowest latency, one core).
    pub wait: Wait,
    /// Longest the engine thread waits for datagrams before it looks at
    /// what the application wrote: the most a write waits to go out while
    /// nothing arrives (busy waiting: 20 µs whatever this says).
    pub poll: Duration,
    /// Largest RTPS message sent (the datapath's limit caps it).
    pub max_message: usize,
    /// Largest sample a reader accepts (reassembled from fragments).
    pub max_sample_size: usize,
    /// Announced as the participant's USER_DATA.
    pub user_data: Vec<u8>,
    /// From a writer's TRANSPORT_PRIORITY to the DSCP (and, with a slot
    /// scheduler on the endpoint, the traffic class) of its datagrams.
    /// Default: the documented DSCP map, the scheduler's default classes.
    pub priority: detpath_pubsub::priority::PriorityPolicy,
    /// This host's CLOCK_REALTIME is disciplined to a common reference
    /// (ptp4l + phc2sys): readers judge the latency budgets of writers on
    /// other hosts too. Off, only writers on this host (one clock) are
    /// judged; the others' samples are unjudged, never wrongly late.
    pub clock_synchronised: bool,
}

impl Default for ParticipantOptions {
    fn default() -> Self {
        ParticipantOptions {
            netns: None,
            max_index: 9,
            wait: Wait::Block,
            poll: Duration::from_millis(1),
            max_message: 14_720,
            max_sample_size: crate::qos::DEFAULT_MAX_SAMPLE_SIZE,
            user_data: Vec::new(),
            priority: detpath_pubsub::priority::PriorityPolicy::default(),
            clock_synchronised: false,
        }
    }
}

impl ParticipantOptions {
    /// Options from their text form (the C and Python bindings'), `;`-separated
    /// `name=value`: `clock=auto|synced` (synced: CLOCK_REALTIME is
    /// disciplined by PTP, writers on other hosts are judged),
    /// `priority_map=PRIORITY=DSCP,...` (e.g. `0=CS0,1=AF21,40=EF`),
    /// `priority_classes=PRIORITY=CLASS,...` (e.g. `0=bulk,1=ctl`, with a
    /// slot scheduler on the endpoint), `netns=NAME`, `wait=block|busy`.
    /// What is not named keeps its default.
    pub fn parse(text: &str) -> Result<ParticipantOptions> {
        let mut o = ParticipantOptions::default();
        for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = |why: String| Error::BadQos(format!("participant option {item:?}: {why}"));
            let (name, value) = item.split_once('=').ok_or_else(|| bad("expected name=value".into()))?;
            let value = value.trim();
            match name.trim().to_ascii_lowercase().replace('-', "_").as_str() {
                "clock" => {
                    o.clock_synchronised = match value {
                        "auto" => false,
                        "synced" | "synchronised" | "synchronized" => true,
                        _ => return Err(bad("expected auto or synced".into())),
                    }
                }
                "priority_map" => o.priority.dscp = detpath_wire::dscp::PriorityMap::parse(value).map_err(bad)?,
                "priority_classes" => o.priority.classes = Some(detpath_pubsub::priority::ClassMap::parse(value).map_err(bad)?),
                "netns" => o.netns = Some(value.to_string()),
                "wait" => {
                    o.wait = match value {
                        "block" => Wait::Block,
                        "busy" => Wait::Busy,
                        _ => return Err(bad("expected block or busy".into())),
                    }
                }
                _ => return Err(bad("unknown option (known: clock, priority_map, priority_classes, netns, wait)".into())),
            }
        }
        Ok(o)
    }
}

/// What the engine thread and the application share.
pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// Signalled after datagrams were handled (samples may be waiting) and at close.
    pub arrived: Condvar,
    pub closing: AtomicBool,
}

/// Per local reader or writer: what discovery events said.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally {
    pub incompatible_qos: u64,
    pub unmatched: u64,
}

/// One sample as a reader hands it out: serialized bytes (encapsulation
/// header included; empty for a dispose/unregister) and what is known about it.
pub type RawSample = (Vec<u8>, SampleInfo);

pub(crate) struct State {
    pub p: Participant,
    /// Datagrams application calls produced, sent by the engine thread.
    pub outbox: VecOutbox,
    pub tallies: HashMap<Guid, Tally>,
    pub participants_lost: u64,
    /// Samples out of the engine's cache and not yet taken, per reader
    /// (oldest first), each with whether a read returned it (DDS's READ
    /// sample state; a peek leaves it NOT_READ).
    pub read_buffers: HashMap<ReaderId, std::collections::VecDeque<(RawSample, bool)>>,
    pub closed: bool,
}

impl Shared {
    pub fn lock(&self) -> Result<MutexGuard<'_, State>> {
        let g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.closed {
            return Err(Error::Closed);
        }
        Ok(g)
    }
}

/// A DDS domain participant: discovery and every writer and reader of this
/// application on one detpath endpoint. Dropping it says goodbye (SPDP and
/// SEDP disposes) and joins its thread.
pub struct DomainParticipant {
    pub(crate) shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    domain_id: u32,
    spec: String,
}

impl std::fmt::Debug for DomainParticipant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DomainParticipant").field("domain_id", &self.domain_id).field("endpoint", &self.spec).finish()
    }
}

impl DomainParticipant {
    /// A participant in `domain_id` on the endpoint `spec` (any detpath spec:
    /// `udp://10.0.0.1:7410`, `afxdp://eth0?addr=...&port=...`, layers
    /// included), announcing itself to `peers` (IPv4 addresses; none: the
    /// SPDP multicast group, which needs the interface named in the spec).
    pub fn new(domain_id: u32, spec: &str, peers: &[&str]) -> Result<DomainParticipant> {
        Self::with_options(domain_id, spec, peers, ParticipantOptions::default())
    }

    /// [`new`](Self::new) with options.
    pub fn with_options(domain_id: u32, spec: &str, peers: &[&str], opts: ParticipantOptions) -> Result<DomainParticipant> {
        let peers: Vec<Ipv4Addr> = peers.iter().map(|p| p.trim().parse().map_err(|_| Error::BadPeer(p.to_string()))).collect::<Result<_>>()?;
        let (t, mut cfg) = open_transport(domain_id, spec, peers, &opts)?;
        cfg.max_sample_size = opts.max_sample_size;
        cfg.user_data = opts.user_data.clone();
        let p = Participant::new(cfg, t.now_ns());
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                p,
                outbox: VecOutbox::default(),
                tallies: HashMap::new(),
                participants_lost: 0,
                read_buffers: HashMap::new(),
                closed: false,
            }),
            arrived: Condvar::new(),
            closing: AtomicBool::new(false),
        });
        let s = shared.clone();
        let slice = match opts.wait {
            Wait::Busy => 20_000,
            _ => (opts.poll.as_nanos() as u64).clamp(10_000, 1_000_000_000),
        };
        let thread = std::thread::Builder::new()
            .name(format!("dds-{domain_id}"))
            .spawn(move || run_engine(&s, t, slice))
            .map_err(Error::Thread)?;
        Ok(DomainParticipant { shared, thread: Some(thread), domain_id, spec: spec.to_string() })
    }

    /// The domain id.
    pub fn domain_id(&self) -> u32 {
        self.domain_id
    }
    /// The endpoint spec it runs on.
    pub fn endpoint(&self) -> &str {
        &self.spec
    }
    /// The engine's counters (datagrams, malformed input, retransmits, ...).
    pub fn counters(&self) -> Result<Counters> {
        Ok(self.shared.lock()?.p.counters())
    }
    /// Remote participants known now.
    pub fn remote_participants(&self) -> Result<usize> {
        Ok(self.shared.lock()?.p.remote_participants().count())
    }
    /// Waits until the engine thread handled datagrams (samples, matches and
    /// statuses may have changed) or `timeout` passed, asleep: what a
    /// binding's listener or wait set looks again after.
    pub fn wait_for_activity(&self, timeout: Duration) -> Result<()> {
        let g = self.shared.lock()?;
        let g = self.shared.arrived.wait_timeout(g, timeout).unwrap_or_else(|e| e.into_inner()).0;
        if g.closed {
            return Err(Error::Closed);
        }
        Ok(())
    }
    /// Remote participants lost since creation (lease expired, goodbye, evicted).
    pub fn participants_lost(&self) -> Result<u64> {
        Ok(self.shared.lock()?.participants_lost)
    }
}

impl Drop for DomainParticipant {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut g = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        g.closed = true;
        drop(g);
        self.shared.arrived.notify_all();
    }
}

/// Opens the endpoint (and, without peers, the SPDP multicast group beside
/// it) and builds the engine's configuration through the pub-sub
/// application's [`app::open_transport`], the one every detpath node opens
/// with. What differs is said here: the engine runs on a thread of its own,
/// so the calling thread's fair-scheduler slice is left alone
/// (`fair_slice_ns` 0), and the errors speak of `peers`, this API's word,
/// where the command line's speak of `--peer`.
fn open_transport(domain: u32, spec: &str, peers: Vec<Ipv4Addr>, opts: &ParticipantOptions) -> Result<(EndpointTransport, Config)> {
    let mut node = app::NodeOptions::new(spec, detpath_pubsub::ddsperf::Role::Sub);
    node.domain = domain;
    node.peers = peers;
    node.max_index = opts.max_index;
    node.netns = opts.netns.clone();
    node.wait = opts.wait;
    node.fair_slice_ns = 0;
    node.max_message = opts.max_message;
    node.clock = if opts.clock_synchronised { app::ClockMode::Synced } else { app::ClockMode::Auto };
    node.priority_map = opts.priority.dscp.clone();
    node.priority_classes = opts.priority.classes.clone();
    app::open_transport(&node).map_err(|e| match e {
        app::AppError::Open { spec, source } => Error::Open { spec, source },
        app::AppError::Netns { ns, source } => Error::Netns { ns, source },
        app::AppError::NoDiscovery { spec, why } => Error::NoDiscovery { spec, why: why.replace("give --peer", "give peers") },
        app::AppError::Priority(e) => Error::BadQos(e.to_string()),
        app::AppError::Engine(e) => Error::Create(e),
        // Not asked for here (no fair slice, no peers-only, no discovery
        // wait): should one come, it is said as it is.
        other => Error::Start(other.to_string()),
    })
}

/// The engine thread: timers, what the application wrote, then datagrams
/// (waiting at most `slice_ns` or until the next timer), until closing.
fn run_engine(shared: &Shared, mut t: EndpointTransport, slice_ns: u64) {
    let mut buf = vec![0u8; 65536];
    loop {
        let now = t.now_ns();
        let due = {
            let mut g = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let st = &mut *g;
            if shared.closing.load(Ordering::Acquire) {
                send_all(&mut st.outbox, &mut t);
                st.p.shutdown(&mut TransportOutbox(&mut t));
                return;
            }
            if st.p.next_timeout() <= now {
                st.p.handle_timeout(now, &mut TransportOutbox(&mut t));
            }
            send_all(&mut st.outbox, &mut t);
            tally_events(st);
            st.p.next_timeout().saturating_sub(now)
        };
        let Some((len, src, rx_ns)) = t.recv(&mut buf, due.min(slice_ns)) else {
            continue;
        };
        let mut g = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        g.p.handle_datagram(rx_ns, src, &buf[..len], &mut TransportOutbox(&mut t));
        // What else is there, without waiting, under the same lock.
        for _ in 0..63 {
            let Some((len, src, rx_ns)) = t.recv(&mut buf, 0) else { break };
            g.p.handle_datagram(rx_ns, src, &buf[..len], &mut TransportOutbox(&mut t));
        }
        drop(g);
        shared.arrived.notify_all();
    }
}

fn send_all(outbox: &mut VecOutbox, t: &mut EndpointTransport) {
    for (dst, d) in outbox.sent.drain(..) {
        t.send(dst, &d);
    }
}

fn tally_events(st: &mut State) {
    while let Some(ev) = st.p.poll_event() {
        match ev {
            Event::ParticipantLost { .. } => st.participants_lost += 1,
            Event::WriterUnmatched { writer, .. } => {
                let g = st.p.writer_guid(writer);
                st.tallies.entry(g).or_default().unmatched += 1;
            }
            Event::ReaderUnmatched { reader, .. } => {
                let g = st.p.reader_guid(reader);
                st.tallies.entry(g).or_default().unmatched += 1;
            }
            Event::IncompatibleQos { local, .. } => st.tallies.entry(local).or_default().incompatible_qos += 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_in_text_form() {
        let o = ParticipantOptions::parse("clock=synced; priority_map=0=CS0,1=EF; priority_classes=0=bulk,1=ctl; wait=busy").unwrap();
        assert!(o.clock_synchronised);
        assert_eq!(o.priority.dscp.dscp(5), 46);
        assert_eq!(o.priority.classes.unwrap().to_string(), "0=bulk,1=ctl");
        assert_eq!(o.wait, Wait::Busy);
        assert!(!ParticipantOptions::parse("").unwrap().clock_synchronised);
        for (bad, says) in [("clock=ptp", "auto or synced"), ("priority_map=0=CS0,5=0", "above 0"), ("colour=red", "unknown option"), ("clock", "name=value")] {
            let e = ParticipantOptions::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

//! The slot scheduler as a layer of detpath's open pipeline: the `sched`
//! keys of an endpoint spec.
//!
//! ```text
//! afxdp://dpa?port=7000&sched=slots&slot_ns=10000&ring_slots=32&lead_slots=8&sched_mode=strict&classes=ctl:rt:0/4;bulk:be:2/4
//! ```
//!
//! [`LAYER`] claims the keys in [`SPEC_KEYS`] (and every other `sched*`
//! key, to name a misspelt one); the endpoint opens through
//! `detpath::open_spec` and is wrapped in a [`SlotsEndpoint`]. The layer
//! lives here, above detpath, so detpath's own registry does not list it:
//! the `detpath-open` facade does (bindings, the CLI and bench open with
//! it). [`open_slots`] gives the concrete [`SlotsEndpoint`] (for `send_at`
//! and the scheduler's counters).
//!
//! The scheduler's mode key is `sched_mode`, not `mode`: `mode` already
//! is the XDP mode (auto|native|skb) of every detpath spec.

use crate::clock::MonotonicSource;
use crate::config::{ClassKind, ConfigError, SchedConfig, SPEC_KEYS};
use crate::endpoint::SchedEndpoint;
use crate::sched::{Refusal, Release, Scheduled, Scheduler};
use detpath::layer::{Layer, LayerKeys, Prepared};
use detpath::{monotonic_ns, Capabilities, Counters, Endpoint, EndpointSpec, Error, FrameEndpoint, Mark, RecvMode, RxBatch, RxMeta};
use std::io;
use std::net::SocketAddrV4;
use std::time::Duration;

fn bad(spec: &str, why: String) -> Error {
    Error::BadSpec { spec: spec.to_string(), why }
}

/// The slot scheduler's layer: the `sched=slots` keys.
pub static LAYER: SlotsLayer = SlotsLayer;

/// The slot scheduler's layer (see the module's text).
pub struct SlotsLayer;

impl Layer for SlotsLayer {
    fn name(&self) -> &'static str {
        "sched"
    }
    fn summary(&self) -> &'static str {
        "sends leave in time slots of their class (sched=slots&slot_ns=...&classes=...)"
    }
    fn keys(&self) -> &'static [&'static str] {
        SPEC_KEYS
    }
    fn claims(&self, key: &str) -> bool {
        SPEC_KEYS.contains(&key) || key.starts_with("sched")
    }
    fn check(&self, keys: &LayerKeys) -> Result<(), String> {
        if let Some(k) = keys.keys().find(|k| !SPEC_KEYS.contains(&k.as_str())) {
            return Err(format!("`{k}` is not a key of the slot scheduler; it takes: {}", SPEC_KEYS.join(", ")));
        }
        if !keys.contains_key("sched") {
            let k = keys.keys().next().map(String::as_str).unwrap_or("");
            return Err(format!("`{k}` is a key of the slot scheduler: add `sched=slots`"));
        }
        config_of(keys).map(|_| ())
    }
    fn prepare(&self, keys: &LayerKeys, spec: &str) -> detpath::Result<Box<dyn Prepared>> {
        Ok(Box::new(Slots::of(keys, spec)?))
    }
}

/// A checked scheduler configuration, waiting for its endpoint.
struct Slots {
    cfg: SchedConfig,
    send_class: Option<usize>,
    spec: String,
}

impl Slots {
    /// The configuration and send class (checked before the endpoint opens).
    fn of(keys: &LayerKeys, spec: &str) -> detpath::Result<Slots> {
        let bad = |why| bad(spec, why);
        let cfg = config_of(keys).map_err(bad)?;
        let send_class = match keys.get("send_class") {
            Some(name) => {
                Some(cfg.classes.iter().position(|c| &c.name == name).ok_or_else(|| bad(format!("`send_class={name}` names no class of `classes`")))?)
            }
            None => cfg.classes.iter().position(|c| c.kind == ClassKind::BestEffort),
        };
        Ok(Slots { cfg, send_class, spec: spec.to_string() })
    }

    fn endpoint(self, ep: Box<dyn Endpoint>) -> detpath::Result<SlotsEndpoint> {
        SlotsEndpoint::wrap(ep, &self.cfg, self.send_class).map_err(|e| bad(&self.spec, format!("slot scheduler: {e}")))
    }
}

impl Prepared for Slots {
    fn wrap(self: Box<Self>, ep: Box<dyn Endpoint>) -> detpath::Result<Box<dyn Endpoint>> {
        Ok(Box::new(self.endpoint(ep)?))
    }
    fn wrap_frames(self: Box<Self>, _: Box<dyn FrameEndpoint>) -> detpath::Result<Box<dyn FrameEndpoint>> {
        Err(detpath::layer::unsupported("sched", "frame endpoints"))
    }
}

/// The scheduler configuration of scheduler keys.
fn config_of(keys: &LayerKeys) -> Result<SchedConfig, String> {
    SchedConfig::from_spec_keys(keys).map_err(|e: ConfigError| format!("slot scheduler: {e}"))
}

/// Opens `spec`, which must have the scheduler's keys (`sched=slots`), as a
/// [`SlotsEndpoint`] (for `send_at` and the scheduler's counters): its other
/// layers and datapath through `detpath::open_spec`, the scheduler outermost.
pub fn open_slots(spec: &EndpointSpec) -> detpath::Result<SlotsEndpoint> {
    let text = spec.to_string();
    let Some(at) = spec.layers.iter().position(|u| u.name() == LAYER.name()) else {
        return Err(bad(&text, "no slot scheduler asked for: add `sched=slots` and its keys".into()));
    };
    let mut inner = spec.clone();
    let sched = inner.layers.remove(at);
    let slots = Slots::of(&sched.keys, &text)?;
    slots.endpoint(detpath::open_spec(&inner)?)
}

/// The traffic classes (name and kind, in class-number order: the index is
/// what [`Mark::class`] takes) of the slot scheduler on an endpoint with
/// these capabilities, read from the note [`SlotsEndpoint::wrap`] leaves
/// in them (so it is found through any layer that keeps its inner
/// endpoint's notes); `None` without a scheduler. For users above the
/// endpoint trait (the pub-sub's priority map) that need the kinds, which
/// `class_named` does not give.
pub fn classes_of(caps: &Capabilities) -> Option<Vec<(String, ClassKind)>> {
    let note = caps.notes.iter().find(|n| n.starts_with(NOTE_PREFIX))?;
    let list = note.split_once(" classes ")?.1;
    let list = list.split_once("; send_to -> ").map_or(list, |(l, _)| l);
    let mut out = Vec::new();
    for class in list.split(';').filter(|c| !c.is_empty()) {
        let mut it = class.split(':');
        let (name, kind) = (it.next()?, it.next()?);
        let kind = match kind {
            "rt" => ClassKind::RealTime,
            "be" => ClassKind::BestEffort,
            _ => return None,
        };
        out.push((name.to_string(), kind));
    }
    Some(out)
}

/// How the scheduler's note in an endpoint's capabilities starts.
const NOTE_PREFIX: &str = "sched=slots: ";

/// An endpoint whose sends go through the slot scheduler, as a `detpath::Endpoint`.
///
/// - `send_to` queues in the send class (`send_class=NAME`; default the first
///   best-effort class): best effort leaves in the class's next free slot; a
///   real-time send class takes its first free owned slot past the insertion
///   lead. A refusal is an error (`ENOBUFS` when the class is full).
/// - `recv` releases every due slot before and while it waits: while the
///   scheduler holds packets it busy-polls (looking at the inner endpoint
///   without waiting, then at the slots again), whatever the mode asked, so
///   no slot passes unserved; with nothing held it waits the inner endpoint's way.
/// - [`send_at`](Self::send_at), [`poll`](Self::poll) and [`scheduler`](Self::scheduler) on the concrete type.
pub struct SlotsEndpoint {
    inner: SchedEndpoint<MonotonicSource>,
    caps: Capabilities,
    send_class: Option<usize>,
    /// Told of every release ([`observe_releases`](Self::observe_releases)).
    observer: Option<ReleaseObserver>,
}

/// Called with each packet a [`SlotsEndpoint`] hands to its datapath and
/// whether the datapath took it (see [`SlotsEndpoint::observe_releases`]).
pub type ReleaseObserver = Box<dyn FnMut(&Release<'_>, bool) + Send>;

impl SlotsEndpoint {
    /// Wraps an open endpoint; `send_to` goes to class `send_class` (`None`: `send_to` is refused).
    pub fn wrap(ep: Box<dyn Endpoint>, cfg: &SchedConfig, send_class: Option<usize>) -> Result<SlotsEndpoint, ConfigError> {
        let mut caps = ep.capabilities().clone();
        let classes: Vec<String> = cfg.classes.iter().map(|c| c.to_text()).collect();
        caps.notes.push(format!(
            "{NOTE_PREFIX}{} ns slots, ring {} slots, lead {} slots, classes {}; send_to -> {}",
            cfg.slot_ns,
            cfg.ring_slots,
            cfg.lead_slots,
            classes.join(";"),
            send_class.map(|i| cfg.classes[i].name.as_str()).unwrap_or("refused (no best-effort class)")
        ));
        Ok(SlotsEndpoint { inner: SchedEndpoint::new(ep, cfg)?, caps, send_class, observer: None })
    }

    /// Schedules a real-time packet for slot-clock time `time_ns` (see [`Scheduler::send_at`]).
    pub fn send_at(&mut self, time_ns: u64, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<Scheduled, Refusal> {
        self.inner.send_at(time_ns, class, payload, peer)
    }

    /// Queues a best-effort packet in class `class`.
    pub fn send_be(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<(), Refusal> {
        self.inner.send_be(class, payload, peer)
    }

    /// Releases every slot due now.
    pub fn poll(&mut self) {
        self.release_due(monotonic_ns());
    }

    /// Calls `observer` with every later release (its slot, the slot's
    /// start and the hand-off's time, the payload) and whether the datapath
    /// took it: how a measurement learns when each packet left, e.g. the
    /// mixed benchmark's `sent_late` cause. One call per release, on the
    /// releasing thread; replaces an earlier observer.
    pub fn observe_releases(&mut self, observer: ReleaseObserver) {
        self.observer = Some(observer);
    }

    /// Releases every slot due by `now`, telling the observer.
    fn release_due(&mut self, now: u64) {
        match &mut self.observer {
            Some(f) => self.inner.poll_observed(now, |r, ok| f(r, ok)),
            None => self.inner.poll(now),
        };
    }

    /// The scheduler (classes, counters, release-error histograms, clock).
    pub fn scheduler(&self) -> &Scheduler<MonotonicSource> {
        self.inner.scheduler()
    }

    /// The wrapped [`SchedEndpoint`].
    pub fn sched_endpoint(&mut self) -> &mut SchedEndpoint<MonotonicSource> {
        &mut self.inner
    }

    /// Whether the scheduler holds packets still to release.
    pub fn holding(&self) -> bool {
        let s = self.inner.scheduler();
        (0..s.class_count()).any(|i| s.held(i).unwrap_or(0) > 0)
    }

    /// "the slot scheduler has no such class; its classes: a (rt), b (be)".
    fn class_list(&self) -> String {
        let s = self.inner.scheduler();
        let names: Vec<String> = (0..s.class_count())
            .map(|i| format!("{} ({})", s.class_name(i).unwrap_or("?"), if s.class_kind(i) == Some(ClassKind::RealTime) { "rt" } else { "be" }))
            .collect();
        format!("the slot scheduler has no such class; its classes: {}", names.join(", "))
    }

    /// A real-time send class: its first free owned slot past the insertion
    /// lead, chosen and taken at one clock reading (a busy slot or a slot
    /// boundary crossed between two readings is not counted as a move).
    fn send_rt_asap(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4, dscp: u8) -> Result<(), Refusal> {
        self.inner.send_asap_marked(class, payload, peer, dscp).map(|_| ())
    }

    fn refusal(&self, r: Refusal) -> Error {
        match r {
            Refusal::TooLarge { len, max } => Error::PayloadTooLarge { iface: self.caps.iface.clone().unwrap_or_default(), len, max },
            Refusal::PrebufferFull { .. } => Error::io(format!("slot scheduler: {r}"), io::Error::from_raw_os_error(libc::ENOBUFS)),
            _ => Error::io(format!("slot scheduler: {r}"), io::Error::from_raw_os_error(libc::ETIME)),
        }
    }

    /// When a wait of `mode` begun now ends (`None`: never).
    fn deadline(mode: RecvMode, now: u64) -> Option<u64> {
        match mode {
            RecvMode::NonBlocking => Some(now),
            RecvMode::BusyPoll { timeout } | RecvMode::Blocking { timeout } => timeout.map(|d| now.saturating_add(d.as_nanos() as u64)),
        }
    }

    /// `mode` shortened to end at `deadline`.
    fn remaining(mode: RecvMode, deadline: Option<u64>, now: u64) -> RecvMode {
        let left = deadline.map(|d| Duration::from_nanos(d.saturating_sub(now)));
        match mode {
            RecvMode::NonBlocking => RecvMode::NonBlocking,
            RecvMode::BusyPoll { .. } => RecvMode::BusyPoll { timeout: left },
            RecvMode::Blocking { .. } => RecvMode::Blocking { timeout: left },
        }
    }

    /// One receive wait: `look` looks at the inner endpoint with a mode; the slots are served in between.
    fn wait<T>(&mut self, mode: RecvMode, mut look: impl FnMut(&mut dyn Endpoint, RecvMode) -> detpath::Result<Option<T>>) -> detpath::Result<Option<T>> {
        let deadline = Self::deadline(mode, monotonic_ns());
        loop {
            let now = monotonic_ns();
            self.release_due(now);
            if !self.holding() {
                return look(self.inner.endpoint_mut(), Self::remaining(mode, deadline, now));
            }
            if let Some(x) = look(self.inner.endpoint_mut(), RecvMode::NonBlocking)? {
                self.release_due(monotonic_ns());
                return Ok(Some(x));
            }
            if deadline.is_some_and(|d| monotonic_ns() >= d) {
                return Ok(None);
            }
            std::hint::spin_loop();
        }
    }
}

impl Endpoint for SlotsEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.inner.endpoint().local_addr()
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn counters(&self) -> Counters {
        self.inner.endpoint().counters()
    }

    /// A marked datagram leaves in its mark's class (or `send_class=`'s),
    /// with its DSCP written when its slot releases it.
    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> detpath::Result<()> {
        let class = match mark.class {
            Some(c) if (c as usize) < self.inner.scheduler().class_count() => c as usize,
            Some(c) => {
                return Err(Error::Unsupported { datapath: self.caps.datapath, what: format!("traffic class {c}: {}", self.class_list()) });
            }
            None => self.send_class.ok_or_else(|| Error::Unsupported {
                datapath: self.caps.datapath,
                what: "send_to through a slot scheduler without a best-effort class (add one to `classes=` or name one with `send_class=`)".into(),
            })?,
        };
        let r = match self.inner.scheduler().class_kind(class) {
            Some(ClassKind::RealTime) => self.send_rt_asap(class, payload, peer, mark.dscp),
            _ => self.inner.send_be_marked(class, payload, peer, mark.dscp),
        };
        r.map_err(|r| self.refusal(r))?;
        // A slot of the class may be due already.
        self.release_due(monotonic_ns());
        Ok(())
    }

    fn class_named(&self, name: &str) -> detpath::Result<u16> {
        match self.inner.scheduler().class_index(name) {
            Some(i) => Ok(i as u16),
            None => Err(Error::Unsupported { datapath: self.caps.datapath, what: format!("traffic class `{name}`: {}", self.class_list()) }),
        }
    }

    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        self.wait(mode, |ep, m| ep.recv(buf, m))
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> detpath::Result<usize> {
        batch.clear();
        let n = self.wait(mode, |ep, m| ep.recv_batch(batch, m).map(|n| (n > 0).then_some(n)))?;
        Ok(n.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layers these tests parse with: detpath's and the scheduler's.
    static LAYERS: detpath::layer::Registry = &[&detpath::layers::fault::LAYER, &LAYER, &detpath::realtime::LAYER];

    fn parse(spec: &str) -> detpath::Result<EndpointSpec> {
        EndpointSpec::parse_with(spec, LAYERS)
    }

    fn open(spec: &str) -> detpath::Result<Box<dyn Endpoint>> {
        detpath::open_spec(&parse(spec)?)
    }

    fn why(spec: &str) -> String {
        match parse(spec) {
            Ok(_) => panic!("{spec} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_scheduler_keys_come_off_the_spec() {
        let s = parse("afxdp://dpa?port=7000&sched=slots&slot_ns=10000&ring_slots=32&lead_slots=8&sched_mode=relaxed&classes=ctl:rt:0/4;bulk:be:2/4&mode=skb")
            .unwrap();
        let keys = s.layer_keys("sched").unwrap();
        assert_eq!(s.given.0, ["port", "mode"]);
        let cfg = config_of(keys).unwrap();
        assert_eq!((cfg.slot_ns, cfg.ring_slots, cfg.lead_slots, cfg.classes.len()), (10_000, 32, 8, 2));
        assert_eq!(cfg.classes[0].mode, crate::Mode::Relaxed);
        assert!(parse("udp://10.0.0.1:7?rcvbuf=65536").unwrap().layers.is_empty());
        assert_eq!(parse("udp://10.0.0.1:7?sched=slots&classes=a:rt:0").unwrap().layers.len(), 1);
        // Built on the typed value, the same spec.
        let built = parse("udp://10.0.0.1:7").unwrap().with_key("sched", "slots").unwrap().with_key("classes", "a:rt:0").unwrap();
        assert_eq!(built, parse("udp://10.0.0.1:7?sched=slots&classes=a:rt:0").unwrap());
    }

    #[test]
    fn bad_scheduler_keys_are_named() {
        let base = "udp://10.0.0.1:7?sched=slots&classes=ctl:rt:0/4;bulk:be:2/4";
        for (spec, want) in [
            (format!("{base}&sched_mod=strict"), "`sched_mod` is not a key of the slot scheduler"),
            ("udp://10.0.0.1:7?slot_ns=1000".to_string(), "`slot_ns` is a key of the slot scheduler: add `sched=slots`"),
            (format!("{base}&mode=strict"), "`mode` takes auto, native or skb, not `strict`"),
            (format!("{base}&slot_ns=1000&slot_ns=2000"), "`slot_ns` given twice"),
            (format!("{base}&slot_ns=ten"), "slot_ns=ten: expected a whole number"),
            (format!("{base}&ring_slots=0"), "ring length 0 is out of range"),
            (format!("{base}&lead_slots=100"), "insertion lead of 100 slots"),
            (format!("{base}&sched_mode=lazy"), "mode `lazy` is neither strict nor relaxed"),
            ("udp://10.0.0.1:7?sched=fifo&classes=a:rt:0".to_string(), "sched=fifo: expected slots"),
            ("udp://10.0.0.1:7?sched=slots".to_string(), "no traffic class"),
            ("udp://10.0.0.1:7?sched=slots&classes=a:rt:0-9;b:be:5".to_string(), "classes `a` and `b` both own slot 5"),
        ] {
            let e = why(&spec);
            assert!(e.contains(want), "{spec}: {e}");
        }
        // send_class must name a class; checked when opening (before the inner endpoint).
        let e = open(&format!("{base}&send_class=nope")).err().unwrap().to_string();
        assert!(e.contains("`send_class=nope` names no class"), "{e}");
        let e = open_slots(&parse("udp://127.0.0.1:0").unwrap()).err().unwrap().to_string();
        assert!(e.contains("add `sched=slots`"), "{e}");
    }

    #[test]
    fn scheduler_keys_are_no_datapath_keys() {
        for k in SPEC_KEYS {
            assert!(!detpath::spec::COMMON_KEYS.contains(k), "{k}");
            for d in detpath::datapath::DATAPATHS {
                assert!(!d.keys.contains(k), "{k} is a key of {}", d.name);
            }
            for l in detpath::layers::LAYERS {
                assert!(!l.claims(k), "{k} is a key of the {} layer", l.name());
            }
        }
    }

    #[test]
    fn a_spec_without_sched_opens_plainly_and_with_it_schedules_over_loopback() {
        let plain = open("udp://127.0.0.1:0").unwrap();
        assert!(plain.capabilities().notes.iter().all(|n| !n.starts_with("sched=")));
        let mut rx = detpath::open_spec(&"udp://127.0.0.1:0".parse().unwrap()).unwrap();
        let mut tx = open_slots(
            &parse("udp://127.0.0.1:0?sched=slots&slot_ns=20000&ring_slots=10&lead_slots=2&late_tolerance_ns=200000000&classes=ctl:rt:0/5;bulk:be:1/5")
                .unwrap(),
        )
        .unwrap();
        assert!(tx.capabilities().notes.iter().any(|n| n.starts_with("sched=slots")), "{:?}", tx.capabilities().notes);
        assert_eq!(classes_of(plain.capabilities()), None);
        assert_eq!(
            classes_of(tx.capabilities()),
            Some(vec![("ctl".to_string(), ClassKind::RealTime), ("bulk".to_string(), ClassKind::BestEffort)]),
            "{:?}",
            tx.capabilities().notes
        );
        let peer = rx.local_addr();
        for i in 0..5u8 {
            tx.send_to(&[i; 16], peer).unwrap();
        }
        let t = tx.scheduler().slot_time(tx.scheduler().current_slot(monotonic_ns()) + 5);
        let at = tx.scheduler().next_owned(0, tx.scheduler().slot_for_time(t)).unwrap();
        tx.send_at(tx.scheduler().slot_time(at), 0, b"timed", peer).unwrap();
        // The sender's receive serves the slots while it waits. (The late
        // tolerance is 200 ms: a loaded machine may deschedule this thread
        // past the timed slot, which must then still leave, not be dropped.)
        let mut buf = [0u8; 64];
        while tx.holding() {
            assert!(tx.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(1)) }).unwrap().is_none());
        }
        let mut got = 0;
        while rx.recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_millis(200)) }).unwrap().is_some() {
            got += 1;
        }
        assert_eq!(got, 6);
        let (ctl, bulk) = (tx.scheduler().counters(0).unwrap(), tx.scheduler().counters(1).unwrap());
        assert_eq!((ctl.sent, bulk.sent), (1, 5));
    }
}

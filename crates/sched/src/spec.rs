//! Endpoint specs with a slot scheduler: `detpath_sched::open` is
//! `detpath::open` plus the scheduler keys.
//!
//! ```text
//! afxdp://dpa?port=7000&sched=slots&slot_ns=10000&ring_slots=32&lead_slots=8&sched_mode=strict&classes=ctl:rt:0/4;bulk:be:2/4
//! ```
//!
//! The keys in [`SPEC_KEYS`] are taken off the spec; the rest opens the inner
//! endpoint with `detpath::open` (which checks them against its datapath),
//! and the endpoint is wrapped in a [`SlotsEndpoint`]. A spec without
//! `sched=` opens plainly. Why not a datapath in detpath's registry like
//! `fault`: the scheduler lives in this crate, which depends on detpath, so
//! detpath cannot open it without a cycle.
//!
//! The scheduler's mode key is `sched_mode`, not `mode`: `mode` already
//! is the XDP mode (auto|native|skb) of every detpath spec.

use crate::clock::MonotonicSource;
use crate::config::{ClassKind, ConfigError, SchedConfig, SPEC_KEYS};
use crate::endpoint::SchedEndpoint;
use crate::sched::{Refusal, Scheduled, Scheduler};
use detpath::{monotonic_ns, Capabilities, Counters, Endpoint, Error, RecvMode, RxBatch, RxMeta};
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddrV4;
use std::time::Duration;

fn bad(spec: &str, why: String) -> Error {
    Error::BadSpec { spec: spec.to_string(), why }
}

/// Splits `spec` into the inner endpoint's spec and the scheduler keys
/// (`None` when the spec has none). Refuses a `sched_*` key the scheduler
/// does not know, a scheduler key without `sched=`, a key given twice, and
/// `mode=strict|relaxed` (the XDP mode key), naming the key.
pub fn split_spec(spec: &str) -> detpath::Result<(String, Option<BTreeMap<String, String>>)> {
    let Some((head, query)) = spec.split_once('?') else { return Ok((spec.to_string(), None)) };
    let mut inner = Vec::new();
    let mut keys = BTreeMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if SPEC_KEYS.contains(&k) {
            if keys.insert(k.to_string(), v.to_string()).is_some() {
                return Err(bad(spec, format!("`{k}` given twice")));
            }
        } else if k.starts_with("sched") {
            return Err(bad(spec, format!("`{k}` is not a key of the slot scheduler; it takes: {}", SPEC_KEYS.join(", "))));
        } else {
            inner.push(pair);
        }
    }
    let inner = if inner.is_empty() { head.to_string() } else { format!("{head}?{}", inner.join("&")) };
    if keys.is_empty() {
        return Ok((inner, None));
    }
    if !keys.contains_key("sched") {
        let k = keys.keys().next().map(String::as_str).unwrap_or("");
        return Err(bad(spec, format!("`{k}` is a key of the slot scheduler: add `sched=slots`")));
    }
    if let Some((_, v)) = query.split('&').filter_map(|p| p.split_once('=')).find(|(k, v)| *k == "mode" && (*v == "strict" || *v == "relaxed")) {
        return Err(bad(spec, format!("`mode` is the XDP mode (auto, native or skb); the scheduler's mode is `sched_mode={v}`")));
    }
    Ok((inner, Some(keys)))
}

/// The scheduler configuration and send class of scheduler keys (`send_class`: a class name).
fn config_of(spec: &str, keys: &BTreeMap<String, String>) -> detpath::Result<SchedConfig> {
    SchedConfig::from_spec_keys(keys).map_err(|e: ConfigError| bad(spec, format!("slot scheduler: {e}")))
}

/// Opens `spec`: plainly without `sched=`, or as a [`SlotsEndpoint`] with `sched=slots`.
pub fn open(spec: &str) -> detpath::Result<Box<dyn Endpoint>> {
    match split_spec(spec)? {
        (inner, None) => detpath::open(&inner),
        (inner, Some(keys)) => Ok(Box::new(SlotsEndpoint::open_keys(spec, &inner, &keys)?)),
    }
}

/// Opens `spec`, which must have `sched=slots`, as a [`SlotsEndpoint`] (for `send_at` and the scheduler's counters).
pub fn open_slots(spec: &str) -> detpath::Result<SlotsEndpoint> {
    match split_spec(spec)? {
        (_, None) => Err(bad(spec, "no slot scheduler asked for: add `sched=slots` and its keys".into())),
        (inner, Some(keys)) => SlotsEndpoint::open_keys(spec, &inner, &keys),
    }
}

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
}

impl SlotsEndpoint {
    fn open_keys(spec: &str, inner_spec: &str, keys: &BTreeMap<String, String>) -> detpath::Result<SlotsEndpoint> {
        let cfg = config_of(spec, keys)?;
        let send_class = match keys.get("send_class") {
            Some(name) => {
                Some(cfg.classes.iter().position(|c| &c.name == name).ok_or_else(|| bad(spec, format!("`send_class={name}` names no class of `classes`")))?)
            }
            None => cfg.classes.iter().position(|c| c.kind == ClassKind::BestEffort),
        };
        let ep = detpath::open(inner_spec)?;
        SlotsEndpoint::wrap(ep, &cfg, send_class).map_err(|e| bad(spec, format!("slot scheduler: {e}")))
    }

    /// Wraps an open endpoint; `send_to` goes to class `send_class` (`None`: `send_to` is refused).
    pub fn wrap(ep: Box<dyn Endpoint>, cfg: &SchedConfig, send_class: Option<usize>) -> Result<SlotsEndpoint, ConfigError> {
        let mut caps = ep.capabilities().clone();
        let classes: Vec<String> = cfg.classes.iter().map(|c| c.to_text()).collect();
        caps.notes.push(format!(
            "sched=slots: {} ns slots, ring {} slots, lead {} slots, classes {}; send_to -> {}",
            cfg.slot_ns,
            cfg.ring_slots,
            cfg.lead_slots,
            classes.join(";"),
            send_class.map(|i| cfg.classes[i].name.as_str()).unwrap_or("refused (no best-effort class)")
        ));
        Ok(SlotsEndpoint { inner: SchedEndpoint::new(ep, cfg)?, caps, send_class })
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
        self.inner.poll(monotonic_ns());
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

    /// A real-time send class: its first free owned slot past the insertion lead.
    fn send_rt_asap(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<(), Refusal> {
        let now = monotonic_ns();
        let s = self.inner.scheduler();
        let ring = s.ring().slots as u64;
        let mut slot = s.next_owned(class, s.current_slot(now) + s.lead_slots() as u64 + 1).ok_or(Refusal::UnknownClass { class })?;
        for _ in 0..ring {
            let t = self.inner.scheduler().slot_time(slot);
            match self.inner.send_at(t, class, payload, peer) {
                Err(Refusal::SlotTaken { .. }) => slot = self.inner.scheduler().next_owned(class, slot + 1).unwrap_or(slot + 1),
                other => return other.map(|_| ()),
            }
        }
        Err(Refusal::PrebufferFull { capacity: ring as usize })
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
            self.inner.poll(now);
            if !self.holding() {
                return look(self.inner.endpoint_mut(), Self::remaining(mode, deadline, now));
            }
            if let Some(x) = look(self.inner.endpoint_mut(), RecvMode::NonBlocking)? {
                self.inner.poll(monotonic_ns());
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

    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> detpath::Result<()> {
        let Some(class) = self.send_class else {
            return Err(Error::Unsupported {
                datapath: self.caps.datapath,
                what: "send_to through a slot scheduler without a best-effort class (add one to `classes=` or name one with `send_class=`)".into(),
            });
        };
        let r = match self.inner.scheduler().class_kind(class) {
            Some(ClassKind::RealTime) => self.send_rt_asap(class, payload, peer),
            _ => self.inner.send_be(class, payload, peer),
        };
        r.map_err(|r| self.refusal(r))?;
        // A slot of the class may be due already.
        self.inner.poll(monotonic_ns());
        Ok(())
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

    fn why(spec: &str) -> String {
        match split_spec(spec).and_then(|(inner, keys)| keys.map(|k| config_of(spec, &k).map(|_| inner)).transpose()) {
            Ok(_) => panic!("{spec} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_scheduler_keys_come_off_the_spec() {
        let (inner, keys) =
            split_spec("afxdp://dpa?port=7000&sched=slots&slot_ns=10000&ring_slots=32&lead_slots=8&sched_mode=relaxed&classes=ctl:rt:0/4;bulk:be:2/4&mode=skb")
                .unwrap();
        assert_eq!(inner, "afxdp://dpa?port=7000&mode=skb");
        let keys = keys.unwrap();
        let cfg = config_of("x", &keys).unwrap();
        assert_eq!((cfg.slot_ns, cfg.ring_slots, cfg.lead_slots, cfg.classes.len()), (10_000, 32, 8, 2));
        assert_eq!(cfg.classes[0].mode, crate::Mode::Relaxed);
        assert_eq!(split_spec("udp://10.0.0.1:7?rcvbuf=65536").unwrap(), ("udp://10.0.0.1:7?rcvbuf=65536".to_string(), None));
        assert_eq!(split_spec("udp://10.0.0.1:7").unwrap(), ("udp://10.0.0.1:7".to_string(), None));
        assert_eq!(split_spec("udp://10.0.0.1:7?sched=slots&classes=a:rt:0").unwrap().0, "udp://10.0.0.1:7");
    }

    #[test]
    fn bad_scheduler_keys_are_named() {
        let base = "udp://10.0.0.1:7?sched=slots&classes=ctl:rt:0/4;bulk:be:2/4";
        for (spec, want) in [
            (format!("{base}&sched_mod=strict"), "`sched_mod` is not a key of the slot scheduler"),
            ("udp://10.0.0.1:7?slot_ns=1000".to_string(), "`slot_ns` is a key of the slot scheduler: add `sched=slots`"),
            (format!("{base}&mode=strict"), "the scheduler's mode is `sched_mode=strict`"),
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
        let e = open_slots("udp://127.0.0.1:0").err().unwrap().to_string();
        assert!(e.contains("add `sched=slots`"), "{e}");
    }

    #[test]
    fn scheduler_keys_are_no_datapath_keys() {
        for k in SPEC_KEYS {
            assert!(!detpath::spec::COMMON_KEYS.contains(k), "{k}");
            for d in detpath::datapath::DATAPATHS {
                assert!(!d.keys.contains(k), "{k} is a key of {}", d.name);
            }
        }
    }

    #[test]
    fn a_spec_without_sched_opens_plainly_and_with_it_schedules_over_loopback() {
        let plain = open("udp://127.0.0.1:0").unwrap();
        assert!(plain.capabilities().notes.iter().all(|n| !n.starts_with("sched=")));
        let mut rx = detpath::open("udp://127.0.0.1:0").unwrap();
        let mut tx =
            open_slots("udp://127.0.0.1:0?sched=slots&slot_ns=20000&ring_slots=10&lead_slots=2&late_tolerance_ns=200000000&classes=ctl:rt:0/5;bulk:be:1/5")
                .unwrap();
        assert!(tx.capabilities().notes.iter().any(|n| n.starts_with("sched=slots")), "{:?}", tx.capabilities().notes);
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

//! QoS by name, with the DDS specification's defaults, mapped onto the
//! engine's [`detpath_pubsub::qos::Qos`]. A [`Qos`] is a list of
//! [`Policy`]s; what it does not name keeps the default of the entity it is
//! used for (DDS 1.4 §2.2.3: a writer is reliable, a reader best effort;
//! both volatile, KEEP_LAST 1, no deadline, automatic liveliness, the
//! default partition, shared ownership). The same policies have a text form
//! ([`Qos::parse`]) so C and Python name them the same way.

use crate::error::{Error, Result};
use detpath_pubsub::qos as engine;
use std::time::Duration;

pub use engine::{Durability, LivelinessKind, Ownership, Reliability};

/// HISTORY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum History {
    /// The last n samples of each instance.
    KeepLast(u32),
    /// Every sample until taken (reader) or acknowledged (writer), within `max_samples`.
    KeepAll,
}

/// One QoS policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// RELIABILITY (and a writer's max_blocking_time).
    Reliability(Reliability),
    /// DURABILITY.
    Durability(Durability),
    /// HISTORY.
    History(History),
    /// DEADLINE period.
    Deadline(Duration),
    /// LIVELINESS kind and lease (`None`: infinite).
    Liveliness(LivelinessKind, Option<Duration>),
    /// PARTITION names.
    Partition(Vec<String>),
    /// OWNERSHIP.
    Ownership(Ownership),
    /// RESOURCE_LIMITS: samples and instances the history holds (memory is preallocated).
    ResourceLimits {
        /// Samples (bounds KEEP_ALL).
        max_samples: u32,
        /// Instances of a keyed topic.
        max_instances: u32,
    },
    /// Largest serialized sample a writer sends (detpath's; default 1 MiB):
    /// a larger write is refused with [`Error::SampleTooLarge`].
    MaxSampleSize(usize),
    /// TRANSPORT_PRIORITY: 0 (the default) is best effort; a writer's
    /// priority picks its datagrams' DSCP (and, with a slot scheduler on
    /// the endpoint, its traffic class).
    TransportPriority(i32),
    /// LATENCY_BUDGET: the longest a sample may take from write to
    /// reception (more than 0, at most an hour). A reader judges every
    /// sample against it ([`crate::LatencyBudgetStatus`]); a writer offering
    /// a longer budget than a reader requests does not match it.
    LatencyBudget(Duration),
}

/// The longest [`Policy::LatencyBudget`] taken.
pub const MAX_LATENCY_BUDGET: Duration = Duration::from_secs(3600);

/// Default [`Policy::MaxSampleSize`]: 1 MiB, what a reader accepts by default.
pub const DEFAULT_MAX_SAMPLE_SIZE: usize = 1 << 20;

/// A set of policies; later ones replace earlier ones of the same kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qos {
    policies: Vec<Policy>,
}

impl Qos {
    /// No policy named: the defaults of the entity it is used for.
    pub fn new() -> Qos {
        Qos::default()
    }
    /// With one more policy.
    pub fn with(mut self, p: Policy) -> Qos {
        self.policies.push(p);
        self
    }
    /// RELIABLE.
    pub fn reliable(self) -> Qos {
        self.with(Policy::Reliability(Reliability::Reliable))
    }
    /// BEST_EFFORT.
    pub fn best_effort(self) -> Qos {
        self.with(Policy::Reliability(Reliability::BestEffort))
    }
    /// TRANSIENT_LOCAL: a writer keeps its history for readers that join later.
    pub fn transient_local(self) -> Qos {
        self.with(Policy::Durability(Durability::TransientLocal))
    }
    /// KEEP_LAST n.
    pub fn keep_last(self, n: u32) -> Qos {
        self.with(Policy::History(History::KeepLast(n)))
    }
    /// KEEP_ALL.
    pub fn keep_all(self) -> Qos {
        self.with(Policy::History(History::KeepAll))
    }
    /// TRANSPORT_PRIORITY `n`.
    pub fn transport_priority(self, n: i32) -> Qos {
        self.with(Policy::TransportPriority(n))
    }
    /// LATENCY_BUDGET `d`.
    pub fn latency_budget(self, d: Duration) -> Qos {
        self.with(Policy::LatencyBudget(d))
    }
    /// The policies named, in order.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// Policies from their text form, `;`-separated `name=value` (names and
    /// values are case-insensitive, `-` or `_` alike):
    /// `reliability=reliable|best_effort`,
    /// `durability=volatile|transient_local|transient|persistent`,
    /// `history=keep_last:N|keep_all`, `deadline=DUR`,
    /// `liveliness=automatic|manual_by_participant|manual_by_topic[:DUR]`,
    /// `partition=NAME[,NAME...]`, `ownership=shared|exclusive`,
    /// `max_samples=N`, `max_instances=N`, `max_sample_size=BYTES`,
    /// `transport_priority=N`, `latency_budget=DUR`. DUR is
    /// a number with a unit (`ns`, `us`, `ms`, `s`) or `infinite`.
    pub fn parse(text: &str) -> Result<Qos> {
        let mut q = Qos::new();
        for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| Error::BadQos(format!("{item:?}: expected name=value")))?;
            q = q.set(name, value)?;
        }
        Ok(q)
    }

    /// With the policy `name` set to `value` (the text form of [`Qos::parse`]).
    pub fn set(self, name: &str, value: &str) -> Result<Qos> {
        let name = name.trim().to_ascii_lowercase().replace('-', "_");
        let v = value.trim().to_ascii_lowercase().replace('-', "_");
        let bad = |what: &str| Error::BadQos(format!("{name}={value:?}: expected {what}"));
        let p = match name.as_str() {
            "reliability" => match v.as_str() {
                "reliable" => Policy::Reliability(Reliability::Reliable),
                "best_effort" | "besteffort" => Policy::Reliability(Reliability::BestEffort),
                _ => return Err(bad("reliable or best_effort")),
            },
            "durability" => match v.as_str() {
                "volatile" => Policy::Durability(Durability::Volatile),
                "transient_local" | "transientlocal" => Policy::Durability(Durability::TransientLocal),
                "transient" => Policy::Durability(Durability::Transient),
                "persistent" => Policy::Durability(Durability::Persistent),
                _ => return Err(bad("volatile, transient_local, transient or persistent")),
            },
            "history" => match v.split_once(':') {
                None if v == "keep_all" || v == "keepall" => Policy::History(History::KeepAll),
                None if v == "keep_last" || v == "keeplast" => Policy::History(History::KeepLast(1)),
                Some(("keep_last" | "keeplast", n)) => Policy::History(History::KeepLast(n.parse().ok().filter(|&n| n > 0).ok_or_else(|| bad("keep_last:N with N >= 1"))?)),
                _ => return Err(bad("keep_last:N or keep_all")),
            },
            "deadline" => Policy::Deadline(parse_duration(&v).ok_or_else(|| bad("a duration (e.g. 100ms) or infinite"))?.unwrap_or(Duration::MAX)),
            "liveliness" => {
                let (k, lease) = match v.split_once(':') {
                    Some((k, d)) => (k, parse_duration(d).ok_or_else(|| bad("KIND[:DURATION]"))?),
                    None => (v.as_str(), None),
                };
                let kind = match k {
                    "automatic" => LivelinessKind::Automatic,
                    "manual_by_participant" => LivelinessKind::ManualByParticipant,
                    "manual_by_topic" => LivelinessKind::ManualByTopic,
                    _ => return Err(bad("automatic, manual_by_participant or manual_by_topic")),
                };
                Policy::Liveliness(kind, lease)
            }
            // Partition names keep their case.
            "partition" => Policy::Partition(value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()),
            "ownership" => match v.as_str() {
                "shared" => Policy::Ownership(Ownership::Shared),
                "exclusive" => Policy::Ownership(Ownership::Exclusive),
                _ => return Err(bad("shared or exclusive")),
            },
            "max_samples" | "max_instances" => {
                let n: u32 = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| bad("a count >= 1"))?;
                let (mut s, mut i) = self.limits();
                if name == "max_samples" {
                    s = n
                } else {
                    i = n
                }
                Policy::ResourceLimits { max_samples: s, max_instances: i }
            }
            "max_sample_size" => Policy::MaxSampleSize(v.parse().ok().filter(|&n| n >= 4).ok_or_else(|| bad("a size in bytes >= 4"))?),
            "transport_priority" => Policy::TransportPriority(v.parse().map_err(|_| bad("an integer (0: best effort)"))?),
            "latency_budget" => Policy::LatencyBudget(parse_duration(&v).flatten().ok_or_else(|| bad("a duration above 0 and at most 1h (e.g. 100us)"))?),
            _ => {
                return Err(Error::BadQos(format!(
                    "unknown policy {name:?} (known: reliability, durability, history, deadline, liveliness, partition, ownership, max_samples, max_instances, max_sample_size, transport_priority, latency_budget)"
                )))
            }
        };
        Ok(self.with(p))
    }

    fn limits(&self) -> (u32, u32) {
        let d = engine::Qos::default();
        self.policies.iter().fold((d.max_samples, d.max_instances), |acc, p| match p {
            Policy::ResourceLimits { max_samples, max_instances } => (*max_samples, *max_instances),
            _ => acc,
        })
    }

    /// The writer's largest sample ([`Policy::MaxSampleSize`]).
    pub(crate) fn max_sample_size(&self) -> usize {
        self.policies.iter().fold(DEFAULT_MAX_SAMPLE_SIZE, |acc, p| if let Policy::MaxSampleSize(n) = p { *n } else { acc })
    }

    /// The engine's QoS for a writer (reliable unless named otherwise).
    pub(crate) fn for_writer(&self) -> Result<engine::Qos> {
        self.to_engine(Reliability::Reliable)
    }
    /// The engine's QoS for a reader (best effort unless named otherwise).
    pub(crate) fn for_reader(&self) -> Result<engine::Qos> {
        self.to_engine(Reliability::BestEffort)
    }

    fn to_engine(&self, reliability: Reliability) -> Result<engine::Qos> {
        let mut q = engine::Qos { reliability, ..engine::Qos::default() };
        for p in &self.policies {
            match p {
                Policy::Reliability(r) => q.reliability = *r,
                Policy::Durability(d) => q.durability = *d,
                Policy::History(History::KeepLast(n)) => q.history = engine::History::KeepLast((*n).max(1)),
                Policy::History(History::KeepAll) => q.history = engine::History::KeepAll,
                Policy::Deadline(d) => q.deadline_ns = ns(*d),
                Policy::Liveliness(k, lease) => {
                    q.liveliness = *k;
                    q.liveliness_lease_ns = lease.map_or(engine::INFINITE_NS, ns);
                }
                Policy::Partition(names) => q.partitions = names.clone(),
                Policy::Ownership(o) => q.ownership = *o,
                Policy::ResourceLimits { max_samples, max_instances } => {
                    q.max_samples = (*max_samples).max(1);
                    q.max_instances = (*max_instances).max(1);
                }
                Policy::MaxSampleSize(_) => {}
                Policy::TransportPriority(n) => q.transport_priority = *n,
                Policy::LatencyBudget(d) => {
                    if d.is_zero() || *d > MAX_LATENCY_BUDGET {
                        return Err(Error::BadQos(format!(
                            "latency_budget {d:?}: a budget must be above 0 and at most 1h (leave the policy out for none)"
                        )));
                    }
                    q.latency_budget_ns = ns(*d);
                }
            }
        }
        if let engine::History::KeepLast(n) = q.history {
            if n > q.max_samples {
                return Err(Error::BadQos(format!("history keep_last:{n} is above max_samples {} (raise max_samples)", q.max_samples)));
            }
        }
        Ok(q)
    }
}

fn ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(engine::INFINITE_NS)
}

/// A duration in text: `Some(None)` infinite, `None` not a duration.
fn parse_duration(s: &str) -> Option<Option<Duration>> {
    let s = s.trim();
    if s == "infinite" || s == "inf" {
        return Some(None);
    }
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" | "" => 1.0,
        _ => return None,
    };
    Some(Some(Duration::from_secs_f64(v * scale)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_dds_specification() {
        let w = Qos::new().for_writer().unwrap();
        let r = Qos::new().for_reader().unwrap();
        assert_eq!(w.reliability, Reliability::Reliable);
        assert_eq!(r.reliability, Reliability::BestEffort);
        for q in [&w, &r] {
            assert_eq!(q.durability, Durability::Volatile);
            assert_eq!(q.history, engine::History::KeepLast(1));
            assert_eq!(q.deadline_ns, engine::INFINITE_NS);
            assert_eq!(q.ownership, Ownership::Shared);
            assert!(q.partitions.is_empty());
        }
    }

    #[test]
    fn the_text_form_names_every_policy() {
        let q = Qos::parse("reliability=reliable; durability=transient-local; history=keep_last:8; deadline=250ms; liveliness=manual_by_topic:2s; partition=Sensors,b; ownership=exclusive; max_samples=64; max_instances=4; max_sample_size=100")
            .unwrap();
        let r = q.for_reader().unwrap();
        assert_eq!(r.reliability, Reliability::Reliable);
        assert_eq!(r.durability, Durability::TransientLocal);
        assert_eq!(r.history, engine::History::KeepLast(8));
        assert_eq!(r.deadline_ns, 250_000_000);
        assert_eq!((r.liveliness, r.liveliness_lease_ns), (LivelinessKind::ManualByTopic, 2_000_000_000));
        assert_eq!(r.partitions, vec!["Sensors".to_string(), "b".into()]);
        assert_eq!(r.ownership, Ownership::Exclusive);
        assert_eq!((r.max_samples, r.max_instances), (64, 4));
        assert_eq!(q.max_sample_size(), 100);
    }

    #[test]
    fn priority_and_budget_reach_the_engine() {
        let q = Qos::parse("transport_priority=42; latency_budget=100us").unwrap();
        for e in [q.for_writer().unwrap(), q.for_reader().unwrap()] {
            assert_eq!((e.transport_priority, e.latency_budget_ns), (42, 100_000));
        }
        let d = Qos::new().for_reader().unwrap();
        assert_eq!((d.transport_priority, d.latency_budget_ns), (0, 0));
        let q = Qos::new().transport_priority(-3).latency_budget(Duration::from_millis(2)).for_writer().unwrap();
        assert_eq!((q.transport_priority, q.latency_budget_ns), (-3, 2_000_000));
    }

    #[test]
    fn a_budget_of_zero_or_beyond_an_hour_is_refused() {
        for bad in ["latency_budget=0us", "latency_budget=2h", "latency_budget=3601s", "latency_budget=infinite"] {
            let e = Qos::parse(bad).and_then(|q| q.for_reader()).unwrap_err().to_string();
            assert!(e.contains("latency_budget"), "{bad}: {e}");
        }
        let e = Qos::new().latency_budget(Duration::ZERO).for_writer().unwrap_err().to_string();
        assert!(e.contains("above 0"), "{e}");
        assert!(Qos::parse("transport_priority=high").is_err());
    }

    #[test]
    fn bad_names_and_values_say_what_is_expected() {
        let e = Qos::parse("reliabilty=reliable").unwrap_err().to_string();
        assert!(e.contains("unknown policy") && e.contains("reliability"), "{e}");
        let e = Qos::parse("history=keep_last:0").unwrap_err().to_string();
        assert!(e.contains("keep_last:N"), "{e}");
        let e = Qos::parse("history=keep_last:5000").unwrap().for_writer().unwrap_err().to_string();
        assert!(e.contains("max_samples"), "{e}");
        assert!(Qos::parse("deadline=soon").is_err());
    }
}

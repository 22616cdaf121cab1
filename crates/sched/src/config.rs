//! Scheduler configuration: slot length, ring length, insertion lead, the
//! traffic classes with their slot masks, and the late-packet mode.
//!
//! Classes have a text form for command lines and endpoint specs:
//!
//! ```text
//! NAME:KIND[:MODE]:MASK[@CAPACITY]
//!   KIND      rt | be
//!   MODE      strict | relaxed   (real-time classes; default: the scheduler's mode)
//!   MASK      slot mask, see crate::mask (N, A-B, A/S, comma-separated)
//!   CAPACITY  packets the class may hold waiting (pre-buffer + ring), default 256
//! ```
//!
//! e.g. `ctl:rt:strict:0/10` or `bulk:be:5/4@1024`.

use crate::mask::{MaskError, SlotMask};
use crate::slot::Ring;
use thiserror::Error;

/// Default number of packets a class may hold waiting.
pub const DEFAULT_CAPACITY: usize = 256;
/// Most classes one scheduler has.
pub(crate) const MAX_CLASSES: usize = 64;
/// Longest ring accepted (slots per cycle).
pub const MAX_RING_SLOTS: u32 = 1 << 20;

/// Whether a class carries timed (real-time) or untimed (best-effort) traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClassKind {
    /// Packets carry a transmission time and go out in that slot (EDF pre-buffer).
    RealTime,
    /// Packets go out in the class's next free slot, in arrival order (FIFO pre-buffer).
    BestEffort,
}

/// What happens to a real-time packet that cannot have its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Refuse or drop it: a packet never leaves in a slot other than its own.
    Strict,
    /// Move it to the class's next free slot.
    Relaxed,
}

impl std::str::FromStr for Mode {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Mode, ConfigError> {
        match s {
            "strict" => Ok(Mode::Strict),
            "relaxed" => Ok(Mode::Relaxed),
            _ => Err(ConfigError::BadMode { text: s.to_string() }),
        }
    }
}

/// One traffic class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassConfig {
    /// Class name (unique).
    pub name: String,
    /// Real-time or best effort.
    pub kind: ClassKind,
    /// Late-packet mode (real-time classes; best-effort classes ignore it).
    pub mode: Mode,
    /// The ring positions the class owns.
    pub mask: SlotMask,
    /// Packets the class may hold waiting (pre-buffer plus ring).
    pub capacity: usize,
}

/// A configuration that cannot work, with what to change.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("slot length must be at least 1 ns")]
    /// Slots of length zero.
    ZeroSlot,
    #[error("ring length {slots} is out of range: use 1..={max} slots")]
    /// A ring length out of range.
    RingLength {
        /// Slots in the ring.
        slots: u32,
        /// The largest value allowed.
        max: u32,
    },
    #[error("insertion lead of {lead} slots must be shorter than the ring ({slots} slots)")]
    /// A lead of a ring cycle or more.
    LeadTooLong {
        /// The insertion lead asked for, slots.
        lead: u32,
        /// Slots in the ring.
        slots: u32,
    },
    #[error("no traffic class: give at least one with --class NAME:rt|be[:strict|relaxed]:MASK")]
    /// No class at all.
    NoClass,
    #[error("{n} classes is more than {max}")]
    /// Too many classes.
    TooManyClasses {
        /// How many classes were given.
        n: usize,
        /// The most a scheduler holds.
        max: usize,
    },
    #[error("class `{name}`: {source}")]
    /// A mask that does not parse.
    Mask {
        /// The class name.
        name: String,
        /// Why its mask does not parse.
        source: MaskError,
    },
    #[error("class `{name}` is made for a ring of {mask_slots} slots, the scheduler has {slots}")]
    /// A mask made for another ring length.
    MaskRing {
        /// The class name.
        name: String,
        /// The ring length the mask was written for, slots.
        mask_slots: u32,
        /// Slots in the ring.
        slots: u32,
    },
    #[error("classes `{a}` and `{b}` both own slot {pos}: masks must be disjoint")]
    /// Two classes owning one slot.
    Overlap {
        /// One class.
        a: String,
        /// The other class.
        b: String,
        /// The ring position both own.
        pos: u32,
    },
    #[error("two classes are named `{name}`")]
    /// Two classes with one name.
    DuplicateName {
        /// The class name.
        name: String,
    },
    #[error("class `{name}` has capacity 0: give it room for at least one packet (@N)")]
    /// A class that may hold no packet.
    ZeroCapacity {
        /// The class name.
        name: String,
    },
    #[error("class `{text}` is not NAME:KIND[:MODE]:MASK[@CAPACITY] (KIND rt|be, MODE strict|relaxed)")]
    /// A class text that does not parse.
    ClassSyntax {
        /// The text as given.
        text: String,
    },
    #[error("mode `{text}` is neither strict nor relaxed")]
    /// A mode that is neither strict nor relaxed.
    BadMode {
        /// The text as given.
        text: String,
    },
    /// An endpoint-spec key with a value it cannot take.
    #[error("spec key {key}={value}: expected {want}")]
    SpecKey {
        /// The spec key.
        key: &'static str,
        /// Its value as given.
        value: String,
        /// What the key takes.
        want: &'static str,
    },
    #[error("max payload {max} is out of range: use 1..=65507 bytes")]
    /// A payload limit out of range.
    MaxPayload {
        /// The largest value allowed.
        max: usize,
    },
}

impl ClassConfig {
    /// Parses `NAME:KIND[:MODE]:MASK[@CAPACITY]` for a ring of `ring_slots`; `mode` is the default mode.
    pub fn parse(text: &str, ring_slots: u32, mode: Mode) -> Result<ClassConfig, ConfigError> {
        let syntax = || ConfigError::ClassSyntax { text: text.to_string() };
        let (body, capacity) = match text.rsplit_once('@') {
            Some((b, c)) => (b, c.trim().parse::<usize>().map_err(|_| syntax())?),
            None => (text, DEFAULT_CAPACITY),
        };
        let parts: Vec<&str> = body.split(':').collect();
        let (name, kind, mode, mask) = match parts.as_slice() {
            [n, k, m] => (*n, *k, mode, *m),
            [n, k, md, m] => (*n, *k, md.parse()?, *m),
            _ => return Err(syntax()),
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(syntax());
        }
        let kind = match kind.trim() {
            "rt" => ClassKind::RealTime,
            "be" => ClassKind::BestEffort,
            _ => return Err(syntax()),
        };
        let mask = SlotMask::parse(mask, ring_slots).map_err(|source| ConfigError::Mask { name: name.to_string(), source })?;
        Ok(ClassConfig { name: name.to_string(), kind, mode, mask, capacity })
    }

    /// The text form this parses from.
    pub fn to_text(&self) -> String {
        let kind = match self.kind {
            ClassKind::RealTime => "rt",
            ClassKind::BestEffort => "be",
        };
        let mode = match self.mode {
            Mode::Strict => "strict",
            Mode::Relaxed => "relaxed",
        };
        format!("{}:{kind}:{mode}:{}@{}", self.name, self.mask.to_text(), self.capacity)
    }
}

/// Everything a [`Scheduler`](crate::Scheduler) needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedConfig {
    /// Slot length in ns.
    pub slot_ns: u64,
    /// Slots per ring cycle.
    pub ring_slots: u32,
    /// Insertion lead: a slot's content is fixed this many slots before it starts;
    /// a real-time packet must arrive before that.
    pub lead_slots: u32,
    /// Largest payload a slot carries (bytes); longer ones are refused.
    pub max_payload: usize,
    /// A slot released later than this after its start is late: in strict
    /// mode its packet is dropped rather than let out in someone else's time.
    /// A best-effort slot is used up to this late, but never later than the
    /// ring's length less the lead (so a poll running behind never pushes a
    /// new real-time packet out of the ring into the pre-buffer).
    pub late_tolerance_ns: u64,
    /// The traffic classes (disjoint masks).
    pub classes: Vec<ClassConfig>,
}

impl SchedConfig {
    /// A configuration without classes (add them to `classes`); late tolerance one slot, 1472-byte payloads.
    pub fn new(slot_ns: u64, ring_slots: u32, lead_slots: u32) -> SchedConfig {
        SchedConfig { slot_ns, ring_slots, lead_slots, max_payload: 1472, late_tolerance_ns: slot_ns, classes: Vec::new() }
    }

    /// The ring geometry.
    pub fn ring(&self) -> Ring {
        Ring { slot_ns: self.slot_ns, slots: self.ring_slots }
    }

    /// Checks everything [`Scheduler::new`](crate::Scheduler::new) relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.slot_ns == 0 {
            return Err(ConfigError::ZeroSlot);
        }
        if self.ring_slots == 0 || self.ring_slots > MAX_RING_SLOTS {
            return Err(ConfigError::RingLength { slots: self.ring_slots, max: MAX_RING_SLOTS });
        }
        if self.lead_slots >= self.ring_slots {
            return Err(ConfigError::LeadTooLong { lead: self.lead_slots, slots: self.ring_slots });
        }
        if self.max_payload == 0 || self.max_payload > 65_507 {
            return Err(ConfigError::MaxPayload { max: self.max_payload });
        }
        if self.classes.is_empty() {
            return Err(ConfigError::NoClass);
        }
        if self.classes.len() > MAX_CLASSES {
            return Err(ConfigError::TooManyClasses { n: self.classes.len(), max: MAX_CLASSES });
        }
        for (i, c) in self.classes.iter().enumerate() {
            if c.mask.ring_slots() != self.ring_slots {
                return Err(ConfigError::MaskRing { name: c.name.clone(), mask_slots: c.mask.ring_slots(), slots: self.ring_slots });
            }
            if c.capacity == 0 {
                return Err(ConfigError::ZeroCapacity { name: c.name.clone() });
            }
            for d in &self.classes[..i] {
                if d.name == c.name {
                    return Err(ConfigError::DuplicateName { name: c.name.clone() });
                }
                if !d.mask.disjoint(&c.mask) {
                    let pos = c.mask.positions().find(|&p| d.mask.contains(p)).unwrap_or(0);
                    return Err(ConfigError::Overlap { a: d.name.clone(), b: c.name.clone(), pos });
                }
            }
        }
        Ok(())
    }
}

/// The endpoint-spec keys of the slot scheduler, read by its layer ([`crate::LAYER`]):
/// `udp://10.0.0.1:7000?sched=slots&slot_ns=10000&ring_slots=100&classes=ctl:rt:strict:5/10;bulk:be:10/10`.
/// The mode key is `sched_mode` because `mode` is detpath's XDP mode key; `send_class`
/// names the class `send_to` uses (read by [`crate::spec::SlotsEndpoint`]).
pub const SPEC_KEYS: &[&str] = &["sched", "slot_ns", "ring_slots", "lead_slots", "late_tolerance_ns", "sched_mode", "max_payload", "classes", "send_class"];

impl SchedConfig {
    /// A configuration from endpoint-spec keys (values as strings): `sched=slots`
    /// (required; anything else is an error), `slot_ns` (default 10000),
    /// `ring_slots` (100), `lead_slots` (2), `late_tolerance_ns` (one slot),
    /// `sched_mode` (strict|relaxed, default strict: the classes' default),
    /// `max_payload` (1472), `classes` (required: class texts separated by `;`).
    /// Keys not in [`SPEC_KEYS`] are ignored (they belong to the datapath).
    pub(crate) fn from_spec_keys(keys: &std::collections::BTreeMap<String, String>) -> Result<SchedConfig, ConfigError> {
        let get = |k: &str| keys.get(k).map(String::as_str);
        match get("sched") {
            Some("slots") => {}
            other => return Err(ConfigError::SpecKey { key: "sched", value: other.unwrap_or("").to_string(), want: "slots" }),
        }
        fn num<T: std::str::FromStr>(key: &'static str, v: Option<&str>, default: T) -> Result<T, ConfigError> {
            match v {
                None => Ok(default),
                Some(t) => t.parse().map_err(|_| ConfigError::SpecKey { key, value: t.to_string(), want: "a whole number" }),
            }
        }
        let slot_ns = num("slot_ns", get("slot_ns"), 10_000u64)?;
        let ring_slots = num("ring_slots", get("ring_slots"), 100u32)?;
        let lead_slots = num("lead_slots", get("lead_slots"), 2u32)?;
        let mut cfg = SchedConfig::new(slot_ns, ring_slots, lead_slots);
        cfg.late_tolerance_ns = num("late_tolerance_ns", get("late_tolerance_ns"), slot_ns)?;
        cfg.max_payload = num("max_payload", get("max_payload"), 1472usize)?;
        let mode: Mode = get("sched_mode").unwrap_or("strict").parse()?;
        // The ring first: a class mask is read against it, so a bad ring would show as a bad mask.
        if ring_slots == 0 || ring_slots > MAX_RING_SLOTS {
            return Err(ConfigError::RingLength { slots: ring_slots, max: MAX_RING_SLOTS });
        }
        let classes = get("classes").ok_or(ConfigError::NoClass)?;
        cfg.classes = classes.split(';').filter(|c| !c.trim().is_empty()).map(|c| ClassConfig::parse(c.trim(), ring_slots, mode)).collect::<Result<_, _>>()?;
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_spec_keys() {
        let keys = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<std::collections::BTreeMap<_, _>>();
        let cfg =
            SchedConfig::from_spec_keys(&keys(&[("sched", "slots"), ("slot_ns", "5000"), ("classes", "ctl:rt:5/10;bulk:be:10/10@64"), ("port", "7")])).unwrap();
        assert_eq!((cfg.slot_ns, cfg.ring_slots, cfg.late_tolerance_ns, cfg.classes.len()), (5000, 100, 5000, 2));
        assert_eq!(cfg.classes[1].capacity, 64);
        assert!(matches!(SchedConfig::from_spec_keys(&keys(&[("sched", "fifo")])), Err(ConfigError::SpecKey { key: "sched", .. })));
        assert!(matches!(
            SchedConfig::from_spec_keys(&keys(&[("sched", "slots"), ("slot_ns", "x"), ("classes", "a:rt:0")])),
            Err(ConfigError::SpecKey { key: "slot_ns", .. })
        ));
        assert_eq!(SchedConfig::from_spec_keys(&keys(&[("sched", "slots")])), Err(ConfigError::NoClass));
    }

    #[test]
    fn parses_class_text() {
        let c = ClassConfig::parse("ctl:rt:relaxed:0/10@64", 100, Mode::Strict).unwrap();
        assert_eq!((c.kind, c.mode, c.capacity, c.mask.count()), (ClassKind::RealTime, Mode::Relaxed, 64, 10));
        let b = ClassConfig::parse("bulk:be:5-9", 100, Mode::Strict).unwrap();
        assert_eq!((b.kind, b.mode, b.capacity), (ClassKind::BestEffort, Mode::Strict, DEFAULT_CAPACITY));
        assert_eq!(ClassConfig::parse(&c.to_text(), 100, Mode::Strict).unwrap(), c);
        for bad in ["x", "a:zz:1", "a:rt:fast:1", "a b:rt:1", "a:rt:1@x", ":rt:1"] {
            assert!(ClassConfig::parse(bad, 100, Mode::Strict).is_err(), "{bad}");
        }
    }

    #[test]
    fn validate_catches_overlap_and_lead() {
        let mut cfg = SchedConfig::new(1_000, 10, 2);
        assert_eq!(cfg.validate(), Err(ConfigError::NoClass));
        cfg.classes.push(ClassConfig::parse("a:rt:0-4", 10, Mode::Strict).unwrap());
        cfg.classes.push(ClassConfig::parse("b:be:4-9", 10, Mode::Strict).unwrap());
        assert!(matches!(cfg.validate(), Err(ConfigError::Overlap { pos: 4, .. })));
        cfg.classes[1] = ClassConfig::parse("b:be:5-9", 10, Mode::Strict).unwrap();
        assert_eq!(cfg.validate(), Ok(()));
        cfg.lead_slots = 10;
        assert!(matches!(cfg.validate(), Err(ConfigError::LeadTooLong { .. })));
    }
}

//! From a writer's TRANSPORT_PRIORITY to the wire: the DSCP its datagrams
//! carry and, on an endpoint with a slot scheduler (`sched=slots&classes=...`),
//! the traffic class whose slots they leave in.
//!
//! The engine is sans-IO: it knows a [`TxMark`] (a DSCP and a class
//! *number*) per writer, and hands it to [`Outbox::send_marked`](crate::engine::Outbox::send_marked)
//! with every datagram of that writer: DATA, DATA_FRAG, HEARTBEAT, GAP and
//! retransmissions; a reader's ACKNACK and NACK_FRAG to a writer travel in
//! that writer's announced priority (its SEDP PID_TRANSPORT_PRIORITY).
//! Discovery (SPDP, SEDP) has DSCP 0 and, under a scheduler, the class
//! of the highest priority ([`MarkTable::discovery`]).
//!
//! The mapping ([`PriorityPolicy`]) is configurable:
//! - DSCP: [`detpath_wire::dscp::PriorityMap`] (default: 0 → CS0,
//!   1–9 → AF11, 10–19 → AF21, 20–29 → AF31, 30–39 → AF41, ≥ 40 → EF; any
//!   priority above 0 is marked).
//! - Class, only where the endpoint has a slot scheduler: `PRIORITY=CLASS`
//!   steps ([`ClassMap::parse`], e.g. `0=bulk,1=ctl`): a priority takes the
//!   class of the highest step at or below it. Without a class map the
//!   default is: priority > 0 → the scheduler's first real-time class,
//!   priority ≤ 0 → its first best-effort class.
//!
//! The class names are resolved against the endpoint's classes once
//! ([`MarkTable::resolve`]; over a detpath endpoint
//! `transport::EndpointTransport::priority_marks`), giving the
//! [`MarkTable`] that goes into [`engine::Config::priority`](crate::engine::Config::priority).
//! A class map naming a class the scheduler does not have is an error
//! there; a writer whose priority no class covers (below the lowest step,
//! or the default rule on a scheduler without a real-time or best-effort
//! class) is refused at its creation ([`EngineError::Priority`](crate::engine::EngineError::Priority)),
//! both naming the scheduler's classes. Without a scheduler a priority sets
//! the DSCP only.

use detpath_wire::dscp::PriorityMap;
use std::fmt;

/// What one datagram asks of the network and the endpoint: the DSCP of its
/// IPv4 header and the slot scheduler's class number (`None`: the
/// endpoint's default class). The pub-sub's own type, so the engine does
/// not depend on detpath; it maps one to one to `detpath::Mark`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TxMark {
    /// Differentiated Services code point, 0..=63.
    pub dscp: u8,
    /// The scheduler's class number; `None`: the endpoint's default.
    pub class: Option<u16>,
}

impl TxMark {
    /// Unmarked: DSCP 0, the default class.
    pub const NONE: TxMark = TxMark { dscp: 0, class: None };
}

/// Whether a scheduler class is real time or best effort (as the
/// scheduler's `classes=` says `rt` or `be`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    /// Real time: reserved slots.
    RealTime,
    /// Best effort: what is left.
    BestEffort,
}

/// `PRIORITY=CLASS` steps, ascending by priority: a priority takes the
/// class of the highest step at or below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassMap {
    steps: Vec<(i32, String)>,
}

impl ClassMap {
    /// A map from `PRIORITY=CLASS` pairs, comma separated (`0=bulk,1=ctl`).
    /// Refused: an empty list, a repeated priority, an empty class name.
    pub fn parse(s: &str) -> Result<ClassMap, String> {
        let steps = detpath_wire::dscp::parse_steps(s, "class map", "CLASS", ("1=ctl", "0=bulk,1=ctl"), |part, c| {
            if c.is_empty() {
                return Err(format!("`{part}`: no class name"));
            }
            Ok(c.to_string())
        })?;
        Ok(ClassMap { steps })
    }
    /// The steps, ascending.
    pub fn steps(&self) -> &[(i32, String)] {
        &self.steps
    }
}

impl fmt::Display for ClassMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (p, c)) in self.steps.iter().enumerate() {
            write!(f, "{}{p}={c}", if i > 0 { "," } else { "" })?;
        }
        Ok(())
    }
}

/// The configured mapping from TRANSPORT_PRIORITY to DSCP and class name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PriorityPolicy {
    /// Priority to DSCP.
    pub dscp: PriorityMap,
    /// Priority to scheduler class; `None`: the default rule (module doc).
    pub classes: Option<ClassMap>,
}

/// Why a priority has no mark.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PriorityError {
    /// The class map names a class the endpoint's scheduler does not have.
    #[error("transport priority {priority} maps to traffic class `{class}`, which the slot scheduler does not have; its classes: {classes}")]
    NoSuchClass {
        /// The step's priority.
        priority: i32,
        /// The class it names.
        class: String,
        /// The scheduler's classes, `name (rt|be)`, comma separated.
        classes: String,
    },
    /// The class map names classes but the endpoint has no slot scheduler.
    #[error("a priority class map ({map}) needs a slot scheduler on the endpoint: add `sched=slots&classes=...` to its spec")]
    NoScheduler {
        /// The class map.
        map: String,
    },
    /// No class covers this priority (below the lowest step of the class
    /// map, or no class of the kind the default rule takes).
    #[error("no traffic class covers transport priority {priority} ({why}); the slot scheduler's classes: {classes}")]
    Uncovered {
        /// The writer's priority.
        priority: i32,
        /// What was looked for.
        why: String,
        /// The scheduler's classes, `name (rt|be)`, comma separated.
        classes: String,
    },
}

/// A [`PriorityPolicy`] resolved against one endpoint: what the engine
/// looks up when a writer is created (or a remote writer's priority is
/// learnt), never per datagram.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkTable {
    dscp: PriorityMap,
    /// Without a scheduler: `None` (a priority sets the DSCP only).
    sched: Option<SchedClasses>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct SchedClasses {
    /// (lowest priority, class number), ascending; priorities below the
    /// first step, and steps without a class, are uncovered.
    steps: Vec<(i32, Option<u16>)>,
    /// The class list for error messages.
    names: String,
    /// What the steps came from, for [`PriorityError::Uncovered`].
    rule: String,
}

impl MarkTable {
    /// DSCP only, by `dscp` (no scheduler).
    pub fn dscp_only(dscp: PriorityMap) -> MarkTable {
        MarkTable { dscp, sched: None }
    }

    /// Resolves `policy` against an endpoint's scheduler classes (name and
    /// kind, in class-number order; `None`: no scheduler).
    pub fn resolve(policy: &PriorityPolicy, classes: Option<&[(String, ClassKind)]>) -> Result<MarkTable, PriorityError> {
        let Some(classes) = classes else {
            return match &policy.classes {
                Some(m) => Err(PriorityError::NoScheduler { map: m.to_string() }),
                None => Ok(MarkTable::dscp_only(policy.dscp.clone())),
            };
        };
        let names = classes
            .iter()
            .map(|(n, k)| format!("{n} ({})", if *k == ClassKind::RealTime { "rt" } else { "be" }))
            .collect::<Vec<_>>()
            .join(", ");
        let index = |name: &str| classes.iter().position(|(n, _)| n == name).map(|i| i as u16);
        let first = |kind: ClassKind| classes.iter().position(|(_, k)| *k == kind).map(|i| i as u16);
        let (steps, rule) = match &policy.classes {
            Some(map) => {
                let mut steps = Vec::new();
                for (p, c) in map.steps() {
                    let i = index(c).ok_or_else(|| PriorityError::NoSuchClass { priority: *p, class: c.clone(), classes: names.clone() })?;
                    steps.push((*p, Some(i)));
                }
                (steps, format!("the class map {map} starts at priority {}", map.steps()[0].0))
            }
            None => {
                // The default rule: > 0 real time, <= 0 best effort; a
                // side without its kind of class stays uncovered.
                let steps = vec![(i32::MIN, first(ClassKind::BestEffort)), (1, first(ClassKind::RealTime))];
                let rule = "the default rule: priority > 0 takes the first real-time class, <= 0 the first best-effort class".to_string();
                (steps, rule)
            }
        };
        Ok(MarkTable { dscp: policy.dscp.clone(), sched: Some(SchedClasses { steps, names, rule }) })
    }

    /// The mark of a writer of `priority`.
    pub fn mark(&self, priority: i32) -> Result<TxMark, PriorityError> {
        let dscp = self.dscp.dscp(priority);
        let Some(s) = &self.sched else {
            return Ok(TxMark { dscp, class: None });
        };
        match s.steps.iter().rev().find(|(from, _)| priority >= *from) {
            Some(&(_, Some(c))) => Ok(TxMark { dscp, class: Some(c) }),
            _ => Err(PriorityError::Uncovered { priority, why: s.rule.clone(), classes: s.names.clone() }),
        }
    }

    /// The mark of a remote writer of `priority`, for what a reader sends
    /// it: its mark, or when no class covers it its DSCP and the default class.
    pub fn mark_or_dscp(&self, priority: i32) -> TxMark {
        self.mark(priority).unwrap_or(TxMark { dscp: self.dscp.dscp(priority), class: None })
    }

    /// The mark of discovery (SPDP, SEDP): DSCP 0 and, with a scheduler,
    /// the class of the highest priority any class covers (the default
    /// rule: the first real-time class), so that a flooding best-effort
    /// writer cannot starve discovery (a refused SPDP announcement for a
    /// lease's length would lose the peer); without one, unmarked.
    pub fn discovery(&self) -> TxMark {
        let class = self.sched.as_ref().and_then(|s| s.steps.iter().rev().find_map(|&(_, c)| c));
        TxMark { dscp: 0, class }
    }

    /// Whether the endpoint has a slot scheduler.
    pub fn has_scheduler(&self) -> bool {
        self.sched.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> Vec<(String, ClassKind)> {
        vec![("ctl".into(), ClassKind::RealTime), ("bulk".into(), ClassKind::BestEffort), ("video".into(), ClassKind::RealTime)]
    }

    #[test]
    fn without_a_scheduler_a_priority_sets_the_dscp_only() {
        let t = MarkTable::resolve(&PriorityPolicy::default(), None).unwrap();
        assert_eq!(t.mark(0).unwrap(), TxMark::NONE);
        assert_eq!(t.mark(40).unwrap(), TxMark { dscp: 46, class: None });
        let with_map = PriorityPolicy { classes: Some(ClassMap::parse("1=ctl").unwrap()), ..Default::default() };
        assert!(MarkTable::resolve(&with_map, None).unwrap_err().to_string().contains("sched=slots"));
    }

    #[test]
    fn the_default_rule_puts_positive_priorities_in_the_first_real_time_class() {
        let c = classes();
        let t = MarkTable::resolve(&PriorityPolicy::default(), Some(&c)).unwrap();
        assert_eq!(t.mark(0).unwrap(), TxMark { dscp: 0, class: Some(1) });
        assert_eq!(t.mark(-4).unwrap(), TxMark { dscp: 0, class: Some(1) });
        assert_eq!(t.mark(40).unwrap(), TxMark { dscp: 46, class: Some(0) });
        assert_eq!(t.mark(1).unwrap(), TxMark { dscp: 10, class: Some(0) });
        assert_eq!(t.discovery(), TxMark { dscp: 0, class: Some(0) });
        assert_eq!(MarkTable::default().discovery(), TxMark::NONE);
        // Only real-time classes: priority 0 is uncovered, named with the classes.
        let rt_only = vec![("ctl".to_string(), ClassKind::RealTime)];
        let t = MarkTable::resolve(&PriorityPolicy::default(), Some(&rt_only)).unwrap();
        let e = t.mark(0).unwrap_err().to_string();
        assert!(e.contains("priority 0") && e.contains("ctl (rt)") && e.contains("best-effort class"), "{e}");
        assert!(t.mark(3).is_ok());
        // Only best effort: positive priorities are uncovered.
        let be_only = vec![("bulk".to_string(), ClassKind::BestEffort)];
        let t = MarkTable::resolve(&PriorityPolicy::default(), Some(&be_only)).unwrap();
        assert!(t.mark(0).is_ok());
        let e = t.mark(40).unwrap_err().to_string();
        assert!(e.contains("priority 40") && e.contains("bulk (be)") && e.contains("real-time class"), "{e}");
    }

    #[test]
    fn a_class_map_picks_classes_by_name_and_refuses_unknown_ones() {
        let c = classes();
        let p = PriorityPolicy { classes: Some(ClassMap::parse("10=video, 0=bulk, 50=ctl").unwrap()), ..Default::default() };
        let t = MarkTable::resolve(&p, Some(&c)).unwrap();
        assert_eq!(t.mark(0).unwrap().class, Some(1));
        assert_eq!(t.mark(10).unwrap().class, Some(2));
        assert_eq!(t.mark(49).unwrap().class, Some(2));
        assert_eq!(t.mark(50).unwrap().class, Some(0));
        let e = t.mark(-1).unwrap_err().to_string();
        assert!(e.contains("priority -1") && e.contains("ctl (rt), bulk (be), video (rt)"), "{e}");
        assert_eq!(t.mark_or_dscp(-1), TxMark { dscp: 0, class: None });
        let p = PriorityPolicy { classes: Some(ClassMap::parse("0=bulk,1=audio").unwrap()), ..Default::default() };
        let e = MarkTable::resolve(&p, Some(&c)).unwrap_err().to_string();
        assert!(e.contains("`audio`") && e.contains("ctl (rt), bulk (be), video (rt)"), "{e}");
    }

    #[test]
    fn class_maps_parse_and_print_back() {
        let m = ClassMap::parse("1=ctl, 0=bulk").unwrap();
        assert_eq!(m.to_string(), "0=bulk,1=ctl");
        assert!(ClassMap::parse("").unwrap_err().contains("empty"));
        assert!(ClassMap::parse("1=a,1=b").unwrap_err().contains("twice"));
        assert!(ClassMap::parse("x=a").unwrap_err().contains("not an integer"));
        assert!(ClassMap::parse("1=").unwrap_err().contains("no class"));
        assert!(ClassMap::parse("1:a").unwrap_err().contains("PRIORITY=CLASS"));
    }
}

//! An intent's traffic-class fields: `dscp`, `priority` (with an optional
//! `priority_map`) and `topic`. All three come down to one thing the XDP
//! program can read cheaply: the set of DSCPs of the innermost IP header.
//!
//! - `"dscp"`: a DSCP by name (`"EF"`, `"af41"`) or number (`46`, `"46"`),
//!   an inclusive range (`"AF41..EF"`, `"32-47"`), or a list of those.
//! - `"priority"`: a DDS TRANSPORT_PRIORITY (an integer, `"10..39"` for a
//!   range, or a list), turned into the DSCP(s) its writers mark their
//!   datagrams with: by the default map (`detpath_wire::dscp::PriorityMap`:
//!   0 is CS0, 1-9 AF11, 10-19 AF21, 20-29 AF31, 30-39 AF41, 40 and above
//!   EF), or by `"priority_map"` (`"0=CS0,1=AF21,50=EF"`, what
//!   `PriorityMap::parse` takes), which must be the writers' map too.
//! - `"topic"`: a label naming the topic whose class this is; it needs the
//!   topic's `priority` (or a `dscp`). The classifier cannot read a topic
//!   name off an RTPS datagram cheaply (it is in the writer's discovery
//!   data, not in the datagram), so a topic is matched by the DSCP its
//!   writers set from its TRANSPORT_PRIORITY.
//!
//! Not to be mixed up with `Action.priority`, the rule's precedence.

use super::{set_once_string, IntentError, R};
use detpath_wire::dscp::{self, PriorityMap};
use serde::Serialize;
use serde_json::Value;

/// Most entries in one `dscp` or `priority` list.
pub(crate) const MAX_LIST: usize = 64;

/// How a rule's DSCPs were asked for, when by priority or topic (kept for
/// the listing: what the user wrote, next to the DSCPs it became).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassOf {
    /// The topic's name, a label (`topic`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// The TRANSPORT_PRIORITY ranges asked for, inclusive (`priority`);
    /// listed as the intent gives them: `40`, `"10..39"`.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "ranges_as_given")]
    pub priority: Vec<(i32, i32)>,
    /// The map that turned them into DSCPs (the default one when not given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_map: Option<String>,
}

/// The class fields as found in the resources, before they are resolved.
#[derive(Debug, Default)]
pub(super) struct ClassFields {
    dscp: Option<Vec<u8>>,
    priority: Option<Vec<(i32, i32)>>,
    map: Option<String>,
    topic: Option<String>,
}

impl ClassFields {
    /// Takes `key` = `v` of a resource if it is a class field; `Ok(false)` when it is not one.
    pub(super) fn take(&mut self, key: &str, v: &Value) -> R<bool> {
        match key {
            "dscp" => set_list(&mut self.dscp, parse_dscps(v)?, "dscp")?,
            "priority" => set_list(&mut self.priority, parse_priorities(v)?, "priority")?,
            "priority_map" => {
                let s = v.as_str().ok_or_else(|| bad("priority_map", "expected a string of PRIORITY=DSCP pairs such as \"0=CS0,1=AF21,40=EF\""))?;
                // Checked here, so the error names the field.
                PriorityMap::parse(s).map_err(|e| bad("priority_map", &e))?;
                set_once_string(&mut self.map, s.trim().to_string(), "priority_map")?;
            }
            "topic" => {
                let s = v.as_str().ok_or_else(|| bad("topic", "expected the topic's name as a string"))?.trim();
                if s.is_empty() || s.len() > 256 || s.chars().any(char::is_control) {
                    return Err(bad("topic", "1 to 256 printable characters"));
                }
                set_once_string(&mut self.topic, s.to_string(), "topic")?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The DSCP set the fields ask for (ascending, distinct), and how it was
    /// asked for; `(None, None)` when no class field was given.
    pub(super) fn resolve(self) -> R<(Option<Vec<u8>>, Option<ClassOf>)> {
        let ClassFields { dscp, priority, map, topic } = self;
        if map.is_some() && priority.is_none() {
            return Err(IntentError::Contradictory("`priority_map` is given without a `priority` to apply it to".into()));
        }
        if topic.is_some() && priority.is_none() && dscp.is_none() {
            return Err(IntentError::Missing {
                field: "priority".into(),
                place: "a topic intent (the classifier cannot read a topic name off an RTPS datagram; it matches the DSCP the \
                        topic's writers set from its TRANSPORT_PRIORITY: give that as `priority`, or the DSCP as `dscp`)"
                    .into(),
            });
        }
        let by_priority = match &priority {
            None => None,
            Some(ranges) => {
                let m = match &map {
                    Some(s) => PriorityMap::parse(s).map_err(|e| bad("priority_map", &e))?,
                    None => PriorityMap::default(),
                };
                let mut set: Vec<u8> = ranges.iter().flat_map(|&(lo, hi)| dscps_of_range(&m, lo, hi)).collect();
                set.sort_unstable();
                set.dedup();
                Some(set)
            }
        };
        let set = match (dscp, by_priority) {
            (Some(d), Some(p)) if d != p => {
                return Err(IntentError::Contradictory(format!(
                    "`dscp` {} and `priority` {} (DSCP {} by the {} map) disagree; give one of them",
                    show(&d),
                    show_ranges(priority.as_deref().unwrap_or_default()),
                    show(&p),
                    if map.is_some() { "given" } else { "default" }
                )))
            }
            (d, p) => d.or(p),
        };
        let class = (topic.is_some() || priority.is_some()).then(|| ClassOf {
            topic,
            priority: priority.unwrap_or_default(),
            priority_map: Some(map.unwrap_or_else(|| PriorityMap::default().to_string())),
        });
        Ok((set, class))
    }
}

fn ranges_as_given<S: serde::Serializer>(r: &[(i32, i32)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(r.iter().map(|&(a, b)| if a == b { serde_json::json!(a) } else { serde_json::json!(format!("{a}..{b}")) }))
}

fn bad(field: &str, why: &str) -> IntentError {
    IntentError::BadValue { field: field.into(), why: why.into() }
}

fn set_list<T: PartialEq + std::fmt::Debug>(slot: &mut Option<Vec<T>>, val: Vec<T>, what: &str) -> R<()> {
    match slot {
        Some(old) if *old != val => Err(IntentError::Contradictory(format!("{what} is given twice with different values ({old:?} and {val:?})"))),
        _ => {
            *slot = Some(val);
            Ok(())
        }
    }
}

/// Each element of a list, or the one value.
fn items<'a>(v: &'a Value, field: &str) -> R<Vec<&'a Value>> {
    match v {
        Value::Array(a) if a.is_empty() => Err(bad(field, "an empty list matches nothing; leave the field out to match any")),
        Value::Array(a) if a.len() > MAX_LIST => Err(bad(field, &format!("at most {MAX_LIST} entries"))),
        Value::Array(a) => Ok(a.iter().collect()),
        one => Ok(vec![one]),
    }
}

/// The DSCPs of a `dscp` value: ascending, distinct.
pub(crate) fn parse_dscps(v: &Value) -> R<Vec<u8>> {
    let mut set = 0u64;
    for it in items(v, "dscp")? {
        let (lo, hi) = match it {
            Value::Number(n) => {
                let d = n.as_u64().filter(|d| *d <= dscp::MAX as u64).ok_or_else(|| bad("dscp", &format!("{n} is not a DSCP (0..=63)")))? as u8;
                (d, d)
            }
            Value::String(s) => {
                let one = |t: &str| dscp::parse(t).map_err(|e| bad("dscp", &e));
                match s.split_once("..").or_else(|| s.split_once('-')) {
                    Some((a, b)) => (one(a)?, one(b)?),
                    None => {
                        let d = one(s)?;
                        (d, d)
                    }
                }
            }
            other => return Err(bad("dscp", &format!("{other} is not a DSCP: a name (EF, AF41, CS5), a number 0..=63, a range \"AF41..EF\" or a list"))),
        };
        if lo > hi {
            return Err(bad("dscp", &format!("the range {lo}..{hi} is empty (its start is above its end)")));
        }
        for d in lo..=hi {
            set |= 1u64 << d;
        }
    }
    Ok((0..=dscp::MAX).filter(|d| set & (1u64 << d) != 0).collect())
}

/// The TRANSPORT_PRIORITY ranges of a `priority` value (each inclusive).
pub(crate) fn parse_priorities(v: &Value) -> R<Vec<(i32, i32)>> {
    let one = |t: &str| -> R<i32> {
        t.trim().parse::<i32>().map_err(|_| bad("priority", &format!("`{}` is not a TRANSPORT_PRIORITY (an integer, 32 bits)", t.trim())))
    };
    let mut out = Vec::new();
    for it in items(v, "priority")? {
        let (lo, hi) = match it {
            Value::Number(n) => {
                let p = n
                    .as_i64()
                    .and_then(|p| i32::try_from(p).ok())
                    .ok_or_else(|| bad("priority", &format!("{n} is not a TRANSPORT_PRIORITY (an integer, 32 bits)")))?;
                (p, p)
            }
            Value::String(s) => match s.split_once("..") {
                Some((a, b)) => (one(a)?, one(b)?),
                None => {
                    let p = one(s)?;
                    (p, p)
                }
            },
            other => return Err(bad("priority", &format!("{other} is not a TRANSPORT_PRIORITY: an integer, a range \"10..39\" or a list"))),
        };
        if lo > hi {
            return Err(bad("priority", &format!("the range {lo}..{hi} is empty (its start is above its end)")));
        }
        out.push((lo, hi));
    }
    Ok(out)
}

/// The DSCPs `map` gives the priorities `lo..=hi`: the one of `lo` and
/// those of the map's steps that start inside the range (bounded by the
/// steps, however wide the range).
pub(crate) fn dscps_of_range(map: &PriorityMap, lo: i32, hi: i32) -> Vec<u8> {
    let mut v = vec![map.dscp(lo)];
    v.extend(map.steps().iter().filter(|(from, _)| *from > lo && *from <= hi).map(|&(_, d)| d));
    v
}

/// A DSCP set by name where a DSCP has one, comma separated (`AF21,EF,5`).
pub(crate) fn dscp_names(set: &[u8]) -> String {
    let names: Vec<String> = set.iter().map(|&d| dscp::name(d).map_or_else(|| d.to_string(), str::to_string)).collect();
    names.join(",")
}

fn show(set: &[u8]) -> String {
    dscp_names(set)
}

fn show_ranges(r: &[(i32, i32)]) -> String {
    let v: Vec<String> = r.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}..{b}") }).collect();
    v.join(",")
}

#[cfg(test)]
mod tests {
    use crate::intent::{parse_intent, IntentError, Rule};

    fn rule(resources: &str) -> Result<Rule, IntentError> {
        parse_intent(format!(r#"{{"Resources": [{resources}], "Action": {{"actionType": "INSERT", "actionName": "PASS"}}}}"#).as_bytes())
    }

    fn dscps(resources: &str) -> Vec<u8> {
        rule(resources).unwrap_or_else(|e| panic!("{resources}: {e}")).matches.dscp.unwrap()
    }

    #[test]
    fn dscp_by_name_number_range_and_list() {
        assert_eq!(dscps(r#"{"dscp": "EF"}"#), vec![46]);
        assert_eq!(dscps(r#"{"dscp": "af41"}"#), vec![34]);
        assert_eq!(dscps(r#"{"dscp": 0}"#), vec![0]);
        assert_eq!(dscps(r#"{"dscp": "63"}"#), vec![63]);
        assert_eq!(dscps(r#"{"dscp": "AF41..AF43"}"#), (34..=38).collect::<Vec<u8>>());
        assert_eq!(dscps(r#"{"dscp": "40-41"}"#), vec![40, 41]);
        assert_eq!(dscps(r#"{"dscp": ["EF", 10, "EF", "CS1"]}"#), vec![8, 10, 46]);
    }

    #[test]
    fn a_dscp_rule_has_one_key_per_dscp_under_one_mask() {
        let r = rule(r#"{"dscp": ["EF", "AF41"], "dstPort": 7400}"#).unwrap();
        let (keys, mask) = r.keys();
        assert_eq!(keys.iter().map(|k| k.dscp).collect::<Vec<_>>(), vec![34, 46]);
        assert_eq!(mask.dscp, 0x3f);
        assert!(keys.iter().all(|k| k.dport == 7400 && k.and(&mask) == *k));
        let (one, _) = rule(r#"{"dscp": 0}"#).unwrap().keys();
        assert_eq!(one.len(), 1, "DSCP 0 (best effort) is a match of its own, not a wildcard");
        assert_eq!(rule(r#"{"dstPort": 1}"#).unwrap().key_mask().1.dscp, 0, "no class field: any DSCP");
    }

    #[test]
    fn priority_becomes_the_dscp_of_the_default_or_given_map() {
        assert_eq!(dscps(r#"{"priority": 40}"#), vec![46]);
        assert_eq!(dscps(r#"{"priority": 0}"#), vec![0]);
        assert_eq!(dscps(r#"{"priority": "-3"}"#), vec![0]);
        assert_eq!(dscps(r#"{"priority": 15}"#), vec![18]);
        // A range takes every DSCP the map gives inside it, however wide.
        assert_eq!(dscps(r#"{"priority": "10..39"}"#), vec![18, 26, 34]);
        assert_eq!(dscps(r#"{"priority": "0..2147483647"}"#), vec![0, 10, 18, 26, 34, 46]);
        assert_eq!(dscps(r#"{"priority": [1, 45]}"#), vec![10, 46]);
        assert_eq!(dscps(r#"{"priority": 5, "priority_map": "0=CS0,1=AF21,50=EF"}"#), vec![18]);
        assert_eq!(dscps(r#"{"priority": 50}, {"priority_map": "0=CS0,1=AF21,50=EF"}"#), vec![46]);
        let r = rule(r#"{"priority": 40, "dscp": "EF"}"#).unwrap();
        assert_eq!(r.matches.dscp, Some(vec![46]), "dscp and priority may both be given when they agree");
        let class = r.matches.class.unwrap();
        assert_eq!(class.priority, vec![(40, 40)]);
        assert_eq!(class.priority_map.as_deref(), Some("0=CS0,1=AF11,10=AF21,20=AF31,30=AF41,40=EF"));
    }

    #[test]
    fn a_topic_is_sugar_for_its_priority() {
        let r = rule(r#"{"topic": "Control", "priority": 40}, {"dstPort": 7400}"#).unwrap();
        assert_eq!(r.matches.dscp, Some(vec![46]));
        assert_eq!(r.matches.class.as_ref().and_then(|c| c.topic.as_deref()), Some("Control"));
        let v = serde_json::to_value(&r.matches).unwrap();
        assert_eq!(v["dscp"], serde_json::json!([46]));
        assert_eq!(v["class"]["topic"], "Control");
        assert_eq!(v["class"]["priority"], serde_json::json!([40]));
        let v = serde_json::to_value(rule(r#"{"priority": ["10..39", 50]}"#).unwrap().matches).unwrap();
        assert_eq!(v["class"]["priority"], serde_json::json!(["10..39", 50]), "listed as given");
        assert_eq!(dscps(r#"{"topic": "Bulk", "dscp": "CS1"}"#), vec![8]);
        // Without a priority the topic cannot be matched, and the error says why.
        let e = rule(r#"{"topic": "Control"}"#).unwrap_err();
        assert_eq!(e.code(), "missing_field");
        assert!(e.to_string().contains("cannot read a topic name"), "{e}");
    }

    #[test]
    fn bad_class_fields_are_refused_with_the_reason() {
        let code = |r: &str| rule(r).unwrap_err().code();
        let msg = |r: &str| rule(r).unwrap_err().to_string();
        assert!(msg(r#"{"dscp": "EX"}"#).contains("not a DSCP"));
        assert!(msg(r#"{"dscp": 64}"#).contains("not a DSCP"));
        assert!(msg(r#"{"dscp": -1}"#).contains("not a DSCP"));
        assert!(msg(r#"{"dscp": "EF..AF11"}"#).contains("empty"));
        assert!(msg(r#"{"dscp": []}"#).contains("empty list"));
        assert_eq!(code(r#"{"dscp": true}"#), "bad_value");
        assert_eq!(code(r#"{"dscp": {"from": 1}}"#), "bad_value");
        assert_eq!(code(&format!(r#"{{"dscp": [{}]}}"#, vec!["1"; 65].join(","))), "bad_value");
        assert!(msg(r#"{"priority": 4294967296}"#).contains("32 bits"));
        assert!(msg(r#"{"priority": "high"}"#).contains("not a TRANSPORT_PRIORITY"));
        assert!(msg(r#"{"priority": "9..1"}"#).contains("empty"));
        assert_eq!(code(r#"{"priority": 1.5}"#), "bad_value");
        // A map that leaves a priority above 0 unmarked, or is not a map at all.
        assert!(msg(r#"{"priority": 5, "priority_map": "0=CS0,5=0"}"#).contains("above 0"));
        assert!(msg(r#"{"priority": 5, "priority_map": "10=EF"}"#).contains("above 0"));
        assert!(msg(r#"{"priority": 5, "priority_map": "1=XX"}"#).contains("not a DSCP"));
        assert_eq!(code(r#"{"priority": 5, "priority_map": 7}"#), "bad_value");
        assert_eq!(code(r#"{"priority_map": "1=EF"}"#), "contradictory");
        assert_eq!(code(r#"{"priority": 40, "dscp": "AF41"}"#), "contradictory");
        assert_eq!(code(r#"{"dscp": "EF"}, {"dscp": "AF41"}"#), "contradictory");
        assert_eq!(code(r#"{"topic": "A", "priority": 1}, {"topic": "B"}"#), "contradictory");
        assert_eq!(code(r#"{"topic": ""}"#), "bad_value");
        assert_eq!(code(r#"{"topic": 5, "priority": 1}"#), "bad_value");
        assert_eq!(code(r#"{"dscp_value": 5}"#), "unknown_field");
    }
}

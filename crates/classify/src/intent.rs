//! Intents: the JSON documents of the northbound API (paper 004, Listing 1),
//! parsed into a [`Rule`] by one pure function, [`parse_intent`], which never
//! panics on any input (it has a fuzz/proptest target).
//!
//! ```json
//! { "Resources": [
//!     { "resourceId": "F8A4C949", "encapsulationID1": "00000445", "encapsulationType1": "vxlan" },
//!     { "resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp" },
//!     { "resourceId": "5A07C580", "srcIP": "192.188.0.140", "dstPort": "5004" } ],
//!   "Action": { "actionType": "INSERT", "actionName": "PRIO_QUEUE", "flow_hash": "E918D704", "rx_queue": "1" },
//!   "Params": [ { "paramName": "interfaceName", "paramValue": "eth0" } ] }
//! ```
//!
//! All resources of one intent describe one flow (its encapsulation chain and
//! its innermost 5-tuple) and are ANDed. Identifiers given as JSON strings are
//! hexadecimal (as in the listing: `"00000445"` is VNI 0x445), as JSON numbers
//! decimal. Ports may be strings or numbers, decimal either way.
//!
//! A resource may also name a traffic class ([`ClassOf`]): `"dscp"` (a name
//! such as `"EF"`, a number, a range `"AF41..EF"` or a list), `"priority"`
//! (a DDS TRANSPORT_PRIORITY, a range `"10..39"` or a list: the DSCPs its
//! writers mark with, by the default map or a `"priority_map"`), and
//! `"topic"` (a label, with the topic's `priority`). The DSCP is the
//! innermost IP header's (inside VXLAN or GTP-U, the tunnelled packet's):
//! the application's own marking, like every other match field. The
//! receiving host then steers and protects a topic's traffic by its class:
//!
//! ```json
//! { "Resources": [ { "topic": "Control", "priority": 40, "dstPort": 7410 } ],
//!   "Action": { "actionType": "INSERT", "actionName": "STEER_CPU", "cpu": 1, "flow_hash": "control" } }
//! ```

use crate::maps::{self, FlowKey};
pub use class::ClassOf;
use serde::Serialize;
use serde_json::{Map, Value};
use std::net::IpAddr;

pub(crate) mod class;

/// Largest intent document accepted.
pub const MAX_INTENT_BYTES: usize = 64 * 1024;

/// Why an intent was refused. Every variant is a 4xx for the API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntentError {
    /// Not JSON, or not of the intent's shape (serde's message).
    #[error("malformed JSON: {0}")]
    Json(String),
    /// The document is larger than [`MAX_INTENT_BYTES`] (its size in bytes): HTTP 413.
    #[error("intent is {0} bytes; the limit is {MAX_INTENT_BYTES}")]
    TooLarge(usize),
    /// A field the intent format does not have (a typo is refused, not ignored).
    #[error("unknown field `{field}` in {place}; known fields: {known}")]
    UnknownField {
        /// The field as given.
        field: String,
        /// The object it was in (`Action`, a resource, ...).
        place: String,
        /// The fields that object may have.
        known: String,
    },
    /// A field the intent needs is absent.
    #[error("missing field `{field}` in {place}")]
    Missing {
        /// The field.
        field: String,
        /// The object it should be in.
        place: String,
    },
    /// A field's value is of the wrong type or out of its range.
    #[error("bad value for `{field}`: {why}")]
    BadValue {
        /// The field.
        field: String,
        /// What is wrong and what is accepted.
        why: String,
    },
    /// Two parts of the intent disagree (one field given twice with different
    /// values, IPv4 with IPv6, a parameter of another action).
    #[error("contradictory intent: {0}")]
    Contradictory(String),
    /// A match no frame can have, or one the program cannot parse (VXLAN
    /// inside GTP-U, more than two VLAN tags, ports with ICMP).
    #[error("impossible match: {0}")]
    Impossible(String),
    /// Valid in the intent format, not done by this classifier (an
    /// encapsulation it does not parse, actionType DELETE, a VLAN inside a tunnel).
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl IntentError {
    /// Short machine-readable code for the API's error body.
    pub fn code(&self) -> &'static str {
        match self {
            IntentError::Json(_) => "bad_json",
            IntentError::TooLarge(_) => "too_large",
            IntentError::UnknownField { .. } => "unknown_field",
            IntentError::Missing { .. } => "missing_field",
            IntentError::BadValue { .. } => "bad_value",
            IntentError::Contradictory(_) => "contradictory",
            IntentError::Impossible(_) => "impossible",
            IntentError::Unsupported(_) => "unsupported",
        }
    }
}

type R<T> = Result<T, IntentError>;

/// An address with a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Prefix {
    /// The address as given (the rule's mask keeps only its first `len` bits).
    pub addr: IpAddr,
    /// Prefix length in bits: 1..=32 (IPv4) or 1..=128 (IPv6); a bare address is one host (32 or 128).
    pub len: u8,
}

/// What a rule matches; `None` is a wildcard.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FlowMatch {
    /// VLAN ID of the outermost tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// The frame crossed a VXLAN header (with this VNI if `vni` is set).
    pub vxlan: bool,
    /// VXLAN network identifier (24 bits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vni: Option<u32>,
    /// The frame crossed a GTP-U G-PDU header (with this TEID if `teid` is set).
    pub gtp: bool,
    /// GTP-U tunnel endpoint identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teid: Option<u32>,
    /// Source address of the innermost IP header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src: Option<Prefix>,
    /// Destination address of the innermost IP header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst: Option<Prefix>,
    /// IP protocol number of the innermost L4 (17 UDP, 6 TCP, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u8>,
    /// Innermost UDP/TCP source port (never matches a later fragment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    /// Innermost UDP/TCP destination port (never matches a later fragment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// DSCPs of the innermost IP header, any of them (ascending, distinct):
    /// from `dscp`, or from `priority`/`topic` through a priority map.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp: Option<Vec<u8>>,
    /// How the DSCPs were asked for, when by TRANSPORT_PRIORITY or topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<ClassOf>,
}

/// What a rule does with the frames it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Into the kernel stack as usual.
    Pass,
    /// Redirect through the cpumap to this CPU (the stack runs there); with
    /// `spread` non-zero (bit c = CPU c, from `cpus` / `rx_queues` lists),
    /// each flow to one CPU of that set, picked by a hash of its innermost
    /// 5-tuple (paper 004's fair spreading), and `cpu` is the lowest of the set.
    SteerCpu {
        /// The target CPU (the lowest of the set when spreading).
        cpu: u32,
        /// The spreading set, bit c = CPU c (0: no spreading); listed as CPUs in JSON.
        #[serde(skip_serializing_if = "is_zero", serialize_with = "cpu_list")]
        spread: u64,
    },
    /// Redirect to the AF_XDP socket in this XSKMAP slot (= the rx queue it is bound to).
    Xsk {
        /// The XSKMAP slot (the receive queue the socket is bound to).
        queue: u32,
    },
    /// XDP_DROP.
    Drop,
    /// When overloaded: rewrite to an alternative node and send back out; otherwise pass.
    /// `alt_node: None` picks one by flow hash.
    ForwardWhenOverloaded {
        /// Index into the settings' alternative nodes, or none: by flow hash.
        alt_node: Option<u32>,
    },
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The CPUs of a bit set, in order.
pub(crate) fn cpus_of(set: u64) -> Vec<u32> {
    (0..64).filter(|c| set & (1u64 << c) != 0).collect()
}

fn cpu_list<S: serde::Serializer>(set: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(cpus_of(*set))
}

/// A parsed intent: one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// `Action.flow_hash` of the intent, if given (used as the rule's id).
    pub id: Option<String>,
    /// What it matches: every resource of the intent, ANDed.
    pub matches: FlowMatch,
    /// What it does with a matching frame.
    pub action: Action,
    /// Highest wins among rules matching one frame; default: specificity.
    pub priority: Option<u16>,
    /// `Params.interfaceName`, if given (the daemon checks it is its interface).
    pub interface: Option<String>,
    /// The `resourceId`s, kept for the listing.
    pub resource_ids: Vec<String>,
}

impl Rule {
    /// Key and mask for the rule map (with a set of DSCPs, the key of the
    /// first: [`Rule::keys`] gives one per DSCP).
    pub fn key_mask(&self) -> (FlowKey, FlowKey) {
        let m = &self.matches;
        let mut k = FlowKey::default();
        let mut mask = FlowKey::default();
        if let Some(v) = m.vlan {
            k.vlan = v;
            mask.vlan = 0x0fff;
            k.flags |= maps::F_VLAN;
            mask.flags |= maps::F_VLAN;
        }
        if m.vxlan || m.vni.is_some() {
            k.flags |= maps::F_VXLAN;
            mask.flags |= maps::F_VXLAN;
        }
        if let Some(v) = m.vni {
            k.set_vni(v);
            mask.set_vni(0x00ff_ffff);
        }
        if let Some(&d) = m.dscp.as_ref().and_then(|d| d.first()) {
            k.dscp = d;
            mask.dscp = 0x3f;
        }
        if m.gtp || m.teid.is_some() {
            k.flags |= maps::F_GTP;
            mask.flags |= maps::F_GTP;
        }
        if let Some(t) = m.teid {
            k.teid = t;
            mask.teid = u32::MAX;
        }
        for (p, kf, mf) in [(m.src, &mut k.src, &mut mask.src), (m.dst, &mut k.dst, &mut mask.dst)] {
            if let Some(p) = p {
                let (bytes, n): (Vec<u8>, usize) = match p.addr {
                    IpAddr::V4(a) => (a.octets().to_vec(), 4),
                    IpAddr::V6(a) => (a.octets().to_vec(), 16),
                };
                for i in 0..n {
                    let bits = (p.len as usize).saturating_sub(i * 8).min(8);
                    let mb = if bits == 0 { 0 } else { 0xffu8 << (8 - bits) };
                    mf[i] = mb;
                    kf[i] = bytes[i] & mb;
                }
            }
        }
        if let Some(v6) = self.family_v6() {
            mask.flags |= maps::F_IPV6;
            if v6 {
                k.flags |= maps::F_IPV6;
            }
        }
        if let Some(p) = m.protocol {
            k.proto = p;
            mask.proto = 0xff;
        }
        if m.src_port.is_some() || m.dst_port.is_some() {
            k.flags |= maps::F_L4;
            mask.flags |= maps::F_L4;
        }
        if let Some(p) = m.src_port {
            k.sport = p;
            mask.sport = 0xffff;
        }
        if let Some(p) = m.dst_port {
            k.dport = p;
            mask.dport = 0xffff;
        }
        (k, mask)
    }

    /// The rule's keys under its mask: one per DSCP of a DSCP set (all
    /// under one mask, one rule slot, one set of statistics), else one.
    pub fn keys(&self) -> (Vec<FlowKey>, FlowKey) {
        let (k, mask) = self.key_mask();
        let keys = match &self.matches.dscp {
            Some(set) if set.len() > 1 => set.iter().map(|&d| FlowKey { dscp: d, ..k }).collect(),
            _ => vec![k],
        };
        (keys, mask)
    }

    /// `Some(true)` for IPv6 addresses, `Some(false)` for IPv4, `None` when no address is matched.
    pub(crate) fn family_v6(&self) -> Option<bool> {
        self.matches.src.or(self.matches.dst).map(|p| p.addr.is_ipv6())
    }

    /// The priority used: the given one, or the number of bits the rule matches.
    pub(crate) fn effective_priority(&self) -> u16 {
        self.priority.unwrap_or_else(|| self.key_mask().1.popcount().min(u16::MAX as u32) as u16)
    }
}

fn known(list: &[&str]) -> String {
    list.join(", ")
}

fn as_str_or_num(v: &Value, field: &str) -> R<(String, bool)> {
    match v {
        Value::String(s) => Ok((s.trim().to_string(), true)),
        Value::Number(n) => Ok((n.to_string(), false)),
        _ => Err(IntentError::BadValue { field: field.into(), why: format!("expected a string or a number, got {v}") }),
    }
}

/// An identifier: hexadecimal in a string (optional 0x), decimal as a number.
fn parse_id(v: &Value, field: &str, max: u64) -> R<u64> {
    let (s, is_str) = as_str_or_num(v, field)?;
    let n = if is_str {
        let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(&s);
        if h.is_empty() || h.len() > 16 {
            return Err(IntentError::BadValue { field: field.into(), why: format!("`{s}` is not a hexadecimal identifier") });
        }
        u64::from_str_radix(h, 16).map_err(|_| IntentError::BadValue { field: field.into(), why: format!("`{s}` is not a hexadecimal identifier") })?
    } else {
        s.parse::<u64>().map_err(|_| IntentError::BadValue { field: field.into(), why: format!("`{s}` is not a non-negative integer") })?
    };
    if n > max {
        return Err(IntentError::BadValue { field: field.into(), why: format!("{n:#x} is larger than the maximum {max:#x}") });
    }
    Ok(n)
}

/// A decimal number in a string or a JSON number.
fn parse_dec(v: &Value, field: &str, max: u64) -> R<u64> {
    let (s, _) = as_str_or_num(v, field)?;
    let n = s.parse::<u64>().map_err(|_| IntentError::BadValue { field: field.into(), why: format!("`{s}` is not a non-negative decimal integer") })?;
    if n > max {
        return Err(IntentError::BadValue { field: field.into(), why: format!("{n} is larger than the maximum {max}") });
    }
    Ok(n)
}

fn parse_prefix(v: &Value, field: &str) -> R<Prefix> {
    let s = match v {
        Value::String(s) => s.trim(),
        _ => return Err(IntentError::BadValue { field: field.into(), why: "expected an address string such as \"192.0.2.1\" or \"2001:db8::/32\"".into() }),
    };
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let addr: IpAddr = a.parse().map_err(|_| IntentError::BadValue { field: field.into(), why: format!("`{a}` is not an IPv4 or IPv6 address") })?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = match l {
        None => max,
        Some(l) => l
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= max)
            .ok_or_else(|| IntentError::BadValue { field: field.into(), why: format!("prefix length `{l}` is not 0..={max}") })?,
    };
    if len == 0 {
        return Err(IntentError::BadValue { field: field.into(), why: "a /0 prefix matches every address; leave the field out instead".into() });
    }
    Ok(Prefix { addr, len })
}

fn parse_protocol(v: &Value) -> R<u8> {
    if let Value::String(s) = v {
        match s.trim().to_ascii_lowercase().as_str() {
            "udp" => return Ok(17),
            "tcp" => return Ok(6),
            "icmp" => return Ok(1),
            "icmpv6" | "ipv6-icmp" => return Ok(58),
            "sctp" => return Ok(132),
            _ => {}
        }
    }
    parse_dec(v, "protocol", 255)
        .map(|n| n as u8)
        .map_err(|_| IntentError::BadValue { field: "protocol".into(), why: format!("{v} is not udp, tcp, icmp, icmpv6, sctp or a number 0..=255") })
}

/// Sets `slot` to `val`, or says the intent contradicts itself.
fn set_once<T: PartialEq + std::fmt::Debug + Copy>(slot: &mut Option<T>, val: T, what: &str) -> R<()> {
    match slot {
        Some(old) if *old != val => Err(IntentError::Contradictory(format!("{what} is given twice with different values ({old:?} and {val:?})"))),
        _ => {
            *slot = Some(val);
            Ok(())
        }
    }
}

const TOP_FIELDS: &[&str] = &["Resources", "Action", "Params"];
const RESOURCE_FIELDS: &[&str] =
    &["resourceId", "encapsulationID<n>", "encapsulationType<n>", "srcIP", "dstIP", "srcPort", "dstPort", "protocol", "dscp", "priority", "priority_map", "topic"];
const ACTION_FIELDS: &[&str] = &["actionType", "actionName", "flow_hash", "priority", "rx_queue", "rx_queues", "cpu", "cpus", "queue", "alt_node"];
const ACTION_NAMES: &[&str] = &["PRIO_QUEUE", "STEER_CPU", "XSK", "PASS", "DROP", "FORWARD_WHEN_OVERLOADED"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encap {
    Vlan,
    Vxlan,
    Gtp,
}

/// Parses an intent document. Pure: no I/O, no panics, bounded work.
/// The fuzz entry point of the crate.
pub fn parse_intent(bytes: &[u8]) -> Result<Rule, IntentError> {
    if bytes.len() > MAX_INTENT_BYTES {
        return Err(IntentError::TooLarge(bytes.len()));
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|e| IntentError::Json(e.to_string()))?;
    parse_intent_value(&v)
}

/// [`parse_intent`] over an already parsed JSON value.
pub(crate) fn parse_intent_value(v: &Value) -> Result<Rule, IntentError> {
    let top = v.as_object().ok_or_else(|| IntentError::Json("an intent is a JSON object".into()))?;
    for k in top.keys() {
        if !TOP_FIELDS.contains(&k.as_str()) {
            return Err(IntentError::UnknownField { field: k.clone(), place: "the intent".into(), known: known(TOP_FIELDS) });
        }
    }
    let resources = top
        .get("Resources")
        .ok_or_else(|| IntentError::Missing { field: "Resources".into(), place: "the intent".into() })?
        .as_array()
        .ok_or_else(|| IntentError::BadValue { field: "Resources".into(), why: "expected an array of resources".into() })?;
    if resources.is_empty() {
        return Err(IntentError::BadValue { field: "Resources".into(), why: "at least one resource is needed".into() });
    }
    if resources.len() > 16 {
        return Err(IntentError::BadValue { field: "Resources".into(), why: "at most 16 resources".into() });
    }

    let mut m = FlowMatch::default();
    let mut encaps: Vec<(u64, Encap, Option<u64>)> = Vec::new();
    let mut resource_ids = Vec::new();
    let mut class = class::ClassFields::default();
    for (i, r) in resources.iter().enumerate() {
        let place = format!("Resources[{i}]");
        let obj = r.as_object().ok_or_else(|| IntentError::BadValue { field: place.clone(), why: "expected an object".into() })?;
        parse_resource(obj, &place, &mut m, &mut encaps, &mut resource_ids, &mut class)?;
    }
    apply_encaps(&mut encaps, &mut m)?;
    (m.dscp, m.class) = class.resolve()?;

    let action_v = top.get("Action").ok_or_else(|| IntentError::Missing { field: "Action".into(), place: "the intent".into() })?;
    let action_o = action_v.as_object().ok_or_else(|| IntentError::BadValue { field: "Action".into(), why: "expected an object".into() })?;
    let (id, action, priority) = parse_action(action_o)?;

    let mut interface = None;
    if let Some(p) = top.get("Params") {
        let arr = p.as_array().ok_or_else(|| IntentError::BadValue { field: "Params".into(), why: "expected an array of {paramName, paramValue}".into() })?;
        for (i, p) in arr.iter().enumerate() {
            let place = format!("Params[{i}]");
            let o = p.as_object().ok_or_else(|| IntentError::BadValue { field: place.clone(), why: "expected an object".into() })?;
            for k in o.keys() {
                if k != "paramName" && k != "paramValue" {
                    return Err(IntentError::UnknownField { field: k.clone(), place, known: "paramName, paramValue".into() });
                }
            }
            let name = o.get("paramName").and_then(Value::as_str).ok_or_else(|| IntentError::Missing { field: "paramName".into(), place: place.clone() })?;
            let val = o
                .get("paramValue")
                .and_then(Value::as_str)
                .ok_or_else(|| IntentError::Missing { field: "paramValue (a string)".into(), place: place.clone() })?;
            match name {
                "interfaceName" => {
                    let val = val.trim().to_string();
                    if val.is_empty() || val.len() > 15 {
                        return Err(IntentError::BadValue { field: "interfaceName".into(), why: format!("`{val}` is not an interface name") });
                    }
                    set_once_string(&mut interface, val, "interfaceName")?;
                }
                other => {
                    return Err(IntentError::UnknownField { field: format!("paramName={other}"), place, known: "interfaceName".into() });
                }
            }
        }
    }

    let rule = Rule { id, matches: m, action, priority, interface, resource_ids };
    check_consistency(&rule)?;
    Ok(rule)
}

fn set_once_string(slot: &mut Option<String>, val: String, what: &str) -> R<()> {
    match slot {
        Some(old) if *old != val => Err(IntentError::Contradictory(format!("{what} is given twice with different values (`{old}` and `{val}`)"))),
        _ => {
            *slot = Some(val);
            Ok(())
        }
    }
}

fn parse_resource(
    obj: &Map<String, Value>,
    place: &str,
    m: &mut FlowMatch,
    encaps: &mut Vec<(u64, Encap, Option<u64>)>,
    ids: &mut Vec<String>,
    class: &mut class::ClassFields,
) -> R<()> {
    // encapsulationID<n> / encapsulationType<n> pairs of this resource
    let mut layer_ids: Vec<(u64, &Value)> = Vec::new();
    let mut layer_types: Vec<(u64, &Value)> = Vec::new();
    for (k, v) in obj {
        let layer = |prefix: &str| -> Option<R<u64>> {
            k.strip_prefix(prefix).map(|n| {
                n.parse::<u64>()
                    .ok()
                    .filter(|n| (1..=8).contains(n))
                    .ok_or_else(|| IntentError::BadValue { field: k.clone(), why: format!("the layer number after `{prefix}` must be 1..=8") })
            })
        };
        if let Some(n) = layer("encapsulationID") {
            layer_ids.push((n?, v));
            continue;
        }
        if let Some(n) = layer("encapsulationType") {
            layer_types.push((n?, v));
            continue;
        }
        match k.as_str() {
            "resourceId" => {
                let s = v.as_str().ok_or_else(|| IntentError::BadValue { field: "resourceId".into(), why: "expected a string".into() })?;
                if s.len() > 64 {
                    return Err(IntentError::BadValue { field: "resourceId".into(), why: "longer than 64 characters".into() });
                }
                ids.push(s.to_string());
            }
            "srcIP" => set_once(&mut m.src, parse_prefix(v, "srcIP")?, "srcIP")?,
            "dstIP" => set_once(&mut m.dst, parse_prefix(v, "dstIP")?, "dstIP")?,
            "srcPort" => set_once(&mut m.src_port, parse_dec(v, "srcPort", 65535)? as u16, "srcPort")?,
            "dstPort" => set_once(&mut m.dst_port, parse_dec(v, "dstPort", 65535)? as u16, "dstPort")?,
            "protocol" => set_once(&mut m.protocol, parse_protocol(v)?, "protocol")?,
            _ if class.take(k, v)? => {}
            _ => return Err(IntentError::UnknownField { field: k.clone(), place: place.into(), known: known(RESOURCE_FIELDS) }),
        }
    }
    for (n, tv) in &layer_types {
        let t = tv.as_str().ok_or_else(|| IntentError::BadValue { field: format!("encapsulationType{n}"), why: "expected a string".into() })?;
        let e = match t.trim().to_ascii_lowercase().as_str() {
            "vxlan" => Encap::Vxlan,
            "gtp" | "gtpu" | "gtp-u" | "gtp_u" => Encap::Gtp,
            "vlan" | "802.1q" | "dot1q" => Encap::Vlan,
            other => return Err(IntentError::Unsupported(format!("encapsulationType{n} `{other}`: the classifier parses vxlan, gtp (GTP-U) and vlan"))),
        };
        let id = match layer_ids.iter().find(|(m, _)| m == n) {
            None => None,
            Some((_, v)) => {
                let max = match e {
                    Encap::Vxlan => 0x00ff_ffff,
                    Encap::Gtp => u32::MAX as u64,
                    Encap::Vlan => 4095,
                };
                Some(parse_id(v, &format!("encapsulationID{n}"), max)?)
            }
        };
        encaps.push((*n, e, id));
    }
    for (n, _) in &layer_ids {
        if !layer_types.iter().any(|(m, _)| m == n) {
            return Err(IntentError::Missing { field: format!("encapsulationType{n} (for encapsulationID{n})"), place: place.into() });
        }
    }
    Ok(())
}

fn apply_encaps(encaps: &mut [(u64, Encap, Option<u64>)], m: &mut FlowMatch) -> R<()> {
    encaps.sort_by_key(|e| e.0);
    for w in encaps.windows(2) {
        if w[0].0 == w[1].0 && (w[0].1 != w[1].1 || w[0].2 != w[1].2) {
            return Err(IntentError::Contradictory(format!("encapsulation layer {} is described twice differently", w[0].0)));
        }
    }
    let mut seen: Vec<(u64, Encap, Option<u64>)> = Vec::new();
    for e in encaps.iter() {
        if seen.iter().any(|s| s.0 == e.0) {
            continue; // the same layer described identically in two resources
        }
        seen.push(*e);
    }
    let mut vlans = 0;
    let mut last: Option<Encap> = None;
    for (n, e, id) in &seen {
        match e {
            Encap::Vlan => {
                if last.is_some_and(|l| l != Encap::Vlan) {
                    return Err(IntentError::Unsupported(format!("layer {n}: only the outermost VLAN tag can be matched, not one inside a tunnel")));
                }
                vlans += 1;
                if vlans == 1 {
                    if let Some(id) = id {
                        m.vlan = Some(*id as u16);
                    } else {
                        return Err(IntentError::Missing { field: format!("encapsulationID{n} (the VLAN ID)"), place: "the vlan layer".into() });
                    }
                } else if vlans > 2 {
                    return Err(IntentError::Impossible("more than two VLAN tags (QinQ) are not parsed".into()));
                } else if id.is_some() {
                    return Err(IntentError::Unsupported(format!("layer {n}: only the outer VLAN ID of a QinQ frame can be matched")));
                }
            }
            Encap::Vxlan => {
                if m.vxlan {
                    return Err(IntentError::Impossible("VXLAN inside VXLAN is not parsed (one VXLAN layer per flow)".into()));
                }
                if last == Some(Encap::Gtp) {
                    return Err(IntentError::Impossible("VXLAN cannot be carried inside GTP-U: GTP-U carries IP packets, not Ethernet frames".into()));
                }
                m.vxlan = true;
                m.vni = id.map(|v| v as u32);
            }
            Encap::Gtp => {
                if m.gtp {
                    return Err(IntentError::Impossible("GTP-U inside GTP-U is not parsed (one GTP-U layer per flow)".into()));
                }
                m.gtp = true;
                m.teid = id.map(|v| v as u32);
            }
        }
        last = Some(*e);
    }
    Ok(())
}

fn parse_action(o: &Map<String, Value>) -> R<(Option<String>, Action, Option<u16>)> {
    for k in o.keys() {
        if !ACTION_FIELDS.contains(&k.as_str()) {
            return Err(IntentError::UnknownField { field: k.clone(), place: "Action".into(), known: known(ACTION_FIELDS) });
        }
    }
    match o.get("actionType").map(|v| v.as_str()) {
        None => return Err(IntentError::Missing { field: "actionType".into(), place: "Action".into() }),
        Some(Some(t)) if t.eq_ignore_ascii_case("INSERT") => {}
        Some(Some(t)) if t.eq_ignore_ascii_case("DELETE") => {
            return Err(IntentError::Unsupported("actionType DELETE: delete an intent with DELETE /v1/intents/{id}".into()))
        }
        Some(other) => return Err(IntentError::BadValue { field: "actionType".into(), why: format!("{other:?}: only INSERT is accepted") }),
    }
    let name = o
        .get("actionName")
        .ok_or_else(|| IntentError::Missing { field: "actionName".into(), place: "Action".into() })?
        .as_str()
        .ok_or_else(|| IntentError::BadValue { field: "actionName".into(), why: "expected a string".into() })?
        .trim()
        .to_ascii_uppercase()
        .replace(' ', "_");
    let id = match o.get("flow_hash") {
        None => None,
        Some(v) => {
            let s = v.as_str().ok_or_else(|| IntentError::BadValue { field: "flow_hash".into(), why: "expected a string".into() })?;
            if s.is_empty() || s.len() > 32 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(IntentError::BadValue { field: "flow_hash".into(), why: "1 to 32 characters of A-Z, a-z, 0-9, - or _".into() });
            }
            Some(s.to_string())
        }
    };
    let priority = match o.get("priority") {
        None => None,
        Some(v) => Some(parse_dec(v, "priority", u16::MAX as u64)? as u16),
    };
    // Which action parameter each action takes; any other is refused.
    let params = ["rx_queue", "rx_queues", "cpu", "cpus", "queue", "alt_node"];
    let allowed: &[&str] = match name.as_str() {
        "PRIO_QUEUE" => &["rx_queue", "rx_queues"],
        "STEER_CPU" => &["cpu", "cpus"],
        "XSK" => &["queue"],
        "FORWARD_WHEN_OVERLOADED" => &["alt_node"],
        "PASS" | "DROP" => &[],
        other => return Err(IntentError::BadValue { field: "actionName".into(), why: format!("`{other}` is not one of {}", known(ACTION_NAMES)) }),
    };
    for p in params {
        if o.contains_key(p) && !allowed.contains(&p) {
            return Err(IntentError::Contradictory(format!("`{p}` does not apply to action {name}")));
        }
    }
    let need = |f: &str, max: u64| -> R<u32> {
        let v = o.get(f).ok_or_else(|| IntentError::Missing { field: f.into(), place: format!("Action (needed by {name})") })?;
        Ok(parse_dec(v, f, max)? as u32)
    };
    let action = match name.as_str() {
        "PRIO_QUEUE" | "STEER_CPU" => {
            let (one, set) = if name == "PRIO_QUEUE" { ("rx_queue", "rx_queues") } else { ("cpu", "cpus") };
            match (o.get(one), o.get(set)) {
                (Some(_), Some(_)) => return Err(IntentError::Contradictory(format!("`{one}` and `{set}`: give one CPU or a set"))),
                (None, Some(v)) => {
                    let list = v.as_array().ok_or_else(|| IntentError::BadValue { field: set.into(), why: "expected a list of CPUs such as [0, 1]".into() })?;
                    let mut bits = 0u64;
                    for c in list {
                        bits |= 1u64 << parse_dec(c, set, maps::MAX_CPUS as u64 - 1)?;
                    }
                    let n = bits.count_ones() as usize;
                    if n == 0 || n > maps::MAX_SPREAD || n != list.len() {
                        return Err(IntentError::BadValue {
                            field: set.into(),
                            why: format!("1 to {} distinct CPUs, got {} ({} distinct)", maps::MAX_SPREAD, list.len(), n),
                        });
                    }
                    Action::SteerCpu { cpu: bits.trailing_zeros(), spread: bits }
                }
                _ => Action::SteerCpu { cpu: need(one, maps::MAX_CPUS as u64 - 1)?, spread: 0 },
            }
        }
        "XSK" => Action::Xsk { queue: need("queue", maps::MAX_XSK as u64 - 1)? },
        "FORWARD_WHEN_OVERLOADED" => Action::ForwardWhenOverloaded {
            alt_node: match o.get("alt_node") {
                None => None,
                Some(v) => Some(parse_dec(v, "alt_node", maps::MAX_ALT as u64 - 1)? as u32),
            },
        },
        "DROP" => Action::Drop,
        _ => Action::Pass,
    };
    Ok((id, action, priority))
}

fn check_consistency(r: &Rule) -> R<()> {
    let m = &r.matches;
    if let (Some(s), Some(d)) = (m.src, m.dst) {
        if s.addr.is_ipv4() != d.addr.is_ipv4() {
            return Err(IntentError::Contradictory(format!("srcIP {} and dstIP {} are of different IP versions", s.addr, d.addr)));
        }
    }
    if m.src_port.is_some() || m.dst_port.is_some() {
        if let Some(p) = m.protocol {
            if p != 6 && p != 17 {
                return Err(IntentError::Contradictory(format!("ports are matched but protocol {p} has no ports (only tcp and udp)")));
            }
        }
    }
    if m.protocol == Some(1) && r.family_v6() == Some(true) {
        return Err(IntentError::Contradictory("protocol icmp (IPv4) with IPv6 addresses; use icmpv6".into()));
    }
    if m.protocol == Some(58) && r.family_v6() == Some(false) {
        return Err(IntentError::Contradictory("protocol icmpv6 with IPv4 addresses; use icmp".into()));
    }
    let (_, mask) = r.key_mask();
    if mask == FlowKey::default() {
        return Err(IntentError::Impossible(
            "the intent matches every IP packet; give at least one field (the default action covers unmatched traffic)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING1: &str = r#"{
      "Resources": [
        {"resourceId": "F8A4C949", "encapsulationID1": "00000445", "encapsulationType1": "vxlan"},
        {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
        {"resourceId": "5A07C580", "srcIP": "192.188.0.140", "dstPort": "5004"}
      ],
      "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "flow_hash": "E918D704", "rx_queue": "1"},
      "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}]
    }"#;

    #[test]
    fn listing_1_of_the_paper() {
        let r = parse_intent(LISTING1.as_bytes()).unwrap();
        assert_eq!(r.id.as_deref(), Some("E918D704"));
        assert_eq!(r.matches.vni, Some(0x445));
        assert_eq!(r.matches.teid, Some(0x8894D0D4));
        assert_eq!(r.matches.src, Some(Prefix { addr: "192.188.0.140".parse().unwrap(), len: 32 }));
        assert_eq!(r.matches.dst_port, Some(5004));
        assert_eq!(r.action, Action::SteerCpu { cpu: 1, spread: 0 });
        let spread = parse_intent(
            br#"{"Resources":[{"encapsulationType1":"gtp","encapsulationID1":"10"}],"Action":{"actionType":"INSERT","actionName":"STEER_CPU","cpus":[3,1]}}"#,
        )
        .unwrap();
        assert_eq!(spread.action, Action::SteerCpu { cpu: 1, spread: 0b1010 });
        assert_eq!(serde_json::to_value(spread.action).unwrap()["spread"], serde_json::json!([1, 3]));
        for bad in [r#"[]"#, r#"[1,1]"#, r#"[64]"#, r#""1""#] {
            let t = format!(r#"{{"Resources":[{{"dstPort":1}}],"Action":{{"actionType":"INSERT","actionName":"STEER_CPU","cpus":{bad}}}}}"#);
            assert!(parse_intent(t.as_bytes()).is_err(), "{bad}");
        }
        let t = r#"{"Resources":[{"dstPort":1}],"Action":{"actionType":"INSERT","actionName":"STEER_CPU","cpu":1,"cpus":[1]}}"#;
        assert_eq!(parse_intent(t.as_bytes()).unwrap_err().code(), "contradictory");
        assert_eq!(r.interface.as_deref(), Some("eth0"));
        let (k, m) = r.key_mask();
        assert_eq!(k.flags, maps::F_VXLAN | maps::F_GTP | maps::F_L4);
        assert_eq!(m.flags, maps::F_VXLAN | maps::F_GTP | maps::F_L4 | maps::F_IPV6);
        assert_eq!(&k.src[..4], &[192, 188, 0, 140]);
    }

    fn err(s: &str) -> IntentError {
        parse_intent(s.as_bytes()).unwrap_err()
    }

    #[test]
    fn bad_inputs() {
        assert_eq!(err("{").code(), "bad_json");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1}],"Action":{"actionType":"INSERT","actionName":"PASS"},"Extra":1}"#).code(), "unknown_field");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1,"colour":"red"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "unknown_field");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1},{"dstPort":2}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "contradictory");
        assert_eq!(err(r#"{"Resources":[{"srcIP":"10.0.0.1","dstIP":"::1"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "contradictory");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1,"protocol":"icmp"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "contradictory");
        assert_eq!(
            err(r#"{"Resources":[{"encapsulationType1":"gtp"},{"encapsulationType2":"vxlan"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(),
            "impossible"
        );
        assert_eq!(err(r#"{"Resources":[{"resourceId":"x"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "impossible");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1}],"Action":{"actionType":"INSERT","actionName":"PASS","rx_queue":1}}"#).code(), "contradictory");
        assert_eq!(err(r#"{"Resources":[{"dstPort":70000}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "bad_value");
        assert_eq!(
            err(r#"{"Resources":[{"encapsulationID1":"1000000","encapsulationType1":"vxlan"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(),
            "bad_value"
        );
        assert_eq!(err(r#"{"Resources":[{"encapsulationID1":"1"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "missing_field");
        assert_eq!(err(r#"{"Resources":[{"encapsulationType1":"geneve"}],"Action":{"actionType":"INSERT","actionName":"PASS"}}"#).code(), "unsupported");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1}],"Action":{"actionType":"INSERT","actionName":"STEER_CPU"}}"#).code(), "missing_field");
        assert_eq!(err(r#"{"Resources":[{"dstPort":1}],"Action":{"actionType":"INSERT","actionName":"TELEPORT"}}"#).code(), "bad_value");
        assert_eq!(
            err(r#"{"Resources":[{"dstPort":1}],"Action":{"actionType":"INSERT","actionName":"PASS"},"Params":[{"paramName":"mode","paramValue":"x"}]}"#)
                .code(),
            "unknown_field"
        );
    }

    #[test]
    fn prefixes_and_vlan() {
        let r = parse_intent(br#"{"Resources":[{"encapsulationType1":"vlan","encapsulationID1":100},{"srcIP":"10.1.2.0/23","protocol":"udp"}],"Action":{"actionType":"INSERT","actionName":"DROP"}}"#).unwrap();
        assert_eq!(r.matches.vlan, Some(100));
        let (k, m) = r.key_mask();
        assert_eq!(&m.src[..4], &[255, 255, 254, 0]);
        assert_eq!(&k.src[..4], &[10, 1, 2, 0]);
        assert_eq!(k.proto, 17);
    }
}

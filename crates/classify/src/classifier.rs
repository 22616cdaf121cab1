//! The XDP classifier in the kernel: loads `bpf/classify.bpf.c`, attaches it
//! (a BPF link, so it detaches on drop and when the process dies), and keeps
//! its maps: rules, masks, statistics, overload signal, alternative nodes,
//! cpumap and xskmap.

use crate::error::{Error, Result, RuleError};
use crate::intent::{Action, Rule};
use crate::maps::{self, ConfigValue, Counter, FlowKey, RuleStat, RuleValue};
use detpath_sys::xdp::{self, XdpLink, XdpMode};
use detpath_sys::NetDev;
use libbpf_rs::{MapCore, MapFlags, MapHandle, Object, ProgramInput};
use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::AsRawFd;

static OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/classify.bpf.o"));

/// An alternative node for forward-when-overloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AltNode {
    /// Destination MAC written into forwarded frames, "02:00:00:00:00:01".
    #[serde(with = "mac_serde")]
    pub mac: [u8; 6],
    /// Destination IP written into the outer IP header (same version as the traffic).
    pub ip: IpAddr,
}

/// Parses "aa:bb:cc:dd:ee:ff".
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for (i, p) in s.trim().split(':').enumerate() {
        if i >= 6 || p.len() != 2 {
            return None;
        }
        out[i] = u8::from_str_radix(p, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// Formats a MAC address as "aa:bb:cc:dd:ee:ff" (lower case), as [`parse_mac`] reads it.
pub fn format_mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

mod mac_serde {
    pub fn serialize<S: serde::Serializer>(m: &[u8; 6], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_mac(m))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[u8; 6], D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        super::parse_mac(&s).ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not a MAC address like 02:00:00:00:00:01")))
    }
}

/// What unmatched encapsulated flows get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefaultAction {
    /// Always pass.
    Pass,
    /// Forward to an alternative node while overloaded (the paper's behaviour), pass otherwise.
    #[default]
    Forward,
}

/// The overload signal and the other knobs of the program.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// User-space load flag: while true, the host counts as overloaded.
    pub load_flag: bool,
    /// Per-CPU packet rate above which that CPU counts as overloaded (0 = off).
    /// Measured in windows of `window_us`: the packets beyond
    /// `rate_threshold_pps * window` in a window are the overload.
    pub rate_threshold_pps: u64,
    /// Rate window in microseconds (default 1000).
    pub window_us: u64,
    /// Per-CPU packet rate above which the CPU is saturated: then even
    /// prioritised flows (steer, pass, XSK rules) are forwarded to an
    /// alternative node, so the excess is processed elsewhere instead of lost
    /// (paper 004: "packets exceeding the system capacities"). 0 = never:
    /// prioritised flows always stay.
    #[serde(default)]
    pub saturation_pps: u64,
    /// What unmatched encapsulated flows get (forward while overloaded, by default).
    pub default_action: DefaultAction,
    /// Where overload forwards to: rules name one by index, unmatched flows
    /// pick one by flow hash (at most `maps::MAX_ALT`).
    pub alt_nodes: Vec<AltNode>,
    /// UDP destination port whose payload the program parses as VXLAN (4789).
    pub vxlan_port: u16,
    /// UDP destination port whose payload the program parses as GTP-U (2152).
    pub gtpu_port: u16,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            load_flag: false,
            rate_threshold_pps: 0,
            window_us: 1000,
            saturation_pps: 0,
            default_action: DefaultAction::Forward,
            alt_nodes: Vec::new(),
            vxlan_port: 4789,
            gtpu_port: 2152,
        }
    }
}

/// Largest per-CPU rate a threshold may name: a trillion frames a second,
/// beyond any link, and small enough that a threshold per window (up to
/// 10 s) is exact in 64 bits: a larger one would wrap to a tiny threshold
/// and mark every CPU overloaded.
pub(crate) const MAX_RATE_PPS: u64 = 1_000_000_000_000;

impl Settings {
    /// Checks the settings before any is written: alternative nodes within
    /// the table, a window of 1 us to 10 s, rates up to [`MAX_RATE_PPS`],
    /// saturation at or above the overload threshold, two distinct non-zero
    /// ports.
    pub(crate) fn validate(&self) -> Result<(), RuleError> {
        if self.alt_nodes.len() > maps::MAX_ALT {
            return Err(RuleError::TooManyAltNodes { n: self.alt_nodes.len(), max: maps::MAX_ALT });
        }
        if self.window_us == 0 || self.window_us > 10_000_000 {
            return Err(RuleError::BadValue("window_us must be 1..=10000000".into()));
        }
        if self.rate_threshold_pps > MAX_RATE_PPS || self.saturation_pps > MAX_RATE_PPS {
            return Err(RuleError::BadValue(format!("rate_threshold_pps and saturation_pps must be at most {MAX_RATE_PPS} (0 = off)")));
        }
        if self.saturation_pps != 0 && self.saturation_pps < self.rate_threshold_pps {
            return Err(RuleError::BadValue(format!(
                "saturation_pps ({}) must be at least rate_threshold_pps ({}): saturated is beyond overloaded",
                self.saturation_pps, self.rate_threshold_pps
            )));
        }
        if self.vxlan_port == 0 || self.gtpu_port == 0 || self.vxlan_port == self.gtpu_port {
            return Err(RuleError::BadValue("vxlan_port and gtpu_port must be non-zero and different".into()));
        }
        Ok(())
    }

    fn to_value(&self, mask_bits: u32, gen: u32, general_only: bool) -> ConfigValue {
        let window_ns = self.window_us * 1000;
        let per_window = |pps: u64| if pps == 0 { 0 } else { (pps as u128 * window_ns as u128 / 1_000_000_000).max(1) as u64 };
        let (rate_threshold, saturation_threshold) = (per_window(self.rate_threshold_pps), per_window(self.saturation_pps));
        ConfigValue {
            load_flag: self.load_flag as u32,
            alt_count: self.alt_nodes.len() as u32,
            rate_threshold,
            saturation_threshold,
            window_ns,
            default_action: match self.default_action {
                DefaultAction::Pass => maps::ACT_PASS as u32,
                DefaultAction::Forward => maps::ACT_FORWARD as u32,
            },
            vxlan_port: self.vxlan_port,
            gtpu_port: self.gtpu_port,
            mask_bits,
            gen,
            general_only: general_only as u32,
            load_watch: (self.load_flag || rate_threshold != 0 || saturation_threshold != 0) as u32,
        }
    }
}

/// Where an installed rule lives in the maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The rule's slot: its index in `cls_rule_stats` (and `cls_cpu_sets`).
    pub slot: u32,
    /// The mask (match shape) it is filed under, index into `cls_masks`.
    pub mask_id: u32,
    /// Its keys in `cls_rules`, already masked: one, or one per DSCP of a
    /// rule matching a set of DSCPs (all pointing at the one slot).
    pub keys: Vec<FlowKey>,
}

struct Maps {
    config: MapHandle,
    masks: MapHandle,
    rules: MapHandle,
    rule_stats: MapHandle,
    totals: MapHandle,
    alt: MapHandle,
    cpus: MapHandle,
    xsks: MapHandle,
    noop_count: MapHandle,
    cpu_sets: MapHandle,
    cpu_hits: MapHandle,
    cache_stats: MapHandle,
    flow_cache: MapHandle,
}

/// The loaded classifier.
pub struct Classifier {
    obj: Object,
    maps: Maps,
    link: Option<XdpLink>,
    masks: [Option<(FlowKey, u32)>; maps::MAX_MASKS],
    used: HashMap<(u32, FlowKey), u32>,
    slots: Vec<bool>,
    settings: Settings,
    cpus: Vec<u32>,
    ncpus_possible: usize,
    /// The rule generation in the config (`cls_config.gen`), from 1.
    gen: u32,
    /// The fast lane is off ([`Classifier::set_fast_lane`]).
    general_only: bool,
}

/// The rule generation after `gen`. 0 is never a generation: an empty
/// flow cache entry has 0, and the program's hit test relies on no
/// configuration carrying it. (It wraps after 2^32 rule changes, when an
/// entry as old as that could count for a newer rule: not a concern.)
fn gen_after(gen: u32) -> u32 {
    gen.wrapping_add(1).max(1)
}

fn map_handle(obj: &Object, name: &'static str) -> Result<MapHandle> {
    let m = obj.maps().find(|m| m.name() == name).ok_or_else(|| Error::Load(format!("map {name} missing from the object")))?;
    MapHandle::try_from(&m).map_err(|e| Error::Load(format!("map {name}: {e}")))
}

/// The sum over CPUs of entry `key` of a per-CPU array of `u64` counters
/// (0 when the entry cannot be read: a counter, not a control value).
fn percpu_sum(map: &MapHandle, key: u32) -> u64 {
    let Ok(Some(per_cpu)) = map.lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY) else { return 0 };
    per_cpu.iter().filter_map(|v| v.get(..8)).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes"))).sum()
}

fn map_err(map: &'static str, what: impl Into<String>, e: libbpf_rs::Error) -> Error {
    Error::Map { map, what: what.into(), why: e.to_string() }
}

impl Classifier {
    /// Loads the program and its maps (nothing attached yet). Needs root.
    pub fn load(max_rules: u32) -> Result<Classifier> {
        Classifier::load_object(OBJ, max_rules)
    }

    /// [`Classifier::load`] from another build of `bpf/classify.bpf.c` (the
    /// same maps and programs): for profiling a change of the program
    /// without rebuilding the crate (`--example classify_bench` with `CLS_OBJ`).
    pub fn load_object(object: &[u8], max_rules: u32) -> Result<Classifier> {
        if max_rules == 0 || max_rules > maps::MAX_RULES {
            return Err(Error::Config(format!("max rules must be 1..={}", maps::MAX_RULES)));
        }
        let obj = xdp::load(object, "cls_main")?;
        let maps = Maps {
            config: map_handle(&obj, ".data.config")?,
            masks: map_handle(&obj, "cls_masks")?,
            rules: map_handle(&obj, "cls_rules")?,
            rule_stats: map_handle(&obj, "cls_rule_stats")?,
            totals: map_handle(&obj, "cls_totals")?,
            alt: map_handle(&obj, "cls_alt")?,
            cpus: map_handle(&obj, "cls_cpus")?,
            xsks: map_handle(&obj, "cls_xsks")?,
            noop_count: map_handle(&obj, "cls_noop_count")?,
            cpu_sets: map_handle(&obj, "cls_cpu_sets")?,
            cpu_hits: map_handle(&obj, "cls_cpu_hits")?,
            cache_stats: map_handle(&obj, "cls_cache_stats")?,
            flow_cache: map_handle(&obj, "cls_flow_cache")?,
        };
        let ncpus_possible = libbpf_rs::num_possible_cpus().map_err(|e| Error::Load(e.to_string()))?;
        let mut c = Classifier {
            obj,
            maps,
            link: None,
            masks: [None; maps::MAX_MASKS],
            used: HashMap::new(),
            slots: vec![false; max_rules as usize],
            settings: Settings::default(),
            cpus: Vec::new(),
            ncpus_possible,
            gen: 1,
            general_only: false,
        };
        c.apply_settings(&Settings::default()).map_err(|e| Error::Load(e.to_string()))?;
        // One cpumap entry (a kthread) per online CPU, so steering needs no setup later.
        for cpu in detpath_sys::cpu::online().iter().map(|c| c as u32) {
            if cpu >= maps::MAX_CPUS {
                continue;
            }
            let mut val = Vec::new();
            val.extend_from_slice(&2048u32.to_ne_bytes()); // qsize
            val.extend_from_slice(&0i32.to_ne_bytes()); // no program on the CPU
            c.maps.cpus.update(&cpu.to_ne_bytes(), &val, MapFlags::ANY).map_err(|e| map_err("cls_cpus", format!("adding CPU {cpu}"), e))?;
            c.cpus.push(cpu);
        }
        Ok(c)
    }

    fn prog_fd(&self, name: &str) -> Result<i32> {
        Ok(xdp::program(&self.obj, name)?.as_raw_fd())
    }

    /// Attaches the classifier to `iface` (in the calling thread's namespace).
    pub fn attach(&mut self, iface: &str, mode: XdpMode) -> Result<()> {
        self.link = Some(XdpLink::attach(xdp::program(&self.obj, "cls_main")?, "cls_main", &NetDev::lookup(iface)?, Some(mode))?);
        Ok(())
    }

    /// Attaches one of the object's helper programs (`cls_noop`, `cls_noop_pass`, `cls_pass`, `cls_gen`) elsewhere.
    pub fn attach_helper(&self, prog: &str, iface: &str, mode: XdpMode) -> Result<XdpLink> {
        Ok(XdpLink::attach(xdp::program(&self.obj, prog)?, prog, &NetDev::lookup(iface)?, Some(mode))?)
    }

    /// Detaches (the interface is as before). Also done on drop.
    pub fn detach(&mut self) {
        self.link = None;
    }

    /// The classifier's own attachment, when [`Classifier::attach`]ed.
    pub fn link(&self) -> Option<&XdpLink> {
        self.link.as_ref()
    }

    /// The CPUs with a cpumap entry (online at load, below `maps::MAX_CPUS`):
    /// the ones steer and spread actions may name.
    pub fn online_cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The settings last applied.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Writes the overload signal, alternative nodes and ports.
    pub fn apply_settings(&mut self, s: &Settings) -> Result<(), RuleError> {
        s.validate()?;
        for (i, a) in s.alt_nodes.iter().enumerate() {
            self.maps
                .alt
                .update(&(i as u32).to_ne_bytes(), &maps::alt_bytes(a.mac, a.ip), MapFlags::ANY)
                .map_err(|e| RuleError::System(format!("writing alt node {i}: {e}")))?;
        }
        self.write_config(s)?;
        self.settings = s.clone();
        Ok(())
    }

    /// The masks in use, as the program's `mask_bits`.
    fn mask_bits(&self) -> u32 {
        self.masks.iter().enumerate().filter(|(_, m)| m.is_some()).fold(0, |b, (i, _)| b | 1 << i)
    }

    fn write_config(&self, s: &Settings) -> Result<(), RuleError> {
        let v = s.to_value(self.mask_bits(), self.gen, self.general_only);
        self.maps.config.update(&0u32.to_ne_bytes(), &v.to_bytes(), MapFlags::ANY).map_err(|e| RuleError::System(format!("writing config: {e}")))
    }

    /// Turns the program's fast lane (the straight-line parse of untagged
    /// IPv4/UDP, bare or in VXLAN or GTP-U) off or on: off, every frame
    /// takes the general parser. The two must agree on every frame; this
    /// lets a test (or an operator in doubt) compare them.
    pub fn set_fast_lane(&mut self, on: bool) -> Result<(), RuleError> {
        self.general_only = !on;
        self.write_config(&self.settings)
    }

    /// Invalidates the program's flow cache: a new rule generation, written
    /// after the rule change it follows (the program reads it before its
    /// search), so the very next frame is searched in the new rules.
    fn bump_gen(&mut self) -> Result<(), RuleError> {
        self.gen = gen_after(self.gen);
        self.write_config(&self.settings)
    }

    /// Checks what the rule's action needs from the host: the CPU is online,
    /// the queue exists on the interface, the alt node is configured.
    pub(crate) fn check_action(&self, a: &Action, iface: Option<&str>) -> Result<(), RuleError> {
        match *a {
            Action::SteerCpu { cpu, spread } => {
                let want = if spread == 0 { vec![cpu] } else { crate::intent::cpus_of(spread) };
                if let Some(c) = want.iter().find(|c| !self.cpus.contains(c)) {
                    return Err(RuleError::NoSuchCpu(format!("CPU {c} is not online (online: {:?}); steer to those", self.cpus)));
                }
            }
            Action::Xsk { queue } => {
                let n = match iface {
                    Some(i) => {
                        detpath_sys::netdev::ifindex(i).map_err(|e| RuleError::System(e.to_string()))?;
                        detpath_sys::ethtool::rx_queues(i).unwrap_or(1)
                    }
                    None => 1,
                };
                if queue >= n {
                    return Err(RuleError::NoSuchQueue(format!(
                        "{} has {n} receive queue(s) (0..{n}); queue {queue} does not exist",
                        iface.unwrap_or("the interface")
                    )));
                }
            }
            Action::ForwardWhenOverloaded { alt_node: Some(n) } if n as usize >= self.settings.alt_nodes.len() => {
                return Err(RuleError::NoSuchAltNode(format!(
                    "alternative node {n} is not configured ({} configured; set them with PUT /v1/config or --alt)",
                    self.settings.alt_nodes.len()
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Installs a rule: all of it or nothing.
    pub fn install(&mut self, rule: &Rule, iface: Option<&str>) -> Result<Installed, RuleError> {
        self.check_action(&rule.action, iface)?;
        let (keys, mask) = rule.keys();
        let keys: Vec<FlowKey> = keys.iter().map(|k| k.and(&mask)).collect();
        // The mask: an existing one of the same shape, or a free one.
        let (mask_id, new_mask) = match self.masks.iter().position(|m| m.is_some_and(|(mm, _)| mm == mask)) {
            Some(i) => (i as u32, false),
            None => match self.masks.iter().position(|m| m.is_none()) {
                Some(i) => (i as u32, true),
                None => return Err(RuleError::MasksFull(maps::MAX_MASKS)),
            },
        };
        if keys.iter().any(|key| self.used.contains_key(&(mask_id, *key))) {
            return Err(RuleError::Duplicate);
        }
        let slot = match self.slots.iter().position(|u| !u) {
            Some(s) => s as u32,
            None => {
                return Err(RuleError::TableFull(format!(
                    "the rule table is full ({} rules); delete a rule or restart the daemon with a larger --max-rules (up to {})",
                    self.slots.len(),
                    maps::MAX_RULES
                )))
            }
        };
        let (action, arg) = match rule.action {
            Action::Pass => (maps::ACT_PASS, 0),
            Action::SteerCpu { cpu, spread: 0 } => (maps::ACT_STEER, cpu),
            Action::SteerCpu { spread, .. } => {
                let set = maps::CpuSet::new(&crate::intent::cpus_of(spread));
                self.maps
                    .cpu_sets
                    .update(&slot.to_ne_bytes(), &set.to_bytes(), MapFlags::ANY)
                    .map_err(|e| RuleError::System(format!("writing the CPU set of slot {slot}: {e}")))?;
                (maps::ACT_SPREAD, 0)
            }
            Action::Xsk { queue } => (maps::ACT_XSK, queue),
            Action::Drop => (maps::ACT_DROP, 0),
            Action::ForwardWhenOverloaded { alt_node } => (maps::ACT_FORWARD, alt_node.unwrap_or(maps::ALT_BY_HASH)),
        };
        // Fresh statistics for the slot, marked with the generation this
        // install ends in: the program adds to them no frames of flow cache
        // entries filled before (the slot's previous rule's).
        let mut fresh = vec![0u8; std::mem::size_of::<maps::StatValue>()];
        let at = std::mem::offset_of!(maps::StatValue, gen);
        fresh[at..at + 4].copy_from_slice(&gen_after(self.gen).to_ne_bytes());
        let fresh = vec![fresh; self.ncpus_possible];
        self.maps
            .rule_stats
            .update_percpu(&slot.to_ne_bytes(), &fresh, MapFlags::ANY)
            .map_err(|e| RuleError::System(format!("resetting statistics slot {slot}: {e}")))?;
        if new_mask {
            self.maps
                .masks
                .update(&mask_id.to_ne_bytes(), &maps::mask_bytes(&mask, true), MapFlags::ANY)
                .map_err(|e| RuleError::System(format!("writing mask {mask_id}: {e}")))?;
        }
        let val = RuleValue { slot, arg, priority: rule.effective_priority(), action, _pad: [0; 5] };
        let mut inserted = 0;
        let mut failed = None;
        for key in &keys {
            match self.maps.rules.update(&maps::rule_key_bytes(key, mask_id), &val.to_bytes(), MapFlags::NO_EXIST) {
                Ok(()) => inserted += 1,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            // All of it or nothing: the keys already in go out again.
            for key in &keys[..inserted] {
                let _ = self.maps.rules.delete(&maps::rule_key_bytes(key, mask_id));
            }
            if new_mask {
                let _ = self.maps.masks.update(&mask_id.to_ne_bytes(), &maps::mask_bytes(&FlowKey::default(), false), MapFlags::ANY);
            }
            let full = e.kind() == libbpf_rs::ErrorKind::Other && e.to_string().contains("E2BIG")
                || e.to_string().contains("too big")
                || e.to_string().contains("No space");
            return Err(if full {
                RuleError::TableFull(format!("the kernel rule map is full: {e}"))
            } else {
                RuleError::System(format!("inserting the rule: {e}"))
            });
        }
        self.slots[slot as usize] = true;
        for key in &keys {
            self.used.insert((mask_id, *key), slot);
        }
        match &mut self.masks[mask_id as usize] {
            Some((_, n)) => *n += 1,
            m @ None => *m = Some((mask, 1)),
        }
        // The program searches the new mask from now on (one write), then no
        // cached result from before the rule counts (a second write: a frame
        // that sees the new generation sees the new mask set too).
        let written = if new_mask { self.write_config(&self.settings) } else { Ok(()) };
        if let Err(e) = written.and_then(|()| self.bump_gen()) {
            let _ = self.remove(&Installed { slot, mask_id, keys });
            return Err(e);
        }
        Ok(Installed { slot, mask_id, keys })
    }

    /// Removes an installed rule.
    pub fn remove(&mut self, ins: &Installed) -> Result<(), RuleError> {
        for key in &ins.keys {
            match self.maps.rules.delete(&maps::rule_key_bytes(key, ins.mask_id)) {
                Ok(()) => {}
                Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => {}
                Err(e) => return Err(RuleError::System(format!("deleting the rule: {e}"))),
            }
            self.used.remove(&(ins.mask_id, *key));
        }
        if let Some(s) = self.slots.get_mut(ins.slot as usize) {
            *s = false;
        }
        if let Some(Some((_, n))) = self.masks.get_mut(ins.mask_id as usize) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.masks[ins.mask_id as usize] = None;
                let _ = self.write_config(&self.settings);
                let _ = self.maps.masks.update(&ins.mask_id.to_ne_bytes(), &maps::mask_bytes(&FlowKey::default(), false), MapFlags::ANY);
            }
        }
        // No cached result from before the removal counts.
        self.bump_gen()
    }

    /// Rules in the kernel map (for tests: nothing half-installed).
    pub fn kernel_rule_count(&self) -> usize {
        self.maps.rules.keys().count()
    }

    /// Masks active in the kernel map.
    pub fn kernel_mask_count(&self) -> usize {
        (0..maps::MAX_MASKS as u32)
            .filter(|i| self.maps.masks.lookup(&i.to_ne_bytes(), MapFlags::ANY).ok().flatten().is_some_and(|v| v.get(48) == Some(&1)))
            .count()
    }

    /// Statistics of one slot, summed over CPUs (see [`Classifier::rule_stats`]).
    pub fn rule_stat(&self, slot: u32) -> RuleStat {
        self.rule_stats(&[slot]).pop().unwrap_or_default()
    }

    /// Statistics of each slot in `slots`, summed over CPUs: the map's
    /// values plus the frames live flow cache entries answered for the
    /// slot's rule (the program counts a cache hit in its entry; see
    /// bpf/classify.h). One pass over the cache for all the slots.
    pub fn rule_stats(&self, slots: &[u32]) -> Vec<RuleStat> {
        self.rule_stats_with(slots, &self.cache_entries())
    }

    /// The totals ([`Classifier::totals`]) and the statistics of each slot
    /// in `slots` ([`Classifier::rule_stats`]) from one pass over the flow
    /// cache: what a statistics request or a metrics scrape reads.
    pub fn counts(&self, slots: &[u32]) -> (Vec<Counter>, Vec<RuleStat>) {
        let entries = self.cache_entries();
        (self.totals_with(&entries), self.rule_stats_with(slots, &entries))
    }

    fn rule_stats_with(&self, slots: &[u32], entries: &[maps::EntryCounts]) -> Vec<RuleStat> {
        let mut out = vec![RuleStat::default(); slots.len()];
        let mut installed = vec![0u32; slots.len()];
        for (i, slot) in slots.iter().enumerate() {
            if let Ok(Some(per_cpu)) = self.maps.rule_stats.lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY) {
                for v in &per_cpu {
                    out[i].add_bytes(v);
                    installed[i] = installed[i].max(maps::stat_gen(v));
                }
            }
        }
        let index: std::collections::HashMap<u32, usize> = slots.iter().enumerate().map(|(i, s)| (*s, i)).collect();
        for e in entries {
            if let Some(&i) = e.slot.and_then(|s| index.get(&s)) {
                if e.gen >= installed[i] {
                    out[i].add_entry(e);
                }
            }
        }
        out
    }

    /// Every CPU's flow cache entries that answered frames.
    fn cache_entries(&self) -> Vec<maps::EntryCounts> {
        (0..maps::CACHE_SLOTS)
            .filter_map(|slot| self.maps.flow_cache.lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY).ok().flatten())
            .flatten()
            .map(|v| maps::EntryCounts::from_bytes(&v))
            .filter(|e| e.hits > 0)
            .collect()
    }

    /// Totals per action, summed over CPUs, in the order of [`maps::TOTAL_NAMES`]:
    /// the map's, plus the frames of dropping rules that live flow cache
    /// entries answered (the program counts them in the entry; see bpf/classify.h).
    pub fn totals(&self) -> Vec<Counter> {
        self.totals_with(&self.cache_entries())
    }

    fn totals_with(&self, entries: &[maps::EntryCounts]) -> Vec<Counter> {
        let mut totals: Vec<Counter> = (0..maps::TOTAL_NAMES.len() as u32)
            .map(|i| {
                let mut c = Counter::default();
                if let Ok(Some(per_cpu)) = self.maps.totals.lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY) {
                    for v in per_cpu {
                        c.add_bytes(&v);
                    }
                }
                c
            })
            .collect();
        if let Some(drop) = maps::total_index("drop").and_then(|i| totals.get_mut(i)) {
            for e in entries.iter().filter(|e| e.action == Some(maps::ACT_DROP)) {
                drop.packets += e.hits;
                drop.bytes += e.bytes;
            }
        }
        totals
    }

    /// One total by name.
    pub fn total(&self, name: &str) -> Counter {
        maps::total_index(name).and_then(|i| self.totals().get(i).copied()).unwrap_or_default()
    }

    /// Frames the benchmark's no-op anchor in slot `slot` counted, summed
    /// over CPUs: [`maps::NOOP_DROP`] for `cls_noop` (counts, drops),
    /// [`maps::NOOP_PASS`] for `cls_noop_pass` (counts, passes to the stack).
    pub(crate) fn noop_count(&self, slot: u32) -> u64 {
        percpu_sum(&self.maps.noop_count, slot)
    }

    /// Frames redirected to each CPU by steer and spread rules (index = CPU), summed over receiving CPUs.
    pub fn cpu_hits(&self) -> Vec<u64> {
        (0..maps::MAX_CPUS).map(|cpu| percpu_sum(&self.maps.cpu_hits, cpu)).collect()
    }

    /// Flow cache (hits, misses), summed over CPUs: frames whose rule came
    /// from the cache, and frames searched in the rules (with rules in use).
    /// A hit is counted in its cache entry (no counter of its own on the
    /// fast path), so the hits are the entries' plus the evicted ones'.
    pub fn cache_stats(&self) -> (u64, u64) {
        let in_entries: u64 = self.cache_entries().iter().map(|e| e.hits).sum();
        (percpu_sum(&self.maps.cache_stats, 0) + in_entries, percpu_sum(&self.maps.cache_stats, 1))
    }

    /// Puts an AF_XDP socket into an XSKMAP slot (the rx queue it is bound to).
    pub fn set_xsk(&self, queue: u32, xsk_fd: i32) -> Result<()> {
        self.maps.xsks.update(&queue.to_ne_bytes(), &xsk_fd.to_ne_bytes(), MapFlags::ANY).map_err(|e| map_err("cls_xsks", format!("slot {queue}"), e))
    }

    /// Runs the classifier once over `frame` (BPF_PROG_TEST_RUN): the XDP
    /// verdict and the frame as the program left it.
    pub fn test_run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.test_run_prog("cls_main", frame, 1).map(|(r, f, _)| (r, f))
    }

    /// Runs program `prog` `repeat` times over `frame`: verdict, frame out, mean ns per run.
    pub fn test_run_prog(&self, prog: &str, frame: &[u8], repeat: u32) -> Result<(u32, Vec<u8>, u64)> {
        let p = self.obj.progs_mut().find(|p| p.name() == prog).ok_or_else(|| Error::Load(format!("program {prog} missing")))?;
        let mut out = vec![0u8; frame.len() + 256];
        let input = ProgramInput { data_in: Some(frame), data_out: Some(&mut out), repeat, ..Default::default() };
        let o = p.test_run(input).map_err(|e| Error::Load(format!("BPF_PROG_TEST_RUN: {e}")))?;
        let n = o.data.map(|d| d.len()).unwrap_or(0);
        let ret = o.return_value;
        let ns = o.duration.as_nanos() as u64;
        out.truncate(n);
        Ok((ret, out, ns))
    }

    /// The fd of one of the object's programs (for BPF_PROG_RUN live frames).
    pub(crate) fn program_fd(&self, name: &str) -> Result<i32> {
        self.prog_fd(name)
    }

    /// Runs program `prog` `repeat` times over `frame` in BPF_PROG_RUN live-frames
    /// mode (Linux >= 5.18) as if received on `ifindex` (of the calling thread's
    /// namespace): XDP_TX frames really leave that interface. The benchmark's
    /// generator (`cls_gen` returns XDP_TX).
    pub fn live_frames(&self, prog: &str, frame: &[u8], ifindex: u32, repeat: u32) -> Result<()> {
        live_frames_fd(self.prog_fd(prog)?, frame, ifindex, repeat)
    }
}

/// [`Classifier::live_frames`] on a program fd (from [`Classifier::program_fd`]),
/// for generator threads: the fd is shared, the loaded object stays on one thread.
pub(crate) fn live_frames_fd(fd: i32, frame: &[u8], ifindex: u32, repeat: u32) -> Result<()> {
    use libbpf_rs::libbpf_sys as sys;
    let ctx = sys::xdp_md { data: 0, data_end: frame.len() as u32, data_meta: 0, ingress_ifindex: ifindex, rx_queue_index: 0, egress_ifindex: 0 };
    let mut opts = sys::bpf_test_run_opts {
        sz: std::mem::size_of::<sys::bpf_test_run_opts>() as _,
        data_in: frame.as_ptr().cast(),
        data_size_in: frame.len() as u32,
        ctx_in: (&ctx as *const sys::xdp_md).cast(),
        ctx_size_in: std::mem::size_of::<sys::xdp_md>() as u32,
        repeat: repeat as i32,
        flags: sys::BPF_F_TEST_XDP_LIVE_FRAMES,
        batch_size: 64,
        ..Default::default()
    };
    // SAFETY: opts points at live buffers (frame, ctx) for the duration of the call.
    let r = unsafe { sys::bpf_prog_test_run_opts(fd, &mut opts) };
    if r != 0 {
        return Err(Error::Load(format!("BPF_PROG_RUN live frames: {} (needs Linux >= 5.18)", std::io::Error::last_os_error())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::gen_after;

    #[test]
    fn the_rule_generation_skips_zero_so_an_empty_cache_entry_never_hits() {
        assert_eq!(gen_after(1), 2);
        assert_eq!(gen_after(u32::MAX), 1);
        assert_eq!(gen_after(0), 1);
    }
}

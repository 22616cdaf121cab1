//! Byte-exact mirrors of the structures in `bpf/classify.h`: `#[repr(C)]`
//! types with the C field names, checked at compile time against the layout
//! clang computes for the header (`build.rs` generates a `check_cls_*!`
//! macro of size, alignment and field-offset assertions per struct): a
//! header change the mirrors do not follow fails the build. Values are
//! encoded by hand (no `unsafe` casts), field by field at those offsets.

#[macro_use]
mod layout {
    include!(concat!(env!("OUT_DIR"), "/classify_layout.rs"));
}

/// Distinct match shapes (masks) the program searches.
pub(crate) const MAX_MASKS: usize = 8;
/// CPUs in one spread rule's set.
pub(crate) const MAX_SPREAD: usize = 16;
/// Alternative nodes for forward-when-overloaded.
pub(crate) const MAX_ALT: usize = 16;
/// AF_XDP socket slots.
pub(crate) const MAX_XSK: u32 = 64;
/// cpumap entries.
pub(crate) const MAX_CPUS: u32 = 64;
/// Rule hash map capacity (and rule statistics slots).
pub const MAX_RULES: u32 = 1024;
/// `arg` of a forward rule that picks the alt node by flow hash.
pub(crate) const ALT_BY_HASH: u32 = u32::MAX;
/// Slot of `cls_noop_count` that the benchmark's dropping anchor (`cls_noop`) counts in.
pub(crate) const NOOP_DROP: u32 = 0;
/// Slot of `cls_noop_count` that the benchmark's passing anchor (`cls_noop_pass`) counts in.
pub(crate) const NOOP_PASS: u32 = 1;

/// [`FlowKey::flags`]: the innermost IP is IPv6.
pub const F_IPV6: u8 = 0x01;
/// [`FlowKey::flags`]: the ports are valid (TCP or UDP, not a later fragment).
pub const F_L4: u8 = 0x02;
/// [`FlowKey::flags`]: a VXLAN header was crossed; `vni` is valid.
pub const F_VXLAN: u8 = 0x04;
/// [`FlowKey::flags`]: a GTP-U G-PDU header was crossed; `teid` is valid.
pub const F_GTP: u8 = 0x08;
/// [`FlowKey::flags`]: the outer Ethernet frame had a VLAN tag; `vlan` is valid.
pub const F_VLAN: u8 = 0x10;

// The constants above are the header's.
const _: () = {
    assert!(MAX_MASKS as u64 == layout::CLS_MAX_MASKS);
    assert!(MAX_SPREAD as u64 == layout::CLS_MAX_SPREAD);
    assert!(MAX_ALT as u64 == layout::CLS_MAX_ALT);
    assert!(MAX_XSK as u64 == layout::CLS_MAX_XSK);
    assert!(MAX_CPUS as u64 == layout::CLS_MAX_CPUS);
    assert!(MAX_RULES as u64 == layout::CLS_MAX_RULES);
    assert!(ALT_BY_HASH as u64 == layout::CLS_ALT_BY_HASH);
    assert!(CACHE_SLOTS as u64 == layout::CLS_CACHE_SLOTS);
    assert!(NOOP_DROP as u64 == layout::CLS_NOOP_DROP && NOOP_PASS as u64 == layout::CLS_NOOP_PASS && layout::CLS_NOOP_SLOTS == 2);
    assert!(F_IPV6 as u64 == layout::CLS_F_IPV6 && F_L4 as u64 == layout::CLS_F_L4 && F_VXLAN as u64 == layout::CLS_F_VXLAN);
    assert!(F_GTP as u64 == layout::CLS_F_GTP && F_VLAN as u64 == layout::CLS_F_VLAN);
};

/// `struct cls_flow_key` (48 bytes): what the program extracts from a frame
/// (the innermost 5-tuple and DSCP, VNI, TEID, outer VLAN ID), and, with set
/// bits for the fields a rule names, a rule's mask. Numbers in host byte
/// order, addresses and the VNI's bytes as on the wire; [`FlowKey::to_bytes`]
/// writes the ports in network byte order, as the program keeps them (one
/// load fills both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct FlowKey {
    /// Innermost source address (IPv4 in the first 4 bytes, the rest zero).
    pub src: [u8; 16],
    /// Innermost destination address (same layout).
    pub dst: [u8; 16],
    /// VXLAN network identifier (24 bits; valid with [`F_VXLAN`]), as on the
    /// wire: [`FlowKey::vni`] and [`FlowKey::set_vni`] read and write it as a number.
    pub vni: [u8; 3],
    /// DSCP (6 bits) of the innermost IP header (IPv4 TOS or IPv6 traffic
    /// class, without the ECN bits); every IP frame has one.
    pub dscp: u8,
    /// GTP-U tunnel endpoint identifier (valid with [`F_GTP`]).
    pub teid: u32,
    /// Innermost source port (valid with [`F_L4`]).
    pub sport: u16,
    /// Innermost destination port (valid with [`F_L4`]).
    pub dport: u16,
    /// VLAN ID (12 bits) of the outermost tag (valid with [`F_VLAN`]).
    pub vlan: u16,
    /// Innermost IP protocol / IPv6 next header.
    pub proto: u8,
    /// `F_*` bits: which fields are valid and what was crossed.
    pub flags: u8,
}

check_cls_flow_key!(FlowKey);

/// Bytes of a [`FlowKey`] as the kernel stores it (48).
pub const FLOW_KEY_LEN: usize = std::mem::size_of::<FlowKey>();

impl FlowKey {
    /// The key as the program reads it (C layout; the ports in network byte
    /// order, the other numbers in native byte order).
    pub fn to_bytes(&self) -> [u8; FLOW_KEY_LEN] {
        let mut b = [0u8; FLOW_KEY_LEN];
        b[0..16].copy_from_slice(&self.src);
        b[16..32].copy_from_slice(&self.dst);
        b[32..35].copy_from_slice(&self.vni);
        b[35] = self.dscp;
        b[36..40].copy_from_slice(&self.teid.to_ne_bytes());
        b[40..42].copy_from_slice(&self.sport.to_be_bytes());
        b[42..44].copy_from_slice(&self.dport.to_be_bytes());
        b[44..46].copy_from_slice(&self.vlan.to_ne_bytes());
        b[46] = self.proto;
        b[47] = self.flags;
        b
    }

    /// Bitwise AND (what the program does with a mask).
    pub fn and(&self, m: &FlowKey) -> FlowKey {
        let a = self.to_bytes();
        let b = m.to_bytes();
        let mut out = [0u8; FLOW_KEY_LEN];
        for i in 0..FLOW_KEY_LEN {
            out[i] = a[i] & b[i];
        }
        FlowKey::from_bytes(&out)
    }

    /// The key from its C layout (the inverse of [`FlowKey::to_bytes`]).
    pub fn from_bytes(b: &[u8; FLOW_KEY_LEN]) -> FlowKey {
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        let port_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut src = [0u8; 16];
        let mut dst = [0u8; 16];
        src.copy_from_slice(&b[0..16]);
        dst.copy_from_slice(&b[16..32]);
        FlowKey {
            src,
            dst,
            vni: [b[32], b[33], b[34]],
            dscp: b[35],
            teid: u32_at(36),
            sport: port_at(40),
            dport: port_at(42),
            vlan: u16_at(44),
            proto: b[46],
            flags: b[47],
        }
    }

    /// The VNI as a number.
    pub fn vni(&self) -> u32 {
        u32::from_be_bytes([0, self.vni[0], self.vni[1], self.vni[2]])
    }

    /// Sets the VNI from a number (its low 24 bits).
    pub fn set_vni(&mut self, vni: u32) {
        let b = vni.to_be_bytes();
        self.vni = [b[1], b[2], b[3]];
    }

    /// Number of set bits (the default priority of a rule: more specific wins).
    pub fn popcount(&self) -> u32 {
        self.to_bytes().iter().map(|b| b.count_ones()).sum()
    }
}

/// `struct cls_rule_key`: the key of the rule hash map (mirrored for the
/// layout check; written by [`rule_key_bytes`]).
#[repr(C)]
pub(crate) struct RuleKey {
    /// The rule's flow key under its mask.
    pub k: FlowKey,
    /// The mask's index in `cls_masks`.
    pub mask_id: u32,
    /// Zero (the hash covers it).
    pub _pad: u32,
}
check_cls_rule_key!(RuleKey);

/// `struct cls_rule_key` (56 bytes).
pub(crate) fn rule_key_bytes(k: &FlowKey, mask_id: u32) -> Vec<u8> {
    let mut v = k.to_bytes().to_vec();
    v.extend_from_slice(&mask_id.to_ne_bytes());
    v.extend_from_slice(&[0u8; 4]);
    v
}

/// `enum cls_action` CLS_ACT_PASS: XDP_PASS (also the config's default action "pass").
pub(crate) const ACT_PASS: u8 = 0;
/// CLS_ACT_STEER: cpumap redirect to the CPU in the rule's `arg`.
pub(crate) const ACT_STEER: u8 = 1;
/// CLS_ACT_XSK: xskmap redirect to the slot in `arg`.
pub(crate) const ACT_XSK: u8 = 2;
/// CLS_ACT_DROP: XDP_DROP.
pub(crate) const ACT_DROP: u8 = 3;
/// CLS_ACT_FORWARD: while overloaded, rewrite to the alternative node in
/// `arg` ([`ALT_BY_HASH`]: by flow hash) and XDP_TX; otherwise pass.
pub(crate) const ACT_FORWARD: u8 = 4;
/// CLS_ACT_SPREAD: cpumap redirect to one CPU of the rule's `cls_cpu_sets`
/// entry, picked by a hash of the innermost 5-tuple.
pub(crate) const ACT_SPREAD: u8 = 5;

/// `struct cls_cpu_set`: the CPUs of a spread rule.
#[repr(C)]
pub(crate) struct CpuSet {
    /// CPUs in use, 1..=[`MAX_SPREAD`].
    pub n: u32,
    /// The cpumap keys (CPU numbers); those past `n` are 0.
    pub cpu: [u32; MAX_SPREAD],
}
check_cls_cpu_set!(CpuSet);

impl CpuSet {
    /// The set of `cpus` (at most [`MAX_SPREAD`], the rest ignored).
    pub fn new(cpus: &[u32]) -> CpuSet {
        let mut cpu = [0u32; MAX_SPREAD];
        for (d, s) in cpu.iter_mut().zip(cpus) {
            *d = *s;
        }
        CpuSet { n: cpus.len().min(MAX_SPREAD) as u32, cpu }
    }

    /// The map value (C layout, native byte order).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = self.n.to_ne_bytes().to_vec();
        for c in self.cpu {
            v.extend_from_slice(&c.to_ne_bytes());
        }
        v
    }
}

/// `struct cls_rule` (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct RuleValue {
    /// The rule's index in `cls_rule_stats` (and `cls_cpu_sets`).
    pub slot: u32,
    /// The action's argument: CPU, XSK slot or alternative node index ([`ALT_BY_HASH`]).
    pub arg: u32,
    /// Highest wins when rules under several masks match one frame.
    pub priority: u16,
    /// `ACT_*`.
    pub action: u8,
    /// Zero.
    pub _pad: [u8; 5],
}
check_cls_rule!(RuleValue);

impl RuleValue {
    /// The map value (C layout, native byte order).
    pub fn to_bytes(self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16);
        v.extend_from_slice(&self.slot.to_ne_bytes());
        v.extend_from_slice(&self.arg.to_ne_bytes());
        v.extend_from_slice(&self.priority.to_ne_bytes());
        v.push(self.action);
        v.extend_from_slice(&self._pad);
        v
    }
}

/// `struct cls_mask`: one match shape of the tuple-space search (mirrored
/// for the layout check; written by [`mask_bytes`]).
#[repr(C)]
pub(crate) struct MaskValue {
    /// The bits a frame's key keeps before the rule lookup under this mask.
    pub m: FlowKey,
    /// 1: in use.
    pub active: u32,
    /// Zero.
    pub _pad: u32,
}
check_cls_mask!(MaskValue);

/// `struct cls_mask` (56 bytes).
pub(crate) fn mask_bytes(m: &FlowKey, active: bool) -> Vec<u8> {
    let mut v = m.to_bytes().to_vec();
    v.extend_from_slice(&u32::from(active).to_ne_bytes());
    v.extend_from_slice(&[0u8; 4]);
    v
}

/// `struct cls_alt`: an alternative node (mirrored for the layout check;
/// written by [`alt_bytes`]).
#[repr(C)]
pub(crate) struct AltValue {
    /// Destination MAC written into a forwarded frame.
    pub mac: [u8; 6],
    /// 4 or 6 (0: empty).
    pub family: u8,
    /// Zero.
    pub _pad: u8,
    /// Destination address written into the outer IP header (IPv4 in the first 4 bytes).
    pub ip: [u8; 16],
}
check_cls_alt!(AltValue);

/// `struct cls_alt` (24 bytes).
pub(crate) fn alt_bytes(mac: [u8; 6], ip: std::net::IpAddr) -> Vec<u8> {
    let mut v = mac.to_vec();
    let mut addr = [0u8; 16];
    match ip {
        std::net::IpAddr::V4(a) => {
            v.push(4);
            addr[..4].copy_from_slice(&a.octets());
        }
        std::net::IpAddr::V6(a) => {
            v.push(6);
            addr.copy_from_slice(&a.octets());
        }
    }
    v.push(0);
    v.extend_from_slice(&addr);
    v
}

/// `struct cls_config` (56 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct ConfigValue {
    /// 1: the host is overloaded (the user-space load flag).
    pub load_flag: u32,
    /// Alternative nodes in use (0..=[`MAX_ALT`]).
    pub alt_count: u32,
    /// Frames per window per CPU above which that CPU is overloaded (0: off).
    pub rate_threshold: u64,
    /// The rate window in ns.
    pub window_ns: u64,
    /// What unmatched encapsulated flows get: [`ACT_PASS`] or [`ACT_FORWARD`].
    pub default_action: u32,
    /// UDP destination port parsed as VXLAN.
    pub vxlan_port: u16,
    /// UDP destination port parsed as GTP-U.
    pub gtpu_port: u16,
    /// Frames per window per CPU above which even prioritised flows are forwarded (0: never).
    pub saturation_threshold: u64,
    /// Bit m: mask m is in use.
    pub mask_bits: u32,
    /// Rule generation: bumped after every rule or mask change; flow cache
    /// entries of another generation are not used.
    pub gen: u32,
    /// 1: the fast lane off, every frame through the general parser.
    pub general_only: u32,
    /// 1 when `load_flag`, `rate_threshold` or `saturation_threshold` is
    /// set: the one word the program tests before any overload signal.
    pub load_watch: u32,
}
check_cls_config!(ConfigValue);

impl ConfigValue {
    /// The map value (C layout, native byte order).
    pub fn to_bytes(self) -> Vec<u8> {
        let mut v = Vec::with_capacity(56);
        v.extend_from_slice(&self.load_flag.to_ne_bytes());
        v.extend_from_slice(&self.alt_count.to_ne_bytes());
        v.extend_from_slice(&self.rate_threshold.to_ne_bytes());
        v.extend_from_slice(&self.window_ns.to_ne_bytes());
        v.extend_from_slice(&self.default_action.to_ne_bytes());
        v.extend_from_slice(&self.vxlan_port.to_ne_bytes());
        v.extend_from_slice(&self.gtpu_port.to_ne_bytes());
        v.extend_from_slice(&self.saturation_threshold.to_ne_bytes());
        v.extend_from_slice(&self.mask_bits.to_ne_bytes());
        v.extend_from_slice(&self.gen.to_ne_bytes());
        v.extend_from_slice(&self.general_only.to_ne_bytes());
        v.extend_from_slice(&self.load_watch.to_ne_bytes());
        v
    }
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(i..i + 4) {
        a.copy_from_slice(s);
    }
    u32::from_ne_bytes(a)
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(i..i + 8) {
        a.copy_from_slice(s);
    }
    u64::from_ne_bytes(a)
}

/// Slots of the per-CPU flow cache.
pub(crate) const CACHE_SLOTS: u32 = 512;

/// `struct cls_cache_ent` (the program's own; mirrored for the layout check).
#[repr(C)]
pub(crate) struct CacheEntry {
    /// The whole flow key the entry answers for.
    pub k: FlowKey,
    /// The rule generation (`cls_config.gen`) it was computed in (0: empty).
    pub gen: u32,
    /// 1: `rule` matched; 0: no rule matches the key.
    pub found: u32,
    /// Copy of the winning rule's value.
    pub rule: RuleValue,
    /// Frames the entry answered since it was filled (the cache's hits
    /// are these plus the evicted entries' in `cls_cache_stats[0]`; the
    /// rule's packets are these plus its statistics').
    pub hits: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Jiffies of the last hit that set the rule's last-seen time.
    pub seen_jiffies: u64,
}
check_cls_cache_ent!(CacheEntry);

/// What user space reads of one CPU's flow cache entry (C layout): the
/// generation, whether and which rule it found, and the frames it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryCounts {
    /// `cls_config.gen` the entry was filled in (0: empty).
    pub gen: u32,
    /// The rule's slot, when the entry found one.
    pub slot: Option<u32>,
    /// The rule's action (`ACT_*`), when the entry found one.
    pub action: Option<u8>,
    /// Frames it answered since it was filled (cache hits).
    pub hits: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl EntryCounts {
    /// Reads one CPU's value of `cls_flow_cache`.
    pub fn from_bytes(b: &[u8]) -> EntryCounts {
        use std::mem::offset_of;
        let found = u32_at(b, offset_of!(CacheEntry, found)) != 0;
        EntryCounts {
            gen: u32_at(b, offset_of!(CacheEntry, gen)),
            slot: found.then(|| u32_at(b, offset_of!(CacheEntry, rule) + offset_of!(RuleValue, slot))),
            action: found.then(|| b.get(offset_of!(CacheEntry, rule) + offset_of!(RuleValue, action)).copied().unwrap_or(0)),
            hits: u64_at(b, offset_of!(CacheEntry, hits)),
            bytes: u64_at(b, offset_of!(CacheEntry, bytes)),
        }
    }
}

/// `struct cls_rate` (per-CPU rate window; the program's own).
#[repr(C)]
pub(crate) struct RateValue {
    /// CLOCK_MONOTONIC ns when the current window began.
    pub window_start: u64,
    /// Frames counted in the current window.
    pub count: u64,
    /// Frames counted in the window before.
    pub last_count: u64,
    /// Unused.
    pub _pad: u64,
}
check_cls_rate!(RateValue);

/// A rule's statistics (`struct cls_stat`), summed over CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct RuleStat {
    /// Frames that matched the rule.
    pub packets: u64,
    /// Their bytes (whole frames, as received).
    pub bytes: u64,
    /// Of those, frames forwarded to an alternative node.
    pub forwarded: u64,
    /// CLOCK_MONOTONIC ns of the last packet on any CPU, at tick resolution (0 = never).
    pub last_seen_ns: u64,
}

/// `struct cls_stat` (40 bytes), one CPU's value (mirrored for the layout check).
#[repr(C)]
pub(crate) struct StatValue {
    /// Frames that matched the rule.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, frames forwarded.
    pub forwarded: u64,
    /// CLOCK_MONOTONIC ns of the last packet (the coarse clock).
    pub last_seen_ns: u64,
    /// The jiffies at which `last_seen_ns` was read (the program reads the
    /// coarse clock once a tick).
    pub seen_jiffies: u64,
    /// The rule generation the slot's rule was installed in: a flow cache
    /// entry filled before it holds frames of the slot's previous rule.
    pub gen: u32,
    /// Unused.
    pub _pad: u32,
}
check_cls_stat!(StatValue);

/// The installation generation in one CPU's `cls_stat` value.
pub(crate) fn stat_gen(b: &[u8]) -> u32 {
    u32_at(b, std::mem::offset_of!(StatValue, gen))
}

impl RuleStat {
    /// Adds the frames a flow cache entry answered (counted there, not in the map).
    pub(crate) fn add_entry(&mut self, e: &EntryCounts) {
        self.packets += e.hits;
        self.bytes += e.bytes;
    }

    /// Adds one CPU's value of the per-CPU map (C layout): counts summed, the latest last-seen kept.
    pub(crate) fn add_bytes(&mut self, b: &[u8]) {
        self.packets += u64_at(b, 0);
        self.bytes += u64_at(b, 8);
        self.forwarded += u64_at(b, 16);
        self.last_seen_ns = self.last_seen_ns.max(u64_at(b, 24));
    }
}

/// `struct cls_total_ctr` (16 bytes), summed over CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[repr(C)]
pub struct Counter {
    /// Frames.
    pub packets: u64,
    /// Their bytes (whole frames).
    pub bytes: u64,
}
check_cls_total_ctr!(Counter);

impl Counter {
    /// Adds one CPU's value of the per-CPU map (C layout).
    pub(crate) fn add_bytes(&mut self, b: &[u8]) {
        self.packets += u64_at(b, 0);
        self.bytes += u64_at(b, 8);
    }
}

/// `enum cls_total`, in order, with the names the API uses.
pub const TOTAL_NAMES: [&str; 12] =
    ["pass_unmatched", "pass_rule", "steer", "steer_miss", "xsk", "xsk_miss", "drop", "forward", "forward_no_alt", "malformed", "not_ip", "overloaded"];

/// Index of a total by name.
pub(crate) fn total_index(name: &str) -> Option<usize> {
    TOTAL_NAMES.iter().position(|n| *n == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(FlowKey::default().to_bytes().len(), 48);
        assert_eq!(rule_key_bytes(&FlowKey::default(), 0).len(), 56);
        assert_eq!(RuleValue { slot: 0, arg: 0, priority: 0, action: 0, _pad: [0; 5] }.to_bytes().len(), std::mem::size_of::<RuleValue>());
        assert_eq!(CpuSet::new(&[0, 1]).to_bytes().len(), std::mem::size_of::<CpuSet>());
        assert_eq!(mask_bytes(&FlowKey::default(), true).len(), 56);
        assert_eq!(alt_bytes([0; 6], "1.2.3.4".parse().unwrap()).len(), 24);
        let c = ConfigValue {
            load_flag: 0,
            alt_count: 0,
            rate_threshold: 0,
            window_ns: 0,
            default_action: 0,
            vxlan_port: 0,
            gtpu_port: 0,
            saturation_threshold: 0,
            mask_bits: 0,
            gen: 0,
            general_only: 0,
            load_watch: 0,
        };
        assert_eq!(c.to_bytes().len(), std::mem::size_of::<ConfigValue>());
    }

    #[test]
    fn key_roundtrip() {
        let k = FlowKey { src: [1; 16], dst: [2; 16], vni: [0, 0, 3], dscp: 46, teid: 4, sport: 5, dport: 6, vlan: 7, proto: 8, flags: 9 };
        assert_eq!(FlowKey::from_bytes(&k.to_bytes()), k);
    }
}

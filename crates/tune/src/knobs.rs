//! The knob model and the audit: every setting that bounds worst-case latency,
//! its current and recommended value, and how to change it.

use serde::{Deserialize, Serialize};

use crate::cpus::CpuList;
use crate::error::TuneError;
use crate::host::Host;
use crate::nic::{is_unsupported, NicSetting};

/// How a knob compares with the recommendation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// As recommended.
    #[serde(rename = "ok")]
    Ok,
    /// Not as recommended: the host is not tuned for the datapath cores.
    #[serde(rename = "misconfigured")]
    Misconfigured,
    /// This kernel or machine does not have the knob.
    #[serde(rename = "not present")]
    NotPresent,
    /// The driver refuses the setting (e.g. coalescing on veth).
    #[serde(rename = "unsupported")]
    Unsupported,
    /// The value cannot be read (e.g. debugfs not mounted).
    #[serde(rename = "unknown")]
    Unknown,
    /// Reported for the record; there is no single right value.
    #[serde(rename = "info")]
    Info,
}

impl Status {
    /// The label used in tables and JSON.
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Misconfigured => "misconfigured",
            Status::NotPresent => "not present",
            Status::Unsupported => "unsupported",
            Status::Unknown => "unknown",
            Status::Info => "info",
        }
    }
}

/// When a change takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Changeable at runtime, and `detpath tune apply` does it.
    Runtime,
    /// Changeable at runtime, but by hand (`how` says the command): stopping a
    /// service, offlining a CPU, or holding a file open.
    Manual,
    /// Needs the kernel command line (`cmdline`) and a reboot, or another kernel.
    Reboot,
}

/// How a value is written back to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueFormat {
    /// The file reads back what was written: restore writes the old bytes as they were.
    Plain,
    /// The file lists the choices with the current one in brackets
    /// (`always [madvise] never`): restore writes the bracketed word.
    Selection,
    /// As `Selection` with parentheses (`none voluntary (full)`).
    Parens,
}

/// What a runtime change writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A /proc or /sys file, as a path on the host (resolved under the [`Host`] root).
    File {
        /// Host path, e.g. `/proc/sys/vm/swappiness`.
        path: String,
        /// How the old value is written back.
        format: ValueFormat,
    },
    /// The runtime core isolation ([`crate::shield`]): the housekeeping
    /// cores of the cpuset that holds every user process, or `none`.
    Shield {
        /// Mount point of the cgroup v1 cpuset hierarchy.
        cpuset_root: String,
    },
    /// The same on the unified hierarchy ([`crate::shield::v2`]): limited
    /// top-level cgroups, a housekeeping cgroup and an isolated partition.
    /// Its raw value is a snapshot of all it touches (JSON), so one journal
    /// entry restores everything.
    ShieldV2 {
        /// Mount point of the cgroup v2 hierarchy.
        cgroup_root: String,
    },
    /// A NIC setting through ethtool.
    Nic {
        /// Interface name.
        iface: String,
        /// The setting.
        setting: NicSetting,
    },
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::File { path, .. } => f.write_str(path),
            Target::Nic { iface, setting } => write!(f, "ethtool {iface} {setting}"),
            Target::Shield { cpuset_root } => write!(f, "{cpuset_root}/{}", crate::shield::SHIELD_DIR),
            Target::ShieldV2 { cgroup_root } => write!(f, "{cgroup_root}/{} (cgroup v2 partition)", crate::shield::v2::DATAPATH_DIR),
        }
    }
}

/// The change `detpath tune apply` makes for a misconfigured runtime knob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// Where the value goes.
    pub target: Target,
    /// The value written.
    pub value: String,
    /// The kernel may refuse this change for reasons that do not make the
    /// tuning wrong (EIO on per-CPU or managed IRQs): the change is then
    /// reported as skipped instead of failing the whole apply.
    pub may_refuse: bool,
}

/// One tuning knob as the audit found it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Knob {
    /// Stable name, sysctl-style where there is one (`kernel.timer_migration`, `irq.41.affinity`).
    pub name: String,
    /// The current value, `not present` when the machine lacks the knob.
    pub current: String,
    /// The recommended value for latency.
    pub recommended: String,
    /// Why it matters for worst-case latency.
    pub why: String,
    /// Runtime, manual or reboot.
    pub change: ChangeKind,
    /// How to change it by hand.
    pub how: String,
    /// For reboot knobs: the exact kernel command line parameter to add.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cmdline: Option<String>,
    /// How the current value compares with the recommendation.
    pub status: Status,
    /// The change `apply` makes, for misconfigured runtime knobs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fix: Option<Fix>,
    /// Where `apply` writes this knob, for every runtime knob the machine has
    /// (whatever its status): what a saved profile ([`crate::profile`]) records.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target: Option<Target>,
    /// Set when the recommended value is computed from this host (its
    /// housekeeping cores, its maximum frequency) rather than fixed: a saved
    /// profile re-derives such a value on the host it is applied to. Says from what.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub derived: Option<String>,
}

impl Knob {
    fn new(name: impl Into<String>, why: impl Into<String>) -> Self {
        Knob {
            name: name.into(),
            current: "not present".into(),
            recommended: String::new(),
            why: why.into(),
            change: ChangeKind::Runtime,
            how: String::new(),
            cmdline: None,
            status: Status::NotPresent,
            fix: None,
            target: None,
            derived: None,
        }
    }
}

/// Normalises a raw value read from a target: trimmed, and the selected word
/// for selection files.
pub fn normalize(raw: &str, format: ValueFormat) -> String {
    let t = raw.trim();
    let (open, close) = match format {
        ValueFormat::Plain => return t.to_string(),
        ValueFormat::Selection => ('[', ']'),
        ValueFormat::Parens => ('(', ')'),
    };
    match (t.find(open), t.find(close)) {
        (Some(a), Some(b)) if b > a => t[a + 1..b].to_string(),
        _ => t.to_string(),
    }
}

/// What the audit checks.
#[derive(Clone, Debug, Default)]
pub struct AuditRequest {
    /// The datapath cores (`None`: [`Host::default_cores`]).
    pub cores: Option<CpuList>,
    /// The datapath's network interface, for the NIC knobs.
    pub iface: Option<String>,
}

/// Audits every knob for the given datapath cores and interface.
///
/// Errors only for bad input (a core that is not online, an interface that
/// does not exist); a knob this machine lacks is reported as
/// [`Status::NotPresent`]. Reads only; needs root for a few files
/// (/dev/cpu_dma_latency, some debugfs files), which are `unknown` otherwise.
pub fn audit(host: &Host, req: &AuditRequest) -> Result<Vec<Knob>, TuneError> {
    let cores = req.cores.clone().unwrap_or_else(|| host.default_cores());
    host.validate_cores(&cores)?;
    if let Some(i) = &req.iface {
        host.validate_iface(i)?;
    }
    let housekeeping = host.online_cpus().difference(&cores);
    let mut a = Audit { host, cores, housekeeping, knobs: Vec::new() };
    a.isolation();
    a.irqs();
    a.workqueues();
    a.irqbalance();
    if let Some(i) = &req.iface {
        a.nic(i);
    }
    a.cpufreq();
    a.cpuidle();
    a.smt();
    a.sysctls();
    a.thp();
    a.swap();
    a.preempt();
    a.clocksource();
    Ok(a.knobs)
}

/// Whether no knob is misconfigured (the audit's exit code 0).
pub fn is_tuned(knobs: &[Knob]) -> bool {
    knobs.iter().all(|k| k.status != Status::Misconfigured)
}

/// One line for benchmark reports: counts per status and the misconfigured names.
pub fn audit_summary(knobs: &[Knob]) -> String {
    let count = |s| knobs.iter().filter(|k| k.status == s).count();
    let bad: Vec<&str> = knobs.iter().filter(|k| k.status == Status::Misconfigured).map(|k| k.name.as_str()).collect();
    let mut s = format!(
        "tuning audit: {} ok, {} misconfigured, {} not present/unsupported, {} unknown",
        count(Status::Ok),
        bad.len(),
        count(Status::NotPresent) + count(Status::Unsupported),
        count(Status::Unknown)
    );
    if !bad.is_empty() {
        let shown: Vec<&str> = bad.iter().take(8).copied().collect();
        s.push_str(&format!(" ({}{})", shown.join(", "), if bad.len() > 8 { ", ..." } else { "" }));
    }
    s
}

struct Audit<'a> {
    host: &'a Host,
    cores: CpuList,
    housekeeping: CpuList,
    knobs: Vec<Knob>,
}

/// [`Knob::derived`]: the value is this host's housekeeping cores (online minus datapath).
pub const HOUSEKEEPING: &str = "housekeeping cores";
/// [`Knob::derived`]: the value is any CPU list that leaves out the datapath cores.
pub const OFF_DATAPATH: &str = "off the datapath cores";
/// [`Knob::derived`]: the value is the core's `cpuinfo_max_freq`.
pub const MAX_FREQ: &str = "cpuinfo_max_freq";

fn ok_if(b: bool) -> Status {
    if b {
        Status::Ok
    } else {
        Status::Misconfigured
    }
}

fn sysctl_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

impl Audit<'_> {
    /// A runtime knob held in one file. `ok` judges the normalised value;
    /// `set` is written when it is not ok.
    fn file(&mut self, name: &str, abs: &str, format: ValueFormat, recommended: &str, ok: impl Fn(&str) -> bool, set: &str, why: &str) {
        let mut k = Knob::new(name, why);
        k.recommended = recommended.into();
        k.how = format!("echo {set} > {abs}");
        match self.host.read_opt(abs) {
            Ok(Some(raw)) => {
                let v = normalize(&raw, format);
                k.target = Some(Target::File { path: abs.into(), format });
                k.current = v.clone();
                k.status = ok_if(ok(&v));
                if k.status == Status::Misconfigured {
                    k.fix = Some(Fix { target: Target::File { path: abs.into(), format }, value: set.into(), may_refuse: false });
                }
            }
            Ok(None) => {}
            Err(e) => {
                k.current = format!("unreadable: {e}");
                k.status = Status::Unknown;
            }
        }
        self.knobs.push(k);
    }

    fn sysctl(&mut self, key: &str, recommended: &str, ok: impl Fn(i64) -> bool, set: &str, why: &str) {
        let abs = sysctl_path(key);
        self.file(key, &abs, ValueFormat::Plain, recommended, |v| v.parse::<i64>().map(&ok).unwrap_or(false), set, why);
        if let Some(k) = self.knobs.last_mut() {
            k.how = format!("sysctl -w {key}={set}");
        }
    }

    fn reboot(&mut self, name: &str, current: String, status: Status, param: String, why: &str) {
        let mut k = Knob::new(name, why);
        k.current = current;
        k.status = status;
        k.change = ChangeKind::Reboot;
        k.recommended = format!("contains {}", self.cores);
        k.how = format!("add `{param}` to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub) and reboot");
        k.cmdline = Some(param);
        self.knobs.push(k);
    }

    fn isolation(&mut self) {
        let h = self.host;
        let c = self.cores.clone();
        let iso = h.isolated_cpus();
        let cmd = h.cmdline_param("isolcpus").unwrap_or_else(|| "(none)".into());
        self.reboot(
            "isolcpus",
            format!("{} (isolated: {})", cmd, if iso.is_empty() { "none".into() } else { iso.to_string() }),
            ok_if(iso.is_superset(&c)),
            format!("isolcpus=managed_irq,domain,{c}"),
            "keeps the scheduler and unbound kernel work off the datapath cores, so nothing preempts the polling thread",
        );
        match h.read_trim("/sys/devices/system/cpu/nohz_full") {
            Some(v) => {
                let set = CpuList::parse(&v).unwrap_or_default();
                self.reboot(
                    "nohz_full",
                    if v.is_empty() || v == "(null)" { "none".into() } else { v },
                    ok_if(set.is_superset(&c)),
                    format!("nohz_full={c}"),
                    "stops the periodic scheduler tick on a core running one task (up to 1000 interrupts/s otherwise)",
                );
            }
            None => {
                self.reboot(
                    "nohz_full",
                    "not present (kernel built without CONFIG_NO_HZ_FULL)".into(),
                    Status::NotPresent,
                    format!("nohz_full={c}"),
                    "stops the periodic scheduler tick on a core running one task (needs CONFIG_NO_HZ_FULL)",
                );
            }
        }
        self.shield(&iso);
        let nocb = h.cmdline_param("rcu_nocbs").or_else(|| h.cmdline_param("nohz_full")).map(|v| CpuList::parse(v.trim_start_matches('=')).unwrap_or_default());
        self.reboot(
            "rcu_nocbs",
            nocb.as_ref().map(|n| n.to_string()).unwrap_or_else(|| "(none)".into()),
            ok_if(nocb.map(|n| n.is_superset(&c)).unwrap_or(false)),
            format!("rcu_nocbs={c}"),
            "moves RCU callbacks off the datapath cores into kthreads on housekeeping cores",
        );
    }

    /// Runtime isolation of the datapath cores ([`crate::shield`]), unless isolcpus already does it.
    fn shield(&mut self, isolated: &CpuList) {
        let mut k = Knob::new(
            "cpuset.shield",
            "without isolcpus any process (a shell's grep, a build, a stress worker) may run on a datapath core, and the kernel's fair server gives it up to 50 ms a second above the SCHED_FIFO polling thread",
        );
        let hk = self.housekeeping.to_string();
        k.recommended = format!("every user process on {hk}");
        if isolated.is_superset(&self.cores) {
            k.current = format!("isolcpus={isolated}");
            k.recommended = "isolcpus, or a cpuset".into();
            k.status = Status::Ok;
        } else if let Some(root) = crate::shield::cpuset_v1_root(self.host) {
            let now = crate::shield::read(self.host, &root);
            k.how = format!(
                "mkdir {root}/{0}; echo {hk} > {root}/{0}/cpuset.cpus; move each pid of {root}/cgroup.procs into it (detpath tune apply does)",
                crate::shield::SHIELD_DIR
            );
            k.status = ok_if(now == hk);
            k.target = Some(Target::Shield { cpuset_root: root.clone() });
            k.derived = Some(HOUSEKEEPING.into());
            k.current = if now == crate::shield::NO_SHIELD { "none (user processes may run on every core)".into() } else { format!("user processes on {now}") };
            if k.status == Status::Misconfigured {
                k.fix = Some(Fix { target: Target::Shield { cpuset_root: root }, value: hk, may_refuse: false });
            }
        } else if let Some(root) = crate::shield::v2::root(self.host) {
            let problems = crate::shield::v2::problems(self.host, &root, &self.housekeeping, &self.cores);
            k.how = format!(
                "echo +cpuset > {root}/cgroup.subtree_control; echo {hk} > each {root}/*.slice/cpuset.cpus; mkdir {root}/{0}, echo {1} > its cpuset.cpus, echo isolated > its cpuset.cpus.partition (detpath tune apply does, and moves the root's processes to {root}/{2})",
                crate::shield::v2::DATAPATH_DIR,
                self.cores,
                crate::shield::SHIELD_DIR
            );
            k.status = ok_if(problems.is_empty());
            k.target = Some(Target::ShieldV2 { cgroup_root: root.clone() });
            k.derived = Some(HOUSEKEEPING.into());
            k.current = if problems.is_empty() {
                format!("user processes on {hk}, partition {} on {} (cgroup v2)", crate::shield::v2::DATAPATH_DIR, self.cores)
            } else {
                format!("not isolated (cgroup v2): {}", problems.join("; "))
            };
            if k.status == Status::Misconfigured {
                k.fix = Some(Fix { target: Target::ShieldV2 { cgroup_root: root }, value: hk, may_refuse: false });
            }
        } else {
            k.current = "not present (no cpuset controller: neither a cgroup v1 cpuset mount nor cpuset in the cgroup v2 root's cgroup.controllers)".into();
            k.how = format!("boot with isolcpus={}", self.cores);
        }
        self.knobs.push(k);
    }

    /// Unbound workqueues (kworker/uN:M) run where this mask allows.
    fn workqueues(&mut self) {
        let hk = self.housekeeping.to_mask();
        let cores = self.cores.clone();
        self.file(
            "workqueue.cpumask",
            "/sys/devices/virtual/workqueue/cpumask",
            ValueFormat::Plain,
            &format!("{hk} (housekeeping cores)"),
            move |v| CpuList::parse_mask(v).is_ok_and(|m| !m.intersects(&cores)),
            &hk,
            "unbound kernel work (kworker/u*: writeback, crypto, RCU-deferred frees) may run on any core in this mask, the datapath's included",
        );
        self.derive_last(HOUSEKEEPING);
    }

    /// Marks the knob just added as host-relative (when it is present).
    fn derive_last(&mut self, from: &str) {
        if let Some(k) = self.knobs.last_mut().filter(|k| k.target.is_some()) {
            k.derived = Some(from.into());
        }
    }

    fn irqs(&mut self) {
        let h = self.host;
        let online = h.online_cpus();
        for crate::host::Irq { number: irq, actions, affinity_list: abs } in h.irqs() {
            let dev = if actions.is_empty() { "no handler".to_string() } else { actions.join(",") };
            let mut k =
                Knob::new(format!("irq.{irq}.affinity"), format!("IRQ {irq} ({dev}) interrupts whatever core it is routed to; keep it off the datapath cores"));
            k.how = format!("echo {} > {abs}", self.housekeeping);
            match h.read_trim(&abs).map(|s| (CpuList::parse(&s), s)) {
                Some((Ok(aff), raw)) => {
                    k.current = raw;
                    k.target = Some(Target::File { path: abs.clone(), format: ValueFormat::Plain });
                    k.derived = Some(OFF_DATAPATH.into());
                    let on_dp = aff.intersects(&self.cores);
                    let rest = aff.difference(&self.cores).intersection(&online);
                    let new = if rest.is_empty() { self.housekeeping.clone() } else { rest };
                    k.recommended = format!("not {}", self.cores);
                    k.status = ok_if(!on_dp);
                    if on_dp && !new.is_empty() {
                        k.recommended = new.to_string();
                        k.how = format!("echo {new} > {abs}");
                        k.fix = Some(Fix { target: Target::File { path: abs, format: ValueFormat::Plain }, value: new.to_string(), may_refuse: true });
                    }
                }
                Some((Err(_), raw)) => {
                    k.current = raw;
                    k.status = Status::Unknown;
                }
                None => {}
            }
            self.knobs.push(k);
        }
        // The affinity new IRQs get.
        let abs = "/proc/irq/default_smp_affinity";
        let mut k = Knob::new("irq.default_affinity", "IRQs registered later (a driver loaded, a device added) start with this mask");
        if let Some(raw) = h.read_trim(abs) {
            k.current = raw.clone();
            k.target = Some(Target::File { path: abs.into(), format: ValueFormat::Plain });
            k.derived = Some(HOUSEKEEPING.into());
            let aff = CpuList::parse_mask(&raw).unwrap_or_default();
            let rest = aff.difference(&self.cores);
            let new = if rest.is_empty() { self.housekeeping.clone() } else { rest };
            k.recommended = format!("{} (mask {})", new, new.to_mask());
            k.how = format!("echo {} > {abs}", new.to_mask());
            k.status = ok_if(!aff.intersects(&self.cores));
            if k.status == Status::Misconfigured && !new.is_empty() {
                k.fix = Some(Fix { target: Target::File { path: abs.into(), format: ValueFormat::Plain }, value: new.to_mask(), may_refuse: false });
            }
        }
        self.knobs.push(k);
    }

    fn irqbalance(&mut self) {
        let h = self.host;
        let pids: Vec<String> = h
            .list_dir("/proc")
            .into_iter()
            .filter(|p| p.chars().all(|c| c.is_ascii_digit()))
            .filter(|p| h.read_trim(&format!("/proc/{p}/comm")).as_deref() == Some("irqbalance"))
            .collect();
        let mut k = Knob::new("irqbalance", "irqbalance rewrites IRQ affinities every 10 s and would move IRQs back onto the datapath cores");
        k.change = ChangeKind::Manual;
        k.recommended = "not running".into();
        k.how = "systemctl stop irqbalance (or IRQBALANCE_BANNED_CPULIST=<cores> in /etc/default/irqbalance)".into();
        if pids.is_empty() {
            k.current = "not running".into();
            k.status = Status::Ok;
        } else {
            k.current = format!("running (pid {})", pids.join(","));
            k.status = Status::Misconfigured;
        }
        self.knobs.push(k);
    }

    fn nic(&mut self, iface: &str) {
        let nic = self.host.nic();
        let setting = |s: NicSetting, want: u32, rec: &str, why: &str, how: String| {
            let mut k = Knob::new(format!("nic.{iface}.{s}"), why);
            k.recommended = rec.into();
            k.how = how;
            match nic.get(iface, s) {
                Ok(v) => {
                    k.target = Some(Target::Nic { iface: iface.into(), setting: s });
                    k.current = match s {
                        NicSetting::Gro | NicSetting::Lro | NicSetting::AdaptiveRx | NicSetting::AdaptiveTx => if v != 0 { "on" } else { "off" }.into(),
                        _ => v.to_string(),
                    };
                    k.status = ok_if(v == want);
                    if v != want {
                        k.fix = Some(Fix { target: Target::Nic { iface: iface.into(), setting: s }, value: want.to_string(), may_refuse: false });
                    }
                }
                Err(e) if is_unsupported(&e) => {
                    k.current = "unsupported by the driver".into();
                    k.status = Status::Unsupported;
                }
                Err(e) => {
                    k.current = format!("unreadable: {e}");
                    k.status = Status::Unknown;
                }
            }
            k
        };
        let co = "interrupt coalescing holds packets back to batch interrupts: each packet may wait up to this long";
        let ks = [
            setting(NicSetting::RxUsecs, 0, "0", co, format!("ethtool -C {iface} rx-usecs 0")),
            setting(NicSetting::TxUsecs, 0, "0", co, format!("ethtool -C {iface} tx-usecs 0")),
            setting(
                NicSetting::AdaptiveRx,
                0,
                "off",
                "adaptive coalescing raises the delay under load, which is when it hurts",
                format!("ethtool -C {iface} adaptive-rx off"),
            ),
            setting(
                NicSetting::AdaptiveTx,
                0,
                "off",
                "adaptive coalescing raises the delay under load, which is when it hurts",
                format!("ethtool -C {iface} adaptive-tx off"),
            ),
            setting(
                NicSetting::Gro,
                0,
                "off",
                "GRO merges packets of a flow in the receive path: extra work and holding per packet",
                format!("ethtool -K {iface} gro off"),
            ),
            setting(NicSetting::Lro, 0, "off", "LRO makes the NIC hold and merge packets before delivering them", format!("ethtool -K {iface} lro off")),
        ];
        self.knobs.extend(ks);
        // Ring sizes: reported, not changed (small rings bound queueing, large rings avoid drops).
        let mut k =
            Knob::new(format!("nic.{iface}.rings"), "ring size bounds how many packets can queue ahead of one; shrink it only if queueing delay shows up");
        k.status = Status::Info;
        k.change = ChangeKind::Manual;
        k.recommended = "driver default".into();
        k.how = format!("ethtool -G {iface} rx N tx N");
        let g = |s| nic.get(iface, s);
        match (g(NicSetting::RxRing), g(NicSetting::TxRing)) {
            (Ok(rx), Ok(tx)) => {
                let mx = |s| g(s).map(|v| v.to_string()).unwrap_or_else(|_| "?".into());
                k.current = format!("rx {rx} tx {tx} (max {}/{})", mx(NicSetting::RxRingMax), mx(NicSetting::TxRingMax));
            }
            (Err(e), _) | (_, Err(e)) if is_unsupported(&e) => {
                k.current = "unsupported by the driver".into();
                k.status = Status::Unsupported;
            }
            (Err(e), _) | (_, Err(e)) => {
                k.current = format!("unreadable: {e}");
                k.status = Status::Unknown;
            }
        }
        self.knobs.push(k);
        self.file(
            &format!("nic.{iface}.gro_flush_timeout"),
            &format!("/sys/class/net/{iface}/gro_flush_timeout"),
            ValueFormat::Plain,
            "0",
            |v| v == "0",
            "0",
            "a non-zero timeout keeps GRO packets and defers the IRQ re-arm (right for busy-poll-preferred mode, wrong for interrupt-driven ping-pong)",
        );
        self.file(
            &format!("nic.{iface}.napi_defer_hard_irqs"),
            &format!("/sys/class/net/{iface}/napi_defer_hard_irqs"),
            ValueFormat::Plain,
            "0",
            |v| v == "0",
            "0",
            "deferring hard IRQs delays the first packet after an idle period",
        );
    }

    fn cpufreq(&mut self) {
        let h = self.host;
        let mut any = false;
        for c in self.cores.clone().iter() {
            let base = format!("/sys/devices/system/cpu/cpu{c}/cpufreq");
            if !h.exists(&base) {
                continue;
            }
            any = true;
            let avail = h.read_trim(&format!("{base}/scaling_available_governors")).unwrap_or_default();
            if avail.is_empty() || avail.split_whitespace().any(|g| g == "performance") {
                self.file(
                    &format!("cpu{c}.governor"),
                    &format!("{base}/scaling_governor"),
                    ValueFormat::Plain,
                    "performance",
                    |v| v == "performance",
                    "performance",
                    "a power-saving governor lowers the clock when the core looks idle; the next packet then runs slow",
                );
            }
            if let Some(max) = h.read_trim(&format!("{base}/cpuinfo_max_freq")) {
                let m = max.clone();
                self.file(
                    &format!("cpu{c}.max_freq"),
                    &format!("{base}/scaling_max_freq"),
                    ValueFormat::Plain,
                    &format!("{max} (cpuinfo_max_freq)"),
                    move |v| v == m,
                    &max,
                    "a capped maximum frequency slows every packet",
                );
                self.derive_last(MAX_FREQ);
                let m = max.clone();
                self.file(
                    &format!("cpu{c}.min_freq"),
                    &format!("{base}/scaling_min_freq"),
                    ValueFormat::Plain,
                    &format!("{max} (cpuinfo_max_freq)"),
                    move |v| v == m,
                    &max,
                    "with min below max the core can clock down between packets and ramp up late",
                );
                self.derive_last(MAX_FREQ);
            }
        }
        if !any {
            let mut k = Knob::new("cpufreq", "frequency scaling of the datapath cores (governor, min/max frequency)");
            k.current = "not present (no cpufreq driver)".into();
            k.recommended = "performance governor, min = max".into();
            self.knobs.push(k);
        }
        let why = "turbo makes the clock depend on the load and temperature of the other cores: latency varies with them";
        if h.exists("/sys/devices/system/cpu/intel_pstate/no_turbo") {
            self.file("turbo", "/sys/devices/system/cpu/intel_pstate/no_turbo", ValueFormat::Plain, "1 (no_turbo)", |v| v == "1", "1", why);
        } else if h.exists("/sys/devices/system/cpu/cpufreq/boost") {
            self.file("turbo", "/sys/devices/system/cpu/cpufreq/boost", ValueFormat::Plain, "0 (boost off)", |v| v == "0", "0", why);
        } else {
            let mut k = Knob::new("turbo", why);
            k.recommended = "off".into();
            self.knobs.push(k);
        }
    }

    fn cpuidle(&mut self) {
        let h = self.host;
        let mut all_deep_disabled = true;
        let mut any_state = false;
        for c in self.cores.clone().iter() {
            let base = format!("/sys/devices/system/cpu/cpu{c}/cpuidle");
            for st in h.list_dir(&base).into_iter().filter(|s| s.starts_with("state")) {
                let sb = format!("{base}/{st}");
                let lat: u64 = h.read_trim(&format!("{sb}/latency")).and_then(|v| v.parse().ok()).unwrap_or(0);
                if lat == 0 {
                    continue; // POLL: not a sleep state
                }
                any_state = true;
                let name = h.read_trim(&format!("{sb}/name")).unwrap_or_default();
                self.file(
                    &format!("cpu{c}.cpuidle.{st}.disable"),
                    &format!("{sb}/disable"),
                    ValueFormat::Plain,
                    "1",
                    |v| v == "1",
                    "1",
                    &format!("idle state {name} costs up to {lat} us to wake from; the packet that ends the idle period pays it"),
                );
                if self.knobs.last().map(|k| k.status != Status::Ok).unwrap_or(true) {
                    all_deep_disabled = false;
                }
            }
        }
        if !any_state {
            let mut k = Knob::new("cpuidle", "sleep states of the datapath cores");
            k.current = "not present (no cpuidle states with exit latency)".into();
            k.recommended = "deep states disabled".into();
            self.knobs.push(k);
        }
        // PM QoS: the system-wide C-state limit, held while a process keeps the device open.
        let mut k =
            Knob::new("cpu_dma_latency", "PM QoS limit on C-state exit latency for all cores; only holds while a process keeps /dev/cpu_dma_latency open");
        k.change = ChangeKind::Manual;
        k.recommended = "0 while the datapath runs".into();
        k.how = "detpath tune hold --latency-us 0 (the endpoint's real-time setup holds it too)".into();
        match std::fs::read(h.path("/dev/cpu_dma_latency")) {
            Ok(b) if b.len() >= 4 => {
                let v = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
                let held = v <= 10;
                if held {
                    k.current = format!("{v} us (held)");
                    k.status = Status::Ok;
                } else if !any_state || all_deep_disabled {
                    k.current = format!("{v} us (not held; no deep C-state enabled on the datapath cores)");
                    k.status = Status::Ok;
                } else {
                    k.current = format!("{v} us (not held)");
                    k.status = Status::Misconfigured;
                }
            }
            Ok(_) => {
                k.current = "unreadable (short read)".into();
                k.status = Status::Unknown;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                k.current = format!("unreadable: {e}");
                k.status = Status::Unknown;
            }
        }
        self.knobs.push(k);
    }

    fn smt(&mut self) {
        let h = self.host;
        let online = h.online_cpus();
        for c in self.cores.clone().iter() {
            let abs = format!("/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list");
            let mut k =
                Knob::new(format!("cpu{c}.smt_siblings"), "an SMT sibling shares the core's pipeline and caches: whatever runs there slows the datapath");
            k.change = ChangeKind::Manual;
            k.recommended = format!("{c} alone (siblings offline or idle)");
            if let Some(v) = h.read_trim(&abs) {
                let sib = CpuList::parse(&v).unwrap_or_default().difference(&CpuList::from_cpus([c]));
                let busy = sib.intersection(&online);
                k.current = v;
                k.status = ok_if(busy.is_empty());
                k.how = if busy.is_empty() {
                    "nothing to do".into()
                } else {
                    busy.iter().map(|s| format!("echo 0 > /sys/devices/system/cpu/cpu{s}/online")).collect::<Vec<_>>().join("; ")
                };
            }
            self.knobs.push(k);
        }
        let mut k = Knob::new("smt.control", "SMT doubles the jitter sources per physical core");
        k.change = ChangeKind::Manual;
        k.recommended = "off or notsupported".into();
        k.how = "echo off > /sys/devices/system/cpu/smt/control (or `nosmt` on the kernel command line)".into();
        if let Some(v) = h.read_trim("/sys/devices/system/cpu/smt/control") {
            let active = h.read_trim("/sys/devices/system/cpu/smt/active").unwrap_or_default();
            k.status = ok_if(v != "on" || active == "0");
            k.current = if active.is_empty() { v } else { format!("{v} (active {active})") };
        }
        self.knobs.push(k);
    }

    fn sysctls(&mut self) {
        self.sysctl(
            "kernel.sched_rt_runtime_us",
            "-1",
            |v| v == -1,
            "-1",
            "RT throttling stops every SCHED_FIFO thread for 50 ms each second once it has run 950 ms: a busy-polling datapath hits it",
        );
        self.sysctl(
            "kernel.timer_migration",
            "0",
            |v| v == 0,
            "0",
            "with migration on, timers of idle housekeeping cores move onto busy cores, the datapath's included",
        );
        self.sysctl("kernel.watchdog", "0", |v| v == 0, "0", "the soft-lockup watchdog runs an hrtimer and a kthread on every core");
        self.sysctl("kernel.nmi_watchdog", "0", |v| v == 0, "0", "the NMI watchdog fires a perf NMI on every core periodically");
        self.sysctl("vm.stat_interval", ">= 10", |v| v >= 10, "10", "the vmstat worker runs on every core each interval (seconds) to fold per-CPU counters");
        self.sysctl(
            "vm.swappiness",
            "<= 10",
            |v| v <= 10,
            "10",
            "a high swappiness swaps out anonymous memory; a page fault on swapped memory costs milliseconds",
        );
        self.sysctl(
            "net.core.busy_poll",
            ">= 50",
            |v| v >= 50,
            "50",
            "microseconds poll()/select() busy-poll the device queue instead of sleeping until the IRQ (kernel sockets)",
        );
        self.sysctl(
            "net.core.busy_read",
            ">= 50",
            |v| v >= 50,
            "50",
            "microseconds a blocking read busy-polls the device queue instead of sleeping (kernel sockets)",
        );
    }

    fn thp(&mut self) {
        let why = "khugepaged and THP compaction stall the faulting thread or scan memory in the background";
        self.file("thp.enabled", "/sys/kernel/mm/transparent_hugepage/enabled", ValueFormat::Selection, "never", |v| v == "never", "never", why);
        self.file("thp.defrag", "/sys/kernel/mm/transparent_hugepage/defrag", ValueFormat::Selection, "never", |v| v == "never", "never", why);
    }

    fn swap(&mut self) {
        let mut k = Knob::new("swap", "a page of the datapath swapped out costs a disk read when touched (lock_memory avoids it for the endpoint)");
        k.change = ChangeKind::Manual;
        k.recommended = "no active swap".into();
        k.how = "swapoff -a".into();
        if let Some(s) = self.host.read_trim("/proc/swaps") {
            let devs: Vec<&str> = s.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
            k.status = ok_if(devs.is_empty());
            k.current = if devs.is_empty() { "none".into() } else { devs.join(",") };
        }
        self.knobs.push(k);
    }

    fn preempt(&mut self) {
        let h = self.host;
        let why = "the preemption model bounds how long a kernel code path can delay a woken real-time thread";
        let abs = "/sys/kernel/debug/sched/preempt";
        if h.read_opt(abs).ok().flatten().is_some() {
            self.file("preempt", abs, ValueFormat::Parens, "full", |v| v == "full", "full", why);
            if let Some(k) = self.knobs.last_mut() {
                k.cmdline = Some("preempt=full".into());
            }
            return;
        }
        let mut k = Knob::new("preempt", why);
        k.recommended = "full or PREEMPT_RT".into();
        k.change = ChangeKind::Reboot;
        k.cmdline = Some("preempt=full".into());
        let version = h.read_trim("/proc/sys/kernel/version").unwrap_or_default();
        let param = h.cmdline_param("preempt");
        if version.contains("PREEMPT_RT") {
            k.current = "rt (PREEMPT_RT)".into();
            k.status = Status::Ok;
        } else if version.contains("PREEMPT_DYNAMIC") {
            match param.as_deref() {
                Some(p) => {
                    k.current = format!("{p} (dynamic, preempt={p})");
                    k.status = ok_if(p == "full");
                }
                None => {
                    k.current = "dynamic, mode not readable (mount debugfs to see it)".into();
                    k.status = Status::Unknown;
                }
            }
            k.how = "add `preempt=full` to the kernel command line, or at runtime: mount -t debugfs none /sys/kernel/debug; echo full > /sys/kernel/debug/sched/preempt".into();
        } else if version.split_whitespace().any(|w| w == "PREEMPT") {
            k.current = "full (PREEMPT)".into();
            k.status = Status::Ok;
        } else if version.is_empty() {
            k.current = "not present".into();
            k.status = Status::NotPresent;
        } else {
            k.current = "none or voluntary".into();
            k.status = Status::Misconfigured;
            k.how = "boot a kernel built with CONFIG_PREEMPT or CONFIG_PREEMPT_RT (Debian: linux-image-rt-amd64)".into();
        }
        self.knobs.push(k);
    }

    fn clocksource(&mut self) {
        let h = self.host;
        let avail = h.read_trim("/sys/devices/system/clocksource/clocksource0/available_clocksource").unwrap_or_default();
        let has_tsc = avail.split_whitespace().any(|c| c == "tsc");
        let rec = if has_tsc { "tsc" } else { "" };
        let why = "reading a slow clocksource (hpet, acpi_pm) costs microseconds per timestamp; tsc is read in user space";
        if has_tsc {
            self.file("clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource", ValueFormat::Plain, rec, |v| v == "tsc", "tsc", why);
        } else {
            let mut k = Knob::new("clocksource", why);
            if let Some(cur) = h.read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource") {
                k.current = cur;
                k.status = Status::Info;
            }
            k.recommended = "tsc (not available here)".into();
            self.knobs.push(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_formats() {
        assert_eq!(normalize("always [madvise] never\n", ValueFormat::Selection), "madvise");
        assert_eq!(normalize("none voluntary (full) lazy\n", ValueFormat::Parens), "full");
        assert_eq!(normalize(" 0-1\n", ValueFormat::Plain), "0-1");
        assert_eq!(normalize("garbage", ValueFormat::Selection), "garbage");
    }

    #[test]
    fn json_shape() {
        let mut k = Knob::new("x", "y");
        k.status = Status::NotPresent;
        let v = serde_json::to_value(&k).unwrap();
        assert_eq!(v["status"], "not present");
        assert_eq!(v["change"], "runtime");
        assert!(v.get("fix").is_none());
    }
}

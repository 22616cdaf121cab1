//! Saved tuning profiles: what an apply left in force, written to a file,
//! applied again on this or another host, and verified against a host.
//!
//! The model is tuned/tuned-adm (`tuned-adm profile`, `tuned-adm verify`):
//! a site tunes one device, saves the result, and rolls the same profile out
//! to every device of the cell, checking later that none has drifted.
//!
//! A profile ([`SavedProfile`]) holds the datapath and housekeeping cores, the
//! NIC(s) with their drivers, every runtime knob with the value it had after
//! the apply, and the facts of the host it was saved on (core count, kernel).
//! Knobs come in two kinds:
//!
//! * fixed values (`vm.swappiness = 10`, `nic.eth0.gro = 0`): applied and
//!   compared as recorded;
//! * host-relative values ([`crate::Knob::derived`]: IRQ affinities, the
//!   workqueue mask, the cpuset shield, min/max frequency): recomputed on the
//!   host at hand from the profile's cores, because another host has other
//!   IRQ numbers, more cores or another maximum frequency. IRQs the kernel
//!   refused to move when the profile was saved (per-CPU, managed) are
//!   recorded as refused, and are not drift.
//!
//! Before [`apply_profile`] changes anything it checks the host fits
//! ([`check_fit`]): the profile's cores online, its NICs there with the same
//! driver, every fixed knob present; otherwise it refuses with
//! [`TuneError::ProfileMismatch`] naming each difference.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::apply::{execute, format_of, read_target, AppliedTuning, ApplyRequest, PlannedChange, Profile, Step};
use crate::cpus::CpuList;
use crate::error::TuneError;
use crate::host::Host;
use crate::knobs::{audit, normalize, AuditRequest, ChangeKind, Knob, Status, Target};

/// The profile file format version.
pub const PROFILE_VERSION: u32 = 1;

/// A saved tuning profile (JSON).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SavedProfile {
    /// Format version ([`PROFILE_VERSION`]).
    pub detpath_profile: u32,
    /// The built-in profile the values came from.
    pub profile: Profile,
    /// The detpath version that wrote it.
    pub saved_by: String,
    /// The datapath cores and the housekeeping cores.
    pub cores: Cores,
    /// The NICs tuned (zero or one today).
    pub nics: Vec<NicFact>,
    /// The host the profile was saved on.
    pub host: HostFacts,
    /// Every runtime knob and its value after the apply.
    pub knobs: Vec<ProfileKnob>,
}

/// The cores of a profile.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cores {
    /// Where the datapath runs.
    pub datapath: CpuList,
    /// Where everything else runs (the online cores minus the datapath's).
    pub housekeeping: CpuList,
}

/// A NIC as the profile saw it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NicFact {
    /// Interface name.
    pub name: String,
    /// Driver (`/sys/class/net/IF/device/driver`), `virtual` for a software
    /// device (veth, bridge), `None` when unknown.
    pub driver: Option<String>,
}

/// Facts of the host a profile was saved on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HostFacts {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: String,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: String,
    /// Online CPUs.
    pub online: CpuList,
    /// How many CPUs were online.
    pub cpu_count: usize,
}

/// One knob of a profile.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProfileKnob {
    /// Knob name as the audit names it.
    pub name: String,
    /// Where the value is written.
    pub target: Target,
    /// The value in force after the apply (normalised: the chosen word of a selection file).
    pub value: String,
    /// What a host-relative value is derived from ([`crate::Knob::derived`]); `None` for a fixed value.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub derived: Option<String>,
    /// The kernel refused the change on the saved host (a per-CPU or managed IRQ).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub refused: bool,
}

/// Whether a knob's name is that of one IRQ (`irq.24.affinity`): IRQ numbers belong to one host.
fn is_irq(name: &str) -> bool {
    name.strip_prefix("irq.").and_then(|r| r.split('.').next()).is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

fn nic_fact(host: &Host, name: &str) -> NicFact {
    let link = std::fs::read_link(host.path(&format!("/sys/class/net/{name}"))).ok();
    let driver = std::fs::read_link(host.path(&format!("/sys/class/net/{name}/device/driver")))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .or_else(|| link.filter(|l| l.to_string_lossy().contains("/devices/virtual/")).map(|_| "virtual".to_string()));
    NicFact { name: name.to_string(), driver }
}

fn host_facts(host: &Host) -> HostFacts {
    let online = host.online_cpus();
    HostFacts {
        hostname: host.read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
        kernel: host.read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
        cpu_count: online.len(),
        online,
    }
}

fn audit_for(host: &Host, cores: &CpuList, iface: Option<&str>) -> Result<Vec<Knob>, TuneError> {
    audit(host, &AuditRequest { cores: Some(cores.clone()), iface: iface.map(str::to_string) })
}

impl SavedProfile {
    /// The profile of what is in force now for `req` (call it after the
    /// apply): every runtime knob the host has, with its current value.
    pub fn capture(host: &Host, req: &ApplyRequest) -> Result<SavedProfile, TuneError> {
        let knobs = audit_for(host, &req.cores, req.iface.as_deref())?;
        let mut out = vec![];
        for k in knobs {
            let Some(target) = k.target.clone() else { continue };
            if k.change != ChangeKind::Runtime || matches!(k.status, Status::NotPresent | Status::Unsupported | Status::Unknown) {
                continue;
            }
            let value = match &target {
                // Its raw value is a snapshot for the journal; the profile keeps the cores.
                Target::ShieldV2 { cgroup_root } => crate::shield::v2::read(host, cgroup_root),
                t => normalize(&read_target(host, t)?, format_of(t)),
            };
            // Still fixable after an apply: the kernel refused it (a per-CPU or managed IRQ).
            out.push(ProfileKnob { name: k.name, target, value, derived: k.derived, refused: k.fix.is_some() });
        }
        Ok(SavedProfile {
            detpath_profile: PROFILE_VERSION,
            profile: req.profile,
            saved_by: format!("detpath {}", env!("CARGO_PKG_VERSION")),
            cores: Cores { datapath: req.cores.clone(), housekeeping: host.online_cpus().difference(&req.cores) },
            nics: req.iface.iter().map(|i| nic_fact(host, i)).collect(),
            host: host_facts(host),
            knobs: out,
        })
    }

    /// Writes the profile (JSON) atomically: a reader sees the old file or the new one.
    pub fn save(&self, path: &Path) -> Result<(), TuneError> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| TuneError::ProfileWrite { path: path.into(), source: e.into() })?;
        bytes.push(b'\n');
        detpath_sys::fsutil::write_atomic(path, &bytes).map_err(|source| TuneError::ProfileWrite { path: path.into(), source })
    }

    /// Reads a profile written by [`SavedProfile::save`].
    pub fn load(path: &Path) -> Result<SavedProfile, TuneError> {
        let bad = |reason: String| TuneError::ProfileUnreadable { path: path.into(), reason };
        let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it ({e})")))?;
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON ({e})")))?;
        match v.get("detpath_profile").and_then(|x| x.as_u64()) {
            Some(n) if n == u64::from(PROFILE_VERSION) => {}
            Some(n) => return Err(bad(format!("format version {n}, this detpath reads version {PROFILE_VERSION}"))),
            None => return Err(bad("not a detpath tuning profile (no `detpath_profile` version field)".into())),
        }
        let p: SavedProfile = serde_json::from_value(v).map_err(|e| bad(format!("malformed ({e})")))?;
        if p.cores.datapath.is_empty() {
            return Err(bad("it names no datapath core".into()));
        }
        Ok(p)
    }

    /// The interface the profile tunes, if any.
    pub fn iface(&self) -> Option<&str> {
        self.nics.first().map(|n| n.name.as_str())
    }

    /// The apply request the profile stands for.
    pub fn request(&self, state_dir: impl Into<PathBuf>) -> ApplyRequest {
        ApplyRequest { cores: self.cores.datapath.clone(), iface: self.iface().map(str::to_string), profile: self.profile, state_dir: state_dir.into() }
    }
}

/// The ways this host differs from the profile's so that the profile does
/// not fit (empty: it fits). Reads only.
pub fn check_fit(host: &Host, p: &SavedProfile) -> Vec<String> {
    let mut d = vec![];
    let online = host.online_cpus();
    let need = CpuList::from_cpus(p.cores.datapath.iter().chain(p.cores.housekeeping.iter()));
    let missing = need.difference(&online);
    if !missing.is_empty() {
        d.push(format!(
            "the profile uses CPUs {need} (datapath {}, housekeeping {}), this host has {} CPU(s) online ({online}): CPU(s) {missing} missing",
            p.cores.datapath,
            p.cores.housekeeping,
            online.len()
        ));
    } else if online.difference(&p.cores.datapath).is_empty() {
        d.push(format!("the datapath cores {} leave no housekeeping CPU on this host (online {online})", p.cores.datapath));
    }
    for n in &p.nics {
        if host.validate_iface(&n.name).is_err() {
            d.push(format!("no network interface `{}` here (the profile tunes {} with driver {})", n.name, n.name, n.driver.as_deref().unwrap_or("unknown")));
            continue;
        }
        let here = nic_fact(host, &n.name);
        if let (Some(a), Some(b)) = (&n.driver, &here.driver) {
            if a != b {
                d.push(format!("interface `{}` has driver {b} here, {a} in the profile", n.name));
            }
        }
    }
    if !missing.is_empty() {
        return d;
    }
    let iface = p.iface().filter(|i| host.validate_iface(i).is_ok());
    let knobs = audit_for(host, &p.cores.datapath, iface).unwrap_or_default();
    for k in p.knobs.iter().filter(|k| !is_irq(&k.name) && !k.refused) {
        if p.nics.iter().any(|n| k.name.starts_with(&format!("nic.{}.", n.name)) && host.validate_iface(&n.name).is_err()) {
            continue; // said above
        }
        let here = if k.derived.is_some() {
            // Host-relative: present when this host's audit has the knob (or it is satisfied otherwise, e.g. by isolcpus).
            knobs.iter().any(|a| a.name == k.name && (a.target.is_some() || a.status == Status::Ok))
        } else {
            read_target(host, &k.target).is_ok()
        };
        if !here {
            d.push(format!("knob {} is not present here ({})", k.name, k.target));
        }
    }
    d
}

/// The changes that bring this host to the profile (nothing changed).
///
/// Errors: [`TuneError::ProfileMismatch`] when the host does not fit.
pub fn plan_profile(host: &Host, p: &SavedProfile, path: &Path) -> Result<Vec<PlannedChange>, TuneError> {
    let differences = check_fit(host, p);
    if !differences.is_empty() {
        return Err(TuneError::ProfileMismatch { path: path.into(), differences });
    }
    let knobs = audit_for(host, &p.cores.datapath, p.iface())?;
    let by_name = |n: &str| knobs.iter().find(|k| k.name == n);
    let mut changes = vec![];
    for pk in p.knobs.iter().filter(|k| !is_irq(&k.name) && !k.refused) {
        if pk.derived.is_some() {
            // Host-relative: this host's own recommendation for the profile's cores.
            if let Some(fix) = by_name(&pk.name).and_then(|k| k.fix.clone().map(|f| (k, f))) {
                changes.push(PlannedChange {
                    knob: pk.name.clone(),
                    target: fix.1.target,
                    from: fix.0.current.clone(),
                    to: fix.1.value,
                    may_refuse: fix.1.may_refuse,
                });
            }
            continue;
        }
        let now = normalize(&read_target(host, &pk.target)?, format_of(&pk.target));
        if now != pk.value {
            changes.push(PlannedChange { knob: pk.name.clone(), target: pk.target.clone(), from: now, to: pk.value.clone(), may_refuse: false });
        }
    }
    // Every IRQ of this host off the datapath cores, as the profile's host had them.
    for k in knobs.iter().filter(|k| is_irq(&k.name)) {
        if let Some(f) = &k.fix {
            changes.push(PlannedChange {
                knob: k.name.clone(),
                target: f.target.clone(),
                from: k.current.clone(),
                to: f.value.clone(),
                may_refuse: f.may_refuse,
            });
        }
    }
    Ok(changes)
}

/// Applies a saved profile on this host, journalled as [`crate::apply`] is;
/// checks first that the host fits ([`check_fit`]) and changes nothing when
/// it does not. A second apply changes nothing.
pub fn apply_profile(host: &Host, p: &SavedProfile, path: &Path, state_dir: &Path, progress: &mut dyn FnMut(&Step<'_>)) -> Result<AppliedTuning, TuneError> {
    let changes = plan_profile(host, p, path)?;
    execute(host, &p.request(state_dir), &changes, progress)
}

/// How one knob of the host compares with a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// As the profile says.
    Match,
    /// Not as the profile says: drift.
    Drift,
    /// The host lacks the knob (the profile does not fit).
    NotPresent,
    /// An IRQ the kernel refused to move when the profile was saved: not drift.
    Refused,
}

impl Match {
    /// The label used in tables.
    pub fn label(self) -> &'static str {
        match self {
            Match::Match => "match",
            Match::Drift => "DRIFT",
            Match::NotPresent => "not present",
            Match::Refused => "refused (per-CPU/managed IRQ)",
        }
    }
}

/// One row of a profile verification.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KnobCheck {
    /// Knob name.
    pub knob: String,
    /// What the profile asks for (host-relative knobs: this host's value for the profile's cores).
    pub expected: String,
    /// What the host has.
    pub current: String,
    /// The verdict.
    pub state: Match,
}

/// The result of verifying a host against a profile.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Verification {
    /// Knobs not as the profile says.
    pub drift: usize,
    /// Ways the host does not fit the profile at all ([`check_fit`]).
    pub differences: Vec<String>,
    /// Kernel of the saved host when it differs from this one (a note, not a difference).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kernel_note: Option<String>,
    /// Every knob.
    pub knobs: Vec<KnobCheck>,
}

impl Verification {
    /// Whether the host matches: fits and nothing drifted.
    pub fn matches(&self) -> bool {
        self.drift == 0 && self.differences.is_empty()
    }
}

/// Says, per knob, whether the host still matches the profile. Reads only.
pub fn verify(host: &Host, p: &SavedProfile) -> Result<Verification, TuneError> {
    let differences = check_fit(host, p);
    let here = host_facts(host);
    let kernel_note = (here.kernel != p.host.kernel).then(|| format!("saved on kernel {}, this host runs {}", p.host.kernel, here.kernel));
    let mut rows = vec![];
    if !p.cores.datapath.difference(&host.online_cpus()).is_empty() {
        return Ok(Verification { drift: 0, differences, kernel_note, knobs: rows });
    }
    let iface = p.iface().filter(|i| host.validate_iface(i).is_ok());
    let knobs = audit_for(host, &p.cores.datapath, iface)?;
    let by_name = |n: &str| knobs.iter().find(|k| k.name == n);
    for pk in p.knobs.iter().filter(|k| !is_irq(&k.name)) {
        let row = if pk.derived.is_some() {
            match by_name(&pk.name) {
                Some(k) if k.target.is_some() || k.status == Status::Ok => KnobCheck {
                    knob: pk.name.clone(),
                    expected: format!("{} ({})", k.recommended, pk.derived.as_deref().unwrap_or_default()),
                    current: k.current.clone(),
                    state: if k.status == Status::Ok { Match::Match } else { Match::Drift },
                },
                _ => KnobCheck { knob: pk.name.clone(), expected: pk.value.clone(), current: "not present".into(), state: Match::NotPresent },
            }
        } else {
            match read_target(host, &pk.target) {
                Ok(raw) => {
                    let now = normalize(&raw, format_of(&pk.target));
                    let state = if now == pk.value { Match::Match } else { Match::Drift };
                    KnobCheck { knob: pk.name.clone(), expected: pk.value.clone(), current: now, state }
                }
                Err(_) => KnobCheck { knob: pk.name.clone(), expected: pk.value.clone(), current: "not present".into(), state: Match::NotPresent },
            }
        };
        rows.push(row);
    }
    // IRQs: this host's, each off the datapath cores unless the profile records the kernel refusing it.
    for k in knobs.iter().filter(|k| is_irq(&k.name) && k.target.is_some()) {
        let refused = p.knobs.iter().any(|pk| pk.name == k.name && pk.refused);
        let state = match (k.status, refused) {
            (Status::Ok, _) => Match::Match,
            (_, true) => Match::Refused,
            _ => Match::Drift,
        };
        rows.push(KnobCheck { knob: k.name.clone(), expected: format!("not {}", p.cores.datapath), current: k.current.clone(), state });
    }
    let drift = rows.iter().filter(|r| r.state == Match::Drift).count();
    Ok(Verification { drift, differences, kernel_note, knobs: rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irq_names() {
        assert!(is_irq("irq.24.affinity"));
        assert!(!is_irq("irq.default_affinity"));
        assert!(!is_irq("vm.swappiness"));
    }
}

//! Planning, applying and reverting the runtime knobs, journalled.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::cpus::CpuList;
use crate::error::TuneError;
use crate::host::Host;
use crate::journal::{default_state_dir, Entry, Journal, JournalStore, JOURNAL_VERSION};
use crate::knobs::{audit, normalize, AuditRequest, Target, ValueFormat};

/// A tuning profile: which values `apply` aims for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Lowest worst-case latency on the datapath cores (paper 000, RQ2; Rigtorp's guide).
    #[default]
    Latency,
}

impl FromStr for Profile {
    type Err = TuneError;
    fn from_str(s: &str) -> Result<Self, TuneError> {
        match s {
            "latency" => Ok(Profile::Latency),
            other => Err(TuneError::UnknownProfile(other.to_string())),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("latency")
    }
}

/// What to tune.
#[derive(Clone, Debug)]
pub struct ApplyRequest {
    /// The datapath cores: IRQs move off them, their C-states and governor are set.
    pub cores: CpuList,
    /// The datapath's interface, for the NIC knobs.
    pub iface: Option<String>,
    /// The profile (only `latency`).
    pub profile: Profile,
    /// Where the journal lives ([`default_state_dir`] by default).
    pub state_dir: PathBuf,
}

impl ApplyRequest {
    /// A request for `cores`, no interface, latency profile, default state dir.
    pub fn new(cores: CpuList) -> Self {
        Self { cores, iface: None, profile: Profile::Latency, state_dir: default_state_dir() }
    }
    /// Sets the interface.
    pub fn iface(mut self, iface: impl Into<String>) -> Self {
        self.iface = Some(iface.into());
        self
    }
    /// Sets the state directory.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = dir.into();
        self
    }
}

/// One change in a plan.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlannedChange {
    /// Knob name.
    pub knob: String,
    /// What is written.
    pub target: Target,
    /// The current value (normalised).
    pub from: String,
    /// The value written.
    pub to: String,
    /// May be refused by the kernel without failing the apply (per-CPU IRQs).
    pub may_refuse: bool,
}

impl fmt::Display for PlannedChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} -> {} ({})", self.knob, self.from, self.to, self.target)
    }
}

/// A change the kernel refused where that is expected (IRQs that cannot move).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkippedChange {
    /// The change.
    pub change: PlannedChange,
    /// Why it was not made.
    pub reason: String,
}

/// What happened to one planned change, reported to the progress callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Journalled and made.
    Changed,
    /// Already at the value (nothing journalled).
    Unchanged,
    /// Refused by the kernel in an expected way.
    Skipped(String),
}

/// Progress of an apply: called after each planned change.
#[derive(Clone, Debug)]
pub struct Step<'a> {
    /// 0-based index in the plan.
    pub index: usize,
    /// Plan length.
    pub total: usize,
    /// The change.
    pub change: &'a PlannedChange,
    /// What happened.
    pub outcome: StepOutcome,
}

/// The changes `apply` would make for `req`, without making them.
///
/// Errors: bad cores or interface, no housekeeping core left.
pub fn plan(host: &Host, req: &ApplyRequest) -> Result<Vec<PlannedChange>, TuneError> {
    host.validate_cores(&req.cores)?;
    let online = host.online_cpus();
    if online.difference(&req.cores).is_empty() {
        return Err(TuneError::NoHousekeepingCore { cores: req.cores.clone(), online });
    }
    let knobs = audit(host, &AuditRequest { cores: Some(req.cores.clone()), iface: req.iface.clone() })?;
    Ok(knobs
        .into_iter()
        .filter_map(|k| {
            let fix = k.fix?;
            Some(PlannedChange { knob: k.name, target: fix.target, from: k.current, to: fix.value, may_refuse: fix.may_refuse })
        })
        .collect())
}

/// Reads the raw value of a target.
pub fn read_target(host: &Host, target: &Target) -> Result<String, TuneError> {
    match target {
        Target::File { path, .. } => {
            host.read_opt(path)?.ok_or_else(|| TuneError::io("read", host.path(path), std::io::Error::from(std::io::ErrorKind::NotFound)))
        }
        Target::Shield { cpuset_root } => Ok(crate::shield::read(host, cpuset_root)),
        Target::ShieldV2 { cgroup_root } => Ok(crate::shield::v2::read_state(host, cgroup_root)),
        Target::Nic { iface, setting } => host.nic().get(iface, *setting).map(|v| v.to_string()).map_err(|e| TuneError::Nic {
            op: "read",
            iface: iface.clone(),
            setting: setting.to_string(),
            source: e,
        }),
    }
}

/// Writes a value to a target.
pub fn write_target(host: &Host, target: &Target, value: &str) -> Result<(), TuneError> {
    match target {
        Target::File { path, .. } => host.write(path, value),
        Target::Shield { cpuset_root } => crate::shield::write(host, cpuset_root, value),
        Target::ShieldV2 { cgroup_root } => crate::shield::v2::write(host, cgroup_root, value),
        Target::Nic { iface, setting } => {
            let nic_err = |e| TuneError::Nic { op: "set", iface: iface.clone(), setting: setting.to_string(), source: e };
            let v: u32 =
                value.trim().parse().map_err(|_| nic_err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("`{value}` is not a number"))))?;
            host.nic().set(iface, *setting, v).map_err(nic_err)
        }
    }
}

pub(crate) fn format_of(t: &Target) -> ValueFormat {
    match t {
        Target::File { format, .. } => *format,
        Target::Nic { .. } | Target::Shield { .. } | Target::ShieldV2 { .. } => ValueFormat::Plain,
    }
}

fn restore_value(raw: &str, format: ValueFormat) -> String {
    match format {
        ValueFormat::Plain => raw.to_string(),
        f => normalize(raw, f),
    }
}

fn os_error(e: &TuneError) -> Option<i32> {
    match e {
        TuneError::Io { source, .. } | TuneError::Nic { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

fn is_gone(e: &TuneError) -> bool {
    match e {
        TuneError::Io { source, .. } | TuneError::Nic { source, .. } => {
            source.kind() == std::io::ErrorKind::NotFound || source.raw_os_error() == Some(libc::ENODEV)
        }
        _ => false,
    }
}

/// Applies the plan for `req`: each change is journalled before it is made;
/// if one fails, the ones made before it are rolled back. Returns the applied
/// tuning, which reverts on drop (call [`AppliedTuning::keep`] to leave it).
///
/// Needs root on a real host. Idempotent: values already as recommended are
/// not touched (and not journalled). If a journal from an earlier apply of
/// this boot is pending, its entries stay and the new ones are appended.
///
/// Errors: bad input ([`TuneError::Core`], [`TuneError::NoSuchInterface`], ...),
/// a corrupt journal or one from another boot (nothing changed), or
/// [`TuneError::ApplyFailed`] after a rollback.
pub fn apply(host: &Host, req: &ApplyRequest) -> Result<AppliedTuning, TuneError> {
    apply_with_progress(host, req, &mut |_| {})
}

/// [`apply`], calling `progress` after each planned change.
pub fn apply_with_progress(host: &Host, req: &ApplyRequest, progress: &mut dyn FnMut(&Step<'_>)) -> Result<AppliedTuning, TuneError> {
    let changes = plan(host, req)?;
    execute(host, req, &changes, progress)
}

/// Makes the planned `changes` for `req`, journalled, one at a time (see [`apply`]).
pub(crate) fn execute(host: &Host, req: &ApplyRequest, changes: &[PlannedChange], progress: &mut dyn FnMut(&Step<'_>)) -> Result<AppliedTuning, TuneError> {
    // SAFETY: geteuid has no preconditions.
    if host.root() == Path::new("/") && unsafe { libc::geteuid() } != 0 {
        return Err(TuneError::NeedsRoot);
    }
    let store = JournalStore::new(&req.state_dir);
    let _lock = store.lock()?;
    let mut journal = match store.load(host)? {
        Some(j) => j,
        None => Journal { version: JOURNAL_VERSION, boot_id: host.boot_id()?, root: host.root().to_path_buf(), entries: vec![] },
    };
    let session = format!("{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    let mut applied = AppliedTuning {
        host: host.clone(),
        store: store.clone(),
        session: session.clone(),
        cores: req.cores.clone(),
        changes: vec![],
        skipped: vec![],
        armed: true,
    };
    let total = changes.len();
    for (index, ch) in changes.iter().enumerate() {
        let outcome = match apply_one(host, &store, &mut journal, &session, ch) {
            Ok(o) => o,
            Err(cause) => {
                let made = applied.changes.len();
                applied.armed = false;
                let failures = rollback(host, &store, &mut journal, &session);
                return Err(if failures.is_empty() {
                    TuneError::ApplyFailed { knob: ch.knob.clone(), cause: Box::new(cause), rolled_back: made }
                } else {
                    TuneError::RollbackFailed { knob: ch.knob.clone(), cause: Box::new(cause), failures, journal: store.path() }
                });
            }
        };
        match &outcome {
            StepOutcome::Changed => applied.changes.push(ch.clone()),
            StepOutcome::Skipped(r) => applied.skipped.push(SkippedChange { change: ch.clone(), reason: r.clone() }),
            StepOutcome::Unchanged => {}
        }
        progress(&Step { index, total, change: ch, outcome });
    }
    Ok(applied)
}

fn apply_one(host: &Host, store: &JournalStore, journal: &mut Journal, session: &str, ch: &PlannedChange) -> Result<StepOutcome, TuneError> {
    let format = format_of(&ch.target);
    let raw = read_target(host, &ch.target)?;
    if normalize(&raw, format) == ch.to {
        return Ok(StepOutcome::Unchanged);
    }
    journal.entries.push(Entry {
        session: session.to_string(),
        knob: ch.knob.clone(),
        target: ch.target.clone(),
        old: raw.clone(),
        new: ch.to.clone(),
        restore: restore_value(&raw, format),
    });
    if let Err(e) = store.save(journal) {
        journal.entries.pop();
        return Err(e);
    }
    match write_target(host, &ch.target, &ch.to) {
        Ok(()) => Ok(StepOutcome::Changed),
        Err(e) => {
            // Nothing changed if the value reads as before: drop the entry again.
            let unchanged = read_target(host, &ch.target).map(|now| now == raw).unwrap_or(false);
            if unchanged {
                journal.entries.pop();
                store.save(journal)?;
            }
            // As root, EIO (per-CPU IRQ) and EPERM (kernel-managed IRQ) are the
            // kernel refusing this IRQ, not a permission problem.
            let errno = os_error(&e);
            if unchanged && ch.may_refuse && matches!(errno, Some(libc::EIO) | Some(libc::EPERM)) {
                return Ok(StepOutcome::Skipped(format!(
                    "the kernel refuses to move it ({}): a per-CPU or managed interrupt",
                    std::io::Error::from_raw_os_error(errno.unwrap_or(libc::EIO))
                )));
            }
            Err(e)
        }
    }
}

/// Undoes the entries of one session, last first; returns what failed.
fn rollback(host: &Host, store: &JournalStore, journal: &mut Journal, session: &str) -> Vec<String> {
    let mut failures = vec![];
    let mut i = journal.entries.len();
    while i > 0 {
        i -= 1;
        if journal.entries[i].session != session {
            continue;
        }
        let e = journal.entries[i].clone();
        match write_target(host, &e.target, &e.restore) {
            Ok(()) => {
                journal.entries.remove(i);
            }
            Err(err) if is_gone(&err) => {
                journal.entries.remove(i);
            }
            Err(err) => failures.push(format!("{} ({})", e.knob, err)),
        }
    }
    if let Err(e) = store.save(journal) {
        failures.push(format!("journal ({e})"));
    }
    failures
}

/// What a revert did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RevertReport {
    /// Knobs restored to their journalled value.
    pub restored: Vec<String>,
    /// Knobs whose file or interface no longer exists (a removed veth, a freed IRQ).
    pub gone: Vec<String>,
}

fn revert_entries(host: &Host, store: &JournalStore, only_session: Option<&str>) -> Result<RevertReport, TuneError> {
    let _lock = store.lock()?;
    let Some(mut journal) = store.load(host)? else { return Ok(RevertReport::default()) };
    let mut report = RevertReport::default();
    let mut failures = vec![];
    let mut i = journal.entries.len();
    while i > 0 {
        i -= 1;
        if only_session.is_some_and(|s| journal.entries[i].session != s) {
            continue;
        }
        let e = journal.entries[i].clone();
        match write_target(host, &e.target, &e.restore) {
            Ok(()) => {
                report.restored.push(e.knob);
                journal.entries.remove(i);
            }
            Err(err) if is_gone(&err) => {
                report.gone.push(e.knob);
                journal.entries.remove(i);
            }
            Err(err) => failures.push(format!("{} ({})", e.knob, err)),
        }
        // Keep the journal current after each step, so a crash here loses nothing.
        store.save(&journal)?;
    }
    store.save(&journal)?;
    if !failures.is_empty() {
        return Err(TuneError::RevertIncomplete { failures, journal: store.path() });
    }
    Ok(report)
}

/// Restores everything the journal in `state_dir` records, last change first,
/// also after the applying process was killed. No journal: nothing to do.
///
/// Errors: a corrupt journal or one from another boot (nothing changed; see
/// [`discard_stale_journal`]), or [`TuneError::RevertIncomplete`] listing the
/// entries that could not be restored (they stay in the journal).
pub fn revert(host: &Host, state_dir: &Path) -> Result<RevertReport, TuneError> {
    revert_entries(host, &JournalStore::new(state_dir), None)
}

/// Restores only the changes of one apply session ([`AppliedTuning::session`]),
/// e.g. from a signal handler's thread.
pub fn revert_session(host: &Host, state_dir: &Path, session: &str) -> Result<RevertReport, TuneError> {
    revert_entries(host, &JournalStore::new(state_dir), Some(session))
}

/// Deletes a journal written during another boot (its changes died with that
/// boot). Refuses (returns `Ok(false)`) when the journal is from this boot.
pub fn discard_stale_journal(host: &Host, state_dir: &Path) -> Result<bool, TuneError> {
    let store = JournalStore::new(state_dir);
    let _lock = store.lock()?;
    match store.load(host) {
        Err(TuneError::JournalOtherBoot { .. }) => {
            store.discard()?;
            Ok(true)
        }
        Err(e) => Err(e),
        Ok(_) => Ok(false),
    }
}

/// The pending journal, if any (not checked against the boot: see [`Journal::boot_id`]).
pub fn journal_status(state_dir: &Path) -> Result<Option<Journal>, TuneError> {
    JournalStore::new(state_dir).read_raw()
}

/// Tuning in force, owned: reverts its own changes on drop (errors are printed
/// to stderr then; call [`AppliedTuning::revert`] to see them). The journal
/// on disk covers a crash or SIGKILL: `detpath tune revert` undoes it.
#[derive(Debug)]
#[must_use = "dropping AppliedTuning reverts the tuning at once"]
pub struct AppliedTuning {
    host: Host,
    store: JournalStore,
    session: String,
    cores: CpuList,
    changes: Vec<PlannedChange>,
    skipped: Vec<SkippedChange>,
    armed: bool,
}

impl AppliedTuning {
    /// The changes made (not those already in place).
    pub fn changes(&self) -> &[PlannedChange] {
        &self.changes
    }
    /// Changes the kernel refused in an expected way (IRQs that cannot move).
    pub fn skipped(&self) -> &[SkippedChange] {
        &self.skipped
    }
    /// The session id in the journal.
    pub fn session(&self) -> &str {
        &self.session
    }
    /// The journal path.
    pub fn journal_path(&self) -> PathBuf {
        self.store.path()
    }
    /// One line for benchmark reports.
    pub fn summary(&self) -> String {
        let mut names: Vec<&str> = self.changes.iter().map(|c| c.knob.as_str()).collect();
        let irqs = names.iter().filter(|n| n.starts_with("irq.")).count();
        names.retain(|n| !n.starts_with("irq."));
        if irqs > 0 {
            names.insert(0, "irq affinity");
        }
        let mut s = format!("tuned for cores {} (profile latency): {} change(s)", self.cores, self.changes.len());
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| if *n == "irq affinity" { format!("irq affinity x{irqs}") } else { n.to_string() }).collect();
            s.push_str(&format!(" [{}]", list.join(", ")));
        }
        if !self.skipped.is_empty() {
            s.push_str(&format!(", {} skipped [{}]", self.skipped.len(), self.skipped.iter().map(|k| k.change.knob.as_str()).collect::<Vec<_>>().join(", ")));
        }
        s
    }
    /// Reverts this session's changes now.
    pub fn revert(mut self) -> Result<RevertReport, TuneError> {
        self.armed = false;
        revert_entries(&self.host, &self.store, Some(&self.session))
    }
    /// Leaves the changes in force; the journal stays for `detpath tune revert`.
    pub fn keep(mut self) -> PathBuf {
        self.armed = false;
        self.store.path()
    }
}

impl Drop for AppliedTuning {
    fn drop(&mut self) {
        if self.armed {
            self.armed = false;
            if let Err(e) = revert_entries(&self.host, &self.store, Some(&self.session)) {
                eprintln!("detpath-tune: reverting tuning on drop failed: {e}");
            }
        }
    }
}

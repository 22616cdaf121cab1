//! Typed, actionable errors of the tuning layer.

use std::io;
use std::path::PathBuf;

use crate::cpus::CpuList;

#[allow(missing_docs)] // variant fields are described by the error messages
/// Why a tuning operation (audit, apply, revert) could not be done. Every
/// variant names the setting, file or interface concerned and, where there is
/// one, what to do about it. When an error is returned before any change was
/// made, the host is unchanged; apply errors say whether a rollback happened.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A `--cores` list could not be parsed.
    #[error("invalid CPU list `{input}`: {reason} (expected e.g. `1` or `2-3,6`)")]
    InvalidCoreList { input: String, reason: String },
    /// A core number is above what the kernel can have (`cpu/possible`).
    #[error("core {core} is out of range: this kernel has CPUs {possible} (see /sys/devices/system/cpu/possible)")]
    CoreOutOfRange { core: usize, possible: CpuList },
    /// A core number is possible but not online on this machine.
    #[error("core {core} is not an online CPU: online CPUs are {online} (see /sys/devices/system/cpu/online)")]
    CoreNotOnline { core: usize, online: CpuList },
    /// The datapath cores would leave no CPU for the OS and its interrupts.
    #[error("datapath cores {cores} leave no housekeeping CPU (online: {online}); keep at least one CPU out of --cores for interrupts and the OS")]
    NoHousekeepingCore { cores: CpuList, online: CpuList },
    /// `--cores` was empty.
    #[error("no datapath core given: pass --cores, e.g. --cores 1")]
    NoCores,
    /// The network interface does not exist (in this network namespace).
    #[error("network interface `{iface}` does not exist ({path} is missing); list interfaces with `ip -br link`")]
    NoSuchInterface { iface: String, path: PathBuf },
    /// Changing the real host needs root.
    #[error("changing the host's tuning needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN): run as root; `detpath tune audit` and `apply --dry-run` work without")]
    NeedsRoot,
    /// Only the `latency` profile exists.
    #[error("unknown tuning profile `{0}`; the only profile is `latency`")]
    UnknownProfile(String),
    /// A file of /proc, /sys or the state directory could not be read or written.
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// An ethtool operation on a NIC failed.
    #[error("cannot {op} {setting} of {iface}: {source}")]
    Nic {
        op: &'static str,
        iface: String,
        setting: String,
        #[source]
        source: io::Error,
    },
    /// The journal file exists but cannot be understood.
    #[error("tuning journal {path} is corrupt ({reason}); nothing was changed. Inspect it, restore the values it lists by hand if needed, then delete it")]
    JournalCorrupt { path: PathBuf, reason: String },
    /// The journal was written during another boot: the values it records were lost with that boot.
    #[error("tuning journal {path} was written during boot {journal_boot}, this is boot {current_boot}: its changes did not survive the reboot, so nothing was changed. Remove it with `detpath tune revert --discard-stale`")]
    JournalOtherBoot { path: PathBuf, journal_boot: String, current_boot: String },
    /// The journal was written for another root directory than the one in use.
    #[error("tuning journal {path} belongs to root {journal_root}, not {root}; nothing was changed. Use the matching --state-dir")]
    JournalRootMismatch { path: PathBuf, journal_root: PathBuf, root: PathBuf },
    /// One change failed; the changes made before it were rolled back.
    #[error("applying {knob} failed: {cause}; the {rolled_back} change(s) made before it were rolled back, the host is as before")]
    ApplyFailed { knob: String, cause: Box<TuneError>, rolled_back: usize },
    /// One change failed and the rollback failed as well.
    #[error("applying {knob} failed: {cause}; rolling back also failed for: {}; the journal {journal} keeps what is left, run `detpath tune revert`", failures.join("; "))]
    RollbackFailed { knob: String, cause: Box<TuneError>, failures: Vec<String>, journal: PathBuf },
    /// A saved profile cannot be read or understood.
    #[error("tuning profile {path}: {reason}; save one with `detpath tune apply --cores LIST --save {path}`", path = path.display())]
    ProfileUnreadable { path: PathBuf, reason: String },
    /// A saved profile cannot be written.
    #[error("cannot write tuning profile {path}: {source} (is the directory there and writable?)", path = path.display())]
    ProfileWrite {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The host differs from the one the profile was saved on in a way that
    /// makes the profile not fit (checked before anything is changed).
    #[error("tuning profile {path} does not fit this host, nothing was changed: {}; save a profile on a host like this one, or apply with --cores/--iface for this host", differences.join("; "), path = path.display())]
    ProfileMismatch { path: PathBuf, differences: Vec<String> },
    /// Some journal entries could not be restored; they stay in the journal.
    #[error("could not restore: {}; these entries stay in {journal}, fix the cause and run `detpath tune revert` again", failures.join("; "))]
    RevertIncomplete { failures: Vec<String>, journal: PathBuf },
}

impl TuneError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        TuneError::Io { op, path: path.into(), source }
    }
}

pub use detpath_sys::thread::RtError;

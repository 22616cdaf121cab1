//! Typed, actionable errors of the tuning layer.

use std::io;
use std::path::PathBuf;

use crate::cpus::{CpuList, CpuListError};

/// Why a tuning operation (audit, apply, revert) could not be done. Every
/// variant names the setting, file or interface concerned and, where there is
/// one, what to do about it. When an error is returned before any change was
/// made, the host is unchanged; apply errors say whether a rollback happened.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A `--cores` list could not be parsed.
    #[error("invalid CPU list `{input}`: {reason} (expected e.g. `1` or `2-3,6`)")]
    InvalidCoreList {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A core of `--cores` is not possible or not online.
    #[error(transparent)]
    Core(#[from] detpath_sys::cpu::CoreError),
    /// The datapath cores would leave no CPU for the OS and its interrupts.
    #[error("datapath cores {cores} leave no housekeeping CPU (online: {online}); keep at least one CPU out of --cores for interrupts and the OS")]
    NoHousekeepingCore {
        /// The datapath cores asked for.
        cores: CpuList,
        /// The online CPUs.
        online: CpuList,
    },
    /// `--cores` was empty.
    #[error("no datapath core given: pass --cores, e.g. --cores 1")]
    NoCores,
    /// The network interface does not exist (in this network namespace).
    #[error("network interface `{iface}` does not exist ({path} is missing); list interfaces with `ip -br link`")]
    NoSuchInterface {
        /// The interface.
        iface: String,
        /// The file.
        path: PathBuf,
    },
    /// Changing the real host needs root.
    #[error("changing the host's tuning needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN): run as root; `detpath tune audit` and `apply --dry-run` work without")]
    NeedsRoot,
    /// Only the `latency` profile exists.
    #[error("unknown tuning profile `{0}`; the only profile is `latency`")]
    UnknownProfile(String),
    /// A file of /proc, /sys or the state directory could not be read or written.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What was being done (`read`, `write`...).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An ethtool operation on a NIC failed.
    #[error("cannot {op} {setting} of {iface}: {source}")]
    Nic {
        /// What was being done (`read`, `write`...).
        op: &'static str,
        /// The interface.
        iface: String,
        /// The NIC setting.
        setting: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The journal file exists but cannot be understood.
    #[error("tuning journal {path} is corrupt ({reason}); nothing was changed. Inspect it, restore the values it lists by hand if needed, then delete it")]
    JournalCorrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The journal was written during another boot: the values it records were lost with that boot.
    #[error("tuning journal {path} was written during boot {journal_boot}, this is boot {current_boot}: its changes did not survive the reboot, so nothing was changed. Remove it with `detpath tune revert --discard-stale`")]
    JournalOtherBoot {
        /// The file.
        path: PathBuf,
        /// The boot the journal was written in.
        journal_boot: String,
        /// This boot.
        current_boot: String,
    },
    /// The journal was written for another root directory than the one in use.
    #[error("tuning journal {path} belongs to root {journal_root}, not {root}; nothing was changed. Use the matching --state-dir")]
    JournalRootMismatch {
        /// The file.
        path: PathBuf,
        /// The root the journal was written for.
        journal_root: PathBuf,
        /// The root in use.
        root: PathBuf,
    },
    /// One change failed; the changes made before it were rolled back.
    #[error("applying {knob} failed: {cause}; the {rolled_back} change(s) made before it were rolled back, the host is as before")]
    ApplyFailed {
        /// The knob that failed.
        knob: String,
        /// Why it failed.
        cause: Box<TuneError>,
        /// How many changes were undone.
        rolled_back: usize,
    },
    /// One change failed and the rollback failed as well.
    #[error("applying {knob} failed: {cause}; rolling back also failed for: {}; the journal {journal} keeps what is left, run `detpath tune revert`", failures.join("; "))]
    RollbackFailed {
        /// The knob that failed.
        knob: String,
        /// Why it failed.
        cause: Box<TuneError>,
        /// What could not be undone or restored, one entry each.
        failures: Vec<String>,
        /// The journal file.
        journal: PathBuf,
    },
    /// A saved profile cannot be read or understood.
    #[error("tuning profile {path}: {reason}; save one with `detpath tune apply --cores LIST --save {path}`", path = path.display())]
    ProfileUnreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A saved profile cannot be written.
    #[error("cannot write tuning profile {path}: {source} (is the directory there and writable?)", path = path.display())]
    ProfileWrite {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The host differs from the one the profile was saved on in a way that
    /// makes the profile not fit (checked before anything is changed).
    #[error("tuning profile {path} does not fit this host, nothing was changed: {}; save a profile on a host like this one, or apply with --cores/--iface for this host", differences.join("; "), path = path.display())]
    ProfileMismatch {
        /// The file.
        path: PathBuf,
        /// How the host differs, one entry each.
        differences: Vec<String>,
    },
    /// Some journal entries could not be restored; they stay in the journal.
    #[error("could not restore: {}; these entries stay in {journal}, fix the cause and run `detpath tune revert` again", failures.join("; "))]
    RevertIncomplete {
        /// What could not be undone or restored, one entry each.
        failures: Vec<String>,
        /// The journal file.
        journal: PathBuf,
    },
}

impl TuneError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        TuneError::Io { op, path: path.into(), source }
    }
}

pub use detpath_sys::thread::RtError;

impl From<CpuListError> for TuneError {
    fn from(e: CpuListError) -> Self {
        TuneError::InvalidCoreList { input: e.input, reason: e.reason }
    }
}

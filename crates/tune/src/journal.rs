//! The on-disk journal of tuning changes: written (atomically: temp file,
//! fsync, rename, fsync of the directory) before each change, so that the
//! changes of a process that died, even by SIGKILL, can be reverted.

use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::TuneError;
use crate::host::Host;
use crate::knobs::Target;

/// The journal format version.
pub const JOURNAL_VERSION: u32 = 1;
/// File name of the journal in the state directory.
pub const JOURNAL_FILE: &str = "tune-journal.json";
const LOCK_FILE: &str = "tune.lock";

/// The default state directory: `$DETPATH_STATE_DIR`, else `/var/lib/detpath`.
pub fn default_state_dir() -> PathBuf {
    std::env::var_os("DETPATH_STATE_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/var/lib/detpath"))
}

/// The journal: which changes are in force and what was there before.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Journal {
    /// Format version ([`JOURNAL_VERSION`]).
    pub version: u32,
    /// `/proc/sys/kernel/random/boot_id` when written: the changes die with the boot.
    pub boot_id: String,
    /// The root the paths are relative to (`/` on a real host).
    pub root: PathBuf,
    /// Changes in the order they were made; revert undoes them last first.
    pub entries: Vec<Entry>,
}

/// One change, journalled before it was made.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// The process/session that made it (`pid-nanos`).
    pub session: String,
    /// Knob name.
    pub knob: String,
    /// What was changed.
    pub target: Target,
    /// The raw value read before the change.
    pub old: String,
    /// The value written.
    pub new: String,
    /// The value revert writes (the old bytes, or the selected word of a selection file).
    pub restore: String,
}

/// A journal file in a state directory, with its lock.
#[derive(Clone, Debug)]
pub struct JournalStore {
    dir: PathBuf,
}

/// Holds the state directory's lock (`flock`) while alive.
#[derive(Debug)]
pub struct StoreLock {
    _file: fs::File,
}

impl JournalStore {
    /// The journal in `state_dir`.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self { dir: state_dir.into() }
    }

    /// The journal file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(JOURNAL_FILE)
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the state directory (mode 0700) if needed and takes its exclusive lock,
    /// so that two detpath processes never edit the journal at once.
    pub fn lock(&self) -> Result<StoreLock, TuneError> {
        if !self.dir.is_dir() {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(|e| TuneError::io("create state directory", &self.dir, e))?;
        }
        let p = self.dir.join(LOCK_FILE);
        let f = fs::OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&p).map_err(|e| TuneError::io("open lock file", &p, e))?;
        // SAFETY: flock on a descriptor we own; it blocks until the lock is ours.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        if rc != 0 {
            return Err(TuneError::io("lock", &p, std::io::Error::last_os_error()));
        }
        Ok(StoreLock { _file: f })
    }

    /// Reads the journal without checking boot or root (for status displays).
    pub(crate) fn read_raw(&self) -> Result<Option<Journal>, TuneError> {
        let p = self.path();
        let bytes = match fs::read(&p) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(TuneError::io("read journal", &p, e)),
        };
        let j: Journal = serde_json::from_slice(&bytes).map_err(|e| TuneError::JournalCorrupt { path: p.clone(), reason: e.to_string() })?;
        if j.version != JOURNAL_VERSION {
            return Err(TuneError::JournalCorrupt { path: p, reason: format!("version {} (this detpath writes version {JOURNAL_VERSION})", j.version) });
        }
        Ok(Some(j))
    }

    /// Reads the journal and checks it belongs to this boot and this root.
    pub fn load(&self, host: &Host) -> Result<Option<Journal>, TuneError> {
        let Some(j) = self.read_raw()? else { return Ok(None) };
        let boot = host.boot_id()?;
        if j.boot_id != boot {
            return Err(TuneError::JournalOtherBoot { path: self.path(), journal_boot: j.boot_id, current_boot: boot });
        }
        if j.root != host.root() {
            return Err(TuneError::JournalRootMismatch { path: self.path(), journal_root: j.root, root: host.root().to_path_buf() });
        }
        Ok(Some(j))
    }

    /// Writes the journal atomically; an empty journal removes the file.
    pub fn save(&self, j: &Journal) -> Result<(), TuneError> {
        let p = self.path();
        if j.entries.is_empty() {
            match fs::remove_file(&p) {
                Ok(()) => return self.sync_dir(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(TuneError::io("remove journal", &p, e)),
            }
        }
        let bytes = serde_json::to_vec_pretty(j).map_err(|e| TuneError::JournalCorrupt { path: p.clone(), reason: e.to_string() })?;
        atomic_write(&p, &bytes)?;
        self.sync_dir()
    }

    /// Deletes the journal (after the user has dealt with it).
    pub fn discard(&self) -> Result<(), TuneError> {
        match fs::remove_file(self.path()) {
            Ok(()) => self.sync_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(TuneError::io("remove journal", self.path(), e)),
        }
    }

    fn sync_dir(&self) -> Result<(), TuneError> {
        fs::File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| TuneError::io("fsync state directory", &self.dir, e))
    }
}

/// Writes `bytes` to `path` so that a reader (or a crash) sees either the old
/// or the new content, readable by root alone (the journal holds the host's
/// old settings): `detpath_sys::fsutil::write_atomic_with`.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), TuneError> {
    detpath_sys::fsutil::write_atomic_with(path, 0o600, |f| f.write_all(bytes)).map_err(|e| TuneError::io("write journal", path, e))
}

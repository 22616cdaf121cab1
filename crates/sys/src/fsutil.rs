//! Files that must survive a crash or a power cut whole: results, state and
//! plan files are written to a temporary file beside the target, flushed to
//! disk, renamed over the target, and the directory is flushed too, so a
//! reader sees the old file or the new one, never an empty or half one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Write `bytes` to `path` atomically and durably: [`write_atomic_with`],
/// readable by anyone (0644 before the umask), like the results it writes.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, 0o644, |f| f.write_all(bytes))
}

/// The one atomic file writer: `fill` streams the content into a temporary
/// file in `path`'s directory (so files too large to build in memory, such
/// as a run's records, go the same way), which is then flushed to disk,
/// renamed over `path`, and the directory flushed. The temporary file is
/// created with `O_EXCL` and permissions `mode` (before the umask: 0600 for
/// private state such as the tuning journal) under a name no other writer
/// uses, and removed when anything fails, so a failure leaves the old file
/// as it was.
pub fn write_atomic_with(path: &Path, mode: u32, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a file path", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}-{}", std::process::id(), unique()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
        fill(&mut f)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        // The rename is durable only once the directory entry is on disk.
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A number no other call in this process has used (threads may write at once).
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_fill_keeps_the_old_file_and_the_mode_is_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("detpath-fsutil-mode-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("journal.json");
        write_atomic_with(&p, 0o600, |f| f.write_all(b"old")).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        let e = write_atomic_with(&p, 0o600, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(e.is_err());
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "temporary left behind");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn replaces_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("detpath-fsutil-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("state.json");
        write_atomic(&p, b"old").unwrap();
        write_atomic(&p, b"new contents").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new contents");
        let names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "temporary left behind: {names:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn failure_keeps_the_old_file() {
        let dir = std::env::temp_dir().join(format!("detpath-fsutil-fail-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // The target is a non-empty directory: rename must fail, and nothing else changes.
        let p = dir.join("target");
        fs::create_dir_all(p.join("inside")).unwrap();
        assert!(write_atomic(&p, b"x").is_err());
        assert!(p.join("inside").is_dir());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}

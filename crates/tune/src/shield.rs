//! Runtime core isolation: a cpuset that holds every user process on the
//! housekeeping cores, so nothing but the datapath's own threads (and the
//! per-CPU kernel threads) runs on the datapath cores.
//!
//! Why: without `isolcpus=` (a reboot), any process, a shell's `grep` as
//! much as a stress worker, may be placed on a datapath core. A SCHED_FIFO
//! polling thread still loses that core to it: since Linux 6.12 the fair
//! server runs waiting normal tasks for up to 50 ms of every second above
//! real-time ones. Traced here (perf, pub-sub ping-pong, Tuned & Stress),
//! 200-900 µs rounds were a `grep`, `mkdir` or `sed` on the answering core.
//!
//! How (cgroup v1 `cpuset`, as `cset shield` does): a child cpuset
//! [`SHIELD_DIR`] with the housekeeping cores, and every user process of the
//! root cpuset moved into it; processes they fork stay there. The process
//! that applies the tuning stays in the root cpuset, so its threads (and the
//! children it starts: the benchmark's peers) may still pin themselves to a
//! datapath core, and a thread of another process that asks to
//! ([`crate::rt`]) leaves the shield first ([`detpath_sys::cgroup::leave_shield`]). Revert moves every process of
//! the shield back to the root, those forked since included, and removes
//! the cpuset: the host is as before.
//!
//! Where the host's `cpuset` controller lives decides the mechanism: a
//! cgroup v1 cpuset mount (as above), else the unified hierarchy when its
//! root offers `cpuset` ([`v2`]: slices limited to the housekeeping cores and
//! an isolated partition for the datapath cores).

pub mod v2;

use std::fs;

use crate::cpus::CpuList;
use crate::error::TuneError;
use crate::host::Host;

/// The shield's cpuset, under the cpuset hierarchy's root.
pub use detpath_sys::cgroup::SHIELD_DIR;

/// What `write` puts back: no shield.
pub const NO_SHIELD: &str = "none";

/// The mount point of the cgroup v1 hierarchy with the `cpuset` controller.
pub fn cpuset_v1_root(host: &Host) -> Option<String> {
    detpath_sys::cgroup::cpuset_v1_mount(&host.read_trim("/proc/self/mounts")?)
}

/// The shield's cores, or [`NO_SHIELD`].
pub fn read(host: &Host, root: &str) -> String {
    match host.read_trim(&format!("{root}/{SHIELD_DIR}/cpuset.cpus")) {
        Some(c) if !c.is_empty() => c,
        _ => NO_SHIELD.into(),
    }
}

/// Sets up the shield on `cores` (a CPU list), or dissolves it ([`NO_SHIELD`]).
pub fn write(host: &Host, root: &str, cores: &str) -> Result<(), TuneError> {
    let dir = format!("{root}/{SHIELD_DIR}");
    if cores == NO_SHIELD {
        if !host.exists(&dir) {
            return Ok(());
        }
        // A process may fork inside the shield while it is emptied: pass again until it is empty.
        for _ in 0..MOVE_PASSES {
            if move_all(host, &format!("{dir}/cgroup.procs"), &format!("{root}/cgroup.procs"), |_| true) == 0 {
                break;
            }
        }
        let p = host.path(&dir);
        return fs::remove_dir(&p).map_err(|e| TuneError::io("remove the cpuset", p, e));
    }
    CpuList::parse(cores)?;
    let p = host.path(&dir);
    if !p.exists() {
        fs::create_dir(&p).map_err(|e| TuneError::io("create the cpuset", p.clone(), e))?;
    }
    // A v1 cpuset takes no task until it has memory nodes: the root's.
    let mems = host.read_trim(&format!("{root}/cpuset.mems")).unwrap_or_else(|| "0".into());
    host.write(&format!("{dir}/cpuset.mems"), &mems)?;
    host.write(&format!("{dir}/cpuset.cpus"), cores)?;
    let me = std::process::id();
    // A process not yet moved may fork meanwhile: pass again until nothing more moves.
    for _ in 0..MOVE_PASSES {
        if move_all(host, &format!("{root}/cgroup.procs"), &format!("{dir}/cgroup.procs"), |pid| pid != me && !is_kernel_thread(host, pid)) == 0 {
            break;
        }
    }
    Ok(())
}

/// A shield that is up: where a process goes to be held by it, and its cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Active {
    /// Its `cgroup.procs`: a process written there runs on the housekeeping
    /// cores only, as every process the shield holds (the benchmarks start
    /// their CPU load in it).
    pub procs_file: std::path::PathBuf,
    /// The housekeeping cores.
    pub cores: CpuList,
}

/// The shield, when one is up (cgroup v1 or v2).
pub fn active(host: &Host) -> Option<Active> {
    let Some(root) = cpuset_v1_root(host) else {
        let root = v2::root(host)?;
        let cores = CpuList::parse(&v2::read(host, &root)).ok()?;
        return Some(Active { procs_file: host.path(&format!("{root}/{SHIELD_DIR}/cgroup.procs")), cores });
    };
    let cores = CpuList::parse(&host.read_trim(&format!("{root}/{SHIELD_DIR}/cpuset.cpus"))?).ok()?;
    let procs_file = host.path(&format!("{root}/{SHIELD_DIR}/cgroup.procs"));
    procs_file.exists().then_some(Active { procs_file, cores })
}

/// Passes over the process list when setting up or dissolving the shield.
pub(crate) const MOVE_PASSES: usize = 10;

/// Writes each process id listed in `from` into `to`, one write each; a
/// process that exited meanwhile or the kernel keeps (a per-CPU kernel
/// thread) is left where it is. Returns how many moved.
fn move_all(host: &Host, from: &str, to: &str, keep_moving: impl Fn(u32) -> bool) -> usize {
    let pids: Vec<u32> = host.read_trim(from).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
    pids.into_iter().filter(|&p| keep_moving(p)).filter(|p| host.write(to, &p.to_string()).is_ok()).count()
}

/// Whether `pid` is a kernel thread (PF_KTHREAD in `/proc/<pid>/stat`'s flags):
/// those stay where the kernel put them.
pub(crate) fn is_kernel_thread(host: &Host, pid: u32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Some(stat) = host.read_trim(&format!("/proc/{pid}/stat")) else { return true };
    // Fields after the command name (which may hold spaces and parentheses): state ppid pgrp session tty tpgid flags.
    let flags = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(6)).and_then(|f| f.parse::<u64>().ok());
    flags.is_none_or(|f| f & PF_KTHREAD != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_host() -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let p = d.path().join(p);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, s).unwrap();
        };
        w("proc/self/mounts", "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n");
        w("sys/fs/cgroup/cpuset/cpuset.mems", "0\n");
        w("sys/fs/cgroup/cpuset/cgroup.procs", "1\n2\n4242\n");
        // pid 1 a user process, pid 2 kthreadd, 4242 a user process with spaces in its name.
        w("proc/1/stat", "1 (systemd) S 0 1 1 0 -1 4194560 0 0");
        w("proc/2/stat", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0");
        w("proc/4242/stat", "4242 (a (b) c) R 1 4242 4242 0 -1 4194304 0 0");
        let h = Host::at(d.path());
        (d, h)
    }

    #[test]
    fn finds_the_v1_cpuset_hierarchy() {
        let (_d, h) = fake_host();
        assert_eq!(cpuset_v1_root(&h).as_deref(), Some("/sys/fs/cgroup/cpuset"));
    }

    #[test]
    fn the_shield_takes_user_processes_and_leaves_kernel_threads() {
        let (d, h) = fake_host();
        let root = "/sys/fs/cgroup/cpuset";
        assert_eq!(read(&h, root), NO_SHIELD);
        // The fake cpuset is plain files: cpuset.cpus and cgroup.procs appear as written.
        let dir = d.path().join("sys/fs/cgroup/cpuset").join(SHIELD_DIR);
        fs::create_dir_all(&dir).unwrap();
        for f in ["cpuset.cpus", "cpuset.mems", "cgroup.procs"] {
            fs::write(dir.join(f), "").unwrap();
        }
        // Each write replaces the file: record them by appending through a fresh read.
        write(&h, root, "0").unwrap();
        assert_eq!(read(&h, root), "0");
        assert_eq!(fs::read_to_string(dir.join("cpuset.mems")).unwrap(), "0");
        // The last process moved is the last user process listed (a plain file keeps one write).
        assert_eq!(fs::read_to_string(dir.join("cgroup.procs")).unwrap(), "4242");
        assert!(!is_kernel_thread(&h, 1) && is_kernel_thread(&h, 2) && !is_kernel_thread(&h, 4242));
        assert!(is_kernel_thread(&h, 999), "a vanished process is not moved");
        assert!(write(&h, root, "zero").is_err(), "a bad core list is refused");
    }
}

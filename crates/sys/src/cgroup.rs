//! Where the tuning layer's cpuset shield lives, and how a thread leaves it.
//!
//! `detpath tune apply` may hold every user process on the housekeeping
//! cores with a cpuset ([`SHIELD_DIR`]; on cgroup v2 also a partition
//! [`DATAPATH_DIR`] for the datapath cores). A thread of such a process that
//! pins itself to a datapath core is refused (EINVAL) until it leaves the
//! shield: [`leave_shield`], which [`crate::thread::pin_current_thread`]
//! calls on that refusal. Setting the shield up and taking it down is the
//! tuning layer's (detpath-tune's `shield`); the names and the mount parsing
//! are here so both agree.

use std::fs;
use std::io::Write;

/// The shield's cpuset, under the cpuset hierarchy's root.
pub const SHIELD_DIR: &str = "detpath-housekeeping";

/// The cgroup v2 partition of the datapath cores, under the unified root.
pub const DATAPATH_DIR: &str = "detpath-datapath";

/// The mount point of the cgroup v1 hierarchy with the `cpuset` controller,
/// from the text of `/proc/self/mounts`.
pub fn cpuset_v1_mount(mounts: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpuset")).then(|| f[1].to_string())
    })
}

/// The mount point of the unified (cgroup v2) hierarchy, from the text of
/// `/proc/self/mounts`.
pub fn cgroup2_mount(mounts: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3 && f[2] == "cgroup2").then(|| f[1].to_string())
    })
}

/// Moves thread `tid` (the calling thread, as [`crate::thread`] names it)
/// out of the shield into the root cpuset (v1 `tasks` takes thread ids), so
/// it may pin itself to a datapath core; on
/// cgroup v2 the calling process joins the datapath partition (v2 places
/// processes, not threads). Returns whether it moved; false where no shield
/// is up.
pub fn leave_shield(tid: u32) -> bool {
    let Ok(mounts) = fs::read_to_string("/proc/self/mounts") else { return false };
    let write = |path: &str, v: &str| fs::OpenOptions::new().write(true).open(path).and_then(|mut f| f.write_all(v.as_bytes())).is_ok();
    if let Some(root) = cpuset_v1_mount(&mounts) {
        let tid = tid.to_string();
        let in_shield = fs::read_to_string(format!("{root}/{SHIELD_DIR}/tasks")).is_ok_and(|t| t.lines().any(|l| l.trim() == tid));
        return in_shield && write(&format!("{root}/tasks"), &tid);
    }
    let Some(mnt) = cgroup2_mount(&mounts) else { return false };
    let procs = format!("{mnt}/{DATAPATH_DIR}/cgroup.procs");
    std::path::Path::new(&procs).exists() && write(&procs, &std::process::id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_name_the_hierarchies() {
        let m = "sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n";
        assert_eq!(cpuset_v1_mount(m).as_deref(), Some("/sys/fs/cgroup/cpuset"));
        assert_eq!(cgroup2_mount(m).as_deref(), Some("/sys/fs/cgroup/unified"));
        assert_eq!(cpuset_v1_mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu,cpuacct 0 0"), None);
        assert_eq!(cgroup2_mount(""), None);
    }
}

//! The cpuset shield on the unified hierarchy (cgroup v2), used when the
//! host's `cpuset` controller lives there (a stock Debian 12 with systemd).
//!
//! What it does, in this order:
//!
//! 1. enables `cpuset` in the root's `cgroup.subtree_control` if it is off;
//! 2. sets `cpuset.cpus` of every other top-level cgroup (`init.scope`,
//!    `system.slice`, `user.slice`, `machine.slice`, ...) to the housekeeping
//!    cores. This is what `systemctl set-property --runtime user.slice
//!    AllowedCPUs=...` does on a systemd host, and why it is chosen over
//!    moving processes: systemd finds a unit's processes by its cgroup, so
//!    moving them out of their slices would take them from systemd (a
//!    `systemctl stop` would no longer reach them); limiting the slices keeps
//!    every unit where it is and covers what they fork later;
//! 3. moves the user processes of the root cgroup itself (none on a systemd
//!    host; all of them in a container or a host without systemd) into a
//!    housekeeping cgroup [`SHIELD_DIR`] with the housekeeping cores;
//! 4. makes a cgroup [`DATAPATH_DIR`] with the datapath cores and turns it
//!    into an isolated partition (`cpuset.cpus.partition = isolated`: no
//!    load balancing, the cores leave the root's effective set). Kernels
//!    before 6.2 (Debian 12 ships 6.1) lack `isolated`: there it becomes a
//!    `root` partition (exclusive cores, load balanced inside). The datapath
//!    process joins it ([`join_datapath`]) to run on those cores.
//!
//! The journal holds one entry for all of it: the value `apply` reads before
//! the change is a snapshot ([`State`]: whether cpuset was enabled, each
//! top-level cgroup's `cpuset.cpus`, the two cgroups if present), so a revert,
//! also by another process after a SIGKILL, restores each old value, moves
//! the processes of both cgroups back to the root (those forked since
//! included) and removes the cgroups. Restoring is idempotent: a kill in the
//! middle of setting up leaves an entry whose revert puts back what was done.
//!
//! Where it has run: on fake v2 trees only (`tests/cgroup_v2.rs`); the
//! development machine's v2 hierarchy has no cpuset controller (cpuset is on
//! v1 there). Caveat for systemd hosts: systemd may rewrite `cpuset.cpus` of
//! a slice it realises with `AllowedCPUs=` set, and may disable a controller
//! no unit asks for on `daemon-reload`; the audit then reports the knob
//! misconfigured again (drift), and `apply` sets it anew.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{is_kernel_thread, MOVE_PASSES, NO_SHIELD, SHIELD_DIR};
use crate::cpus::CpuList;
use crate::error::TuneError;
use crate::host::Host;

/// The isolated partition of the datapath cores, under the v2 root.
pub use detpath_sys::cgroup::DATAPATH_DIR;

/// The mount point of the cgroup v2 hierarchy when its root offers the
/// `cpuset` controller (`cgroup.controllers`).
pub fn root(host: &Host) -> Option<String> {
    let mnt = detpath_sys::cgroup::cgroup2_mount(&host.read_trim("/proc/self/mounts")?)?;
    let ctl = host.read_trim(&format!("{mnt}/cgroup.controllers"))?;
    ctl.split_whitespace().any(|c| c == "cpuset").then_some(mnt)
}

/// What the shield touches, as it is: the journal's old value (JSON).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct State {
    /// `cpuset` in the root's `cgroup.subtree_control`.
    pub cpuset_enabled: bool,
    /// Each other top-level cgroup's `cpuset.cpus`, raw (only while cpuset is enabled).
    pub top: BTreeMap<String, String>,
    /// `cpuset.cpus` of [`SHIELD_DIR`], when it exists.
    pub housekeeping: Option<String>,
    /// `cpuset.cpus` and `cpuset.cpus.partition` of [`DATAPATH_DIR`], when it exists.
    pub datapath: Option<(String, String)>,
}

fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split_whitespace()
}

fn cpuset_enabled(host: &Host, root: &str) -> bool {
    host.read_trim(&format!("{root}/cgroup.subtree_control")).is_some_and(|s| words(&s).any(|w| w == "cpuset"))
}

/// The top-level cgroups other than the shield's two.
fn top_level(host: &Host, root: &str) -> Vec<String> {
    host.list_dir(root)
        .into_iter()
        .filter(|n| n != SHIELD_DIR && n != DATAPATH_DIR)
        .filter(|n| host.path(&format!("{root}/{n}/cgroup.procs")).is_file())
        .collect()
}

/// The current state (see [`State`]).
pub fn snapshot(host: &Host, root: &str) -> State {
    let enabled = cpuset_enabled(host, root);
    let mut top = BTreeMap::new();
    if enabled {
        for n in top_level(host, root) {
            if let Ok(Some(v)) = host.read_opt(&format!("{root}/{n}/cpuset.cpus")) {
                top.insert(n, v);
            }
        }
    }
    let hk = format!("{root}/{SHIELD_DIR}");
    let dp = format!("{root}/{DATAPATH_DIR}");
    State {
        cpuset_enabled: enabled,
        top,
        housekeeping: host.exists(&hk).then(|| host.read_trim(&format!("{hk}/cpuset.cpus")).unwrap_or_default()),
        datapath: host
            .exists(&dp)
            .then(|| (host.read_trim(&format!("{dp}/cpuset.cpus")).unwrap_or_default(), partition_type(host, root).unwrap_or_else(|| "member".into()))),
    }
}

/// The first word of the datapath cgroup's `cpuset.cpus.partition` (`isolated`, `root`, `member`).
fn partition_type(host: &Host, root: &str) -> Option<String> {
    host.read_trim(&format!("{root}/{DATAPATH_DIR}/cpuset.cpus.partition")).and_then(|s| s.split_whitespace().next().map(str::to_string))
}

/// The shield's housekeeping cores, or [`NO_SHIELD`] (for the audit).
pub fn read(host: &Host, root: &str) -> String {
    match host.read_trim(&format!("{root}/{SHIELD_DIR}/cpuset.cpus")) {
        Some(c) if !c.is_empty() && host.exists(&format!("{root}/{DATAPATH_DIR}")) => c,
        _ => NO_SHIELD.into(),
    }
}

/// Why the shield for `housekeeping` is not (fully) up; empty when it is.
pub fn problems(host: &Host, root: &str, housekeeping: &CpuList, datapath: &CpuList) -> Vec<String> {
    let mut p = vec![];
    let same = |v: Option<String>, want: &CpuList| v.and_then(|s| CpuList::parse(&s).ok()).is_some_and(|c| &c == want);
    if !cpuset_enabled(host, root) {
        p.push("cpuset not enabled in the root's cgroup.subtree_control".into());
    }
    for n in top_level(host, root) {
        if !same(host.read_trim(&format!("{root}/{n}/cpuset.cpus")), housekeeping) {
            p.push(format!("{n} may use every core"));
        }
    }
    if !same(host.read_trim(&format!("{root}/{SHIELD_DIR}/cpuset.cpus")), housekeeping) {
        p.push(format!("no {SHIELD_DIR} cgroup on {housekeeping}"));
    }
    let part = host.read_trim(&format!("{root}/{DATAPATH_DIR}/cpuset.cpus.partition")).unwrap_or_default();
    if !same(host.read_trim(&format!("{root}/{DATAPATH_DIR}/cpuset.cpus")), datapath) || !(part == "isolated" || part == "root") {
        p.push(format!("no valid partition {DATAPATH_DIR} on {datapath} ({})", if part.is_empty() { "none" } else { &part }));
    }
    p
}

/// The journal value of the shield target: the [`State`] as JSON.
pub(crate) fn read_state(host: &Host, root: &str) -> String {
    serde_json::to_string(&snapshot(host, root)).unwrap_or_default()
}

/// Sets the shield up for the housekeeping cores `value` (the datapath cores
/// are the other online ones), restores a [`State`] (a JSON value, as the
/// journal holds it), or dissolves the shield's own cgroups ([`NO_SHIELD`]).
pub fn write(host: &Host, root: &str, value: &str) -> Result<(), TuneError> {
    let v = value.trim();
    if v.starts_with('{') {
        let s: State = serde_json::from_str(v).map_err(|e| TuneError::io("parse the cgroup v2 shield state", host.path(root), std::io::Error::other(e)))?;
        return restore(host, root, &s);
    }
    if v == NO_SHIELD {
        let keep = snapshot(host, root);
        return restore(host, root, &State { housekeeping: None, datapath: None, ..keep });
    }
    let hk = CpuList::parse(v)?;
    let dp = host.online_cpus().difference(&hk);
    if hk.is_empty() || dp.is_empty() {
        return Err(TuneError::NoHousekeepingCore { cores: dp, online: host.online_cpus() });
    }
    up(host, root, &hk, &dp)
}

fn io(op: &'static str, host: &Host, abs: &str) -> impl FnOnce(std::io::Error) -> TuneError {
    let p = host.path(abs);
    move |e| TuneError::io(op, p, e)
}

fn ensure_cgroup(host: &Host, abs: &str) -> Result<(), TuneError> {
    if host.exists(abs) {
        return Ok(());
    }
    host.cgroups().create(&host.path(abs)).map_err(io("create the cgroup", host, abs))
}

fn up(host: &Host, root: &str, hk: &CpuList, dp: &CpuList) -> Result<(), TuneError> {
    let hk_s = hk.to_string();
    if !cpuset_enabled(host, root) {
        let f = format!("{root}/cgroup.subtree_control");
        host.cgroups().set_controller(&host.path(&f), "cpuset", true).map_err(io("enable cpuset in", host, &f))?;
    }
    // A partition left with other cores (a session for other cores) gives them back first.
    let dpath = format!("{root}/{DATAPATH_DIR}");
    if host.exists(&dpath) && host.read_trim(&format!("{dpath}/cpuset.cpus")).is_some_and(|c| CpuList::parse(&c).ok().as_ref() != Some(dp)) {
        host.write(&format!("{dpath}/cpuset.cpus.partition"), "member")?;
    }
    for n in top_level(host, root) {
        host.write(&format!("{root}/{n}/cpuset.cpus"), &hk_s)?;
    }
    let hpath = format!("{root}/{SHIELD_DIR}");
    ensure_cgroup(host, &hpath)?;
    host.write(&format!("{hpath}/cpuset.cpus"), &hk_s)?;
    let me = std::process::id();
    for _ in 0..MOVE_PASSES {
        if move_all(host, &format!("{root}/cgroup.procs"), &format!("{hpath}/cgroup.procs"), |pid| pid != me && !is_kernel_thread(host, pid)) == 0 {
            break;
        }
    }
    ensure_cgroup(host, &dpath)?;
    host.write(&format!("{dpath}/cpuset.cpus"), &dp.to_string())?;
    let part = format!("{dpath}/cpuset.cpus.partition");
    match host.write(&part, "isolated") {
        Ok(()) => {}
        // Before Linux 6.2 there is no `isolated` partition: a `root` one still owns the cores exclusively.
        Err(TuneError::Io { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => host.write(&part, "root")?,
        Err(e) => return Err(e),
    }
    // The kernel accepts the write and marks a partition it cannot make "invalid (reason)".
    let now = host.read_trim(&part).unwrap_or_default();
    if now.contains("invalid") {
        return Err(TuneError::io(
            "make the datapath partition",
            host.path(&part),
            std::io::Error::other(format!("the kernel says `{now}`: another cgroup holds one of the cores {dp} exclusively?")),
        ));
    }
    Ok(())
}

/// Dissolves a cgroup of the shield: its processes back to the root (passes
/// until none is left, a process may fork meanwhile), then rmdir.
fn dissolve(host: &Host, root: &str, dir: &str) -> Result<(), TuneError> {
    let abs = format!("{root}/{dir}");
    if !host.exists(&abs) {
        return Ok(());
    }
    if dir == DATAPATH_DIR {
        // Give the cores back to the root before the processes move (the kernel would
        // otherwise have to place them on cores the partition still owns).
        let _ = host.write(&format!("{abs}/cpuset.cpus.partition"), "member");
    }
    for _ in 0..MOVE_PASSES {
        if move_all(host, &format!("{abs}/cgroup.procs"), &format!("{root}/cgroup.procs"), |_| true) == 0 {
            break;
        }
    }
    host.cgroups().remove(&host.path(&abs)).map_err(io("remove the cgroup", host, &abs))
}

fn restore(host: &Host, root: &str, s: &State) -> Result<(), TuneError> {
    match &s.datapath {
        None => dissolve(host, root, DATAPATH_DIR)?,
        Some((cpus, part)) => {
            let abs = format!("{root}/{DATAPATH_DIR}");
            ensure_cgroup(host, &abs)?;
            let _ = host.write(&format!("{abs}/cpuset.cpus.partition"), "member");
            host.write(&format!("{abs}/cpuset.cpus"), cpus)?;
            if part != "member" {
                host.write(&format!("{abs}/cpuset.cpus.partition"), part)?;
            }
        }
    }
    match &s.housekeeping {
        None => dissolve(host, root, SHIELD_DIR)?,
        Some(cpus) => {
            let abs = format!("{root}/{SHIELD_DIR}");
            ensure_cgroup(host, &abs)?;
            host.write(&format!("{abs}/cpuset.cpus"), cpus)?;
        }
    }
    if cpuset_enabled(host, root) {
        for (n, raw) in &s.top {
            let f = format!("{root}/{n}/cpuset.cpus");
            if host.exists(&f) {
                host.write(&f, raw)?;
            }
        }
        if !s.cpuset_enabled {
            let f = format!("{root}/cgroup.subtree_control");
            host.cgroups().set_controller(&host.path(&f), "cpuset", false).map_err(io("disable cpuset in", host, &f))?;
        }
    }
    Ok(())
}

/// Moves each process listed in `from` into `to` through the host's
/// [`crate::host::Cgroups`]; one that exited meanwhile or that the kernel
/// keeps is left. Returns how many moved.
fn move_all(host: &Host, from: &str, to: &str, keep_moving: impl Fn(u32) -> bool) -> usize {
    let pids: Vec<u32> = host.read_trim(from).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
    let to = host.path(to);
    pids.into_iter().filter(|&p| keep_moving(p)).filter(|&p| host.cgroups().attach(&to, p).is_ok()).count()
}

/// Moves process `pid` into the datapath partition, so that it may run on the
/// datapath cores (which no other cgroup has while the shield is up). Returns
/// whether a partition was there to join. The whole process moves: cgroup v2
/// places processes, not threads, outside threaded subtrees.
pub fn join_datapath(host: &Host, pid: u32) -> bool {
    let Some(root) = root(host) else { return false };
    let procs = host.path(&format!("{root}/{DATAPATH_DIR}/cgroup.procs"));
    procs.exists() && host.cgroups().attach(&procs, pid).is_ok()
}

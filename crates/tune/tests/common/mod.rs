//! Shared test helpers: a fake /proc + /sys tree with every knob, a
//! file-backed NIC for it, and byte-level tree snapshots.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use detpath_tune::nic::{Nic, NicSetting};
use detpath_tune::{Cgroups, Host};

pub const BOOT_ID: &str = "11111111-2222-3333-4444-555555555555";
pub const IFACE: &str = "fake0";

/// A NIC whose settings are files `<dir>/<iface>/<setting>`; a missing
/// interface directory is ENODEV, a missing setting EOPNOTSUPP (as a driver
/// without it), and a file `<dir>/<iface>/fail-<setting>` makes `set` fail with EIO.
#[derive(Debug, Clone)]
pub struct FileNic {
    pub dir: PathBuf,
}

impl Nic for FileNic {
    fn get(&self, iface: &str, s: NicSetting) -> io::Result<u32> {
        let d = self.dir.join(iface);
        if !d.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENODEV));
        }
        match fs::read_to_string(d.join(s.name())) {
            Ok(v) => v.trim().parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad fake value")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Err(e) => Err(e),
        }
    }
    fn set(&self, iface: &str, s: NicSetting, v: u32) -> io::Result<()> {
        self.get(iface, s)?;
        if self.dir.join(iface).join(format!("fail-{}", s.name())).exists() {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        fs::write(self.dir.join(iface).join(s.name()), v.to_string())
    }
}

/// cgroup v2 semantics on plain files, as the kernel's cgroupfs has them:
/// a new cgroup gets its interface files (the cpuset ones when the parent
/// enables cpuset for its children); a process written to `cgroup.procs`
/// leaves every other cgroup of the hierarchy (kernel threads and vanished
/// pids are refused, EINVAL/ESRCH); a cgroup with processes or children
/// cannot be removed (EBUSY); `+ctl`/`-ctl` adds or removes the controller's
/// files in the children. `cgroup.procs` lists pids sorted, one per line.
#[derive(Debug, Clone)]
pub struct FakeCgroups {
    /// The fake tree's root (for /proc).
    pub root: PathBuf,
    /// The hierarchy's mount point (a real path).
    pub mount: PathBuf,
}

pub const CPUSET_FILES: [(&str, &str); 2] = [("cpuset.cpus", "\n"), ("cpuset.cpus.partition", "member\n")];

fn words_of(p: &Path) -> Vec<String> {
    fs::read_to_string(p).unwrap_or_default().split_whitespace().map(str::to_string).collect()
}

fn pids_of(p: &Path) -> Vec<u32> {
    fs::read_to_string(p).unwrap_or_default().split_whitespace().filter_map(|x| x.parse().ok()).collect()
}

pub fn write_pids(p: &Path, pids: &[u32]) {
    let mut v = pids.to_vec();
    v.sort();
    v.dedup();
    fs::write(p, v.iter().map(|x| format!("{x}\n")).collect::<String>()).unwrap();
}

impl FakeCgroups {
    fn all_procs(&self, dir: &Path, out: &mut Vec<PathBuf>) {
        out.push(dir.join("cgroup.procs"));
        for e in fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                self.all_procs(&e.path(), out);
            }
        }
    }
}

impl Cgroups for FakeCgroups {
    fn create(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir(dir)?;
        let parent_ctl = words_of(&dir.parent().unwrap().join("cgroup.subtree_control"));
        fs::write(dir.join("cgroup.procs"), "")?;
        fs::write(dir.join("cgroup.subtree_control"), "\n")?;
        fs::write(dir.join("cgroup.controllers"), format!("{}\n", parent_ctl.join(" ")))?;
        if parent_ctl.iter().any(|c| c == "cpuset") {
            for (f, v) in CPUSET_FILES {
                fs::write(dir.join(f), v)?;
            }
        }
        Ok(())
    }
    fn remove(&self, dir: &Path) -> io::Result<()> {
        let busy = !pids_of(&dir.join("cgroup.procs")).is_empty() || fs::read_dir(dir)?.flatten().any(|e| e.file_type().unwrap().is_dir());
        if busy {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        fs::remove_dir_all(dir)
    }
    fn attach(&self, procs: &Path, pid: u32) -> io::Result<()> {
        let stat = fs::read_to_string(self.root.join(format!("proc/{pid}/stat"))).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        let flags: u64 = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(6)).and_then(|f| f.parse().ok()).unwrap_or(0);
        if flags & 0x0020_0000 != 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        if !procs.exists() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let mut all = vec![];
        self.all_procs(&self.mount, &mut all);
        for p in all {
            let now = pids_of(&p);
            if p == procs {
                let mut v = now;
                v.push(pid);
                write_pids(&p, &v);
            } else if now.contains(&pid) {
                write_pids(&p, &now.into_iter().filter(|&x| x != pid).collect::<Vec<_>>());
            }
        }
        Ok(())
    }
    fn set_controller(&self, subtree_control: &Path, controller: &str, on: bool) -> io::Result<()> {
        let dir = subtree_control.parent().unwrap();
        if !words_of(&dir.join("cgroup.controllers")).iter().any(|c| c == controller) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let mut ctl = words_of(subtree_control);
        ctl.retain(|c| c != controller);
        if on {
            ctl.push(controller.to_string());
        }
        for e in fs::read_dir(dir)?.flatten().filter(|e| e.file_type().unwrap().is_dir()) {
            let child = e.path();
            if !on && words_of(&child.join("cgroup.subtree_control")).iter().any(|c| c == controller) {
                return Err(io::Error::from_raw_os_error(libc::EBUSY));
            }
            for (f, v) in CPUSET_FILES {
                if on && !child.join(f).exists() {
                    fs::write(child.join(f), v)?;
                } else if !on {
                    let _ = fs::remove_file(child.join(f));
                }
            }
        }
        fs::write(subtree_control, format!("{}\n", ctl.join(" ")))
    }
}

pub fn w(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// A fake tree with every knob present and misconfigured: 4 CPUs with SMT
/// (siblings 0,2 and 1,3), cpufreq, cpuidle, intel_pstate, IRQs, sysctls,
/// THP, swap, debugfs preempt, clocksource, a NIC `fake0`, irqbalance running.
pub fn fake_tree(root: &Path) {
    w(root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n");
    w(root, "proc/sys/kernel/random/boot_id", format!("{BOOT_ID}\n"));
    w(root, "proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.0\n");
    let cpu = "sys/devices/system/cpu";
    w(root, &format!("{cpu}/online"), "0-3\n");
    w(root, &format!("{cpu}/possible"), "0-7\n");
    w(root, &format!("{cpu}/isolated"), "\n");
    w(root, &format!("{cpu}/nohz_full"), " (null)\n");
    w(root, &format!("{cpu}/smt/control"), "on\n");
    w(root, &format!("{cpu}/smt/active"), "1\n");
    w(root, &format!("{cpu}/intel_pstate/no_turbo"), "0\n");
    for c in 0..4 {
        let b = format!("{cpu}/cpu{c}");
        w(root, &format!("{b}/cpufreq/scaling_governor"), "powersave\n");
        w(root, &format!("{b}/cpufreq/scaling_available_governors"), "performance powersave\n");
        w(root, &format!("{b}/cpufreq/cpuinfo_max_freq"), "3500000\n");
        w(root, &format!("{b}/cpufreq/scaling_max_freq"), "3000000\n");
        w(root, &format!("{b}/cpufreq/scaling_min_freq"), "800000\n");
        for (k, (name, lat)) in [("POLL", 0), ("C1", 2), ("C6", 133)].iter().enumerate() {
            w(root, &format!("{b}/cpuidle/state{k}/name"), format!("{name}\n"));
            w(root, &format!("{b}/cpuidle/state{k}/latency"), format!("{lat}\n"));
            w(root, &format!("{b}/cpuidle/state{k}/disable"), "0\n");
        }
        w(root, &format!("{b}/topology/thread_siblings_list"), if c % 2 == 0 { "0,2\n" } else { "1,3\n" });
    }
    for (irq, aff, dev) in [(0, "0", "timer"), (1, "0-3", "i8042"), (8, "0-3", "rtc0"), (24, "1", "eth0-rx-0"), (25, "2-3", "eth0-tx-0"), (30, "0-3", "")] {
        w(root, &format!("proc/irq/{irq}/smp_affinity_list"), format!("{aff}\n"));
        if !dev.is_empty() {
            fs::create_dir_all(root.join(format!("proc/irq/{irq}/{dev}"))).unwrap();
        }
    }
    w(root, "proc/irq/default_smp_affinity", "f\n");
    w(root, "proc/1/comm", "systemd\n");
    w(root, "proc/777/comm", "irqbalance\n");
    w(root, "proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/sda2 partition 1000 0 -2\n");
    for (k, v) in [
        ("kernel/sched_rt_runtime_us", "950000"),
        ("kernel/sched_rt_period_us", "1000000"),
        ("kernel/timer_migration", "1"),
        ("kernel/watchdog", "1"),
        ("kernel/nmi_watchdog", "1"),
        ("vm/stat_interval", "1"),
        ("vm/swappiness", "60"),
        ("net/core/busy_poll", "0"),
        ("net/core/busy_read", "0"),
    ] {
        w(root, &format!("proc/sys/{k}"), format!("{v}\n"));
    }
    w(root, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
    w(root, "sys/kernel/mm/transparent_hugepage/defrag", "[always] defer defer+madvise madvise never\n");
    w(root, "sys/kernel/debug/sched/preempt", "none (voluntary) full\n");
    w(root, "sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n");
    w(root, "sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm \n");
    w(root, &format!("sys/class/net/{IFACE}/gro_flush_timeout"), "20000\n");
    w(root, &format!("sys/class/net/{IFACE}/napi_defer_hard_irqs"), "2\n");
    w(root, "dev/cpu_dma_latency", 2_000_000_000i32.to_ne_bytes());
    for (s, v) in [
        ("rx-usecs", 50),
        ("tx-usecs", 50),
        ("adaptive-rx", 1),
        ("adaptive-tx", 1),
        ("gro", 1),
        ("lro", 1),
        ("rx-ring", 1024),
        ("tx-ring", 1024),
        ("rx-ring-max", 4096),
        ("tx-ring-max", 4096),
    ] {
        w(root, &format!("fake-nic/{IFACE}/{s}"), v.to_string());
    }
}

/// A host over a fake tree made in `root`.
pub fn fake_host(root: &Path) -> Host {
    fake_tree(root);
    fake_host_keep(root)
}

/// A Debian 12-like cgroup v2 hierarchy on the fake tree (after [`fake_tree`]):
/// cpuset offered by the root but not enabled; systemd's init.scope (pid 1),
/// system.slice/cron.service (400), user.slice/user-1000.slice/session-1.scope
/// (500); in the root cgroup a kernel thread (2) and a process started
/// outside systemd (300).
pub fn fake_v2_tree(root: &Path) {
    w(root, "proc/self/mounts", "sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n");
    let cg = "sys/fs/cgroup";
    w(root, &format!("{cg}/cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n");
    w(root, &format!("{cg}/cgroup.subtree_control"), "memory pids\n");
    w(root, &format!("{cg}/cgroup.procs"), "2\n300\n");
    for (dir, procs, sub) in [
        ("init.scope", "1\n", ""),
        ("system.slice", "", "memory pids"),
        ("system.slice/cron.service", "400\n", ""),
        ("user.slice", "", "memory pids"),
        ("user.slice/user-1000.slice", "", "memory pids"),
        ("user.slice/user-1000.slice/session-1.scope", "500\n", ""),
    ] {
        let parent = Path::new(dir).parent().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
        let pctl = fs::read_to_string(root.join(cg).join(&parent).join("cgroup.subtree_control")).unwrap();
        w(root, &format!("{cg}/{dir}/cgroup.procs"), procs);
        w(root, &format!("{cg}/{dir}/cgroup.controllers"), pctl);
        w(root, &format!("{cg}/{dir}/cgroup.subtree_control"), format!("{sub}\n"));
    }
    for (pid, comm, flags) in
        [(1, "systemd", 4194560u64), (2, "kthreadd", 2129984), (300, "sleep", 4194304), (301, "sh", 4194304), (400, "cron", 4194304), (500, "bash", 4194304)]
    {
        w(root, &format!("proc/{pid}/stat"), format!("{pid} ({comm}) S 1 {pid} {pid} 0 -1 {flags} 0 0"));
    }
}

/// A host over a fake tree with a cgroup v2 hierarchy ([`fake_v2_tree`]).
pub fn fake_v2_host(root: &Path) -> Host {
    fake_tree(root);
    fake_v2_tree(root);
    fake_host_keep(root)
}

/// A host over a fake tree that already exists in `root` (left as it is).
pub fn fake_host_keep(root: &Path) -> Host {
    Host::at(root)
        .with_nic(Arc::new(FileNic { dir: root.join("fake-nic") }))
        .with_cgroups(Arc::new(FakeCgroups { root: root.to_path_buf(), mount: root.join("sys/fs/cgroup") }))
}

/// Files that hold a selection (`[x]`/`(x)`): the kernel re-renders them from
/// the chosen word, a plain file cannot, so these compare by chosen word.
pub const SELECTION_FILES: [&str; 3] =
    ["sys/kernel/mm/transparent_hugepage/enabled", "sys/kernel/mm/transparent_hugepage/defrag", "sys/kernel/debug/sched/preempt"];

/// Every file (bytes), symlink (target) and directory under `root`.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    fn walk(root: &Path, d: &Path, m: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                m.insert(rel, format!("symlink:{}", fs::read_link(&p).unwrap().display()).into_bytes());
            } else if ft.is_dir() {
                m.insert(rel, b"dir".to_vec());
                walk(root, &p, m);
            } else {
                m.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    walk(root, root, &mut m);
    m
}

/// Normalises selection files to their chosen word.
pub fn canonical(mut m: BTreeMap<PathBuf, Vec<u8>>) -> BTreeMap<PathBuf, Vec<u8>> {
    for f in SELECTION_FILES {
        if let Some(v) = m.get_mut(Path::new(f)) {
            let s = String::from_utf8_lossy(v).to_string();
            let fmt = if f.ends_with("preempt") { detpath_tune::ValueFormat::Parens } else { detpath_tune::ValueFormat::Selection };
            *v = detpath_tune::normalize(&s, fmt).into_bytes();
        }
    }
    m
}

/// Asserts two snapshots are equal, naming the first differing path.
pub fn assert_same(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) {
    for (p, v) in before {
        match after.get(p) {
            None => panic!("{} disappeared", p.display()),
            Some(a) if a != v => panic!("{} differs: before {:?}, after {:?}", p.display(), String::from_utf8_lossy(v), String::from_utf8_lossy(a)),
            _ => {}
        }
    }
    for p in after.keys() {
        assert!(before.contains_key(p), "{} appeared", p.display());
    }
}

pub const CHILD_TEST: &str = "child_apply_then_hang";

/// Body of the `child_apply_then_hang` helper test: when run as a child with
/// DETPATH_TUNE_CHILD_ROOT set, applies the tuning and, after
/// DETPATH_TUNE_CHILD_STOP changes, creates the marker file and hangs until killed.
pub fn child_main() {
    let Ok(root) = std::env::var("DETPATH_TUNE_CHILD_ROOT") else { return };
    let state = std::env::var("DETPATH_TUNE_CHILD_STATE").unwrap();
    let marker = std::env::var("DETPATH_TUNE_CHILD_MARKER").unwrap();
    let stop: usize = std::env::var("DETPATH_TUNE_CHILD_STOP").unwrap().parse().unwrap();
    let cores = detpath_tune::CpuList::parse(&std::env::var("DETPATH_TUNE_CHILD_CORES").unwrap()).unwrap();
    let iface = std::env::var("DETPATH_TUNE_CHILD_IFACE").ok();
    let host = if root == "/" { Host::real() } else { fake_host_keep(Path::new(&root)) };
    let mut req = detpath_tune::ApplyRequest::new(cores).state_dir(state);
    req.iface = iface;
    let mut n = 0;
    let r = detpath_tune::apply_with_progress(&host, &req, &mut |s| {
        if s.outcome == detpath_tune::StepOutcome::Changed {
            n += 1;
            if n == stop {
                fs::write(&marker, b"ready").unwrap();
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        }
    });
    let _ = r.map(|t| t.keep());
}

/// Runs the child helper test of the current test binary, waits until it has
/// made `stop` changes, SIGKILLs it and reaps it.
pub fn run_child_and_kill(root: &str, state: &Path, cores: &str, iface: Option<&str>, stop: usize) {
    let marker = state.with_extension("marker");
    let _ = fs::remove_file(&marker);
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", CHILD_TEST, "--ignored", "--nocapture", "--test-threads=1"])
        .env("DETPATH_TUNE_CHILD_ROOT", root)
        .env("DETPATH_TUNE_CHILD_STATE", state)
        .env("DETPATH_TUNE_CHILD_MARKER", &marker)
        .env("DETPATH_TUNE_CHILD_STOP", stop.to_string())
        .env("DETPATH_TUNE_CHILD_CORES", cores)
        .stdout(std::process::Stdio::null());
    if let Some(i) = iface {
        cmd.env("DETPATH_TUNE_CHILD_IFACE", i);
    }
    let mut child = cmd.spawn().unwrap();
    let t0 = std::time::Instant::now();
    while !marker.exists() {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("child exited ({st}) before making {stop} changes");
        }
        assert!(t0.elapsed().as_secs() < 60, "child did not reach {stop} changes in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill on the pid of a child we spawned and have not reaped.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    assert_eq!(rc, 0);
    let st = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    let _ = fs::remove_file(&marker);
}

//! Shared test helpers: a fake /proc + /sys tree with every knob, a
//! file-backed NIC for it, and byte-level tree snapshots.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use detpath_tune::nic::{Nic, NicSetting};
use detpath_tune::Host;

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
    Host::at(root).with_nic(Arc::new(FileNic { dir: root.join("fake-nic") }))
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
    let host = if root == "/" { Host::real() } else { Host::at(&root).with_nic(Arc::new(FileNic { dir: Path::new(&root).join("fake-nic") })) };
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

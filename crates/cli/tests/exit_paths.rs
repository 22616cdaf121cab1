//! Every exit path of a stressed, tuned `detpath bench` leaves the host as it
//! was, with real processes and real signals:
//! - a second SIGINT 0.2 s after the first: tuning reverted (no journal),
//!   the stress-ng it started gone (its process group, not every stress-ng
//!   on the host), its testbed namespaces gone, exit 130;
//! - SIGKILL of detpath: the stress-ng it started dies with it
//!   (PR_SET_PDEATHSIG), and `detpath tune revert` restores the tuning from
//!   the journal; `detpath testbed down` removes the namespaces;
//! - `detpath testbed down` finds the namespaces a killed `sched bench`
//!   left (`detpath-sch-<pid>-<n>-a|b`, and the older `detpath-sch<pid>-a|b`)
//!   and keeps those of a live process.
//!
//! The panic path (`cleanup::guard_main`) has no real trigger that a test can
//! pull deterministically; it is covered by the unit tests of
//! `detpath_sys::cleanup` only.
//!
//! Needs root (namespaces, tuning) and stress-ng. The tuning journal goes to
//! a private state directory (`DETPATH_STATE_DIR`) so the test reads only its
//! own. The stressed runs go one at a time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A private directory (state, results), removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = tempfile::Builder::new().prefix(&format!("detpath-exit-{tag}-")).tempdir().unwrap().keep();
        Scratch(p)
    }
    fn state(&self) -> PathBuf {
        self.0.join("state")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Namespaces this test made or caused, removed at the end whatever happens.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            if Path::new("/run/netns").join(n).exists() {
                let _ = Command::new("ip").args(["netns", "del", n]).status();
            }
        }
    }
}

/// A detpath run killed (SIGKILL) if the test ends before it does; its
/// tuning, if any, reverted from the private journal.
struct Run {
    child: Option<Child>,
    state: PathBuf,
}

impl Run {
    fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }
    fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return st;
            }
            assert!(t.elapsed() < limit, "detpath did not exit within {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.state.join("tune-journal.json").exists() {
            let _ = Command::new(BIN).args(["tune", "revert"]).env("DETPATH_STATE_DIR", &self.state).status();
        }
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: signalling a process this test started, by its PID.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

/// (pid, ppid, pgid, comm) of every process.
fn processes() -> Vec<(i32, i32, i32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // comm is in parentheses and may hold spaces: split after the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = stat[open + 1..close].to_string();
        let rest: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        if rest.first() == Some(&"Z") {
            continue;
        }
        let (Some(ppid), Some(pgid)) = (rest.get(1).and_then(|x| x.parse().ok()), rest.get(2).and_then(|x| x.parse().ok())) else { continue };
        v.push((pid, ppid, pgid, comm));
    }
    v
}

/// The process group of the stress-ng that `detpath` (by PID) started, once it runs.
fn stress_group_of(detpath: i32, limit: Duration) -> i32 {
    let t = Instant::now();
    loop {
        if let Some(p) = processes().into_iter().find(|(_, ppid, _, comm)| *ppid == detpath && comm.starts_with("stress-ng")) {
            return p.2;
        }
        assert!(t.elapsed() < limit, "detpath {detpath} started no stress-ng within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Live (not zombie) processes of a process group.
fn group_members(pgid: i32) -> Vec<(i32, String)> {
    processes().into_iter().filter(|p| p.2 == pgid).map(|p| (p.0, p.3)).collect()
}

fn wait_group_gone(pgid: i32, limit: Duration) {
    let t = Instant::now();
    while !group_members(pgid).is_empty() {
        assert!(t.elapsed() < limit, "stress-ng's group {pgid} still runs: {:?}", group_members(pgid));
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn journal_pending(state: &Path) -> bool {
    let st = Command::new(BIN).args(["tune", "status"]).env("DETPATH_STATE_DIR", state).output().unwrap();
    match st.status.code() {
        Some(0) => false,
        Some(1) => true,
        _ => panic!("tune status: {}", String::from_utf8_lossy(&st.stderr)),
    }
}

/// Starts a tuned, stressed bench long enough to be interrupted, waits until
/// its tuning and its stress-ng are in force; returns the run and stress-ng's group.
fn start_stressed(tag: &str, scratch: &Scratch, testbed: &str) -> (Run, i32) {
    let child = Command::new(BIN)
        .args(["bench", "--datapath", "udp", "--tuned", "--stress", "80", "--rounds", "2000000", "--period", "100us", "--warmup", "100"])
        .args(["--testbed", testbed, "--out"])
        .arg(scratch.0.join("results"))
        .env("DETPATH_STATE_DIR", scratch.state())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scratch.0.join(format!("{tag}.stderr"))).unwrap())
        .spawn()
        .unwrap();
    let run = Run { child: Some(child), state: scratch.state() };
    // Liveness: before stress-ng starts, the run brings up the testbed and
    // tunes the machine (seconds idle, tens on a 2-core VM busy with other
    // suites); 60 s only tells a slow start from none.
    let pgid = stress_group_of(run.pid(), Duration::from_secs(60));
    assert!(journal_pending(&scratch.state()), "the tuning journal is there while the run is tuned");
    // Let the measured run get going.
    std::thread::sleep(Duration::from_millis(500));
    (run, pgid)
}

fn stderr_of(scratch: &Scratch, tag: &str) -> String {
    std::fs::read_to_string(scratch.0.join(format!("{tag}.stderr"))).unwrap_or_default()
}

#[test]
fn a_second_sigint_leaves_no_tuning_no_stress_and_no_namespace() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let scratch = Scratch::new("int");
    let testbed = format!("detpath-exi{}", std::process::id());
    let _ns = Namespaces(vec![format!("{testbed}-a"), format!("{testbed}-b")]);
    let (mut run, pgid) = start_stressed("int", &scratch, &testbed);
    assert!(!group_members(pgid).is_empty());
    signal(run.pid(), libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    signal(run.pid(), libc::SIGINT);
    // Liveness: a second SIGINT still undoes the tuning, stops stress-ng
    // and removes the namespaces before exiting (seconds idle); 60 s, as for
    // the start, only tells a slow clean-up from a hung one.
    let st = run.wait(Duration::from_secs(60));
    let err = stderr_of(&scratch, "int");
    assert_eq!(st.code(), Some(130), "exit code; stderr:\n{err}");
    assert!(!journal_pending(&scratch.state()), "tuning left in force; stderr:\n{err}");
    // Liveness: detpath has already exited, having stopped stress-ng on
    // its way out; the workers leave within ms of their signal. 5 s allows
    // for a loaded VM, and a group nobody signalled keeps running.
    wait_group_gone(pgid, Duration::from_secs(5));
    for side in ["a", "b"] {
        assert!(!Path::new("/run/netns").join(format!("{testbed}-{side}")).exists(), "namespace {testbed}-{side} left; stderr:\n{err}");
    }
    assert!(!err.contains("could not undo"), "{err}");
}

#[test]
fn sigkill_takes_stress_along_and_tune_revert_restores() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let scratch = Scratch::new("kill");
    let testbed = format!("detpath-exk{}", std::process::id());
    let _ns = Namespaces(vec![format!("{testbed}-a"), format!("{testbed}-b")]);
    let (mut run, pgid) = start_stressed("kill", &scratch, &testbed);
    signal(run.pid(), libc::SIGKILL);
    // Liveness: a SIGKILL ends a process at once, the 10 s only bound the
    // kernel's reaping on a loaded VM.
    run.wait(Duration::from_secs(10));
    // PR_SET_PDEATHSIG: stress-ng goes with detpath, and its workers with it.
    // Liveness: the kernel sends the death signal when detpath dies, so the
    // group goes within ms; 5 s allows for a loaded VM, and a stress-ng
    // without PR_SET_PDEATHSIG would keep running.
    wait_group_gone(pgid, Duration::from_secs(5));
    // Nothing could revert the tuning: the journal says what to undo.
    assert!(journal_pending(&scratch.state()), "a SIGKILL leaves the journal for `detpath tune revert`");
    let rv = Command::new(BIN).args(["tune", "revert"]).env("DETPATH_STATE_DIR", scratch.state()).output().unwrap();
    assert!(rv.status.success(), "tune revert: {}{}", String::from_utf8_lossy(&rv.stdout), String::from_utf8_lossy(&rv.stderr));
    assert!(!journal_pending(&scratch.state()));
    // The testbed stays too; `testbed down` removes it.
    assert!(Path::new("/run/netns").join(format!("{testbed}-a")).exists(), "the testbed survives a SIGKILL");
    let down = Command::new(BIN).args(["testbed", "down", "--testbed", &testbed]).output().unwrap();
    assert!(down.status.success(), "{}", String::from_utf8_lossy(&down.stderr));
    assert!(!Path::new("/run/netns").join(format!("{testbed}-a")).exists());
    assert!(!Path::new("/run/netns").join(format!("{testbed}-b")).exists());
}

/// A PID that names no process (a child that has exited and been reaped).
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn testbed_down_finds_what_a_killed_sched_bench_left_and_keeps_live_ones() {
    let dead = dead_pid();
    let me = std::process::id();
    let orphans = [format!("detpath-sch-{dead}-0-a"), format!("detpath-sch-{dead}-0-b"), format!("detpath-sch{dead}-a"), format!("detpath-sch{dead}-b")];
    let live = [format!("detpath-sch-{me}-77-a"), format!("detpath-sch-{me}-77-b")];
    let _ns = Namespaces(orphans.iter().chain(live.iter()).cloned().collect());
    for n in orphans.iter().chain(live.iter()) {
        assert!(Command::new("ip").args(["netns", "add", n]).status().unwrap().success(), "ip netns add {n}");
    }
    // A testbed name of our own, so the built-in detpath-a/-b of anyone else stays.
    let own = format!("detpath-exd{me}");
    let out = Command::new(BIN).args(["testbed", "down", "--testbed", &own]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for n in &orphans {
        assert!(!Path::new("/run/netns").join(n).exists(), "{n} left by a dead process was not removed:\n{text}");
        assert!(text.contains(&format!("removed {n}")), "{text}");
    }
    for n in &live {
        assert!(Path::new("/run/netns").join(n).exists(), "{n} of a live process was removed:\n{text}");
    }
    assert!(text.contains(&format!("kept detpath-sch-{me}-77-a/-b: process {me} is using it")), "{text}");
}

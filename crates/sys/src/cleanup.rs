//! Undo on every exit path. Everything that changes the host (an XDP
//! attachment, a namespace, a tuning change, a child process) undoes itself
//! on drop; it also registers its undo here so that SIGINT / SIGTERM / SIGHUP
//! and a panic in the main thread run it before the process exits.
//!
//! Two policies, chosen once per process with [`install_signal_handler`]:
//! - [`OnSignal::CleanupAndExit`]: run every registered undo, exit 130.
//! - [`OnSignal::SetFlag`]: set [`interrupted`] so a long run can stop at
//!   the next round, keep its results and drop its guards normally; a second
//!   signal falls back to cleanup-and-exit.
//!
//! Once cleanup-and-exit has started it runs to the end: further signals only
//! print "cleaning up, please wait". Cleanup and an owner's own undo never run
//! at once ([`UndoGuard`] and [`run_all`] share one lock), so a signal that
//! arrives while the main thread is half-way through reverting the tuning
//! waits for it instead of cutting it short. When something could not be
//! undone, the last line printed names the command that finishes the job
//! (e.g. `detpath tune revert`, `detpath testbed down`).
//!
//! Child processes ([`spawn_tied`]) run in a process group of their own that
//! cleanup kills, and with `PR_SET_PDEATHSIG(SIGKILL)`, so they die with us
//! even when detpath itself is killed with SIGKILL.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// An undo: `Err` says why it failed (the entry's hint is printed then).
type Undo = Box<dyn FnOnce() -> Result<(), String> + Send>;

struct Entry {
    what: String,
    /// The command that finishes the job when this undo fails.
    hint: Option<String>,
    undo: Undo,
}

static REGISTRY: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());
/// Held while any undo runs (signal cleanup or an owner's own): they never overlap.
static RUNNING: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static EXITING: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// What a signal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// Run every registered undo, then exit 130.
    CleanupAndExit,
    /// Set [`interrupted`] so a long run stops at its next round and drops
    /// its guards itself; a second signal cleans up and exits.
    SetFlag,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // An undo that panicked must not disable every later cleanup.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unregisters its undo when dropped (the owner undid the change itself).
#[must_use = "dropping the handle unregisters the undo"]
pub struct CleanupHandle(u64);

impl Drop for CleanupHandle {
    fn drop(&mut self) {
        lock(&REGISTRY).remove(&self.0);
    }
}

/// Registers `undo` to run if the process is stopped by a signal before the
/// handle drops. `what` names the change for the message printed then.
pub fn register(what: String, undo: Box<dyn FnOnce() + Send>) -> CleanupHandle {
    register_fallible(
        what,
        None,
        Box::new(move || {
            undo();
            Ok(())
        }),
    )
}

/// Like [`register`], for an undo that can fail: `hint` is the command that
/// finishes the job by hand (printed as the last line when `undo` fails).
pub fn register_fallible(what: String, hint: Option<String>, undo: Undo) -> CleanupHandle {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    lock(&REGISTRY).insert(id, Entry { what, hint, undo });
    CleanupHandle(id)
}

/// An undo that runs exactly once: when the guard drops (the normal path) or
/// from [`run_all`] (a signal, a panic), whichever comes first, never both at
/// once. Use it for changes whose undo must not be cut short.
#[must_use = "dropping the guard runs the undo at once"]
pub struct UndoGuard(Option<u64>);

impl UndoGuard {
    /// Registers `undo`; see [`register_fallible`] for `hint`.
    pub fn new(what: impl Into<String>, hint: Option<String>, undo: impl FnOnce() -> Result<(), String> + Send + 'static) -> UndoGuard {
        let h = register_fallible(what.into(), hint, Box::new(undo));
        let id = h.0;
        std::mem::forget(h);
        UndoGuard(Some(id))
    }

    /// Runs the undo now (if cleanup has not run it already); `Err` says why it failed.
    pub fn run(mut self) -> Result<(), String> {
        self.run_inner()
    }

    /// Forgets the undo: the change stays (e.g. `testbed up` keeps its namespaces).
    pub fn disarm(mut self) {
        if let Some(id) = self.0.take() {
            lock(&REGISTRY).remove(&id);
        }
    }

    fn run_inner(&mut self) -> Result<(), String> {
        let Some(id) = self.0.take() else { return Ok(()) };
        let _running = lock(&RUNNING);
        let entry = lock(&REGISTRY).remove(&id);
        match entry {
            Some(e) => {
                let r = (e.undo)();
                if let Err(why) = &r {
                    eprintln!("detpath: undoing {} failed: {why}", e.what);
                    if let Some(h) = &e.hint {
                        eprintln!("detpath: to finish, run `{h}`");
                    }
                }
                r
            }
            // run_all took it (and held RUNNING until it was done).
            None => Ok(()),
        }
    }
}

impl Drop for UndoGuard {
    fn drop(&mut self) {
        let _ = self.run_inner();
    }
}

/// Runs every registered undo, newest first, and prints one last line naming
/// the commands that finish what failed. Safe to call more than once and
/// from any thread; returns the hints of the undos that failed.
pub fn run_all() -> Vec<String> {
    let _running = lock(&RUNNING);
    let items: Vec<(u64, Entry)> = std::mem::take(&mut *lock(&REGISTRY)).into_iter().rev().collect();
    let mut failed: Vec<(String, Option<String>)> = Vec::new();
    for (_, e) in items {
        eprintln!("detpath: undoing {}", e.what);
        // A panicking undo must not stop the ones after it.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(e.undo)).unwrap_or_else(|_| Err("the undo panicked".into()));
        if let Err(why) = r {
            eprintln!("detpath: undoing {} failed: {why}", e.what);
            failed.push((e.what, e.hint));
        }
    }
    let mut hints: Vec<String> = failed.iter().filter_map(|(_, h)| h.clone()).collect();
    hints.dedup();
    if !failed.is_empty() {
        let what: Vec<&str> = failed.iter().map(|(w, _)| w.as_str()).collect();
        if hints.is_empty() {
            eprintln!("detpath: could not undo: {}", what.join("; "));
        } else {
            let cmds: Vec<String> = hints.iter().map(|h| format!("`{h}`")).collect();
            eprintln!("detpath: could not undo: {}; to finish, run {}", what.join("; "), cmds.join(" and "));
        }
    }
    hints
}

/// True once a SIGINT/SIGTERM arrived under [`OnSignal::SetFlag`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// True once cleanup-and-exit has started (a signal or a panic); from then on the process only undoes and exits.
pub fn exiting() -> bool {
    EXITING.load(Ordering::Relaxed)
}

/// Runs every undo and exits with `code`; the first caller does it, later
/// callers (a third Ctrl-C, a panic during cleanup) only wait for it.
fn cleanup_and_exit(code: i32) -> ! {
    if EXITING.swap(true, Ordering::SeqCst) {
        eprintln!("detpath: cleaning up, please wait");
        // The first caller exits the process when it is done.
        loop {
            std::thread::park();
        }
    }
    run_all();
    std::process::exit(code)
}

/// Installs the process's SIGINT/SIGTERM/SIGHUP handler (first call wins).
pub fn install_signal_handler(policy: OnSignal) {
    INSTALL.call_once(|| {
        let r = ctrlc::set_handler(move || {
            if EXITING.load(Ordering::SeqCst) {
                eprintln!("detpath: cleaning up, please wait");
                return;
            }
            if policy == OnSignal::SetFlag && !INTERRUPTED.swap(true, Ordering::SeqCst) {
                eprintln!("\ndetpath: interrupted; finishing and keeping results (again to stop at once, after undoing every change)");
                return;
            }
            // Cleanup runs on a thread of its own so that this handler stays
            // free to answer further signals with a message instead of queueing them.
            EXITING.store(true, Ordering::SeqCst);
            let spawned = std::thread::Builder::new().name("detpath-cleanup".into()).spawn(|| {
                run_all();
                std::process::exit(130)
            });
            if spawned.is_err() {
                run_all();
                std::process::exit(130)
            }
        });
        if let Err(e) = r {
            eprintln!("detpath: cannot install the signal handler: {e}");
        }
    });
}

/// Runs the program's main function `f` so that a panic unwinds it (dropping
/// its guards), then runs every undo still registered (those of other
/// threads) and exits 101. Returns `f`'s exit code otherwise.
pub fn guard_main(f: impl FnOnce() -> i32) -> i32 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(code) => code,
        Err(_) => {
            eprintln!("detpath: internal error (a panic, reported above); undoing every change");
            cleanup_and_exit(101)
        }
    }
}

/// Makes the process `cmd` starts die with the thread that spawns it
/// (`PR_SET_PDEATHSIG(SIGKILL)`: also when detpath is killed with SIGKILL)
/// and lead a process group of its own, so that one `kill(-pgid)` reaches
/// it and everything it forks. The death signal is tied to the spawning
/// *thread*: spawn from a thread that lives as long as the child should.
pub fn tie_to_us(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    let parent = unsafe { libc::getpid() };
    cmd.process_group(0);
    // SAFETY: the closure makes async-signal-safe system calls only (prctl,
    // getppid) and touches no memory allocated after the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then no signal comes.
            if libc::getppid() != parent {
                return Err(io::Error::other("the parent process exited while starting the child"));
            }
            Ok(())
        })
    };
    cmd
}

/// A child process tied to this one ([`tie_to_us`]); its process group is
/// killed by cleanup (a signal, a panic) and when this value drops.
pub struct TiedChild {
    /// `None` once [`TiedChild::wait_with_output`] took it.
    child: Option<Child>,
    pgid: i32,
    _handle: CleanupHandle,
}

/// Spawns `cmd` tied to this process ([`tie_to_us`]) and registered for
/// cleanup under `what` (e.g. "stress-ng").
pub fn spawn_tied(cmd: &mut Command, what: &str) -> io::Result<TiedChild> {
    let child = tie_to_us(cmd).spawn()?;
    let pgid = child.id() as i32;
    let handle = register(
        format!("{what} (process group {pgid})"),
        Box::new(move || {
            // SAFETY: signals the process group our child leads; ESRCH (already gone) is fine.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            // Wait (briefly) until the leader is dead, so that the undos after
            // this one (e.g. dissolving the cpuset shield it ran in) find it gone.
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(2) {
                let mut status = 0;
                // SAFETY: reaps our own child by PID without blocking; the process exits right after cleanup.
                let r = unsafe { libc::waitpid(pgid, &mut status, libc::WNOHANG) };
                if r != 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }),
    );
    Ok(TiedChild { child: Some(child), pgid, _handle: handle })
}

impl TiedChild {
    /// Process id (and process group id) of the child.
    pub fn id(&self) -> u32 {
        self.pgid as u32
    }
    /// The child, for its pipes and `try_wait`.
    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("the child is present until wait_with_output consumes self")
    }
    /// Sends `sig` to the child's whole process group.
    pub(crate) fn signal_group(&self, sig: i32) {
        // SAFETY: signals the process group our child leads.
        unsafe { libc::kill(-self.pgid, sig) };
    }
    /// Asks the group to stop (SIGTERM), waits up to `grace`, then kills it (SIGKILL) and reaps the child.
    pub fn stop(mut self, grace: Duration) -> io::Result<ExitStatus> {
        self.signal_group(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(st) = self.child().try_wait()? {
                self.signal_group(libc::SIGKILL);
                return Ok(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.signal_group(libc::SIGKILL);
        self.child().wait()
    }
    /// Waits for the child to exit and collects its piped output; what it
    /// forked and left behind in its group is killed.
    pub fn wait_with_output(mut self) -> io::Result<Output> {
        let child = self.child.take().expect("the child is present until wait_with_output consumes self");
        // Drop (after this) kills what is left of the group and unregisters.
        child.wait_with_output()
    }
}

impl Drop for TiedChild {
    fn drop(&mut self) {
        self.signal_group(libc::SIGKILL);
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The registry is process-wide: these tests run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn counter(hits: &Arc<AtomicU64>, by: u64) -> Box<dyn FnOnce() + Send> {
        let hits = hits.clone();
        Box::new(move || {
            hits.fetch_add(by, Ordering::SeqCst);
        })
    }

    #[test]
    fn dropped_handles_do_not_run_and_live_ones_run_once() {
        let _s = lock(&SERIAL);
        let hits = Arc::new(AtomicU64::new(0));
        let h1 = register("one".into(), counter(&hits, 1));
        let h2 = register("two".into(), counter(&hits, 10));
        drop(h1);
        run_all();
        run_all();
        assert_eq!(hits.load(Ordering::SeqCst), 10);
        drop(h2);
    }

    #[test]
    fn an_undo_guard_runs_once_whoever_comes_first() {
        let _s = lock(&SERIAL);
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        let g = UndoGuard::new("guarded", None, move || {
            h.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        run_all();
        drop(g);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        let h = hits.clone();
        let g = UndoGuard::new("guarded", None, move || {
            h.fetch_add(1, Ordering::SeqCst);
            Err("still there".into())
        });
        assert_eq!(g.run().unwrap_err(), "still there");
        run_all();
        assert_eq!(hits.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn failed_undos_return_their_hints_and_later_ones_still_run() {
        let _s = lock(&SERIAL);
        let hits = Arc::new(AtomicU64::new(0));
        let _ok = register("counted".into(), counter(&hits, 1));
        let _bad = register_fallible("tuning".into(), Some("detpath tune revert".into()), Box::new(|| Err("EBUSY".into())));
        let _boom = register_fallible("panics".into(), Some("detpath testbed down".into()), Box::new(|| panic!("undo bug")));
        let hints = run_all();
        assert_eq!(hints, ["detpath testbed down", "detpath tune revert"]);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_undo_waits_for_a_running_one() {
        let _s = lock(&SERIAL);
        let order = Arc::new(Mutex::new(Vec::new()));
        let o = order.clone();
        let g = UndoGuard::new("slow", None, move || {
            std::thread::sleep(Duration::from_millis(200));
            lock(&o).push("owner done");
            Ok(())
        });
        let t = std::thread::spawn(move || drop(g));
        std::thread::sleep(Duration::from_millis(50));
        // A signal's cleanup arrives mid-undo: it waits, and finds nothing left to do.
        run_all();
        lock(&order).push("cleanup done");
        t.join().unwrap();
        assert_eq!(*lock(&order), ["owner done", "cleanup done"]);
    }

    #[test]
    fn a_tied_child_dies_with_its_group() {
        let _s = lock(&SERIAL);
        // sh forks a sleep into the same group: killing the group reaches both.
        let mut c = spawn_tied(Command::new("sh").args(["-c", "sleep 30 & echo $!; wait"]).stdout(std::process::Stdio::piped()), "sh").unwrap();
        let mut line = String::new();
        {
            use std::io::BufRead;
            std::io::BufReader::new(c.child().stdout.take().unwrap()).read_line(&mut line).unwrap();
        }
        let grandchild: i32 = line.trim().parse().unwrap();
        // SAFETY: getpgid on a pid we just learned; no memory involved.
        assert_eq!(unsafe { libc::getpgid(grandchild) }, c.id() as i32, "the grandchild is in the child's group");
        run_all();
        let t = Instant::now();
        // SAFETY: kill with signal 0 only probes for existence.
        while unsafe { libc::kill(grandchild, 0) } == 0 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
            // The grandchild is reparented (to init or a subreaper) and reaped there; a zombie still answers kill(0).
            if std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|s| s.contains(") Z ")) {
                break;
            }
        }
        // The undo reaped the child itself (so undos after it find it gone).
        assert!(!std::path::Path::new(&format!("/proc/{}", c.id())).exists(), "the child was killed and reaped");
        // Gone, or a zombie waiting for whoever adopted it to reap it.
        let gone = match std::fs::read_to_string(format!("/proc/{grandchild}/stat")) {
            Ok(s) => s.contains(") Z "),
            Err(_) => true,
        };
        assert!(gone, "the grandchild {grandchild} survived the group kill");
    }

    #[test]
    fn a_panicking_main_runs_the_undos() {
        let _s = lock(&SERIAL);
        // guard_main exits the process on a panic, so try the part before that: unwinding drops guards.
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        let r = std::panic::catch_unwind(move || {
            let _g = UndoGuard::new("in main", None, move || {
                h.fetch_add(1, Ordering::SeqCst);
                Ok(())
            });
            panic!("boom");
        });
        assert!(r.is_err());
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(guard_main(|| 7), 7);
    }
}

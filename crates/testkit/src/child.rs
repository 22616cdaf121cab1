//! A child process a test started, stopped by its PID when the test ends:
//! SIGTERM first (so a daemon runs its cleanup: XDP programs, namespaces),
//! SIGKILL only when it lingers. A failing assertion unwinds through the
//! drop, so a panicking test leaves no daemon behind either.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// How long a child may take to exit after SIGTERM before it is killed.
const GRACE: Duration = Duration::from_secs(10);

/// A spawned child, stopped on drop. `.0` is the [`Child`] (its pipes, its id).
pub struct ChildProcess(pub Child);

impl ChildProcess {
    /// SIGTERM, wait up to 10 s, then SIGKILL; the exit status.
    pub fn stop(&mut self) -> ExitStatus {
        if let Some(s) = self.0.try_wait().ok().flatten() {
            return s;
        }
        // SAFETY: kill(2) on the PID of a child we spawned and have not reaped
        // (try_wait above found it running), so the PID is still ours.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let t = Instant::now();
        loop {
            match self.0.try_wait() {
                Ok(Some(s)) => return s,
                Ok(None) if t.elapsed() < GRACE => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = self.0.kill();
                    return self.0.wait().expect("wait for a killed child");
                }
            }
        }
    }

    /// Whether the child is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.running() {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn stop_ends_a_child_by_sigterm_and_reports_its_status() {
        let mut c = ChildProcess(Command::new("sleep").arg("30").spawn().unwrap());
        assert!(c.running());
        let s = c.stop();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(s.signal(), Some(libc::SIGTERM));
        assert!(!c.running());
    }

    #[test]
    fn a_dropped_child_is_stopped() {
        let c = ChildProcess(Command::new("sleep").arg("30").spawn().unwrap());
        let pid = c.0.id() as libc::pid_t;
        drop(c);
        // SAFETY: signal 0 only asks whether the PID exists; it was reaped by the drop.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "the child outlived its guard");
    }
}

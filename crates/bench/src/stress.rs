//! CPU load for the "& Stress" configurations: stress-ng on the datapath
//! cores, for exactly the run's duration, stopped (by PID) afterwards.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running stress-ng; stopped on drop.
pub struct Stress {
    child: Child,
    pub percent: u8,
    pub cores: Vec<usize>,
}

/// Why stress could not start; said before the run begins.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    #[error("stress-ng is not installed; install it with `apt-get install stress-ng` (or `make deps`)")]
    Missing,
    #[error("stress level {0}% is out of range (1..=100)")]
    BadPercent(u8),
    #[error("stress-ng failed to start: {0}")]
    Failed(String),
}

impl Stress {
    /// Starts one stress-ng CPU worker per core at `percent` load, pinned to `cores`.
    /// Fails when stress-ng is missing or exits at once (so a "stress" column is never a lie).
    pub fn start(percent: u8, cores: &[usize]) -> Result<Stress, StressError> {
        if percent == 0 || percent > 100 {
            return Err(StressError::BadPercent(percent));
        }
        let taskset = cores.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
        let mut child = Command::new("stress-ng")
            .args(["--cpu", &cores.len().to_string(), "--cpu-load", &percent.to_string(), "--taskset", &taskset, "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| if e.kind() == std::io::ErrorKind::NotFound { StressError::Missing } else { StressError::Failed(e.to_string()) })?;
        // Give it a moment to fail on bad arguments or a missing facility.
        std::thread::sleep(Duration::from_millis(300));
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return Err(StressError::Failed(format!("{status}: {}", err.trim())));
        }
        Ok(Stress { child, percent, cores: cores.to_vec() })
    }

    /// Process id of the stress-ng parent.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Stress {
    fn drop(&mut self) {
        // SIGTERM lets stress-ng stop its workers; SIGKILL if it lingers.
        // SAFETY: signalling our own child by its PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

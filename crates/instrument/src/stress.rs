//! CPU load for the "& Stress" configurations: stress-ng on the datapath
//! cores, for exactly the run's duration, stopped (by its process group)
//! afterwards. stress-ng runs tied to detpath (`cleanup::spawn_tied`): a
//! second Ctrl-C or a panic kills its group, and it dies with detpath even
//! when detpath is killed with SIGKILL (`PR_SET_PDEATHSIG`; stress-ng's
//! workers follow their parent).

use detpath::sys::cleanup::{self, TiedChild};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A running stress-ng; stopped on drop.
pub struct Stress {
    /// `None` only while dropping.
    child: Option<TiedChild>,
    /// The load each worker puts on its core, percent (stress-ng's `--cpu-load`).
    pub percent: u8,
    /// The cores asked for, one worker each (under a tuning shield the
    /// workers run on the housekeeping cores instead: [`Stress::effective_cores`]).
    pub cores: Vec<usize>,
}

/// Why stress could not start; said before the run begins.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// stress-ng is not on the PATH.
    #[error("stress-ng is not installed; install it with `apt-get install stress-ng` (or `make deps`)")]
    Missing,
    /// A load outside 1..=100 percent.
    #[error("stress level {0}% is out of range (1..=100)")]
    BadPercent(u8),
    /// stress-ng could not be started or exited at once (its status and stderr).
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
        // Under tuning with a cpuset shield (detpath_tune::shield), the load is
        // what isolation is for: like every other process, it runs on the
        // housekeeping cores only, as many workers as asked.
        let shield = detpath_tune::shield::active(&detpath_tune::Host::real());
        let placed: Vec<usize> = match &shield {
            Some(s) => {
                let kept: Vec<usize> = cores.iter().copied().filter(|c| s.cores.contains(*c)).collect();
                if kept.is_empty() {
                    s.cores.iter().collect()
                } else {
                    kept
                }
            }
            None => cores.to_vec(),
        };
        let taskset = placed.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new("stress-ng");
        cmd.args(["--cpu", &cores.len().to_string(), "--cpu-load", &percent.to_string(), "--taskset", &taskset, "--quiet"]);
        if let Some(s) = &shield {
            join_cgroup_at_exec(&mut cmd, &s.procs_file)?;
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cleanup::spawn_tied(&mut cmd, "stress-ng").map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StressError::Missing
            } else {
                StressError::Failed(e.to_string())
            }
        })?;
        // Give it a moment to fail on bad arguments or a missing facility.
        std::thread::sleep(Duration::from_millis(300));
        if let Ok(Some(status)) = child.child().try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.child().stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return Err(StressError::Failed(format!("{status}: {}", err.trim())));
        }
        Ok(Stress { child: Some(child), percent, cores: cores.to_vec() })
    }

    /// The cores the load runs on (its `Cpus_allowed_list`): those asked, or under a tuning shield the housekeeping ones.
    pub fn effective_cores(&self) -> Vec<usize> {
        let allowed = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:").map(|v| v.trim().to_string())))
            .and_then(|l| detpath_tune::CpuList::parse(&l).ok());
        allowed.map_or_else(|| self.cores.clone(), |a| a.iter().collect())
    }

    /// Process id of the stress-ng parent.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, TiedChild::id)
    }
}

impl Drop for Stress {
    fn drop(&mut self) {
        // SIGTERM lets stress-ng stop its workers; SIGKILL to the group if it lingers.
        if let Some(c) = self.child.take() {
            let _ = c.stop(Duration::from_secs(1));
        }
    }
}

/// Makes the command's process write itself ("0": the writer) into a cgroup
/// v1 `cgroup.procs` file between fork and exec, so it and all it forks start there.
fn join_cgroup_at_exec(cmd: &mut Command, procs: &std::path::Path) -> Result<(), StressError> {
    let path = std::ffi::CString::new(procs.as_os_str().as_encoded_bytes()).map_err(|e| StressError::Failed(e.to_string()))?;
    // SAFETY: the closure only makes async-signal-safe system calls (open,
    // write, close) on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if n == 1 {
                Ok(())
            } else {
                Err(err)
            }
        })
    };
    Ok(())
}

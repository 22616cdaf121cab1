//! What a reference program run as a child process (sockperf, ddsperf)
//! cost in CPU, so its rows carry the same `cpu` record as detpath's.
//!
//! A child's CPU is its user and system time, which the kernel keeps for
//! the whole process (every thread, the exited ones included) and for the
//! children it waited for. It is read when the child has exited but before
//! it is reaped: `waitid(P_PID, pid, WEXITED | WNOWAIT)` with the raw
//! system call's fifth argument, a `rusage` the kernel fills with the
//! zombie's `RUSAGE_BOTH` (self and waited-for children), to the µs. The
//! child stays a zombie, so the owner of its `std::process::Child` reaps
//! it afterwards as usual and no process id can be reused in between.
//!
//! The programs run as `ip netns exec NS [taskset -c N] [chrt -f P] PROG`:
//! `ip netns exec` (without `-all`), taskset and chrt each exec the next
//! program in the same process, so the child is the reference program
//! itself; its time includes the few ms those wrappers spent before their
//! exec (entering the namespace, remounting /sys, setting the affinity).

use detpath::sys::cputime::ThreadCpu;
use std::io;

/// Blocks until the child `pid` of this process has exited, without reaping
/// it, and returns its user and system CPU time in seconds (all its threads
/// and its waited-for children). Fails with ECHILD when `pid` is not an
/// unreaped child of this process.
pub fn exited_times(pid: u32) -> io::Result<(f64, f64)> {
    // SAFETY: all-zero siginfo_t and rusage are valid values; waitid fills them.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waitid(2) as the kernel defines it (which, id, infop,
        // options, rusage), with valid out-pointers that outlive the call.
        // WNOWAIT leaves the child to be reaped by its `Child`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_waitid,
                libc::P_PID,
                pid as libc::id_t,
                &mut info as *mut libc::siginfo_t,
                libc::WEXITED | libc::WNOWAIT,
                &mut ru as *mut libc::rusage,
            )
        };
        if r == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok((secs(ru.ru_utime), secs(ru.ru_stime)))
}

/// [`exited_times`] as the `cpu` record's thread entry: the child `pid`,
/// named `name` (`sockperf-server`, `ddsperf-ping`), on the core it was
/// pinned to. `None` when its times cannot be read (then the row lists
/// the threads that could be, rather than failing a finished run).
pub fn exited_thread(name: &str, core: Option<u32>, pid: u32) -> Option<ThreadCpu> {
    let (user_s, system_s) = exited_times(pid).ok()?;
    Some(ThreadCpu { name: name.into(), core, user_s, system_s })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn an_exited_child_reports_its_cpu_and_is_still_reaped_by_its_owner() {
        // A shell that burns CPU in a loop for ~20 ms, then exits (short: other
        // unit tests measure their own CPU beside it).
        let mut child = Command::new("sh").args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]).spawn().unwrap();
        let (user, system) = exited_times(child.id()).unwrap();
        assert!(user + system > 0.0, "user {user} s, system {system} s");
        assert!(user + system < 60.0, "user {user} s, system {system} s");
        // Not reaped by the look: the owner still gets the exit status.
        assert!(child.wait().unwrap().success());
        // Reaped now: nothing left to look at.
        assert!(exited_times(child.id()).is_err());
    }

    #[test]
    fn a_waited_for_grandchild_is_in_its_parents_time() {
        // The shell forks a CPU-burning subshell and waits for it.
        let mut child = Command::new("sh").args(["-c", "(i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done); exit 0"]).spawn().unwrap();
        let t = exited_thread("sh", Some(0), child.id()).unwrap();
        child.wait().unwrap();
        assert!(t.total_s() > 0.0 && t.name == "sh" && t.core == Some(0), "{t:?}");
    }
}

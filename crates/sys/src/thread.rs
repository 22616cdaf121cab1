//! What the kernel's scheduler accounts to the calling thread: involuntary
//! context switches, CPU time, and the time spent runnable but waiting for
//! a core (`/proc/thread-self/schedstat`). A polling loop reads these to tell
//! whether it has its core to itself (the tail attribution of `detpath
//! bench`, the adaptive wait of `detpath pubsub`).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Involuntary context switches of the calling thread so far.
pub fn involuntary_switches() -> u64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_nivcsw as u64
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID: up to date to
/// the ns, unlike getrusage's, which lags by up to a tick).
pub fn cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid, writable timespec; the clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The fields of a schedstat file ("run wait slices"): ns on a core, ns
/// runnable but waiting for one.
pub fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// The run-queue wait of the thread that opened it: how long it has been
/// ready to run while another task had its core. Opened once, then read
/// with one `pread` and no allocation.
#[derive(Debug)]
pub struct RunQueueWait {
    file: File,
}

impl RunQueueWait {
    /// Opens the calling thread's schedstat (None where the kernel has no
    /// CONFIG_SCHED_INFO or /proc is not mounted).
    pub fn of_this_thread() -> Option<RunQueueWait> {
        File::open("/proc/thread-self/schedstat").ok().map(|file| RunQueueWait { file })
    }

    /// ns waited on a run queue so far (None if the read fails).
    pub fn read_ns(&self) -> Option<u64> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        parse_schedstat(std::str::from_utf8(&buf[..n]).ok()?).map(|(_, wait)| wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_text_gives_run_and_wait() {
        assert_eq!(parse_schedstat("2099735970 90261380625 66890\n"), Some((2099735970, 90261380625)));
        assert_eq!(parse_schedstat("12\n"), None);
        assert_eq!(parse_schedstat("x 1 2"), None);
    }

    #[test]
    fn a_thread_that_shares_its_core_with_a_spinner_waits_on_the_run_queue() {
        let core = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
        let pin = move || {
            // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays in bounds.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(core, &mut set) };
            // SAFETY: the calling thread, a valid set of the right size.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let spinner = std::thread::spawn(move || {
            pin();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        pin();
        let w = RunQueueWait::of_this_thread().expect("this kernel has /proc/thread-self/schedstat");
        let before = w.read_ns().unwrap();
        // Spin 200 ms on the spinner's core: the scheduler shares it, so this
        // thread waits for a good part of that time.
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(200) {
            std::hint::spin_loop();
        }
        let waited = w.read_ns().unwrap() - before;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(waited > 20_000_000, "waited only {waited} ns of 200 ms beside a spinner");
    }
}

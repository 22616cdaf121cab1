//! What the kernel's scheduler accounts to the calling thread: involuntary
//! context switches, CPU time, and the time spent runnable but waiting for
//! a core (`/proc/thread-self/schedstat`). A polling loop reads these to tell
//! whether it has its core to itself (the tail attribution of `detpath
//! bench`, the adaptive wait of `detpath pubsub`).

use std::fs::File;
use std::os::unix::fs::FileExt;

/// The calling thread's id (as the scheduler and its tracepoints name it).
pub fn tid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

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

/// `struct sched_attr` (include/uapi/linux/sched/types.h), first version.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Asks the fair scheduler (EEVDF, Linux 6.12+) for a short time slice for
/// the calling SCHED_OTHER thread: a task with a shorter slice gets an
/// earlier deadline, so when it wakes it preempts a CPU hog at once instead
/// of waiting out the hog's slice. The thread's policy and nice value stay
/// as they are. No privilege needed; `slice_ns` is clamped by the kernel to
/// 0.1-100 ms. Kernels before 6.12 accept the call and ignore the slice.
/// Returns the error of `sched_getattr`/`sched_setattr` when refused.
pub fn request_fair_slice(slice_ns: u64) -> std::io::Result<()> {
    let mut attr = sched_attr()?;
    attr.size = std::mem::size_of::<SchedAttr>() as u32;
    attr.runtime = slice_ns;
    // SAFETY: a valid, initialised sched_attr of the size it states; pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's scheduling attributes.
fn sched_attr() -> std::io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: a writable sched_attr; the size passed is its size; pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr as *mut SchedAttr, std::mem::size_of::<SchedAttr>() as u32, 0u32) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(attr)
}

/// Whether the calling thread runs under the fair scheduler (SCHED_OTHER,
/// SCHED_BATCH), not a real-time or deadline policy.
pub fn is_fair_policy() -> bool {
    // SAFETY: sched_getscheduler has no preconditions; 0 is the calling thread.
    matches!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER | libc::SCHED_BATCH)
}

/// The calling thread's fair-scheduler slice request in ns (0: the default).
pub fn fair_slice() -> std::io::Result<u64> {
    sched_attr().map(|a| a.runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_can_ask_for_a_short_fair_slice() {
        std::thread::spawn(|| {
            // A thread running niced (as under `nice -n 5`) keeps its nice value:
            // the slice request changes nothing else (raising priority back to
            // nice 0 would need CAP_SYS_NICE).
            // SAFETY: setpriority on the calling thread (tid), which exists.
            let tid = unsafe { libc::gettid() } as libc::id_t;
            assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 5) }, 0);
            request_fair_slice(200_000).expect("sched_setattr SCHED_OTHER needs no privilege");
            // 6.12+ keeps the request (sched_getattr reports it); older kernels report 0.
            let got = fair_slice().unwrap();
            assert!(got == 200_000 || got == 0, "slice {got}");
            // SAFETY: getpriority on the calling thread.
            assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) }, 5, "the nice value is kept");
            assert!(is_fair_policy());
        })
        .join()
        .unwrap();
    }

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

//! The calling thread and the scheduler.
//!
//! What the kernel's scheduler accounts to the calling thread: involuntary
//! context switches, CPU time, and the time spent runnable but waiting for
//! a core (`/proc/thread-self/schedstat`). A polling loop reads these to tell
//! whether it has its core to itself (the tail attribution of `detpath
//! bench`, the adaptive wait of `detpath pubsub`).
//!
//! Real-time setup of a datapath's polling thread: pin it to a core
//! ([`pin_current_thread`], the one pinning function of the workspace), run
//! it SCHED_FIFO, lock and prefault its memory, check that the core is quiet
//! ([`check_core`]), and hold the C-state limit (/dev/cpu_dma_latency) while
//! the datapath runs ([`CpuDmaLatencyHold`]).
//!
//! ```no_run
//! use detpath_sys::thread::{CpuDmaLatencyHold, RealtimeConfig, RtError};
//! let _cstates = CpuDmaLatencyHold::new(0)?;          // as long as the endpoint lives
//! let handle = std::thread::spawn(|| -> Result<(), RtError> {
//!     let cfg = RealtimeConfig { core: 1, fifo_priority: Some(50), lock_memory: true, strict: false };
//!     for w in cfg.apply_to_current_thread()? {
//!         eprintln!("warning: {w}");
//!     }
//!     // busy-poll here
//!     Ok(())
//! });
//! # handle.join().unwrap()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::cpu::{CoreError, CpuList, Cpus};

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

/// Something about a core that will hurt worst-case latency. The fields name
/// the core and what was found (IRQs as `"41 (virtio3-rx)"`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The core is not in `isolcpus`: the scheduler puts other tasks on it.
    NotIsolated {
        /// The core checked.
        core: usize,
    },
    /// IRQs (number and device) may be delivered to the core.
    IrqsOnCore {
        /// The core checked.
        core: usize,
        /// Each IRQ as `"41 (virtio3-rx)"`.
        irqs: Vec<String>,
    },
    /// The core's SMT siblings are online.
    SmtSiblingOnline {
        /// The core checked.
        core: usize,
        /// Its online siblings.
        siblings: CpuList,
    },
    /// RT throttling is on: a SCHED_FIFO busy poller is stopped periodically.
    RtThrottling {
        /// `kernel.sched_rt_runtime_us`.
        runtime_us: i64,
        /// `kernel.sched_rt_period_us`.
        period_us: i64,
    },
    /// The core's frequency governor is not `performance`.
    Governor {
        /// The core checked.
        core: usize,
        /// The governor it runs.
        governor: String,
    },
}

impl Warning {
    /// Whether [`RealtimeConfig::strict`] refuses the core for this warning
    /// (the core is not isolated, or carries IRQs).
    pub fn is_blocking(&self) -> bool {
        matches!(self, Warning::NotIsolated { .. } | Warning::IrqsOnCore { .. })
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NotIsolated { core } => {
                write!(f, "core {core} is not isolated (add isolcpus={core} to the kernel command line)")
            }
            Warning::IrqsOnCore { core, irqs } => {
                write!(f, "core {core} may receive {} IRQ(s): {} (move them: detpath tune apply --cores {core})", irqs.len(), irqs.join(", "))
            }
            Warning::SmtSiblingOnline { core, siblings } => {
                write!(f, "core {core} shares its physical core with online CPU(s) {siblings}")
            }
            Warning::RtThrottling { runtime_us, period_us } => {
                write!(f, "RT throttling stops SCHED_FIFO threads after {runtime_us} us of every {period_us} us (sysctl kernel.sched_rt_runtime_us=-1)")
            }
            Warning::Governor { core, governor } => {
                write!(f, "core {core} runs the `{governor}` frequency governor, not `performance`")
            }
        }
    }
}

/// Checks the core a real-time thread will run on (on the real host).
pub fn check_core(core: usize) -> Result<Vec<Warning>, RtError> {
    check_core_on(&Cpus::real(), core)
}

/// [`check_core`] on any host tree ([`Cpus::at`]: a fake tree in tests).
pub fn check_core_on(host: &Cpus, core: usize) -> Result<Vec<Warning>, RtError> {
    let one = CpuList::from_cpus([core]);
    let online = host.online();
    CoreError::check(core, &host.possible(), &online)?;
    let mut w = vec![];
    if !host.isolated().contains(core) {
        w.push(Warning::NotIsolated { core });
    }
    let mut irqs = vec![];
    for irq in host.irqs() {
        if irq.actions.is_empty() {
            continue; // no handler: never fires
        }
        let aff = host.read_trim(&irq.affinity_list).and_then(|s| CpuList::parse(&s).ok());
        if aff.is_some_and(|a| a.contains(core)) {
            irqs.push(format!("{} ({})", irq.number, irq.actions.join(",")));
        }
    }
    if !irqs.is_empty() {
        w.push(Warning::IrqsOnCore { core, irqs });
    }
    if let Some(s) = host.read_trim(&format!("/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list")) {
        let sib = CpuList::parse(&s).unwrap_or_default().difference(&one).intersection(&online);
        if !sib.is_empty() {
            w.push(Warning::SmtSiblingOnline { core, siblings: sib });
        }
    }
    let num = |p: &str| host.read_trim(p).and_then(|v| v.parse::<i64>().ok());
    if let (Some(rt), Some(period)) = (num("/proc/sys/kernel/sched_rt_runtime_us"), num("/proc/sys/kernel/sched_rt_period_us")) {
        if rt >= 0 {
            w.push(Warning::RtThrottling { runtime_us: rt, period_us: period });
        }
    }
    if let Some(g) = host.read_trim(&format!("/sys/devices/system/cpu/cpu{core}/cpufreq/scaling_governor")) {
        if g != "performance" {
            w.push(Warning::Governor { core, governor: g });
        }
    }
    Ok(w)
}

fn cpu_set_of(cores: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all-zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cores {
        // SAFETY: c < CPU_SETSIZE is checked by the callers.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

fn current_affinity() -> io::Result<libc::cpu_set_t> {
    let mut set = cpu_set_of(&[]);
    // SAFETY: set is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(set)
}

fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: set is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn current_thread_affinity() -> io::Result<CpuList> {
    let set = current_affinity()?;
    // SAFETY: CPU_ISSET reads a bit of a valid set; i < CPU_SETSIZE.
    Ok(CpuList::from_cpus((0..libc::CPU_SETSIZE as usize).filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })))
}

/// Pins the calling thread to `core`.
pub fn pin_current_thread(core: usize) -> Result<(), RtError> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(RtError::BadCore { core, reason: format!("above CPU_SETSIZE ({})", libc::CPU_SETSIZE) });
    }
    let set = cpu_set_of(&[core]);
    match set_affinity(&set) {
        // A thread of a process the tuning's shield holds on the housekeeping
        // cores (crate::cgroup): it leaves the shield, then pins.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && crate::cgroup::leave_shield(tid()) => set_affinity(&set),
        r => r,
    }
    .map_err(|source| RtError::Pin { core, source })
}

fn rt_hint(priority: u8) -> String {
    let mut h = format!("needs CAP_SYS_NICE (root) or RLIMIT_RTPRIO >= {priority} (`ulimit -r`, LimitRTPRIO= in a systemd unit)");
    // cgroup v1 RT group scheduling: a cgroup with no RT budget cannot run SCHED_FIFO at all.
    if let Ok(cg) = fs::read_to_string("/proc/self/cgroup") {
        for line in cg.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, ctrl, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if ctrl.split(',').any(|c| c == "cpu") {
                let f = format!("/sys/fs/cgroup/cpu{}/cpu.rt_runtime_us", if path == "/" { "" } else { path });
                if fs::read_to_string(&f).map(|v| v.trim() == "0").unwrap_or(false) {
                    h.push_str(&format!("; this process's cgroup has no RT budget ({f} is 0): raise it or run in the root cpu cgroup"));
                }
            }
        }
    }
    h
}

/// Runs the calling thread SCHED_FIFO at `priority` (1..=99).
pub fn set_fifo(priority: u8) -> Result<(), RtError> {
    if !(1..=99).contains(&priority) {
        return Err(RtError::InvalidPriority(priority));
    }
    let param = libc::sched_param { sched_priority: i32::from(priority) };
    // SAFETY: param is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        let source = io::Error::last_os_error();
        return Err(RtError::SetScheduler { priority, source, hint: rt_hint(priority) });
    }
    Ok(())
}

/// Returns the calling thread to SCHED_OTHER (nice 0).
pub fn set_normal() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: param is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's scheduling policy and priority (`libc::SCHED_*`, priority).
pub fn current_policy() -> (i32, i32) {
    // SAFETY: sched_getscheduler/getparam on the calling thread with a valid out pointer.
    unsafe {
        let pol = libc::sched_getscheduler(0);
        let mut p = libc::sched_param { sched_priority: 0 };
        libc::sched_getparam(0, &mut p);
        (pol, p.sched_priority)
    }
}

/// Stack prefaulted by [`lock_memory`].
pub const PREFAULT_STACK: usize = 256 * 1024;

/// Locks all current and future memory of the process (`mlockall(MCL_CURRENT |
/// MCL_FUTURE)`) and prefaults [`PREFAULT_STACK`] bytes of the calling thread's
/// stack, so the datapath never takes a page fault. Process-wide; undo with
/// [`unlock_memory`].
pub fn lock_memory() -> Result<(), RtError> {
    lock_memory_with(PREFAULT_STACK)
}

/// [`lock_memory`] with a chosen stack prefault size (at most 4 MiB; the
/// thread's stack must be that large).
pub fn lock_memory_with(prefault_stack: usize) -> Result<(), RtError> {
    // SAFETY: mlockall has no memory-safety preconditions.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc != 0 {
        let source = io::Error::last_os_error();
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into a valid rlimit.
        unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) };
        let hint = format!("RLIMIT_MEMLOCK is {} bytes: raise it (`ulimit -l unlimited`, LimitMEMLOCK=infinity) or run with CAP_IPC_LOCK", lim.rlim_cur);
        return Err(RtError::LockMemory { source, hint });
    }
    prefault_stack_bytes(prefault_stack.min(4 << 20));
    Ok(())
}

/// Undoes [`lock_memory`].
pub fn unlock_memory() {
    // SAFETY: munlockall has no preconditions.
    unsafe { libc::munlockall() };
}

const CHUNK: usize = 16 * 1024;

#[inline(never)]
fn touch(n: usize) {
    let mut buf = [0u8; CHUNK];
    std::hint::black_box(&mut buf);
    if n > 1 {
        touch(n - 1);
    }
    std::hint::black_box(&buf);
}

fn prefault_stack_bytes(bytes: usize) {
    touch(bytes.div_ceil(CHUNK).max(1));
}

/// How the polling thread of an endpoint runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealtimeConfig {
    /// The core to pin to.
    pub core: usize,
    /// SCHED_FIFO priority (1..=99), or `None` to keep SCHED_OTHER.
    pub fifo_priority: Option<u8>,
    /// mlockall and prefault the stack.
    pub lock_memory: bool,
    /// Refuse (instead of warning) when the core is not isolated or carries IRQs.
    pub strict: bool,
}

impl RealtimeConfig {
    /// Applies the configuration to the calling thread: checks the core, then
    /// pins, locks memory and sets SCHED_FIFO. Returns the warnings about the
    /// core ([`check_core`]); with `strict`, blocking warnings are an error and
    /// nothing is changed. If a later step fails, the affinity and memory lock
    /// are undone.
    pub fn apply_to_current_thread(&self) -> Result<Vec<Warning>, RtError> {
        self.apply_on(&Cpus::real())
    }

    /// [`RealtimeConfig::apply_to_current_thread`] with the core checked on `host`.
    pub fn apply_on(&self, host: &Cpus) -> Result<Vec<Warning>, RtError> {
        if let Some(p) = self.fifo_priority {
            if !(1..=99).contains(&p) {
                return Err(RtError::InvalidPriority(p));
            }
        }
        let warnings = check_core_on(host, self.core)?;
        if self.strict && warnings.iter().any(Warning::is_blocking) {
            return Err(RtError::CoreNotReady { core: self.core, warnings: warnings.into_iter().filter(Warning::is_blocking).collect() });
        }
        let before = current_affinity().map_err(|source| RtError::Pin { core: self.core, source })?;
        pin_current_thread(self.core)?;
        let undo = |locked: bool| {
            let _ = set_affinity(&before);
            if locked {
                unlock_memory();
            }
        };
        if self.lock_memory {
            if let Err(e) = lock_memory() {
                undo(false);
                return Err(e);
            }
        }
        if let Some(p) = self.fifo_priority {
            if let Err(e) = set_fifo(p) {
                undo(self.lock_memory);
                return Err(e);
            }
        }
        Ok(warnings)
    }
}

/// The PM QoS device.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// Holds the system-wide C-state exit-latency limit at `us` microseconds while
/// alive (the kernel drops the request when the file is closed). Needs root.
#[derive(Debug)]
pub struct CpuDmaLatencyHold {
    _file: fs::File,
    us: u32,
}

impl CpuDmaLatencyHold {
    /// Opens /dev/cpu_dma_latency and writes `us` (0: stay in C0/poll).
    pub fn new(us: u32) -> Result<Self, RtError> {
        let path = PathBuf::from(CPU_DMA_LATENCY);
        let err = |source| RtError::CpuDmaLatency { path: path.clone(), us, source };
        let v = i32::try_from(us).map_err(|_| err(io::Error::new(io::ErrorKind::InvalidInput, "value above i32::MAX")))?;
        let mut f = fs::OpenOptions::new().write(true).open(&path).map_err(err)?;
        f.write_all(&v.to_ne_bytes()).map_err(err)?;
        Ok(Self { _file: f, us })
    }
    /// The value held.
    pub fn latency_us(&self) -> u32 {
        self.us
    }
}

/// The effective system-wide C-state latency limit in microseconds.
pub fn current_cpu_dma_latency() -> io::Result<i32> {
    let b = fs::read(CPU_DMA_LATENCY)?;
    if b.len() < 4 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "short read from /dev/cpu_dma_latency"));
    }
    Ok(i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// Blocks the calling thread until SIGINT or SIGTERM arrives and returns the
/// signal number. Blocks both signals in the calling thread first (call it
/// before spawning threads, so they inherit the mask and the signal comes here).
pub fn wait_for_termination_signal() -> io::Result<i32> {
    // SAFETY: sigset_t is initialised by sigemptyset before use; the pointers are to live locals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        let mut sig: libc::c_int = 0;
        let rc = libc::sigwait(&set, &mut sig);
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(sig)
    }
}

/// Why real-time thread setup failed.
#[derive(Debug, thiserror::Error)]
pub enum RtError {
    /// The core number is not usable for pinning.
    #[error("cannot pin to core {core}: {reason}")]
    BadCore {
        /// The core asked for.
        core: usize,
        /// Why it cannot be used.
        reason: String,
    },
    /// The core is not possible or not online.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// sched_setaffinity failed.
    #[error("sched_setaffinity to core {core} failed: {source} (is the core online and in this process's cpuset?)")]
    Pin {
        /// The core asked for.
        core: usize,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// SCHED_FIFO priorities are 1..=99.
    #[error("SCHED_FIFO priority {0} is out of range: use 1..=99")]
    InvalidPriority(u8),
    /// sched_setscheduler failed.
    #[error("cannot set SCHED_FIFO priority {priority}: {source}; {hint}")]
    SetScheduler {
        /// The priority asked for.
        priority: u8,
        /// The kernel's answer.
        #[source]
        source: io::Error,
        /// What to change (privilege, rlimit, cgroup budget).
        hint: String,
    },
    /// mlockall failed.
    #[error("mlockall(MCL_CURRENT|MCL_FUTURE) failed: {source}; {hint}")]
    LockMemory {
        /// The kernel's answer.
        #[source]
        source: io::Error,
        /// What to change (the memlock limit).
        hint: String,
    },
    /// Strict mode: the core has problems that bound latency badly.
    #[error("core {core} is not ready for a real-time datapath: {}; tune it (`detpath tune apply --cores {core}`, isolcpus) or set strict = false", warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>().join("; "))]
    CoreNotReady {
        /// The core asked for.
        core: usize,
        /// The blocking warnings found.
        warnings: Vec<Warning>,
    },
    /// /dev/cpu_dma_latency could not be opened or written.
    #[error("cannot hold {path} at {us} us: {source} (needs root or write access to the device)")]
    CpuDmaLatency {
        /// The device.
        path: PathBuf,
        /// The limit asked for.
        us: u32,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
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

//! The DPDK Environment Abstraction Layer, initialised once per process.
//!
//! `rte_eal_init` can run only once in a process, so the first `dpdk`
//! endpoint decides the EAL's options (memory, hugepages, PCI or not) and
//! every later endpoint shares that EAL, hot-plugging its own device into
//! it. A later endpoint that asks explicitly for different EAL options is
//! refused with [`DpdkError::EalMismatch`] rather than silently given others.
//!
//! The EAL is initialised on a thread of its own that first returns to the
//! process's main network namespace: the EAL's control threads (interrupts,
//! alarms) are created by the initialising thread and keep its namespace for
//! life, and a test namespace they sat in could never be freed. That thread
//! also takes the EAL's CPU pinning (the main lcore), so no caller's thread
//! is pinned. It exits when init is done; the EAL lives until the process ends
//! (DPDK cannot re-initialise after `rte_eal_cleanup`, and nothing it leaves
//! on the host outlives the process: no hugepage files with `--in-memory` or
//! `--no-huge`, no shared config with `--no-shconf`).

use super::{Config, DpdkError, Hugepages};
use detpath_dpdk_sys as sys;
use std::ffi::CString;
use std::os::raw::c_char;
use std::sync::Mutex;

/// What the running EAL was initialised with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Eal {
    pub args: Vec<String>,
    pub hugepages: bool,
    pub mem_mb: u32,
    pub pci: bool,
}

impl Eal {
    /// One line for capabilities notes, e.g. "eal=no-huge -m 256".
    pub fn note(&self) -> String {
        format!("eal={} -m {}{}", if self.hugepages { "hugepages" } else { "no-huge" }, self.mem_mb, if self.pci { "" } else { " no-pci" })
    }
}

static EAL: Mutex<Option<Result<Eal, DpdkError>>> = Mutex::new(None);

/// Free hugepages in MB and the page size in kB, from /proc/meminfo.
pub(crate) fn hugepages_free() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(name).map(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0))).unwrap_or(0);
    let size_kb = field("Hugepagesize:").max(1);
    (field("HugePages_Free:") * size_kb / 1024, size_kb)
}

/// The first CPU this thread may run on (the EAL's main lcore).
fn first_allowed_cpu() -> usize {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            for cpu in 0..libc::CPU_SETSIZE as usize {
                if libc::CPU_ISSET(cpu, &set) {
                    return cpu;
                }
            }
        }
    }
    0
}

fn log_level_arg(level: &str) -> &'static str {
    match level {
        "emergency" => "--log-level=1",
        "error" => "--log-level=4",
        "warning" => "--log-level=5",
        "notice" => "--log-level=6",
        "info" => "--log-level=7",
        "debug" => "--log-level=8",
        _ => "--log-level=4",
    }
}

/// Builds the EAL argument list for `cfg`.
fn eal_args(cfg: &Config, hugepages: bool, cpu: usize) -> Vec<String> {
    let mut a = vec![
        "detpath".to_string(),
        "-l".into(),
        cpu.to_string(),
        // Unique per process, so two detpath processes never share EAL state.
        format!("--file-prefix=detpath-{}", std::process::id()),
        "--no-telemetry".into(),
        log_level_arg(&cfg.log_level).into(),
        "-m".into(),
        cfg.mem_mb.to_string(),
    ];
    if hugepages {
        // Hugepages backed by memfd: no files left in hugetlbfs (implies --no-shconf).
        a.push("--in-memory".into());
    } else {
        // --in-memory cannot be combined with --no-huge; --no-shconf gives the
        // same "nothing shared on disk" for the rest.
        a.push("--no-huge".into());
        a.push("--no-shconf".into());
    }
    match &cfg.pci {
        Some(pci) => {
            a.push("-a".into());
            a.push(pci.clone());
        }
        None => a.push("--no-pci".into()),
    }
    a
}

/// Initialises the EAL for `cfg` or checks that the running one fits it.
pub(crate) fn ensure(cfg: &Config) -> Result<Eal, DpdkError> {
    let mut slot = EAL.lock().unwrap_or_else(|p| p.into_inner());
    let (free_mb, size_kb) = hugepages_free();
    let running_with_huge = matches!(slot.as_ref(), Some(Ok(e)) if e.hugepages);
    if cfg.hugepages == Hugepages::On && !running_with_huge && free_mb < cfg.mem_mb as u64 {
        // Said first, whatever the EAL's state: it is the fix the user needs.
        let pages = (cfg.mem_mb as u64 * 1024).div_ceil(size_kb) * 2;
        return Err(DpdkError::NoHugepages { need_mb: cfg.mem_mb as u64, free_mb, pages });
    }
    if let Some(state) = slot.as_ref() {
        let eal = state.clone()?;
        return check_compatible(&eal, cfg).map(|_| eal);
    }
    let hugepages = match cfg.hugepages {
        Hugepages::Off => false,
        Hugepages::Auto => free_mb >= cfg.mem_mb as u64,
        Hugepages::On => true,
    };
    let args = eal_args(cfg, hugepages, first_allowed_cpu());
    let result = init_on_own_thread(args.clone()).map(|()| Eal { args, hugepages, mem_mb: cfg.mem_mb, pci: cfg.pci.is_some() });
    *slot = Some(result.clone());
    result
}

/// Routes the EAL's log, and the libbpf and libxdp that DPDK's af_xdp driver
/// loads, to `file` (and stderr with `tee`); see [`crate::route_library_logs`].
pub(crate) fn route_library_logs(file: &std::fs::File, tee: bool) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the fd is open for the call; the shim dup()s it and owns the copy.
    let r = unsafe { sys::detpath_dpdk_route_library_logs(file.as_raw_fd(), tee as i32) };
    if r < 0 {
        return Err(std::io::Error::from_raw_os_error(-r));
    }
    Ok(())
}

fn check_compatible(eal: &Eal, cfg: &Config) -> Result<(), DpdkError> {
    if cfg.pci.is_some() && !eal.pci {
        return Err(DpdkError::EalMismatch {
            why: "without PCI (`--no-pci`) for a virtual device, so a PCI port cannot be added".into(),
            fix: "open the PCI endpoint first, or in another process".into(),
        });
    }
    if cfg.mem_explicit && cfg.mem_mb != eal.mem_mb {
        return Err(DpdkError::EalMismatch {
            why: format!("with -m {} MB and this endpoint asks for mem={}", eal.mem_mb, cfg.mem_mb),
            fix: "drop `mem=` (the EAL's memory is shared by every endpoint of the process) or use another process".into(),
        });
    }
    match (cfg.hugepages, eal.hugepages) {
        (Hugepages::On, false) => Err(DpdkError::EalMismatch {
            why: "without hugepages (--no-huge) and this endpoint asks for huge=on".into(),
            fix: "open it in another process, or drop `huge=on`".into(),
        }),
        (Hugepages::Off, true) => Err(DpdkError::EalMismatch {
            why: "with hugepages and this endpoint asks for huge=off".into(),
            fix: "drop `huge=off`, or open it in another process".into(),
        }),
        _ => Ok(()),
    }
}

fn init_on_own_thread(args: Vec<String>) -> Result<(), DpdkError> {
    let shown = args.join(" ");
    // On a thread of its own, in the main thread's network namespace (see the module docs).
    let main_ns = std::fs::File::open("/proc/self/ns/net")
        .map_err(|e| DpdkError::EalInit { args: shown.clone(), why: format!("opening the main thread's network namespace: {e}") })?;
    let init = move || -> Result<(), DpdkError> {
        let cargs: Vec<CString> = args.iter().map(|a| CString::new(a.as_str()).unwrap_or_default()).collect();
        // rte_eal_init may permute argv and keep pointers into it: leak both on purpose (once per process).
        let cargs: &'static [CString] = Box::leak(cargs.into_boxed_slice());
        let argv: Vec<*mut c_char> = cargs.iter().map(|c| c.as_ptr() as *mut c_char).chain(std::iter::once(std::ptr::null_mut())).collect();
        let argv: &'static mut [*mut c_char] = Box::leak(argv.into_boxed_slice());
        // SAFETY: argv holds cargs.len() valid NUL-terminated strings and a final NULL, all alive forever.
        let r = unsafe { sys::detpath_dpdk_eal_init(cargs.len() as i32, argv.as_mut_ptr()) };
        if r < 0 {
            return Err(DpdkError::EalInit { args: args.join(" "), why: sys::strerror(r) });
        }
        // The runtime directory stays empty with --no-shconf/--in-memory: remove it
        // now rather than leave one per process behind (rmdir refuses if not empty).
        // SAFETY: returns a pointer to the EAL's static path string.
        let dir = unsafe { sys::detpath_dpdk_runtime_dir() };
        if !dir.is_null() {
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::rmdir(dir) };
        }
        Ok(())
    };
    detpath_sys::netns::run_on_thread_in(&main_ns, init).map_err(|e| DpdkError::EalInit { args: shown, why: e.to_string() })?
}

//! Real-time setup of a datapath's polling thread: pin it to a core, run it
//! SCHED_FIFO, lock and prefault its memory, check that the core is quiet,
//! and hold the C-state limit (/dev/cpu_dma_latency) while the datapath runs.
//!
//! The thread helpers live in [`detpath_sys::thread`] (the endpoints use
//! them without the tuning layer); they are re-exported here, and the core
//! check takes a tuning [`Host`] (a fake tree in tests; [`RealtimeConfig::apply_on`]
//! takes its [`Host::cpus`]).
//!
//! ```no_run
//! use detpath_tune::rt::{RealtimeConfig, CpuDmaLatencyHold};
//! let _cstates = CpuDmaLatencyHold::new(0)?;          // as long as the endpoint lives
//! let handle = std::thread::spawn(|| -> Result<(), detpath_tune::RtError> {
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

pub use detpath_sys::thread::{
    check_core, current_cpu_dma_latency, current_policy, current_thread_affinity, lock_memory, lock_memory_with, pin_current_thread, set_fifo, set_normal,
    unlock_memory, wait_for_termination_signal, CpuDmaLatencyHold, RealtimeConfig, RtError, Warning, CPU_DMA_LATENCY, PREFAULT_STACK,
};

use crate::host::Host;

/// [`check_core`] on any [`Host`] (a fake tree in tests).
pub fn check_core_on(host: &Host, core: usize) -> Result<Vec<Warning>, RtError> {
    detpath_sys::thread::check_core_on(&host.cpus(), core)
}

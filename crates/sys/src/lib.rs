//! detpath-sys: the one place where detpath meets the kernel.
//!
//! Every kernel object the project touches is reached through this crate:
//! network namespaces ([`netns`]), interface facts ([`netdev`]), the
//! neighbour table ([`neigh`]), XDP programs and their links ([`xdp`]),
//! AF_PACKET sockets ([`packet`]), NIC settings through ethtool
//! ([`ethtool`]), the thread's capabilities and limits ([`caps`]), what the
//! scheduler accounts to it and its real-time setup (pinning, SCHED_FIFO,
//! locked memory: [`thread`]), the CPUs of the host ([`cpu`]), the tuning
//! shield's cgroups ([`cgroup`]), what a run cost in CPU ([`cputime`]), durations as people write them
//! ([`units`]), where libbpf's own
//! messages go ([`liblog`]), and the
//! undo registry that puts host changes back on SIGINT/SIGTERM
//! ([`cleanup`]), and the one atomic, durable file write ([`fsutil`]). The datapaths, the classifier and the tuning layer hold no
//! copies of any of this: the rule in ARCHITECTURE.md is that code above this
//! crate does not call `setns`, `ioctl` or `bpf_link_*` itself.
//!
//! Everything here answers for the calling thread's network namespace
//! (ioctls and netlink on sockets the thread opens; never /sys, which shows
//! the namespace sysfs was mounted in).
//!
//! No policy lives here: which XDP mode to want, which keys a datapath takes,
//! what to tune, is decided above. Errors ([`Error`]) name the object and the fix.
//!
//! Two of its pure parts, as the CLI uses them for `--cores` and durations:
//!
//! ```
//! use std::time::Duration;
//! use detpath_sys::cpu::CpuList;
//! use detpath_sys::units::{format_ns, parse_duration, Unit};
//! let cores = CpuList::parse("0-3,8")?;
//! assert!(cores.contains(8) && !cores.contains(4));
//! assert_eq!(parse_duration("1.5ms", Unit::Micros)?, Duration::from_micros(1500));
//! assert_eq!(format_ns(1_500_000), "1500us");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod caps;
pub mod cgroup;
pub mod cleanup;
pub mod cpu;
pub mod cputime;
pub mod error;
pub mod ethtool;
pub mod fsutil;
pub mod liblog;
pub mod neigh;
pub mod netdev;
pub mod netns;
pub mod packet;
pub mod thread;
pub mod units;
pub mod xdp;

pub use error::{Error, Result};
pub use netdev::NetDev;
pub use xdp::XdpMode;

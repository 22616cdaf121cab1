//! detpath-sys: the one place where detpath meets the kernel.
//!
//! Every kernel object the project touches is reached through this crate:
//! network namespaces ([`netns`]), interface facts ([`netdev`]), the
//! neighbour table ([`neigh`]), XDP programs and their links ([`xdp`]),
//! AF_PACKET sockets ([`packet`]), NIC settings through ethtool
//! ([`ethtool`]), the thread's capabilities and limits ([`caps`]), what the
//! scheduler accounts to it ([`thread`]), what a run cost in CPU
//! ([`cputime`]), where libbpf's own
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

pub mod caps;
pub mod cleanup;
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
pub mod xdp;

pub use error::{Error, Result};
pub use netdev::NetDev;
pub use xdp::XdpMode;

//! Hand-written bindings to a small C shim over Debian's DPDK (22.11).
//!
//! DPDK's burst and mbuf functions are `static inline` in its headers, and
//! its configuration structures change between releases, so `csrc/shim.c`
//! wraps what detpath needs behind functions with plain C types. The build
//! script finds DPDK with `pkg-config libdpdk` and fails with the fix
//! (`apt-get install libdpdk-dev`, or `make deps`) when it is missing.
//!
//! Everything here is `unsafe` FFI; the safe wrapper is the `dpdk` datapath
//! in the `detpath` crate. Functions returning `c_int` return a negative
//! errno value on failure unless documented otherwise.
//!
//! Nothing here is generated (no bindgen): every declaration is written by
//! hand against the shim and documented.
//!
//! The one call that needs no EAL (no root, no hugepages, no NIC), so it shows
//! that the shim and DPDK link; everything else starts with
//! [`detpath_dpdk_eal_init`], as the `dpdk` datapath does:
//!
//! ```
//! // DPDK's functions return -errno; 2 is ENOENT.
//! assert_eq!(detpath_dpdk_sys::strerror(-2), "No such file or directory");
//! ```

#![warn(missing_docs)]

use std::os::raw::{c_char, c_int, c_uint};

/// `struct rte_mempool` (opaque): a pool of mbufs, created by
/// [`detpath_dpdk_pool_create`] and only ever handled by pointer.
// Named as in C, so the FFI signatures read like the shim's.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct rte_mempool {
    _private: [u8; 0],
}

/// `struct rte_mbuf` (opaque: reached only through the shim): one packet
/// buffer of a pool, handled by pointer.
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct rte_mbuf {
    _private: [u8; 0],
}

/// Log level RTE_LOG_EMERG (rte_log.h), for [`detpath_dpdk_log_level`]:
/// only emergencies (the system is unusable), the quietest level.
pub const RTE_LOG_EMERG: u32 = 1;
/// Log level RTE_LOG_ERR: errors and worse.
pub const RTE_LOG_ERR: u32 = 4;
/// Log level RTE_LOG_WARNING: warnings and worse.
pub const RTE_LOG_WARNING: u32 = 5;
/// Log level RTE_LOG_NOTICE: normal but significant conditions and worse
/// (DPDK's default).
pub const RTE_LOG_NOTICE: u32 = 6;
/// Log level RTE_LOG_INFO: informational messages and worse.
pub const RTE_LOG_INFO: u32 = 7;
/// Log level RTE_LOG_DEBUG: everything.
pub const RTE_LOG_DEBUG: u32 = 8;

/// Default mbuf data room (RTE_MBUF_DEFAULT_BUF_SIZE: 2048 + 128 headroom).
pub const RTE_MBUF_DEFAULT_BUF_SIZE: u16 = 2048 + 128;

extern "C" {
    /// rte_eal_init; returns the number of parsed arguments or -rte_errno.
    pub fn detpath_dpdk_eal_init(argc: c_int, argv: *mut *mut c_char) -> c_int;
    /// Routes the EAL's, libbpf's and libxdp's messages to `fd` (dup'ed;
    /// -1 drops them) and, with `tee` != 0, to stderr too. Before or after EAL init.
    pub fn detpath_dpdk_route_library_logs(fd: c_int, tee: c_int) -> c_int;
    /// rte_errno of the calling thread.
    pub fn detpath_dpdk_errno() -> c_int;
    /// rte_strerror (accepts negative values).
    pub fn detpath_dpdk_strerror(e: c_int) -> *const c_char;
    /// rte_dev_probe: hot-plugs a device, e.g. `net_af_xdp0,iface=veth0` or a PCI address.
    pub fn detpath_dpdk_dev_probe(devargs: *const c_char) -> c_int;
    /// rte_eal_hotplug_remove("vdev" | "pci", name).
    pub fn detpath_dpdk_hotplug_remove(bus: *const c_char, name: *const c_char) -> c_int;
    /// rte_eth_dev_get_port_by_name.
    pub fn detpath_dpdk_port_by_name(name: *const c_char, port: *mut u16) -> c_int;
    /// rte_eth_dev_count_avail.
    pub fn detpath_dpdk_port_count() -> u16;
    /// rte_eth_dev_info_get, flattened.
    pub fn detpath_dpdk_port_info(
        port: u16,
        driver: *mut c_char,
        driver_len: usize,
        device: *mut c_char,
        device_len: usize,
        if_index: *mut u32,
        max_rx_pktlen: *mut u32,
        max_mtu: *mut u16,
        max_rx_desc: *mut u16,
        max_tx_desc: *mut u16,
    ) -> c_int;
    /// rte_eth_macaddr_get.
    pub fn detpath_dpdk_port_mac(port: u16, mac: *mut u8) -> c_int;
    /// rte_eth_dev_get_mtu.
    pub fn detpath_dpdk_port_mtu(port: u16, mtu: *mut u16) -> c_int;
    /// Configures one RX and one TX queue without offloads; the descriptor
    /// counts are adjusted to what the driver allows and written back.
    pub fn detpath_dpdk_port_setup(port: u16, pool: *mut rte_mempool, nb_rxd: *mut u16, nb_txd: *mut u16) -> c_int;
    /// rte_eth_dev_start: starts a configured port (queues set up first).
    pub fn detpath_dpdk_port_start(port: u16) -> c_int;
    /// rte_eth_dev_stop: stops a started port (its queues stop receiving).
    pub fn detpath_dpdk_port_stop(port: u16) -> c_int;
    /// rte_eth_dev_close: releases a stopped port's resources; the port id
    /// is not usable afterwards.
    pub fn detpath_dpdk_port_close(port: u16) -> c_int;
    /// 1 promiscuous, 0 not, negative on error.
    pub fn detpath_dpdk_promiscuous_get(port: u16) -> c_int;
    /// rte_eth_allmulticast_enable: 0, or negative (-ENOTSUP: the driver cannot).
    pub fn detpath_dpdk_allmulticast_enable(port: u16) -> c_int;
    /// 1 link up, 0 down, negative on error; `speed` in Mb/s.
    pub fn detpath_dpdk_link(port: u16, speed: *mut u32) -> c_int;
    /// ipackets, opackets, ibytes, obytes, imissed, ierrors, oerrors, rx_nombuf.
    pub fn detpath_dpdk_port_stats(port: u16, out: *mut u64) -> c_int;
    /// rte_pktmbuf_pool_create on the caller's socket; NULL on failure (see errno).
    pub fn detpath_dpdk_pool_create(name: *const c_char, n: c_uint, cache: c_uint, data_room: u16) -> *mut rte_mempool;
    /// A pool in one virtually contiguous chunk (for net_af_xdp's UMEM; not for DMA devices).
    /// NULL on failure (errno EFAULT: the memory came in several chunks).
    pub fn detpath_dpdk_pool_create_va(name: *const c_char, n: c_uint, cache: c_uint, data_room: u16) -> *mut rte_mempool;
    /// rte_mempool_free: frees a pool whose mbufs are all back (no port uses it any more).
    pub fn detpath_dpdk_pool_free(pool: *mut rte_mempool);
    /// rte_mempool_avail_count: mbufs free in the pool now (cache included).
    pub fn detpath_dpdk_pool_avail(pool: *const rte_mempool) -> c_uint;
    /// rte_eth_rx_burst: up to `n` received mbufs into `pkts`; returns how
    /// many (0: none waiting). The caller owns and frees them.
    pub fn detpath_dpdk_rx_burst(port: u16, queue: u16, pkts: *mut *mut rte_mbuf, n: u16) -> u16;
    /// rte_eth_tx_burst: queues up to `n` mbufs from `pkts` for sending;
    /// returns how many the driver took (it frees those); the rest stay the caller's.
    pub fn detpath_dpdk_tx_burst(port: u16, queue: u16, pkts: *mut *mut rte_mbuf, n: u16) -> u16;
    /// All `n` mbufs or none (0 on success).
    pub fn detpath_dpdk_mbuf_alloc_bulk(pool: *mut rte_mempool, m: *mut *mut rte_mbuf, n: c_uint) -> c_int;
    /// rte_pktmbuf_free: returns an mbuf (all its segments) to its pool.
    pub fn detpath_dpdk_mbuf_free(m: *mut rte_mbuf);
    /// rte_pktmbuf_free_bulk: returns the `n` mbufs of the array `m` to their pools.
    pub fn detpath_dpdk_mbuf_free_bulk(m: *mut *mut rte_mbuf, n: c_uint);
    /// First segment's data pointer; writes its length and the segment count.
    pub fn detpath_dpdk_mbuf_data(m: *mut rte_mbuf, len: *mut u32, segs: *mut u16) -> *mut u8;
    /// Bytes of headroom in front of the data.
    pub fn detpath_dpdk_mbuf_headroom(m: *mut rte_mbuf) -> u16;
    /// Bytes writable at the data pointer of a fresh mbuf.
    pub fn detpath_dpdk_mbuf_room(m: *mut rte_mbuf) -> u16;
    /// Sets a fresh mbuf's length; its data pointer, or NULL when it does not fit.
    pub fn detpath_dpdk_mbuf_set_len(m: *mut rte_mbuf, len: u16) -> *mut u8;
    /// The AF_XDP socket fd of queue 0 of the net_af_xdp port `name` (DPDK 22.11
    /// only; see the shim for why); negative when unknown.
    pub fn detpath_dpdk_af_xdp_fd(name: *const c_char) -> c_int;
    /// rte_eal_get_runtime_dir.
    pub fn detpath_dpdk_runtime_dir() -> *const c_char;
    /// rte_log_set_global_level.
    pub fn detpath_dpdk_log_level(level: u32);
}

/// The message for an errno value DPDK returned (negative or positive).
pub fn strerror(e: c_int) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local
    // NUL-terminated string, valid at least until the next call on this thread.
    unsafe {
        let p = detpath_dpdk_strerror(e);
        if p.is_null() {
            return format!("error {e}");
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn links_and_strerror_answers() {
        // Linking proves the shim and libdpdk are there; strerror needs no EAL.
        let s = super::strerror(-libc_enoent());
        assert!(!s.is_empty());
    }

    fn libc_enoent() -> i32 {
        2
    }
}

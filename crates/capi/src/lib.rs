//! libdetpath: the C ABI of the detpath endpoint API (`include/detpath.h`,
//! generated from this file by cbindgen; `tests/header.rs` checks it is
//! current).
//!
//! Every entry point checks its arguments, runs inside `catch_unwind` (no
//! Rust panic crosses into C) and reports failure as a negative errno (or
//! NULL) plus a message for `detpath_last_error()`. Handles are checked
//! values, not pointers (see `handles.rs`): NULL, closed or foreign handles
//! are errors. The hot calls (send, receive) allocate nothing and take no
//! lock: one compare-and-swap takes the handle, one store gives it back.

#![warn(missing_docs)]
// The C types keep C's names (`struct detpath_addr`, ...): cbindgen writes them as they are spelled here.
#![allow(non_camel_case_types)]

mod dds;
mod error;
mod handles;

use error::{call, str_arg, Failure};
use handles::Open;
use std::ffi::{c_char, c_int, c_long, c_void, CString};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// Bytes of the dotted-quad text in `struct detpath_addr` (with its NUL).
pub const DETPATH_IP_LEN: usize = 16;
/// How many endpoints one process may have open at once.
pub const DETPATH_MAX_ENDPOINTS: usize = 4096;
/// The most datagrams one `detpath_send_batch()` call moves per inner batch.
const TX_CHUNK: usize = 64;

/// An endpoint handle. Opaque: a checked value, never dereferenced, so a
/// closed or NULL handle is reported as an error instead of crashing.
pub struct detpath_endpoint {
    _opaque: [u8; 0],
}

/// An IPv4 address and UDP port.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_addr {
    /// IPv4 address in network byte order (as `struct in_addr`'s `s_addr`).
    pub addr: u32,
    /// UDP port in host byte order.
    pub port: u16,
    /// The address as NUL-terminated dotted-quad text.
    pub ip: [c_char; DETPATH_IP_LEN],
}

/// What one receive delivered.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_rx_meta {
    /// Payload bytes copied into the buffer.
    pub len: usize,
    /// 1 when the datagram was longer than the buffer: the rest is lost (as with UDP sockets).
    pub truncated: u8,
    /// The sender.
    pub peer: detpath_addr,
    /// CLOCK_MONOTONIC nanoseconds when the endpoint took the datagram; 0 when nothing was received.
    pub rx_ns: u64,
}

/// One datagram of `detpath_send_batch()`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_tx_datagram {
    /// The payload (may be NULL when `len` is 0).
    pub buf: *const c_void,
    /// Payload bytes to send from `buf` (0 sends an empty datagram).
    pub len: usize,
    /// Destination (its `ip` text is ignored: `addr` and `port` are used).
    pub peer: detpath_addr,
}

/// One receive slot of `detpath_recv_batch()`: a caller-owned buffer and what landed in it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct detpath_rx_slot {
    /// Where the datagram's payload is copied (not NULL: each slot needs a buffer).
    pub buf: *mut c_void,
    /// Bytes `buf` can hold (more than 0); a longer datagram is cut to it and `meta.truncated` set.
    pub cap: usize,
    /// Filled for each slot that received a datagram.
    pub meta: detpath_rx_meta,
}

/// The endpoint's counters, in the order of detpath's counters table (the
/// Rust `detpath::Counters::FIELDS`; new counters are only appended). The
/// same values by name: `detpath_counter_count()`, `detpath_counter_name()`,
/// `detpath_counter_value()`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct detpath_counters {
    /// Datagrams received.
    pub rx_packets: u64,
    /// Payload bytes received.
    pub rx_bytes: u64,
    /// Datagrams sent.
    pub tx_packets: u64,
    /// Payload bytes sent.
    pub tx_bytes: u64,
    /// Frames for this endpoint that failed parsing or checksums (dropped).
    pub rx_malformed: u64,
    /// Frames the endpoint's XDP program or port saw that were not for it.
    pub rx_not_for_me: u64,
    /// Datagrams longer than the receive buffer.
    pub rx_truncated: u64,
    /// Drops the kernel reports (socket buffer or RX ring full).
    pub rx_kernel_dropped: u64,
    /// Sends that found the TX ring or socket buffer full.
    pub tx_ring_full: u64,
    /// Times the kernel found the AF_XDP fill ring empty.
    pub fill_ring_empty: u64,
    /// Sends that failed for another reason.
    pub tx_errors: u64,
    /// Datagrams not sent: destination not on a subnet of the interface.
    pub tx_no_route: u64,
    /// Datagrams not sent: destination MAC not resolved (no ARP reply).
    pub tx_no_neigh: u64,
}

// The C struct covers the whole table: one u64 per entry, in table order
// (tests/header.rs checks the names against the table too).
const _: () = assert!(std::mem::size_of::<detpath_counters>() == dp::Counters::COUNT * 8);
const _: () = assert!(std::mem::align_of::<detpath_counters>() == std::mem::align_of::<u64>());

/// The table's names as C strings (made once, kept for the process).
fn counter_names() -> &'static [(CString, CString)] {
    static NAMES: std::sync::OnceLock<Vec<(CString, CString)>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        dp::Counters::FIELDS
            .iter()
            .map(|f| (CString::new(f.name).expect("counter names have no NUL"), CString::new(f.help).expect("counter help has no NUL")))
            .collect()
    })
}

fn addr_of(sa: SocketAddrV4) -> detpath_addr {
    let mut ip = [0 as c_char; DETPATH_IP_LEN];
    write_dotted(*sa.ip(), &mut ip);
    detpath_addr { addr: u32::from(*sa.ip()).to_be(), port: sa.port(), ip }
}

/// Writes `a.b.c.d` and a NUL without allocating (at most 16 bytes).
fn write_dotted(ip: Ipv4Addr, out: &mut [c_char; DETPATH_IP_LEN]) {
    let mut at = 0;
    for (i, mut octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            out[at] = b'.' as c_char;
            at += 1;
        }
        let mut digits = [0u8; 3];
        let mut n = 0;
        loop {
            digits[n] = b'0' + octet % 10;
            n += 1;
            octet /= 10;
            if octet == 0 {
                break;
            }
        }
        for d in digits[..n].iter().rev() {
            out[at] = *d as c_char;
            at += 1;
        }
    }
    out[at] = 0;
}

fn rx_meta(rx: &dp::RxMeta) -> detpath_rx_meta {
    detpath_rx_meta { len: rx.len, truncated: rx.truncated as u8, peer: addr_of(rx.peer), rx_ns: rx.rx_ns }
}

/// The metadata of a receive that got nothing: all zero (`rx_ns` 0, empty `peer.ip`).
const NOTHING: detpath_rx_meta = detpath_rx_meta { len: 0, truncated: 0, peer: detpath_addr { addr: 0, port: 0, ip: [0; DETPATH_IP_LEN] }, rx_ns: 0 };

fn neg_int(errno: i32) -> c_int {
    -errno
}

fn neg_long(errno: i32) -> c_long {
    -(errno as c_long)
}

/// The receive mode of a call: `timeout_us` -1 waits forever, 0 does not wait.
fn mode_of(timeout_us: c_long, blocking: bool) -> Result<dp::RecvMode, Failure> {
    let timeout = match timeout_us {
        0 => return Ok(dp::RecvMode::NonBlocking),
        -1 => None,
        t if t < 0 => return Err(Failure::invalid(format!("timeout_us is {t}: use -1 (wait forever), 0 (do not wait) or a positive number of microseconds"))),
        t => Some(Duration::from_micros(t as u64)),
    };
    Ok(if blocking { dp::RecvMode::Blocking { timeout } } else { dp::RecvMode::BusyPoll { timeout } })
}

/// The caller's payload as a slice; NULL is allowed only for an empty one.
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes.
unsafe fn in_buf<'a>(buf: *const c_void, len: usize) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if buf.is_null() {
        return Err(Failure::invalid(format!("buf is NULL but len is {len}")));
    }
    // SAFETY: non-NULL and readable for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) })
}

/// The caller's receive buffer as a slice; NULL or empty is an error.
///
/// # Safety
/// `buf` is NULL or writable for `cap` bytes.
unsafe fn out_buf<'a>(buf: *mut c_void, cap: usize) -> Result<&'a mut [u8], Failure> {
    if buf.is_null() {
        return Err(Failure::invalid("buf is NULL: pass a buffer to receive into"));
    }
    if cap == 0 {
        return Err(Failure::invalid("cap is 0: a receive buffer needs room for the datagram"));
    }
    // SAFETY: non-NULL and writable for `cap` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), cap) })
}

fn peer_of(a: &detpath_addr) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(u32::from_be(a.addr)), a.port)
}

/// The library version, e.g. "0.1.0". Static; never NULL.
#[no_mangle]
pub extern "C" fn detpath_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the calling thread's last failed call ("" if none yet):
/// the same actionable text the `detpath` CLI prints. Owned by the library,
/// valid until this thread's next failing call; successful calls leave it
/// unchanged (like `errno`). Never NULL.
#[no_mangle]
pub extern "C" fn detpath_last_error() -> *const c_char {
    error::last_ptr()
}

/// Opens an endpoint from a spec such as `afxdp://eth1?port=7000` or
/// `udp://10.77.0.2:7000` (see `detpath --help`). Returns NULL on error (see
/// `detpath_last_error()`). The network namespace is the calling thread's;
/// `rt_*` keys pin and prioritise the calling thread. With
/// `sched=slots&slot_ns=...&classes=...` sends go through the slot scheduler
/// and leave in their slots while the endpoint is received on (`detpath_recv()`
/// serves the slots). Release with `detpath_close()`.
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn detpath_open(spec: *const c_char) -> *mut detpath_endpoint {
    call(
        |_| std::ptr::null_mut(),
        || {
            // SAFETY: forwarded caller contract.
            let spec = unsafe { str_arg(spec, "spec") }?;
            let ep = detpath_open::open(spec)?;
            let summary = CString::new(ep.capabilities().summary()).unwrap_or_default();
            let handle = handles::insert(Open { ep, summary, blocking: false })?;
            Ok(handle as *mut detpath_endpoint)
        },
    )
}

/// Closes the endpoint (detaches its XDP program, frees its rings). The
/// handle, and every copy of it, is dead afterwards: using it is an error
/// (`-EBADF`), not a crash. Closing NULL does nothing; closing a closed
/// handle, or one another thread is inside a call on, does nothing but
/// record an error for `detpath_last_error()`.
///
/// # Safety
/// Any value may be passed; it is checked, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn detpath_close(ep: *mut detpath_endpoint) {
    if ep.is_null() {
        return;
    }
    call(
        |_| (),
        || {
            let open = handles::remove(ep as usize)?;
            drop(open);
            Ok(())
        },
    )
}

/// The capability summary line, e.g. "afxdp native copy q0 need_wakeup
/// busy-poll". Owned by the endpoint: valid until `detpath_close()`. NULL on
/// a bad handle.
///
/// # Safety
/// Any value may be passed as `ep`; it is checked.
#[no_mangle]
pub unsafe extern "C" fn detpath_capabilities(ep: *mut detpath_endpoint) -> *const c_char {
    call(
        |_| std::ptr::null(),
        || {
            let mut held = handles::acquire(ep as usize)?;
            Ok(held.get().summary.as_ptr())
        },
    )
}

/// The address and port the endpoint owns. 0 or -errno.
///
/// # Safety
/// `out` is NULL or points to a writable `struct detpath_addr`.
#[no_mangle]
pub unsafe extern "C" fn detpath_local_addr(ep: *mut detpath_endpoint, out: *mut detpath_addr) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        let a = addr_of(held.get().ep.local_addr());
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { out.write(a) };
        Ok(0)
    })
}

/// Chooses how receives wait: 0 busy-polls (the default: lowest latency, one
/// core at 100%), 1 sleeps in the kernel until a datagram or the timeout.
/// 0 or -errno.
///
/// # Safety
/// Any value may be passed as `ep`; it is checked.
#[no_mangle]
pub unsafe extern "C" fn detpath_set_blocking(ep: *mut detpath_endpoint, blocking: c_int) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        held.get().blocking = blocking != 0;
        Ok(0)
    })
}

/// Sends one datagram of `len` bytes to `ip`:`port` (`ip` dotted-quad).
/// A zero-length datagram is allowed (then `buf` may be NULL).
/// 0 or -errno.
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes; `ip` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn detpath_send_to(ep: *mut detpath_endpoint, buf: *const c_void, len: usize, ip: *const c_char, port: u16) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        // SAFETY: forwarded caller contract.
        let payload = unsafe { in_buf(buf, len) }?;
        // SAFETY: forwarded caller contract.
        let ip_text = unsafe { str_arg(ip, "ip") }?;
        let ip: Ipv4Addr = ip_text.parse().map_err(|_| Failure::invalid(format!("`{ip_text}` is not an IPv4 address (dotted quad, e.g. 10.77.0.2)")))?;
        held.get().ep.send_to(payload, SocketAddrV4::new(ip, port))?;
        Ok(0)
    })
}

/// Sends one datagram to `peer` (its `addr` and `port`; the `ip` text is
/// ignored): `detpath_send_to()` without parsing text, e.g. to answer the
/// `peer` of a received datagram. 0 or -errno.
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes; `peer` is NULL or points to a `struct detpath_addr`.
#[no_mangle]
pub unsafe extern "C" fn detpath_send_to_addr(ep: *mut detpath_endpoint, buf: *const c_void, len: usize, peer: *const detpath_addr) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        // SAFETY: forwarded caller contract.
        let payload = unsafe { in_buf(buf, len) }?;
        if peer.is_null() {
            return Err(Failure::invalid("peer is NULL"));
        }
        // SAFETY: non-NULL and readable by the caller's contract.
        let peer = peer_of(unsafe { &*peer });
        held.get().ep.send_to(payload, peer)?;
        Ok(0)
    })
}

/// Receives one datagram into `buf` (`cap` bytes). Returns the bytes copied,
/// 0 when the wait ended with nothing (then `*meta` is all zero; a
/// zero-length datagram also returns 0 but with `meta->rx_ns` set), or
/// -errno. A datagram longer than `cap` is cut to `cap` bytes and
/// `meta->truncated` is 1. `timeout_us`: -1 waits forever, 0 does not wait,
/// otherwise microseconds; waiting busy-polls unless `detpath_set_blocking()`
/// chose sleeping. `meta` may be NULL.
///
/// # Safety
/// `buf` is NULL or writable for `cap` bytes; `meta` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn detpath_recv(ep: *mut detpath_endpoint, buf: *mut c_void, cap: usize, timeout_us: c_long, meta: *mut detpath_rx_meta) -> c_long {
    call(neg_long, || {
        let mut held = handles::acquire(ep as usize)?;
        // SAFETY: forwarded caller contract.
        let buf = unsafe { out_buf(buf, cap) }?;
        let open = held.get();
        let mode = mode_of(timeout_us, open.blocking)?;
        let got = open.ep.recv(buf, mode)?;
        if !meta.is_null() {
            let m = got.as_ref().map_or(NOTHING, rx_meta);
            // SAFETY: non-NULL and writable by the caller's contract.
            unsafe { meta.write(m) };
        }
        Ok(got.map_or(0, |rx| rx.len as c_long))
    })
}

/// Sends `n` datagrams. Returns how many were sent: `n`, fewer when an
/// error stopped the batch part way (the error is then in
/// `detpath_last_error()`), or -errno when none went.
///
/// # Safety
/// `dgs` is NULL (only with `n` 0) or points to `n` readable datagrams, each
/// `buf` readable for its `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn detpath_send_batch(ep: *mut detpath_endpoint, dgs: *const detpath_tx_datagram, n: usize) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        if n == 0 {
            return Ok(0);
        }
        if dgs.is_null() {
            return Err(Failure::invalid(format!("dgs is NULL but n is {n}")));
        }
        if n > c_int::MAX as usize {
            return Err(Failure::invalid(format!("n is {n}: at most {} datagrams per call", c_int::MAX)));
        }
        // SAFETY: non-NULL and `n` readable elements by the caller's contract.
        let dgs = unsafe { std::slice::from_raw_parts(dgs, n) };
        let placeholder = dp::TxDatagram { payload: &[], peer: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0) };
        let mut chunk = [placeholder; TX_CHUNK];
        let mut sent = 0usize;
        for part in dgs.chunks(TX_CHUNK) {
            for (slot, d) in chunk.iter_mut().zip(part) {
                // SAFETY: each buf is readable for its len by the caller's contract.
                *slot = dp::TxDatagram { payload: unsafe { in_buf(d.buf, d.len) }?, peer: peer_of(&d.peer) };
            }
            match held.get().ep.send_batch(&chunk[..part.len()]) {
                Ok(k) => {
                    sent += k;
                    if k < part.len() {
                        break;
                    }
                }
                Err(e) if sent == 0 => return Err(e.into()),
                Err(e) => {
                    error::set_last(&e.to_string());
                    break;
                }
            }
        }
        Ok(sent as c_int)
    })
}

/// Receives up to `n` datagrams, one per slot: waits per `timeout_us` (as
/// `detpath_recv()`) for the first, then takes whatever else is ready
/// without waiting. Returns the number of slots filled (their `meta` set),
/// 0 on timeout, or -errno.
///
/// # Safety
/// `slots` is NULL (only with `n` 0) or points to `n` writable slots, each
/// `buf` writable for its `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn detpath_recv_batch(ep: *mut detpath_endpoint, slots: *mut detpath_rx_slot, n: usize, timeout_us: c_long) -> c_long {
    call(neg_long, || {
        let mut held = handles::acquire(ep as usize)?;
        if n == 0 {
            return Ok(0);
        }
        if slots.is_null() {
            return Err(Failure::invalid(format!("slots is NULL but n is {n}")));
        }
        // SAFETY: non-NULL and `n` writable elements by the caller's contract.
        let slots = unsafe { std::slice::from_raw_parts_mut(slots, n) };
        let open = held.get();
        let mut mode = mode_of(timeout_us, open.blocking)?;
        let mut filled = 0usize;
        for slot in slots.iter_mut() {
            // SAFETY: each buf is writable for its cap by the caller's contract.
            let buf = unsafe { out_buf(slot.buf, slot.cap) }?;
            match open.ep.recv(buf, mode) {
                Ok(Some(rx)) => slot.meta = rx_meta(&rx),
                Ok(None) => break,
                Err(e) if filled == 0 => return Err(e.into()),
                Err(e) => {
                    error::set_last(&e.to_string());
                    break;
                }
            }
            filled += 1;
            mode = dp::RecvMode::NonBlocking;
        }
        Ok(filled as c_long)
    })
}

/// Copies the endpoint's counters into `out`. 0 or -errno.
///
/// # Safety
/// `out` is NULL or points to a writable `struct detpath_counters`.
#[no_mangle]
pub unsafe extern "C" fn detpath_counters(ep: *mut detpath_endpoint, out: *mut detpath_counters) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        let v = held.get().ep.counters().values();
        // SAFETY: non-NULL and writable by the caller's contract; the
        // struct is COUNT u64s in table order (asserted at compile time), so
        // writing the values array fills it exactly.
        unsafe { out.cast::<[u64; dp::Counters::COUNT]>().write(v) };
        Ok(0)
    })
}

/// How many counters an endpoint has (the entries of `struct detpath_counters`).
#[no_mangle]
pub extern "C" fn detpath_counter_count() -> usize {
    dp::Counters::COUNT
}

/// The name of counter `i` (e.g. "tx_no_neigh"; the Prometheus metric is
/// `detpath_endpoint_<name>_total`), or NULL when `i` is out of range.
/// Owned by the library, valid forever.
#[no_mangle]
pub extern "C" fn detpath_counter_name(i: usize) -> *const c_char {
    call(|_| std::ptr::null(), || counter_names().get(i).map(|(n, _)| n.as_ptr()).ok_or_else(|| out_of_range(i)))
}

/// One line saying what counter `i` counts, or NULL when `i` is out of
/// range. Owned by the library, valid forever.
#[no_mangle]
pub extern "C" fn detpath_counter_help(i: usize) -> *const c_char {
    call(|_| std::ptr::null(), || counter_names().get(i).map(|(_, h)| h.as_ptr()).ok_or_else(|| out_of_range(i)))
}

fn out_of_range(i: usize) -> Failure {
    Failure::invalid(format!("counter index {i} is out of range: there are {} (detpath_counter_count())", dp::Counters::COUNT))
}

/// Writes the value of counter `i` of the endpoint into `out`. 0 or -errno
/// (-EINVAL for an index out of range or a NULL `out`).
///
/// # Safety
/// `out` is NULL or points to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn detpath_counter_value(ep: *mut detpath_endpoint, i: usize, out: *mut u64) -> c_int {
    call(neg_int, || {
        let mut held = handles::acquire(ep as usize)?;
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        let f = dp::Counters::FIELDS.get(i).ok_or_else(|| out_of_range(i))?;
        let v = (f.get)(&held.get().ep.counters());
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { out.write(v) };
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(ip: &[c_char; DETPATH_IP_LEN]) -> String {
        let bytes: Vec<u8> = ip.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn dotted_quad_without_allocation() {
        for s in ["0.0.0.0", "10.77.0.2", "255.255.255.255", "1.20.103.9"] {
            let a = addr_of(SocketAddrV4::new(s.parse().unwrap(), 7));
            assert_eq!(text(&a.ip), s);
            assert_eq!(peer_of(&a), SocketAddrV4::new(s.parse().unwrap(), 7));
        }
    }

    #[test]
    fn timeouts_map_to_modes() {
        assert_eq!(mode_of(0, false).unwrap(), dp::RecvMode::NonBlocking);
        assert_eq!(mode_of(-1, false).unwrap(), dp::RecvMode::BusyPoll { timeout: None });
        assert_eq!(mode_of(250, true).unwrap(), dp::RecvMode::Blocking { timeout: Some(Duration::from_micros(250)) });
        assert_eq!(mode_of(-2, false).unwrap_err().errno, libc::EINVAL);
    }
}

//! The four AF_XDP rings (fill, completion, RX, TX), mapped from the socket
//! and driven by hand over the `libc` crate's `if_xdp.h` definitions.
//!
//! Each ring is a single-producer/single-consumer queue shared with the
//! kernel: a producer index, a consumer index, a flags word and a power-of-two
//! array of descriptors. Indices are free-running `u32`s (wrapping), masked
//! on access. Ordering, as in the kernel's `xsk_queue.h`:
//! - a producer writes descriptors, then publishes the producer index with a
//!   release store; it reads the consumer index with an acquire load before
//!   reusing slots the consumer has released;
//! - a consumer reads the producer index with an acquire load before reading
//!   descriptors, and publishes the consumer index with a release store after
//!   it has finished reading them.
//!
//! User space produces on fill and TX, and consumes on completion and RX.

use crate::error::{last_os_error, Error, Result};
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// A memory mapping, unmapped on drop.
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mmap {
    /// Anonymous, private, pre-faulted memory (the UMEM).
    pub(crate) fn anonymous(len: usize) -> Result<Mmap> {
        // SAFETY: a fresh anonymous mapping; the result is checked.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE, -1, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(format!("mapping {} KiB of UMEM", len / 1024), last_os_error()));
        }
        Ok(Mmap { ptr: NonNull::new(p.cast()).ok_or_else(|| Error::io("mapping UMEM", last_os_error()))?, len })
    }

    /// A ring of an AF_XDP socket, at its page offset.
    fn socket(fd: &OwnedFd, len: usize, pgoff: u64, what: &str) -> Result<Mmap> {
        // SAFETY: maps a region the kernel defines for this socket; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(format!("mapping the AF_XDP {what} ring"), last_os_error()));
        }
        Ok(Mmap { ptr: NonNull::new(p.cast()).ok_or_else(|| Error::io("mapping an AF_XDP ring", last_os_error()))?, len })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: ptr/len is a mapping this value made and owns.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// One mapped ring of descriptors of type `T` (`u64` frame addresses for
/// fill/completion, `xdp_desc` for RX/TX).
pub(crate) struct Ring<T> {
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    descs: NonNull<T>,
    mask: u32,
    size: u32,
    /// Our view of the producer index (authoritative when we produce).
    cached_prod: u32,
    /// Our view of the consumer index (authoritative when we consume).
    cached_cons: u32,
    _map: Mmap,
}

/// Which page offset a ring lives at, and its name for errors.
#[derive(Clone, Copy)]
pub(crate) enum RingKind {
    Fill,
    Completion,
    Rx,
    Tx,
}

impl RingKind {
    fn pgoff(self) -> u64 {
        match self {
            RingKind::Fill => libc::XDP_UMEM_PGOFF_FILL_RING,
            RingKind::Completion => libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            RingKind::Rx => libc::XDP_PGOFF_RX_RING as u64,
            RingKind::Tx => libc::XDP_PGOFF_TX_RING as u64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            RingKind::Fill => "fill",
            RingKind::Completion => "completion",
            RingKind::Rx => "RX",
            RingKind::Tx => "TX",
        }
    }

    fn offsets(self, o: &libc::xdp_mmap_offsets) -> &libc::xdp_ring_offset {
        match self {
            RingKind::Fill => &o.fr,
            RingKind::Completion => &o.cr,
            RingKind::Rx => &o.rx,
            RingKind::Tx => &o.tx,
        }
    }
}

impl<T: Copy> Ring<T> {
    /// Maps ring `kind` of `fd`, whose size (a power of two) was set with setsockopt.
    pub(crate) fn map(fd: &OwnedFd, offsets: &libc::xdp_mmap_offsets, kind: RingKind, size: u32) -> Result<Ring<T>> {
        let off = kind.offsets(offsets);
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let map = Mmap::socket(fd, len, kind.pgoff(), kind.name())?;
        let base = map.as_ptr();
        let at = |o: u64| -> Result<NonNull<u8>> {
            if o as usize + 4 > len {
                return Err(Error::io(format!("AF_XDP {} ring offsets out of range", kind.name()), std::io::Error::from_raw_os_error(libc::EINVAL)));
            }
            // SAFETY: o is within the mapping (checked above).
            NonNull::new(unsafe { base.add(o as usize) }).ok_or_else(|| Error::io("null ring pointer", std::io::Error::from_raw_os_error(libc::EINVAL)))
        };
        let producer = at(off.producer)?.cast::<AtomicU32>();
        let consumer = at(off.consumer)?.cast::<AtomicU32>();
        let flags = at(off.flags)?.cast::<AtomicU32>();
        let descs = at(off.desc)?.cast::<T>();
        // SAFETY: producer/consumer point at u32 indices inside the live mapping,
        // aligned by the kernel; AtomicU32 has the layout of u32.
        let (p, c) = unsafe { (producer.as_ref().load(Ordering::Acquire), consumer.as_ref().load(Ordering::Acquire)) };
        Ok(Ring { producer, consumer, flags, descs, mask: size - 1, size, cached_prod: p, cached_cons: c, _map: map })
    }

    fn prod(&self) -> &AtomicU32 {
        // SAFETY: points into our live mapping for as long as self lives.
        unsafe { self.producer.as_ref() }
    }

    fn cons(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { self.consumer.as_ref() }
    }

    /// The kernel asks to be woken (XDP_RING_NEED_WAKEUP) to process this ring.
    pub(crate) fn needs_wakeup(&self) -> bool {
        // SAFETY: points into our live mapping.
        unsafe { self.flags.as_ref() }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    fn slot(&self, idx: u32) -> *mut T {
        // SAFETY: idx & mask < size, so the slot is inside the descriptor array.
        unsafe { self.descs.as_ptr().add((idx & self.mask) as usize) }
    }

    // ---- producer side (fill, TX) ----

    /// Free slots, at least `want` if the consumer has made that many free
    /// (the consumer index is re-read only when the cached view is short).
    pub(crate) fn free(&mut self, want: u32) -> u32 {
        let free = self.size - self.cached_prod.wrapping_sub(self.cached_cons);
        if free >= want {
            return free;
        }
        self.cached_cons = self.cons().load(Ordering::Acquire);
        self.size - self.cached_prod.wrapping_sub(self.cached_cons)
    }

    /// Writes the `i`-th descriptor after the producer index (not yet visible;
    /// the caller made sure `i < free()`).
    pub(crate) fn write(&mut self, i: u32, v: T) {
        // SAFETY: the slot is inside the array and owned by the producer
        // (i < free slots), so the kernel is not reading it.
        unsafe { self.slot(self.cached_prod.wrapping_add(i)).write_volatile(v) };
    }

    /// Publishes `n` written descriptors to the kernel.
    pub(crate) fn submit(&mut self, n: u32) {
        self.cached_prod = self.cached_prod.wrapping_add(n);
        self.prod().store(self.cached_prod, Ordering::Release);
    }

    // ---- consumer side (completion, RX) ----

    /// Descriptors ready to read, up to `max` (the producer index is re-read
    /// only when the cached view has fewer than `max`).
    pub(crate) fn available(&mut self, max: u32) -> u32 {
        let mut n = self.cached_prod.wrapping_sub(self.cached_cons);
        if n < max {
            self.cached_prod = self.prod().load(Ordering::Acquire);
            n = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        n.min(max)
    }

    /// The `i`-th ready descriptor (`i < available()`).
    pub(crate) fn read(&self, i: u32) -> T {
        // SAFETY: the slot is inside the array and was published by the kernel
        // (acquire load of the producer index in `available`).
        unsafe { self.slot(self.cached_cons.wrapping_add(i)).read_volatile() }
    }

    /// Hands `n` read descriptors back to the kernel.
    pub(crate) fn release(&mut self, n: u32) {
        self.cached_cons = self.cached_cons.wrapping_add(n);
        self.cons().store(self.cached_cons, Ordering::Release);
    }
}

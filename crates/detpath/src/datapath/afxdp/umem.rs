//! The UMEM: one anonymous, pre-faulted mapping cut into equal frames
//! (chunks) that the kernel and user space pass to each other by address
//! (the byte offset of a frame in the UMEM).

use super::ring::Mmap;
use crate::datapath::filter::RX_META_LEN;
use crate::error::Result;

pub(crate) struct Umem {
    map: Mmap,
    frame_size: u32,
    nframes: u32,
}

impl Umem {
    /// `nframes` frames of `frame_size` bytes (a power of two).
    pub(crate) fn new(nframes: u32, frame_size: u32) -> Result<Umem> {
        let map = Mmap::anonymous(nframes as usize * frame_size as usize)?;
        Ok(Umem { map, frame_size, nframes })
    }

    pub(crate) fn base(&self) -> *mut u8 {
        self.map.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The address of frame `i`.
    pub(crate) fn frame_addr(&self, i: u32) -> u64 {
        debug_assert!(i < self.nframes);
        i as u64 * self.frame_size as u64
    }

    /// The start of the frame holding `addr` (descriptor addresses point past the headroom).
    pub(crate) fn chunk_base(&self, addr: u64) -> u64 {
        addr & !(self.frame_size as u64 - 1)
    }

    /// The `len` bytes at `addr`, or `None` when they are not inside one frame
    /// (never trusted blindly: the address comes from a shared ring).
    pub(crate) fn frame(&self, addr: u64, len: u32) -> Option<&[u8]> {
        let end = addr.checked_add(len as u64)?;
        if end > self.len() as u64 || end > self.chunk_base(addr) + self.frame_size as u64 {
            return None;
        }
        // SAFETY: [addr, end) is inside the mapping (checked above), which lives
        // as long as self; the kernel does not write a frame user space holds.
        Some(unsafe { std::slice::from_raw_parts(self.base().add(addr as usize), len as usize) })
    }

    /// The XDP metadata area (`struct dp_rx_meta`) in front of the received
    /// frame at `addr`, writable; `None` when `addr` has less than that in
    /// front of it inside its chunk. The kernel copies metadata into the
    /// chunk's headroom, just before the frame.
    pub(crate) fn meta_mut(&mut self, addr: u64) -> Option<&mut [u8]> {
        let start = addr.checked_sub(RX_META_LEN as u64)?;
        if start < self.chunk_base(addr) || addr > self.len() as u64 {
            return None;
        }
        // SAFETY: [start, addr) lies inside addr's chunk (checked above), which
        // user space holds (taken off the RX ring, not yet on the fill ring),
        // so the kernel is not writing it; &mut self makes the access exclusive.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base().add(start as usize), RX_META_LEN) })
    }

    /// The whole frame starting at `addr` (a chunk base from the TX pool), writable.
    pub(crate) fn frame_mut(&mut self, addr: u64) -> &mut [u8] {
        let base = self.chunk_base(addr).min(self.len() as u64 - self.frame_size as u64);
        // SAFETY: [base, base + frame_size) is inside the mapping (clamped above)
        // and the frame is owned by user space (taken from the free list), so
        // the kernel is not reading it; &mut self makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.base().add(base as usize), self.frame_size as usize) }
    }
}

//! The handle table: what a `detpath_endpoint *` is.
//!
//! A handle is not a pointer to memory: it is an opaque value that encodes a
//! slot index and the slot's generation, `(generation << 16) | (index + 1)`.
//! The table is a fixed static array, so checking a handle never touches
//! freed memory: a NULL handle, a value that was never a handle, and a
//! handle whose endpoint was closed (the slot's generation moved on) are all
//! recognised and answered with an error, never a crash.
//!
//! Each slot has one atomic state word, `generation << 2 | state`. A call
//! takes the slot from OPEN to BUSY with one compare-and-swap and puts it
//! back with one store: no lock, no waiting. A second thread calling on the
//! same handle at the same time finds it BUSY and gets `-EBUSY`; it never
//! races the first. Closing moves the generation on, so every copy of the
//! old handle is dead from then on (until the 32-bit generation wraps, after
//! 2^32 opens of the same slot).

use crate::error::Failure;
use std::cell::UnsafeCell;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many endpoints may be open at once in one process.
pub(crate) const MAX_HANDLES: usize = crate::DETPATH_MAX_ENDPOINTS;

const FREE: u64 = 0;
const OPEN: u64 = 1;
const BUSY: u64 = 2;
/// Being filled by `detpath_open` or emptied by `detpath_close`.
const RESERVED: u64 = 3;
const GEN_MASK: u64 = 0xffff_ffff;

/// What a slot holds while its endpoint is open.
pub struct Open {
    pub ep: Box<dyn dp::Endpoint>,
    /// The capability summary, owned here so C gets a stable pointer.
    pub summary: CString,
    /// Receive by sleeping in the kernel instead of busy-polling.
    pub blocking: bool,
}

struct Slot {
    state: AtomicU64,
    cell: UnsafeCell<Option<Open>>,
}

// SAFETY: `cell` is read or written only by the one thread that moved
// `state` to BUSY or RESERVED with a successful compare-and-swap (Acquire),
// and it publishes its writes with the Release store that ends that state.
// The Endpoint inside is `Send`, so handing it from thread to thread is sound.
unsafe impl Sync for Slot {}

static TABLE: [Slot; MAX_HANDLES] = [const { Slot { state: AtomicU64::new(FREE), cell: UnsafeCell::new(None) } }; MAX_HANDLES];

fn word(generation: u64, state: u64) -> u64 {
    (generation & GEN_MASK) << 2 | state
}

fn encode(index: usize, generation: u64) -> usize {
    ((generation & GEN_MASK) as usize) << 16 | (index + 1)
}

fn decode(handle: usize) -> Option<(usize, u64)> {
    let index = (handle & 0xffff).checked_sub(1)?;
    let generation = (handle >> 16) as u64;
    (index < MAX_HANDLES && generation <= GEN_MASK).then_some((index, generation))
}

/// Stores an opened endpoint in a free slot; returns its handle value.
pub fn insert(open: Open) -> Result<usize, Failure> {
    for (index, slot) in TABLE.iter().enumerate() {
        let cur = slot.state.load(Ordering::Relaxed);
        if cur & 3 != FREE {
            continue;
        }
        let generation = cur >> 2;
        if slot.state.compare_exchange(cur, word(generation, RESERVED), Ordering::Acquire, Ordering::Relaxed).is_ok() {
            // SAFETY: we hold the slot in RESERVED (see `Slot`'s Sync comment).
            unsafe { *slot.cell.get() = Some(open) };
            slot.state.store(word(generation, OPEN), Ordering::Release);
            return Ok(encode(index, generation));
        }
    }
    Err(Failure::new(libc::EMFILE, format!("{MAX_HANDLES} detpath endpoints are open in this process; close one first")))
}

/// Exclusive use of one open slot for the length of one call.
pub struct Held {
    slot: &'static Slot,
    generation: u64,
}

impl Held {
    /// The open endpoint.
    pub fn get(&mut self) -> &mut Open {
        // SAFETY: we hold the slot in BUSY, and a BUSY slot always holds Some (set before OPEN was stored).
        unsafe { (*self.slot.cell.get()).as_mut().expect("an open slot holds an endpoint") }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.slot.state.store(word(self.generation, OPEN), Ordering::Release);
    }
}

fn hold(handle: usize) -> Result<(&'static Slot, u64), Failure> {
    if handle == 0 {
        return Err(Failure::new(libc::EBADF, "the endpoint handle is NULL (did detpath_open fail? see detpath_last_error())".into()));
    }
    let Some((index, generation)) = decode(handle) else {
        return Err(Failure::new(libc::EBADF, format!("{handle:#x} is not a detpath endpoint handle")));
    };
    let slot = &TABLE[index];
    match slot.state.compare_exchange(word(generation, OPEN), word(generation, BUSY), Ordering::Acquire, Ordering::Relaxed) {
        Ok(_) => Ok((slot, generation)),
        Err(cur) if cur >> 2 == generation && cur & 3 == BUSY => {
            Err(Failure::new(libc::EBUSY, "the endpoint is in use by another thread right now; an endpoint is used by one thread at a time".into()))
        }
        Err(_) => Err(Failure::new(libc::EBADF, "the endpoint handle was closed (use after detpath_close)".into())),
    }
}

/// Takes the slot of `handle` for one call; the guard gives it back.
pub fn acquire(handle: usize) -> Result<Held, Failure> {
    hold(handle).map(|(slot, generation)| Held { slot, generation })
}

/// Empties the slot of `handle` and moves its generation on, so the handle is dead.
pub fn remove(handle: usize) -> Result<Open, Failure> {
    let (slot, generation) = hold(handle)?;
    slot.state.store(word(generation, RESERVED), Ordering::Relaxed);
    // SAFETY: we hold the slot (BUSY, now RESERVED).
    let open = unsafe { (*slot.cell.get()).take() };
    slot.state.store(word(generation + 1, FREE), Ordering::Release);
    open.ok_or_else(|| Failure::new(libc::EBADF, "the endpoint handle was closed (use after detpath_close)".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_roundtrips_and_rejects_garbage() {
        assert_eq!(decode(encode(0, 0)), Some((0, 0)));
        assert_eq!(decode(encode(MAX_HANDLES - 1, GEN_MASK)), Some((MAX_HANDLES - 1, GEN_MASK)));
        assert_eq!(decode(0), None);
        assert_eq!(decode(MAX_HANDLES + 1), None);
        assert_ne!(encode(0, 0), 0);
    }
}

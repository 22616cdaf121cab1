//! Preallocated sample storage: writer histories and reorder windows indexed
//! by sequence number, reader caches as FIFO rings. Every slot's buffer is
//! allocated when the endpoint is created; a sample larger than any before it
//! grows that one slot once (counted), so steady-state traffic allocates nothing.

use crate::wire::{Guid, Time};

/// What is known about one stored sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SampleMeta {
    /// Sequence number (0: empty slot).
    pub sn: i64,
    /// The writer that wrote it.
    pub writer: Guid,
    /// Source timestamp (INFO_TS), if the writer sent one.
    pub source_ts: Option<Time>,
    /// When the engine received (or, in a writer history, wrote) it, monotonic ns.
    pub reception_ns: u64,
    /// STATUS_INFO bits (dispose 1, unregister 2).
    pub status_info: u32,
    /// KEY_HASH from the inline QoS, when present.
    pub key_hash: Option<[u8; 16]>,
    /// The payload is a sample (false: only a key/status change).
    pub valid_data: bool,
    /// For reorder windows: the sequence number is irrelevant (a GAP named it).
    pub irrelevant: bool,
}

/// One stored sample: metadata and the serialized payload (encapsulation header included).
#[derive(Debug)]
pub struct Slot {
    /// What is known about the sample.
    pub meta: SampleMeta,
    /// Bytes of `data` the payload takes.
    pub len: usize,
    /// The buffer, allocated when the endpoint is created (grown when a
    /// larger sample comes); only its first `len` bytes are the payload.
    pub data: Vec<u8>,
}

impl Slot {
    fn new(capacity: usize) -> Slot {
        Slot { meta: SampleMeta::default(), len: 0, data: vec![0; capacity] }
    }
    /// Stores `payload`; grows the buffer (once) when it is too small. Returns true when it grew.
    pub fn store(&mut self, meta: SampleMeta, payload: &[u8]) -> bool {
        let grew = payload.len() > self.data.len();
        if grew {
            self.data.resize(payload.len(), 0);
        }
        self.data[..payload.len()].copy_from_slice(payload);
        self.len = payload.len();
        self.meta = meta;
        grew
    }
    /// The payload.
    pub fn payload(&self) -> &[u8] {
        &self.data[..self.len]
    }
}

/// Slots indexed by `sn % capacity`: a writer history or a reorder window.
#[derive(Debug)]
pub struct SnRing {
    slots: Vec<Slot>,
}

impl SnRing {
    /// `capacity` slots of `slot_size` bytes each, allocated now.
    pub fn new(capacity: usize, slot_size: usize) -> SnRing {
        SnRing { slots: (0..capacity.max(1)).map(|_| Slot::new(slot_size)).collect() }
    }
    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
    fn index(&self, sn: i64) -> usize {
        (sn.rem_euclid(self.slots.len() as i64)) as usize
    }
    /// The slot holding `sn`, if it still does.
    pub fn get(&self, sn: i64) -> Option<&Slot> {
        let s = &self.slots[self.index(sn)];
        (sn > 0 && s.meta.sn == sn).then_some(s)
    }
    /// The slot `sn` goes into (whatever it held is overwritten by the caller).
    pub fn slot_for(&mut self, sn: i64) -> &mut Slot {
        let i = self.index(sn);
        &mut self.slots[i]
    }
    /// Forgets `sn` if it is held.
    pub fn clear(&mut self, sn: i64) {
        let i = self.index(sn);
        if self.slots[i].meta.sn == sn {
            self.slots[i].meta.sn = 0;
        }
    }
    /// Forgets everything.
    pub fn clear_all(&mut self) {
        for s in &mut self.slots {
            s.meta.sn = 0;
        }
    }
}

/// A FIFO of samples waiting to be taken: a reader cache.
#[derive(Debug)]
pub struct FifoRing {
    slots: Vec<Slot>,
    head: usize,
    len: usize,
}

impl FifoRing {
    /// `capacity` slots of `slot_size` bytes each, allocated now.
    pub fn new(capacity: usize, slot_size: usize) -> FifoRing {
        FifoRing { slots: (0..capacity.max(1)).map(|_| Slot::new(slot_size)).collect(), head: 0, len: 0 }
    }
    /// Number of samples held.
    pub fn len(&self) -> usize {
        self.len
    }
    /// No free slot.
    pub fn is_full(&self) -> bool {
        self.len == self.slots.len()
    }
    /// Drops the oldest sample (KEEP_LAST replacing).
    pub fn drop_oldest(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) % self.slots.len();
            self.len -= 1;
        }
    }
    /// The slot the next sample goes into; call [`commit`](Self::commit) after filling it. `None` when full.
    pub fn back_slot(&mut self) -> Option<&mut Slot> {
        if self.is_full() {
            return None;
        }
        let i = (self.head + self.len) % self.slots.len();
        Some(&mut self.slots[i])
    }
    /// Makes the slot filled through [`back_slot`](Self::back_slot) part of the queue.
    pub fn commit(&mut self) {
        if !self.is_full() {
            self.len += 1;
        }
    }
    /// The oldest sample.
    pub fn front(&self) -> Option<&Slot> {
        (self.len > 0).then(|| &self.slots[self.head])
    }
    /// Removes the oldest sample (after reading it with [`front`](Self::front)).
    pub fn pop(&mut self) {
        self.drop_oldest()
    }
    /// The `i`-th oldest sample.
    pub fn nth(&self, i: usize) -> Option<&Slot> {
        (i < self.len).then(|| &self.slots[(self.head + i) % self.slots.len()])
    }
    /// Removes the `i`-th oldest sample, the others keeping their order: the
    /// older ones move up one slot by swapping (buffers change places,
    /// nothing is allocated or copied).
    pub fn remove_nth(&mut self, i: usize) {
        if i >= self.len {
            return;
        }
        let cap = self.slots.len();
        for j in (1..=i).rev() {
            self.slots.swap((self.head + j) % cap, (self.head + j - 1) % cap);
        }
        self.drop_oldest();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sn_ring_keeps_the_last_capacity() {
        let mut r = SnRing::new(4, 8);
        for sn in 1..=6 {
            r.slot_for(sn).store(SampleMeta { sn, ..Default::default() }, &[sn as u8]);
        }
        assert!(r.get(2).is_none());
        assert_eq!(r.get(3).unwrap().payload(), &[3]);
        assert_eq!(r.get(6).unwrap().payload(), &[6]);
        r.clear(6);
        assert!(r.get(6).is_none());
    }

    #[test]
    fn fifo_refuses_when_full_and_drops_oldest_on_demand() {
        let mut f = FifoRing::new(2, 4);
        for i in 1..=2 {
            f.back_slot().unwrap().store(SampleMeta { sn: i, ..Default::default() }, &[i as u8]);
            f.commit();
        }
        assert!(f.back_slot().is_none());
        f.drop_oldest();
        f.back_slot().unwrap().store(SampleMeta { sn: 3, ..Default::default() }, &[3]);
        f.commit();
        assert_eq!(f.front().unwrap().meta.sn, 2);
        f.pop();
        assert_eq!(f.front().unwrap().meta.sn, 3);
    }

    #[test]
    fn fifo_removes_from_the_middle_keeping_the_order() {
        let mut f = FifoRing::new(4, 4);
        // Start past the end of the slot array so the queue wraps.
        for i in 1..=6 {
            if f.is_full() {
                f.pop();
            }
            f.back_slot().unwrap().store(SampleMeta { sn: i, ..Default::default() }, &[i as u8]);
            f.commit();
        }
        f.remove_nth(1);
        let sns: Vec<i64> = (0..f.len()).map(|i| f.nth(i).unwrap().meta.sn).collect();
        assert_eq!(sns, [3, 5, 6]);
        assert_eq!(f.nth(2).unwrap().payload(), &[6]);
        f.remove_nth(7);
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn a_bigger_sample_grows_one_slot_once() {
        let mut r = SnRing::new(1, 2);
        assert!(r.slot_for(1).store(SampleMeta { sn: 1, ..Default::default() }, &[1, 2, 3]));
        assert!(!r.slot_for(2).store(SampleMeta { sn: 2, ..Default::default() }, &[1, 2, 3]));
    }
}

//! Instances: the samples of a keyed topic sorted by key hash. A reader
//! cache keeps KEEP_LAST n samples of each instance and tracks its state
//! (alive, disposed, no writers); a writer history keeps the last n of each
//! instance for retransmission and late joiners. Both tables are sized when
//! the endpoint is created (`Qos::max_instances`): an instance more is
//! counted and refused, never grown into. A topic without a key is one
//! instance (key hash all zero).

use super::slots::{FifoRing, SampleMeta, Slot, SnRing};
use crate::discovery::status_info;
use crate::qos::{History, Qos};
use crate::wire::Guid;
use std::collections::VecDeque;

/// A serialized sample's key hash, read from its payload; with `true`, the
/// payload is a serialized key (`types::key_hash_from`).
pub type KeyOf = fn(&[u8], bool) -> Option<[u8; 16]>;

/// The state of an instance as a reader sees it (DDS instance_state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InstanceState {
    /// Some writer wrote it and has neither disposed nor unregistered it.
    #[default]
    Alive,
    /// A writer disposed it (and nobody wrote it since).
    Disposed,
    /// Every writer that wrote it unregistered it or went away (lease expired, deleted).
    NoWriters,
}

/// Writers tracked per instance; beyond, the instance no longer goes "no writers" by removal.
const WRITERS_PER_INSTANCE: usize = 8;

#[derive(Clone, Copy, Debug)]
struct Instance {
    key: [u8; 16],
    /// Samples of it in the cache.
    held: u32,
    state: InstanceState,
    writers: [Guid; WRITERS_PER_INSTANCE],
    nwriters: u8,
    /// More writers than tracked: removal of the tracked ones says nothing.
    untracked: bool,
}

impl Instance {
    fn new(key: [u8; 16]) -> Instance {
        Instance { key, held: 0, state: InstanceState::Alive, writers: [Guid::default(); WRITERS_PER_INSTANCE], nwriters: 0, untracked: false }
    }
    fn add_writer(&mut self, w: Guid) {
        let n = self.nwriters as usize;
        if self.writers[..n].contains(&w) {
            return;
        }
        if n < WRITERS_PER_INSTANCE {
            self.writers[n] = w;
            self.nwriters += 1;
        } else {
            self.untracked = true;
        }
    }
    /// Forgets writer `w`; true when it was the last one.
    fn remove_writer(&mut self, w: &Guid) -> bool {
        let n = self.nwriters as usize;
        let Some(i) = self.writers[..n].iter().position(|x| x == w) else { return false };
        self.writers[i] = self.writers[n - 1];
        self.nwriters -= 1;
        self.nwriters == 0 && !self.untracked
    }
}

/// Outcome of offering a sample to a reader cache.
pub(crate) enum Deliver {
    Ok,
    /// KEEP_ALL and full: try again when the application has taken some.
    Full,
    /// A new instance while the instance table is full of live ones: dropped (counted).
    Refused,
}

/// A reader cache: the samples waiting to be taken, in arrival order, and the instance table.
pub(crate) struct ReaderCache {
    fifo: FifoRing,
    instances: Vec<Instance>,
    max_instances: usize,
    keyed: bool,
    /// KEEP_LAST depth per instance (None: KEEP_ALL).
    keep_last: Option<u32>,
    /// Index of the instance found last (most topics have one or a few).
    hint: usize,
    /// Samples pushed out by KEEP_LAST before they were taken.
    pub replaced: u64,
    /// Samples of instances the table had no room for.
    pub instances_refused: u64,
    pub growths: u64,
}

impl ReaderCache {
    pub fn new(qos: &Qos, keyed: bool, slot_size: usize) -> ReaderCache {
        let max_instances = if keyed { qos.max_instances.max(1) as usize } else { 1 };
        let depth = if keyed { qos.keyed_depth() } else { qos.depth() };
        ReaderCache {
            fifo: FifoRing::new(depth, slot_size),
            instances: Vec::with_capacity(max_instances),
            max_instances,
            keyed,
            keep_last: match qos.history {
                History::KeepLast(n) => Some(n.max(1)),
                History::KeepAll => None,
            },
            hint: 0,
            replaced: 0,
            instances_refused: 0,
            growths: 0,
        }
    }

    fn key(&self, m: &SampleMeta) -> [u8; 16] {
        if self.keyed {
            m.key_hash.unwrap_or_default()
        } else {
            [0; 16]
        }
    }

    fn find(&mut self, key: &[u8; 16]) -> Option<usize> {
        if self.instances.get(self.hint).is_some_and(|i| &i.key == key) {
            return Some(self.hint);
        }
        let i = self.instances.iter().position(|i| &i.key == key)?;
        self.hint = i;
        Some(i)
    }

    /// The instance of `key`, a new entry if there is room: a free one, or one
    /// that is neither alive nor holding samples (its history is over).
    fn admit(&mut self, key: &[u8; 16]) -> Option<usize> {
        if let Some(i) = self.find(key) {
            return Some(i);
        }
        let i = if self.instances.len() < self.max_instances {
            self.instances.push(Instance::new(*key));
            self.instances.len() - 1
        } else {
            let i = self.instances.iter().position(|i| i.held == 0 && i.state != InstanceState::Alive)?;
            self.instances[i] = Instance::new(*key);
            i
        };
        self.hint = i;
        Some(i)
    }

    fn release(&mut self, key: &[u8; 16]) {
        if let Some(i) = self.find(key) {
            let inst = &mut self.instances[i];
            inst.held = inst.held.saturating_sub(1);
        }
    }

    /// Puts a sample into the cache: KEEP_LAST replaces the oldest of its instance.
    pub fn deliver(&mut self, meta: SampleMeta, payload: &[u8]) -> Deliver {
        let key = self.key(&meta);
        let Some(ii) = self.admit(&key) else {
            self.instances_refused += 1;
            return Deliver::Refused;
        };
        if let Some(n) = self.keep_last {
            if self.instances[ii].held >= n {
                if let Some(pos) = (0..self.fifo.len()).find(|&p| self.fifo.nth(p).is_some_and(|s| self.key(&s.meta) == key)) {
                    self.fifo.remove_nth(pos);
                    self.instances[ii].held -= 1;
                    self.replaced += 1;
                }
            }
        }
        if self.fifo.is_full() {
            if self.keep_last.is_none() {
                return Deliver::Full;
            }
            // More instances than max_samples leaves room for: the oldest sample goes.
            let Some(old) = self.fifo.front().map(|s| self.key(&s.meta)) else { return Deliver::Full };
            self.fifo.drop_oldest();
            self.release(&old);
            self.replaced += 1;
        }
        let Some(slot) = self.fifo.back_slot() else { return Deliver::Full };
        if slot.store(meta, payload) {
            self.growths += 1;
        }
        self.fifo.commit();
        // `release` may have moved the hint; ii is still this key's index (nothing was removed from the table).
        let inst = &mut self.instances[ii];
        inst.held += 1;
        let gone = meta.status_info & (status_info::DISPOSED | status_info::UNREGISTERED);
        if meta.status_info & status_info::DISPOSED != 0 {
            inst.state = InstanceState::Disposed;
        }
        if meta.status_info & status_info::UNREGISTERED != 0 && inst.remove_writer(&meta.writer) && inst.state == InstanceState::Alive {
            inst.state = InstanceState::NoWriters;
        }
        if gone == 0 {
            inst.state = InstanceState::Alive;
            inst.add_writer(meta.writer);
        }
        Deliver::Ok
    }

    /// Writer `w` is gone (lease expired, deleted): instances it was the last writer of have no writers.
    pub fn writer_gone(&mut self, w: &Guid) {
        for inst in &mut self.instances {
            if inst.remove_writer(w) && inst.state == InstanceState::Alive {
                inst.state = InstanceState::NoWriters;
            }
        }
    }

    /// The oldest sample waiting.
    pub fn front(&self) -> Option<&Slot> {
        self.fifo.front()
    }
    /// The state of the oldest sample's instance, now.
    pub fn front_state(&mut self) -> InstanceState {
        let Some(key) = self.fifo.front().map(|s| self.key(&s.meta)) else { return InstanceState::Alive };
        self.find(&key).map_or(InstanceState::Alive, |i| self.instances[i].state)
    }
    /// Removes the oldest sample (taken).
    pub fn pop(&mut self) {
        if let Some(key) = self.fifo.front().map(|s| self.key(&s.meta)) {
            self.fifo.pop();
            self.release(&key);
        }
    }
    pub fn len(&self) -> usize {
        self.fifo.len()
    }
    pub fn is_full(&self) -> bool {
        self.fifo.is_full()
    }
    /// Instances in the table.
    pub fn instances(&self) -> usize {
        self.instances.len()
    }
    /// The state of the instance of `key` (None: not in the table).
    pub fn state_of(&mut self, key: &[u8; 16]) -> Option<InstanceState> {
        let k = if self.keyed { *key } else { [0; 16] };
        self.find(&k).map(|i| self.instances[i].state)
    }
}

/// Why a writer's history did not take a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManyInstances;

/// A writer's history: a ring by sequence number (no key, or KEEP_ALL: it
/// keeps every sample until acknowledged whatever its instance), or KEEP_LAST
/// n per instance.
pub(crate) enum WriterHistory {
    Ring(SnRing),
    PerInstance(InstanceHistory),
}

impl WriterHistory {
    pub fn new(qos: &Qos, keyed: bool, slot_size: usize) -> WriterHistory {
        match qos.history {
            History::KeepLast(n) if keyed => {
                WriterHistory::PerInstance(InstanceHistory::new(n.max(1), qos.max_instances.max(1) as usize, qos.keyed_depth(), slot_size))
            }
            _ => WriterHistory::Ring(SnRing::new(qos.depth(), slot_size)),
        }
    }
    /// The sample `sn`, if it is still held.
    pub fn get(&self, sn: i64) -> Option<&Slot> {
        match self {
            WriterHistory::Ring(r) => r.get(sn),
            WriterHistory::PerInstance(h) => h.get(sn),
        }
    }
    /// The sequence numbers it holds from `from` to `to` (inclusive),
    /// ascending; `to` at most the last one written. Looks at no more than
    /// the samples held, however far apart `from` and `to` are.
    pub fn held(&self, from: i64, to: i64) -> impl Iterator<Item = i64> + '_ {
        let ring = match self {
            // A ring holds the last `capacity` numbers written, so none below these.
            WriterHistory::Ring(r) => Some((from.max(to - r.capacity() as i64 + 1)..=to).filter(move |&sn| r.get(sn).is_some())),
            WriterHistory::PerInstance(_) => None,
        };
        let per_instance = match self {
            WriterHistory::PerInstance(h) => Some(h.held(from, to)),
            WriterHistory::Ring(_) => None,
        };
        ring.into_iter().flatten().chain(per_instance.into_iter().flatten())
    }
    /// Keeps a sample (`meta.key_hash` names its instance); true when a slot
    /// grew. `acked_below`: every reliable reader has everything below it (an
    /// unregistered instance acknowledged by all may give its entry up).
    pub fn store(&mut self, meta: SampleMeta, payload: &[u8], acked_below: i64) -> Result<bool, TooManyInstances> {
        match self {
            WriterHistory::Ring(r) => Ok(r.slot_for(meta.sn).store(meta, payload)),
            WriterHistory::PerInstance(h) => h.store(meta, payload, acked_below),
        }
    }
    /// Samples it holds at most.
    pub fn capacity(&self) -> usize {
        match self {
            WriterHistory::Ring(r) => r.capacity(),
            WriterHistory::PerInstance(h) => h.slots.len(),
        }
    }
    /// The oldest sequence number still held, given the next one to be written.
    pub fn first_available(&self, next_sn: i64) -> i64 {
        match self {
            WriterHistory::Ring(r) => (next_sn - r.capacity() as i64).max(1),
            WriterHistory::PerInstance(h) => h.order.front().map_or(next_sn, |&i| h.slots[i as usize].meta.sn),
        }
    }
    /// The oldest sequence number held once `sn` (being written) is in: as
    /// now for a per-instance history (it may name a sample about to go; a
    /// reader asking for it gets a GAP), never above `sn`.
    pub fn first_available_after(&self, sn: i64) -> i64 {
        match self {
            WriterHistory::Ring(r) => (sn + 1 - r.capacity() as i64).max(1),
            WriterHistory::PerInstance(h) => h.order.front().map_or(sn, |&i| h.slots[i as usize].meta.sn.min(sn)),
        }
    }
    /// Instances held (1 for a ring).
    pub fn instances(&self) -> usize {
        match self {
            WriterHistory::Ring(_) => 1,
            WriterHistory::PerInstance(h) => h.instances.len(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct WriterInstance {
    key: [u8; 16],
    held: u32,
    /// The last sample written unregistered it.
    unregistered: bool,
    last_sn: i64,
}

/// KEEP_LAST n per instance: a pool of slots, the sequence-number order of
/// the ones in use, and the instance table; all allocated at creation.
pub(crate) struct InstanceHistory {
    slots: Vec<Slot>,
    /// Slots in use, ascending sequence numbers.
    order: VecDeque<u32>,
    free: Vec<u32>,
    instances: Vec<WriterInstance>,
    max_instances: usize,
    depth: u32,
}

impl InstanceHistory {
    fn new(depth: u32, max_instances: usize, capacity: usize, slot_size: usize) -> InstanceHistory {
        let capacity = capacity.max(1);
        InstanceHistory {
            slots: (0..capacity).map(|_| Slot { meta: SampleMeta::default(), len: 0, data: vec![0; slot_size] }).collect(),
            order: VecDeque::with_capacity(capacity),
            free: (0..capacity as u32).rev().collect(),
            instances: Vec::with_capacity(max_instances),
            max_instances,
            depth,
        }
    }

    fn get(&self, sn: i64) -> Option<&Slot> {
        let i = self.order.binary_search_by(|&i| self.slots[i as usize].meta.sn.cmp(&sn)).ok()?;
        Some(&self.slots[self.order[i] as usize])
    }

    /// The sequence numbers held from `from` to `to` (inclusive), ascending.
    fn held(&self, from: i64, to: i64) -> impl Iterator<Item = i64> + '_ {
        let first = self.order.partition_point(|&i| self.slots[i as usize].meta.sn < from);
        self.order.range(first..).map(|&i| self.slots[i as usize].meta.sn).take_while(move |&sn| sn <= to)
    }

    /// Frees the oldest slot of instance `key`; false when it holds none.
    fn evict_oldest_of(&mut self, key: &[u8; 16]) -> bool {
        let Some(pos) = self.order.iter().position(|&i| self.slots[i as usize].meta.key_hash.unwrap_or_default() == *key) else { return false };
        let Some(i) = self.order.remove(pos) else { return false };
        self.free.push(i);
        if let Some(inst) = self.instances.iter_mut().find(|x| &x.key == key) {
            inst.held = inst.held.saturating_sub(1);
        }
        true
    }

    fn store(&mut self, meta: SampleMeta, payload: &[u8], acked_below: i64) -> Result<bool, TooManyInstances> {
        let key = meta.key_hash.unwrap_or_default();
        let ii = match self.instances.iter().position(|x| x.key == key) {
            Some(i) => i,
            None if self.instances.len() < self.max_instances => {
                self.instances.push(WriterInstance { key, held: 0, unregistered: false, last_sn: 0 });
                self.instances.len() - 1
            }
            None => {
                // An unregistered instance every reader has acknowledged is over: its entry is reused.
                let i = self.instances.iter().position(|x| x.unregistered && x.last_sn < acked_below).ok_or(TooManyInstances)?;
                let old = self.instances[i].key;
                while self.evict_oldest_of(&old) {}
                self.instances[i] = WriterInstance { key, held: 0, unregistered: false, last_sn: 0 };
                i
            }
        };
        if self.instances[ii].held >= self.depth {
            self.evict_oldest_of(&key);
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                // instances * depth over max_samples: the oldest sample goes.
                let s = self.order.pop_front().ok_or(TooManyInstances)?;
                let old = self.slots[s as usize].meta.key_hash.unwrap_or_default();
                if let Some(inst) = self.instances.iter_mut().find(|x| x.key == old) {
                    inst.held = inst.held.saturating_sub(1);
                }
                s
            }
        };
        let grew = self.slots[slot as usize].store(SampleMeta { key_hash: Some(key), ..meta }, payload);
        self.order.push_back(slot);
        let inst = &mut self.instances[ii];
        inst.held += 1;
        inst.last_sn = meta.sn;
        inst.unregistered = meta.status_info & status_info::UNREGISTERED != 0;
        Ok(grew)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(sn: i64, key: u8, status: u32) -> SampleMeta {
        let mut k = [0u8; 16];
        k[0] = key;
        SampleMeta { sn, key_hash: Some(k), status_info: status, valid_data: status == 0, ..Default::default() }
    }

    #[test]
    fn writer_keeps_the_last_n_of_each_instance() {
        let qos = Qos::reliable_keep_last(2).with_max_instances(3);
        let mut h = WriterHistory::new(&qos, true, 8);
        // The heartbeat sent with the first sample must announce it.
        assert_eq!(h.first_available_after(1), 1);
        // Instance 1 written once, then instance 2 many times: 1's sample stays.
        h.store(meta(1, 1, 0), &[1], 0).unwrap();
        for sn in 2..=20 {
            h.store(meta(sn, 2, 0), &[sn as u8], 0).unwrap();
        }
        assert_eq!(h.get(1).unwrap().payload(), &[1]);
        assert!(h.get(18).is_none());
        assert_eq!(h.get(19).unwrap().payload(), &[19]);
        assert!(h.get(20).is_some());
        assert_eq!(h.first_available(21), 1);
        // What it holds, without looking at the numbers in between.
        assert_eq!(h.held(1, 20).collect::<Vec<_>>(), [1, 19, 20]);
        assert_eq!(h.held(2, 19).collect::<Vec<_>>(), [19]);
        let mut ring = WriterHistory::new(&Qos::reliable_keep_all(4), false, 8);
        for sn in 1..=10 {
            ring.store(meta(sn, 0, 0), &[sn as u8], 0).unwrap();
        }
        assert_eq!(ring.held(1, 10).collect::<Vec<_>>(), [7, 8, 9, 10]);
        assert_eq!(ring.held(8, 9).collect::<Vec<_>>(), [8, 9]);
        h.store(meta(21, 3, 0), &[21], 0).unwrap();
        assert_eq!(h.store(meta(22, 4, 0), &[22], 0), Err(TooManyInstances), "a fourth instance");
        // Instance 3 unregistered and acknowledged: its entry is reused.
        h.store(meta(22, 3, status_info::UNREGISTERED), &[], 0).unwrap();
        assert_eq!(h.store(meta(23, 4, 0), &[23], 22), Err(TooManyInstances), "not acknowledged yet");
        h.store(meta(23, 4, 0), &[23], 23).unwrap();
        assert!(h.get(21).is_none() && h.get(22).is_none());
        assert_eq!(h.instances(), 3);
    }

    #[test]
    fn reader_keeps_the_last_sample_of_each_instance_and_its_state() {
        let qos = Qos::reliable_keep_last(1).with_max_instances(2);
        let mut c = ReaderCache::new(&qos, true, 8);
        let w = Guid::default();
        for sn in 1..=5 {
            assert!(matches!(c.deliver(meta(sn, 1, 0), &[sn as u8]), Deliver::Ok));
        }
        assert!(matches!(c.deliver(meta(6, 2, 0), &[6]), Deliver::Ok));
        assert_eq!(c.len(), 2);
        assert_eq!(c.replaced, 4);
        assert!(matches!(c.deliver(meta(7, 3, 0), &[7]), Deliver::Refused));
        assert_eq!(c.instances_refused, 1);
        assert_eq!(c.front().unwrap().meta.sn, 5);
        c.pop();
        assert!(matches!(c.deliver(meta(8, 1, status_info::DISPOSED), &[]), Deliver::Ok));
        assert_eq!(c.front().unwrap().meta.sn, 6);
        c.pop();
        assert_eq!(c.front_state(), InstanceState::Disposed);
        c.pop();
        // Instance 1 is disposed and holds nothing: a new instance takes its entry.
        assert!(matches!(c.deliver(meta(9, 3, 0), &[9]), Deliver::Ok));
        c.writer_gone(&w);
        assert_eq!(c.front_state(), InstanceState::NoWriters);
        let mut k2 = [0u8; 16];
        k2[0] = 2;
        assert_eq!(c.state_of(&k2), Some(InstanceState::NoWriters));
    }
}

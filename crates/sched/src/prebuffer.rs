//! Fixed-capacity pre-buffers (KeepON §6.2): a payload pool, an
//! earliest-deadline-first heap for real-time packets and a FIFO for best
//! effort. All memory is allocated when they are made; nothing after that
//! allocates (pushes beyond capacity are refused, never grown).

use crate::slot::Slot;
use std::net::SocketAddrV4;

/// Fixed-size payload buffers, handed out by index.
#[derive(Debug)]
pub(crate) struct BufferPool {
    size: usize,
    data: Box<[u8]>,
    free: Vec<u32>,
}

impl BufferPool {
    /// `count` buffers of `size` bytes each.
    pub fn new(count: usize, size: usize) -> BufferPool {
        let mut free = Vec::with_capacity(count);
        free.extend((0..count as u32).rev());
        BufferPool { size, data: vec![0; count * size].into_boxed_slice(), free }
    }

    /// Buffers in the pool.
    pub fn capacity(&self) -> usize {
        self.data.len() / self.size.max(1)
    }

    /// Buffers handed out.
    pub fn in_use(&self) -> usize {
        self.capacity() - self.free.len()
    }

    /// Copies `payload` into a free buffer; `None` when all are in use or it is too long.
    pub fn store(&mut self, payload: &[u8]) -> Option<u32> {
        if payload.len() > self.size {
            return None;
        }
        let i = self.free.pop()?;
        let at = i as usize * self.size;
        self.data[at..at + payload.len()].copy_from_slice(payload);
        Some(i)
    }

    /// The first `len` bytes of buffer `i`.
    pub fn get(&self, i: u32, len: u16) -> &[u8] {
        let at = i as usize * self.size;
        &self.data[at..at + (len as usize).min(self.size)]
    }

    /// Returns buffer `i` to the pool (a double release is ignored in release builds).
    pub fn release(&mut self, i: u32) {
        debug_assert!(!self.free.contains(&i), "buffer {i} released twice");
        if self.free.len() < self.free.capacity() {
            // Never grows: capacity was reserved for every buffer.
            self.free.push(i);
        }
    }
}

/// One pre-buffered packet: where its payload is and where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// Target slot (real-time) or 0 (best effort).
    pub slot: Slot,
    /// Submission order, the tie-breaker for equal slots.
    pub seq: u64,
    /// Pool buffer holding the payload.
    pub buf: u32,
    /// Payload length.
    pub len: u16,
    /// Destination.
    pub peer: SocketAddrV4,
    /// The slot the application asked for (differs from `slot` when relaxed mode moved it).
    pub asked: Slot,
    /// Index of the packet's class.
    pub class: u8,
    /// The DSCP it was marked with (0: unmarked).
    pub dscp: u8,
}

impl Pending {
    fn key(&self) -> (Slot, u64) {
        (self.slot, self.seq)
    }
}

/// Earliest-deadline-first queue: a binary min-heap on (slot, submission order).
#[derive(Debug)]
pub struct EdfQueue {
    heap: Vec<Pending>,
    high_water: usize,
}

impl EdfQueue {
    /// An empty queue holding at most `capacity` packets.
    pub fn new(capacity: usize) -> EdfQueue {
        EdfQueue { heap: Vec::with_capacity(capacity), high_water: 0 }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Most packets ever held at once.
    pub(crate) fn high_water(&self) -> usize {
        self.high_water
    }

    /// Adds `p`; gives it back when the queue is full.
    pub fn push(&mut self, p: Pending) -> Result<(), Pending> {
        if self.heap.len() == self.heap.capacity() {
            return Err(p);
        }
        self.heap.push(p);
        self.high_water = self.high_water.max(self.heap.len());
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[parent].key() <= self.heap[i].key() {
                break;
            }
            self.heap.swap(parent, i);
            i = parent;
        }
        Ok(())
    }

    /// The latest slot a queued packet has (`None`: empty).
    pub(crate) fn latest_slot(&self) -> Option<crate::slot::Slot> {
        self.heap.iter().map(|p| p.slot).max()
    }

    /// The earliest packet, without removing it.
    pub fn peek(&self) -> Option<&Pending> {
        self.heap.first()
    }

    /// Removes and returns the earliest packet.
    pub fn pop(&mut self) -> Option<Pending> {
        let last = self.heap.pop()?;
        if self.heap.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.heap[0], last);
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap[l].key() < self.heap[m].key() {
                m = l;
            }
            if r < n && self.heap[r].key() < self.heap[m].key() {
                m = r;
            }
            if m == i {
                break;
            }
            self.heap.swap(i, m);
            i = m;
        }
        Some(top)
    }
}

/// First-in first-out queue on a fixed ring of entries.
#[derive(Debug)]
pub struct FifoQueue {
    items: Box<[Option<Pending>]>,
    head: usize,
    len: usize,
    high_water: usize,
}

impl FifoQueue {
    /// An empty queue holding at most `capacity` packets.
    pub fn new(capacity: usize) -> FifoQueue {
        FifoQueue { items: vec![None; capacity].into_boxed_slice(), head: 0, len: 0, high_water: 0 }
    }
    /// Packets queued.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Most packets ever held at once.
    pub(crate) fn high_water(&self) -> usize {
        self.high_water
    }
    /// Appends `p`; gives it back when the queue is full.
    pub fn push(&mut self, p: Pending) -> Result<(), Pending> {
        let cap = self.items.len();
        if self.len == cap {
            return Err(p);
        }
        self.items[(self.head + self.len) % cap] = Some(p);
        self.len += 1;
        self.high_water = self.high_water.max(self.len);
        Ok(())
    }
    /// The oldest packet, without removing it.
    pub fn peek(&self) -> Option<&Pending> {
        if self.len == 0 {
            None
        } else {
            self.items[self.head].as_ref()
        }
    }
    /// Removes and returns the oldest packet.
    pub fn pop(&mut self) -> Option<Pending> {
        if self.len == 0 {
            return None;
        }
        let p = self.items[self.head].take();
        self.head = (self.head + 1) % self.items.len();
        self.len -= 1;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(slot: Slot, seq: u64) -> Pending {
        Pending { slot, seq, buf: 0, len: 0, peer: "127.0.0.1:1".parse().unwrap(), asked: slot, class: 0, dscp: 0 }
    }

    #[test]
    fn edf_orders_by_slot_then_submission() {
        let mut q = EdfQueue::new(4);
        for (s, q2) in [(5, 0), (3, 1), (5, 2), (1, 3)] {
            q.push(p(s, q2)).unwrap();
        }
        assert!(q.push(p(0, 9)).is_err());
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|x| (x.slot, x.seq)).collect();
        assert_eq!(order, vec![(1, 3), (3, 1), (5, 0), (5, 2)]);
        assert_eq!(q.high_water(), 4);
    }

    #[test]
    fn fifo_wraps() {
        let mut q = FifoQueue::new(2);
        q.push(p(0, 1)).unwrap();
        q.push(p(0, 2)).unwrap();
        assert!(q.push(p(0, 3)).is_err());
        assert_eq!(q.pop().unwrap().seq, 1);
        q.push(p(0, 3)).unwrap();
        assert_eq!(q.pop().unwrap().seq, 2);
        assert_eq!(q.pop().unwrap().seq, 3);
        assert!(q.pop().is_none());
    }

    #[test]
    fn pool_refuses_when_full_or_too_long() {
        let mut pool = BufferPool::new(2, 8);
        let a = pool.store(b"abc").unwrap();
        assert!(pool.store(&[0; 9]).is_none());
        let _b = pool.store(b"x").unwrap();
        assert!(pool.store(b"y").is_none());
        assert_eq!(pool.get(a, 3), b"abc");
        pool.release(a);
        assert_eq!(pool.in_use(), 1);
        assert!(pool.store(b"z").is_some());
    }
}

//! A set of ring slot indices (0..256) as a fixed bitset: cheap to copy, hash and compare.

/// Largest ring the planner supports.
pub const MAX_RING_SLOTS: usize = 256;

const WORDS: usize = MAX_RING_SLOTS / 64;

/// A subset of the ring's slot indices.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct SlotSet([u64; WORDS]);

impl std::fmt::Debug for SlotSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl SlotSet {
    /// The empty set.
    pub const EMPTY: SlotSet = SlotSet([0; WORDS]);

    /// Slots 0..n.
    pub fn full(n: usize) -> SlotSet {
        let mut s = SlotSet::EMPTY;
        for w in 0..WORDS {
            let lo = w * 64;
            if n >= lo + 64 {
                s.0[w] = u64::MAX;
            } else if n > lo {
                s.0[w] = (1u64 << (n - lo)) - 1;
            }
        }
        s
    }

    /// The set with the given slots.
    pub fn from_slots(slots: impl IntoIterator<Item = usize>) -> SlotSet {
        let mut s = SlotSet::EMPTY;
        for i in slots {
            s.insert(i);
        }
        s
    }

    /// Adds slot `i`.
    pub fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Removes slot `i`.
    pub fn remove(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    /// Whether slot `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        i < MAX_RING_SLOTS && self.0[i / 64] & (1 << (i % 64)) != 0
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// No slots.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// Intersection.
    pub fn and(self, o: SlotSet) -> SlotSet {
        let mut r = self;
        for w in 0..WORDS {
            r.0[w] &= o.0[w];
        }
        r
    }

    /// Union.
    pub fn or(self, o: SlotSet) -> SlotSet {
        let mut r = self;
        for w in 0..WORDS {
            r.0[w] |= o.0[w];
        }
        r
    }

    /// Difference (slots of self not in o).
    pub fn minus(self, o: SlotSet) -> SlotSet {
        let mut r = self;
        for w in 0..WORDS {
            r.0[w] &= !o.0[w];
        }
        r
    }

    /// Every slot of self is in o.
    pub(crate) fn is_subset(&self, o: &SlotSet) -> bool {
        (0..WORDS).all(|w| self.0[w] & !o.0[w] == 0)
    }

    /// Smallest slot >= i in the set.
    pub(crate) fn next_from(&self, i: usize) -> Option<usize> {
        if i >= MAX_RING_SLOTS {
            return None;
        }
        let mut w = i / 64;
        let mut word = self.0[w] & (u64::MAX << (i % 64));
        loop {
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
            w += 1;
            if w == WORDS {
                return None;
            }
            word = self.0[w];
        }
    }

    /// Smallest slot in the set.
    pub fn first(&self) -> Option<usize> {
        self.next_from(0)
    }

    /// The slots in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let mut next = self.first();
        std::iter::from_fn(move || {
            let cur = next?;
            next = self.next_from(cur + 1);
            Some(cur)
        })
    }

    /// The set as 64-bit words, slot i at bit i % 64 of word i / 64, `words` words long.
    pub fn words(&self, words: usize) -> Vec<u64> {
        (0..words).map(|w| if w < WORDS { self.0[w] } else { 0 }).collect()
    }
}

/// A fast hasher for slot sets (the default SipHash costs more than the lookups it serves; keys are
/// not attacker-controlled).
#[derive(Default, Clone, Copy)]
pub(crate) struct SlotHasher(u64);

impl std::hash::Hasher for SlotHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, w: usize) {
        self.write_u64(w as u64);
    }
}

/// Build-hasher for maps keyed by [`SlotSet`].
pub(crate) type SlotHash = std::hash::BuildHasherDefault<SlotHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_operations() {
        let mut s = SlotSet::from_slots([0, 5, 63, 64, 200]);
        assert_eq!(s.len(), 5);
        assert!(s.contains(64) && !s.contains(65));
        assert_eq!(s.next_from(6), Some(63));
        assert_eq!(s.next_from(65), Some(200));
        assert_eq!(s.next_from(201), None);
        s.remove(63);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 5, 64, 200]);
        assert_eq!(SlotSet::full(70).len(), 70);
        assert!(!SlotSet::full(70).contains(70));
        assert!(SlotSet::from_slots([1, 2]).is_subset(&SlotSet::full(3)));
        assert_eq!(SlotSet::full(66).minus(SlotSet::full(64)).iter().collect::<Vec<_>>(), vec![64, 65]);
        assert_eq!(SlotSet::from_slots([3]).words(1), vec![8]);
    }
}

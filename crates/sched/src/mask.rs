//! Slot masks: which ring positions a traffic class owns (KeepON §6.1,
//! `slot_masks`), and the ownership table that maps each position to its
//! owner.
//!
//! A mask is written as a comma-separated list of items, each
//! `N` (one position), `A-B` (a range, inclusive) or `A/S` (A, A+S, A+2S, ...
//! up to the ring length): `0/10,1,26,51,76` owns every tenth position plus
//! four more. Positions are 0-based and must be below the ring length.

use crate::slot::{Ring, Slot};
use thiserror::Error;

/// A mask that could not be parsed or does not fit the ring.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MaskError {
    #[error("slot mask item `{item}` is not N, A-B or A/S (positions are 0-based integers)")]
    /// An item that is not N, A-B or A/S.
    Syntax {
        /// The mask item as given.
        item: String,
    },
    #[error("slot mask position {pos} is outside the ring of {slots} slots (use 0..{slots})")]
    /// A position outside the ring.
    OutOfRange {
        /// The position given.
        pos: u64,
        /// Slots in the ring.
        slots: u32,
    },
    #[error("slot mask stride in `{item}` must be at least 1")]
    /// A stride of zero.
    ZeroStride {
        /// The mask item as given.
        item: String,
    },
    #[error("slot mask `{mask}` owns no slot")]
    /// A mask that owns nothing.
    Empty {
        /// The mask as given.
        mask: String,
    },
}

/// The set of ring positions one class owns, with a table that answers
/// "next owned slot at or after s" in constant time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotMask {
    slots: u32,
    bits: Vec<u64>,
    /// `ahead[p]`: distance from position p to the next owned position (0 if p is owned).
    ahead: Vec<u32>,
    owned: u32,
}

impl SlotMask {
    /// A mask owning `positions` in a ring of `slots` slots.
    pub fn from_positions(slots: u32, positions: impl IntoIterator<Item = u32>) -> Result<SlotMask, MaskError> {
        let mut bits = vec![0u64; (slots as usize).div_ceil(64)];
        for p in positions {
            if p >= slots {
                return Err(MaskError::OutOfRange { pos: p as u64, slots });
            }
            bits[p as usize / 64] |= 1 << (p % 64);
        }
        let owned = bits.iter().map(|w| w.count_ones()).sum::<u32>();
        if owned == 0 {
            return Err(MaskError::Empty { mask: String::new() });
        }
        let mut m = SlotMask { slots, bits, ahead: vec![0; slots as usize], owned };
        m.build_ahead();
        Ok(m)
    }

    /// Parses the `N,A-B,A/S` syntax for a ring of `slots` slots.
    pub fn parse(text: &str, slots: u32) -> Result<SlotMask, MaskError> {
        let mut positions = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let syntax = || MaskError::Syntax { item: item.to_string() };
            let num = |s: &str| s.trim().parse::<u64>().map_err(|_| syntax());
            let check = |p: u64| {
                if p < slots as u64 {
                    Ok(p as u32)
                } else {
                    Err(MaskError::OutOfRange { pos: p, slots })
                }
            };
            if let Some((a, b)) = item.split_once('-') {
                let (a, b) = (check(num(a)?)?, check(num(b)?)?);
                if a > b {
                    return Err(syntax());
                }
                positions.extend(a..=b);
            } else if let Some((a, s)) = item.split_once('/') {
                let (a, s) = (check(num(a)?)?, num(s)?);
                if s == 0 {
                    return Err(MaskError::ZeroStride { item: item.to_string() });
                }
                let mut p = a as u64;
                while p < slots as u64 {
                    positions.push(p as u32);
                    p += s;
                }
            } else {
                positions.push(check(num(item)?)?);
            }
        }
        SlotMask::from_positions(slots, positions).map_err(|e| match e {
            MaskError::Empty { .. } => MaskError::Empty { mask: text.to_string() },
            e => e,
        })
    }

    fn build_ahead(&mut self) {
        let n = self.slots as usize;
        // Walk backwards twice around the ring so each position sees the next owned one, wrapping.
        let mut dist: Option<u32> = None;
        for i in (0..2 * n).rev() {
            let p = i % n;
            dist = if self.contains(p as u32) { Some(0) } else { dist.map(|d| d + 1) };
            if i < n {
                self.ahead[p] = dist.unwrap_or(0);
            }
        }
    }

    /// Ring length the mask was made for.
    pub fn ring_slots(&self) -> u32 {
        self.slots
    }

    /// Whether ring position `pos` is owned.
    pub fn contains(&self, pos: u32) -> bool {
        pos < self.slots && self.bits[pos as usize / 64] & (1 << (pos % 64)) != 0
    }

    /// Number of owned positions.
    pub fn count(&self) -> u32 {
        self.owned
    }

    /// The owned positions in increasing order.
    pub fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.slots).filter(move |&p| self.contains(p))
    }

    /// The first absolute slot at or after `s` whose position is owned.
    pub fn next_owned(&self, s: Slot) -> Slot {
        let pos = (s % self.slots as u64) as usize;
        s + self.ahead[pos] as u64
    }

    /// True when no position is owned by both masks.
    pub fn disjoint(&self, other: &SlotMask) -> bool {
        self.bits.iter().zip(&other.bits).all(|(a, b)| a & b == 0)
    }

    /// The mask in the canonical `N,A-B` syntax.
    pub fn to_text(&self) -> String {
        let mut out = Vec::new();
        let mut it = self.positions().peekable();
        while let Some(a) = it.next() {
            let mut b = a;
            while it.peek() == Some(&(b + 1)) {
                b = it.next().unwrap_or(b);
            }
            out.push(if a == b { a.to_string() } else { format!("{a}-{b}") });
        }
        out.join(",")
    }
}

/// Who owns each ring position: an index into the class list, or nobody
/// (an idle slot, a placeholder on a line-rate NIC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    owner: Vec<u8>,
}

/// Marker for an unowned position in [`Ownership`].
const NOBODY: u8 = u8::MAX;

impl Ownership {
    /// The table for `masks` (class i owns `masks[i]`). The masks must be disjoint
    /// and made for `ring`'s length (checked by the scheduler's config).
    pub fn new(ring: &Ring, masks: &[&SlotMask]) -> Ownership {
        let mut owner = vec![NOBODY; ring.slots as usize];
        for (i, m) in masks.iter().enumerate() {
            for p in m.positions() {
                owner[p as usize] = i as u8;
            }
        }
        Ownership { owner }
    }

    /// The class index owning ring position `pos`, if any.
    pub fn owner(&self, pos: u32) -> Option<usize> {
        match self.owner.get(pos as usize) {
            Some(&o) if o != NOBODY => Some(o as usize),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items() {
        let m = SlotMask::parse("0/10, 1, 26-27", 40).unwrap();
        assert_eq!(m.positions().collect::<Vec<_>>(), vec![0, 1, 10, 20, 26, 27, 30]);
        assert_eq!(m.to_text(), "0-1,10,20,26-27,30");
        assert_eq!(m.count(), 7);
    }

    #[test]
    fn rejects_bad_masks() {
        assert_eq!(SlotMask::parse("40", 40), Err(MaskError::OutOfRange { pos: 40, slots: 40 }));
        assert!(matches!(SlotMask::parse("x", 40), Err(MaskError::Syntax { .. })));
        assert!(matches!(SlotMask::parse("5-3", 40), Err(MaskError::Syntax { .. })));
        assert!(matches!(SlotMask::parse("3/0", 40), Err(MaskError::ZeroStride { .. })));
        assert!(matches!(SlotMask::parse("", 40), Err(MaskError::Empty { .. })));
        assert!(matches!(SlotMask::parse("99999999999999999999999", 40), Err(MaskError::Syntax { .. })));
    }

    #[test]
    fn next_owned_wraps() {
        let m = SlotMask::parse("3,7", 10).unwrap();
        assert_eq!(m.next_owned(0), 3);
        assert_eq!(m.next_owned(3), 3);
        assert_eq!(m.next_owned(4), 7);
        assert_eq!(m.next_owned(8), 13);
        assert_eq!(m.next_owned(1_000_000_008), 1_000_000_013);
    }
}

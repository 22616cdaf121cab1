//! Slot arithmetic: absolute slot numbers, their place in the ring, and the
//! insertion window.
//!
//! A slot is one fixed-length transmission opportunity (KeepON §4.1: one
//! descriptor of the TX ring sent at line rate). Slots are numbered from the
//! clock's epoch with a `u64` that never wraps in practice (at 1 ns per slot it
//! lasts 584 years); the *ring position* of slot `s` is `s % ring_slots`, and
//! that is what wraps. Class ownership is a property of ring positions, so a
//! class owns the same positions in every ring cycle.

/// An absolute slot number: slots elapsed since the slot clock's epoch.
pub type Slot = u64;

/// Geometry of the slot ring: slot length and number of slots per cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ring {
    /// Length of one slot in nanoseconds (nominal, as the tick source counts).
    pub slot_ns: u64,
    /// Slots per ring cycle (the ring length).
    pub slots: u32,
}

impl Ring {
    /// The ring position (0..slots) of absolute slot `s`.
    pub fn position(&self, s: Slot) -> u32 {
        (s % self.slots as u64) as u32
    }

    /// The ring cycle absolute slot `s` falls in.
    pub fn cycle(&self, s: Slot) -> u64 {
        s / self.slots as u64
    }

    /// The absolute slot at ring position `pos` of cycle `cycle`.
    pub fn slot_at(&self, cycle: u64, pos: u32) -> Slot {
        cycle * self.slots as u64 + pos as u64
    }

    /// The slot that contains nominal elapsed time `elapsed_ns` (floor).
    pub fn slot_containing(&self, elapsed_ns: u64) -> Slot {
        elapsed_ns / self.slot_ns
    }

    /// The first slot starting at or after nominal elapsed time `elapsed_ns` (ceil).
    pub fn slot_starting_at_or_after(&self, elapsed_ns: u64) -> Slot {
        elapsed_ns.div_ceil(self.slot_ns)
    }

    /// Nominal elapsed time at which slot `s` starts (saturating).
    pub fn start_ns(&self, s: Slot) -> u64 {
        s.saturating_mul(self.slot_ns)
    }

    /// Length of one ring cycle in nanoseconds.
    pub fn cycle_ns(&self) -> u64 {
        self.slot_ns * self.slots as u64
    }
}

/// Where a packet for a given slot can still go, seen from the present.
///
/// KeepON's *immediate insertion window* (§4.3): a slot at least `lead` slots
/// ahead of the current one (its content is not yet fixed) and less than one
/// ring cycle ahead of the oldest unreleased slot (its ring position is not
/// still holding an earlier cycle's packet). Slots past the window wait in
/// the pre-buffer; slots before it are late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First slot whose content may still change.
    pub earliest: Slot,
    /// First slot beyond the ring (exclusive end of the window).
    pub end: Slot,
}

/// Where a target slot falls relative to the insertion window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Before the window: its content is already fixed (or sent).
    Late,
    /// Inside the window: can be written into the ring now.
    Ring,
    /// Beyond the ring: must wait in the pre-buffer.
    Prebuffer,
}

impl Window {
    /// The window when the current slot is `current`, the insertion lead is
    /// `lead` slots and the oldest slot not yet released is `next_release`.
    pub fn new(ring: &Ring, current: Slot, lead: u32, next_release: Slot) -> Window {
        let earliest = current.saturating_add(lead as u64).max(next_release);
        Window { earliest, end: next_release.saturating_add(ring.slots as u64) }
    }

    /// Where slot `s` goes.
    pub fn place(&self, s: Slot) -> Placement {
        if s < self.earliest {
            Placement::Late
        } else if s < self.end {
            Placement::Ring
        } else {
            Placement::Prebuffer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_wrap_each_cycle() {
        let r = Ring { slot_ns: 10_000, slots: 100 };
        assert_eq!(r.position(0), 0);
        assert_eq!(r.position(99), 99);
        assert_eq!(r.position(100), 0);
        assert_eq!(r.cycle(250), 2);
        assert_eq!(r.slot_at(2, 50), 250);
        assert_eq!(r.slot_containing(19_999), 1);
        assert_eq!(r.slot_starting_at_or_after(10_001), 2);
        assert_eq!(r.slot_starting_at_or_after(10_000), 1);
    }

    #[test]
    fn window_places_late_ring_and_prebuffer() {
        let r = Ring { slot_ns: 1_000, slots: 10 };
        let w = Window::new(&r, 100, 2, 101);
        assert_eq!(w.place(101), Placement::Late);
        assert_eq!(w.place(102), Placement::Ring);
        assert_eq!(w.place(110), Placement::Ring);
        assert_eq!(w.place(111), Placement::Prebuffer);
    }
}

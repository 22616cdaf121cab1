//! The slot scheduler (KeepON §4.3 and §6): real-time packets are inserted at
//! the slot of their transmission time, best-effort packets fill their
//! class's slots in arrival order, and [`Scheduler::poll`] releases each slot's
//! packet when the slot comes.
//!
//! Everything is allocated in [`Scheduler::new`]; `send_at`, `send_be` and
//! `poll` allocate nothing and take no lock (one thread owns the scheduler:
//! the caller's real-time thread).
//!
//! Time is passed in: `now` is CLOCK_MONOTONIC ns (or any clock the tick
//! source counts), and `poll` reads a caller-supplied clock right before each
//! release, so tests drive the scheduler with a fake clock.

use crate::clock::{SlotClock, TickSource};
use crate::config::{ClassKind, ConfigError, Mode, SchedConfig};
use crate::mask::{Ownership, SlotMask};
use crate::prebuffer::{BufferPool, EdfQueue, FifoQueue, Pending};
use crate::slot::{Placement, Ring, Slot, Window};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::net::SocketAddrV4;
use thiserror::Error;

/// Largest release error a histogram holds (longer ones are recorded as this).
const HIST_MAX_NS: u64 = 10_000_000_000;

/// Why a packet was not scheduled. The packet was not taken; nothing was queued.
#[derive(Debug, Clone, Copy, Error, PartialEq, Eq)]
pub enum Refusal {
    /// The slot's content is already fixed (it is less than the insertion lead ahead, or sent).
    #[error("late by {by_ns} ns: the slot's content is fixed {lead_slots} slots ahead")]
    Late {
        /// How much earlier the packet had to come, ns.
        by_ns: u64,
        /// The scheduler's insertion lead.
        lead_slots: u32,
    },
    /// The time falls in a slot another class (or nobody) owns.
    #[error("slot {slot} (ring position {position}) is not owned by this class")]
    SlotNotOwned {
        /// The slot the time falls in.
        slot: Slot,
        /// Its ring position.
        position: u32,
    },
    /// Another packet of the class already has this slot.
    #[error("slot {slot} already carries a packet of this class")]
    SlotTaken {
        /// The slot asked for.
        slot: Slot,
    },
    /// The class holds as many packets as its capacity.
    #[error("the class's pre-buffer is full ({capacity} packets)")]
    PrebufferFull {
        /// The class's capacity, packets.
        capacity: usize,
    },
    /// The payload is longer than a slot carries.
    #[error("payload of {len} bytes is longer than a slot carries ({max})")]
    TooLarge {
        /// The payload's length.
        len: usize,
        /// The largest payload a slot carries.
        max: usize,
    },
    /// No class has this index.
    #[error("no class {class}")]
    UnknownClass {
        /// The index given.
        class: usize,
    },
    /// `send_at` to a best-effort class or `send_be` to a real-time class.
    #[error("class {class} is {kind:?}: use send_at for real-time, send_be for best effort")]
    WrongKind {
        /// The index given.
        class: usize,
        /// The class's kind.
        kind: ClassKind,
    },
}

/// Where `send_at` put a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// The slot the packet will leave in.
    pub slot: Slot,
    /// The slot its time asked for (differs when relaxed mode moved it).
    pub asked: Slot,
    /// Clock time at which `slot` starts.
    pub time_ns: u64,
}

/// A packet leaving now, as handed to the sink in [`Scheduler::poll`].
#[derive(Debug, Clone, Copy)]
pub struct Release<'a> {
    /// Index of the packet's class.
    pub class: usize,
    /// Its kind.
    pub kind: ClassKind,
    /// The slot it leaves in.
    pub slot: Slot,
    /// The slot the application asked for (real-time), or `slot` (best effort).
    pub asked: Slot,
    /// Tick-source instant (CLOCK_MONOTONIC for a CPU-paced scheduler) at which the slot starts.
    pub scheduled_ns: u64,
    /// The clock reading taken just before this hand-off.
    pub release_ns: u64,
    /// The payload.
    pub payload: &'a [u8],
    /// Destination.
    pub peer: SocketAddrV4,
    /// The DSCP its sender marked it with (0: unmarked), written into its IPv4 header on release.
    pub dscp: u8,
}

/// Per-class counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ClassCounters {
    /// Packets accepted by send_at / send_be.
    pub accepted: u64,
    /// Packets handed to the datapath.
    pub sent: u64,
    /// Real-time packets that missed their slot (at submission or at release).
    pub late: u64,
    /// Packets dropped: strict-mode late or conflicting packets, relaxed packets with nowhere to go.
    pub dropped: u64,
    /// Real-time packets relaxed mode moved to a later slot of the class.
    pub moved: u64,
    /// Packets found a slot taken when they left the pre-buffer for the ring.
    pub conflicts: u64,
    /// Best-effort slots that passed unused because the poll came too late for them.
    pub missed_slots: u64,
    /// Hand-offs the datapath refused.
    pub tx_errors: u64,
    /// Most packets the class's pre-buffer (EDF heap or FIFO) held at once.
    pub prebuffer_high_water: u64,
}

/// Release error (release − scheduled) percentiles of one class, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// Samples.
    pub count: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Median, ns.
    pub p50: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// 99.99th percentile, ns.
    pub p9999: u64,
    /// Largest, ns.
    pub max: u64,
}

impl ErrorSummary {
    /// Percentiles of `h`.
    pub fn of(h: &Histogram<u64>) -> ErrorSummary {
        if h.is_empty() {
            return ErrorSummary::default();
        }
        ErrorSummary {
            count: h.len(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
        }
    }
}

/// What one poll did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollSummary {
    /// Slots whose time had come and were processed.
    pub slots: u64,
    /// Packets handed to the sink.
    pub released: u64,
    /// Packets dropped (strict late) or moved (relaxed late).
    pub late: u64,
}

struct ClassState {
    name: String,
    kind: ClassKind,
    mode: Mode,
    mask: SlotMask,
    capacity: usize,
    pool: BufferPool,
    edf: EdfQueue,
    fifo: FifoQueue,
    counters: ClassCounters,
    release_error: Histogram<u64>,
}

/// The slot scheduler over tick source `S`.
pub struct Scheduler<S: TickSource> {
    ring: Ring,
    lead: u32,
    tolerance_ns: u64,
    /// How late a best-effort slot may still be used: the late tolerance,
    /// but at most the ring's length less the lead (see `release_slot`).
    be_horizon_ns: u64,
    max_payload: usize,
    source: S,
    clock: SlotClock,
    owners: Ownership,
    classes: Vec<ClassState>,
    /// Real-time packets placed in the ring, by ring position.
    slots: Box<[Option<Pending>]>,
    next_release: Slot,
    /// Every pre-buffered real-time packet is for this slot or later (the
    /// ring window's end when the pre-buffer was last emptied into the ring),
    /// so `poll` only moves packets when a long stall carries it this far.
    filled_to: Slot,
    seq: u64,
}

impl<S: TickSource> Scheduler<S> {
    /// A scheduler for `cfg` counting slots with `source`, its clock reading
    /// `time_at_epoch` at elapsed 0. The first slot released is the one after
    /// the slot current at `now`.
    pub fn new(cfg: &SchedConfig, source: S, time_at_epoch: u64, now: u64) -> Result<Scheduler<S>, ConfigError> {
        cfg.validate()?;
        let ring = cfg.ring();
        let masks: Vec<&SlotMask> = cfg.classes.iter().map(|c| &c.mask).collect();
        let owners = Ownership::new(&ring, &masks);
        let classes = cfg
            .classes
            .iter()
            .map(|c| ClassState {
                name: c.name.clone(),
                kind: c.kind,
                mode: c.mode,
                mask: c.mask.clone(),
                capacity: c.capacity,
                pool: BufferPool::new(c.capacity, cfg.max_payload),
                edf: EdfQueue::new(if c.kind == ClassKind::RealTime { c.capacity } else { 0 }),
                fifo: FifoQueue::new(if c.kind == ClassKind::BestEffort { c.capacity } else { 0 }),
                counters: ClassCounters::default(),
                // Bounds are valid constants, so this cannot fail.
                release_error: Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("histogram bounds"),
            })
            .collect();
        let clock = SlotClock::new(ring, time_at_epoch);
        let next_release = clock.count(source.elapsed_ns(now)) + 1;
        Ok(Scheduler {
            ring,
            lead: cfg.lead_slots,
            tolerance_ns: cfg.late_tolerance_ns,
            be_horizon_ns: cfg.late_tolerance_ns.min(ring.slot_ns * u64::from(ring.slots.saturating_sub(cfg.lead_slots + 1).max(1))),
            max_payload: cfg.max_payload,
            source,
            clock,
            owners,
            classes,
            slots: vec![None; ring.slots as usize].into_boxed_slice(),
            next_release,
            filled_to: next_release + ring.slots as u64,
            seq: 0,
        })
    }

    /// The ring geometry.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }
    /// The slot clock (read-only).
    pub fn clock(&self) -> &SlotClock {
        &self.clock
    }
    /// The insertion lead in slots.
    pub fn lead_slots(&self) -> u32 {
        self.lead
    }
    /// The tick source.
    pub fn source(&self) -> &S {
        &self.source
    }
    /// The tick source, e.g. to feed a completion count.
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }
    /// Number of classes.
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }
    /// The index of the class named `name`.
    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }
    /// Name of class `i`.
    pub fn class_name(&self, i: usize) -> Option<&str> {
        self.classes.get(i).map(|c| c.name.as_str())
    }
    /// Kind of class `i`.
    pub fn class_kind(&self, i: usize) -> Option<ClassKind> {
        self.classes.get(i).map(|c| c.kind)
    }
    /// Mode of class `i`.
    pub fn class_mode(&self, i: usize) -> Option<Mode> {
        self.classes.get(i).map(|c| c.mode)
    }
    /// Counters of class `i`.
    pub fn counters(&self, i: usize) -> Option<ClassCounters> {
        self.classes.get(i).map(|c| {
            let mut k = c.counters;
            k.prebuffer_high_water = (c.edf.high_water().max(c.fifo.high_water())) as u64;
            k
        })
    }
    /// Release-error distribution of class `i` (ns).
    pub fn release_error(&self, i: usize) -> Option<&Histogram<u64>> {
        self.classes.get(i).map(|c| &c.release_error)
    }
    /// Packets class `i` holds (pre-buffer and ring).
    pub fn held(&self, i: usize) -> Option<usize> {
        self.classes.get(i).map(|c| c.pool.in_use())
    }
    /// Packets class `i` has waiting in its pre-buffer (not yet in the ring).
    pub fn prebuffered(&self, i: usize) -> Option<usize> {
        self.classes.get(i).map(|c| c.edf.len() + c.fifo.len())
    }

    /// The first slot from the next one to release, at most `horizon` slots
    /// on, that has something to send (a real-time packet in the ring, or a
    /// best-effort slot whose class has packets queued). For a caller that
    /// wants to spin on the clock right before a busy slot.
    pub fn next_busy_slot(&self, horizon: u64) -> Option<Slot> {
        let end = self.next_release + horizon.min(self.ring.slots as u64);
        (self.next_release..end).find(|&s| {
            let pos = self.ring.position(s);
            match self.slots[pos as usize] {
                Some(p) if p.slot == s => true,
                _ => self.owners.owner(pos).is_some_and(|c| self.classes[c].kind == ClassKind::BestEffort && !self.classes[c].fifo.is_empty()),
            }
        })
    }

    /// The slot current at `now`.
    pub fn current_slot(&self, now: u64) -> Slot {
        self.clock.count(self.source.elapsed_ns(now))
    }
    /// The next slot `poll` will release.
    pub fn next_release(&self) -> Slot {
        self.next_release
    }
    /// Clock time at instant `now` (e.g. a receive timestamp in the slot clock's time).
    pub fn time_at(&self, now: u64) -> u64 {
        self.clock.time_at(self.source.elapsed_ns(now))
    }
    /// The slot a packet for clock time `time` would get (before ownership and lateness).
    pub fn slot_for_time(&self, time: u64) -> Slot {
        self.clock.slot_for_time(time)
    }
    /// Clock time at which slot `s` starts.
    pub fn slot_time(&self, s: Slot) -> u64 {
        self.clock.slot_time(s)
    }
    /// Tick-source instant (CLOCK_MONOTONIC for CPU pacing) at which slot `s` starts.
    pub fn slot_instant(&self, s: Slot) -> u64 {
        self.source.mono_at(self.ring.start_ns(s))
    }
    /// The first slot at or after `s` that class `class` owns.
    pub fn next_owned(&self, class: usize, s: Slot) -> Option<Slot> {
        self.classes.get(class).map(|c| c.mask.next_owned(s))
    }

    /// Offset adjustment of the slot clock (the slot count is unchanged).
    pub(crate) fn step_clock(&mut self, delta_ns: i64) {
        self.clock.step(delta_ns);
    }
    /// Rate adjustment of the slot clock from `now` on (the slot count is unchanged).
    pub(crate) fn set_clock_rate(&mut self, now: u64, rate_ppb: i64) {
        let e = self.source.elapsed_ns(now);
        self.clock.set_rate(e, rate_ppb);
    }
    /// Sets the slot clock to read `time` at `now` (the slot count is unchanged).
    pub fn set_clock_time(&mut self, now: u64, time: u64) {
        let e = self.source.elapsed_ns(now);
        self.clock.set_time(e, time);
    }

    fn window(&self, current: Slot) -> Window {
        Window::new(&self.ring, current, self.lead, self.next_release)
    }

    /// Schedules a real-time packet for clock time `time_ns` in class `class`, at instant `now`.
    ///
    /// The packet gets the first slot starting at or after `time_ns`. If that
    /// slot's content is already fixed (less than the insertion lead ahead) the
    /// packet is late; if the class does not own the slot, or another packet of
    /// the class has it, the class's mode decides: strict refuses, relaxed
    /// moves it to the class's next free slot.
    pub fn send_at(&mut self, now: u64, time_ns: u64, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<Scheduled, Refusal> {
        self.send_at_marked(now, time_ns, class, payload, peer, 0)
    }

    /// [`send_at`](Self::send_at) for a packet marked with `dscp` (its
    /// release carries it to the datapath, which writes it into the header).
    pub(crate) fn send_at_marked(&mut self, now: u64, time_ns: u64, class: usize, payload: &[u8], peer: SocketAddrV4, dscp: u8) -> Result<Scheduled, Refusal> {
        let c = self.classes.get(class).ok_or(Refusal::UnknownClass { class })?;
        if c.kind != ClassKind::RealTime {
            return Err(Refusal::WrongKind { class, kind: c.kind });
        }
        if payload.len() > self.max_payload {
            return Err(Refusal::TooLarge { len: payload.len(), max: self.max_payload });
        }
        self.insert_due();
        let elapsed = self.source.elapsed_ns(now);
        let w = self.window(self.clock.count(elapsed));
        let asked = self.clock.slot_for_time(time_ns);
        let mode = self.classes[class].mode;
        let mut target = asked;
        let mut moved = false;
        if w.place(target) == Placement::Late {
            let by_ns = (elapsed + self.lead as u64 * self.ring.slot_ns).saturating_sub(self.ring.start_ns(target)).max(1);
            let k = &mut self.classes[class].counters;
            k.late += 1;
            if mode == Mode::Strict {
                k.dropped += 1;
                return Err(Refusal::Late { by_ns, lead_slots: self.lead });
            }
            target = w.earliest;
            moved = true;
        }
        if !self.classes[class].mask.contains(self.ring.position(target)) {
            if mode == Mode::Strict {
                return Err(Refusal::SlotNotOwned { slot: target, position: self.ring.position(target) });
            }
            target = self.classes[class].mask.next_owned(target);
            moved = true;
        }
        if w.place(target) == Placement::Ring && self.slots[self.ring.position(target) as usize].is_some() {
            if mode == Mode::Strict {
                return Err(Refusal::SlotTaken { slot: target });
            }
            target = self.free_owned_from(class, target + 1, w.end);
            moved = true;
        }
        let c = &mut self.classes[class];
        let buf = c.pool.store(payload).ok_or(Refusal::PrebufferFull { capacity: c.capacity })?;
        self.seq += 1;
        let p = Pending { slot: target, seq: self.seq, buf, len: payload.len() as u16, peer, asked, class: class as u8, dscp };
        if w.place(target) == Placement::Ring {
            self.slots[self.ring.position(target) as usize] = Some(p);
        } else if c.edf.push(p).is_err() {
            // Pool and heap have the same capacity, so this does not happen; stay correct anyway.
            c.pool.release(buf);
            return Err(Refusal::PrebufferFull { capacity: c.capacity });
        }
        c.counters.accepted += 1;
        if moved {
            c.counters.moved += 1;
        }
        Ok(Scheduled { slot: target, asked, time_ns: self.clock.slot_time(target) })
    }

    /// Schedules a real-time packet of class `class` as soon as it can go:
    /// in the class's first *free* owned slot past the insertion lead (and
    /// after the last released slot), all judged at the one instant `now`.
    ///
    /// Why not [`send_at`](Self::send_at) for the slot after the lead: that
    /// slot may hold the class's previous packet (a writer's DATA and its
    /// HEARTBEAT, or an ACKNACK and a DATA, queued in the same microsecond),
    /// or lie before the window when the clock crossed a slot boundary
    /// between two readings or `poll_spin` released a slot ahead; relaxed
    /// mode then *moved* the packet and counted it `moved` (and `late`),
    /// though nothing was late: 1-2 % of the mixed bench's control packets
    /// were counted so, with the small release error of a packet that left
    /// in its slot. Here the slot asked for is the slot it gets, so `moved`
    /// and `late` count only packets that could not have their slot.
    pub(crate) fn send_asap_marked(&mut self, now: u64, class: usize, payload: &[u8], peer: SocketAddrV4, dscp: u8) -> Result<Scheduled, Refusal> {
        if class >= self.classes.len() {
            return Err(Refusal::UnknownClass { class });
        }
        self.insert_due();
        let current = self.clock.count(self.source.elapsed_ns(now));
        let w = self.window(current);
        let from = (current + self.lead as u64 + 1).max(w.earliest);
        let mut target = self.free_owned_from(class, from, w.end);
        if target >= w.end {
            // Past the ring: after the class's packets already waiting
            // there, each in a slot of its own (in one slot they would
            // conflict on entering the ring, be moved, and be overtaken).
            if let Some(last) = self.classes[class].edf.latest_slot() {
                target = self.classes[class].mask.next_owned(target.max(last + 1));
            }
        }
        let time = self.clock.slot_time(target);
        self.send_at_marked(now, time, class, payload, peer, dscp)
    }

    /// Queues a best-effort packet in class `class`; it leaves in the class's next free slot.
    pub fn send_be(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4) -> Result<(), Refusal> {
        self.send_be_marked(class, payload, peer, 0)
    }

    /// [`send_be`](Self::send_be) for a packet marked with `dscp`.
    pub(crate) fn send_be_marked(&mut self, class: usize, payload: &[u8], peer: SocketAddrV4, dscp: u8) -> Result<(), Refusal> {
        let c = self.classes.get_mut(class).ok_or(Refusal::UnknownClass { class })?;
        if c.kind != ClassKind::BestEffort {
            return Err(Refusal::WrongKind { class, kind: c.kind });
        }
        if payload.len() > self.max_payload {
            return Err(Refusal::TooLarge { len: payload.len(), max: self.max_payload });
        }
        let buf = c.pool.store(payload).ok_or(Refusal::PrebufferFull { capacity: c.capacity })?;
        self.seq += 1;
        let p = Pending { slot: 0, seq: self.seq, buf, len: payload.len() as u16, peer, asked: 0, class: class as u8, dscp };
        if c.fifo.push(p).is_err() {
            c.pool.release(buf);
            return Err(Refusal::PrebufferFull { capacity: c.capacity });
        }
        c.counters.accepted += 1;
        Ok(())
    }

    /// The first slot at or after `from` owned by `class` that is free in the
    /// ring, or, past `end` (the ring's end), the first owned slot there.
    fn free_owned_from(&self, class: usize, from: Slot, end: Slot) -> Slot {
        let mask = &self.classes[class].mask;
        let mut s = mask.next_owned(from);
        while s < end {
            if self.slots[self.ring.position(s) as usize].is_none() {
                return s;
            }
            s = mask.next_owned(s + 1);
        }
        mask.next_owned(s.max(end))
    }

    /// Moves pre-buffered real-time packets whose slot has entered the ring window into the ring.
    fn insert_due(&mut self) {
        let end = self.next_release + self.ring.slots as u64;
        self.filled_to = end;
        for class in 0..self.classes.len() {
            while let Some(p) = self.classes[class].edf.peek().copied() {
                if p.slot >= end {
                    break;
                }
                self.classes[class].edf.pop();
                let pos = self.ring.position(p.slot) as usize;
                if self.slots[pos].is_none() {
                    self.slots[pos] = Some(p);
                    continue;
                }
                let c = &mut self.classes[class];
                c.counters.conflicts += 1;
                if c.mode == Mode::Strict {
                    c.counters.dropped += 1;
                    c.pool.release(p.buf);
                    continue;
                }
                let to = self.free_owned_from(class, p.slot + 1, end);
                let c = &mut self.classes[class];
                c.counters.moved += 1;
                let moved = Pending { slot: to, ..p };
                if to < end {
                    self.slots[self.ring.position(to) as usize] = Some(moved);
                } else if c.edf.push(moved).is_err() {
                    c.counters.dropped += 1;
                    c.pool.release(p.buf);
                }
            }
        }
    }

    /// Releases every slot whose time has come by `now`, in slot order,
    /// except that before each best-effort hand-off the real-time packets
    /// of every slot begun by then leave first: a poll that runs behind
    /// (hand-offs slower than slots, a descheduled thread) never makes a
    /// real-time packet wait behind the best-effort packets of earlier slots.
    ///
    /// For each due slot, `read_clock` is read right before the hand-off; a
    /// real-time packet whose slot started more than the late tolerance
    /// before that reading is late: strict mode drops it, relaxed mode moves it
    /// to the class's next free slot. A best-effort slot that late is left
    /// unused (its packet stays queued). `sink` sends the packet and says
    /// whether the datapath took it.
    pub fn poll<C, K>(&mut self, now: u64, mut read_clock: C, mut sink: K) -> PollSummary
    where
        C: FnMut() -> u64,
        K: FnMut(&Release<'_>) -> bool,
    {
        // What lies between a slot's start and its hand-off is kept short: no
        // division (slot starts and ring positions advance by addition) and no
        // pre-buffer work (done after the hand-offs, for the slots ahead).
        let elapsed = self.source.elapsed_ns(now);
        let mut start = self.ring.start_ns(self.next_release);
        let mut pos = self.ring.position(self.next_release);
        let mut summary = PollSummary::default();
        // Slots before this one have had their real-time packet looked up early.
        let mut rt_ahead = self.next_release;
        while start <= elapsed {
            let s = self.next_release;
            if s >= self.filled_to {
                self.insert_due();
            }
            let scheduled_ns = self.source.mono_at(start);
            let entry = match self.slots[pos as usize] {
                Some(p) if p.slot == s => self.slots[pos as usize].take(),
                _ => None,
            };
            summary.slots += 1;
            if entry.is_some() {
                let t = read_clock();
                self.release_slot(s, pos, scheduled_ns, entry, t, &mut sink, &mut summary);
            } else if self.best_effort_waiting(pos) {
                let mut t = read_clock();
                if t.saturating_sub(scheduled_ns) <= self.be_horizon_ns {
                    // Real-time packets of every slot begun by now leave
                    // before this best-effort one (see `release_rt_due`).
                    let (to, released) = self.release_rt_due(s + 1, rt_ahead, t, &mut read_clock, &mut sink, &mut summary);
                    rt_ahead = to;
                    if released {
                        t = read_clock();
                    }
                }
                self.release_slot(s, pos, scheduled_ns, None, t, &mut sink, &mut summary);
            }
            self.next_release += 1;
            start += self.ring.slot_ns;
            pos += 1;
            if pos == self.ring.slots {
                pos = 0;
            }
        }
        if summary.slots > 0 {
            self.insert_due();
        }
        summary
    }

    /// Hands off the real-time packets of the slots from `from.max(ahead)`
    /// up to the one current at `t` (within the ring window), each at its
    /// own clock reading. Called by `poll` before each best-effort hand-off:
    /// when the poll runs behind the slots (its hand-offs take longer than
    /// a slot, or its thread was descheduled), it releases the due slots in
    /// a burst, and in slot order a real-time packet would wait behind
    /// every best-effort packet of the slots before its own; with this, it
    /// waits behind at most the one hand-off in progress. Returns the first
    /// slot not looked at, and whether anything was handed off.
    fn release_rt_due<C, K>(&mut self, from: Slot, ahead: Slot, t: u64, read_clock: &mut C, sink: &mut K, summary: &mut PollSummary) -> (Slot, bool)
    where
        C: FnMut() -> u64,
        K: FnMut(&Release<'_>) -> bool,
    {
        // Slots past `filled_to` may still have their packets in the pre-buffer: `poll` inserts them.
        let end = (self.current_slot(t) + 1).min(self.filled_to).min(self.next_release + self.ring.slots as u64);
        let mut released = false;
        let mut x = from.max(ahead);
        while x < end {
            let pos = self.ring.position(x);
            if let Some(p) = self.slots[pos as usize].filter(|p| p.slot == x) {
                self.slots[pos as usize] = None;
                let scheduled_ns = self.source.mono_at(self.ring.start_ns(x));
                let now = read_clock();
                self.release_slot(x, pos, scheduled_ns, Some(p), now, sink, summary);
                released = true;
            }
            x += 1;
        }
        (x.max(ahead), released)
    }

    /// Whether ring position `pos` belongs to a best-effort class with packets queued.
    fn best_effort_waiting(&self, pos: u32) -> bool {
        self.owners.owner(pos).is_some_and(|c| self.classes[c].kind == ClassKind::BestEffort && !self.classes[c].fifo.is_empty())
    }

    /// Hands slot `s`'s packet (its ring `entry`, or its best-effort class's
    /// next packet) to `sink` at clock reading `t`, or treats it as late.
    fn release_slot<K>(&mut self, s: Slot, pos: u32, scheduled_ns: u64, entry: Option<Pending>, t: u64, sink: &mut K, summary: &mut PollSummary)
    where
        K: FnMut(&Release<'_>) -> bool,
    {
        if let Some(p) = entry {
            let class = p.class as usize;
            if t.saturating_sub(scheduled_ns) > self.tolerance_ns {
                summary.late += 1;
                self.handle_late(p, t);
            } else {
                let c = &mut self.classes[class];
                let r = Release {
                    class,
                    kind: ClassKind::RealTime,
                    slot: s,
                    asked: p.asked,
                    scheduled_ns,
                    release_ns: t,
                    payload: c.pool.get(p.buf, p.len),
                    peer: p.peer,
                    dscp: p.dscp,
                };
                let ok = sink(&r);
                Self::account(c, ok, t.saturating_sub(scheduled_ns));
                c.pool.release(p.buf);
                summary.released += ok as u64;
            }
        } else if let Some(class) = self.owners.owner(pos) {
            let c = &mut self.classes[class];
            if c.kind != ClassKind::BestEffort {
                return;
            }
            // A best-effort slot later than the horizon passes unused (its
            // packet stays queued for the next one). Not the late tolerance
            // alone: a poll whose hand-offs take longer than their slots
            // falls behind, and if best-effort slots up to a tolerance
            // longer than the ring still went out, the released slot would
            // lag the clock by more than the ring: a real-time packet for
            // the slot after the lead lies past the ring window, waits in
            // the pre-buffer, and leaves only when the best-effort backlog
            // before it has been worked off (a 2 µs-slot, 50-slot ring with
            // a 1 ms tolerance held control ~0.5 ms). Kept within the ring,
            // a new real-time packet is always in the ring, where
            // `release_rt_due` finds it once its slot begins.
            if t.saturating_sub(scheduled_ns) > self.be_horizon_ns {
                c.counters.missed_slots += 1;
            } else if let Some(p) = c.fifo.pop() {
                let r = Release {
                    class,
                    kind: ClassKind::BestEffort,
                    slot: s,
                    asked: s,
                    scheduled_ns,
                    release_ns: t,
                    payload: c.pool.get(p.buf, p.len),
                    peer: p.peer,
                    dscp: p.dscp,
                };
                let ok = sink(&r);
                Self::account(c, ok, t.saturating_sub(scheduled_ns));
                c.pool.release(p.buf);
                summary.released += ok as u64;
            }
        }
    }

    /// [`poll`](Self::poll) at `now`, then, if the next slot with something
    /// to send starts within `spin_ns`, releases it on time: its packet is
    /// looked up first, then `read_clock` is read until the slot has started,
    /// and that reading is the hand-off's time stamp, with nothing left
    /// between it and `sink`. The empty slots before it pass unused (they
    /// are empty: nothing else can be queued meanwhile, the caller is here).
    pub fn poll_spin<C, K>(&mut self, now: u64, spin_ns: u64, mut read_clock: C, mut sink: K) -> PollSummary
    where
        C: FnMut() -> u64,
        K: FnMut(&Release<'_>) -> bool,
    {
        let mut summary = self.poll(now, &mut read_clock, &mut sink);
        // Hand-offs take µs: decide on the next slot from the present, not from `now`.
        let now = if summary.released > 0 || summary.late > 0 { read_clock() } else { now };
        let horizon = (spin_ns / self.ring.slot_ns + 2).min(self.ring.slots as u64);
        let Some(s) = self.next_busy_slot(horizon) else { return summary };
        let scheduled_ns = self.source.mono_at(self.ring.start_ns(s));
        if s >= self.filled_to || scheduled_ns > now.saturating_add(spin_ns) {
            return summary;
        }
        if scheduled_ns <= now {
            // It started while the hand-offs ran: release it the ordinary way.
            let more = self.poll(now, &mut read_clock, &mut sink);
            summary.slots += more.slots;
            summary.released += more.released;
            summary.late += more.late;
            return summary;
        }
        let pos = self.ring.position(s);
        let entry = match self.slots[pos as usize] {
            Some(p) if p.slot == s => self.slots[pos as usize].take(),
            _ => None,
        };
        let mut t = read_clock();
        while t < scheduled_ns {
            std::hint::spin_loop();
            t = read_clock();
        }
        summary.slots += s + 1 - self.next_release;
        self.release_slot(s, pos, scheduled_ns, entry, t, &mut sink, &mut summary);
        self.next_release = s + 1;
        self.insert_due();
        summary
    }

    fn account(c: &mut ClassState, ok: bool, error_ns: u64) {
        if ok {
            c.counters.sent += 1;
            c.release_error.saturating_record(error_ns.min(HIST_MAX_NS));
        } else {
            c.counters.tx_errors += 1;
        }
    }

    /// A real-time packet whose slot passed before it could leave (the poll came late).
    fn handle_late(&mut self, p: Pending, t: u64) {
        let class = p.class as usize;
        self.classes[class].counters.late += 1;
        if self.classes[class].mode == Mode::Strict {
            let c = &mut self.classes[class];
            c.counters.dropped += 1;
            c.pool.release(p.buf);
            return;
        }
        // Relaxed: the class's next free slot after the present and the lead.
        let now_slot = self.current_slot(t).max(p.slot) + 1 + self.lead as u64;
        let end = self.next_release + 1 + self.ring.slots as u64;
        let to = self.free_owned_from(class, now_slot, end);
        let moved = Pending { slot: to, ..p };
        let c = &mut self.classes[class];
        c.counters.moved += 1;
        if to < end && self.slots[self.ring.position(to) as usize].is_none() {
            self.slots[self.ring.position(to) as usize] = Some(moved);
        } else if c.edf.push(moved).is_err() {
            c.counters.dropped += 1;
            c.pool.release(p.buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::MonotonicSource;
    use crate::config::ClassConfig;
    use std::cell::Cell;

    /// 1 µs slots in a ring of 20; `ctl` real-time owns position 5, `bulk` the rest.
    fn scheduler() -> Scheduler<MonotonicSource> {
        let mut cfg = SchedConfig::new(1_000, 20, 1);
        cfg.max_payload = 64;
        cfg.late_tolerance_ns = 1_000_000;
        cfg.classes.push(ClassConfig::parse("ctl:rt:relaxed:5@16", 20, Mode::Relaxed).unwrap());
        cfg.classes.push(ClassConfig::parse("bulk:be:0-4,6-19@64", 20, Mode::Relaxed).unwrap());
        Scheduler::new(&cfg, MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap()
    }

    fn peer() -> SocketAddrV4 {
        "10.77.0.2:7000".parse().unwrap()
    }

    #[test]
    fn a_poll_behind_the_slots_hands_off_real_time_before_earlier_best_effort() {
        let mut s = scheduler();
        for i in 0..12u8 {
            s.send_be(1, &[i; 32], peer()).unwrap();
        }
        assert_eq!(s.send_at(0, 5_000, 0, b"control", peer()).unwrap().slot, 5);
        // The poll comes when slots 1..=9 have all begun; each hand-off takes 1 µs.
        let clock = Cell::new(9_500u64);
        let mut order = Vec::new();
        let sum = s.poll(
            9_500,
            || clock.get(),
            |r| {
                order.push((r.class, r.slot, r.release_ns));
                clock.set(clock.get() + 1_000);
                true
            },
        );
        assert_eq!(order[0].0, 0, "the control packet leaves first: {order:?}");
        assert_eq!(order[0].1, 5);
        // Every best-effort slot due at the poll still carries its packet, in slot order.
        let be: Vec<Slot> = order[1..].iter().map(|o| o.1).collect();
        assert_eq!(be, vec![1, 2, 3, 4, 6, 7, 8, 9], "{order:?}");
        assert_eq!((sum.slots, sum.released), (9, 9));
        let (ctl, bulk) = (s.counters(0).unwrap(), s.counters(1).unwrap());
        assert_eq!((ctl.sent, ctl.late, bulk.sent, bulk.missed_slots), (1, 0, 8, 0));
    }

    #[test]
    fn a_real_time_slot_that_begins_during_best_effort_hand_offs_goes_next() {
        let mut s = scheduler();
        for i in 0..12u8 {
            s.send_be(1, &[i; 32], peer()).unwrap();
        }
        s.send_at(0, 5_000, 0, b"control", peer()).unwrap();
        // The poll comes at 4.5 µs (slots 1-4 due, slot 5 not yet); the
        // hand-offs take 1 µs each, so slot 5 begins during slot 4's.
        let clock = Cell::new(4_500u64);
        let mut order = Vec::new();
        s.poll(
            4_500,
            || clock.get(),
            |r| {
                order.push((r.class, r.slot));
                clock.set(clock.get() + 1_000);
                true
            },
        );
        assert_eq!(order, vec![(1, 1), (0, 5), (1, 2), (1, 3), (1, 4)]);
        // Its slot passes later without sending anything twice.
        let mut more = Vec::new();
        s.poll(20_000, || clock.get(), |r| {
            more.push((r.class, r.slot));
            true
        });
        assert!(more.iter().all(|m| m.0 == 1), "{more:?}");
        assert_eq!(s.counters(0).unwrap().sent, 1);
    }
}

#[cfg(test)]
mod horizon_tests {
    use super::*;
    use crate::clock::MonotonicSource;
    use crate::config::ClassConfig;
    use std::cell::Cell;

    #[test]
    fn a_poll_far_behind_skips_old_best_effort_slots_so_new_control_stays_in_the_ring() {
        // 1 µs slots, ring of 10, lead 1, tolerance 1 ms (a hundred rings).
        let mut cfg = SchedConfig::new(1_000, 10, 1);
        cfg.max_payload = 64;
        cfg.late_tolerance_ns = 1_000_000;
        cfg.classes.push(ClassConfig::parse("ctl:rt:relaxed:5@16", 10, Mode::Relaxed).unwrap());
        cfg.classes.push(ClassConfig::parse("bulk:be:0-4,6-9@512", 10, Mode::Relaxed).unwrap());
        let mut s = Scheduler::new(&cfg, MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap();
        for i in 0..400u16 {
            s.send_be(1, &i.to_le_bytes(), peer()).unwrap();
        }
        // The poll comes 500 µs late; a hand-off takes 1 µs.
        let clock = Cell::new(500_000u64);
        let mut sent = 0u64;
        let sum = s.poll(500_000, || clock.get(), |_| {
            sent += 1;
            clock.set(clock.get() + 1_000);
            true
        });
        // Only the slots within the horizon (ring 10 less lead 1 less 1: 8 µs) went out;
        // the older ones passed unused, their packets still queued.
        let bulk = s.counters(1).unwrap();
        assert!(bulk.missed_slots > 300, "{bulk:?}");
        assert_eq!(bulk.sent, sent);
        assert!(sent <= 8, "{sent} {sum:?}");
        assert_eq!(s.held(1), Some(400 - sent as usize));
        // The released slot lags the clock by less than the ring less the
        // lead: control for the slot after the lead falls in the ring window
        // (with the whole tolerance used, 400 hand-offs would have left it 400 slots behind).
        let lag = s.current_slot(clock.get()) - s.next_release();
        assert!(lag < 10 - 1, "{lag}");
    }

    fn peer() -> SocketAddrV4 {
        "10.77.0.2:7000".parse().unwrap()
    }
}

#[cfg(test)]
mod asap_tests {
    use super::*;
    use crate::clock::MonotonicSource;
    use crate::config::ClassConfig;
    use std::cell::Cell;

    /// 1 µs slots in a ring of 20, lead 1; `ctl` owns positions 5, 10 and 15.
    fn scheduler() -> Scheduler<MonotonicSource> {
        let mut cfg = SchedConfig::new(1_000, 20, 1);
        cfg.max_payload = 64;
        cfg.late_tolerance_ns = 1_000_000;
        cfg.classes.push(ClassConfig::parse("ctl:rt:relaxed:5,10,15@16", 20, Mode::Relaxed).unwrap());
        cfg.classes.push(ClassConfig::parse("bulk:be:0-4,6-9,11-14,16-19@64", 20, Mode::Relaxed).unwrap());
        Scheduler::new(&cfg, MonotonicSource { epoch_mono: 0 }, 0, 0).unwrap()
    }

    fn peer() -> SocketAddrV4 {
        "10.77.0.2:7000".parse().unwrap()
    }

    #[test]
    fn packets_queued_in_one_instant_take_the_next_free_slots_without_counting_moves() {
        let mut s = scheduler();
        // A DATA and its HEARTBEAT, then an ACKNACK, all at 2.5 µs.
        let got: Vec<Slot> = (0..3u8).map(|i| s.send_asap_marked(2_500, 0, &[i; 8], peer(), 46).unwrap().slot).collect();
        assert_eq!(got, vec![5, 10, 15]);
        // The same three through `send_at` for the slot after the lead: relaxed mode moves two.
        let mut old = scheduler();
        for i in 0..3u8 {
            let t = old.slot_time(old.next_owned(0, old.current_slot(2_500) + 2).unwrap());
            old.send_at(2_500, t, 0, &[i; 8], peer()).unwrap();
        }
        assert_eq!(old.counters(0).unwrap().moved, 2, "what the counters said before");
        let clock = Cell::new(20_000u64);
        let mut order = Vec::new();
        s.poll(20_000, || clock.get(), |r| {
            order.push((r.slot, r.payload[0], r.dscp));
            true
        });
        assert_eq!(order, vec![(5, 0, 46), (10, 1, 46), (15, 2, 46)]);
        let k = s.counters(0).unwrap();
        assert_eq!((k.accepted, k.sent, k.moved, k.late), (3, 3, 0, 0));
    }

    #[test]
    fn packets_past_the_ring_wait_in_slots_of_their_own_and_keep_their_order() {
        let mut s = scheduler();
        // The ring (20 slots from 0) has ctl slots 5, 10, 15; six packets at once.
        let got: Vec<Slot> = (0..6u8).map(|i| s.send_asap_marked(2_500, 0, &[i; 8], peer(), 0).unwrap().slot).collect();
        assert_eq!(got, vec![5, 10, 15, 25, 30, 35]);
        let clock = Cell::new(0u64);
        let mut order = Vec::new();
        for now in (0..40_000).step_by(1_000) {
            clock.set(now);
            s.poll(now, || clock.get(), |r| {
                if r.class == 0 {
                    order.push((r.slot, r.payload[0]));
                }
                true
            });
        }
        assert_eq!(order, vec![(5, 0), (10, 1), (15, 2), (25, 3), (30, 4), (35, 5)]);
        let k = s.counters(0).unwrap();
        assert_eq!((k.sent, k.moved, k.conflicts), (6, 0, 0));
    }

    #[test]
    fn after_a_slot_released_ahead_a_packet_goes_after_it_and_is_not_late() {
        let mut s = scheduler();
        s.send_be(1, b"bulk", peer()).unwrap();
        // poll_spin at 0.5 µs releases the next busy slot (1) on time, spinning for it.
        let clock = Cell::new(500u64);
        s.poll_spin(500, 5_000, || {
            clock.set(clock.get() + 100);
            clock.get()
        }, |_| true);
        assert_eq!(s.next_release(), 2);
        let got = s.send_asap_marked(clock.get(), 0, b"ctl", peer(), 0).unwrap();
        assert!(got.slot >= s.next_release(), "{got:?}");
        let k = s.counters(0).unwrap();
        assert_eq!((k.moved, k.late), (0, 0));
        assert!(s.send_asap_marked(clock.get(), 7, b"x", peer(), 0).is_err(), "an unknown class is refused");
    }
}

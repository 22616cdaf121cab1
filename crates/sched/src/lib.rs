//! detpath-sched: time-slotted transmission on any detpath datapath, after
//! KeepON (paper 003, "Supporting Deterministic Traffic on Standard NICs").
//!
//! KeepON keeps a standard NIC's TX ring busy with fixed-size slots, derives a
//! clock from the slot counter (the EPHC), inserts each real-time packet at the
//! slot of its transmission time, gives traffic classes their own slots,
//! orders real-time packets in an EDF pre-buffer and best effort in a FIFO,
//! and in strict mode drops a packet that missed its slot (relaxed: moves it
//! to the class's next slot). This crate offers that on every detpath
//! datapath:
//!
//! - [`slot`], [`mask`]: slot arithmetic, the insertion window, slot ownership.
//! - [`clock`]: tick sources (CLOCK_MONOTONIC pacing, TX completions, a
//!   drifting overlay) and the adjustable slot clock whose count never changes.
//! - [`prebuffer`]: fixed-capacity payload pool, EDF heap, FIFO.
//! - [`config`], [`sched`]: classes, modes, and the [`Scheduler`] itself
//!   (allocation-free `send_at` / `send_be` / `poll`).
//! - [`servo`], [`sync`]: a linuxptp-style PI servo and a four-timestamp
//!   exchange that synchronises two slot clocks over detpath datagrams.
//! - [`ringmodel`]: a model of a NIC TX ring (line rate, batch, poll jitter)
//!   that drives the completion-counted clock, reproducing the paper's
//!   clock-error behaviour where no line-rate NIC is present.
//! - [`dualclock`]: KeepON's dual clock (§5.2: a Tx and an Rx clock,
//!   merged), modelled over the same simulated line-rate rings.
//! - [`probe`]: what this host offers (line rate, PTP clock, launch time).
//! - [`ptp`]: IEEE 1588 (PTPv2 over UDP/IPv4, E2E, two-step) for the slot
//!   clock, interoperating with linuxptp's ptp4l in both roles.
//! - [`endpoint`]: [`SchedEndpoint`], the scheduler wrapped around any
//!   `detpath::Endpoint`.
//! - [`spec`]: the scheduler as a layer of detpath's open pipeline
//!   ([`LAYER`]: `...&sched=slots&slot_ns=10000&classes=...`), giving a
//!   [`SlotsEndpoint`]; the `detpath-open` facade lists it with detpath's layers.
//!
//! `detpath sched bench` (slots versus clock_nanosleep) is
//! `detpath_sched_bench`: this crate depends on detpath only, so every
//! layer that opens a user's spec (bench, pubsub, the bindings, the CLI)
//! opens it with `detpath_open::open`, whose registry has [`LAYER`].
//!
//! ```
//! use detpath_sched::{ClassConfig, Mode, SchedConfig, Scheduler, clock::MonotonicSource};
//! let mut cfg = SchedConfig::new(10_000, 100, 2); // 10 µs slots, 1 ms ring, 20 µs lead
//! cfg.classes.push(ClassConfig::parse("ctl:rt:strict:0/10", 100, Mode::Strict).unwrap());
//! cfg.classes.push(ClassConfig::parse("bulk:be:5/4", 100, Mode::Strict).unwrap());
//! let now = 1_000_000_000;
//! let mut s = Scheduler::new(&cfg, MonotonicSource { epoch_mono: 0 }, 0, now).unwrap();
//! let peer = "10.77.0.2:7000".parse().unwrap();
//! // Slot 100_030 starts at 1.0003 s and is owned by `ctl` (position 30).
//! let got = s.send_at(now, 1_000_300_000, 0, b"hello", peer).unwrap();
//! assert_eq!(got.slot, 100_030);
//! let mut sent = Vec::new();
//! s.poll(1_000_300_050, || 1_000_300_060, |r| { sent.push((r.slot, r.release_ns - r.scheduled_ns)); true });
//! assert_eq!(sent, vec![(100_030, 60)]);
//! ```

#![warn(missing_docs)]

pub mod clock;
pub mod config;
pub mod dualclock;
pub mod endpoint;
pub mod mask;
pub mod prebuffer;
pub mod probe;
pub mod ptp;
pub mod ringmodel;
pub mod sched;
pub mod servo;
pub mod slot;
pub mod spec;
pub mod sync;
pub mod sync_wire;

pub use clock::{CompletionSource, MonotonicSource, OverlaySource, SlotClock, TickSource};
pub use config::{ClassConfig, ClassKind, ConfigError, Mode, SchedConfig};
pub use endpoint::SchedEndpoint;
pub use mask::SlotMask;
pub use sched::{ClassCounters, ErrorSummary, PollSummary, Refusal, Release, Scheduled, Scheduler};
pub use servo::{PiServo, ServoConfig, ServoOutput, ServoState, SpikeFilter};
pub use slot::{Ring, Slot};
pub use spec::{open_slots, ReleaseObserver, SlotsEndpoint, LAYER};

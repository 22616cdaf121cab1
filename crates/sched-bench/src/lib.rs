//! `detpath sched bench`: periodic real-time flows in several classes plus a
//! best-effort flood, sent once through the slot scheduler (method `slots`)
//! and once the way applications do it today, `clock_nanosleep(TIMER_ABSTIME)`
//! then send (method `sleep`), on each datapath, in the two-namespace testbed.
//! `slots-idle` is `slots` without the flood (does the flood move the
//! real-time figures?).
//!
//! The receiver time-stamps each frame as it takes it off its ring or socket
//! (`rx_ns`) and computes, per flow, the inter-arrival error
//! `|a_i − a_{i−1} − period|` and the packet delay variation (RFC 5481:
//! `d_i − min d`, with `d_i` = arrival − scheduled instant; one host, one
//! CLOCK_MONOTONIC). The sender records the release error (hand-off to the
//! datapath − scheduled instant) and counts violations: real-time packets
//! let out later than the late tolerance.

//!
//! The results go in a result directory with the instrument's environment
//! record (`detpath-instrument`); [`page`] is its `detpath report --html`
//! page.

#![warn(missing_docs)]

mod output;
pub mod page;
pub mod plan;
pub mod probe_payload;
mod recv;
mod send;
pub mod sweep;
pub mod sync_run;
pub mod timeline;

use timeline::Timeline;

pub use output::{cpu_line, plot_iat_cdf, table, thread_share, write_results};

use detpath_sched::config::{ClassConfig, ClassKind, Mode, SchedConfig};
use detpath_sched::probe::Probe;
// The reports carry the scheduler's counters and error summaries; re-exported
// so a user of the reports (and this module's files) names them here.
use detpath::testbed::{Testbed, TestbedConfig};
pub use detpath_sched::sched::{ClassCounters, ErrorSummary};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// How the sender paces the real-time flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Through the slot scheduler, with the best-effort flood in its class.
    Slots,
    /// Through the slot scheduler, no flood.
    SlotsIdle,
    /// `clock_nanosleep(TIMER_ABSTIME)` to each deadline, then send; the flood
    /// comes from a second thread sharing the endpoint.
    Sleep,
}

impl Method {
    /// The method's name in tables and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Slots => "slots",
            Method::SlotsIdle => "slots-idle",
            Method::Sleep => "sleep",
        }
    }
    /// Whether the best-effort flood runs.
    pub fn flood(self) -> bool {
        !matches!(self, Method::SlotsIdle)
    }
}

impl std::str::FromStr for Method {
    type Err = BenchError;
    fn from_str(s: &str) -> Result<Method, BenchError> {
        match s {
            "slots" => Ok(Method::Slots),
            "slots-idle" => Ok(Method::SlotsIdle),
            "sleep" => Ok(Method::Sleep),
            _ => Err(BenchError::Method { text: s.to_string() }),
        }
    }
}

/// One periodic real-time flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowSpec {
    /// Flow name (tables, JSON).
    pub name: String,
    /// The real-time class it is sent in.
    pub class: String,
    /// Period between instances, ns (a multiple of the slot).
    pub period_ns: u64,
    /// Payload bytes (at least the 24-byte header).
    pub size: usize,
    /// Ring position of its first instance (its phase within the ring cycle).
    pub phase_slot: u32,
    /// Planned deviations (from `detpath sched plan`): instance `k` goes out at
    /// `k * period_ns + offsets_ns[k % len]` after the run's start instead of
    /// `phase_slot` slots plus `k * period_ns`. Empty: strictly periodic.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub offsets_ns: Vec<i64>,
}

impl FlowSpec {
    /// Parses `NAME:CLASS:PERIOD:SIZE:PHASE_SLOT`, e.g. `f1:ctl:100us:64:0`.
    /// PERIOD is a duration through the workspace's one parser
    /// ([`detpath::sys::units`]: `100us`, `1ms`, `0.25ms`); a bare number
    /// is µs, as it always was (`f1:ctl:100:64:0`). SIZE is payload bytes,
    /// PHASE_SLOT the ring position of the first instance.
    pub fn parse(text: &str) -> Result<FlowSpec, BenchError> {
        use detpath::sys::units::{parse_duration_ns, Unit};
        let p: Vec<&str> = text.split(':').map(str::trim).collect();
        let [name, class, period, size, phase] = p.as_slice() else {
            return Err(BenchError::FlowSyntax { text: text.to_string() });
        };
        let field = |field: &'static str, why: String| BenchError::FlowField { text: text.to_string(), field, why };
        if name.is_empty() {
            return Err(field("NAME", "is empty".into()));
        }
        let period_ns = match parse_duration_ns(period, Unit::Micros) {
            Ok(0) => return Err(field("PERIOD", format!("`{period}` is zero"))),
            Ok(ns) => ns,
            Err(e) => return Err(field("PERIOD", e.to_string())),
        };
        Ok(FlowSpec {
            name: name.to_string(),
            class: class.to_string(),
            period_ns,
            size: size.parse().map_err(|_| field("SIZE", format!("`{size}` is not a whole number of bytes")))?,
            phase_slot: phase.parse().map_err(|_| field("PHASE_SLOT", format!("`{phase}` is not a ring position (a whole number)")))?,
            offsets_ns: Vec::new(),
        })
    }

    /// Offset of instance `seq` from the run's start (a ring-cycle boundary), ns.
    pub(crate) fn instance_offset_ns(&self, slot_ns: u64, seq: u64) -> u64 {
        let periodic = seq * self.period_ns;
        if self.offsets_ns.is_empty() {
            return self.phase_slot as u64 * slot_ns + periodic;
        }
        // A validated plan keeps every instance at or after 0 (tx_k in [0, H)).
        periodic.saturating_add_signed(self.offsets_ns[(seq % self.offsets_ns.len() as u64) as usize])
    }

    /// The schedule repeats after this many instances (1: every instance is alike).
    pub fn instances_per_repeat(&self) -> u64 {
        self.offsets_ns.len().max(1) as u64
    }
}

/// A benchmark that cannot run as configured.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BenchError {
    #[error("flow `{text}` is not NAME:CLASS:PERIOD:SIZE:PHASE_SLOT (e.g. f1:ctl:100us:64:0; a bare PERIOD is µs)")]
    /// A `--flow` that is not five fields separated by colons.
    FlowSyntax {
        /// The text as given.
        text: String,
    },
    #[error("flow `{text}` (NAME:CLASS:PERIOD:SIZE:PHASE_SLOT): {field} {why}")]
    /// A `--flow` with one field that does not parse; `field` is its
    /// placeholder (`PERIOD`, `SIZE`, ...), `why` what is wrong with it.
    FlowField {
        /// The text as given.
        text: String,
        /// The placeholder of the field that does not parse (`PERIOD`, `SIZE`, ...).
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    #[error("method `{text}` is not slots, slots-idle or sleep")]
    /// A `--method` that is not known.
    Method {
        /// The text as given.
        text: String,
    },
    #[error("flow `{flow}`: no real-time class `{class}`")]
    /// A flow in a class that does not exist or is not real-time.
    FlowClass {
        /// The flow name.
        flow: String,
        /// The class name.
        class: String,
    },
    #[error("flow `{flow}`: period {period_ns} ns is not a multiple of the {slot_ns} ns slot")]
    /// A flow period that is not a whole number of slots.
    FlowPeriod {
        /// The flow name.
        flow: String,
        /// The flow period, ns.
        period_ns: u64,
        /// The slot length, ns.
        slot_ns: u64,
    },
    #[error("flow `{flow}`: size {size} is outside {min}..={max} bytes")]
    /// A payload size outside what a frame carries.
    FlowSize {
        /// The flow name.
        flow: String,
        /// The payload size given, bytes.
        size: usize,
        /// The smallest payload allowed, bytes.
        min: usize,
        /// The largest payload allowed, bytes.
        max: usize,
    },
    #[error("flow `{flow}`: its instance at ring position {position} falls in a slot class `{class}` does not own; fix the phase or the mask")]
    /// A flow instance that falls in a slot its class does not own.
    FlowSlots {
        /// The flow name.
        flow: String,
        /// The class name.
        class: String,
        /// The ring position.
        position: u32,
    },
    #[error("flows `{a}` and `{b}` both use ring position {position}")]
    /// Two flows on one ring position.
    FlowClash {
        /// One flow.
        a: String,
        /// The other flow.
        b: String,
        /// The ring position.
        position: u32,
    },
    #[error("best-effort class `{class}` does not exist or is not best effort")]
    /// The flood's class is missing or not best effort.
    BeClass {
        /// The class name.
        class: String,
    },
    #[error("flow `{flow}`: planned instance {instance} is not at a slot start")]
    /// A planned instance between slot starts.
    FlowTime {
        /// The flow name.
        flow: String,
        /// The instance index within the plan (0-based).
        instance: u64,
    },
    #[error("flow `{flow}`: planned instance {instance} is not after the one before it (jitter bound of a period or more); the run sends instances in order")]
    /// Planned instances out of order.
    FlowOrder {
        /// The flow name.
        flow: String,
        /// The instance index within the plan (0-based).
        instance: u64,
    },
    #[error("flows `{a}` and `{b}` both send at {at_ns} ns of the plan's hyperperiod")]
    /// Two planned instances at one instant.
    FlowCollision {
        /// One flow.
        a: String,
        /// The other flow.
        b: String,
        /// The instant within the hyperperiod, ns.
        at_ns: u64,
    },
    #[error(
        "the plan's hyperperiod ({hyperperiod_ns} ns) is not a multiple of the ring cycle ({cycle_ns} ns = ring_slots x slot_ns): \
         repeated every hyperperiod, its instances would land in other ring positions than planned; \
         choose ring_slots so that ring_slots x slot_ns divides the hyperperiod"
    )]
    /// A plan whose repetition does not keep its ring positions.
    PlanRepeat {
        /// The plan's hyperperiod, ns.
        hyperperiod_ns: u64,
        /// The ring cycle (ring_slots x slot_ns), ns.
        cycle_ns: u64,
    },
    #[error("offered load {load} is not a share of the slot rate (0 or more)")]
    /// An offered load that is negative or not a number.
    BeLoad {
        /// The load as given.
        load: String,
    },
    #[error("no flows: give at least one --flow")]
    /// No flow configured.
    NoFlows,
    #[error(transparent)]
    /// The scheduler configuration is invalid.
    Config(#[from] detpath_sched::config::ConfigError),
}

/// Everything a benchmark run needs.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Datapaths to measure, in order.
    pub datapaths: Vec<String>,
    /// Methods to run on each datapath.
    pub methods: Vec<Method>,
    /// The scheduler (slots, ring, lead, classes, tolerance).
    pub sched: SchedConfig,
    /// The periodic real-time flows.
    pub flows: Vec<FlowSpec>,
    /// The class the flood goes in.
    pub be_class: Option<String>,
    /// Flood payload bytes.
    pub be_size: usize,
    /// Measured time per run (after the warm-up), ns.
    pub duration_ns: u64,
    /// Unmeasured time at the start of a run, ns.
    pub warmup_ns: u64,
    /// How far ahead of its time the slots sender submits a packet (≥ the insertion lead).
    pub lookahead_ns: u64,
    /// Cores of the sender and the receiver threads.
    pub cpus: (u32, u32),
    /// SCHED_FIFO priority for both threads (tuned runs); `None`: SCHED_OTHER.
    /// (A busy-polling SCHED_FIFO thread is throttled for 50 ms every second
    /// unless `kernel.sched_rt_runtime_us` allows more; that shows in the figures.)
    pub rt_priority: Option<u8>,
    /// Nice value of both threads when they run SCHED_OTHER; `None`: unchanged.
    /// (With autogroups, nice only orders threads within this process's session.)
    pub nice: Option<i32>,
    /// The run is cut into segments: sending for `segment_on_ns`, all threads
    /// asleep for `segment_off_ns` (keeps SCHED_FIFO pollers under the RT throttle).
    pub segment_on_ns: u64,
    /// Pause of each segment, ns (0: none).
    pub segment_off_ns: u64,
    /// Testbed namespaces are `<prefix>-a` and `<prefix>-b`.
    pub testbed_prefix: String,
    /// First UDP port; each run takes the next two.
    pub port_base: u16,
    /// Time-stamp arrivals where the frame arrives (`rx_stamp=xdp` on afxdp,
    /// xdppoll and dpdk's net_af_xdp, `rx_stamp=kernel` on udp), not
    /// when the receiving thread polls it: the IAT then measures the
    /// transmission, not the receiver's polling.
    pub arrival_stamps: bool,
    /// Offered load of the flood, as a share of the slot rate (1.0: one
    /// packet per slot of the whole ring); `None`: the flood keeps the
    /// class's pre-buffer full (saturating).
    pub be_load: Option<f64>,
    /// 0: the slots sender busy-polls the scheduler; `B` > 0: it polls once
    /// per `B` slots and sleeps (clock_nanosleep) to the next boundary in
    /// between (paper 003's batch: fewer wake-ups, later releases).
    pub poll_batch: u32,
}

impl BenchConfig {
    /// The default experiment: 10 µs slots (a 1250-byte slot at 1 Gb/s, as
    /// in KeepON's case study), a 100-slot (1 ms) ring, a 2-slot lead; classes
    /// `ctl` (strict; 100 µs and 250 µs flows), `io` (strict; 500 µs and 1 ms
    /// flows) and `bulk` (best effort, 25 of 100 slots); payloads 64..1024 B.
    ///
    /// A software send takes about half a slot here (5 µs on udp over veth,
    /// with a tail beyond two slots), so no real-time slot follows another
    /// real-time slot directly, and a best-effort slot is at least three slots
    /// before the next real-time one. The first 30 µs of
    /// the ring (after the millisecond boundary of CLOCK_MONOTONIC, where this
    /// kernel's 250 Hz tick fires every fourth cycle and takes 10-15 µs on
    /// this VM) carry no real-time slot.
    pub fn paper() -> BenchConfig {
        let n = 100;
        let mut sched = SchedConfig::new(10_000, n, 2);
        sched.late_tolerance_ns = 5_000;
        let class = |t: &str| ClassConfig::parse(t, n, Mode::Strict).expect("built-in class");
        sched.classes = vec![
            class("ctl:rt:strict:5/10,7/25@256"),
            class("io:rt:strict:9/50,3@256"),
            class("bulk:be:10-11,16,18,20-21,26,28,36,38,40,46,48,50,60,66,68,70,76,78,86,88,90,96,98@256"),
        ];
        let flow = |t: &str| FlowSpec::parse(t).expect("built-in flow");
        BenchConfig {
            datapaths: vec!["afxdp".into(), "dpdk".into(), "udp".into()],
            methods: vec![Method::Slots, Method::Sleep, Method::SlotsIdle],
            sched,
            flows: vec![flow("f100us:ctl:100us:64:5"), flow("f250us:ctl:250us:256:7"), flow("f500us:io:500us:512:9"), flow("f1ms:io:1ms:1024:3")],
            be_class: Some("bulk".into()),
            be_size: 1024,
            duration_ns: 5_000_000_000,
            warmup_ns: 300_000_000,
            lookahead_ns: 2_000_000,
            cpus: (0, 1),
            rt_priority: Some(50),
            nice: None,
            segment_on_ns: 800_000_000,
            segment_off_ns: 200_000_000,
            testbed_prefix: detpath::testbed::process_prefix("sch"),
            port_base: 7400,
            arrival_stamps: true,
            be_load: None,
            poll_batch: 0,
        }
    }

    /// Checks the flows against the classes (ownership of every instance's slot, sizes, periods).
    pub fn validate(&self) -> Result<(), BenchError> {
        self.sched.validate()?;
        if self.flows.is_empty() {
            return Err(BenchError::NoFlows);
        }
        let n = self.sched.ring_slots as u64;
        let min = probe_payload::HEADER_LEN;
        let mut used: Vec<Option<&str>> = vec![None; n as usize];
        let mut planned_at: std::collections::HashMap<u64, &str> = std::collections::HashMap::new();
        for f in &self.flows {
            let class = self
                .sched
                .classes
                .iter()
                .find(|c| c.name == f.class && c.kind == ClassKind::RealTime)
                .ok_or_else(|| BenchError::FlowClass { flow: f.name.clone(), class: f.class.clone() })?;
            if f.period_ns == 0 || f.period_ns % self.sched.slot_ns != 0 {
                return Err(BenchError::FlowPeriod { flow: f.name.clone(), period_ns: f.period_ns, slot_ns: self.sched.slot_ns });
            }
            if f.size < min || f.size > self.sched.max_payload {
                return Err(BenchError::FlowSize { flow: f.name.clone(), size: f.size, min, max: self.sched.max_payload });
            }
            if !f.offsets_ns.is_empty() {
                self.validate_planned(f, &class.mask, &mut planned_at)?;
                continue;
            }
            let step = f.period_ns / self.sched.slot_ns;
            // Positions repeat after lcm(step, n) / step instances.
            let instances = lcm(step, n) / step;
            for i in 0..instances {
                let pos = ((f.phase_slot as u64 + i * step) % n) as u32;
                if !class.mask.contains(pos) {
                    return Err(BenchError::FlowSlots { flow: f.name.clone(), class: f.class.clone(), position: pos });
                }
                if let Some(other) = used[pos as usize] {
                    if other != f.name {
                        return Err(BenchError::FlowClash { a: other.to_string(), b: f.name.clone(), position: pos });
                    }
                }
                used[pos as usize] = Some(&f.name);
            }
        }
        if let Some(l) = self.be_load {
            if !(l.is_finite() && l >= 0.0) {
                return Err(BenchError::BeLoad { load: l.to_string() });
            }
        }
        if let Some(be) = &self.be_class {
            if !self.sched.classes.iter().any(|c| &c.name == be && c.kind == ClassKind::BestEffort) {
                return Err(BenchError::BeClass { class: be.clone() });
            }
            if self.be_size < min || self.be_size > self.sched.max_payload {
                return Err(BenchError::FlowSize { flow: "flood".into(), size: self.be_size, min, max: self.sched.max_payload });
            }
        }
        Ok(())
    }

    /// A planned flow: every instance of its hyperperiod at a slot start its
    /// class owns, in order, at an instant no other planned instance has, and
    /// the hyperperiod a whole number of ring cycles (so repeating it keeps
    /// the ring positions).
    fn validate_planned<'a>(
        &self,
        f: &'a FlowSpec,
        mask: &detpath_sched::SlotMask,
        at: &mut std::collections::HashMap<u64, &'a str>,
    ) -> Result<(), BenchError> {
        let slot = self.sched.slot_ns;
        let cycle = slot * self.sched.ring_slots as u64;
        let hyper = f.period_ns * f.offsets_ns.len() as u64;
        if !hyper.is_multiple_of(cycle) {
            return Err(BenchError::PlanRepeat { hyperperiod_ns: hyper, cycle_ns: cycle });
        }
        let mut last = None;
        for k in 0..f.offsets_ns.len() as u64 {
            let t = f.instance_offset_ns(slot, k);
            if !t.is_multiple_of(slot) {
                return Err(BenchError::FlowTime { flow: f.name.clone(), instance: k });
            }
            // In order, and within one hyperperiod of the first (the next repetition's first comes after).
            let first = f.instance_offset_ns(slot, 0);
            if last.is_some_and(|l| t <= l) || t >= first + hyper {
                return Err(BenchError::FlowOrder { flow: f.name.clone(), instance: k });
            }
            last = Some(t);
            let pos = ((t / slot) % self.sched.ring_slots as u64) as u32;
            if !mask.contains(pos) {
                return Err(BenchError::FlowSlots { flow: f.name.clone(), class: f.class.clone(), position: pos });
            }
            if let Some(other) = at.insert(t % hyper, &f.name) {
                return Err(BenchError::FlowCollision { a: other.to_string(), b: f.name.clone(), at_ns: t });
            }
        }
        Ok(())
    }

    /// Fraction of slot capacity the best-effort class owns (k/N).
    pub(crate) fn be_fraction(&self) -> f64 {
        self.be_class
            .as_ref()
            .and_then(|b| self.sched.classes.iter().find(|c| &c.name == b))
            .map(|c| c.mask.count() as f64 / self.sched.ring_slots as f64)
            .unwrap_or(0.0)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

/// One class's figures in one run.
#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    /// Class name.
    pub name: String,
    /// Real-time or best effort.
    pub kind: ClassKind,
    /// Strict or relaxed.
    pub mode: Mode,
    /// The scheduler's counters (whole run).
    pub counters: ClassCounters,
    /// Release error (hand-off − scheduled) in the measured window.
    pub release_error_ns: ErrorSummary,
}

/// One flow's figures at the receiver.
#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// Flow name.
    pub name: String,
    /// Its class.
    pub class: String,
    /// Its period, ns.
    pub period_ns: u64,
    /// Its payload bytes.
    pub size: usize,
    /// Instances due in the run (submitted to the scheduler, or due to the sleeping sender).
    pub planned: u64,
    /// Instances the sender handed to the datapath (the rest of `planned` was refused, or dropped late by a strict class).
    pub sent: u64,
    /// Instances the scheduler refused at submission (late, pre-buffer full, slot taken).
    pub refused: u64,
    /// Instances handed off in a ring slot the flow's class does not own
    /// (the slot of the hand-off instant: what left outside its partition).
    pub outside_partition: u64,
    /// Hand-off minus planned instant, measured window, ns.
    pub release_error_ns: ErrorSummary,
    /// Spread of the planned deviations from the release times (0: strictly periodic), ns.
    pub planned_deviation_ns: u64,
    /// Instances the receiver got (distinct sequence numbers).
    pub received: u64,
    /// |a_i - a_(i-1) - period| over consecutive instances, ns.
    pub iat_error_ns: ErrorSummary,
    /// Packet delay variation (RFC 5481: delay minus the smallest delay), ns.
    pub pdv_ns: ErrorSummary,
}

/// Best effort's share of the slots under the flood.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BeShare {
    /// Flood packets offered in the measured window over its slots (with an offered load; else `None`: saturating).
    pub offered_fraction: Option<f64>,
    /// Offered packets the scheduler refused (pre-buffer full), over the same slots.
    pub refused_fraction: Option<f64>,
    /// k/N: the slots the class owns over the ring length.
    pub expected_fraction: f64,
    /// Best-effort packets released in the measured window over all slots of the window.
    pub measured_fraction: f64,
    /// Best-effort packets released in those slots.
    pub sent_in_window: u64,
    /// Slots of the measured window in which the flood ran.
    pub slots_in_window: u64,
    /// Owned slots of the measured window that passed unused because the poll came too late.
    pub missed_slots: u64,
    /// Flood packets the receiver got (whole run).
    pub received: u64,
}

/// One datapath × method.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Datapath name.
    pub datapath: String,
    /// How the flows were paced.
    pub method: Method,
    /// Endpoint modes obtained (sender / receiver).
    pub endpoints: String,
    /// All real-time flows together.
    pub iat_error_ns: ErrorSummary,
    /// Hand-off minus scheduled instant, real-time packets, ns.
    pub release_error_ns: ErrorSummary,
    /// Duration of the datapath's send call (hand-off to return), real-time packets.
    pub send_cost_ns: ErrorSummary,
    /// Packet delay variation of all flows, ns.
    pub pdv_ns: ErrorSummary,
    /// Real-time packets a strict class let out later than the tolerance
    /// (for `sleep`: packets sent later than the tolerance).
    pub violations: u64,
    /// The late tolerance the scheduler used, ns.
    pub late_tolerance_ns: u64,
    /// Real-time instances due in the run.
    pub rt_planned: u64,
    /// Real-time packets handed to the datapath.
    pub rt_sent: u64,
    /// Real-time packets the receiver got.
    pub rt_received: u64,
    /// Real-time delivery rate: received over due (strict classes drop what
    /// would leave late, relaxed ones move it to a later slot of the class).
    pub rt_delivery: f64,
    /// Frames the receiver got that were not the benchmark's.
    pub rx_foreign: u64,
    /// Benchmark frames left out because their delay could not be real
    /// (more than 1 s early or 10 s late: forged, or another run's).
    pub rx_implausible: u64,
    /// Per-class figures.
    pub classes: Vec<ClassReport>,
    /// Per-flow figures.
    pub flows: Vec<FlowReport>,
    /// Best effort's share (slots method with the flood).
    pub be: Option<BeShare>,
    /// CPU cost: each thread's user and system time (sender, its flood
    /// thread for `sleep`, receiver), the sender's and receiver's cores'
    /// utilisation over the run, and packets sent per CPU-second.
    pub cpu: Option<detpath::sys::cputime::CpuReport>,
    /// Wall-clock seconds of the run, from handing the threads their
    /// timeline to their end (the lead-in, warm-up, measured window, pauses
    /// and the last frames' drain): a thread's CPU seconds over this is its
    /// share of a core.
    pub wall_s: f64,
    /// Raw inter-arrival errors of all flows, sorted (for plots; not in JSON).
    #[serde(skip)]
    pub iat_samples: Vec<u64>,
}

/// The whole benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The host the figures came from.
    pub environment: detpath_instrument::Environment,
    /// What the sender's interface offers (line rate, PHC, launch time).
    pub probe: Probe,
    /// Slot length, ns.
    pub slot_ns: u64,
    /// Slots per ring cycle.
    pub ring_slots: u32,
    /// Insertion lead, slots.
    pub lead_slots: u32,
    /// The classes in their text form.
    pub classes: Vec<String>,
    /// The flows.
    pub flows: Vec<FlowSpec>,
    /// Flood payload bytes.
    pub be_size: usize,
    /// Measured seconds per run.
    pub duration_s: f64,
    /// Tuning state and the threads' scheduling (policy, nice).
    pub tuning: String,
    /// One entry per datapath x method.
    pub runs: Vec<RunReport>,
    /// Runs that failed, with why.
    pub errors: Vec<String>,
}

/// Runs every datapath × method in a fresh testbed. `log` gets progress
/// lines; `interrupted` is polled between runs and inside them.
pub fn run(cfg: &BenchConfig, tuning: &str, log: &dyn Fn(&str), interrupted: &(dyn Fn() -> bool + Sync)) -> anyhow::Result<Report> {
    cfg.validate()?;
    let tb = Testbed::up(TestbedConfig::with_prefix(&cfg.testbed_prefix))?;
    let iface = tb.a().iface.clone();
    let probe = tb.a().run(move || detpath_sched::probe::probe(&iface))?;
    for l in probe.lines() {
        log(&format!("probe {}: {l}", probe.iface));
    }
    let mut runs = Vec::new();
    let mut errors = Vec::new();
    let mut port = cfg.port_base;
    for dp in &cfg.datapaths {
        for &method in &cfg.methods {
            if interrupted() {
                errors.push("interrupted".into());
                break;
            }
            port += 2;
            match run_logged(&tb, cfg, dp, method, port, log, interrupted) {
                Ok(r) => runs.push(r),
                Err(e) => errors.push(e),
            }
        }
    }
    drop(tb);
    Ok(Report {
        environment: detpath_instrument::Environment::capture(),
        probe,
        slot_ns: cfg.sched.slot_ns,
        ring_slots: cfg.sched.ring_slots,
        lead_slots: cfg.sched.lead_slots,
        classes: cfg.sched.classes.iter().map(ClassConfig::to_text).collect(),
        flows: cfg.flows.clone(),
        be_size: cfg.be_size,
        duration_s: cfg.duration_ns as f64 / 1e9,
        tuning: tuning.to_string(),
        runs,
        errors,
    })
}

/// One run with its progress lines; the error as the report lists it.
fn run_logged(
    tb: &Testbed,
    cfg: &BenchConfig,
    dp: &str,
    method: Method,
    port: u16,
    log: &dyn Fn(&str),
    interrupted: &(dyn Fn() -> bool + Sync),
) -> Result<RunReport, String> {
    log(&format!("{dp} {}: {:.1} s + {:.1} s warm-up", method.as_str(), cfg.duration_ns as f64 / 1e9, cfg.warmup_ns as f64 / 1e9));
    run_one(tb, cfg, dp, method, port, interrupted).map_err(|e| {
        log(&format!("{dp} {}: failed: {e:#}", method.as_str()));
        format!("{dp} {}: {e:#}", method.as_str())
    })
}

/// Sets the calling thread's nice value (threads have their own on Linux).
fn set_nice(nice: Option<i32>) {
    if let Some(n) = nice {
        // SAFETY: gettid and setpriority have no memory preconditions; who = this thread's id.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, n);
        }
    }
}

/// The spec key that time-stamps a datapath's datagrams on arrival (the
/// XDP program, or the kernel for udp), as `&key=value` to append to a
/// spec, or "" when its registry entry names none (or it is no datapath).
pub(crate) fn arrival_stamp_key(datapath: &str) -> String {
    detpath::datapath::find(datapath).and_then(|d| d.arrival_stamp).map(|kv| format!("&{kv}")).unwrap_or_default()
}

/// Whether the datapath's endpoints take a socket buffer size (`rcvbuf`).
fn takes_rcvbuf(datapath: &str) -> bool {
    detpath::datapath::find(datapath).is_some_and(|d| d.keys.contains(&"rcvbuf"))
}

fn endpoint_uri(base: &str, datapath: &str, core: u32, rt: Option<u8>, receiver: bool, arrival_stamps: bool) -> String {
    let mut uri = format!("{base}&rt_core={core}");
    if receiver && arrival_stamps {
        uri += &arrival_stamp_key(datapath);
    }
    match rt {
        Some(p) => uri += &format!("&rt_priority={p}"),
        None => uri += "&rt_mlock=false",
    }
    if receiver && takes_rcvbuf(datapath) {
        // A stall of this VM must not overflow the socket buffer (udp's).
        uri += "&rcvbuf=8388608";
    }
    uri
}

/// One datapath × method: receiver in namespace b, sender in namespace a.
/// Both open their endpoints first; then the run's timeline starts 20 ms
/// later on a ring-cycle boundary (opening a DPDK port takes a while).
fn run_one(tb: &Testbed, cfg: &BenchConfig, dp: &str, method: Method, port: u16, interrupted: &(dyn Fn() -> bool + Sync)) -> anyhow::Result<RunReport> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (rx_tl_tx, rx_tl_rx) = std::sync::mpsc::channel::<Timeline>();
    let rx_uri = endpoint_uri(&tb.b().uri(dp, port), dp, cfg.cpus.1, cfg.rt_priority, true, cfg.arrival_stamps);
    let expected = send::expected_packets(cfg);
    let stop_r = stop.clone();
    let nice = cfg.nice.filter(|_| cfg.rt_priority.is_none());
    let receiver = tb.b().spawn(move || -> anyhow::Result<recv::Received> {
        set_nice(nice);
        let mut ep = match detpath_open::open(&rx_uri) {
            Ok(ep) => ep,
            Err(e) => {
                let _ = ready_tx.send(Err(format!("{rx_uri}: {e}")));
                anyhow::bail!("receiver: {e}");
            }
        };
        let _ = ready_tx.send(Ok((ep.local_addr(), ep.capabilities().summary())));
        let Ok(tl) = rx_tl_rx.recv() else { anyhow::bail!("no timeline: the sender failed") };
        recv::receive(ep.as_mut(), expected, &tl, &stop_r)
    });
    let ((peer, rx_mode), receiver) = detpath_instrument::ready::wait_ready("receiver", &ready_rx, receiver)?;
    let tx_uri = endpoint_uri(&tb.a().uri(dp, port + 1), dp, cfg.cpus.0, cfg.rt_priority, false, false);
    let cfg2 = cfg.clone();
    let abort = Arc::new(AtomicBool::new(false));
    let abort_s = abort.clone();
    let (tx_ready_tx, tx_ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let (tx_tl_tx, tx_tl_rx) = std::sync::mpsc::channel::<Timeline>();
    let sender = tb.a().spawn(move || -> anyhow::Result<send::Sent> {
        set_nice(nice);
        let ep = match detpath_open::open(&tx_uri) {
            Ok(ep) => ep,
            Err(e) => {
                let _ = tx_ready_tx.send(Err(format!("{tx_uri}: {e}")));
                anyhow::bail!("sender: {e}");
            }
        };
        let _ = tx_ready_tx.send(Ok(()));
        let Ok(tl) = tx_tl_rx.recv() else { anyhow::bail!("no timeline") };
        match method {
            Method::Slots | Method::SlotsIdle => send::slots(ep, &cfg2, &tl, method.flood(), peer, &abort_s),
            Method::Sleep => send::sleep(ep, &cfg2, &tl, peer, &abort_s),
        }
    });
    let stop_receiver = |receiver: std::thread::JoinHandle<_>| {
        stop.store(true, Ordering::Relaxed);
        let _ = receiver.join();
    };
    let sender = match detpath_instrument::ready::wait_ready("sender", &tx_ready_rx, sender) {
        Ok(((), sender)) => sender,
        Err(e) => {
            drop(rx_tl_tx);
            stop_receiver(receiver);
            return Err(e);
        }
    };
    let tl = timeline(cfg);
    let ticks_before = detpath::sys::cputime::CoreTicks::now();
    let wall_from = detpath::monotonic_ns();
    let _ = rx_tl_tx.send(tl);
    let _ = tx_tl_tx.send(tl);
    // Pass Ctrl-C on to the sender while it runs.
    while !sender.is_finished() {
        if interrupted() {
            abort.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let sent = sender.join().map_err(|_| anyhow::anyhow!("sender thread panicked"));
    // Let the last frames arrive, then stop the receiver.
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let received = receiver.join().map_err(|_| anyhow::anyhow!("receiver thread panicked"))???;
    let ticks_after = detpath::sys::cputime::CoreTicks::now();
    let wall_to = detpath::monotonic_ns();
    let sent = sent???;
    let mut threads = sent.threads.clone();
    threads.push(received.cpu.clone());
    let mut r = recv::analyse(cfg, &tl, dp, method, &format!("{} / {}", sent.endpoint, rx_mode), sent, received);
    let packets = r.classes.iter().map(|c| c.counters.sent).sum::<u64>() as f64;
    r.cpu = Some(detpath::sys::cputime::CpuReport::new(threads, &ticks_before, &ticks_after, &[cfg.cpus.0, cfg.cpus.1], packets));
    r.wall_s = wall_to.saturating_sub(wall_from) as f64 / 1e9;
    Ok(r)
}

/// The run's time plan, starting on a ring-cycle boundary at least 20 ms from now.
fn timeline(cfg: &BenchConfig) -> Timeline {
    let cycle = cfg.sched.slot_ns * cfg.sched.ring_slots as u64;
    let start = (detpath::monotonic_ns() + 20_000_000) / cycle * cycle + cycle;
    let measure_from = start + cfg.warmup_ns;
    Timeline { start, measure_from, end: measure_from + cfg.duration_ns, on_ns: cfg.segment_on_ns, off_ns: cfg.segment_off_ns }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_period_takes_a_unit_and_a_bare_number_is_us() {
        for (text, ns) in [
            ("f1:ctl:100us:64:0", 100_000),
            ("f1:ctl:1ms:64:0", 1_000_000),
            ("f1:ctl:100:64:0", 100_000),
            ("f1:ctl:0.25ms:64:0", 250_000),
            ("f1:ctl:12.5:64:0", 12_500),
        ] {
            let f = FlowSpec::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(f.period_ns, ns, "{text}");
        }
        let f = FlowSpec::parse(" f2 : io : 250 µs : 256 : 7 ").unwrap();
        assert_eq!((f.name.as_str(), f.class.as_str(), f.period_ns, f.size, f.phase_slot), ("f2", "io", 250_000, 256, 7));
    }

    #[test]
    fn a_bad_flow_names_the_field_that_is_wrong() {
        for (text, needle) in [
            ("f1:ctl:5h:64:0", "PERIOD duration `5h`: unknown unit"),
            ("f1:ctl:fast:64:0", "PERIOD duration `fast`"),
            ("f1:ctl:-5us:64:0", "PERIOD duration `-5us`: not a non-negative number"),
            ("f1:ctl:0us:64:0", "PERIOD `0us` is zero"),
            ("f1:ctl:100us:big:0", "SIZE `big`"),
            ("f1:ctl:100us:64:x", "PHASE_SLOT `x`"),
            (":ctl:100us:64:0", "NAME is empty"),
        ] {
            let e = FlowSpec::parse(text).unwrap_err();
            assert!(matches!(e, BenchError::FlowField { .. }), "{text}: {e:?}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        let e = FlowSpec::parse("f1:ctl:100us:64").unwrap_err().to_string();
        assert!(e.contains("NAME:CLASS:PERIOD:SIZE:PHASE_SLOT") && !e.contains("PERIOD_US"), "{e}");
    }

    #[test]
    fn the_default_flows_keep_their_periods() {
        let periods: Vec<u64> = BenchConfig::paper().flows.iter().map(|f| f.period_ns).collect();
        assert_eq!(periods, [100_000, 250_000, 500_000, 1_000_000]);
    }
}

//! Endpoints whose polling thread runs real-time (paper 000, Figure 4: the
//! datapath integrates the endpoint with the OS tuning).
//!
//! With `rt_core=N` in its spec (the `rt` layer, [`LAYER`]), [`crate::open_spec`] turns the *calling* thread
//! into the endpoint's polling thread before the endpoint is opened: pinned to
//! core N, SCHED_FIFO at `rt_priority`, memory locked and the stack prefaulted
//! (`rt_mlock`, on by default), so that the rings and buffers the datapath
//! allocates next are resident. The core is checked first (isolated? IRQs on
//! it?): problems become notes in the endpoint's capabilities, or, with
//! `rt_strict=true`, an error before anything is changed. `rt_dma_latency=US`
//! holds the C-state limit (/dev/cpu_dma_latency) for the endpoint's lifetime.
//!
//! The thread keeps its pinning and policy after the endpoint is dropped (it
//! is the caller's thread); the C-state hold ends with the endpoint.
//!
//! On a host with few cores, a SCHED_FIFO busy poller owns its core: keep RT
//! throttling on (`kernel.sched_rt_runtime_us`, which `detpath tune apply`
//! sets to leave the OS a share) or keep one core free of real-time threads.

use crate::endpoint::{Endpoint, FrameEndpoint};
use crate::error::Result;
use crate::layer::{Keep, Layer, LayerKeys, Prepared, Wrapped, WrappedFrames};
use detpath_sys::thread::{CpuDmaLatencyHold, RealtimeConfig, Warning};

/// The real-time layer: the `rt_*` keys.
pub static LAYER: RealtimeLayer = RealtimeLayer;

/// The real-time layer (see the module's text).
pub struct RealtimeLayer;

/// The keys of the real-time layer.
pub const KEYS: &[&str] = &["rt_core", "rt_priority", "rt_mlock", "rt_strict", "rt_dma_latency"];

/// How the thread that opens (and then polls) an endpoint runs: the `rt_*` keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealtimeSpec {
    /// The core the thread is pinned to (`rt_core`).
    pub core: usize,
    /// SCHED_FIFO priority; `None` keeps SCHED_OTHER (pinning and mlock only).
    pub fifo_priority: Option<u8>,
    /// Lock memory and prefault the stack (`rt_mlock`, default true).
    pub lock_memory: bool,
    /// Refuse a core that is not isolated or carries IRQs (`rt_strict`).
    pub strict: bool,
    /// Hold the C-state exit-latency limit at this many us while the endpoint lives.
    pub dma_latency_us: Option<u32>,
}

impl RealtimeSpec {
    /// The thread pinned to `core`, SCHED_OTHER, memory locked.
    pub fn pinned(core: usize) -> RealtimeSpec {
        RealtimeSpec { core, fifo_priority: None, lock_memory: true, strict: false, dma_latency_us: None }
    }

    /// Reads the `rt_*` keys; `None` when there are none.
    pub fn from_keys(keys: &LayerKeys) -> std::result::Result<Option<RealtimeSpec>, String> {
        let num = |k: &str, v: &str| v.parse::<u64>().map_err(|_| format!("`{k}` takes a number, not `{v}`"));
        let boolean = |k: &str, v: &str| match v {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("`{k}` takes true or false, not `{v}`")),
        };
        let mut rt = RealtimeSpec::pinned(0);
        for (k, v) in keys {
            match k.as_str() {
                "rt_core" => rt.core = num(k, v)? as usize,
                "rt_priority" => match num(k, v)? {
                    p @ 1..=99 => rt.fifo_priority = Some(p as u8),
                    _ => return Err(format!("`rt_priority` takes a SCHED_FIFO priority 1..99, not `{v}`")),
                },
                "rt_mlock" => rt.lock_memory = boolean(k, v)?,
                "rt_strict" => rt.strict = boolean(k, v)?,
                "rt_dma_latency" => rt.dma_latency_us = Some(u32::try_from(num(k, v)?).map_err(|_| format!("`{k}` is out of range"))?),
                _ => return Err(format!("`{k}` is not a key of the real-time layer; it takes: {}", KEYS.join(", "))),
            }
        }
        match (keys.contains_key("rt_core"), keys.keys().next()) {
            (true, _) => Ok(Some(rt)),
            (false, Some(k)) => Err(format!("`{k}` needs `rt_core=N` (the core the polling thread runs on)")),
            (false, None) => Ok(None),
        }
    }

    /// The keys that say this (what [`from_keys`](Self::from_keys) reads back).
    pub(crate) fn to_keys(&self) -> Vec<(&'static str, String)> {
        let mut k = vec![("rt_core", self.core.to_string())];
        if let Some(p) = self.fifo_priority {
            k.push(("rt_priority", p.to_string()));
        }
        if !self.lock_memory {
            k.push(("rt_mlock", "false".into()));
        }
        if self.strict {
            k.push(("rt_strict", "true".into()));
        }
        if let Some(us) = self.dma_latency_us {
            k.push(("rt_dma_latency", us.to_string()));
        }
        k
    }
}

impl Layer for RealtimeLayer {
    fn name(&self) -> &'static str {
        "rt"
    }
    fn summary(&self) -> &'static str {
        "the thread that opens and polls the endpoint runs pinned (rt_core), SCHED_FIFO (rt_priority), memory locked (rt_mlock)"
    }
    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }
    fn check(&self, keys: &LayerKeys) -> std::result::Result<(), String> {
        RealtimeSpec::from_keys(keys).map(|_| ())
    }
    fn prepare(&self, keys: &LayerKeys, spec: &str) -> Result<Box<dyn Prepared>> {
        let bad = |why| crate::Error::BadSpec { spec: spec.to_string(), why };
        let rt = RealtimeSpec::from_keys(keys).map_err(bad)?.ok_or_else(|| bad("no `rt_core`".into()))?;
        let (notes, hold) = prepare_thread(&rt)?;
        Ok(Box::new(Ready { notes, hold }))
    }
}

/// The thread is set up; the endpoint gets the notes and keeps the C-state hold.
struct Ready {
    notes: Vec<String>,
    hold: Option<CpuDmaLatencyHold>,
}

impl Prepared for Ready {
    fn wrap(self: Box<Self>, ep: Box<dyn Endpoint>) -> Result<Box<dyn Endpoint>> {
        let Ready { notes, hold } = *self;
        Ok(Box::new(Wrapped::new(ep, Keep(hold), |c| c.notes.extend(notes))))
    }
    fn wrap_frames(self: Box<Self>, ep: Box<dyn FrameEndpoint>) -> Result<Box<dyn FrameEndpoint>> {
        let Ready { notes, hold } = *self;
        Ok(Box::new(WrappedFrames::new(ep, Keep(hold), |c| c.notes.extend(notes))))
    }
}

/// Applies `rt` to the calling thread; returns the notes to attach to the
/// endpoint's capabilities and the C-state hold to keep alive with it.
pub(crate) fn prepare_thread(rt: &RealtimeSpec) -> Result<(Vec<String>, Option<CpuDmaLatencyHold>)> {
    let cfg = RealtimeConfig { core: rt.core, fifo_priority: rt.fifo_priority, lock_memory: rt.lock_memory, strict: rt.strict };
    let warnings = cfg.apply_to_current_thread()?;
    let hold = rt.dma_latency_us.map(CpuDmaLatencyHold::new).transpose()?;
    let mut notes = vec![describe(rt)];
    // RT throttling only matters to a SCHED_FIFO thread.
    let relevant = |w: &&Warning| rt.fifo_priority.is_some() || !matches!(w, Warning::RtThrottling { .. });
    notes.extend(warnings.iter().filter(relevant).map(|w| format!("warning: {w}")));
    Ok((notes, hold))
}

fn describe(rt: &RealtimeSpec) -> String {
    let mut s = format!("real-time: core {}", rt.core);
    match rt.fifo_priority {
        Some(p) => s += &format!(", SCHED_FIFO {p}"),
        None => s += ", SCHED_OTHER",
    }
    if rt.lock_memory {
        s += ", memory locked";
    }
    if let Some(us) = rt.dma_latency_us {
        s += &format!(", cpu_dma_latency {us} us");
    }
    s
}

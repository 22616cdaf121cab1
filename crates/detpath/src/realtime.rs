//! Endpoints whose polling thread runs real-time (paper 000, Figure 4: the
//! datapath integrates the endpoint with the OS tuning).
//!
//! With `rt_core=N` in its spec, [`crate::open`] turns the *calling* thread
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

use crate::endpoint::{Capabilities, Counters, Endpoint, RecvMode, RxBatch, RxMeta, TxDatagram};
use crate::error::Result;
use crate::frame::{FrameEndpoint, FrameMeta, MacAddr};
use crate::spec::RealtimeSpec;
use detpath_sys::thread::{CpuDmaLatencyHold, RealtimeConfig, Warning};
use std::net::SocketAddrV4;

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

/// An endpoint opened on a real-time polling thread: the inner endpoint, its
/// capabilities with the real-time notes, and the C-state hold.
pub(crate) struct RealtimeEndpoint {
    inner: Box<dyn Endpoint>,
    caps: Capabilities,
    _hold: Option<CpuDmaLatencyHold>,
}

impl RealtimeEndpoint {
    pub(crate) fn wrap(inner: Box<dyn Endpoint>, notes: Vec<String>, hold: Option<CpuDmaLatencyHold>) -> RealtimeEndpoint {
        let mut caps = inner.capabilities().clone();
        caps.notes.extend(notes);
        RealtimeEndpoint { inner, caps, _hold: hold }
    }
}

/// A frame endpoint opened on a real-time polling thread (the same setup as
/// [`RealtimeEndpoint`], for `rt_*` keys in a frame spec).
pub(crate) struct RealtimeFrameEndpoint {
    inner: Box<dyn FrameEndpoint>,
    caps: Capabilities,
    _hold: Option<CpuDmaLatencyHold>,
}

impl RealtimeFrameEndpoint {
    pub(crate) fn wrap(inner: Box<dyn FrameEndpoint>, notes: Vec<String>, hold: Option<CpuDmaLatencyHold>) -> RealtimeFrameEndpoint {
        let mut caps = inner.capabilities().clone();
        caps.notes.extend(notes);
        RealtimeFrameEndpoint { inner, caps, _hold: hold }
    }
}

impl FrameEndpoint for RealtimeFrameEndpoint {
    fn local_mac(&self) -> MacAddr {
        self.inner.local_mac()
    }
    fn ethertype(&self) -> u16 {
        self.inner.ethertype()
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        self.inner.send_frame(payload, dst, ethertype)
    }
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        self.inner.recv_frame(buf, mode)
    }
}

impl Endpoint for RealtimeEndpoint {
    fn local_addr(&self) -> SocketAddrV4 {
        self.inner.local_addr()
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn send_to(&mut self, payload: &[u8], peer: SocketAddrV4) -> Result<()> {
        self.inner.send_to(payload, peer)
    }
    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        self.inner.recv(buf, mode)
    }
    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        self.inner.send_batch(batch)
    }
    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        self.inner.recv_batch(batch, mode)
    }
}

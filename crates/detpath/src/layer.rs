//! Layers: what wraps an endpoint between its datapath and its user.
//!
//! An endpoint is opened by one pipeline ([`crate::open_spec`],
//! [`crate::open_frames_spec`]): every layer of the spec is *prepared* (in
//! order, before the datapath opens: the real-time layer pins the calling
//! thread there, the scheduler checks its classes), the datapath opens, and
//! each prepared layer *wraps* the endpoint, innermost first. A layer is one
//! [`Layer`] value and one line in a registry (`detpath::layers::LAYERS` for
//! the layers of this crate; the `detpath-open` facade lists every layer of
//! the workspace, the slot scheduler's too).
//!
//! A layer's keys are part of the user's spec text (`udp://10.0.0.1:7?pcap=x.pcap`);
//! parsing routes each key to the layer that claims it ([`Layer::claims`]),
//! so a [`crate::EndpointSpec`] is the datapath, its keys and an ordered
//! list of [`LayerUse`]s. A program adds a layer it built itself (metrics,
//! which carries its listener) with [`crate::EndpointSpec::with_layer`].
//!
//! Wrappers forward what they do not change through [`Wrapped`] /
//! [`WrappedFrames`]: a layer writes only the hooks it needs
//! ([`EndpointHooks`], [`FrameHooks`]; every hook defaults to forwarding).

use crate::endpoint::{Capabilities, Counters, Endpoint, FrameEndpoint, FrameMeta, MacAddr, Mark, RecvMode, RxBatch, RxMeta, TxDatagram};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddrV4;
use std::sync::Arc;

/// A layer's keys and values as the spec gave them.
pub type LayerKeys = BTreeMap<String, String>;

/// A list of layers a spec's keys are routed to, innermost first (the
/// order the pipeline wraps in).
pub type Registry = &'static [&'static dyn Layer];

/// Something that wraps endpoints: its name, its spec keys, and how it
/// prepares (before the datapath opens) and wraps (after).
pub trait Layer: Send + Sync {
    /// The layer's name (also usable as a URI scheme with `inner=<datapath>`, e.g. `fault://`).
    fn name(&self) -> &'static str;
    /// One line for `--help` and reports.
    fn summary(&self) -> &'static str;
    /// The spec keys it takes; any of them in a spec puts the layer on the endpoint.
    fn keys(&self) -> &'static [&'static str];
    /// Whether `key` is this layer's (default: one of [`keys`](Self::keys));
    /// a layer may claim a whole prefix to name a misspelt key itself.
    fn claims(&self, key: &str) -> bool {
        self.keys().contains(&key)
    }
    /// Checks the layer's keys when the spec is parsed; the message names the key.
    fn check(&self, _keys: &LayerKeys) -> std::result::Result<(), String> {
        Ok(())
    }
    /// Called before the datapath opens, in layer order, on the thread that
    /// opens (and will poll) the endpoint. `spec` is the spec text, for messages.
    fn prepare(&self, keys: &LayerKeys, spec: &str) -> Result<Box<dyn Prepared>>;
}

/// A prepared layer: wraps the endpoint once the datapath opened it.
pub trait Prepared: Send {
    /// Wraps a datagram endpoint.
    fn wrap(self: Box<Self>, ep: Box<dyn Endpoint>) -> Result<Box<dyn Endpoint>>;
    /// Wraps a frame endpoint.
    fn wrap_frames(self: Box<Self>, ep: Box<dyn FrameEndpoint>) -> Result<Box<dyn FrameEndpoint>>;
}

/// The error of a layer that has no frame (or datagram) side.
pub fn unsupported(layer: &'static str, what: &str) -> Error {
    Error::Unsupported { datapath: layer, what: format!("the {layer} layer on {what}") }
}

/// A layer in a spec: a registered one, or one a program built (metrics).
#[derive(Clone)]
pub enum LayerRef {
    /// A layer of a registry (found by its keys when a spec is parsed).
    Registered(&'static dyn Layer),
    /// A layer value a program made and added to its spec.
    Shared(Arc<dyn Layer>),
}

impl std::ops::Deref for LayerRef {
    type Target = dyn Layer;
    fn deref(&self) -> &(dyn Layer + 'static) {
        match self {
            LayerRef::Registered(l) => *l,
            LayerRef::Shared(l) => l.as_ref(),
        }
    }
}

/// One layer of a spec and the keys it was given.
#[derive(Clone)]
pub struct LayerUse {
    /// The layer.
    pub layer: LayerRef,
    /// Its keys.
    pub keys: LayerKeys,
}

impl LayerUse {
    /// A layer a program built, with no keys (added with [`crate::EndpointSpec::with_layer`]).
    pub fn shared(layer: Arc<dyn Layer>) -> LayerUse {
        LayerUse { layer: LayerRef::Shared(layer), keys: LayerKeys::new() }
    }
    /// The layer's name.
    pub fn name(&self) -> &'static str {
        self.layer.name()
    }
}

impl PartialEq for LayerUse {
    fn eq(&self, other: &LayerUse) -> bool {
        self.name() == other.name() && self.keys == other.keys
    }
}
impl Eq for LayerUse {}

impl fmt::Debug for LayerUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:?}", self.name(), self.keys)
    }
}

/// What a datagram layer changes; every hook forwards by default, so a
/// layer writes only what it does differently. Used through [`Wrapped`].
pub trait EndpointHooks: Send {
    /// A send through the layer (`send_to` is the unmarked one: [`Mark::NONE`]).
    fn send(&mut self, inner: &mut dyn Endpoint, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        inner.send_marked(payload, peer, mark)
    }
    /// `recv` through the layer.
    fn recv(&mut self, inner: &mut dyn Endpoint, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        inner.recv(buf, mode)
    }
    /// `send_batch` through the layer.
    fn send_batch(&mut self, inner: &mut dyn Endpoint, batch: &[TxDatagram<'_>]) -> Result<usize> {
        inner.send_batch(batch)
    }
    /// `recv_batch` through the layer.
    fn recv_batch(&mut self, inner: &mut dyn Endpoint, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        inner.recv_batch(batch, mode)
    }
    /// `counters` through the layer.
    fn counters(&self, inner: &dyn Endpoint) -> Counters {
        inner.counters()
    }
    /// Called once when the wrapper is dropped, before the inner endpoint
    /// closes (e.g. to publish its final counters).
    fn close(&mut self, _inner: &dyn Endpoint) {}
}

/// What a frame layer changes (every hook forwards by default). Used through [`WrappedFrames`].
pub trait FrameHooks: Send {
    /// `send_frame` through the layer.
    fn send_frame(&mut self, inner: &mut dyn FrameEndpoint, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        inner.send_frame(payload, dst, ethertype)
    }
    /// `recv_frame` through the layer.
    fn recv_frame(&mut self, inner: &mut dyn FrameEndpoint, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        inner.recv_frame(buf, mode)
    }
    /// `counters` through the layer.
    fn counters(&self, inner: &dyn FrameEndpoint) -> Counters {
        inner.counters()
    }
}

/// Hooks that change nothing: a layer that only adds notes or holds something for the endpoint's lifetime.
pub struct Keep<T: Send>(pub T);
impl<T: Send> EndpointHooks for Keep<T> {}
impl<T: Send> FrameHooks for Keep<T> {}

/// A datagram endpoint wrapped by a layer: the inner endpoint, its
/// capabilities as the layer shows them, and the layer's hooks. The one
/// place where the [`Endpoint`] methods are forwarded.
pub struct Wrapped<H: EndpointHooks> {
    inner: Box<dyn Endpoint>,
    caps: Capabilities,
    hooks: H,
}

impl<H: EndpointHooks> Wrapped<H> {
    /// Wraps `inner`; `caps` edits the capabilities the wrapper reports (notes, name).
    pub fn new(inner: Box<dyn Endpoint>, hooks: H, caps: impl FnOnce(&mut Capabilities)) -> Wrapped<H> {
        let mut c = inner.capabilities().clone();
        caps(&mut c);
        Wrapped { inner, caps: c, hooks }
    }
    /// The layer's hooks (its state).
    pub fn hooks(&self) -> &H {
        &self.hooks
    }
    /// The wrapped endpoint.
    pub fn inner(&self) -> &dyn Endpoint {
        self.inner.as_ref()
    }
}

impl<H: EndpointHooks> Drop for Wrapped<H> {
    fn drop(&mut self) {
        self.hooks.close(self.inner.as_ref());
    }
}

impl<H: EndpointHooks> Endpoint for Wrapped<H> {
    fn local_addr(&self) -> SocketAddrV4 {
        self.inner.local_addr()
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        self.hooks.counters(self.inner.as_ref())
    }
    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        self.hooks.send(self.inner.as_mut(), payload, peer, mark)
    }
    fn class_named(&self, name: &str) -> Result<u16> {
        self.inner.class_named(name)
    }
    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        self.hooks.recv(self.inner.as_mut(), buf, mode)
    }
    fn send_batch(&mut self, batch: &[TxDatagram<'_>]) -> Result<usize> {
        self.hooks.send_batch(self.inner.as_mut(), batch)
    }
    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        self.hooks.recv_batch(self.inner.as_mut(), batch, mode)
    }
}

/// A frame endpoint wrapped by a layer (see [`Wrapped`]).
pub struct WrappedFrames<H> {
    inner: Box<dyn FrameEndpoint>,
    caps: Capabilities,
    hooks: H,
}

impl<H: FrameHooks> WrappedFrames<H> {
    /// Wraps `inner`; `caps` edits the capabilities the wrapper reports.
    pub fn new(inner: Box<dyn FrameEndpoint>, hooks: H, caps: impl FnOnce(&mut Capabilities)) -> WrappedFrames<H> {
        let mut c = inner.capabilities().clone();
        caps(&mut c);
        WrappedFrames { inner, caps: c, hooks }
    }
    /// The layer's hooks (its state).
    pub fn hooks(&self) -> &H {
        &self.hooks
    }
}

impl<H: FrameHooks> FrameEndpoint for WrappedFrames<H> {
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
        self.hooks.counters(self.inner.as_ref())
    }
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        self.hooks.send_frame(self.inner.as_mut(), payload, dst, ethertype)
    }
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        self.hooks.recv_frame(self.inner.as_mut(), buf, mode)
    }
}

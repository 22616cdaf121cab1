//! Where the engine's datagrams go: the one seam between the sans-IO engine
//! and a transport (a detpath endpoint, a UDP socket, a test's vector).

use crate::wire::Addr;

/// Takes the datagrams the engine produces. Sending is synchronous: the
/// bytes are only valid during the call. A transport that fails counts the
/// failure itself; the engine's reliability protocol repairs the loss.
pub trait Outbox {
    /// Sends one datagram to `dst` (the bytes are valid only during the call).
    fn send(&mut self, dst: Addr, datagram: &[u8]);
}

/// Collects datagrams in memory (tests, tools).
#[derive(Debug, Default)]
pub struct VecOutbox {
    /// Every datagram sent, with its destination, in order.
    pub sent: Vec<(Addr, Vec<u8>)>,
}

impl Outbox for VecOutbox {
    fn send(&mut self, dst: Addr, datagram: &[u8]) {
        self.sent.push((dst, datagram.to_vec()));
    }
}

impl VecOutbox {
    /// Takes what was sent so far.
    pub fn drain(&mut self) -> Vec<(Addr, Vec<u8>)> {
        std::mem::take(&mut self.sent)
    }
}

/// Drops everything (a writer with nobody to send to).
#[derive(Debug, Default)]
pub struct NullOutbox;

impl Outbox for NullOutbox {
    fn send(&mut self, _dst: Addr, _datagram: &[u8]) {}
}

//! Where the engine's datagrams go: the one seam between the sans-IO engine
//! and a transport (a detpath endpoint, a UDP socket, a test's vector).

use crate::priority::TxMark;
use crate::wire::Addr;

/// Takes the datagrams the engine produces. Sending is synchronous: the
/// bytes are only valid during the call. A transport that fails counts the
/// failure itself; the engine's reliability protocol repairs the loss.
pub trait Outbox {
    /// Sends one datagram to `dst` (the bytes are valid only during the call).
    fn send(&mut self, dst: Addr, datagram: &[u8]);

    /// Sends one datagram with its DSCP and traffic class ([`TxMark`]: a
    /// writer's priority, [`crate::priority`]). The engine sends every
    /// datagram through this; a transport that cannot mark sends it plainly
    /// (the default).
    fn send_marked(&mut self, dst: Addr, datagram: &[u8], mark: TxMark) {
        let _ = mark;
        self.send(dst, datagram);
    }
}

/// Collects datagrams in memory (tests, tools).
#[derive(Debug, Default)]
pub struct VecOutbox {
    /// Every datagram sent, with its destination, in order.
    pub sent: Vec<(Addr, Vec<u8>)>,
    /// The mark of each datagram in `sent` (same index).
    pub marks: Vec<TxMark>,
}

impl Outbox for VecOutbox {
    fn send(&mut self, dst: Addr, datagram: &[u8]) {
        self.send_marked(dst, datagram, TxMark::NONE);
    }
    fn send_marked(&mut self, dst: Addr, datagram: &[u8], mark: TxMark) {
        self.sent.push((dst, datagram.to_vec()));
        self.marks.push(mark);
    }
}

impl VecOutbox {
    /// Takes what was sent so far.
    pub fn drain(&mut self) -> Vec<(Addr, Vec<u8>)> {
        self.marks.clear();
        std::mem::take(&mut self.sent)
    }
    /// Takes what was sent so far, with each datagram's mark.
    pub fn drain_marked(&mut self) -> Vec<(Addr, Vec<u8>, TxMark)> {
        let marks = std::mem::take(&mut self.marks);
        std::mem::take(&mut self.sent).into_iter().zip(marks).map(|((a, d), m)| (a, d, m)).collect()
    }
}

/// Drops everything (a writer with nobody to send to).
#[derive(Debug, Default)]
pub struct NullOutbox;

impl Outbox for NullOutbox {
    fn send(&mut self, _dst: Addr, _datagram: &[u8]) {}
}

//! When each control ping left the pinging side: the evidence for the
//! `sent_late` and `retransmitted` causes of an over-budget ping
//! ([`super::causes`]).
//!
//! - In the priority arm the slot scheduler hands each datagram to the
//!   datapath in its slot: its release observer
//!   ([`detpath_sched::SlotsEndpoint::observe_releases`]) tells the log the
//!   hand-off's clock reading.
//! - In the fifo arm the engine's send is the hand-off: [`Logged`] wraps
//!   the endpoint and notes the time each send returned.
//!
//! A datagram carries a ping when it holds a DATA whose serialized payload
//! is a control sample (the 4-byte encapsulation and [`CONTROL_SIZE`]
//! bytes; bulk samples are [`super::BULK_SIZE`]); the ping's sequence
//! number is its payload's first 8 bytes. Every hand-off of a ping is kept,
//! so a repair (the same ping sent again) is seen.

use super::CONTROL_SIZE;
use detpath::{Capabilities, Counters, Endpoint, Mark, RecvMode, RxBatch, RxMeta};
use detpath_pubsub::wire::{Message, Submessage};
use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex};

/// Datagrams longer than this carry no ping alone (a bulk sample is 1 KiB):
/// the log does not parse them, so the fifo arm's bulk pays one comparison.
const MAX_PING_DATAGRAM: usize = 512;

/// The hand-offs of each ping, by its sequence number (CLOCK_MONOTONIC ns, in order).
#[derive(Default)]
pub struct SendLog {
    sends: Mutex<HashMap<u64, Vec<u64>>>,
}

impl SendLog {
    /// Notes that `datagram` left at `at_ns`, if it carries pings.
    pub fn note(&self, datagram: &[u8], at_ns: u64) {
        if datagram.len() > MAX_PING_DATAGRAM {
            return;
        }
        let seqs = ping_seqs(datagram);
        if seqs.is_empty() {
            return;
        }
        if let Ok(mut m) = self.sends.lock() {
            for seq in seqs {
                m.entry(seq).or_default().push(at_ns);
            }
        }
    }

    /// The hand-offs of ping `seq`, in order (empty: never seen leaving).
    pub fn sends(&self, seq: u64) -> Vec<u64> {
        self.sends.lock().ok().and_then(|m| m.get(&seq).cloned()).unwrap_or_default()
    }

    /// Pings seen leaving.
    pub fn len(&self) -> usize {
        self.sends.lock().map_or(0, |m| m.len())
    }

    /// Whether no ping was seen leaving.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The sequence numbers of the pings in an RTPS datagram (warm-up pings,
/// numbered `u64::MAX`, left out).
pub fn ping_seqs(datagram: &[u8]) -> Vec<u64> {
    let Ok(m) = Message::parse(datagram) else { return Vec::new() };
    m.submessages()
        .map_while(Result::ok)
        .filter_map(|s| match s {
            Submessage::Data(d) => d.payload,
            _ => None,
        })
        .filter(|p| p.len() == 4 + CONTROL_SIZE)
        .filter_map(|p| p.get(4..12).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())))
        .filter(|&seq| seq != u64::MAX)
        .collect()
}

/// An endpoint whose sends are noted in a [`SendLog`] when they return.
pub struct Logged {
    inner: Box<dyn Endpoint>,
    log: Arc<SendLog>,
}

impl Logged {
    /// Wraps `inner`; its pings go to `log`.
    pub fn new(inner: Box<dyn Endpoint>, log: Arc<SendLog>) -> Logged {
        Logged { inner, log }
    }
}

impl Endpoint for Logged {
    fn local_addr(&self) -> SocketAddrV4 {
        self.inner.local_addr()
    }
    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn send_marked(&mut self, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> detpath::Result<()> {
        let r = self.inner.send_marked(payload, peer, mark);
        if r.is_ok() {
            self.log.note(payload, detpath::monotonic_ns());
        }
        r
    }
    fn class_named(&self, name: &str) -> detpath::Result<u16> {
        self.inner.class_named(name)
    }
    fn recv(&mut self, buf: &mut [u8], mode: RecvMode) -> detpath::Result<Option<RxMeta>> {
        self.inner.recv(buf, mode)
    }
    fn recv_batch(&mut self, batch: &mut RxBatch, mode: RecvMode) -> detpath::Result<usize> {
        self.inner.recv_batch(batch, mode)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use detpath_pubsub::wire::{EntityId, GuidPrefix, MessageBuilder, SequenceNumber, VendorId};

    /// An RTPS datagram with one DATA of `payload` (serialized, encapsulation included).
    fn datagram(payload: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; 1500];
        let mut b = MessageBuilder::new(&mut buf, GuidPrefix([7; 12]), VendorId::DETPATH).unwrap();
        b.data_bytes(EntityId([0, 0, 0, 0]), EntityId([0, 0, 1, 2]), SequenceNumber(1), None, payload).unwrap();
        let n = b.finish();
        buf.truncate(n);
        buf
    }

    /// A datagram carrying ping `seq`, as the mixed bench writes it.
    pub(crate) fn ping_datagram(seq: u64) -> Vec<u8> {
        let mut p = vec![0u8; 4 + CONTROL_SIZE];
        p[1] = 1;
        p[4..12].copy_from_slice(&seq.to_le_bytes());
        datagram(&p)
    }

    #[test]
    fn pings_are_logged_by_sequence_number_and_other_datagrams_are_not() {
        let log = SendLog::default();
        log.note(&ping_datagram(5), 100);
        log.note(&ping_datagram(5), 900);
        log.note(&ping_datagram(u64::MAX), 50);
        // A bulk sample, and junk.
        log.note(&datagram(&[0u8; 4 + super::super::BULK_SIZE]), 60);
        let mut bulk_small = vec![0u8; 4 + 32];
        bulk_small[4] = 9;
        log.note(&datagram(&bulk_small), 70);
        log.note(b"not rtps", 80);
        assert_eq!(log.sends(5), vec![100, 900]);
        assert_eq!(log.len(), 1);
        assert!(log.sends(9).is_empty());
    }
}

//! The thin driver: a participant on a [`Transport`] (a detpath endpoint, or
//! any datagram transport), run by the caller's polling thread. Each turn
//! runs due timers, lets the application act, then receives whatever is
//! there (waiting at most until the next thing is due) and hands every
//! datagram to the engine.

use crate::ddsperf::PerfNode;
use crate::engine::{Outbox, Participant};
use crate::priority::TxMark;
use crate::wire::Addr;

/// What the driver needs from a transport. Implementations own their OS
/// resources; this crate has none of its own.
pub trait Transport {
    /// Sends one datagram; a failure is the transport's to count.
    fn send(&mut self, dst: Addr, bytes: &[u8]);
    /// Sends one datagram with its DSCP and traffic class; a transport
    /// that cannot mark sends it plainly (the default).
    fn send_marked(&mut self, dst: Addr, bytes: &[u8], mark: TxMark) {
        let _ = mark;
        self.send(dst, bytes);
    }
    /// Receives one datagram into `buf`, waiting at most `wait_ns` (0: do not
    /// wait): its length, sender and monotonic reception time.
    fn recv(&mut self, buf: &mut [u8], wait_ns: u64) -> Option<(usize, Addr, u64)>;
    /// CLOCK_MONOTONIC nanoseconds (the clock reception times use).
    fn now_ns(&self) -> u64;
    /// The address peers reach this transport at.
    fn local_addr(&self) -> Addr;
    /// Largest datagram payload it carries.
    fn max_datagram(&self) -> usize;
}

/// Wall-clock nanoseconds (source timestamps; ddsperf compares them with its own wall clock).
pub fn wall_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// An [`Outbox`] over a transport.
pub struct TransportOutbox<'a, T: Transport + ?Sized>(pub &'a mut T);

impl<T: Transport + ?Sized> Outbox for TransportOutbox<'_, T> {
    fn send(&mut self, dst: Addr, datagram: &[u8]) {
        self.0.send(dst, datagram);
    }
    fn send_marked(&mut self, dst: Addr, datagram: &[u8], mark: TxMark) {
        self.0.send_marked(dst, datagram, mark);
    }
}

/// A participant on a transport.
pub struct Node<T: Transport> {
    /// The protocol engine.
    pub participant: Participant,
    /// What the engine's datagrams go out on and come in from.
    pub transport: T,
    rxbuf: Vec<u8>,
    /// Datagrams handed to the engine.
    pub received: u64,
}

impl<T: Transport> Node<T> {
    /// A participant on a transport; nothing is sent until the first turn.
    pub fn new(participant: Participant, transport: T) -> Node<T> {
        Node { participant, transport, rxbuf: vec![0; 65536], received: 0 }
    }

    /// One turn: due timers, then receive for at most `max_wait_ns` (less if
    /// the engine has a timer due sooner), handing each datagram to the
    /// engine and calling `after_rx` (with the reception time) after each.
    pub fn turn(&mut self, max_wait_ns: u64, mut after_rx: impl FnMut(&mut Participant, &mut dyn Outbox, u64)) {
        let now = self.transport.now_ns();
        if self.participant.next_timeout() <= now {
            self.participant.handle_timeout(now, &mut TransportOutbox(&mut self.transport));
        }
        let due = self.participant.next_timeout().saturating_sub(now);
        let mut wait = max_wait_ns.min(due);
        for _ in 0..64 {
            let Some((len, src, rx_ns)) = self.transport.recv(&mut self.rxbuf, wait) else {
                break;
            };
            wait = 0;
            self.received += 1;
            let (p, t, buf) = (&mut self.participant, &mut self.transport, &self.rxbuf);
            p.handle_datagram(rx_ns, src, &buf[..len], &mut TransportOutbox(t));
            after_rx(p, &mut TransportOutbox(t), rx_ns);
        }
    }

    /// Runs a ddsperf node until `stop` says so (it may end the pinging:
    /// `cfg.count`); `each_second` is called
    /// about once a second with the node (to print a window of figures).
    /// Samples are stamped with the system's wall clock ([`Node::run_perf_on`]
    /// takes another).
    pub fn run_perf(
        &mut self,
        perf: &mut PerfNode,
        stop: impl FnMut(&mut PerfNode, &Participant, u64) -> bool,
        each_second: impl FnMut(&mut PerfNode, u64),
    ) {
        self.run_perf_on(perf, wall_ns, stop, each_second)
    }

    /// [`Node::run_perf`] stamping its samples with `wall` (the node's
    /// clock: steered by PTP, or offset on purpose), in ns.
    pub fn run_perf_on(
        &mut self,
        perf: &mut PerfNode,
        wall: impl Fn() -> i64,
        mut stop: impl FnMut(&mut PerfNode, &Participant, u64) -> bool,
        mut each_second: impl FnMut(&mut PerfNode, u64),
    ) {
        let start = self.transport.now_ns();
        let mut next_report = start + 1_000_000_000;
        loop {
            let now = self.transport.now_ns();
            if stop(perf, &self.participant, now - start) {
                break;
            }
            perf.on_events(&mut self.participant);
            perf.poll(&mut self.participant, &mut TransportOutbox(&mut self.transport), now, wall());
            if now >= next_report {
                each_second(perf, now - start);
                next_report += 1_000_000_000;
                if next_report < now {
                    next_report = now + 1_000_000_000;
                }
            }
            let due = perf.next_due().min(next_report);
            let wait = due.saturating_sub(self.transport.now_ns()).min(10_000_000);
            self.turn(wait, |p, out, rx_ns| perf.poll(p, out, rx_ns, wall()));
        }
    }
}

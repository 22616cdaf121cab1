//! The engine's transport over a `detpath::Endpoint`: whatever datapath the
//! endpoint uses (udp, afxdp, xdppoll, dpdk), RTPS rides on it unchanged.

use crate::driver::Transport;
use detpath::{Endpoint, RecvMode};
use std::net::SocketAddrV4;
use std::time::Duration;

/// How the polling thread waits for datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Spin on the ring or socket (lowest latency, one core busy).
    Busy,
    /// Sleep in the kernel until something arrives.
    Block,
}

/// A detpath endpoint as a driver transport.
pub struct EndpointTransport {
    pub ep: Box<dyn Endpoint>,
    pub wait: Wait,
    /// Sends the endpoint refused.
    pub send_errors: u64,
    /// Datagrams cut off by the receive buffer (dropped).
    pub truncated: u64,
    max_datagram: usize,
}

impl EndpointTransport {
    /// Wraps an open endpoint.
    pub fn new(ep: Box<dyn Endpoint>, wait: Wait) -> EndpointTransport {
        let max_datagram = ep.capabilities().max_payload.clamp(256, 65507);
        EndpointTransport { ep, wait, send_errors: 0, truncated: 0, max_datagram }
    }
}

impl Transport for EndpointTransport {
    fn send(&mut self, dst: SocketAddrV4, bytes: &[u8]) {
        if self.ep.send_to(bytes, dst).is_err() {
            self.send_errors += 1;
        }
    }
    fn recv(&mut self, buf: &mut [u8], wait_ns: u64) -> Option<(usize, SocketAddrV4, u64)> {
        let mode = match (wait_ns, self.wait) {
            (0, _) => RecvMode::NonBlocking,
            (n, Wait::Busy) => RecvMode::BusyPoll { timeout: Some(Duration::from_nanos(n)) },
            (n, Wait::Block) => RecvMode::Blocking { timeout: Some(Duration::from_nanos(n)) },
        };
        let m = self.ep.recv(buf, mode).ok()??;
        if m.truncated {
            self.truncated += 1;
            return None;
        }
        Some((m.len, m.peer, m.rx_ns))
    }
    fn now_ns(&self) -> u64 {
        detpath::monotonic_ns()
    }
    fn local_addr(&self) -> SocketAddrV4 {
        self.ep.local_addr()
    }
    fn max_datagram(&self) -> usize {
        self.max_datagram
    }
}

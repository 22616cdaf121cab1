//! An in-memory network of engines: datagrams go from one participant's
//! outbox to the participant owning the destination address, through an
//! optional loss rule, under a virtual clock.
// Compiled into each test crate that declares it, and each uses a part:
// what one leaves unused is dead code there.
#![allow(dead_code)]

pub mod forge;
pub mod udp;

use detpath_pubsub::engine::{Config, Participant, VecOutbox};
use std::net::{Ipv4Addr, SocketAddrV4};

/// Decides per datagram (from, to, bytes, counter) whether it is dropped.
pub type DropRule = Box<dyn FnMut(usize, usize, &[u8], u64) -> bool>;

pub struct Net {
    pub nodes: Vec<Participant>,
    pub addrs: Vec<SocketAddrV4>,
    pub now: u64,
    pub outs: Vec<VecOutbox>,
    /// Decides per datagram (from, to, bytes, counter) whether it is dropped.
    pub drop: DropRule,
    pub sent: u64,
    pub dropped: u64,
    pub alive: Vec<bool>,
}

pub fn addr(i: usize) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410 + 2 * i as u16)
}

impl Net {
    pub fn new(n: usize) -> Net {
        let mut nodes = Vec::new();
        for i in 0..n {
            let mut cfg = Config::new(0, detpath_pubsub::engine::make_guid_prefix(1, 100 + i as u32, 7), addr(i));
            cfg.add_peer(Ipv4Addr::LOCALHOST, n as u32);
            cfg.user_data = format!("node{i}").into_bytes();
            nodes.push(Participant::new(cfg, 0));
        }
        Net {
            addrs: (0..n).map(addr).collect(),
            outs: (0..n).map(|_| VecOutbox::default()).collect(),
            alive: vec![true; n],
            nodes,
            now: 1,
            drop: Box::new(|_, _, _, _| false),
            sent: 0,
            dropped: 0,
        }
    }
    pub fn with_config(n: usize, f: impl Fn(usize, &mut Config)) -> Net {
        let mut net = Net::new(n);
        for i in 0..n {
            let mut cfg = net.nodes[i].config().clone();
            f(i, &mut cfg);
            net.nodes[i] = Participant::new(cfg, 0);
        }
        net
    }
    /// Moves every queued datagram to its destination (repeating until quiet).
    pub fn deliver(&mut self) {
        for _ in 0..64 {
            let mut moved = false;
            for i in 0..self.nodes.len() {
                let batch = self.outs[i].drain();
                for (dst, bytes) in batch {
                    moved = true;
                    let Some(j) = self.addrs.iter().position(|a| dst == *a) else {
                        continue;
                    };
                    self.sent += 1;
                    if !self.alive[i] || !self.alive[j] || (self.drop)(i, j, &bytes, self.sent) {
                        self.dropped += 1;
                        continue;
                    }
                    let src = self.addrs[i];
                    let (node, out) = (&mut self.nodes[j], &mut self.outs[j]);
                    node.handle_datagram(self.now, src, &bytes, out);
                }
            }
            if !moved {
                return;
            }
        }
    }
    /// Advances the clock by `dt` and runs timers and delivery.
    pub fn step(&mut self, dt: u64) {
        self.now += dt;
        for i in 0..self.nodes.len() {
            if self.alive[i] && self.nodes[i].next_timeout() <= self.now {
                let (node, out) = (&mut self.nodes[i], &mut self.outs[i]);
                node.handle_timeout(self.now, out);
            }
        }
        self.deliver();
    }
    /// Steps in 1 ms until `done` or `limit_ms` passes; returns the time it took.
    pub fn run_until(&mut self, limit_ms: u64, mut done: impl FnMut(&mut Net) -> bool) -> Option<u64> {
        let start = self.now;
        for _ in 0..limit_ms {
            if done(self) {
                return Some(self.now - start);
            }
            self.step(1_000_000);
        }
        done(self).then(|| self.now - start)
    }
}

/// A small deterministic PRNG for loss patterns.
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

//! After discovery, writing and taking samples allocates nothing: a counting
//! global allocator watches the hot path of a ddsperf ping/pong pair (write,
//! DATA + HEARTBEAT out, datagram in, reorder/cache, take, answer, timers
//! with their periodic SPDP and heartbeats) for 10,000 round trips.

use detpath_pubsub::ddsperf::{PerfConfig, PerfNode, Role};
use detpath_pubsub::engine::{make_guid_prefix, Config, Outbox, Participant};
use detpath_pubsub::wire::Addr;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static WATCH: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if WATCH.with(|w| w.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if WATCH.with(|w| w.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// A preallocated datagram queue: the outbox itself allocates nothing.
struct Ring {
    bufs: Vec<(Addr, usize, Box<[u8; 2048]>)>,
    n: usize,
}
impl Ring {
    fn new() -> Ring {
        Ring { bufs: (0..256).map(|_| (Addr::Udp(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)), 0, Box::new([0u8; 2048]))).collect(), n: 0 }
    }
}
impl Outbox for Ring {
    fn send(&mut self, dst: Addr, d: &[u8]) {
        if self.n < self.bufs.len() && d.len() <= 2048 {
            let b = &mut self.bufs[self.n];
            b.0 = dst;
            b.1 = d.len();
            b.2[..d.len()].copy_from_slice(d);
            self.n += 1;
        }
    }
}

struct Side {
    p: Participant,
    perf: PerfNode,
    out: Ring,
    addr: SocketAddrV4,
}

fn side(i: u16, role: Role) -> Side {
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410 + 2 * i);
    let mut cfg = Config::new(0, make_guid_prefix(9, i as u32, 1), addr);
    cfg.add_peer(Ipv4Addr::LOCALHOST, 1);
    cfg.user_data = detpath_pubsub::ddsperf::user_data(false, i as u32, "alloc");
    let mut p = Participant::new(cfg, 1);
    let mut pc = PerfConfig::new(role);
    pc.max_latency_samples = 20_000;
    let perf = PerfNode::new(&mut p, 1, pc).unwrap();
    Side { p, perf, out: Ring::new(), addr }
}

/// Moves queued datagrams between the two sides until quiet.
fn pump(s: &mut [Side; 2], now: u64) {
    for _ in 0..16 {
        let mut moved = false;
        for from in 0..2 {
            let n = std::mem::replace(&mut s[from].out.n, 0);
            for k in 0..n {
                moved = true;
                let to = 1 - from;
                let (a, b) = s.split_at_mut(1);
                let (src, dst) = if from == 0 { (&mut a[0], &mut b[0]) } else { (&mut b[0], &mut a[0]) };
                let (dst_addr, len, buf) = (src.out.bufs[k].0, src.out.bufs[k].1, &src.out.bufs[k].2);
                if dst_addr != dst.addr {
                    continue;
                }
                dst.p.handle_datagram(now, src.addr, &buf[..len], &mut dst.out);
                dst.perf.poll(&mut dst.p, &mut dst.out, now, now as i64);
                let _ = to;
            }
        }
        if !moved {
            return;
        }
    }
}

fn step(s: &mut [Side; 2], now: u64) {
    for x in s.iter_mut() {
        if x.p.next_timeout() <= now {
            x.p.handle_timeout(now, &mut x.out);
        }
        x.perf.on_events(&mut x.p);
        x.perf.poll(&mut x.p, &mut x.out, now, now as i64 + 1_700_000_000_000_000_000);
    }
    pump(s, now);
}

#[test]
fn ping_pong_after_discovery_allocates_nothing() {
    let mut s = [side(0, Role::Ping { rate_hz: 1000.0 }), side(1, Role::Pong)];
    let mut now = 1u64;
    // Discovery and warm-up: 2 s of virtual time at 1 ms steps.
    for _ in 0..2000 {
        now += 1_000_000;
        step(&mut s, now);
    }
    let warm = s[0].perf.stats.pongs_received;
    assert!(warm > 1000, "pings flow before measuring: {warm}");
    WATCH.with(|w| w.set(true));
    for _ in 0..10_000 {
        now += 1_000_000;
        step(&mut s, now);
    }
    WATCH.with(|w| w.set(false));
    let allocs = ALLOCS.load(Ordering::Relaxed);
    let round_trips = s[0].perf.stats.pongs_received - warm;
    assert!(round_trips >= 9_990, "{round_trips}");
    assert_eq!(allocs, 0, "{allocs} allocations in {round_trips} round trips (10 s with SPDP and heartbeats)");
}

//! After discovery, writing and taking samples allocates nothing: a counting
//! global allocator watches the hot path of a ddsperf ping/pong pair (write,
//! DATA + HEARTBEAT out, datagram in, reorder/cache, take, answer, timers
//! with their periodic SPDP and heartbeats) for 10,000 round trips. And
//! what matching a late joiner allocates does not grow with how many
//! samples the writer wrote.

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
    /// While true, the largest block allocated (or reallocated) on this thread goes into LARGEST.
    static WATCH_SIZE: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_size(n: usize) {
    if WATCH_SIZE.with(|w| w.get()) {
        LARGEST.with(|l| l.set(l.get().max(n)));
    }
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if WATCH.with(|w| w.get()) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        note_size(l.size());
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
        note_size(n);
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

/// A participant with its outbox and address, for engine-only pairs.
struct Bare {
    p: Participant,
    out: Ring,
    addr: SocketAddrV4,
}

fn bare(i: u16) -> Bare {
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410 + 2 * i);
    let mut cfg = Config::new(0, make_guid_prefix(9, 50 + i as u32, 1), addr);
    cfg.add_peer(Ipv4Addr::LOCALHOST, 1);
    Bare { p: Participant::new(cfg, 1), out: Ring::new(), addr }
}

/// Runs both participants' timers due at `now` and drops their events.
fn timeouts_bare(s: &mut [Bare; 2], now: u64) {
    for x in s.iter_mut() {
        if x.p.next_timeout() <= now {
            x.p.handle_timeout(now, &mut x.out);
        }
        while x.p.poll_event().is_some() {}
    }
}

fn pump_bare(s: &mut [Bare; 2], now: u64) {
    for _ in 0..16 {
        let mut moved = false;
        for from in 0..2 {
            let n = std::mem::replace(&mut s[from].out.n, 0);
            let (a, b) = s.split_at_mut(1);
            let (src, dst) = if from == 0 { (&mut a[0], &mut b[0]) } else { (&mut b[0], &mut a[0]) };
            for k in 0..n {
                moved = true;
                let (dst_addr, len) = (src.out.bufs[k].0, src.out.bufs[k].1);
                if dst_addr == dst.addr {
                    dst.p.handle_datagram(now, src.addr, &src.out.bufs[k].2[..len], &mut dst.out);
                }
            }
        }
        if !moved {
            return;
        }
    }
}

#[test]
fn keyed_instances_dispose_and_unregister_after_discovery_allocate_nothing() {
    use detpath_pubsub::qos::Qos;
    use detpath_pubsub::types::KeyedSeq;
    let mut s = [bare(0), bare(1)];
    let proto = KeyedSeq::with_size(32);
    let w = s[0].p.create_writer_for("K", Qos::reliable_keep_last(2).with_max_instances(8), &proto).unwrap();
    let r = s[1].p.create_reader_for(1, "K", Qos::reliable_keep_last(1).with_max_instances(8), &proto).unwrap();
    let mut now = 1u64;
    let (mut sample, mut rx) = (KeyedSeq::with_size(32), KeyedSeq::with_size(32));
    let (taken, not_alive) = (Cell::new(0u64), Cell::new(0u64));
    let mut run = |s: &mut [Bare; 2], now: &mut u64, iters: u32, watch: bool| {
        WATCH.with(|w| w.set(watch));
        for i in 0..iters {
            *now += 100_000;
            timeouts_bare(s, *now);
            if s[0].p.writer_status(w).matched > 0 {
                sample.seq = i;
                sample.keyval = i % 8;
                let _ = s[0].p.write(*now, &mut s[0].out, w, None, &sample);
                if i % 100 == 50 {
                    sample.keyval = (i / 100) % 8;
                    let _ = s[0].p.dispose(*now, &mut s[0].out, w, None, &sample);
                    sample.keyval = (i / 100 + 3) % 8;
                    let _ = s[0].p.unregister(*now, &mut s[0].out, w, None, &sample);
                }
            }
            pump_bare(s, *now);
            while let Some(info) = s[1].p.take(r, &mut rx).unwrap() {
                taken.set(taken.get() + 1);
                not_alive.set(not_alive.get() + (info.instance_state != detpath_pubsub::engine::InstanceState::Alive) as u64);
            }
        }
        WATCH.with(|w| w.set(false));
    };
    // Discovery and warm-up (every slot sees its largest sample once).
    run(&mut s, &mut now, 20_000, false);
    let warm = taken.get();
    assert!(warm > 10_000, "samples flow before measuring: {warm}");
    run(&mut s, &mut now, 20_000, true);
    let allocs = ALLOCS.load(Ordering::Relaxed);
    let st = s[1].p.reader_status(r);
    let taken = taken.get();
    assert!(taken - warm >= 19_000, "{}", taken - warm);
    assert!(not_alive.get() > 0, "disposed and unregistered instances were seen");
    assert_eq!((st.instances, st.instances_refused, st.lost), (8, 0, 0));
    assert_eq!(allocs, 0, "{allocs} allocations in {} samples over 8 instances with disposes and unregisters", taken - warm);
}

/// A type whose key is a string: unbounded, so its key hash is an MD5 (computed on the stack).
#[derive(Clone, Debug, Default)]
struct Named {
    name: String,
    seq: u32,
}

impl detpath_pubsub::types::TopicType for Named {
    const TYPE_NAME: &'static str = "Named";
    const KEYED: bool = true;
    const KEY_MAX_SIZE: Option<usize> = None;
    fn serialize(&self, w: &mut detpath_pubsub::wire::CdrWriter<'_, '_>) -> Result<(), detpath_pubsub::wire::WireError> {
        w.string(&self.name)?;
        w.u32(self.seq)
    }
    fn deserialize_into(&mut self, r: &mut detpath_pubsub::wire::CdrReader<'_>) -> Result<(), detpath_pubsub::wire::WireError> {
        let n = r.string()?;
        self.name.clear();
        self.name.push_str(n);
        self.seq = r.u32()?;
        Ok(())
    }
    fn serialize_key(&self, w: &mut detpath_pubsub::wire::CdrWriter<'_, '_>) -> Result<(), detpath_pubsub::wire::WireError> {
        w.string(&self.name)
    }
    fn key_hash_of(payload: &[u8]) -> Option<[u8; 16]> {
        detpath_pubsub::types::key_hash_from_payload(payload, None, |r, w| w.string(r.string()?))
    }
    fn key_hash_of_key(payload: &[u8]) -> Option<[u8; 16]> {
        Self::key_hash_of(payload)
    }
}

#[test]
fn md5_keyed_instances_with_disposes_allocate_nothing() {
    use detpath_pubsub::qos::Qos;
    const NAMES: [&str; 8] = ["alpha-instance", "bravo-instance", "charlie", "delta", "echo-echo-echo", "foxtrot", "golf", "hotel-instance-long-name"];
    let mut s = [bare(0), bare(1)];
    let proto = Named { name: String::with_capacity(64), seq: 0 };
    let w = s[0].p.create_writer_for("N", Qos::reliable_keep_last(2).with_max_instances(8), &proto).unwrap();
    let r = s[1].p.create_reader_for(1, "N", Qos::reliable_keep_last(1).with_max_instances(8), &proto).unwrap();
    let mut now = 1u64;
    let (mut sample, mut rx) = (proto.clone(), proto.clone());
    let (taken, disposed) = (Cell::new(0u64), Cell::new(0u64));
    let mut run = |s: &mut [Bare; 2], now: &mut u64, iters: u32, watch: bool| {
        WATCH.with(|w| w.set(watch));
        for i in 0..iters {
            *now += 100_000;
            timeouts_bare(s, *now);
            if s[0].p.writer_status(w).matched > 0 {
                sample.seq = i;
                sample.name.clear();
                sample.name.push_str(NAMES[i as usize % 8]);
                let _ = s[0].p.write(*now, &mut s[0].out, w, None, &sample);
                if i % 100 == 50 {
                    let _ = s[0].p.dispose(*now, &mut s[0].out, w, None, &sample);
                }
            }
            pump_bare(s, *now);
            while let Some(info) = s[1].p.take(r, &mut rx).unwrap() {
                taken.set(taken.get() + 1);
                disposed.set(disposed.get() + (info.instance_state == detpath_pubsub::engine::InstanceState::Disposed) as u64);
            }
        }
        WATCH.with(|w| w.set(false));
    };
    run(&mut s, &mut now, 20_000, false);
    let warm = taken.get();
    assert!(warm > 10_000, "samples flow before measuring: {warm}");
    let before = ALLOCS.load(Ordering::Relaxed);
    run(&mut s, &mut now, 20_000, true);
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    let st = s[1].p.reader_status(r);
    assert!(taken.get() - warm >= 19_000);
    assert!(disposed.get() > 0, "disposed instances were seen");
    assert_eq!((st.instances, st.instances_refused, st.lost), (8, 0, 0));
    assert_eq!(allocs, 0, "{allocs} allocations over 8 MD5-keyed instances with disposes");
}

#[test]
fn replaying_a_keyed_history_to_a_late_joiner_walks_what_it_holds() {
    // A transient-local KEEP_LAST 1 writer of two instances: one written
    // once (sn 1), the other 300,000 times. Its history holds two samples,
    // but they are 300,000 sequence numbers apart: matching a late reader
    // must not allocate (nor walk) anything of that size.
    use detpath_pubsub::qos::{Durability, Qos};
    use detpath_pubsub::types::KeyedSeq;
    const WRITES: u32 = 300_000;
    let mut s = [bare(0), bare(1)];
    // The reader's reassembly buffer is sized by max_sample_size (1 MiB by default): keep it out of the measure.
    let cfg = Config { max_sample_size: 1 << 16, ..s[1].p.config().clone() };
    s[1].p = Participant::new(cfg, 1);
    let qos = Qos { durability: Durability::TransientLocal, ..Qos::reliable_keep_last(1).with_max_instances(4) };
    let proto = KeyedSeq::with_size(32);
    let w = s[0].p.create_writer_for("L", qos.clone(), &proto).unwrap();
    let mut now = 1u64;
    for _ in 0..500 {
        now += 1_000_000;
        timeouts_bare(&mut s, now);
        pump_bare(&mut s, now);
    }
    assert_eq!(s[1].p.remote_participants().count(), 1, "discovered");
    let mut sample = KeyedSeq::with_size(32);
    sample.keyval = 1;
    s[0].p.write(now, &mut s[0].out, w, None, &sample).unwrap();
    sample.keyval = 2;
    for i in 0..WRITES {
        sample.seq = i;
        s[0].p.write(now, &mut s[0].out, w, None, &sample).unwrap();
    }
    let r = s[1].p.create_reader_for(now, "L", qos, &proto).unwrap();
    LARGEST.with(|l| l.set(0));
    WATCH_SIZE.with(|w| w.set(true));
    for _ in 0..200 {
        now += 1_000_000;
        timeouts_bare(&mut s, now);
        pump_bare(&mut s, now);
    }
    WATCH_SIZE.with(|w| w.set(false));
    let largest = LARGEST.with(|l| l.get());
    assert_eq!(s[0].p.writer_status(w).matched, 1, "the late reader matched");
    let mut rx = KeyedSeq::with_size(32);
    let first = s[1].p.take(r, &mut rx).unwrap().expect("the replay delivered the first instance's sample");
    assert_eq!((first.sn.0, rx.keyval), (1, 1));
    assert!(largest < 256 * 1024, "matching allocated a block of {largest} bytes");
}

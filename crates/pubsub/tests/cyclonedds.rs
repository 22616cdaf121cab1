//! Keyed topics against CycloneDDS 11 itself (cyclonedds-python from PyPI,
//! `make deps`; its wheel bundles CycloneDDS 11's C library), with types of
//! our own rather than ddsperf's fixed ones: `tests/cyclonedds_peer.py` runs
//! in one testbed namespace, a detpath participant on a datapath in the other,
//! unicast discovery both ways.
//!
//! For a type keyed by one long (key hash = the key) and one keyed by a long
//! and an unbounded string (key hash = MD5 of the key), both directions:
//!
//! - CycloneDDS 11, which announces XTypes type information in SEDP, and
//!   detpath, which announces none, match within 2 s;
//! - KEEP_LAST 3 is per instance: 4 rounds over 4 instances leave rounds 1-3
//!   of each, 12 samples (so both sides sort the samples into the same
//!   instances), and then samples written one at a time each arrive;
//! - a dispose and an unregister reach the other side as the instance state
//!   disposed / no writers of the right instance (detpath's carry the
//!   serialized key, which CycloneDDS needs to find an MD5-hashed instance),
//!   and detpath's key hashes equal the ones computed from the samples.
//!
//! Needs root (namespaces). A missing python3 or cyclonedds package fails
//! the tests with the fix (`make deps`): they are the only proof of this
//! interop, so they do not skip.
#![cfg(feature = "endpoint")]

mod ddsperf;
use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_pubsub::driver::{Node, Transport, TransportOutbox};
use detpath_pubsub::engine::{make_guid_prefix, Config, EngineError, Event, InstanceState, Participant, ReaderId, Undecodable, WriterId};
use detpath_pubsub::qos::{Durability, Qos};
use detpath_pubsub::transport::{EndpointTransport, Wait};
use detpath_pubsub::types::{key_hash_from_payload, TopicType};
use detpath_pubsub::wire::{CdrReader, CdrWriter, WireError};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cyclonedds_peer.py");
const KEYS: i32 = 4;
const ROUNDS: i32 = 4;
const DEPTH: u32 = 3;

/// `detpath::KeyedLong`: `@key long id; long seq;` (the peer's KeyedLong).
#[derive(Clone, Debug, Default, PartialEq)]
struct KeyedLong {
    id: i32,
    seq: i32,
}

impl TopicType for KeyedLong {
    const TYPE_NAME: &'static str = "detpath::KeyedLong";
    const KEYED: bool = true;
    const KEY_MAX_SIZE: Option<usize> = Some(4);
    fn serialize(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.id)?;
        w.i32(self.seq)
    }
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        self.id = r.i32()?;
        self.seq = r.i32()?;
        Ok(())
    }
    fn size_hint(&self) -> usize {
        12
    }
    fn serialize_key(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.id)
    }
    fn key_hash_of(payload: &[u8]) -> Option<[u8; 16]> {
        key_hash_from_payload(payload, Self::KEY_MAX_SIZE, |r, w| w.i32(r.i32()?))
    }
    fn key_hash_of_key(payload: &[u8]) -> Option<[u8; 16]> {
        Self::key_hash_of(payload)
    }
}

/// `detpath::KeyedName`: `@key long site; @key string name; long seq;` (the
/// peer's KeyedName): the key has no bound, so its hash is an MD5.
#[derive(Clone, Debug, Default, PartialEq)]
struct KeyedName {
    site: i32,
    name: String,
    seq: i32,
}

impl TopicType for KeyedName {
    const TYPE_NAME: &'static str = "detpath::KeyedName";
    const KEYED: bool = true;
    const KEY_MAX_SIZE: Option<usize> = None;
    fn serialize(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.site)?;
        w.string(&self.name)?;
        w.i32(self.seq)
    }
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        self.site = r.i32()?;
        let n = r.string()?;
        self.name.clear();
        self.name.push_str(n);
        self.seq = r.i32()?;
        Ok(())
    }
    fn size_hint(&self) -> usize {
        64
    }
    fn serialize_key(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.site)?;
        w.string(&self.name)
    }
    fn key_hash_of(payload: &[u8]) -> Option<[u8; 16]> {
        key_hash_from_payload(payload, Self::KEY_MAX_SIZE, |r, w| {
            w.i32(r.i32()?)?;
            w.string(r.string()?)
        })
    }
    fn key_hash_of_key(payload: &[u8]) -> Option<[u8; 16]> {
        Self::key_hash_of(payload)
    }
}

/// What the tests need of both types: the peer's instance `i` with `seq`, and its key as the peer prints it.
trait PeerType: TopicType + Default + Clone + std::fmt::Debug {
    const PEER_TYPE: &'static str;
    fn make(i: i32, seq: i32) -> Self;
    fn json_key(&self) -> Value;
    fn seq(&self) -> i32;
}

impl PeerType for KeyedLong {
    const PEER_TYPE: &'static str = "long";
    fn make(i: i32, seq: i32) -> Self {
        KeyedLong { id: 1000 + i, seq }
    }
    fn json_key(&self) -> Value {
        Value::from(self.id)
    }
    fn seq(&self) -> i32 {
        self.seq
    }
}

impl PeerType for KeyedName {
    const PEER_TYPE: &'static str = "name";
    fn make(i: i32, seq: i32) -> Self {
        KeyedName { site: i, name: format!("instance-{i}-of-detpath-interop"), seq }
    }
    fn json_key(&self) -> Value {
        serde_json::json!([self.site, self.name])
    }
    fn seq(&self) -> i32 {
        self.seq
    }
}

/// Fails (never skips) when python3 or the cyclonedds package is missing, naming the fix.
fn require_cyclonedds_python() {
    let out = Command::new("python3").args(["-c", "import cyclonedds, importlib.metadata as m; print(m.version('cyclonedds'))"]).output();
    match out {
        Err(e) => panic!("python3 not found ({e}): these tests run CycloneDDS 11 from Python; run `make deps` (installs python3 and the cyclonedds package)"),
        Ok(o) if !o.status.success() => panic!(
            "python package `cyclonedds` (11.0.1, PyPI) missing for python3: run `make deps` (deps/pip-pubsub.txt): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Ok(o) => println!("cyclonedds-python {}", String::from_utf8_lossy(&o.stdout).trim()),
    }
}

/// The Python peer in a namespace, killed (by PID) and its configuration removed when dropped.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    dir: std::path::PathBuf,
    /// Every line seen so far (printed when a test fails).
    seen: Vec<Value>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Peer {
    fn spawn(side: &Side, peer: std::net::Ipv4Addr, args: &[&str]) -> Peer {
        let dir = std::env::temp_dir().join(format!("detpath-cddspy-{}-{}", side.netns, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("cyclonedds.xml");
        // GenerateKeyhash: CycloneDDS's own (C) key hash goes inline with every
        // sample, so detpath's reader compares it with the one it computes.
        let config = ddsperf::udp_config(side, peer).replace("</Domain>", "<Internal><GenerateKeyhash>true</GenerateKeyhash></Internal></Domain>");
        std::fs::write(&cfg, config).unwrap();
        let mut child = Command::new("ip")
            .args(["netns", "exec", &side.netns, "python3", PEER])
            .args(args)
            .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("ip netns exec python3");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                    Err(_) => println!("peer: {line}"),
                }
            }
        });
        let stdin = child.stdin.take();
        Peer { child, stdin, lines, dir, seen: Vec::new() }
    }

    /// The lines that arrived by now.
    fn poll(&mut self) -> Vec<Value> {
        let got: Vec<Value> = self.lines.try_iter().collect();
        for v in &got {
            assert_ne!(v["ev"], "missing", "{}", v["what"]);
        }
        self.seen.extend(got.iter().cloned());
        got
    }

    fn command(&mut self, cmd: &str) {
        let s = self.stdin.as_mut().unwrap();
        writeln!(s, "{cmd}").unwrap();
        s.flush().unwrap();
    }
}

/// A detpath participant on `datapath` in the side's namespace, SPDP to `peer`.
fn participant(side: &Side, datapath: &str, peer: std::net::Ipv4Addr) -> Node<EndpointTransport> {
    let spec = side.uri(datapath, 7410);
    let link = side.run(|| detpath_pubsub::transport::open(&spec)).expect("namespace").unwrap_or_else(|e| panic!("{spec}: {e}"));
    let t = EndpointTransport::on(link, Wait::Block);
    let mut cfg = Config::new(0, make_guid_prefix(0x7f02, std::process::id(), 1), t.local_addr());
    cfg.add_peer(peer, 9);
    cfg.max_datagram = t.max_datagram().min(1472);
    let now = t.now_ns();
    Node::new(Participant::new(cfg, now), t)
}

/// Turns the node (reliability's heartbeats and ACKNACKs) and collects the
/// peer's lines until `done` says so or `limit` passes.
fn run_until(
    node: &mut Node<EndpointTransport>,
    peer: &mut Peer,
    limit: Duration,
    mut done: impl FnMut(&mut Node<EndpointTransport>, &[Value]) -> bool,
) -> bool {
    let t0 = Instant::now();
    loop {
        peer.poll();
        if done(node, &peer.seen) {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        node.turn(2_000_000, |_, _, _| {});
    }
}

/// The CycloneDDS endpoint on `topic` announced XTypes type information (which detpath does not use: matching is by name).
fn assert_type_information(p: &Participant, topic: &str) {
    let theirs: Vec<_> = p.remote_endpoints().filter(|e| e.topic_name == topic).collect();
    assert!(!theirs.is_empty() && theirs.iter().all(|e| e.has_type_information), "CycloneDDS 11's endpoint announces TypeInformation");
}

fn hex(k: Option<[u8; 16]>) -> String {
    k.expect("a keyed type has a key hash").iter().map(|b| format!("{b:02x}")).collect()
}

fn samples(seen: &[Value]) -> Vec<&Value> {
    seen.iter().filter(|v| v["ev"] == "sample").collect()
}

/// detpath writes, CycloneDDS 11 reads.
fn detpath_writer_to_cyclonedds_reader<T: PeerType>(datapath: &str) {
    require_cyclonedds_python();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("cddspy")).expect("testbed up (needs root)");
    let topic = format!("DetpathCdds{}W", T::PEER_TYPE);
    let depth = DEPTH.to_string();
    let mut peer = Peer::spawn(tb.b(), tb.a().addr, &["sub", "--type", T::PEER_TYPE, "--topic", &topic, "--depth", &depth, "--hold", "20", "--duration", "40"]);
    let mut node = participant(tb.a(), datapath, tb.b().addr);
    assert!(run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| s.iter().any(|v| v["ev"] == "ready")), "peer never ready: {:?}", peer.seen);
    let t0 = Instant::now();
    let w: WriterId = node.participant.create_writer_for(&topic, Qos::reliable_keep_last(DEPTH), &T::make(0, 0)).unwrap();
    let matched =
        run_until(&mut node, &mut peer, Duration::from_secs(5), |n, s| n.participant.writer_status(w).matched > 0 && s.iter().any(|v| v["ev"] == "matched"));
    let took = t0.elapsed();
    assert!(matched, "no match with CycloneDDS 11 within 5 s: {:?} {:?}", node.participant.counters(), peer.seen);
    assert!(took < Duration::from_secs(2), "CycloneDDS 11 (XTypes type information in its SEDP) matched after {took:?}");
    println!("{datapath} {}: matched in {took:?}", T::TYPE_NAME);
    assert_type_information(&node.participant, &topic);
    // Rounds 0..4 over 4 instances before the peer takes anything: KEEP_LAST 3 per instance keeps rounds 1..=3.
    let write = |node: &mut Node<EndpointTransport>, s: &T| {
        let now = node.transport.now_ns();
        let (p, t) = (&mut node.participant, &mut node.transport);
        p.write(now, &mut TransportOutbox(t), w, None, s).unwrap();
    };
    for r in 0..ROUNDS {
        for i in 0..KEYS {
            write(&mut node, &T::make(i, r * 100 + i));
        }
    }
    // Once CycloneDDS acknowledged everything, its cache holds what it will: let it take.
    let acked = run_until(&mut node, &mut peer, Duration::from_secs(10), |n, _| n.participant.writer_status(w).unacknowledged == 0);
    assert!(acked, "CycloneDDS did not acknowledge: {:?}", node.participant.writer_status(w));
    peer.command("take");
    assert!(run_until(&mut node, &mut peer, Duration::from_secs(10), |_, s| s.iter().any(|v| v["ev"] == "taken")), "peer never took: {:?}", peer.seen);
    let got = samples(&peer.seen);
    let mut pairs: Vec<(String, i64)> = got.iter().map(|v| (v["key"].to_string(), v["seq"].as_i64().unwrap_or(-1))).collect();
    pairs.sort();
    let mut want: Vec<(String, i64)> =
        (0..KEYS).flat_map(|i| (ROUNDS - DEPTH as i32..ROUNDS).map(move |r| (T::make(i, 0).json_key().to_string(), (r * 100 + i) as i64))).collect();
    want.sort();
    assert_eq!(pairs, want, "the last {DEPTH} samples of each of the {KEYS} instances");
    assert!(got.iter().all(|v| v["valid"] == true && v["state"] == "alive"));
    for i in 0..KEYS {
        let s = T::make(i, 0);
        let theirs: Vec<&Value> = got.iter().filter(|v| v["key"] == s.json_key()).map(|v| &v["kh"]).collect();
        let ours = hex(s.key_hash());
        assert!(theirs.iter().all(|kh| kh.as_str() == Some(ours.as_str())), "instance {i}: detpath's key hash equals CycloneDDS's: {theirs:?}");
    }
    // One at a time now: every sample arrives.
    for k in 0..10 {
        let s = T::make(2, 1000 + k);
        write(&mut node, &s);
        let n = samples(&peer.seen).len() + 1;
        assert!(run_until(&mut node, &mut peer, Duration::from_secs(5), |_, s| samples(s).len() >= n), "sample {k} not seen: {:?}", peer.seen);
        let last = *samples(&peer.seen).last().unwrap();
        assert_eq!((last["key"].clone(), last["seq"].as_i64()), (s.json_key(), Some(1000 + k as i64)));
    }
    // Dispose instance 0, unregister instance 1.
    let now = node.transport.now_ns();
    let (p, t) = (&mut node.participant, &mut node.transport);
    p.dispose(now, &mut TransportOutbox(&mut *t), w, None, &T::make(0, 0)).unwrap();
    p.unregister(now, &mut TransportOutbox(t), w, None, &T::make(1, 0)).unwrap();
    let n = samples(&peer.seen).len() + 2;
    let arrived = run_until(&mut node, &mut peer, Duration::from_secs(5), |_, s| samples(s).len() >= n);
    let tail: Vec<&Value> = samples(&peer.seen).into_iter().skip(n - 2).collect();
    println!("{:?}", node.participant.counters());
    assert!(arrived, "dispose and unregister not seen by CycloneDDS: {:?}", peer.seen);
    let find = |i: i32| tail.iter().find(|v| v["key"] == T::make(i, 0).json_key()).unwrap_or_else(|| panic!("instance {i} not in {tail:?}"));
    assert_eq!((find(0)["valid"].clone(), find(0)["state"].clone()), (Value::Bool(false), Value::from("disposed")));
    assert_eq!((find(1)["valid"].clone(), find(1)["state"].clone()), (Value::Bool(false), Value::from("no_writers")));
}

/// CycloneDDS 11 writes, detpath reads.
fn cyclonedds_writer_to_detpath_reader<T: PeerType>(datapath: &str) {
    require_cyclonedds_python();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("cddspy")).expect("testbed up (needs root)");
    let topic = format!("DetpathCdds{}R", T::PEER_TYPE);
    let (depth, keys, rounds) = (DEPTH.to_string(), KEYS.to_string(), ROUNDS.to_string());
    let args = ["pub", "--type", T::PEER_TYPE, "--topic", &topic, "--depth", &depth, "--keys", &keys, "--rounds", &rounds, "--duration", "40"];
    let mut peer = Peer::spawn(tb.b(), tb.a().addr, &args);
    let mut node = participant(tb.a(), datapath, tb.b().addr);
    assert!(run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| s.iter().any(|v| v["ev"] == "ready")), "peer never ready: {:?}", peer.seen);
    let t0 = Instant::now();
    let now = node.transport.now_ns();
    let r: ReaderId = node.participant.create_reader_for(now, &topic, Qos::reliable_keep_last(DEPTH), &T::make(0, 0)).unwrap();
    let matched =
        run_until(&mut node, &mut peer, Duration::from_secs(5), |n, s| n.participant.reader_status(r).matched > 0 && s.iter().any(|v| v["ev"] == "matched"));
    let took = t0.elapsed();
    assert!(matched, "no match with CycloneDDS 11 within 5 s: {:?} {:?}", node.participant.counters(), peer.seen);
    assert!(took < Duration::from_secs(2), "CycloneDDS 11 (XTypes type information in its SEDP) matched after {took:?}");
    println!("{datapath} {}: matched in {took:?}", T::TYPE_NAME);
    assert_type_information(&node.participant, &topic);
    // Everything written and acknowledged by us (so in our cache, or replaced there) before we take.
    let ok = run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| s.iter().any(|v| v["ev"] == "wrote"));
    assert!(ok, "the peer did not write: {:?} {:?}", node.participant.reader_status(r), peer.seen);
    let wrote = peer.seen.iter().find(|v| v["ev"] == "wrote").unwrap().clone();
    assert_eq!(wrote["acked"], true, "CycloneDDS's writer saw everything acknowledged: {:?}", node.participant.reader_status(r));
    for i in 0..KEYS {
        assert_eq!(wrote["kh"][i as usize], Value::from(hex(T::make(i, 0).key_hash())), "instance {i}: detpath's key hash equals CycloneDDS's");
    }
    let mut rx = T::default();
    let mut got = Vec::new();
    let inline = node.participant.reader_status(r).key_hashes_inline;
    assert!(inline > 0, "CycloneDDS sent no key hash inline (GenerateKeyhash): nothing to compare with");
    while let Some(info) = node.participant.take(r, &mut rx).unwrap() {
        assert!(info.valid_data && info.instance_state == InstanceState::Alive);
        assert_eq!(info.key_hash, rx.key_hash(), "CycloneDDS's inline key hash equals the one detpath computes from the sample");
        got.push((rx.json_key().to_string(), rx.seq()));
    }
    got.sort();
    let mut want: Vec<(String, i32)> =
        (0..KEYS).flat_map(|i| (ROUNDS - DEPTH as i32..ROUNDS).map(move |r| (T::make(i, 0).json_key().to_string(), r * 100 + i))).collect();
    want.sort();
    assert_eq!(got, want, "the last {DEPTH} samples of each of the {KEYS} instances: {:?}", node.participant.reader_status(r));
    // One at a time: every sample arrives.
    for k in 0..10 {
        peer.command(&format!("write 2 {}", 1000 + k));
        let arrived = run_until(&mut node, &mut peer, Duration::from_secs(5), |n, _| n.participant.reader_status(r).waiting > 0);
        assert!(arrived, "sample {k} not received: {:?}", node.participant.reader_status(r));
        let info = node.participant.take(r, &mut rx).unwrap().unwrap();
        assert_eq!((rx.json_key(), rx.seq(), info.key_hash), (T::make(2, 0).json_key(), 1000 + k, T::make(2, 0).key_hash()));
    }
    // CycloneDDS disposes instance 0 and unregisters instance 1.
    peer.command("dispose 0");
    peer.command("unregister 1");
    let arrived = run_until(&mut node, &mut peer, Duration::from_secs(5), |n, _| n.participant.reader_status(r).waiting >= 2);
    assert!(arrived, "dispose and unregister not received: {:?} {:?}", node.participant.reader_status(r), node.participant.counters());
    let mut states = Vec::new();
    while let Some(info) = node.participant.take(r, &mut rx).unwrap() {
        states.push((info.valid_data, info.key_hash, info.instance_state));
    }
    let (k0, k1) = (T::make(0, 0).key_hash(), T::make(1, 0).key_hash());
    assert!(states.contains(&(false, k0, InstanceState::Disposed)), "instance 0 disposed: {states:?}");
    assert!(states.contains(&(false, k1, InstanceState::NoWriters)), "instance 1 without writers: {states:?}");
    assert_eq!(node.participant.instance_state(r, k0.as_ref().unwrap()), Some(InstanceState::Disposed));
    assert_eq!(node.participant.instance_state(r, k1.as_ref().unwrap()), Some(InstanceState::NoWriters));
    assert_eq!(node.participant.instance_state(r, T::make(2, 0).key_hash().as_ref().unwrap()), Some(InstanceState::Alive));
}

/// `detpath::KeyedLong` as a reader that expects another layout of it (a
/// third member the peer's type does not have).
#[derive(detpath_pubsub::TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "detpath::KeyedLong")]
struct KeyedLongPlus {
    #[key]
    id: i32,
    seq: i32,
    stamp: i64,
}

/// The undecodable-type events so far: (writer, type name, why).
fn undecodable_events(p: &mut Participant) -> Vec<(detpath_pubsub::wire::Guid, String, Undecodable)> {
    std::iter::from_fn(|| p.poll_event())
        .filter_map(|e| match e {
            Event::UndecodableType { writer, type_name, why, .. } => Some((writer, type_name, why)),
            _ => None,
        })
        .collect()
}

/// CycloneDDS 11 writes `detpath::KeyedLong` (two longs); detpath's reader
/// of that name expects a third member: every sample is counted
/// undecodable and dropped, the writer is reported once by its type name,
/// nothing crashes, and the reader keeps taking later samples.
#[test]
fn cyclonedds_writer_of_another_layout_is_counted_and_reported_once_udp() {
    require_cyclonedds_python();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("cddspy")).expect("testbed up (needs root)");
    let topic = "DetpathCddsLayout";
    let args = ["pub", "--type", "long", "--topic", topic, "--depth", "3", "--keys", "2", "--rounds", "2", "--duration", "40"];
    let mut peer = Peer::spawn(tb.b(), tb.a().addr, &args);
    let mut node = participant(tb.a(), "udp", tb.b().addr);
    assert!(run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| s.iter().any(|v| v["ev"] == "ready")), "peer never ready: {:?}", peer.seen);
    let now = node.transport.now_ns();
    let r = node.participant.create_reader_for(now, topic, Qos::reliable_keep_last(3), &KeyedLongPlus::default()).unwrap();
    let wrote = run_until(&mut node, &mut peer, Duration::from_secs(15), |n, s| {
        s.iter().any(|v| v["ev"] == "wrote") && n.participant.reader_status(r).waiting >= 4
    });
    assert!(wrote, "the peer's 4 samples did not arrive: {:?} {:?}", node.participant.reader_status(r), peer.seen);
    let writer = node.participant.remote_endpoints().find(|e| e.topic_name == topic && e.is_writer()).expect("the peer's writer").guid;
    let mut rx = KeyedLongPlus::default();
    let mut take_all = |node: &mut Node<EndpointTransport>| {
        let mut errors = 0;
        loop {
            match node.participant.take(r, &mut rx) {
                Ok(Some(_)) => panic!("a sample of another layout decoded: {rx:?}"),
                Ok(None) => return errors,
                Err(e) => {
                    assert_eq!(e, EngineError::Deserialize(WireError::Truncated));
                    errors += 1;
                }
            }
        }
    };
    assert_eq!(take_all(&mut node), 4);
    assert_eq!(node.participant.reader_status(r).undecodable, 4);
    let evs = undecodable_events(&mut node.participant);
    assert_eq!(evs, [(writer, "detpath::KeyedLong".to_string(), Undecodable::Layout(WireError::Truncated))], "reported once, by name");
    // Later samples: counted, not reported again.
    for k in 0..3 {
        peer.command(&format!("write 1 {}", 1000 + k));
        let arrived = run_until(&mut node, &mut peer, Duration::from_secs(5), |n, _| n.participant.reader_status(r).waiting > 0);
        assert!(arrived, "sample {k} not received: {:?}", node.participant.reader_status(r));
        assert_eq!(take_all(&mut node), 1);
    }
    assert_eq!(node.participant.reader_status(r).undecodable, 7);
    assert_eq!(undecodable_events(&mut node.participant), []);
}

/// CycloneDDS 11 writes `detpath::KeyedName` on the topic of a detpath
/// reader of `detpath::KeyedLong`: not matched, and reported once by the
/// name it announced.
#[test]
fn cyclonedds_writer_of_another_type_name_is_reported_once_udp() {
    require_cyclonedds_python();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("cddspy")).expect("testbed up (needs root)");
    let topic = "DetpathCddsOtherName";
    let mut peer = Peer::spawn(tb.b(), tb.a().addr, &["pub", "--type", "name", "--topic", topic, "--duration", "30"]);
    let mut node = participant(tb.a(), "udp", tb.b().addr);
    assert!(run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| s.iter().any(|v| v["ev"] == "ready")), "peer never ready: {:?}", peer.seen);
    let now = node.transport.now_ns();
    let r = node.participant.create_reader_for(now, topic, Qos::reliable_keep_last(3), &KeyedLong::default()).unwrap();
    let mut evs = Vec::new();
    let seen = run_until(&mut node, &mut peer, Duration::from_secs(10), |n, _| {
        evs.extend(undecodable_events(&mut n.participant));
        !evs.is_empty()
    });
    assert!(seen, "no report of the peer's writer: {:?}", node.participant.counters());
    let writer = node.participant.remote_endpoints().find(|e| e.topic_name == topic && e.is_writer()).expect("the peer's writer").guid;
    // A while longer (CycloneDDS announces again): still reported once.
    run_until(&mut node, &mut peer, Duration::from_secs(3), |n, _| {
        evs.extend(undecodable_events(&mut n.participant));
        false
    });
    assert_eq!(evs, [(writer, "detpath::KeyedName".to_string(), Undecodable::OtherTypeName)]);
    assert_eq!(node.participant.reader_status(r).matched, 0);
}

/// The `seq`s of the samples the peer printed, in order.
fn peer_seqs(seen: &[Value]) -> Vec<i64> {
    samples(seen).iter().filter_map(|v| v["seq"].as_i64()).collect()
}

/// A transient-local detpath writer writes 5 samples before CycloneDDS 11
/// runs at all; CycloneDDS's transient-local reader, a late joiner, gets
/// them (the history replayed, in order), then a new one.
#[test]
fn transient_local_detpath_writer_serves_a_late_cyclonedds_reader_udp() {
    require_cyclonedds_python();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("cddspy")).expect("testbed up (needs root)");
    let topic = "DetpathCddsLateW";
    let mut node = participant(tb.a(), "udp", tb.b().addr);
    let tl = Qos { durability: Durability::TransientLocal, ..Qos::reliable_keep_last(8) };
    let w = node.participant.create_writer_for(topic, tl, &KeyedLong::default()).unwrap();
    let write = |node: &mut Node<EndpointTransport>, seq: i32| {
        let now = node.transport.now_ns();
        let (p, t) = (&mut node.participant, &mut node.transport);
        p.write(now, &mut TransportOutbox(t), w, None, &KeyedLong::make(0, seq)).unwrap();
    };
    for seq in 0..5 {
        write(&mut node, seq);
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(300) {
        node.turn(2_000_000, |_, _, _| {});
    }
    assert_eq!(node.participant.writer_status(w).matched, 0, "nobody to match yet");
    let args = ["sub", "--type", "long", "--topic", topic, "--depth", "8", "--durability", "transient-local", "--duration", "30"];
    let mut peer = Peer::spawn(tb.b(), tb.a().addr, &args);
    let got = run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| peer_seqs(s).len() >= 5);
    assert!(got, "the late reader did not get the history: {:?} {:?}", node.participant.writer_status(w), peer.seen);
    assert_eq!(peer_seqs(&peer.seen), [0, 1, 2, 3, 4], "the history, in order");
    write(&mut node, 5);
    let got = run_until(&mut node, &mut peer, Duration::from_secs(5), |_, s| peer_seqs(s).len() >= 6);
    assert!(got, "a sample after the history: {:?}", peer.seen);
    assert_eq!(peer_seqs(&peer.seen), [0, 1, 2, 3, 4, 5]);
}

/// CycloneDDS 11's transient-local writer writes 5 samples before any
/// reader exists; detpath's transient-local reader, created afterwards,
/// gets them in order (and a volatile reader created with it, in the same
/// participant, does not: CycloneDDS resends the history to the
/// participant, and the volatile reader starts after what its first
/// heartbeat named).
#[test]
fn transient_local_cyclonedds_writer_serves_a_late_detpath_reader_udp() {
    require_cyclonedds_python();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("cddspy")).expect("testbed up (needs root)");
    let topic = "DetpathCddsLateR";
    let args = ["pub", "--type", "long", "--topic", topic, "--depth", "8", "--keys", "1", "--rounds", "5"];
    let args = [&args[..], &["--durability", "transient-local", "--write-first", "--duration", "30"]].concat();
    let mut peer = Peer::spawn(tb.b(), tb.a().addr, &args);
    let mut node = participant(tb.a(), "udp", tb.b().addr);
    let written = run_until(&mut node, &mut peer, Duration::from_secs(15), |_, s| s.iter().any(|v| v["ev"] == "written"));
    assert!(written, "the peer did not write: {:?}", peer.seen);
    let now = node.transport.now_ns();
    let tl = Qos { durability: Durability::TransientLocal, ..Qos::reliable_keep_last(8) };
    let r = node.participant.create_reader_for(now, topic, tl, &KeyedLong::default()).unwrap();
    let v = node.participant.create_reader_for(now, topic, Qos::reliable_keep_last(8), &KeyedLong::default()).unwrap();
    let got = run_until(&mut node, &mut peer, Duration::from_secs(10), |n, _| n.participant.reader_status(r).waiting >= 5);
    assert!(got, "the late reader did not get the history: {:?} {:?}", node.participant.reader_status(r), peer.seen);
    let mut rx = KeyedLong::default();
    let mut seqs = Vec::new();
    while let Some(info) = node.participant.take(r, &mut rx).unwrap() {
        assert!(info.valid_data);
        seqs.push(rx.seq);
    }
    assert_eq!(seqs, [0, 100, 200, 300, 400], "the history, in order");
    // Give the resends for the transient-local reader time to reach the volatile one too.
    run_until(&mut node, &mut peer, Duration::from_millis(500), |_, _| false);
    assert!(node.participant.reader_status(v).matched > 0, "the volatile reader matched too");
    assert_eq!(node.participant.take(v, &mut rx).unwrap(), None, "a volatile reader gets no history");
    assert_eq!(node.participant.reader_status(v).lost, 0, "nor counts it lost");
}

#[test]
fn detpath_writer_cyclonedds_reader_long_key_udp() {
    detpath_writer_to_cyclonedds_reader::<KeyedLong>("udp");
}

#[test]
fn detpath_writer_cyclonedds_reader_md5_key_udp() {
    detpath_writer_to_cyclonedds_reader::<KeyedName>("udp");
}

#[test]
fn cyclonedds_writer_detpath_reader_long_key_udp() {
    cyclonedds_writer_to_detpath_reader::<KeyedLong>("udp");
}

#[test]
fn cyclonedds_writer_detpath_reader_md5_key_udp() {
    cyclonedds_writer_to_detpath_reader::<KeyedName>("udp");
}

#[test]
fn detpath_writer_cyclonedds_reader_md5_key_afxdp() {
    detpath_writer_to_cyclonedds_reader::<KeyedName>("afxdp");
}

#[test]
fn cyclonedds_writer_detpath_reader_md5_key_afxdp() {
    cyclonedds_writer_to_detpath_reader::<KeyedName>("afxdp");
}

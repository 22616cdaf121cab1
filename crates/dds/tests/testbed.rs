//! The application API in the two-namespace testbed, as a user meets it:
//!
//! - the hello world (examples/dds/hello_pub.rs, hello_sub.rs) run as
//!   programs, one per namespace, over udp and afxdp: ten greetings arrive;
//! - typed and raw writers and readers in one process (participants in both
//!   namespaces): samples both ways, read keeps and take removes, a waiting
//!   take wakes on arrival, matched statuses, a reader of another layout
//!   under the same type name counts what it cannot decode, and a sample
//!   above the writer's limit is refused naming the limit;
//! - CycloneDDS 11 (the `cyclonedds` Python package, tests/cyclone_hello.py)
//!   with the same type, both ways;
//! - a reader dropped while a detpath or CycloneDDS writer runs: the
//!   writer's matched count drops (SEDP dispose), and a new reader matches again.
//!
//! Needs root (namespaces, XDP). A missing cyclonedds package fails with the
//! fix (`make deps`) under CI=true, else says SKIP.

#[path = "../../../examples/dds/hello_type.rs"]
mod hello_type;

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_dds::cdr::{CdrReader, CdrWriter, TopicType, WireError};
use detpath_dds::{DataReader, DataWriter, DomainParticipant, Error, ParticipantOptions, Qos, Topic};
use hello_type::Hello;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
const PORT: u16 = 7410;

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/testbed-<hash> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    let p = exe.parent().unwrap().parent().unwrap().join("examples").join(name);
    assert!(p.exists(), "{} not built (cargo test builds the examples)", p.display());
    p
}

fn run_in(side: &Side, program: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new("ip").args(["netns", "exec", &side.netns]).arg(program).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("ip netns exec")
}

fn hello_world(datapath: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("dds")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let sub = run_in(b, &example("hello_sub"), &[&b.uri(datapath, PORT), &a.addr.to_string()]);
    let publisher = run_in(a, &example("hello_pub"), &[&a.uri(datapath, PORT), &b.addr.to_string()]);
    let sub = sub.wait_with_output().unwrap();
    let publisher = publisher.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&sub.stdout);
    println!("{datapath} sub:\n{out}{}", String::from_utf8_lossy(&sub.stderr));
    println!("{datapath} pub: {}", String::from_utf8_lossy(&publisher.stderr));
    assert!(sub.status.success(), "hello_sub over {datapath} failed");
    assert!(publisher.status.success(), "hello_pub over {datapath} failed");
    let lines: Vec<&str> = out.lines().collect();
    let want: Vec<String> = (0..10).map(|i| format!("1 {i}: hello world {i}")).collect();
    assert_eq!(lines, want, "every greeting, in order, over {datapath}");
}

#[test]
fn hello_world_over_udp() {
    hello_world("udp");
}

#[test]
fn hello_world_over_afxdp() {
    hello_world("afxdp");
}

fn participant(side: &Side, datapath: &str, peer: &Side) -> DomainParticipant {
    let opts = ParticipantOptions { netns: Some(side.netns.clone()), ..Default::default() };
    DomainParticipant::with_options(0, &side.uri(datapath, PORT), &[&peer.addr.to_string()], opts).unwrap_or_else(|e| panic!("participant on {datapath}: {e}"))
}

fn until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < end, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `hello::Hello` as another program might lay it out: `@key long id;
/// unsigned long long stamp; string text;`: its reader cannot decode Hello's samples.
#[derive(Clone, Debug, Default)]
struct OtherHello {
    id: i32,
    stamp: u64,
    text: String,
}

impl TopicType for OtherHello {
    const TYPE_NAME: &'static str = "hello::Hello";
    const KEYED: bool = true;
    fn serialize(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.id)?;
        w.u64(self.stamp)?;
        w.string(&self.text)
    }
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        (self.id, self.stamp, self.text) = (r.i32()?, r.u64()?, r.string()?.to_string());
        Ok(())
    }
}

#[test]
fn typed_and_raw_endpoints_statuses_and_bad_input() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("dds")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let pa = participant(a, "udp", b);
    let pb = participant(b, "udp", a);
    let qos = Qos::new().reliable().keep_all();
    let w = DataWriter::new(&pa, &Topic::<Hello>::new(&pa, "Greetings"), &qos.clone().with(detpath_dds::Policy::MaxSampleSize(1000))).unwrap();
    let r = DataReader::new(&pb, &Topic::<Hello>::new(&pb, "Greetings"), &qos).unwrap();
    let other = DataReader::new(&pb, &Topic::<OtherHello>::new(&pb, "Greetings"), &qos).unwrap();
    let raw = pb.create_raw_reader("Greetings", "hello::Hello", true, &qos).unwrap();
    until("the writer matches three readers", Duration::from_secs(5), || w.status().unwrap().matched_subscriptions == 3);
    until("the readers match", Duration::from_secs(5), || r.status().unwrap().matched_publications == 1 && raw.status().unwrap().matched_publications == 1);

    // A waiting take sleeps until the sample is there.
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        w.write(&Hello { id: 7, count: 1, text: "one".into() }).unwrap();
        w
    });
    let got = r.take_timeout(10, Duration::from_secs(5)).unwrap();
    let waited = t0.elapsed();
    let w = writer.join().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].0.id, got[0].0.count, got[0].0.text.as_str()), (7, 1, "one"));
    assert!(waited >= Duration::from_millis(250), "returned before the write: {waited:?}");
    assert_eq!(got[0].1.key_hash, Some([0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));

    // read keeps, take removes.
    assert!(!r.wait_for_data(Duration::from_millis(50)).unwrap(), "nothing waits");
    w.write(&Hello { id: 7, count: 2, text: "two".into() }).unwrap();
    assert!(r.wait_for_data(Duration::from_secs(5)).unwrap(), "the wait wakes on sample 2");
    assert_eq!(r.read_unread(10).unwrap()[0].0.count, 2);
    assert!(r.read_unread(10).unwrap().is_empty(), "read once: no longer NOT_READ");
    assert_eq!(r.read(10).unwrap().len(), 1, "read leaves the sample");
    assert_eq!(r.take(10).unwrap()[0].0.count, 2);
    assert!(r.take(10).unwrap().is_empty());

    // The raw reader has the same bytes with their encapsulation header.
    until("raw samples", Duration::from_secs(5), || raw.read(10).unwrap().len() == 2);
    let samples = raw.take(10).unwrap();
    assert_eq!(samples[0].0[..2], [0, 1], "CDR little-endian header");
    assert_eq!(samples[1].0.len(), 4 + 4 + 4 + 4 + 4, "header, id, count, string length, \"two\\0\"");

    // The reader of another layout decodes nothing and counts it; it does not crash.
    until("the other layout's samples", Duration::from_secs(5), || other.status().unwrap().detail.waiting == 2);
    assert!(other.take(10).unwrap().is_empty());
    assert_eq!(other.status().unwrap().undecodable, 2);
    assert_eq!(r.status().unwrap().undecodable, 0);

    // Above the writer's limit: refused, naming it; nothing sent.
    let e = w.write(&Hello { id: 7, count: 3, text: "x".repeat(2000) }).unwrap_err();
    assert!(matches!(e, Error::SampleTooLarge { limit: 1000, .. }), "{e}");
    assert!(e.to_string().contains("max_sample_size of 1000 bytes"), "{e}");

    // Raw writer on a, typed reader on b (the seam of the C and Python bindings).
    let rw = pa.create_raw_writer("Greetings", "hello::Hello", true, &qos).unwrap();
    until("the raw writer matches", Duration::from_secs(5), || rw.status().unwrap().matched_subscriptions == 3);
    let payload = [&[0u8, 1, 0, 0][..], &9i32.to_le_bytes(), &4u32.to_le_bytes(), &3u32.to_le_bytes(), b"hi\0"].concat();
    rw.write(&payload, Some([0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])).unwrap();
    let got = r.take_timeout(10, Duration::from_secs(5)).unwrap();
    assert_eq!((got[0].0.id, got[0].0.count, got[0].0.text.as_str()), (9, 4, "hi"));
    let e = rw.write(&[1, 2], None).unwrap_err();
    assert!(e.to_string().contains("encapsulation header"), "{e}");

    // Dispose reaches the reader as the instance disposed.
    w.dispose(&Hello { id: 7, ..Default::default() }).unwrap();
    let got = r.take_timeout(10, Duration::from_secs(5)).unwrap();
    assert!(!got[0].1.valid_data);
    assert_eq!(got[0].1.instance_state, detpath_dds::InstanceState::Disposed);
    assert_eq!(pa.counters().unwrap().rx_malformed, 0);
    assert_eq!(r.status().unwrap().lost, 0);
}

fn cyclone_python_missing() -> Option<String> {
    let ok = Command::new("python3").args(["-c", "import cyclonedds"]).output().map(|o| o.status.success()).unwrap_or(false);
    if ok {
        return None;
    }
    let why = "python3 package `cyclonedds` (11.0.1) missing: run `make deps` (deps/pip-pubsub.txt)".to_string();
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    Some(why)
}

fn cyclone_peer(side: &Side, peer: std::net::Ipv4Addr, args: &[&str]) -> (std::process::Child, PathBuf) {
    let dir = std::env::temp_dir().join(format!("detpath-dds-cdds-{}-{}", side.netns, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("cyclonedds.xml");
    let xml = format!(
        r#"<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface name="{}"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><Peers><Peer Address="{peer}"/></Peers></Discovery></Domain></CycloneDDS>"#,
        side.iface
    );
    std::fs::write(&cfg, xml).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &side.netns, "python3", concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cyclone_hello.py")])
        .args(args)
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("ip netns exec python3");
    (child, dir)
}

#[test]
fn cyclonedds_python_with_the_same_type_both_ways() {
    let missing = cyclone_python_missing();
    if !detpath_testkit::need("cyclonedds_python_with_the_same_type_both_ways", "the cyclonedds Python package", missing.is_none(), &missing.unwrap_or_default()) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("dds")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    // detpath's hello_pub -> CycloneDDS.
    let (sub, dir) = cyclone_peer(b, a.addr, &["sub", "10"]);
    let publisher = run_in(a, &example("hello_pub"), &[&a.uri("udp", PORT), &b.addr.to_string()]);
    let sub = sub.wait_with_output().unwrap();
    let publisher = publisher.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&sub.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    println!("cyclonedds sub: {lines:?}\nhello_pub: {}", String::from_utf8_lossy(&publisher.stderr));
    assert!(sub.status.success() && publisher.status.success(), "cyclonedds sub or hello_pub failed");
    let got: Vec<(i64, String)> = lines.iter().map(|v| (v["count"].as_i64().unwrap(), v["text"].as_str().unwrap().to_string())).collect();
    assert_eq!(got, (0..10).map(|i| (i, format!("hello world {i}"))).collect::<Vec<_>>());

    // CycloneDDS -> detpath's DataReader.
    let dp = participant(a, "udp", b);
    let reader = DataReader::new(&dp, &Topic::<Hello>::new(&dp, "HelloWorld"), &Qos::new().reliable().transient_local().keep_last(10)).unwrap();
    let (mut publisher, dir) = cyclone_peer(b, a.addr, &["pub", "10"]);
    let mut got = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    while got.len() < 10 && Instant::now() < end {
        for (s, info) in reader.take_timeout(10, Duration::from_secs(1)).unwrap() {
            if info.valid_data {
                got.push((s.id, s.count, s.text));
            }
        }
    }
    let out = BufReader::new(publisher.stdout.take().unwrap()).lines().map_while(Result::ok).collect::<Vec<_>>();
    let _ = publisher.wait();
    let _ = std::fs::remove_dir_all(&dir);
    println!("cyclonedds pub: {out:?}");
    assert_eq!(got, (0..10).map(|i| (2, i, format!("hello from cyclonedds {i}"))).collect::<Vec<_>>());
    assert_eq!(reader.status().unwrap().undecodable, 0);
    assert_eq!(dp.counters().unwrap().rx_malformed, 0);
}

#[test]
fn a_dropped_reader_unmatches_a_detpath_writer() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("dds")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let pa = participant(a, "udp", b);
    let pb = participant(b, "udp", a);
    let qos = Qos::new().reliable().keep_last(10);
    let w = DataWriter::new(&pa, &Topic::<Hello>::new(&pa, "Greetings"), &qos).unwrap();
    let r = DataReader::new(&pb, &Topic::<Hello>::new(&pb, "Greetings"), &qos).unwrap();
    let raw = pb.create_raw_reader("Greetings", "hello::Hello", true, &qos).unwrap();
    until("the writer matches both readers", Duration::from_secs(5), || w.status().unwrap().matched_subscriptions == 2);
    w.write(&Hello { id: 1, count: 1, text: "before".into() }).unwrap();
    until("the raw reader has the sample", Duration::from_secs(5), || raw.read(1).unwrap().len() == 1);
    drop(raw);
    until("the writer unmatches the dropped reader", Duration::from_secs(5), || w.status().unwrap().matched_subscriptions == 1);
    assert_eq!(w.status().unwrap().unmatched, 1, "one reader went away");
    // The writer keeps going for the reader that stays; a new reader (in the dropped one's slot) matches.
    w.write(&Hello { id: 1, count: 2, text: "after".into() }).unwrap();
    let counts: Vec<u32> = std::iter::from_fn(|| Some(r.take_timeout(10, Duration::from_secs(2)).unwrap())).take_while(|g| !g.is_empty()).flatten().map(|(s, _)| s.count).take(2).collect();
    assert_eq!(counts, [1, 2]);
    let again = pb.create_raw_reader("Greetings", "hello::Hello", true, &qos).unwrap();
    until("the writer matches the new reader", Duration::from_secs(5), || w.status().unwrap().matched_subscriptions == 2);
    drop(r);
    until("the writer unmatches the dropped typed reader", Duration::from_secs(5), || w.status().unwrap().matched_subscriptions == 1);
    assert_eq!(again.status().unwrap().matched_publications, 1);
    assert_eq!(pa.counters().unwrap().rx_malformed + pb.counters().unwrap().rx_malformed, 0);
}

#[test]
fn a_dropped_reader_unmatches_a_cyclonedds_writer() {
    let missing = cyclone_python_missing();
    if !detpath_testkit::need("a_dropped_reader_unmatches_a_cyclonedds_writer", "the cyclonedds Python package", missing.is_none(), &missing.unwrap_or_default()) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tb = Testbed::up(TestbedConfig::unique("dds")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let dp = participant(a, "udp", b);
    let reader = DataReader::new(&dp, &Topic::<Hello>::new(&dp, "HelloWorld"), &Qos::new().reliable().transient_local().keep_last(10)).unwrap();
    let (mut watch, dir) = cyclone_peer(b, a.addr, &["watch", "1"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let out = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let matched_now = |want: u64| {
        let end = Instant::now() + Duration::from_secs(30);
        while let Ok(line) = rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            println!("cyclonedds writer: {line}");
            if serde_json::from_str::<serde_json::Value>(&line).is_ok_and(|v| v["n"].as_u64() == Some(want)) {
                return true;
            }
        }
        false
    };
    let matched = matched_now(1);
    let got = reader.take_timeout(10, Duration::from_secs(5)).unwrap();
    drop(reader);
    let unmatched = matched && matched_now(0);
    let status = watch.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matched, "the CycloneDDS writer never matched the reader");
    assert!(got.iter().any(|(s, _)| s.text == "watching"), "samples from CycloneDDS: {got:?}");
    assert!(unmatched, "the CycloneDDS writer did not unmatch the dropped reader");
    assert!(status.success(), "cyclone_hello.py watch: {status}");
}

//! `detpath echo <spec>`: an echo server on any datapath, like `sockperf
//! server`: every datagram goes back to its sender over the same endpoint.
//! Prints the obtained capabilities first, the counters when stopped.
//!
//! A reply that cannot be sent (its source is off-link or does not answer
//! ARP, the ring is full, ...) concerns that datagram only: the endpoint
//! counts it by cause (`tx_no_route`, `tx_no_neigh`, `tx_ring_full`,
//! `tx_errors`) and the server goes on. Only an error of the endpoint
//! itself (the interface went away) ends it, with that error.
//!
//! A generic UDP echo, with one exception: a detpath probe that is already a
//! pong (`FLAG_PONG`, crates/wire/src/probe.rs) is not echoed, and a detpath
//! ping goes back marked a pong (`detpath_bench::run::ready_raw_echo`), so a
//! probe whose source is forged to be another detpath reflector (`echo`,
//! `bench server`) cannot make the two echo each other forever. Other
//! datagrams go back unchanged, as RFC 862's echo does: two generic echo
//! services can still be made to loop by a forged source, so the help says
//! so.

use detpath::sys::cleanup::{self, OnSignal};
use detpath::{Endpoint, RecvMode};
use std::time::Duration;

/// Arguments of `detpath echo`: the endpoint spec, its namespace, when to
/// stop, how receives wait, the summary's form and /metrics.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Endpoint spec, e.g. `afxdp://dpa?port=7000` or `udp://10.77.0.2:7000`; with
    /// `sched=slots&slot_ns=..&classes=..` the replies leave through the slot scheduler (crates/sched).
    spec: String,
    /// Run inside this network namespace (e.g. `detpath-b` of the testbed).
    #[arg(long)]
    netns: Option<String>,
    /// Stop after echoing this many datagrams (default: run until Ctrl-C / SIGTERM).
    #[arg(long)]
    count: Option<u64>,
    /// Receive by sleeping in the kernel instead of busy-polling.
    #[arg(long)]
    blocking: bool,
    /// Print the final summary as one JSON document (`echoed`, `not_sent`,
    /// `not_a_ping`, `counters` by name) instead of a line of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    metrics: crate::metrics_args::MetricsArgs,
}

/// What `detpath echo` answers, and its exit codes.
const AFTER_HELP: &str = "Every datagram goes back to its sender unchanged, except detpath's ping-pong probes: \
a ping goes back marked as a pong, and a pong is never echoed (counted in not_a_ping), so a probe with a forged \
source cannot make two detpath reflectors (echo, bench server) echo each other forever. Any other datagram with \
a forged source can still make this and another generic UDP echo service loop: run it where sources cannot be forged.

Exit codes: 0 stopped (Ctrl-C, SIGTERM or --count reached; replies that could not be sent are counted, not errors); \
2 an error (the endpoint could not open or failed: the interface went away, permissions).";

/// What the echo loop did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Datagrams sent back.
    echoed: u64,
    /// Replies that could not be sent (counted by cause by the endpoint).
    not_sent: u64,
    /// detpath pongs, not echoed (see the module's text).
    not_a_ping: u64,
}

/// Echoes datagrams back to their senders (detpath pongs excepted) until
/// stopped, then prints the summary; returns the exit code of [`AFTER_HELP`].
pub fn run(args: Args) -> anyhow::Result<i32> {
    cleanup::install_signal_handler(OnSignal::SetFlag);
    let metrics = args.metrics.start()?; // before --netns: scraped from the host
    let _ns = args.netns.as_deref().map(detpath::sys::netns::enter).transpose()?;
    let mut ep = detpath_open::open_spec(&detpath_open::parse(&args.spec)?.with_layer(metrics.layer()))?;
    println!("echo on {} ({})", ep.local_addr(), ep.capabilities().summary());
    let mode = if args.blocking {
        RecvMode::Blocking { timeout: Some(Duration::from_millis(100)) }
    } else {
        RecvMode::BusyPoll { timeout: Some(Duration::from_millis(100)) }
    };
    let Tally { echoed, not_sent, not_a_ping } = serve(ep.as_mut(), mode, args.count, cleanup::interrupted)?;
    let counters = ep.counters();
    if args.json {
        let by_name: serde_json::Map<String, serde_json::Value> = counters.iter().map(|(n, v)| (n.to_string(), v.into())).collect();
        println!("{}", serde_json::json!({ "echoed": echoed, "not_sent": not_sent, "not_a_ping": not_a_ping, "counters": by_name }));
    } else {
        let list: Vec<String> = counters.iter().map(|(n, v)| format!("{n}={v}")).collect();
        println!("echoed {echoed}; not sent {not_sent}; pongs not echoed {not_a_ping}; counters {}", list.join(" "));
    }
    Ok(0)
}

/// Echoes until `stopped()` or `count` echoes; only an error of the endpoint ends it.
fn serve(ep: &mut dyn Endpoint, mode: RecvMode, count: Option<u64>, stopped: impl Fn() -> bool) -> detpath::Result<Tally> {
    let mut buf = vec![0u8; 65536];
    let mut t = Tally::default();
    while !stopped() && count.is_none_or(|c| t.echoed < c) {
        let Some(rx) = ep.recv(&mut buf, mode)? else { continue };
        if !detpath_bench::run::ready_raw_echo(&mut buf[..rx.len]) {
            t.not_a_ping += 1;
            continue;
        }
        match ep.send_to(&buf[..rx.len], rx.peer) {
            Ok(()) => t.echoed += 1,
            Err(e) if e.is_per_datagram() => {
                // Counted by the endpoint; said once (a flood must not flood the log).
                if t.not_sent == 0 {
                    eprintln!(
                        "echo: a reply was not sent ({e}); such replies are counted (tx_no_route, tx_no_neigh, tx_ring_full, tx_errors) and not reported again"
                    );
                }
                t.not_sent += 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use detpath::testbed::{Side, Testbed, TestbedConfig};
    use detpath_wire::probe::{Probe, FLAG_PONG};
    use detpath_wire::{build_udp_frame, MacAddr, UdpFrameHeader};
    use std::net::{SocketAddrV4, UdpSocket};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread::JoinHandle;

    /// Blocking receives: the tests share two cores with other work.
    const WAIT: RecvMode = RecvMode::Blocking { timeout: Some(Duration::from_millis(10)) };

    fn probe(flags: u16) -> Vec<u8> {
        let mut b = vec![0u8; 128];
        Probe { flags, ..Probe::ping(7, 42, 1_000) }.encode(&mut b).unwrap();
        b
    }

    /// `detpath echo`'s loop on udp at `port` on `side`, until `stop`; its address once open.
    fn echo_on(side: &Side, port: u16, stop: &Arc<AtomicBool>) -> (SocketAddrV4, JoinHandle<detpath::Result<detpath::Result<Tally>>>) {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (uri, stop) = (side.uri("udp", port), stop.clone());
        let server = side.spawn(move || {
            let mut ep = detpath_open::open(&uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
            ready_tx.send(ep.local_addr()).unwrap();
            serve(ep.as_mut(), WAIT, None, || stop.load(Ordering::Relaxed))
        });
        (ready_rx.recv().expect("echo opened"), server)
    }

    /// A ping goes back marked a pong, a pong is not echoed (counted), any
    /// other datagram goes back unchanged.
    #[test]
    fn a_pong_is_not_echoed_a_ping_goes_back_a_pong_the_rest_unchanged() {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let stop_s = stop.clone();
        let server = std::thread::spawn(move || {
            let mut ep = detpath_open::open("udp://127.0.0.1:0").unwrap();
            ready_tx.send(ep.local_addr()).unwrap();
            serve(ep.as_mut(), WAIT, None, || stop_s.load(Ordering::Relaxed)).unwrap()
        });
        let at = ready_rx.recv().unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        sock.send_to(&probe(FLAG_PONG), at).unwrap();
        sock.send_to(&probe(0), at).unwrap();
        sock.send_to(b"hello", at).unwrap();
        let mut buf = [0u8; 256];
        let n = sock.recv(&mut buf).unwrap();
        let p = Probe::decode(&buf[..n]).expect("the first datagram back is the ping's echo, not the pong");
        assert_eq!((p.flags, p.seq, p.nonce), (FLAG_PONG, 7, 42), "the ping goes back marked a pong");
        let n = sock.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        assert!(sock.recv(&mut buf).is_err(), "nothing else comes back");
        stop.store(true, Ordering::Relaxed);
        assert_eq!(server.join().unwrap(), Tally { echoed: 2, not_sent: 0, not_a_ping: 1 });
    }

    /// Two `detpath echo`s, one in each namespace of the testbed, on the
    /// same port; one ping sent to b with a source forged to be a's echo:
    /// b echoes it once (a pong), a echoes nothing. Without the pong rule
    /// the two echo it to each other until stopped. Needs root.
    #[test]
    fn a_ping_forged_from_another_echo_is_echoed_once_not_forever() {
        let tb = Testbed::up(TestbedConfig::unique("ecl")).expect("testbed up (needs root)");
        let (a, b) = (tb.a().clone(), tb.b().clone());
        let stop = Arc::new(AtomicBool::new(false));
        let port = 7310;
        let (at_a, echo_a) = echo_on(&a, port, &stop);
        let (at_b, echo_b) = echo_on(&b, port, &stop);
        let h = UdpFrameHeader { src_mac: MacAddr::parse(&a.mac).unwrap(), dst_mac: MacAddr::parse(&b.mac).unwrap(), src: at_a, dst: at_b, ip_id: 1, ttl: 64, tos: 0 };
        let mut frame = vec![0u8; 14 + 20 + 8 + 128];
        let len = build_udp_frame(&mut frame, &h, &probe(0)).expect("frame fits");
        let raw = a.run(|| detpath::sys::packet::PacketSocket::open(&a.iface)).unwrap().expect("AF_PACKET socket in side a");
        raw.send(&frame[..len]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        let (on_a, on_b) = (echo_a.join().unwrap().unwrap().unwrap(), echo_b.join().unwrap().unwrap().unwrap());
        assert_eq!(on_b, Tally { echoed: 1, not_sent: 0, not_a_ping: 0 }, "b echoes the forged ping once");
        assert_eq!(on_a, Tally { echoed: 0, not_sent: 0, not_a_ping: 1 }, "a does not echo b's pong");
    }
}

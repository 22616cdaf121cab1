//! A `sched=slots` spec over real datapaths in the two-namespace testbed:
//! timed and best-effort datagrams leave through their slots and are echoed.
//!
//! Needs root (namespaces; afxdp attaches an XDP program). The testbed is
//! uniquely named and removed on drop (also when the test fails).

use detpath::testbed::{Testbed, TestbedConfig};


#[test]
fn a_sched_spec_endpoint_delivers_through_its_slots() {
    if !detpath_testkit::need_root("a_sched_spec_endpoint_delivers_through_its_slots", "namespaces, XDP") {
        return;
    }
    use detpath::{Endpoint, RecvMode};
    use std::time::Duration;
    let tb = Testbed::up(TestbedConfig::unique("schk")).expect("testbed");
    for (i, dp) in ["udp", "afxdp"].iter().enumerate() {
        let port = 7800 + 2 * i as u16;
        // An echo server on the plain datapath in namespace b.
        let rx_uri = tb.b().uri(dp, port);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let echo = tb.b().spawn(move || -> u32 {
            let mut ep = detpath_open::open(&rx_uri).expect("echo endpoint");
            ready_tx.send(ep.local_addr()).unwrap();
            let (mut buf, mut n) = ([0u8; 2048], 0);
            while let Some(rx) = ep.recv(&mut buf, RecvMode::Blocking { timeout: Some(Duration::from_millis(500)) }).unwrap() {
                ep.send_to(&buf[..rx.len], rx.peer).unwrap();
                n += 1;
            }
            n
        });
        let peer = ready_rx.recv().unwrap();
        let base = tb.a().uri(dp, port + 1);
        // 50 µs slots, a 20-slot ring: `ctl` owns positions 0, 5, 10, 15; `bulk` 2, 7, 12, 17. The
        // sending thread is SCHED_FIFO on core 0 (rt_* keys, as the bench's); relaxed, so a poll that
        // still comes late (the hypervisor) moves the packet to the class's next slot instead of dropping it.
        let spec = format!(
            "{base}{}rt_core=0&rt_priority=50&sched=slots&slot_ns=50000&ring_slots=20&lead_slots=2&sched_mode=relaxed&classes=ctl:rt:0/5;bulk:be:2/5",
            if base.contains('?') { '&' } else { '?' }
        );
        // Its own thread: the real-time policy ends with it.
        let (sent, ctl, bulk, replies, release_errors) = tb
            .a()
            .spawn(move || {
                static LAYERS: detpath::layer::Registry = &[&detpath_sched::spec::LAYER, &detpath::realtime::LAYER];
                let parsed = detpath::EndpointSpec::parse_with(&spec, LAYERS).unwrap_or_else(|e| panic!("{spec}: {e}"));
                let mut ep = detpath_sched::open_slots(&parsed).unwrap_or_else(|e| panic!("{spec}: {e}"));
                let slot_of = |ep: &detpath_sched::SlotsEndpoint| ep.scheduler().current_slot(detpath::monotonic_ns());
                for k in 0..10u64 {
                    // Ten real-time packets, one per ring cycle at position 5, from 4 cycles on.
                    let s = ep.scheduler().next_owned(0, slot_of(&ep) + 80 + 20 * k).unwrap();
                    ep.send_at(ep.scheduler().slot_time(s), 0, &[k as u8; 32], peer).unwrap();
                }
                for k in 0..20u8 {
                    ep.send_to(&[100 + k; 48], peer).unwrap();
                }
                // The trait's receive serves the slots while it waits for the echoes.
                let (mut buf, mut replies) = ([0u8; 2048], 0);
                let end = detpath::monotonic_ns() + 3_000_000_000;
                while (ep.holding() || replies < 30) && detpath::monotonic_ns() < end {
                    if ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(10)) }).unwrap().is_some() {
                        replies += 1;
                    }
                }
                let s = ep.scheduler();
                (ep.counters().tx_packets, s.counters(0).unwrap(), s.counters(1).unwrap(), replies, s.release_error(0).unwrap().len())
            })
            .join()
            .unwrap()
            .unwrap();
        let echoed = echo.join().unwrap().unwrap();
        eprintln!("{dp}: endpoint sent {sent}, ctl {ctl:?}, bulk {bulk:?}, echoed {echoed}, replies {replies}");
        assert_eq!((ctl.accepted, ctl.sent, ctl.dropped), (10, 10, 0), "{dp}: {ctl:?}");
        assert_eq!((bulk.accepted, bulk.sent), (20, 20), "{dp}: {bulk:?}");
        assert_eq!(release_errors, 10, "{dp}");
        assert_eq!(echoed, 30, "{dp}");
        assert_eq!(replies, 30, "{dp}");
    }
}

//! A datapath registered at run time takes part in pub-sub discovery like a
//! built-in one: `udp2`, a thin wrapper over udp added with
//! `detpath::datapath::register`, hears the SPDP multicast group because its
//! registry entry says how (`group_reception`), with no edit of the pub-sub
//! crate; a detpath ping and pong without peer lists find each other over it
//! in the testbed and every ping is answered. Needs root (namespaces).
#![cfg(feature = "endpoint")]

use detpath::datapath::{Datapath, GroupReception};
use detpath::spec::EndpointSpec;
use detpath::testbed::{Testbed, TestbedConfig};
use detpath::Endpoint;
use detpath_pubsub::app::{run, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::transport::{spdp_group_reception, Wait};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

fn open_udp2(spec: &EndpointSpec) -> detpath::Result<Box<dyn Endpoint>> {
    let udp = detpath::datapath::find("udp").expect("udp is built in");
    (udp.open.expect("udp opens datagrams"))(spec)
}

static UDP2: Datapath = Datapath {
    name: "udp2",
    display: "UDP (wrapper)",
    summary: "kernel UDP socket under another name (a test's registered datapath)",
    arrival_stamp: Some("rx_stamp=kernel"),
    group_reception: GroupReception::KernelSocket,
    keys: &["busy_poll", "batch", "rcvbuf", "sndbuf", "rx_stamp"],
    open: Some(open_udp2),
    frames: None,
};

fn register_once() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| detpath::datapath::register(&UDP2).expect("udp2 is a new name"));
}

#[test]
fn a_registered_datapath_hears_the_group_by_its_entry() {
    // (Before registering, the name would be refused with the fix; the other
    // test of this binary may have registered it already, so that is not asserted.)
    assert!(spdp_group_reception("udp3").unwrap_err().contains("--peer"));
    register_once();
    assert_eq!(spdp_group_reception("udp2"), Ok(detpath_pubsub::transport::GroupReception::KernelSocket));
}

#[test]
fn ping_and_pong_find_each_other_over_a_registered_datapath_without_peers() {
    if !detpath_testkit::need_root("ping_and_pong_find_each_other_over_a_registered_datapath_without_peers", "namespaces") {
        return;
    }
    register_once();
    let tb = Testbed::up(TestbedConfig::unique("psreg")).expect("testbed up");
    let stop = Arc::new(AtomicBool::new(false));
    let mut po = NodeOptions::new(&tb.b().uri("udp2", 7410), Role::Pong);
    po.netns = Some(tb.b().netns.clone());
    po.duration = Some(Duration::from_secs(30));
    po.wait = Wait::Block;
    assert!(po.peers.is_empty());
    let stop2 = stop.clone();
    let pong = std::thread::spawn(move || run(&po, &|| stop2.load(Ordering::Relaxed), |_| {}));
    let mut o = NodeOptions::new(&tb.a().uri("udp2", 7410), Role::Ping { rate_hz: 1000.0 });
    o.netns = Some(tb.a().netns.clone());
    o.count = 500;
    o.duration = Some(Duration::from_secs(30));
    o.wait = Wait::Block;
    o.lockstep = true;
    let out = run(&o, &|| false, |_| {});
    stop.store(true, Ordering::Relaxed);
    let pong = pong.join().unwrap().unwrap_or_else(|e| panic!("udp2 pong: {e}"));
    let out = out.unwrap_or_else(|e| panic!("udp2 ping: {e}"));
    assert_eq!(out.received, 500, "every ping answered over udp2 (multicast discovery)");
    assert!(pong.pings_answered >= 500, "pong answered {}", pong.pings_answered);
}

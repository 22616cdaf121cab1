//! CycloneDDS packs samples into RTPS messages of up to 14,720 bytes, which
//! the kernel sends as IPv4 fragments on a 1500-byte MTU. `ddsperf pub` of
//! 1 KiB samples at full rate (namespace a, kernel UDP) to a detpath sub on a
//! bypass datapath (namespace b): the XDP filter follows the fragments and
//! the endpoint reassembles them, so the stream arrives complete and at rate.
//! Without reassembly only the odd single-sample retransmission got through
//! (under 1,000 samples/s). Needs root and ddsperf (else a failure in CI, a named skip elsewhere).

mod ddsperf;
use ddsperf::{spawn_in, udp_config};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath_pubsub::app::{run, NodeOptions};
use detpath_pubsub::ddsperf::Role;
use detpath_pubsub::transport::Wait;
use std::time::Duration;

fn ddsperf_pub_1k_reaches_detpath_sub(datapath: &str) {
    if !detpath_testkit::need_tool(&format!("ddsperf_pub_1k_reaches_detpath_sub over {datapath}"), "ddsperf", "cyclonedds-tools") {
        return;
    }
    let tb = Testbed::up(TestbedConfig::unique("psfrag")).expect("testbed up (needs root)");
    let mut so = NodeOptions::new(&tb.b().uri(datapath, 7410), Role::Sub);
    so.netns = Some(tb.b().netns.clone());
    so.peers = vec![tb.a().addr];
    so.size = 1024;
    so.duration = Some(Duration::from_secs(7));
    so.wait = Wait::Block;
    let sub = std::thread::spawn(move || run(&so, &|| false, |_| {}));
    let _publisher = spawn_in(tb.a(), "psfrag", &udp_config(tb.a(), tb.b().addr), &["-D", "5", "pub", "size", "1024"]);
    let out = sub.join().unwrap().unwrap_or_else(|e| panic!("{datapath} sub: {e}"));
    println!("{datapath}: {}", serde_json::to_string(&out).unwrap());
    assert_eq!(out.lost, 0, "{datapath}: reliable stream lost samples");
    assert!(out.data_received >= 20_000, "{datapath}: only {} 1 KiB samples from ddsperf in 5 s (its messages come as IPv4 fragments)", out.data_received);
}

#[test]
fn afxdp() {
    ddsperf_pub_1k_reaches_detpath_sub("afxdp");
}

#[test]
fn xdppoll() {
    ddsperf_pub_1k_reaches_detpath_sub("xdppoll");
}

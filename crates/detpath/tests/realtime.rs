//! Endpoints opened with `rt_*` keys: the opening thread becomes a real-time
//! polling thread (pinned, SCHED_FIFO, memory locked), the capabilities say
//! so, the C-state hold lives as long as the endpoint, and `rt_strict`
//! refuses a core that is not isolated without changing anything.
//!
//! Needs root (namespaces, SCHED_FIFO, /dev/cpu_dma_latency) and 2 cores.

use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{Error, RecvMode};
use detpath_sys::thread::{current_cpu_dma_latency, current_policy, current_thread_affinity, set_normal};
use std::time::Duration;

const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

#[test]
fn rt_keys_make_the_opening_thread_a_realtime_poller() {
    let tb = Testbed::up(TestbedConfig::unique("rt")).expect("testbed up");
    let before_latency = current_cpu_dma_latency().expect("read /dev/cpu_dma_latency");
    let uri = format!("{}&rt_core=1&rt_priority=10&rt_dma_latency=0", tb.b().uri("udp", 8601));
    let server = tb.b().spawn(move || {
        let mut ep = detpath_open::open(&uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
        let policy = current_policy();
        let affinity = current_thread_affinity().unwrap().to_string();
        let latency = current_cpu_dma_latency().unwrap();
        let notes = ep.capabilities().notes.clone();
        // Echo one datagram: the wrapped endpoint still works.
        let mut buf = [0u8; 64];
        let rx = ep.recv(&mut buf, WAIT).unwrap().expect("a datagram within 2 s");
        ep.send_to(&buf[..rx.len], rx.peer).unwrap();
        drop(ep);
        let latency_after = current_cpu_dma_latency().unwrap();
        set_normal().unwrap();
        (policy, affinity, latency, latency_after, notes)
    });
    std::thread::sleep(Duration::from_millis(200));
    let mut client = tb.a().run(|| detpath_open::open(&tb.a().uri("udp", 8602))).unwrap().unwrap();
    let server_addr = std::net::SocketAddrV4::new(tb.b().addr, 8601);
    client.send_to(b"ping", server_addr).unwrap();
    let mut buf = [0u8; 64];
    let rx = client.recv(&mut buf, WAIT).unwrap().expect("echo within 2 s");
    assert_eq!(&buf[..rx.len], b"ping");

    let (policy, affinity, latency, latency_after, notes) = server.join().unwrap().unwrap();
    assert_eq!(policy, (libc::SCHED_FIFO, 10), "polling thread policy");
    assert_eq!(affinity, "1", "polling thread pinned to core 1");
    assert_eq!(latency, 0, "cpu_dma_latency held at 0 us while the endpoint lives");
    assert_eq!(latency_after, before_latency, "hold released when the endpoint is dropped");
    assert!(notes.iter().any(|n| n.starts_with("real-time: core 1, SCHED_FIFO 10, memory locked, cpu_dma_latency 0 us")), "{notes:?}");
    // This VM has no isolcpus: the check must warn about it.
    assert!(notes.iter().any(|n| n.contains("core 1 is not isolated")), "{notes:?}");
}

#[test]
fn rt_strict_refuses_a_core_that_is_not_isolated_and_changes_nothing() {
    let isolated = std::fs::read_to_string("/sys/devices/system/cpu/isolated").unwrap_or_default();
    assert!(isolated.trim().is_empty(), "this test expects no isolcpus on the host (found `{}`)", isolated.trim());
    let tb = Testbed::up(TestbedConfig::unique("rts")).expect("testbed up");
    let uri = format!("{}&rt_core=1&rt_priority=10&rt_strict=true", tb.b().uri("udp", 8603));
    let (err, policy, affinity_before, affinity_after) = tb
        .b()
        .run(|| {
            let affinity_before = current_thread_affinity().unwrap().to_string();
            let err = detpath_open::open(&uri).err().expect("strict must refuse a non-isolated core");
            (err, current_policy(), affinity_before, current_thread_affinity().unwrap().to_string())
        })
        .unwrap();
    assert!(matches!(err, Error::Realtime(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("core 1") && msg.contains("isol"), "{msg}");
    assert_eq!(policy.0, libc::SCHED_OTHER, "policy unchanged");
    assert_eq!(affinity_before, affinity_after, "affinity unchanged");
}

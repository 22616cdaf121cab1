//! The `udp` datapath over the testbed: batches in one system call each way
//! (sendmmsg/recvmmsg) arrive complete and in order, truncation is reported,
//! and the kernel's drops on an overflowing socket are counted exactly.
//!
//! Needs root (namespaces).

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath::{Endpoint, RecvMode, RxBatch, TxDatagram};
use std::time::Duration;

const WAIT: RecvMode = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };

fn open_in(side: &Side, port: u16, extra: &str) -> Box<dyn Endpoint> {
    let uri = format!("{}{extra}", side.uri("udp", port));
    side.run(|| detpath_open::open(&uri)).unwrap().unwrap_or_else(|e| panic!("{uri}: {e}"))
}

fn payload(i: usize) -> Vec<u8> {
    let len = 1 + (i * 97) % 1400;
    (0..len).map(|k| (i * 31 + k * 7) as u8).collect()
}

#[test]
fn batches_of_32_arrive_complete_and_in_order() {
    let tb = Testbed::up(TestbedConfig::unique("udpb")).unwrap();
    let mut rx = open_in(tb.b(), 8100, "&batch=32");
    let mut tx = open_in(tb.a(), 8101, "&batch=32");
    assert_eq!(rx.capabilities().max_batch, 32);
    let to = rx.local_addr();
    let mut batch = RxBatch::new(32, 2048);
    for round in 0..10 {
        let payloads: Vec<Vec<u8>> = (0..32).map(|i| payload(round * 32 + i)).collect();
        let datagrams: Vec<TxDatagram> = payloads.iter().map(|p| TxDatagram { payload: p, peer: to }).collect();
        assert_eq!(tx.send_batch(&datagrams).unwrap(), 32);
        let mut got: Vec<Vec<u8>> = Vec::new();
        while got.len() < 32 {
            let n = rx.recv_batch(&mut batch, WAIT).unwrap();
            assert!(n > 0, "round {round}: only {} of 32 arrived", got.len());
            for (meta, data) in batch.iter() {
                assert_eq!(meta.peer, tx.local_addr());
                assert!(!meta.truncated);
                got.push(data.to_vec());
            }
        }
        assert_eq!(got, payloads, "round {round}: bytes and order");
    }
    let (c_tx, c_rx) = (tx.counters(), rx.counters());
    assert_eq!((c_tx.tx_packets, c_rx.rx_packets, c_rx.rx_kernel_dropped), (320, 320, 0));
    assert_eq!(c_tx.tx_bytes, c_rx.rx_bytes);
}

#[test]
fn truncation_is_reported_in_single_and_batched_receive() {
    let tb = Testbed::up(TestbedConfig::unique("udpt")).unwrap();
    let mut rx = open_in(tb.b(), 8110, "");
    let mut tx = open_in(tb.a(), 8111, "");
    let to = rx.local_addr();
    let big = vec![7u8; 1000];
    tx.send_to(&big, to).unwrap();
    let mut small = [0u8; 100];
    let m = rx.recv(&mut small, WAIT).unwrap().expect("datagram");
    assert!(m.truncated && m.len == 100, "{m:?}");
    tx.send_to(&big, to).unwrap();
    let mut batch = RxBatch::new(4, 100);
    assert_eq!(rx.recv_batch(&mut batch, WAIT).unwrap(), 1);
    let (meta, data) = batch.get(0).unwrap();
    assert!(meta.truncated && data.len() == 100 && data.iter().all(|b| *b == 7), "{meta:?}");
    assert_eq!(rx.counters().rx_truncated, 2);
}

/// 2000 datagrams into a socket with a small receive buffer that nobody
/// reads: what does not fit is dropped by the kernel, and the endpoint's
/// `rx_kernel_dropped` plus what it then receives is exactly what was sent.
#[test]
fn kernel_drops_are_counted_exactly() {
    let tb = Testbed::up(TestbedConfig::unique("udpd")).unwrap();
    let mut rx = open_in(tb.b(), 8120, "&rcvbuf=16384");
    let mut tx = open_in(tb.a(), 8121, "&batch=64");
    let to = rx.local_addr();
    let p = [1u8; 512];
    let datagrams = vec![TxDatagram { payload: &p, peer: to }; 64];
    let mut sent = 0;
    for _ in 0..32 {
        sent += tx.send_batch(&datagrams).unwrap();
    }
    assert_eq!(sent, 2048);
    std::thread::sleep(Duration::from_millis(200)); // veth delivers in softirq; let it finish
    let mut buf = [0u8; 2048];
    let mut received = 0u64;
    while rx.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(100)) }).unwrap().is_some() {
        received += 1;
    }
    let c = rx.counters();
    assert!(c.rx_kernel_dropped > 0, "a 16 KiB buffer cannot hold 2048 datagrams: {c:?}");
    assert_eq!(received + c.rx_kernel_dropped, sent as u64, "received {received} + dropped {} != sent {sent}", c.rx_kernel_dropped);
    assert_eq!(c.rx_packets, received);
}

#[test]
fn bad_buffer_size_is_named() {
    let tb = Testbed::up(TestbedConfig::unique("udpx")).unwrap();
    let uri = format!("{}&rcvbuf=lots", tb.b().uri("udp", 8130));
    let e = tb.b().run(|| detpath_open::open(&uri)).unwrap().err().expect("refused");
    assert!(e.to_string().contains("`rcvbuf` takes a positive number of bytes"), "{e}");
}

//! detpath-pubsub: a publish-subscribe layer DDS applications talk to. It
//! speaks RTPS 2.x (OMG DDSI-RTPS, as CycloneDDS 0.10 does) over UDPv4 on any
//! `detpath::Endpoint`, so every datapath carries it unchanged.
//!
//! Layers, bottom up:
//! - [`wire`]: the RTPS codec (no allocation, no OS code, never panics; fuzzed).
//! - [`engine`]: the sans-IO protocol engine: datagrams and the time go in,
//!   datagrams come out through an [`engine::Outbox`]. Discovery (SPDP/SEDP),
//!   reliable and best-effort writers and readers, QoS matching.
//! - [`types`]: data types ([`TopicType`]) and the ddsperf types.
//! - [`xcdr`]: how each field kind is encoded; `#[derive(TopicType)]` and
//!   `#[derive(DdsEnum)]` (re-exported here) make a struct a topic type.
//! - [`ddsperf`]: ddsperf's topics and conventions as a node on the engine.
//! - [`driver`]: the polling loop over a transport; with feature `endpoint`,
//!   `transport` (a `Box<dyn detpath::Endpoint>` as transport), `app` (the
//!   ping/pong/pub/sub programs behind `detpath pubsub`). The benchmark
//!   harness (`detpath pubsub bench`) is `detpath_pubsub_bench` (crates/pubsub-bench).
//!
//! Two participants, a writer and a reader of one topic, over an in-memory
//! network and a virtual clock: the engine takes datagrams and the time,
//! and gives datagrams back through an [`engine::Outbox`].
//!
//! ```
//! use detpath_pubsub::engine::{make_guid_prefix, Config, Participant, VecOutbox};
//! use detpath_pubsub::qos::Qos;
//! use detpath_pubsub::TopicType;
//! use std::net::{Ipv4Addr, SocketAddrV4};
//!
//! #[derive(Clone, Debug, Default, PartialEq, TopicType)]
//! #[dds(type_name = "demo::Reading")]
//! struct Reading {
//!     #[key]
//!     sensor: u32,
//!     celsius: f64,
//! }
//!
//! let addr = |i: u16| SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7410 + 2 * i);
//! let mut nodes: Vec<Participant> = (0..2u16)
//!     .map(|i| {
//!         let mut cfg = Config::new(0, make_guid_prefix(1, 100 + u32::from(i), 7), addr(i));
//!         cfg.add_peer(Ipv4Addr::LOCALHOST, 2);
//!         Participant::new(cfg, 0)
//!     })
//!     .collect();
//! let mut outs = [VecOutbox::default(), VecOutbox::default()];
//! let w = nodes[0].create_writer_for("Readings", Qos::reliable_keep_last(4), &Reading::default())?;
//! let r = nodes[1].create_reader_for(0, "Readings", Qos::reliable_keep_last(4), &Reading::default())?;
//!
//! let (mut now, mut got) = (1u64, None);
//! for step in 0..2_000 {
//!     now += 1_000_000; // 1 ms of virtual time
//!     for i in 0..2 {
//!         if nodes[i].next_timeout() <= now {
//!             nodes[i].handle_timeout(now, &mut outs[i]);
//!         }
//!     }
//!     if step == 100 {
//!         nodes[0].write(now, &mut outs[0], w, None, &Reading { sensor: 7, celsius: 21.5 })?;
//!     }
//!     // The network: every datagram to the node it is addressed to.
//!     for i in 0..2 {
//!         for (dst, bytes) in outs[i].drain() {
//!             if let Some(j) = (0..2).find(|&j| dst == addr(j as u16)) {
//!                 nodes[j].handle_datagram(now, addr(i as u16), &bytes, &mut outs[j]);
//!             }
//!         }
//!     }
//!     let mut sample = Reading::default();
//!     if nodes[1].take(r, &mut sample)?.is_some() {
//!         got = Some(sample);
//!         break;
//!     }
//! }
//! assert_eq!(got, Some(Reading { sensor: 7, celsius: 21.5 }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

// The derives name this crate `::detpath_pubsub`; inside it too.
extern crate self as detpath_pubsub;

#[cfg(feature = "endpoint")]
pub mod app;
pub mod budget;
pub mod ddsperf;
pub mod discovery;
pub mod driver;
pub mod engine;
pub mod priority;
pub mod qos;
pub mod ros2;
#[cfg(feature = "endpoint")]
pub mod transport;
pub mod types;
pub mod wire;
pub mod xcdr;

pub use detpath_pubsub_derive::{DdsEnum, TopicType};
pub use types::TopicType;

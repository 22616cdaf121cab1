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
//!   harness (`detpath pubsub bench`) is `detpath_bench::pubsub`.

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
#[cfg(feature = "endpoint")]
pub mod transport;
pub mod types;
pub mod wire;
pub mod xcdr;

pub use detpath_pubsub_derive::{DdsEnum, TopicType};
pub use types::TopicType;

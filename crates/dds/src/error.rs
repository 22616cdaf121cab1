//! What can go wrong in the application API, each with what to do about it.

use detpath_pubsub::engine::{EngineError, WriteError};

/// Why a call of the DDS API failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The endpoint (or the SPDP multicast group beside it) did not open.
    #[error("opening endpoint {spec}: {source}")]
    Open {
        /// What was opened.
        spec: String,
        /// The datapath's error (a wrong key, a missing interface or capability).
        source: detpath::Error,
    },
    /// The network namespace could not be entered.
    #[error("entering network namespace {ns}: {source}")]
    Netns {
        /// Its name.
        ns: String,
        /// Why.
        source: detpath::Error,
    },
    /// No peers and no way to hear the SPDP multicast group on this datapath.
    #[error("{spec}: no peers and no multicast discovery: {why}")]
    NoDiscovery {
        /// The endpoint spec.
        spec: String,
        /// What is missing.
        why: String,
    },
    /// A peer that is not an IPv4 address.
    #[error("peer {0:?} is not an IPv4 address (e.g. 10.0.0.2)")]
    BadPeer(String),
    /// A QoS policy name or value that is not known.
    #[error("QoS: {0}")]
    BadQos(String),
    /// A ROS 2 topic or message type name ROS itself would refuse.
    #[error("{0}")]
    Ros2Name(#[from] detpath_pubsub::ros2::Ros2NameError),
    /// The engine refused to create an endpoint.
    #[error("creating the endpoint: {0}")]
    Create(#[from] EngineError),
    /// A sample larger than the writer's limit ([`crate::Policy::MaxSampleSize`]); nothing was sent.
    #[error("sample of {size} bytes is above this writer's max_sample_size of {limit} bytes (raise it with Policy::MaxSampleSize / \"max_sample_size=N\")")]
    SampleTooLarge {
        /// The serialized size (encapsulation header included).
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A raw payload without a valid 4-byte encapsulation header.
    #[error("payload of {0} bytes has no CDR encapsulation header (4 bytes: 00 00|00 01|00 06|00 07|00 08|00 09|00 0a|00 0b, 00 00)")]
    BadPayload(usize),
    /// The engine refused the write.
    #[error("write: {0}")]
    Write(#[from] WriteError),
    /// The engine thread could not be started.
    #[error("starting the participant's thread: {0}")]
    Thread(std::io::Error),
    /// The participant could not start for another reason (the message says which).
    #[error("starting the participant: {0}")]
    Start(String),
    /// The participant's engine thread is gone (it panicked or the participant closed).
    #[error("the participant is closed")]
    Closed,
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

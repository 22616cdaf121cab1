//! The RTPS 2.x wire format (OMG DDSI-RTPS): header, submessages, parameter
//! lists, CDR payloads. Pure functions over byte slices, in the style of
//! `detpath-wire`: no allocation, no OS calls, no panics on any input (fuzzed
//! by `fuzz/fuzz_targets/rtps_parse.rs`).

pub mod builder;
pub mod bytes;
pub mod cdr;
pub mod message;
pub mod plist;
pub mod types;

pub use builder::MessageBuilder;
pub use cdr::{CdrReader, CdrWriter, Encapsulation, Xcdr};
pub use message::{AckNack, Data, DataFrag, Gap, Header, Heartbeat, HeartbeatFrag, Message, NackFrag, Submessage};
pub use plist::{Param, ParamList, ParamWriter};
pub use types::*;

/// Why bytes were not accepted. Each kind is a counter bucket in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("shorter than its fields")]
    Truncated,
    #[error("not an RTPS message (no \"RTPS\" magic)")]
    NotRtps,
    #[error("unsupported RTPS protocol version {0}.{1}")]
    UnsupportedVersion(u8, u8),
    #[error("invalid sequence number (below 1 or out of order)")]
    BadSequenceNumber,
    #[error("sequence/fragment number set with more than 256 bits or base 0")]
    BadSet,
    #[error("invalid fragment numbering or sizes")]
    BadFragment,
    #[error("octetsToInlineQos points inside the fixed fields")]
    BadLength,
    #[error("contradictory submessage flags")]
    BadFlags,
    #[error("parameter length runs past the list")]
    BadParameterLength,
    #[error("parameter list without PID_SENTINEL")]
    MissingSentinel,
    #[error("parameter value too short or malformed for its id")]
    BadParameter,
    #[error("string without terminating NUL or not UTF-8")]
    BadString,
    #[error("unsupported encapsulation {0:#06x}")]
    UnsupportedEncapsulation(u16),
    #[error("output buffer too small")]
    BufferFull,
}

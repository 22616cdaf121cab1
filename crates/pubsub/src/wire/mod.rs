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
    /// A field, a submessage or the message ends before its fixed fields do
    /// (a cut datagram, or a length that claims more than is there). Counted
    /// and dropped; nothing to do unless a peer keeps sending them.
    #[error("shorter than its fields")]
    Truncated,
    /// The datagram does not start with the "RTPS" magic: other traffic on
    /// the port, dropped. A steady count means something else sends there.
    #[error("not an RTPS message (no \"RTPS\" magic)")]
    NotRtps,
    /// The header's protocol version (major, minor) has a major other than 2:
    /// the peer speaks a protocol detpath does not read.
    #[error("unsupported RTPS protocol version {0}.{1}")]
    UnsupportedVersion(u8, u8),
    /// A sequence number the spec forbids: below 1, or HEARTBEAT/GAP
    /// bounds in the wrong order (§8.3.7). The rest of the message is dropped.
    #[error("invalid sequence number (below 1 or out of order)")]
    BadSequenceNumber,
    /// A SequenceNumberSet or FragmentNumberSet with numBits above 256, or a
    /// FragmentNumberSet with base 0 (§9.4.2.6/§9.4.2.8).
    #[error("sequence/fragment number set with more than 256 bits or base 0")]
    BadSet,
    /// A DATA_FRAG whose fragmentStartingNum, fragmentsInSubmessage,
    /// fragmentSize or sampleSize are zero or disagree (§8.3.7.3).
    #[error("invalid fragment numbering or sizes")]
    BadFragment,
    /// A DATA or DATA_FRAG whose octetsToInlineQos points back into the fields
    /// already read.
    #[error("octetsToInlineQos points inside the fixed fields")]
    BadLength,
    /// A DATA with both the data flag and the key flag set (a payload is one
    /// or the other).
    #[error("contradictory submessage flags")]
    BadFlags,
    /// A parameter whose length runs past the end of its parameter list.
    #[error("parameter length runs past the list")]
    BadParameterLength,
    /// A parameter list that ends before its PID_SENTINEL.
    #[error("parameter list without PID_SENTINEL")]
    MissingSentinel,
    /// A parameter value too short or malformed for its parameter id.
    #[error("parameter value too short or malformed for its id")]
    BadParameter,
    /// A CDR string without its terminating NUL, or not UTF-8.
    #[error("string without terminating NUL or not UTF-8")]
    BadString,
    /// A sample whose encapsulation id (carried here) is not plain CDR
    /// (XCDR1, or XCDR2 of a final type): the writer's type is appendable or
    /// mutable, or it sent a parameter list. Declare the type `@final` on
    /// the writer's side.
    #[error("unsupported encapsulation {0:#06x}")]
    UnsupportedEncapsulation(u16),
    /// Encoding only: the output buffer is too small for what is written. The
    /// engine grows its scratch buffer or fragments the sample; a direct caller
    /// passes a larger buffer.
    #[error("output buffer too small")]
    BufferFull,
    /// A bounded string or sequence (`#[dds(bound = N)]`, IDL's
    /// `string<N>`, `sequence<T, N>`) longer than its bound: refused on
    /// write, and on read (a writer of another layout, or without the
    /// bound), never truncated.
    #[error("a bounded string or sequence of length {len} exceeds its bound {bound}")]
    BoundExceeded {
        /// Its length (string bytes without the NUL, or sequence elements).
        len: usize,
        /// The bound the type declares.
        bound: usize,
    },
    /// An enum value the enum type (named) does not declare: the writer's
    /// type has another enum (another layout under the same name).
    #[error("enum value {value} is not a value of {type_name}")]
    UnknownEnum {
        /// The value read.
        value: i32,
        /// The Rust type it was read as.
        type_name: &'static str,
    },
}

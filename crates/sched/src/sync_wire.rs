//! The clock-sync message on the wire (see [`crate::sync`]): 20 bytes,
//! `DPSY`, version, kind, 2 reserved bytes, seq (u32 BE), time (u64 BE).
//! A file of its own with no dependency on the rest of the crate, so that
//! the `sync_msg` fuzz target compiles this very code (by path) without
//! building the datapaths.

use thiserror::Error;

/// Wire size of a sync message.
pub const MSG_LEN: usize = 20;
const MAGIC: [u8; 4] = *b"DPSY";
const VERSION: u8 = 1;

/// Message types of the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgKind {
    /// Master → slave, carries t1.
    Sync = 1,
    /// Slave → master.
    DelayReq = 2,
    /// Master → slave, carries t4.
    DelayResp = 3,
}

/// One sync message: `DPSY`, version, kind, 2 reserved bytes, seq (u32 BE), time (u64 BE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncMsg {
    /// Which message.
    pub kind: MsgKind,
    /// Round number (the slave matches messages by it).
    pub seq: u32,
    /// t1 (Sync), t4 (Delay_Resp), 0 (Delay_Req).
    pub time_ns: u64,
}

/// Bytes that are not a sync message.
#[derive(Debug, Clone, Copy, Error, PartialEq, Eq)]
pub enum SyncWireError {
    #[error("sync message of {len} bytes, expected {MSG_LEN}")]
    /// Not 20 bytes long.
    Length {
        /// The length received, bytes.
        len: usize,
    },
    #[error("not a detpath sync message (bad magic)")]
    /// Does not start with DPSY.
    Magic,
    #[error("sync message version {0}, this build speaks {VERSION}")]
    /// Another protocol version.
    Version(u8),
    #[error("unknown sync message kind {0}")]
    /// An unknown message type.
    Kind(u8),
}

impl SyncMsg {
    /// The message's wire bytes.
    pub fn encode(&self) -> [u8; MSG_LEN] {
        let mut b = [0u8; MSG_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = self.kind as u8;
        b[8..12].copy_from_slice(&self.seq.to_be_bytes());
        b[12..20].copy_from_slice(&self.time_ns.to_be_bytes());
        b
    }

    /// Parses wire bytes (any input: never panics).
    pub fn parse(b: &[u8]) -> Result<SyncMsg, SyncWireError> {
        if b.len() != MSG_LEN {
            return Err(SyncWireError::Length { len: b.len() });
        }
        if b[0..4] != MAGIC {
            return Err(SyncWireError::Magic);
        }
        if b[4] != VERSION {
            return Err(SyncWireError::Version(b[4]));
        }
        let kind = match b[5] {
            1 => MsgKind::Sync,
            2 => MsgKind::DelayReq,
            3 => MsgKind::DelayResp,
            k => return Err(SyncWireError::Kind(k)),
        };
        let mut seq = [0u8; 4];
        seq.copy_from_slice(&b[8..12]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&b[12..20]);
        Ok(SyncMsg { kind, seq: u32::from_be_bytes(seq), time_ns: u64::from_be_bytes(t) })
    }
}

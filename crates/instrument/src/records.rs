//! Per-round raw records, their CSV file, loss/duplicate/reorder accounting
//! and the absolute-deadline pacer whose lateness the records carry.
//!
//! # Raw records file (CSV)
//!
//! One header line, then one line per round (plus one line per duplicate
//! arrival), in the order the client sent them:
//!
//! ```text
//! seq,client_send_ns,server_recv_ns,server_send_ns,client_recv_ns,send_lateness_ns,status
//! 0,1000000,52000000,52000700,1021000,120,ok
//! 1,1100000,,,,95,lost
//! ```
//!
//! Times are ns of CLOCK_MONOTONIC; client times and server times come from
//! different clocks when the two run on different hosts, so only
//! `client_recv - client_send` (RTT; one-way latency = RTT / 2) and
//! `server_send - server_recv` (server processing time) are meaningful. An
//! empty field is a time that was never taken (a lost round). Status is one
//! of `ok`, `lost`, `duplicate`, `reordered`, `corrupted` ([`Status`]).
//! Rounds with status `ok` or `reordered` have valid timestamps and feed the
//! latency statistics; `duplicate` rows record extra arrivals of a sequence
//! id already seen; `corrupted` rows a pong whose nonce did not match.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::str::FromStr;

/// The fate of one round (or, for `Duplicate`, of one extra arrival).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Pong received, nonce matched, in order.
    #[default]
    Ok,
    /// No pong before the round's timeout.
    Lost,
    /// A second (or later) pong for a sequence id already received.
    Duplicate,
    /// Pong received with a valid nonce after a pong of a later sequence id.
    Reordered,
    /// Pong with a nonce that does not match what was sent.
    Corrupted,
}

impl Status {
    /// The status as the records file and summary.json write it (`ok`, `lost`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Lost => "lost",
            Status::Duplicate => "duplicate",
            Status::Reordered => "reordered",
            Status::Corrupted => "corrupted",
        }
    }

    /// Whether the record's timestamps are a valid latency sample.
    pub const fn is_sample(self) -> bool {
        matches!(self, Status::Ok | Status::Reordered)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Status, String> {
        Ok(match s {
            "ok" => Status::Ok,
            "lost" => Status::Lost,
            "duplicate" => Status::Duplicate,
            "reordered" => Status::Reordered,
            "corrupted" => Status::Corrupted,
            other => return Err(format!("unknown status {other:?}")),
        })
    }
}

/// One round of the ping-pong, as the client saw it. A time of 0 means
/// "not taken" (written as an empty CSV field). 56 bytes, `Copy`, so the
/// runner can preallocate a `Vec<Record>` for the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Record {
    /// The round's sequence id (0 for the first ping, warm-up included).
    pub seq: u64,
    /// When the client sent the ping, CLOCK_MONOTONIC ns of the client's host.
    pub client_send_ns: u64,
    /// When the server received it, CLOCK_MONOTONIC ns of the server's host.
    pub server_recv_ns: u64,
    /// When the server sent the pong, CLOCK_MONOTONIC ns of the server's host.
    pub server_send_ns: u64,
    /// When the client received the pong, CLOCK_MONOTONIC ns of the client's host.
    pub client_recv_ns: u64,
    /// How late the ping left after its absolute deadline (`start + seq * period`).
    pub send_lateness_ns: u64,
    /// What became of the round (or that this line is a duplicate arrival).
    pub status: Status,
}

impl Record {
    /// Round-trip time, if this record is a valid sample.
    pub fn rtt_ns(&self) -> Option<u64> {
        if !self.status.is_sample() || self.client_send_ns == 0 || self.client_recv_ns == 0 {
            return None;
        }
        self.client_recv_ns.checked_sub(self.client_send_ns)
    }

    /// One-way latency = RTT / 2 (rounded down to the ns), as in paper 000.
    pub fn latency_ns(&self) -> Option<u64> {
        self.rtt_ns().map(|r| r / 2)
    }

    /// Server processing time, if this record is a valid sample.
    pub fn server_time_ns(&self) -> Option<u64> {
        if !self.status.is_sample() || self.server_recv_ns == 0 || self.server_send_ns == 0 {
            return None;
        }
        self.server_send_ns.checked_sub(self.server_recv_ns)
    }
}

/// The CSV header line (without newline).
pub const CSV_HEADER: &str = "seq,client_send_ns,server_recv_ns,server_send_ns,client_recv_ns,send_lateness_ns,status";

/// Writes records as CSV through a `BufWriter` (1M rows in well under a
/// second in release builds).
pub struct RecordWriter<W: Write> {
    out: BufWriter<W>,
    line: String,
}

impl<W: Write> RecordWriter<W> {
    /// Starts a file: writes the header line.
    pub fn new(inner: W) -> io::Result<RecordWriter<W>> {
        let mut out = BufWriter::with_capacity(1 << 16, inner);
        out.write_all(CSV_HEADER.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(RecordWriter { out, line: String::with_capacity(128) })
    }

    /// Appends one record as a CSV line (a time of 0 as an empty field).
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        use std::fmt::Write as _;
        self.line.clear();
        let opt = |v: u64| if v == 0 { None } else { Some(v) };
        let _ = write!(self.line, "{},", r.seq);
        for v in [r.client_send_ns, r.server_recv_ns, r.server_send_ns, r.client_recv_ns] {
            if let Some(v) = opt(v) {
                let _ = write!(self.line, "{v}");
            }
            self.line.push(',');
        }
        let _ = writeln!(self.line, "{},{}", r.send_lateness_ns, r.status);
        self.out.write_all(self.line.as_bytes())
    }

    /// Appends every record of `rs`, in order.
    pub fn write_all(&mut self, rs: &[Record]) -> io::Result<()> {
        rs.iter().try_for_each(|r| self.write(r))
    }

    /// Flushes and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

/// Writes `records` to a CSV file at `path`, streamed, atomically and
/// durably (`detpath::sys::fsutil::write_atomic_with`).
pub fn write_csv(path: &Path, records: &[Record]) -> io::Result<()> {
    detpath::sys::fsutil::write_atomic_with(path, 0o644, |f| {
        let mut w = RecordWriter::new(f)?;
        w.write_all(records)?;
        w.finish().map(|_| ())
    })
}

/// A malformed line of a records file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("reading records: {0}")]
    Io(#[from] io::Error),
    /// The first line is not [`CSV_HEADER`].
    #[error("records file has no header line or an unknown one (expected {CSV_HEADER:?})")]
    BadHeader,
    /// A line that is not a record.
    #[error("records line {line}: {msg}")]
    BadLine {
        /// The line's number, 1-based (the header is line 1).
        line: usize,
        /// What is wrong with it.
        msg: String,
    },
}

/// Reads a CSV records file written by [`RecordWriter`]. A last line cut
/// short (a run killed while writing) is an error naming that line.
pub fn read_csv<R: Read>(input: R) -> Result<Vec<Record>, ReadError> {
    let mut rd = BufReader::with_capacity(1 << 16, input);
    let mut line = String::new();
    if rd.read_line(&mut line)? == 0 || line.trim_end() != CSV_HEADER {
        return Err(ReadError::BadHeader);
    }
    let mut out = Vec::new();
    let mut no = 1;
    loop {
        line.clear();
        if rd.read_line(&mut line)? == 0 {
            break;
        }
        no += 1;
        let l = line.trim_end();
        if l.is_empty() {
            continue;
        }
        out.push(parse_line(l).map_err(|msg| ReadError::BadLine { line: no, msg })?);
    }
    Ok(out)
}

/// Reads a records file from a path.
pub fn read_csv_file(path: &Path) -> Result<Vec<Record>, ReadError> {
    read_csv(std::fs::File::open(path)?)
}

fn parse_line(l: &str) -> Result<Record, String> {
    let mut f = l.split(',');
    let mut num = |name: &str, empty_ok: bool| -> Result<u64, String> {
        let s = f.next().ok_or_else(|| format!("missing field {name}"))?;
        if s.is_empty() && empty_ok {
            return Ok(0);
        }
        s.parse::<u64>().map_err(|e| format!("field {name}: {s:?}: {e}"))
    };
    let seq = num("seq", false)?;
    let client_send_ns = num("client_send_ns", true)?;
    let server_recv_ns = num("server_recv_ns", true)?;
    let server_send_ns = num("server_send_ns", true)?;
    let client_recv_ns = num("client_recv_ns", true)?;
    let send_lateness_ns = num("send_lateness_ns", true)?;
    let status = f.next().ok_or("missing field status")?.parse()?;
    if f.next().is_some() {
        return Err("too many fields".into());
    }
    Ok(Record { seq, client_send_ns, server_recv_ns, server_send_ns, client_recv_ns, send_lateness_ns, status })
}

/// Counts of a run's loss accounting. Every sent sequence id ends in
/// exactly one of `ok`, `reordered`, `corrupted`, `lost`:
/// `sent == ok + reordered + corrupted + lost`. `duplicates`, `late` and
/// `unexpected` count extra arrivals, not rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LossCounts {
    /// Sequence ids sent (rounds; each ends in exactly one of the four below).
    pub sent: u64,
    /// Received with a valid nonce, in order.
    pub ok: u64,
    /// Received with a valid nonce after a later sequence id.
    pub reordered: u64,
    /// Only pongs with a wrong nonce arrived for this sequence id.
    pub corrupted: u64,
    /// Nothing valid arrived before the timeout (or before the end).
    pub lost: u64,
    /// Further valid pongs for a sequence id already received.
    pub duplicates: u64,
    /// Valid pongs that arrived after their round had timed out (the round
    /// stays counted as lost).
    pub late: u64,
    /// Pongs with a sequence id that was never sent.
    pub unexpected: u64,
}

impl LossCounts {
    /// Counts from records whose statuses the runner set (one row per round,
    /// plus `duplicate` rows). `late` and `unexpected` are not in records.
    pub fn from_records(rs: &[Record]) -> LossCounts {
        let mut c = LossCounts::default();
        for r in rs {
            match r.status {
                Status::Ok => c.ok += 1,
                Status::Reordered => c.reordered += 1,
                Status::Corrupted => c.corrupted += 1,
                Status::Lost => c.lost += 1,
                Status::Duplicate => c.duplicates += 1,
            }
        }
        c.sent = c.ok + c.reordered + c.corrupted + c.lost;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, status: Status) -> Record {
        let sample = status.is_sample();
        Record {
            seq,
            client_send_ns: 1_000 + seq * 100_000,
            server_recv_ns: if sample { 5_000 + seq } else { 0 },
            server_send_ns: if sample { 5_700 + seq } else { 0 },
            client_recv_ns: if sample { 21_000 + seq * 100_000 } else { 0 },
            send_lateness_ns: seq % 7,
            status,
        }
    }

    #[test]
    fn csv_round_trip_and_format() {
        let rs = vec![rec(0, Status::Ok), rec(1, Status::Lost), rec(2, Status::Reordered), rec(2, Status::Duplicate), rec(3, Status::Corrupted)];
        let mut w = RecordWriter::new(Vec::new()).unwrap();
        w.write_all(&rs).unwrap();
        let bytes = w.finish().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER));
        assert_eq!(lines.next(), Some("0,1000,5000,5700,21000,0,ok"));
        assert_eq!(lines.next(), Some("1,101000,,,,1,lost"));
        assert_eq!(read_csv(&bytes[..]).unwrap(), rs);
        assert_eq!(rs[0].rtt_ns(), Some(20_000));
        assert_eq!(rs[0].latency_ns(), Some(10_000));
        assert_eq!(rs[0].server_time_ns(), Some(700));
        assert_eq!(rs[1].rtt_ns(), None);
    }

    #[test]
    fn csv_errors_name_the_line() {
        assert!(matches!(read_csv(&b""[..]), Err(ReadError::BadHeader)));
        assert!(matches!(read_csv(&b"a,b\n"[..]), Err(ReadError::BadHeader)));
        let cut = format!("{CSV_HEADER}\n0,1,2,3,4,0,ok\n1,5,6");
        match read_csv(cut.as_bytes()) {
            Err(ReadError::BadLine { line: 3, .. }) => {}
            other => panic!("{other:?}"),
        }
        let bad = format!("{CSV_HEADER}\n0,1,2,3,4,0,fine\n");
        assert!(read_csv(bad.as_bytes()).unwrap_err().to_string().contains("unknown status"));
    }

    #[test]
    fn a_million_rows() {
        let rs: Vec<Record> = (0..1_000_000).map(|i| rec(i, Status::Ok)).collect();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        let t = std::time::Instant::now();
        write_csv(&p, &rs).unwrap();
        let back = read_csv_file(&p).unwrap();
        assert_eq!(back.len(), 1_000_000);
        assert_eq!(back[999_999], rs[999_999]);
        eprintln!("1M records written and read back in {:?}", t.elapsed());
    }

    #[test]
    fn counts_from_records() {
        let rs = [rec(0, Status::Ok), rec(1, Status::Lost), rec(1, Status::Duplicate), rec(2, Status::Reordered)];
        let c = LossCounts::from_records(&rs);
        assert_eq!((c.sent, c.ok, c.lost, c.duplicates, c.reordered), (3, 1, 1, 1, 1));
    }
}

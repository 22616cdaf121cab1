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
    pub seq: u64,
    pub client_send_ns: u64,
    pub server_recv_ns: u64,
    pub server_send_ns: u64,
    pub client_recv_ns: u64,
    /// How late the ping left after its absolute deadline ([`Pacer`]).
    pub send_lateness_ns: u64,
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
pub const CSV_HEADER: &str =
    "seq,client_send_ns,server_recv_ns,server_send_ns,client_recv_ns,send_lateness_ns,status";

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
        Ok(RecordWriter {
            out,
            line: String::with_capacity(128),
        })
    }

    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        use std::fmt::Write as _;
        self.line.clear();
        let opt = |v: u64| if v == 0 { None } else { Some(v) };
        let _ = write!(self.line, "{},", r.seq);
        for v in [
            r.client_send_ns,
            r.server_recv_ns,
            r.server_send_ns,
            r.client_recv_ns,
        ] {
            if let Some(v) = opt(v) {
                let _ = write!(self.line, "{v}");
            }
            self.line.push(',');
        }
        let _ = writeln!(self.line, "{},{}", r.send_lateness_ns, r.status);
        self.out.write_all(self.line.as_bytes())
    }

    pub fn write_all(&mut self, rs: &[Record]) -> io::Result<()> {
        rs.iter().try_for_each(|r| self.write(r))
    }

    /// Flushes and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

/// Writes `records` to a CSV file at `path` (not atomic; see
/// [`crate::results::ResultDir::save_run`] for the atomic variant).
pub fn write_csv(path: &Path, records: &[Record]) -> io::Result<()> {
    let mut w = RecordWriter::new(std::fs::File::create(path)?)?;
    w.write_all(records)?;
    w.finish()?.sync_all()
}

/// A malformed line of a records file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading records: {0}")]
    Io(#[from] io::Error),
    #[error("records file has no header line or an unknown one (expected {CSV_HEADER:?})")]
    BadHeader,
    #[error("records line {line}: {msg}")]
    BadLine { line: usize, msg: String },
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
        s.parse::<u64>()
            .map_err(|e| format!("field {name}: {s:?}: {e}"))
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
    Ok(Record {
        seq,
        client_send_ns,
        server_recv_ns,
        server_send_ns,
        client_recv_ns,
        send_lateness_ns,
        status,
    })
}

/// Counts of a run's loss accounting. Every sent sequence id ends in
/// exactly one of `ok`, `reordered`, `corrupted`, `lost`:
/// `sent == ok + reordered + corrupted + lost`. `duplicates`, `late` and
/// `unexpected` count extra arrivals, not rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LossCounts {
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

/// What [`Accounting::on_received`] makes of one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// First valid pong of this round, in order: a sample.
    Ok,
    /// First valid pong of this round, after a later one: a sample.
    Reordered,
    /// Another valid pong of a round already received.
    Duplicate,
    /// Wrong nonce: not a sample (a later valid pong may still come).
    Corrupted,
    /// Valid pong of a round that already timed out: not a sample.
    Late,
    /// Sequence id never sent (or before the first one): ignored.
    Unexpected,
}

impl Arrival {
    /// The record status for this arrival; `None` for `Late`/`Unexpected`,
    /// which leave the round's record as it was.
    pub fn status(self) -> Option<Status> {
        match self {
            Arrival::Ok => Some(Status::Ok),
            Arrival::Reordered => Some(Status::Reordered),
            Arrival::Duplicate => Some(Status::Duplicate),
            Arrival::Corrupted => Some(Status::Corrupted),
            Arrival::Late | Arrival::Unexpected => None,
        }
    }
}

const RECEIVED: u8 = 1;
const CORRUPTED: u8 = 2;
const TIMED_OUT: u8 = 4;
const REORDERED: u8 = 8;

/// Streaming loss accounting over the pongs the client receives, against
/// the sequence ids it sent (consecutive from the first one sent). No
/// allocation after [`Accounting::with_capacity`] for `rounds` rounds;
/// O(1) per event.
#[derive(Debug, Clone, Default)]
pub struct Accounting {
    base: Option<u64>,
    state: Vec<u8>,
    highest_received: Option<u64>,
    duplicates: u64,
    late: u64,
    unexpected: u64,
}

impl Accounting {
    pub fn new() -> Accounting {
        Accounting::default()
    }

    pub fn with_capacity(rounds: usize) -> Accounting {
        Accounting {
            state: Vec::with_capacity(rounds),
            ..Default::default()
        }
    }

    /// Records that `seq` was sent. Sequence ids must be consecutive from
    /// the first one (a gap is recorded as rounds sent and never answered).
    pub fn on_sent(&mut self, seq: u64) {
        let base = *self.base.get_or_insert(seq);
        if seq < base {
            return;
        }
        let i = (seq - base) as usize;
        if i >= self.state.len() {
            self.state.resize(i + 1, 0);
        }
    }

    /// Records that the round `seq` timed out: a valid pong arriving later
    /// is counted as `late` and the round as lost.
    pub fn on_timeout(&mut self, seq: u64) {
        if let Some(i) = self.index(seq) {
            if self.state[i] & RECEIVED == 0 {
                self.state[i] |= TIMED_OUT;
            }
        }
    }

    fn index(&self, seq: u64) -> Option<usize> {
        let base = self.base?;
        let i = seq.checked_sub(base)? as usize;
        (i < self.state.len()).then_some(i)
    }

    /// Classifies one arriving pong: its sequence id and whether its nonce
    /// matched the one sent with that sequence id.
    pub fn on_received(&mut self, seq: u64, nonce_ok: bool) -> Arrival {
        let Some(i) = self.index(seq) else {
            self.unexpected += 1;
            return Arrival::Unexpected;
        };
        let st = &mut self.state[i];
        if !nonce_ok {
            if *st & RECEIVED == 0 {
                *st |= CORRUPTED;
            }
            return Arrival::Corrupted;
        }
        if *st & RECEIVED != 0 {
            self.duplicates += 1;
            return Arrival::Duplicate;
        }
        if *st & TIMED_OUT != 0 {
            self.late += 1;
            return Arrival::Late;
        }
        *st |= RECEIVED;
        if self.highest_received.is_some_and(|h| h > seq) {
            *st |= REORDERED;
            return Arrival::Reordered;
        }
        self.highest_received = Some(seq);
        Arrival::Ok
    }

    /// The counts so far (a round not yet answered counts as lost).
    pub fn counts(&self) -> LossCounts {
        let mut c = LossCounts {
            sent: self.state.len() as u64,
            duplicates: self.duplicates,
            late: self.late,
            unexpected: self.unexpected,
            ..Default::default()
        };
        for &st in &self.state {
            if st & RECEIVED != 0 {
                if st & REORDERED != 0 {
                    c.reordered += 1;
                } else {
                    c.ok += 1;
                }
            } else if st & CORRUPTED != 0 {
                c.corrupted += 1;
            } else {
                c.lost += 1;
            }
        }
        c
    }
}

/// Absolute-deadline pacing: ping `i` is due at `start + i * period`, never
/// "period after the previous send", so a stalled client does not drift and
/// cannot hide its stall (no coordinated omission): every ping sent after
/// its deadline carries its lateness, and the pings whose deadlines passed
/// during a stall are sent back to back, each with its own lateness.
/// Time is passed in, never read here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    pub start_ns: u64,
    pub period_ns: u64,
}

impl Pacer {
    pub fn new(start_ns: u64, period_ns: u64) -> Pacer {
        Pacer {
            start_ns,
            period_ns,
        }
    }

    /// Deadline of the `i`-th ping (0-based), saturating.
    pub fn deadline(&self, i: u64) -> u64 {
        self.start_ns
            .saturating_add(i.saturating_mul(self.period_ns))
    }

    /// How late ping `i` left if it was sent at `sent_ns` (0 if early/on time).
    pub fn lateness(&self, i: u64, sent_ns: u64) -> u64 {
        sent_ns.saturating_sub(self.deadline(i))
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
        let rs = vec![
            rec(0, Status::Ok),
            rec(1, Status::Lost),
            rec(2, Status::Reordered),
            rec(2, Status::Duplicate),
            rec(3, Status::Corrupted),
        ];
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
        assert!(read_csv(bad.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("unknown status"));
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

    /// A synthetic server that drops, duplicates, delays (reorders) and
    /// corrupts chosen sequence ids; the client side's accounting must find
    /// exactly those.
    #[test]
    fn accounting_against_a_faulty_server() {
        let n = 1_000u64;
        let drop = [3u64, 500, 999];
        let dup = [10u64, 11, 700];
        let delay = [20u64, 21, 300]; // each delivered 5 positions later
        let corrupt = [40u64, 41];
        let corrupt_then_ok = 60u64;
        let mut acc = Accounting::with_capacity(n as usize);
        let mut wire: Vec<(u64, bool)> = Vec::new();
        for s in 0..n {
            acc.on_sent(s);
            if drop.contains(&s) {
                continue;
            }
            let ok = !corrupt.contains(&s);
            if s == corrupt_then_ok {
                wire.push((s, false));
            }
            wire.push((s, ok));
            if dup.contains(&s) {
                wire.push((s, true));
            }
        }
        for d in delay {
            let pos = wire.iter().position(|&(s, _)| s == d).unwrap();
            let item = wire.remove(pos);
            wire.insert(pos + 5, item);
        }
        wire.push((5_000, true)); // never sent
        let mut arrivals = Vec::new();
        for (s, ok) in wire {
            arrivals.push((s, acc.on_received(s, ok)));
        }
        let c = acc.counts();
        assert_eq!(c.sent, n);
        assert_eq!(c.lost, 3);
        assert_eq!(c.duplicates, 3);
        assert_eq!(c.reordered, 3);
        assert_eq!(c.corrupted, 2);
        assert_eq!(c.unexpected, 1);
        assert_eq!(c.ok, n - 3 - 3 - 2);
        assert_eq!(c.sent, c.ok + c.reordered + c.corrupted + c.lost);
        assert!(arrivals.contains(&(20, Arrival::Reordered)));
        assert!(arrivals.contains(&(60, Arrival::Corrupted)));
        assert!(arrivals.contains(&(60, Arrival::Ok)));
        assert!(arrivals.contains(&(700, Arrival::Duplicate)));
        assert!(arrivals.contains(&(5_000, Arrival::Unexpected)));
    }

    #[test]
    fn timeouts_make_late_pongs_lost() {
        let mut acc = Accounting::new();
        for s in 100..110 {
            acc.on_sent(s);
        }
        acc.on_timeout(104);
        assert_eq!(acc.on_received(103, true), Arrival::Ok);
        assert_eq!(acc.on_received(105, true), Arrival::Ok);
        assert_eq!(acc.on_received(104, true), Arrival::Late);
        assert_eq!(acc.on_received(99, true), Arrival::Unexpected);
        let c = acc.counts();
        assert_eq!(
            (c.sent, c.ok, c.lost, c.late, c.unexpected),
            (10, 2, 8, 1, 1)
        );
        acc.on_timeout(103); // already received: no effect
        assert_eq!(acc.counts().ok, 2);
    }

    #[test]
    fn counts_from_records() {
        let rs = [
            rec(0, Status::Ok),
            rec(1, Status::Lost),
            rec(1, Status::Duplicate),
            rec(2, Status::Reordered),
        ];
        let c = LossCounts::from_records(&rs);
        assert_eq!(
            (c.sent, c.ok, c.lost, c.duplicates, c.reordered),
            (3, 1, 1, 1, 1)
        );
    }

    /// An artificially stalled client: it stalls for 10 periods before ping
    /// 5; absolute deadlines make the stall visible as lateness on ping 5 and
    /// on the backlog sent right after it, and the schedule does not drift.
    #[test]
    fn lateness_of_a_stalled_client() {
        let period = 100_000;
        let p = Pacer::new(1_000_000, period);
        let mut now = 1_000_000u64;
        let send_cost = 1_000;
        let mut lateness = Vec::new();
        for i in 0..30u64 {
            if i == 5 {
                now += 10 * period; // the stall
            }
            now = now.max(p.deadline(i)); // wait for the deadline (busy-poll)
            lateness.push(p.lateness(i, now));
            now += send_cost;
        }
        assert_eq!(&lateness[..5], &[0, 0, 0, 0, 0]);
        assert_eq!(lateness[5], 9 * period + send_cost);
        assert!(
            lateness[5..16].windows(2).all(|w| w[1] < w[0]),
            "backlog drains"
        );
        assert!(
            lateness[16..].iter().all(|&l| l == 0),
            "back on schedule: {lateness:?}"
        );
        assert_eq!(p.deadline(29), 1_000_000 + 29 * period, "no drift");
        assert_eq!(p.lateness(0, 0), 0);
    }
}

//! What several of the CLI's tests do the same way: run `detpath` and expect
//! a refusal, or start a command that serves `/metrics`, read the address
//! it printed and read a metric from a scrape. (`tests/common/mod.rs`, so cargo does not take it for a test
//! of its own; a test uses what it needs.)
#![allow(dead_code)]

use detpath_testkit::ChildProcess;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_detpath");

/// `detpath ARGS` exits 2 and its stderr says `says`.
pub fn refused<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], says: &str) {
    let out = Command::new(BIN).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: exit 2 expected\n{stderr}");
    assert!(stderr.contains(says), "{args:?}: stderr should say {says:?}:\n{stderr}");
}

/// Starts `detpath ARGS` (with `--metrics ADDR` among them); returns it,
/// stopped by its PID when dropped, and the metrics address it printed first.
pub fn start_with_metrics<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (ChildProcess, SocketAddr) {
    let mut child = ChildProcess(Command::new(BIN).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap());
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let line = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = line
        .strip_prefix("metrics on http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no metrics address printed: {line:?}"));
    // Keep draining stderr so the child never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    (child, addr)
}

/// A metric's value in a scrape (Prometheus text): the first series of
/// `name` whose labels include every one of `labels`.
pub fn metric_value(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

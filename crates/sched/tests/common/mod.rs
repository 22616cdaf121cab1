//! Shared by the PTP tests: ptp4l (linuxptp) as a child process
//! in a testbed namespace, killed by its PID on drop, with its output lines.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// Where ptp4l is, if linuxptp is installed.
pub fn ptp4l_path() -> Option<String> {
    ["/usr/sbin/ptp4l", "/usr/bin/ptp4l", "/sbin/ptp4l"].iter().find(|p| std::path::Path::new(p).exists()).map(|p| p.to_string())
}

/// One ptp4l printout line: ptp4l's CLOCK_MONOTONIC time stamp (ns) and the text after it.
#[derive(Debug, Clone)]
pub struct Line {
    pub mono_ns: u64,
    pub text: String,
}

/// A running ptp4l: killed (by PID) and reaped on drop; its config file removed.
pub struct Ptp4l {
    child: Child,
    conf: std::path::PathBuf,
    uds: std::path::PathBuf,
    lines: Arc<Mutex<Vec<Line>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Ptp4l {
    /// Starts `ptp4l -4 -S -m -f <config> -i <iface>` in namespace `ns`.
    /// `config` is the body of the `[global]` section. ptp4l's lines carry its
    /// CLOCK_MONOTONIC time as `ptp4l[SECONDS.MILLIS]:`.
    pub fn start(path: &str, ns: &str, iface: &str, config: &str) -> Ptp4l {
        let conf = std::env::temp_dir().join(format!("detpath-ptp4l-{}-{ns}.conf", std::process::id()));
        // Its own management socket: two ptp4l at once must not share /var/run/ptp4l.
        let uds = std::env::temp_dir().join(format!("detpath-ptp4l-{}-{ns}.sock", std::process::id()));
        std::fs::write(&conf, format!("[global]\n{config}\nuds_address {}\n", uds.display())).expect("writing the ptp4l config");
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, path, "-4", "-S", "-m", "-f"])
            .arg(&conf)
            .args(["-i", iface])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting ptp4l");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        for stream in
            [child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>), child.stderr.take().map(|s| Box::new(s) as _)].into_iter().flatten()
        {
            let lines = lines.clone();
            readers.push(std::thread::spawn(move || {
                for l in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mono_ns = parse_stamp(&l).unwrap_or_else(detpath::monotonic_ns);
                    let text = l.split_once("]: ").map(|(_, t)| t.to_string()).unwrap_or(l);
                    lines.lock().unwrap().push(Line { mono_ns, text });
                }
            }));
        }
        Ptp4l { child, conf, uds, lines, readers }
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<Line> {
        self.lines.lock().unwrap().clone()
    }

    /// Stops ptp4l (SIGTERM: it flushes what it printed) and returns every line.
    pub fn stop(mut self) -> Vec<Line> {
        self.terminate();
        for r in std::mem::take(&mut self.readers) {
            let _ = r.join();
        }
        self.lines()
    }

    fn terminate(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        // `ip netns exec` execs ptp4l, so the child's PID is ptp4l's own.
        // SAFETY: kill(2) on the PID of our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Ptp4l {
    fn drop(&mut self) {
        self.terminate();
        let _ = std::fs::remove_file(&self.conf);
        let _ = std::fs::remove_file(&self.uds);
    }
}

/// `ptp4l[1234.567]: ...` → 1234.567 s in ns.
fn parse_stamp(l: &str) -> Option<u64> {
    let inner = l.strip_prefix("ptp4l[")?.split(']').next()?;
    let (s, ms) = inner.split_once('.')?;
    Some(s.parse::<u64>().ok()? * 1_000_000_000 + ms.parse::<u64>().ok()? * 1_000_000)
}

/// `master offset X s2 freq F path delay D` → (X, D).
pub fn master_offset(text: &str) -> Option<(i64, i64)> {
    let rest = text.strip_prefix("master offset")?;
    let mut it = rest.split_whitespace();
    let offset = it.next()?.parse().ok()?;
    let delay = rest.split("path delay").nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some((offset, delay))
}

/// The p-quantile of `v` (sorted in place).
pub fn quantile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    if v.is_empty() {
        return 0;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

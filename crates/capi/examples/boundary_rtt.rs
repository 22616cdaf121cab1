//! What the language boundary costs: closed-loop round trips from one Rust
//! client to three echo servers on the same datapath, the echo loop written
//! in Rust (in process), in C (`examples/c/echo.c` over libdetpath) and in
//! Python (`crates/python/examples/echo.py` over the detpath module). Client
//! in testbed namespace a pinned to core 0, server in namespace b pinned to
//! core 1 (`rt_core` spec keys, so each server's polling thread is pinned
//! the same way). Prints median and p99 round-trip time per server and the
//! difference to the Rust server.
//!
//! ```text
//! cargo build --release -p detpath-capi            # libdetpath.so
//! crates/python/run-tests.sh -q                    # or any way to get the wheel unpacked in target/python-test-site
//! cargo run --release -p detpath-capi --example boundary_rtt -- [--rounds N] [--size B] [--datapath afxdp] [--python-path DIR]
//! ```
//! (root: namespaces and XDP).

use dp::testbed::{Testbed, TestbedConfig};
use dp::{Endpoint, RecvMode};
use std::io::{BufRead, BufReader};
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const WARMUP: usize = 2000;
/// A round without an echo by then is lost (counted, left out of the figures).
const LOSS_TIMEOUT: Duration = Duration::from_millis(200);

struct Options {
    rounds: usize,
    size: usize,
    datapath: String,
    python_path: PathBuf,
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn target_dir() -> PathBuf {
    // target/<profile>/examples/boundary_rtt
    let exe = std::env::current_exe().expect("own path");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

fn options() -> Options {
    let mut o = Options { rounds: 20_000, size: 64, datapath: "afxdp".into(), python_path: target_dir().parent().unwrap().join("python-test-site") };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--rounds", Some(n)) => o.rounds = n.parse().expect("--rounds takes a number"),
            ("--size", Some(n)) => o.size = n.parse().expect("--size takes a number"),
            ("--datapath", Some(d)) => o.datapath = d,
            ("--python-path", Some(p)) => o.python_path = p.into(),
            _ => {
                eprintln!("usage: boundary_rtt [--rounds N] [--size B] [--datapath afxdp|udp|xdppoll] [--python-path DIR]");
                std::process::exit(2);
            }
        }
    }
    o
}

/// An echo server process; killed (by its pid) when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program args` in namespace `ns`; waits for its "echo on" line.
fn spawn_in_ns(ns: &str, program: &Path, args: &[&str], env: &[(&str, &Path)]) -> Result<Server, String> {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]).arg(program).args(args).stdout(Stdio::piped()).stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| format!("starting {}: {e}", program.display()))?;
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).map_err(|e| e.to_string())?;
    if !first.starts_with("echo on") {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("{} did not start (see its error above)", program.display()));
    }
    Ok(Server(child))
}

/// Builds libdetpath.so of this profile when run by `cargo run` (CARGO is
/// set), so the C servers never measure a stale library.
fn fresh_library(lib: &Path) -> Result<(), String> {
    let Ok(cargo) = std::env::var("CARGO") else { return Ok(()) };
    let mut build = Command::new(cargo);
    build.args(["build", "-q", "-p", "detpath-capi", "--lib"]).env("CARGO_TARGET_DIR", lib.parent().unwrap_or(lib));
    if lib.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    let st = build.status().map_err(|e| format!("cargo: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err("building libdetpath.so failed".into())
    }
}

fn compile_c(source: &Path, name: &str) -> Result<PathBuf, String> {
    let lib = target_dir();
    fresh_library(&lib)?;
    if !lib.join("libdetpath.so").exists() {
        return Err(format!("no libdetpath.so in {}: run `cargo build --release -p detpath-capi`", lib.display()));
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = lib.join("examples").join(name);
    let st = Command::new("cc")
        .args(["-O2", "-std=gnu11"])
        .arg(format!("-I{}", manifest.join("include").display()))
        .arg(source)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ldetpath", "-o"])
        .arg(&out)
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !st.success() {
        return Err(format!("compiling {} failed", source.display()));
    }
    Ok(out)
}

struct Measured {
    median_us: f64,
    p99_us: f64,
    per_sec: f64,
    /// Rounds without an echo within LOSS_TIMEOUT (left out of the figures).
    lost: usize,
}

/// The Rust client: `rounds` closed-loop round trips after a warm-up.
fn measure(tb: &Testbed, o: &Options, client_port: u16, server: SocketAddrV4) -> Result<Measured, String> {
    let uri = format!("{}&rt_core=0&rt_mlock=false", tb.a().uri(&o.datapath, client_port));
    tb.a()
        .run(|| {
            let mut ep: Box<dyn Endpoint> = detpath_open::open(&uri).map_err(|e| e.to_string())?;
            // The round number leads each payload, so a late echo of a lost
            // round is recognised and skipped instead of timing the next one.
            let mut out = vec![0x5au8; o.size.max(8)];
            let mut back = vec![0u8; 2048];
            let mut rtts = Vec::with_capacity(o.rounds);
            let mut lost = 0usize;
            let started = std::time::Instant::now();
            for i in 0..WARMUP + o.rounds {
                out[..8].copy_from_slice(&(i as u64).to_le_bytes());
                let t0 = dp::monotonic_ns();
                ep.send_to(&out, server).map_err(|e| e.to_string())?;
                let deadline = t0 + LOSS_TIMEOUT.as_nanos() as u64;
                let echoed = loop {
                    let left = Duration::from_nanos(deadline.saturating_sub(dp::monotonic_ns()));
                    match ep.recv(&mut back, RecvMode::BusyPoll { timeout: Some(left) }).map_err(|e| e.to_string())? {
                        Some(rx) if rx.len >= 8 && back[..8] == out[..8] => break Some(rx.rx_ns),
                        Some(_) => continue,
                        None => break None,
                    }
                };
                match echoed {
                    Some(rx_ns) if i >= WARMUP => rtts.push(rx_ns - t0),
                    Some(_) => {}
                    None => lost += 1,
                }
                if lost > (WARMUP + o.rounds) / 100 {
                    return Err(format!("more than 1% of the rounds lost ({lost} by round {i})"));
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            rtts.sort_unstable();
            let rank = |q: f64| rtts[((q * rtts.len() as f64).ceil() as usize).clamp(1, rtts.len()) - 1] as f64 / 1000.0;
            Ok(Measured { median_us: rank(0.5), p99_us: rank(0.99), per_sec: (WARMUP + o.rounds) as f64 / elapsed, lost })
        })
        .map_err(|e| e.to_string())?
}

/// ns per receive call that finds nothing (timeout 0), from Rust, C and
/// Python, on one endpoint of `o.datapath` in namespace b, pinned to core 1.
fn call_costs(tb: &Testbed, o: &Options) {
    const CALLS: usize = 1_000_000;
    let spec = format!("{}&rt_core=1&rt_mlock=false", tb.b().uri(&o.datapath, 7790));
    println!("\nreceive call that finds nothing ({CALLS} calls, core 1):");
    let rust = tb.b().run(|| -> Result<f64, String> {
        let mut ep = detpath_open::open(&spec).map_err(|e| e.to_string())?;
        let mut buf = [0u8; 2048];
        let t0 = dp::monotonic_ns();
        for _ in 0..CALLS {
            if ep.recv(&mut buf, RecvMode::NonBlocking).map_err(|e| e.to_string())?.is_some() {
                return Err("unexpected datagram".into());
            }
        }
        Ok((dp::monotonic_ns() - t0) as f64 / CALLS as f64)
    });
    let run = |program: &Path, args: &[&str], env: &[(&str, &Path)]| -> Result<f64, String> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &tb.b().netns]).arg(program).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim().strip_prefix("ns_per_call ").and_then(|v| v.parse().ok()).ok_or_else(|| format!("{}{}", text, String::from_utf8_lossy(&out.stderr)))
    };
    let calls = CALLS.to_string();
    let c = compile_c(&manifest().join("examples/call_cost.c"), "c-call-cost").and_then(|exe| run(&exe, &[&spec, &calls], &[]));
    let py_calls = (CALLS / 10).to_string();
    let py_code = "import sys, time, detpath\nep = detpath.open(sys.argv[1]); n = int(sys.argv[2]); r = ep.recv\nt0 = time.monotonic_ns()\nfor _ in range(n):\n    assert r(timeout=0) is None\nprint('ns_per_call %.1f' % ((time.monotonic_ns() - t0) / n))";
    let py = run(Path::new("/usr/bin/python3"), &["-c", py_code, &spec, &py_calls], &[("PYTHONPATH", o.python_path.as_path())]);
    let rust = rust.map_err(|e| e.to_string()).and_then(|r| r);
    for (lang, r) in [("rust", &rust), ("c", &c), ("python", &py)] {
        match (r, &rust) {
            (Ok(ns), Ok(base)) => println!("{lang:<8} {ns:>9.1} ns/call  ({:+.1} ns over Rust)", ns - base),
            (Ok(ns), Err(_)) => println!("{lang:<8} {ns:>9.1} ns/call"),
            (Err(e), _) => println!("{lang:<8} error: {e}"),
        }
    }
}

fn main() {
    let o = options();
    let tb = Testbed::up(TestbedConfig::unique("brtt")).expect("testbed up (needs root)");
    let b = tb.b().clone();
    println!("{} echo servers, {} B payload, {} rounds (+{WARMUP} warm-up), Rust client on core 0, server on core 1", o.datapath, o.size, o.rounds);
    println!("{:<8} {:>11} {:>11} {:>13} {:>13} {:>6}  datapath", "server", "median µs", "p99 µs", "Δmedian µs", "round trips/s", "lost");
    let mut rust_median = None;
    for (i, lang) in ["rust", "c", "python"].iter().enumerate() {
        let port = 7700 + 2 * i as u16;
        let spec = format!("{}&rt_core=1&rt_mlock=false", b.uri(&o.datapath, port));
        let server = SocketAddrV4::new(b.addr, port);
        let stop = Arc::new(AtomicBool::new(false));
        let mut thread = None;
        let mut process = None;
        let started: Result<(), String> = match *lang {
            "rust" => {
                let (tx, rx) = std::sync::mpsc::channel();
                let stop_s = stop.clone();
                thread = Some(b.spawn(move || {
                    let mut ep = match detpath_open::open(&spec) {
                        Ok(ep) => ep,
                        Err(e) => return tx.send(Err(e.to_string())).unwrap(),
                    };
                    tx.send(Ok(())).unwrap();
                    let mut buf = vec![0u8; 2048];
                    while !stop_s.load(Ordering::Relaxed) {
                        if let Ok(Some(rx)) = ep.recv(&mut buf, RecvMode::BusyPoll { timeout: Some(Duration::from_millis(10)) }) {
                            let _ = ep.send_to(&buf[..rx.len], rx.peer);
                        }
                    }
                }));
                rx.recv().map_err(|e| e.to_string()).and_then(|r| r)
            }
            "c" => compile_c(&manifest().join("../../examples/c/echo.c"), "c-echo")
                .and_then(|exe| spawn_in_ns(&b.netns, &exe, &[&spec], &[]))
                .map(|s| process = Some(s)),
            _ => {
                let script = manifest().join("../python/examples/echo.py");
                let args = [script.to_str().unwrap(), spec.as_str()];
                spawn_in_ns(&b.netns, Path::new("/usr/bin/python3"), &args, &[("PYTHONPATH", o.python_path.as_path())]).map(|s| process = Some(s))
            }
        };
        let result = started.and_then(|_| measure(&tb, &o, port + 1, server));
        stop.store(true, Ordering::Relaxed);
        if let Some(t) = thread {
            let _ = t.join();
        }
        drop(process);
        match result {
            Ok(m) => {
                if *lang == "rust" {
                    rust_median = Some(m.median_us);
                }
                let delta = rust_median.map_or("-".to_string(), |base| format!("{:+.2}", m.median_us - base));
                println!("{lang:<8} {:>11.2} {:>11.2} {delta:>13} {:>13.0} {:>6}  {}", m.median_us, m.p99_us, m.per_sec, m.lost, o.datapath);
            }
            Err(e) => println!("{lang:<8} error: {e}"),
        }
    }
    call_costs(&tb, &o);
}

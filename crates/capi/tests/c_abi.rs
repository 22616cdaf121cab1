//! The C ABI from C and C++: each program is compiled with the system `cc` /
//! `g++` against the built libdetpath.so and include/detpath.h, then run.
//!
//! - `bad_input.c`: NULL pointers, empty and short buffers, invalid specs,
//!   made-up and closed handles, a busy handle, per-thread errors (127.0.0.1).
//! - `smoke.cpp`: the header as C++.
//! - `sched.c`: a `sched=slots` spec (the slot scheduler's keys): a datagram
//!   is held until its class's slot and leaves in it; bad keys are named (127.0.0.1).
//! - `dds.c`: the DDS API's bad input and take corner cases (127.0.0.1).
//! - `dds_budget.c`: TRANSPORT_PRIORITY and LATENCY_BUDGET, the budget
//!   status and the over-budget wait (127.0.0.1).
//! - `ros2.c`: writers and readers under ROS 2's DDS names (127.0.0.1).
//! - `check.h`: the CHECK macros every C test shares.
//! - `examples/dds/hello_pub.c`, `hello_sub.c`: the DDS hello world, one
//!   per testbed namespace, on udp and afxdp (root).
//! - `examples/c/echo.c`: the echo server in the testbed's namespace b, on
//!   udp and afxdp, one datagram per call and in batches, answering a Rust
//!   client in namespace a (root: namespaces and XDP).

use dp::testbed::{Testbed, TestbedConfig};
use dp::RecvMode;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// target/<profile>: where cargo puts libdetpath.so (the test binary is in its deps/).
///
/// `cargo test` does not rebuild a cdylib for integration tests, so the
/// first call builds the library of this profile (a no-op when it is fresh):
/// the C programs never run against a stale libdetpath.so.
fn lib_dir() -> PathBuf {
    static FRESH: OnceLock<PathBuf> = OnceLock::new();
    FRESH
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf();
            let profile = dir.file_name().and_then(|p| p.to_str()).unwrap_or("debug").to_string();
            let target = dir.parent().expect("target dir");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = Command::new(cargo);
            build.args(["build", "-p", "detpath-capi", "--lib"]).env("CARGO_TARGET_DIR", target);
            match profile.as_str() {
                "debug" => {}
                "release" => {
                    build.arg("--release");
                }
                other => {
                    build.args(["--profile", other]);
                }
            }
            let out = build.output().expect("running cargo to build libdetpath.so");
            assert!(out.status.success(), "building libdetpath.so failed:\n{}", String::from_utf8_lossy(&out.stderr));
            assert!(dir.join("libdetpath.so").exists(), "libdetpath.so not in {}", dir.display());
            dir
        })
        .clone()
}

/// Compiles one C or C++ file against the library (once per test run, so
/// tests running in parallel never overwrite a program another one runs).
fn compile(compiler: &str, source: &Path, extra: &[&str]) -> PathBuf {
    static BUILT: Mutex<BTreeMap<PathBuf, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap();
    if let Some(done) = built.get(source) {
        return done.clone();
    }
    let out = compile_now(compiler, source, extra);
    built.insert(source.to_path_buf(), out.clone());
    out
}

fn compile_now(compiler: &str, source: &Path, extra: &[&str]) -> PathBuf {
    let lib = lib_dir();
    let out_dir = lib.join("c-tests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(source.file_stem().unwrap());
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let output = Command::new(compiler)
        .args(extra)
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread"])
        .arg(format!("-I{}", include.display()))
        .arg(source)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldetpath")
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("running {compiler} (install gcc/g++): {e}"));
    assert!(output.status.success(), "{compiler} {}:\n{}", source.display(), String::from_utf8_lossy(&output.stderr));
    out
}

fn run_to_end(program: &Path) -> String {
    let out = Command::new(program).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{} failed: {}\n{stdout}", program.display(), String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn bad_input_from_c_is_an_error_never_a_crash() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/bad_input.c");
    let stdout = run_to_end(&compile("cc", &src, &["-std=gnu11"]));
    println!("{stdout}");
    let n: usize = stdout.trim().strip_prefix("ok: ").and_then(|s| s.strip_suffix(" checks")).and_then(|s| s.parse().ok()).unwrap();
    assert!(n >= 80, "only {n} checks ran");
}

#[test]
fn counters_by_name_from_c_match_the_struct() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/counters.c");
    let stdout = run_to_end(&compile("cc", &src, &["-std=gnu11"]));
    assert!(stdout.starts_with("ok: "), "{stdout}");
}

#[test]
fn header_compiles_and_works_as_cxx() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/smoke.cpp");
    let stdout = run_to_end(&compile("g++", &src, &["-std=c++17"]));
    assert!(stdout.starts_with("ok: C++ udp"), "{stdout}");
}

#[test]
fn sched_keys_from_c_send_in_their_slot_and_bad_keys_are_named() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/sched.c");
    let stdout = run_to_end(&compile("cc", &src, &["-std=gnu11"]));
    assert!(stdout.starts_with("ok: "), "{stdout}");
}

/// Kills the echo process if the test fails before it exits.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

const ROUNDS: usize = 200;

fn echo_in_testbed(datapath: &str, batch: bool) {
    let echo = compile("cc", &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/c/echo.c"), &["-std=gnu11"]);
    let tb = Testbed::up(TestbedConfig::unique("cb")).expect("testbed up (needs root)");
    let port = 7300;
    let spec = tb.b().uri(datapath, port);
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &tb.b().netns]).arg(&echo).arg(&spec).args(["--count", &ROUNDS.to_string()]);
    if batch {
        cmd.arg("--batch");
    }
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut child = Reaper(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = match lines.next() {
        Some(Ok(l)) => l,
        _ => {
            let mut err = String::new();
            child.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("echo {spec} did not start: {err}");
        }
    };
    assert!(first.starts_with(&format!("echo on {}:{port} ({datapath}", tb.b().addr)), "{first}");

    let server = SocketAddrV4::new(tb.b().addr, port);
    let client_uri = tb.a().uri("udp", port + 1);
    let mut ep = tb.a().run(|| detpath_open::open(&client_uri)).unwrap().expect("client endpoint");
    let wait = RecvMode::BusyPoll { timeout: Some(Duration::from_secs(2)) };
    let mut back = vec![0u8; 2048];
    let burst = if batch { 8 } else { 1 };
    let mut round = 0;
    while round < ROUNDS {
        let n = burst.min(ROUNDS - round);
        let payloads: Vec<Vec<u8>> = (round..round + n).map(|i| (0..(i * 7) % 1400).map(|j| (i + j) as u8).collect()).collect();
        for p in &payloads {
            ep.send_to(p, server).unwrap();
        }
        for p in &payloads {
            let rx = ep.recv(&mut back, wait).unwrap().unwrap_or_else(|| panic!("no echo of round {round} from the C echo ({spec})"));
            assert_eq!(&back[..rx.len], &p[..], "round {round}: the echo differs");
            assert_eq!(rx.peer, server);
            round += 1;
        }
    }
    let status = child.0.wait().unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "echo exited with {status}: {rest:?}");
    let last = rest.last().cloned().unwrap_or_default();
    assert!(last.starts_with(&format!("echoed {ROUNDS}; rx_packets {ROUNDS} tx_packets {ROUNDS}")), "{last}");
}

#[test]
fn c_echo_on_udp() {
    echo_in_testbed("udp", false);
}

#[test]
fn c_echo_on_afxdp() {
    echo_in_testbed("afxdp", false);
}

#[test]
fn c_echo_on_afxdp_in_batches() {
    echo_in_testbed("afxdp", true);
}

/// detpath.pc.in, installed into a scratch prefix the way `make install`
/// does, builds echo.c both ways: shared (`pkg-config --libs`) and static
/// (`pkg-config --static --libs` against libdetpath.a alone).
#[test]
fn pkg_config_file_links_shared_and_static() {
    let lib = lib_dir();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let prefix = lib.join("c-tests/prefix");
    for (kind, file) in [("shared", "libdetpath.so"), ("static", "libdetpath.a")] {
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(prefix.join("lib/pkgconfig")).unwrap();
        std::fs::create_dir_all(prefix.join("include")).unwrap();
        std::fs::copy(lib.join(file), prefix.join("lib").join(file)).unwrap();
        std::fs::copy(manifest.join("include/detpath.h"), prefix.join("include/detpath.h")).unwrap();
        let pc = std::fs::read_to_string(manifest.join("detpath.pc.in"))
            .unwrap()
            .replace("@PREFIX@", prefix.to_str().unwrap())
            .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
        std::fs::write(prefix.join("lib/pkgconfig/detpath.pc"), pc).unwrap();
        let mut pkg = Command::new("pkg-config");
        pkg.env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"));
        if kind == "static" {
            pkg.arg("--static");
        }
        let flags = pkg.args(["--cflags", "--libs", "detpath"]).output().expect("pkg-config (install pkg-config)");
        assert!(flags.status.success(), "pkg-config: {}", String::from_utf8_lossy(&flags.stderr));
        let flags = String::from_utf8(flags.stdout).unwrap();
        let out = prefix.join(format!("echo-{kind}"));
        let mut cc = Command::new("cc");
        cc.arg(manifest.join("../../examples/c/echo.c")).args(flags.split_whitespace()).arg("-o").arg(&out);
        if kind == "shared" {
            cc.arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()));
        }
        let built = cc.output().unwrap();
        assert!(built.status.success(), "{kind} link with `{}`: {}", flags.trim(), String::from_utf8_lossy(&built.stderr));
        // Without arguments the program prints its usage and exits 2: it loaded and ran.
        let ran = Command::new(&out).output().unwrap();
        assert_eq!(ran.status.code(), Some(2), "{kind}: {}", String::from_utf8_lossy(&ran.stderr));
        assert!(String::from_utf8_lossy(&ran.stderr).contains("usage"));
        let bad = Command::new(&out).arg("bogus://x").output().unwrap();
        assert_eq!(bad.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown datapath `bogus`"), "{kind}: {}", String::from_utf8_lossy(&bad.stderr));
    }
}

#[test]
fn dds_bad_input_from_c_is_an_error_never_a_crash() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/dds.c");
    let stdout = run_to_end(&compile("cc", &src, &["-std=gnu11"]));
    assert!(stdout.starts_with("ok: "), "{stdout}");
}

/// TRANSPORT_PRIORITY and LATENCY_BUDGET from C: the QoS text, the budget
/// status and the over-budget wait (tests/c/dds_budget.c, on 127.0.0.1).
#[test]
fn dds_budget_status_and_over_budget_wait_from_c() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/dds_budget.c");
    let stdout = run_to_end(&compile("cc", &src, &["-std=gnu11"]));
    assert!(stdout.starts_with("ok: "), "{stdout}");
}

/// ROS 2 names from C: a writer on `/chatter` of `std_msgs/msg/String` is
/// matched under `rt/chatter` and `std_msgs::msg::dds_::String_`; names ROS
/// refuses are errors (tests/c/ros2.c, on 127.0.0.1).
#[test]
fn dds_ros2_names_from_c() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/ros2.c");
    let stdout = run_to_end(&compile("cc", &src, &["-std=gnu11"]));
    assert!(stdout.starts_with("ok: "), "{stdout}");
}

fn dds_hello_world(datapath: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/dds");
    let (publisher, subscriber) = (compile("cc", &dir.join("hello_pub.c"), &["-std=gnu11"]), compile("cc", &dir.join("hello_sub.c"), &["-std=gnu11"]));
    for f in ["hello_pub.c", "hello_sub.c"] {
        let lines = std::fs::read_to_string(dir.join(f)).unwrap().lines().count();
        assert!(lines < 30, "{f}: {lines} lines (a hello world stays under 30)");
    }
    let tb = Testbed::up(TestbedConfig::unique("cd")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let run = |side: &dp::testbed::Side, prog: &Path, peer: std::net::Ipv4Addr| {
        Command::new("ip").args(["netns", "exec", &side.netns]).arg(prog).arg(side.uri(datapath, 7410)).arg(peer.to_string()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let sub = Reaper(run(b, &subscriber, a.addr));
    let publ = Reaper(run(a, &publisher, b.addr));
    let (mut sub, mut publ) = (sub, publ);
    let (mut out, mut err) = (String::new(), String::new());
    sub.0.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    sub.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let sub_status = sub.0.wait().unwrap();
    let mut perr = String::new();
    publ.0.stderr.take().unwrap().read_to_string(&mut perr).unwrap();
    let pub_status = publ.0.wait().unwrap();
    assert!(sub_status.success() && pub_status.success(), "hello_sub: {err}; hello_pub: {perr}");
    let want: Vec<String> = (0..10).map(|i| format!("4 {i}: hello from C {i}")).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "every greeting in order over {datapath}");
}

#[test]
fn c_dds_hello_world_on_udp() {
    dds_hello_world("udp");
}

#[test]
fn c_dds_hello_world_on_afxdp() {
    dds_hello_world("afxdp");
}

//! `detpath bench --trace-kernel` end to end: the run's tail section carries
//! the kernel tracer's account (records seen, none required to be lost, the
//! rule), and after the run, and after a SIGINT in the middle of one, no
//! tracer program is left loaded in the kernel.

use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");


/// Programs of the tracer still loaded (their names start with `kt_`), as bpftool lists them.
fn tracer_programs() -> usize {
    let out = Command::new("bpftool").args(["prog", "list"]).output().expect("bpftool (deps/apt-classify.txt)");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(" name kt_")).count()
}

/// The tracer's programs still loaded once the kernel has had time to free
/// them: a process's programs go when its last descriptor closes, but the
/// kernel frees them after an RCU grace period, which on a loaded 2-vCPU
/// machine can outlast the exit by a while. Polls for up to 10 s.
fn tracer_programs_after_exit() -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = tracer_programs();
        if n == 0 || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn scratch() -> std::path::PathBuf {
    let out = Command::new("mktemp").args(["-d", "-t", "detpath-trace-XXXXXXXX"]).output().expect("mktemp");
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn a_traced_run_reports_the_kernel_side_and_leaves_nothing_attached() {
    if !detpath_testkit::need_root("a_traced_run_reports_the_kernel_side_and_leaves_nothing_attached", "BPF tracing") {
        return;
    }
    let out = scratch();
    let run = Command::new(BIN)
        .args(["bench", "--datapath", "udp", "--rounds", "3000", "--warmup", "100", "--trace-kernel", "--testbed", "detpath-ktr", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let dir = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let kt = &summary["runs"][0]["tail"]["kernel_trace"];
    assert!(kt["events"].as_u64().unwrap() > 0, "the tracer recorded nothing: {kt}");
    assert!(kt["rule"].as_str().unwrap().contains("50%"), "{kt}");
    assert!(summary["runs"][0]["tail"]["method"].as_str().unwrap().contains("kernel tracer"));
    assert_eq!(tracer_programs_after_exit(), 0, "tracer programs left after a normal exit");

    // SIGINT in the middle of a traced run: saved as interrupted, nothing left attached.
    let mut child = Command::new(BIN)
        .args(["bench", "--datapath", "udp", "--rounds", "400000", "--trace-kernel", "--testbed", "detpath-kti", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tracer_programs() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(tracer_programs() > 0, "the traced run never attached its tracer");
    // SAFETY: signalling the child we started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    assert_eq!(tracer_programs_after_exit(), 0, "tracer programs left after Ctrl-C");
    let _ = std::fs::remove_dir_all(&out);
}

//! A panic in a real process runs every undo: the program below is its own
//! child. The parent starts it again with `DETPATH_PANIC_CHILD` set; the
//! child, inside `cleanup::guard_main`, creates a network namespace (undone
//! by a registered cleanup, as the testbed's is), starts a tied child
//! process (`sleep`, as stress-ng is), holds an `UndoGuard` for a file, and
//! panics. The parent checks the exit status is 101 and nothing is left.
//! (`harness = false`: a panicking test inside libtest's harness would be
//! caught by the harness, not by `guard_main`.)

use detpath_sys::cleanup::{self, UndoGuard};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn child(dir: &Path, ns: &str) -> i32 {
    cleanup::guard_main(|| {
        assert!(Command::new("ip").args(["netns", "add", ns]).status().unwrap().success());
        let name = ns.to_string();
        // Registered from this thread, undone by guard_main's cleanup.
        std::mem::forget(cleanup::register(
            format!("namespace {ns}"),
            Box::new(move || {
                let _ = Command::new("ip").args(["netns", "del", &name]).status();
            }),
        ));
        let mut cmd = Command::new("sleep");
        cmd.arg("300");
        let sleeper = cleanup::spawn_tied(&mut cmd, "sleep").unwrap();
        std::fs::write(dir.join("sleeper.pid"), sleeper.id().to_string()).unwrap();
        let marker = dir.join("marker");
        std::fs::write(&marker, "x").unwrap();
        let _guard = UndoGuard::new("marker file", None, move || std::fs::remove_file(&marker).map_err(|e| e.to_string()));
        std::fs::write(dir.join("ready"), "").unwrap();
        let _keep = sleeper;
        panic!("a bug, on purpose");
    })
}

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0): read its state instead.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| !s.split(") ").nth(1).unwrap_or("").starts_with('Z')).unwrap_or(false)
}

fn main() {
    if let Ok(dir) = std::env::var("DETPATH_PANIC_CHILD") {
        let ns = std::env::var("DETPATH_PANIC_NS").unwrap();
        std::process::exit(child(Path::new(&dir), &ns));
    }
    if std::env::args().any(|a| a == "--list") {
        println!("a_panic_in_a_real_process_undoes_everything: test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = format!("detpath-panic-{}", std::process::id());
    let out = Command::new(std::env::current_exe().unwrap()).env("DETPATH_PANIC_CHILD", dir.path()).env("DETPATH_PANIC_NS", &ns).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cleanup_ns = || {
        let _ = Command::new("ip").args(["netns", "del", &ns]).status();
    };
    if !dir.path().join("ready").exists() {
        cleanup_ns();
        panic!("the child did not get to its panic: {stderr}");
    }
    let pid: i32 = std::fs::read_to_string(dir.path().join("sleeper.pid")).unwrap().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let ns_left = Path::new("/run/netns").join(&ns).exists();
    let marker_left = PathBuf::from(dir.path()).join("marker").exists();
    let sleeper_left = alive(pid);
    if ns_left {
        cleanup_ns();
    }
    if sleeper_left {
        // SAFETY: kill on a pid this test's child started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(out.status.code(), Some(101), "exit status of a panic: {:?}\n{stderr}", out.status);
    assert!(stderr.contains("a bug, on purpose") && stderr.contains("undoing every change"), "{stderr}");
    assert!(!ns_left, "namespace {ns} left behind");
    assert!(!marker_left, "the panicking thread's guard did not run");
    assert!(!sleeper_left, "tied child {pid} outlived the panic");
    println!("test a_panic_in_a_real_process_undoes_everything ... ok");
}

//! What a test needs from the machine, and what happens when it is missing.
//!
//! detpath's tests run real parts: namespaces and XDP (root), ddsperf,
//! ptp4l, z3, scapy, a second CPU. The Makefile installs every tool and CI
//! runs as root on two cores, so in CI (`CI=true`) a missing requirement is
//! a **failure** that names the fix, never a pass. Elsewhere (a developer's
//! laptop without root) the test is skipped, by name: it prints
//! `SKIP <test>: <what> (<fix>)` and appends the same line to
//! `target/skipped-tests.log`, which `make test` counts and lists at the
//! end, so a skip is never hidden in a green summary.
//!
//! ```
//! fn a_test_that_needs_z3() {
//!     if !detpath_testkit::need("a_test_that_needs_z3", "z3", detpath_testkit::have_tool("z3"), "apt-get install z3 (make deps)") {
//!         return;
//!     }
//!     // ... the test proper
//! }
//! assert!(detpath_testkit::have_tool("sh")); // on PATH everywhere
//! ```

mod child;
pub use child::ChildProcess;

use std::io::Write;
use std::path::PathBuf;

/// The environment variable that says the tests run in CI (set by CI systems and by `.ci/run`'s caller).
pub(crate) const CI_VAR: &str = "CI";
/// Where skips are logged, when set (else `target/skipped-tests.log` beside the test binary).
pub(crate) const SKIP_LOG_VAR: &str = "DETPATH_SKIP_LOG";

/// True when the tests run in CI (`CI=true` or `CI=1`).
pub(crate) fn in_ci() -> bool {
    matches!(std::env::var(CI_VAR).as_deref(), Ok("true") | Ok("1") | Ok("TRUE") | Ok("True"))
}

/// Whether `test` may go on: `true` when `present`. When not: in CI it
/// panics with `what` is missing and `fix`; elsewhere it reports the skip
/// (stdout and the skip log) and returns `false`, and the test returns.
pub fn need(test: &str, what: &str, present: bool, fix: &str) -> bool {
    if present {
        return true;
    }
    let line = format!("{test}: needs {what} ({fix})");
    if in_ci() {
        panic!("{line}: missing in CI, where the Makefile installs every tool and the tests run as root; a missing requirement fails here instead of skipping");
    }
    println!("SKIP {line}");
    log_skip(&line);
    false
}

/// [`need`] for root (network namespaces, XDP, BPF tracing, cpusets).
pub fn need_root(test: &str, why: &str) -> bool {
    need(test, &format!("root ({why})"), is_root(), "run the tests as root, e.g. `sudo make test`")
}

/// [`need`] for `n` online CPUs.
pub fn need_cpus(test: &str, n: usize) -> bool {
    let have = online_cpus();
    need(test, &format!("{n} online CPUs (this machine has {have})"), have >= n, "run on a machine with more cores")
}

/// [`need`] for a program on `PATH`, with the package that brings it.
pub fn need_tool(test: &str, tool: &str, package: &str) -> bool {
    need(test, tool, have_tool(tool), &format!("apt-get install {package}; `make deps` installs it"))
}

/// The effective user is root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `tool` is an executable file on `PATH` (or a path to one).
pub fn have_tool(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: PathBuf| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    if tool.contains('/') {
        return executable(PathBuf::from(tool));
    }
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| executable(d.join(tool))))
}

/// CPUs online now.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The skip log: `$DETPATH_SKIP_LOG`, else `skipped-tests.log` in the cargo
/// target directory this test binary was built in (`target/<profile>/deps/<bin>`).
pub(crate) fn skip_log() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(SKIP_LOG_VAR) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let target = exe.ancestors().find(|a| a.join("CACHEDIR.TAG").is_file())?;
    Some(target.join("skipped-tests.log"))
}

fn log_skip(line: &str) {
    let Some(path) = skip_log() else { return };
    // One short line per append: O_APPEND keeps lines whole across parallel tests.
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&path) {
        let _ = writeln!(f, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_requirement_never_skips_and_a_tool_is_found_on_path() {
        assert!(need("t", "sh", have_tool("sh"), "apt-get install dash"));
        assert!(have_tool("/bin/sh"));
        assert!(!have_tool("detpath-no-such-tool-here"));
    }

    #[test]
    fn a_missing_requirement_fails_in_ci_and_is_logged_by_name_elsewhere() {
        // Both branches in child processes: the environment is per process.
        let me = std::env::current_exe().unwrap();
        let log = std::env::temp_dir().join(format!("detpath-testkit-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let run = |ci: &str| {
            std::process::Command::new(&me)
                .args(["--exact", "tests::child_needs_a_tool_that_is_missing", "--ignored", "--nocapture"])
                .env(CI_VAR, ci)
                .env(SKIP_LOG_VAR, &log)
                .output()
                .unwrap()
        };
        let ci = run("true");
        let out = String::from_utf8_lossy(&ci.stdout).to_string() + &String::from_utf8_lossy(&ci.stderr);
        assert!(!ci.status.success(), "in CI a missing tool must fail: {out}");
        assert!(out.contains("needs detpath-no-such-tool") && out.contains("apt-get install x"), "{out}");
        assert!(!log.exists(), "a CI failure is not a skip");
        let dev = run("false");
        assert!(dev.status.success(), "{}", String::from_utf8_lossy(&dev.stderr));
        assert!(String::from_utf8_lossy(&dev.stdout).contains("SKIP child: needs detpath-no-such-tool"));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "child: needs detpath-no-such-tool (apt-get install x)\n");
        let _ = std::fs::remove_file(&log);
    }

    #[test]
    #[ignore = "run by a_missing_requirement_fails_in_ci_and_is_logged_by_name_elsewhere in a child process"]
    fn child_needs_a_tool_that_is_missing() {
        if !need("child", "detpath-no-such-tool", have_tool("detpath-no-such-tool"), "apt-get install x") {
            return;
        }
        unreachable!("the tool cannot be there");
    }
}

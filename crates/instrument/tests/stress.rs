//! The "& Stress" load: real stress-ng on the cores asked for, stopped on
//! drop; under a tuning shield (detpath_tune::shield) it runs on the
//! housekeeping cores only, like every other process.

use std::os::fd::AsRawFd;

use detpath_instrument::stress::Stress;
use detpath_tune::{shield, Host};

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn stress_runs_where_asked_unless_a_shield_holds_it_to_the_housekeeping_cores() {
    const TEST: &str = "stress_runs_where_asked_unless_a_shield_holds_it_to_the_housekeeping_cores";
    if !detpath_testkit::need_root(TEST, "cpusets") {
        return;
    }
    let host = Host::real();
    let online = host.online_cpus();
    if !detpath_testkit::need(TEST, "2 online CPUs", online.len() >= 2, "run on a machine with 2 or more cores") {
        return;
    }
    let cores: Vec<usize> = online.iter().take(2).collect();
    // A named skip outside CI, a failure in CI (where the machine has the
    // cpuset hierarchy and nobody else's tuning is up), never a silent half.
    let root = shield::cpuset_v1_root(&host);
    if !detpath_testkit::need(
        TEST,
        "a cgroup v1 cpuset hierarchy",
        root.is_some(),
        "mkdir -p /sys/fs/cgroup/cpuset && mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset",
    ) {
        return;
    }
    let root = root.expect("checked just above");
    // One real-host tuning test at a time on this machine, across processes.
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open("/tmp/detpath-tune-real-host.lock").unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    // A shield someone else put up (detpath tune apply, a tuned run) is left
    // alone: under it neither half can hold (stress would run on its
    // housekeeping cores only), and the second half would replace it.
    let up = shield::read(&host, &root);
    if !detpath_testkit::need(
        TEST,
        &format!("no tuning shield up (one holds cores {up})"),
        up == shield::NO_SHIELD,
        "end the tuned run, or `detpath tune revert`",
    ) {
        return;
    }

    let s = Stress::start(30, &cores).expect("stress-ng from `make deps`");
    assert_eq!(s.effective_cores(), cores);
    let pid = s.pid();
    drop(s);
    assert!(!alive(pid), "stress-ng {pid} still runs after drop");

    struct Dissolve<'a>(&'a Host, &'a str);
    impl Drop for Dissolve<'_> {
        fn drop(&mut self) {
            shield::write(self.0, self.1, shield::NO_SHIELD).expect("dissolve the shield");
        }
    }
    let housekeeping = cores[0];
    shield::write(&host, &root, &housekeeping.to_string()).unwrap();
    let _dissolve = Dissolve(&host, &root);
    let s = Stress::start(30, &cores).unwrap();
    assert_eq!(s.effective_cores(), vec![housekeeping], "stress under a shield");
    let pid = s.pid();
    drop(s);
    assert!(!alive(pid));
    // Asked for the shielded core only, it still runs, on the housekeeping one.
    let s = Stress::start(30, &cores[1..]).expect("stress on a shielded core starts on the housekeeping ones");
    assert_eq!(s.effective_cores(), vec![housekeeping]);
    drop(s);
}

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
    if !detpath_testkit::need_root("stress_runs_where_asked_unless_a_shield_holds_it_to_the_housekeeping_cores", "cpusets") {
        return;
    }
    let host = Host::real();
    let online = host.online_cpus();
    assert!(online.len() >= 2, "needs 2 online CPUs");
    let cores: Vec<usize> = online.iter().take(2).collect();
    let s = Stress::start(30, &cores).expect("stress-ng from `make deps`");
    assert_eq!(s.effective_cores(), cores);
    let pid = s.pid();
    drop(s);
    assert!(!alive(pid), "stress-ng {pid} still runs after drop");

    let Some(root) = shield::cpuset_v1_root(&host) else {
        eprintln!("stress_runs_where_asked...: no cgroup v1 cpuset hierarchy here: the shielded half is not checked");
        return;
    };
    // One real-host tuning test at a time on this machine, across processes.
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open("/tmp/detpath-tune-real-host.lock").unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    if shield::read(&host, &root) != shield::NO_SHIELD {
        eprintln!(
            "stress_runs_where_asked...: a tuning's shield is up (detpath tune apply or a tuned run): the shielded half is not checked, to leave it alone"
        );
        return;
    }
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

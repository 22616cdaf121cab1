//! The Ansible collection (ansible/) driving two "hosts" over SSH for real:
//! the two namespaces of a fresh testbed each run Debian's sshd, started here
//! on the namespace's address with a generated host key and an authorized key
//! made for the test; the controller is `ansible-playbook` run inside the
//! first namespace (the testbed's veth is the only link between them).
//!
//! It checks what a site relies on:
//! - install.yml puts detpath on both hosts (the `tree` method: the binary of
//!   this build; the package path is tested by deb_package.rs), a second run
//!   reports changed=0;
//! - tune.yml audits, applies and verifies; a second run reports changed=0;
//! - revert.yml leaves the tuned files byte-for-byte as they were found;
//! - bench.yml measures every measurer-to-responder pair (a->b and b->a) in
//!   D, D&S and T&S with short runs and leaves the fleet report (fleet.json,
//!   fleet.txt, a summary.json per pair and configuration, the plots);
//! - `ansible-lint ansible/` passes.
//!
//! Both hosts share one kernel (one /proc/sys, one /proc/irq, one cgroup
//! tree): only host `a` is tuned and runs stress-ng (detpath_tune_enabled and
//! detpath_bench_stress_enabled are false for `b`); tuning it twice would
//! journal the first tuning's values as the "original" ones. The test takes
//! the tune tests' lock, and a guard reverts, stops sshd (by PID) and removes
//! everything it made even when an assertion fails. Prints the fleet run's
//! wall time. DETPATH_FLEET_ROUNDS sets the rounds per run (default 2000),
//! DETPATH_FLEET_KEEP=DIR keeps a copy of the fleet report.

use detpath::testbed::{Testbed, TestbedConfig};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{}\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// Everything the test started or made, undone in reverse on drop.
struct Fleet {
    dir: PathBuf,
    sshd: Vec<Child>,
    made_run_sshd: bool,
    state_dir: PathBuf,
    /// The testbed's namespaces: every process left in them (ansible's
    /// persistent ssh masters, the sshd sessions they hold) was started by
    /// this test and is killed before the namespaces go.
    netns: Vec<String>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // A tuning journal left by a failed play: restore it.
        let _ = Command::new(BIN).args(["tune", "revert", "--state-dir"]).arg(&self.state_dir).output();
        for c in &mut self.sshd {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let _ = c.wait();
        }
        for ns in &self.netns {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
        }
        if self.made_run_sshd {
            let _ = std::fs::remove_dir("/run/sshd");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The files the tuning writes (those this machine has), read byte for byte;
/// the veth's NAPI files are read inside the namespace, the cpuset shield as
/// the list of cpuset groups.
fn snapshot(netns: &str, iface: &str, core: u32) -> BTreeMap<String, Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("/proc/irq").unwrap().flatten().map(|e| e.path().join("smp_affinity_list")).collect();
    files.push("/proc/irq/default_smp_affinity".into());
    for k in [
        "kernel/sched_rt_runtime_us",
        "kernel/timer_migration",
        "kernel/watchdog",
        "kernel/nmi_watchdog",
        "vm/stat_interval",
        "vm/swappiness",
        "net/core/busy_poll",
        "net/core/busy_read",
    ] {
        files.push(Path::new("/proc/sys").join(k));
    }
    for f in ["/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag", "/sys/devices/virtual/workqueue/cpumask"] {
        files.push(f.into());
    }
    if let Ok(rd) = std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{core}/cpuidle")) {
        files.extend(rd.flatten().map(|e| e.path().join("disable")));
    }
    let mut m: BTreeMap<String, Vec<u8>> = files.iter().filter_map(|p| Some((p.display().to_string(), std::fs::read(p).ok()?))).collect();
    for f in ["gro_flush_timeout", "napi_defer_hard_irqs"] {
        let p = format!("/sys/class/net/{iface}/{f}");
        if let Ok(o) = Command::new("ip").args(["netns", "exec", netns, "cat", &p]).output() {
            m.insert(format!("{netns}:{p}"), o.stdout);
        }
    }
    if let Ok(rd) = std::fs::read_dir("/sys/fs/cgroup/cpuset") {
        let mut groups: Vec<String> = rd.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        groups.sort();
        m.insert("cpuset groups".into(), groups.join(",").into_bytes());
    }
    m
}

fn assert_same(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>, when: &str) {
    let mut diffs = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            Some(w) if w == v => {}
            w => diffs.push(format!("{k}: {:?} -> {:?}", String::from_utf8_lossy(v), w.map(|w| String::from_utf8_lossy(w).into_owned()))),
        }
    }
    assert!(diffs.is_empty(), "{when}, these differ from what was found:\n{}", diffs.join("\n"));
}

/// Sum of `changed=N` over the PLAY RECAP lines of ansible-playbook's output.
fn changed(out: &str) -> u64 {
    out.lines()
        .skip_while(|l| !l.starts_with("PLAY RECAP"))
        .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("changed=")).and_then(|n| n.parse::<u64>().ok()))
        .sum()
}

#[test]
fn ansible_drives_two_ssh_hosts() {
    // The tuning touches the machine's kernel: one tuning test at a time.
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open("/tmp/detpath-tune-real-host.lock").unwrap();
    // SAFETY: flock on a descriptor we own, released when `lock` is dropped.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);

    for tool in ["/usr/sbin/sshd", "/usr/bin/ansible-playbook", "/usr/bin/ansible-lint", "/usr/bin/ssh-keygen"] {
        assert!(Path::new(tool).exists(), "{tool} is missing: install deps/apt-fleet.txt (`make deps`)");
    }
    let tb = Testbed::up(TestbedConfig::unique("fleet")).expect("testbed up");
    let dir = std::env::temp_dir().join(format!("detpath-fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cp")).unwrap();
    let made_run_sshd = !Path::new("/run/sshd").exists();
    if made_run_sshd {
        std::fs::create_dir_all("/run/sshd").unwrap(); // sshd's privilege separation directory
    }
    let mut fleet =
        Fleet { dir: dir.clone(), sshd: vec![], made_run_sshd, state_dir: dir.join("state"), netns: vec![tb.a().netns.clone(), tb.b().netns.clone()] };

    // Keys: the controller's client key (authorized on both hosts) and a host key.
    for key in ["id", "host_key"] {
        ok(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", "detpath-fleet-test", "-f"]).arg(dir.join(key)));
    }
    std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();

    let hosts = [("a", tb.a()), ("b", tb.b())];
    for (name, side) in &hosts {
        let conf = dir.join(format!("sshd-{name}.conf"));
        std::fs::write(
            &conf,
            format!(
                "ListenAddress {addr}\nPort 22\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nPidFile {d}/sshd-{name}.pid\nMaxStartups 50\nMaxSessions 50\n\
                 Subsystem sftp /usr/lib/openssh/sftp-server\n",
                addr = side.addr,
                d = dir.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join(format!("sshd-{name}.log"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &side.netns, "/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        fleet.sshd.push(child);
    }

    // The binary the install play copies, without its debug information (a quarter of the bytes to copy and checksum).
    let stripped = dir.join("detpath");
    ok(Command::new("objcopy").arg("--strip-debug").arg(BIN).arg(&stripped));

    let rounds: u64 = std::env::var("DETPATH_FLEET_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let (a, b) = (tb.a(), tb.b());
    let inventory = dir.join("inventory.yml");
    std::fs::write(
        &inventory,
        format!(
            r#"all:
  vars:
    ansible_user: root
    ansible_python_interpreter: /usr/bin/python3
    ansible_ssh_private_key_file: {d}/id
    ansible_ssh_common_args: "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    detpath_install_method: tree
    detpath_install_tree_bin: {stripped}
    detpath_bin: {d}/prefix/bin/detpath
    detpath_controller_bin: {bin}
    detpath_tune_state_dir: {d}/state
    detpath_bench_workdir: {d}/work
    detpath_bench_datapath: afxdp
    detpath_bench_rounds: {rounds}
    detpath_bench_warmup: 200
    detpath_fleet_results: {d}/fleet-results
  hosts:
    a:
      ansible_host: {a_addr}
      detpath_iface: {a_if}
      detpath_addr: {a_addr}
      detpath_bench_cpu: 1
      detpath_tune_cores: "1"
      # One kernel for both hosts: only this one is tuned and stressed.
      detpath_tune_enabled: true
      detpath_bench_stress_enabled: true
    b:
      ansible_host: {b_addr}
      detpath_iface: {b_if}
      detpath_addr: {b_addr}
      detpath_bench_cpu: 0
      detpath_tune_cores: "0"
      detpath_tune_enabled: false
      detpath_bench_stress_enabled: false
  children:
    measurers:
      hosts:
        a:
        b:
    responders:
      hosts:
        a:
        b:
"#,
            d = dir.display(),
            bin = BIN,
            stripped = stripped.display(),
            a_addr = a.addr,
            a_if = a.iface,
            b_addr = b.addr,
            b_if = b.iface,
        ),
    )
    .unwrap();

    // The controller: ansible-playbook inside namespace a (it reaches a's
    // address locally and b's over the veth).
    let playbook = |name: &str, extra: &[&str]| -> (String, f64) {
        let t = Instant::now();
        let out = Command::new("ip")
            .args(["netns", "exec", &a.netns, "/usr/bin/ansible-playbook", "-i"])
            .arg(&inventory)
            .arg(repo().join("ansible/playbooks").join(name))
            .args(extra)
            .current_dir(&dir)
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_HOST_KEY_CHECKING", "False")
            .env("ANSIBLE_RETRY_FILES_ENABLED", "False")
            .env("ANSIBLE_LOCAL_TEMP", dir.join("ansible-local"))
            .env("ANSIBLE_REMOTE_TMP", dir.join("ansible-remote"))
            .env("ANSIBLE_SSH_CONTROL_PATH_DIR", dir.join("cp"))
            .env("ANSIBLE_TIMEOUT", "30")
            .stdin(Stdio::null())
            .output()
            .expect("ansible-playbook");
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let sshd_logs: String = ["a", "b"].iter().map(|n| std::fs::read_to_string(dir.join(format!("sshd-{n}.log"))).unwrap_or_default()).collect();
        assert!(out.status.success(), "ansible-playbook {name} failed:\n{text}\nsshd logs:\n{sshd_logs}");
        (text, t.elapsed().as_secs_f64())
    };

    // sshd needs a moment to listen.
    let t0 = Instant::now();
    while !["a", "b"].iter().all(|n| dir.join(format!("sshd-{n}.pid")).exists()) {
        assert!(t0.elapsed() < Duration::from_secs(20), "sshd did not start: {:?}", std::fs::read_to_string(dir.join("sshd-a.log")));
        std::thread::sleep(Duration::from_millis(100));
    }

    // install.yml twice: the second run changes nothing.
    let (out, s) = playbook("install.yml", &[]);
    assert!(changed(&out) > 0, "the first install changed nothing:\n{out}");
    assert!(dir.join("prefix/bin/detpath").is_file());
    println!("install.yml: {s:.1} s");
    let (out, _) = playbook("install.yml", &[]);
    assert_eq!(changed(&out), 0, "second install.yml run:\n{out}");

    // tune.yml, then again: changed=0; revert.yml restores every file.
    let before = snapshot(&a.netns, &a.iface, 1);
    let (out, s) = playbook("tune.yml", &[]);
    println!("tune.yml: {s:.1} s");
    assert!(changed(&out) > 0, "tune.yml applied nothing on a (was it tuned already?):\n{out}");
    assert!(out.contains("a: ") && out.contains("knob(s) off"), "the play reports which knobs were off:\n{out}");
    let tuned = snapshot(&a.netns, &a.iface, 1);
    assert_ne!(before, tuned, "tune.yml changed no watched file");
    let (out, _) = playbook("tune.yml", &[]);
    assert_eq!(changed(&out), 0, "second tune.yml run:\n{out}");
    let (out, _) = playbook("revert.yml", &[]);
    assert!(changed(&out) > 0, "revert.yml restored nothing:\n{out}");
    assert_same(&before, &snapshot(&a.netns, &a.iface, 1), "after revert.yml");
    let status = Command::new(BIN).args(["tune", "status", "--state-dir"]).arg(dir.join("state")).output().unwrap();
    assert_eq!(status.status.code(), Some(0), "a tuning journal is left after revert.yml: {}", String::from_utf8_lossy(&status.stdout));

    // bench.yml: every pair in every configuration, then one fleet report.
    let (out, wall) = playbook("bench.yml", &[]);
    println!("bench.yml: {wall:.1} s wall for 2 pairs x 3 configurations of {rounds} rounds");
    let results = dir.join("fleet-results");
    let fleet_json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(results.join("fleet.json")).expect("fleet.json")).unwrap();
    let pairs: Vec<&str> = fleet_json["pairs"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    let mut sorted = pairs.clone();
    sorted.sort();
    assert_eq!(sorted, ["a-to-b", "b-to-a"], "every measurer-to-responder pair but a host with itself");
    for pair in &pairs {
        for cfg in ["D", "DS", "TS"] {
            let summary = results.join(pair).join(cfg).join("summary.json");
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&summary).unwrap_or_else(|e| panic!("{}: {e}", summary.display()))).unwrap();
            let run = &v["runs"][0];
            assert_eq!(run["complete"], true, "{pair} {cfg} did not complete: {run}");
            assert!(run["latency"]["count"].as_u64().unwrap() > rounds / 2, "{pair} {cfg}: too few answered rounds: {}", run["latency"]);
            let peer = run["config"]["peer"].as_str().unwrap_or("");
            let responder = if pair.ends_with("to-b") { b.addr.to_string() } else { a.addr.to_string() };
            assert!(peer.starts_with(&responder), "{pair} {cfg} measured against {peer}, not {responder}");
            // The role's stress is recorded by bench client (--under-stress): D&S and T&S are labelled so.
            let stressed = run["config"]["stress_percent"].as_u64().unwrap_or(0) > 0;
            assert_eq!(stressed, cfg != "D", "{pair} {cfg}: labelled {} (stress {})", run["configuration"], run["config"]["stress_percent"]);
        }
    }
    // The slowest pair first: by the worst p99 over the configurations.
    let worst = |pair: &str| {
        fleet_json["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| format!("{}-to-{}", r["measurer"].as_str().unwrap(), r["responder"].as_str().unwrap()) == pair)
            .map(|r| r["latency"]["p99_ns"].as_u64().unwrap_or(0))
            .max()
            .unwrap()
    };
    assert!(worst(pairs[0]) >= worst(pairs[1]), "pairs not ordered slowest first: {pairs:?}");
    let table = std::fs::read_to_string(results.join("fleet.txt")).unwrap();
    let first_row = table.lines().skip(1).find(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(first_row.starts_with(pairs[0]), "fleet.txt does not start with the slowest pair:\n{table}");
    println!("{table}");
    for plot in ["boxplot.png", "ccdf.png", "timeline.png"] {
        assert!(results.join("report").join(plot).is_file(), "the report has no {plot}");
    }
    assert!(std::fs::read_to_string(results.join("report.txt")).unwrap().contains("afxdp"));
    assert_same(&before, &snapshot(&a.netns, &a.iface, 1), "after bench.yml (its T&S runs tune and revert)");
    assert!(!out.contains("FAILED!"), "{out}");
    if let Ok(keep) = std::env::var("DETPATH_FLEET_KEEP") {
        ok(Command::new("cp").args(["-a"]).arg(&results).arg(&keep));
    }

    // The collection is lint-clean.
    let lint = Command::new("ansible-lint").arg("ansible/").current_dir(repo()).env("NO_COLOR", "1").output().expect("ansible-lint");
    assert!(lint.status.success(), "ansible-lint ansible/:\n{}{}", String::from_utf8_lossy(&lint.stdout), String::from_utf8_lossy(&lint.stderr));

    drop(fleet);
    assert!(!dir.exists());
    drop(tb);
}

//! The kernel tracer on the real kernel (root: CAP_BPF, CAP_PERFMON).
//!
//! - It sees what it was made to see: a task spinning on core 1, and the
//!   NET_RX softirq that loopback datagrams sent from core 0 raise there.
//! - It names the cause of a round it was made slow: a UDP ping-pong over
//!   loopback (client on core 0, server busy-polling on core 1) where one
//!   round is held up by a SCHED_FIFO task spinning on the server's core.
//! - Nothing stays attached after a normal exit, Ctrl-C or SIGKILL.

use detpath_ktrace::{attribute, Kind, Round, Timeline, Tracer, Work};
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One tracer at a time in this binary (the detach test counts loaded programs).
static ONE: Mutex<()> = Mutex::new(());

fn two_cores() -> bool {
    std::thread::available_parallelism().map(|n| n.get() >= 2).unwrap_or(false)
}

fn pin(cpu: usize) {
    detpath_sys::thread::pin_current_thread(cpu).unwrap_or_else(|e| panic!("pinning to cpu {cpu}: {e}"));
}

/// SCHED_FIFO at `prio` for the calling thread (root).
fn fifo(prio: u8) {
    detpath_sys::thread::set_fifo(prio).unwrap_or_else(|e| panic!("SCHED_FIFO {prio} (root): {e}"));
}

use detpath_sys::thread::tid;

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spins until this thread has had `d` of CPU time (not wall time: the
/// machine may be shared, and a time slice is not ours to choose).
fn spin(d: Duration) {
    let cpu_ns = || {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: valid timespec; the calling thread's CPU clock always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let end = cpu_ns() + d.as_nanos() as u64;
    while cpu_ns() < end {
        std::hint::spin_loop();
    }
}

fn skip(name: &str) -> bool {
    !(detpath_testkit::need_root(name, "BPF tracing") && detpath_testkit::need(name, "two online CPUs", two_cores(), "run on a machine with 2 or more cores"))
}

#[test]
fn sees_a_spinning_task_and_the_net_rx_softirq() {
    if skip("sees_a_spinning_task_and_the_net_rx_softirq") {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let tracer = Tracer::start().expect("tracer attaches");
    let spinner = std::thread::spawn(|| {
        pin(1);
        let me = tid();
        spin(Duration::from_millis(30));
        me
    });
    let sender = std::thread::spawn(|| {
        pin(0);
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..2000 {
            tx.send_to(b"softirq please", rx.local_addr().unwrap()).unwrap();
        }
    });
    let spinner_tid = spinner.join().unwrap();
    sender.join().unwrap();
    std::thread::sleep(Duration::from_millis(5)); // let the spinner's switch-out be recorded
    let trace = tracer.stop().expect("tracer stops");
    let counts: Vec<(Kind, usize)> =
        [Kind::Irq, Kind::Softirq, Kind::Timer, Kind::IpiResched, Kind::IpiCall, Kind::Switch, Kind::Napi].map(|k| (k, trace.count(k))).to_vec();
    assert!(trace.count(Kind::Switch) > 0 && trace.count(Kind::Softirq) > 0, "no switches or softirqs recorded: {counts:?}");
    let timeline = Timeline::new(&trace.events);
    let spun: u64 =
        timeline.overlapping(1, 0, u64::MAX).filter(|s| matches!(&s.work, Work::Task(pid, _) if *pid == spinner_tid)).map(|s| s.end_ns - s.start_ns).sum();
    assert!(spun >= 25_000_000, "the spinner's 30 ms of CPU on core 1 shows as {spun} ns of task time");
    let net_rx = timeline.overlapping(0, 0, u64::MAX).filter(|s| s.work == Work::Softirq(3)).count();
    assert!(net_rx > 0, "2000 loopback datagrams from core 0 raised no NET_RX softirq there");
}

#[test]
fn names_the_task_that_held_up_a_round() {
    if skip("names_the_task_that_held_up_a_round") {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let server_addr = server.local_addr().unwrap();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    // Both polling threads are SCHED_FIFO (as under --tuned), so the machine's
    // other load cannot hold a round up; the competitor's higher priority can.
    let echo = std::thread::spawn(move || {
        pin(1);
        fifo(5);
        tid_tx.send(tid()).unwrap();
        let mut buf = [0u8; 64];
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((n, from)) = server.recv_from(&mut buf) {
                let _ = server.send_to(&buf[..n], from);
            }
        }
    });
    let server_tid = tid_rx.recv().unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.set_nonblocking(true).unwrap();
    let tracer = Tracer::start().expect("tracer attaches");
    let (client_tid, rounds, competitor_tid) = std::thread::spawn(move || {
        pin(0);
        fifo(5);
        let mut rounds = Vec::new();
        let mut competitor_tid = 0;
        for i in 0..400u32 {
            let competitor = (i == 300).then(|| {
                let c = std::thread::spawn(|| {
                    // Above the echo's priority before moving to its core:
                    // at equal FIFO priority it would never get the core.
                    fifo(10);
                    pin(1);
                    let me = tid();
                    spin(Duration::from_millis(20));
                    me
                });
                std::thread::sleep(Duration::from_micros(300)); // it holds core 1 now
                c
            });
            let t1 = now_ns();
            client.send_to(&i.to_ne_bytes(), server_addr).unwrap();
            let mut buf = [0u8; 64];
            let deadline = t1 + 1_000_000_000;
            while client.recv_from(&mut buf).is_err() && now_ns() < deadline {}
            rounds.push((t1, now_ns()));
            if let Some(c) = competitor {
                competitor_tid = c.join().unwrap();
            }
        }
        (tid(), rounds, competitor_tid)
    })
    .join()
    .unwrap();
    let trace = tracer.stop().expect("tracer stops");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    echo.join().unwrap();
    let mut rtts: Vec<u64> = rounds.iter().map(|(a, b)| b - a).collect();
    rtts.sort_unstable();
    let median = rtts[rtts.len() / 2];
    let (t1, t4) = rounds[300];
    assert!(t4 - t1 > 5_000_000, "the held-up round took only {} ns", t4 - t1);
    let timeline = Timeline::new(&trace.events);
    let round = Round { start_ns: t1, end_ns: t4, excess_ns: (t4 - t1).saturating_sub(median) };
    let cause = attribute(&timeline, &round, &[0, 1], &[client_tid, server_tid]).unwrap_or_else(|| {
        let seen: Vec<_> =
            [0, 1].iter().flat_map(|&c| timeline.overlapping(c, t1, t4).filter(|s| s.end_ns - s.start_ns > 100_000).map(move |s| (c, s.clone()))).collect();
        panic!(
            "no kernel cause for a round of {} ns (median {median}); competitor {competitor_tid}; {} dropped; spans over 100 us: {seen:?}",
            t4 - t1,
            trace.dropped
        )
    });
    assert_eq!(cause.cpu, 1, "{cause:?}");
    assert!(matches!(&cause.work, Work::Task(pid, _) if *pid == competitor_tid), "cause {cause:?}, competitor {competitor_tid}");
}

/// Our programs loaded in the kernel (names start with `kt_`).
fn loaded_kt_programs() -> usize {
    libbpf_rs::query::ProgInfoIter::default().filter(|p| p.name.to_string_lossy().starts_with("kt_")).count()
}

#[test]
fn nothing_stays_attached_after_exit_ctrl_c_or_kill() {
    if skip("nothing_stays_attached_after_exit_ctrl_c_or_kill") {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().unwrap();
    let holder = exe.parent().unwrap().parent().unwrap().join("examples/ktrace_hold");
    assert!(holder.exists(), "{} not built (cargo test builds the examples)", holder.display());
    for how in ["exit", "SIGINT", "SIGKILL"] {
        let mut child = Command::new(&holder).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "attached", "{how}: the holder did not attach");
        assert!(loaded_kt_programs() > 0, "{how}: no kt_ program loaded while attached");
        match how {
            "exit" => drop(child.stdin.take()),
            sig => {
                let s = if sig == "SIGINT" { libc::SIGINT } else { libc::SIGKILL };
                // SAFETY: signalling the child we started, by its pid.
                unsafe { libc::kill(child.id() as i32, s) };
            }
        }
        let status = child.wait().unwrap();
        // Links and programs go when the last descriptor closes; give the kernel's deferred free a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while loaded_kt_programs() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(loaded_kt_programs(), 0, "{how} ({status}): kt_ programs still loaded");
    }
}

#[test]
fn alternating_windows_record_only_while_attached() {
    if skip("alternating_windows_record_only_while_attached") {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let tracer = Tracer::start_alternating(Duration::from_millis(150)).expect("tracer attaches");
    // Context switches on both cores all along: a thread that sleeps 1 ms at a time.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(700) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let trace = tracer.stop().expect("tracer stops");
    // Attached 0-150, 300-450, 600-700 ms: three windows, each ~150 ms apart from the next.
    assert!(trace.windows.len() >= 2, "windows {:?}", trace.windows);
    for w in trace.windows.windows(2) {
        let gap = w[1].0.saturating_sub(w[0].1);
        assert!(gap >= 100_000_000, "a detached stretch of {gap} ns between {w:?}: the tracer did not detach");
    }
    let switches: Vec<_> = trace.events.iter().filter(|e| e.kind == Kind::Switch).collect();
    assert!(!switches.is_empty(), "no switches recorded while attached");
    // Every record falls inside a window (a little slack for the ring's last records).
    for e in &switches {
        assert!(
            trace.windows.iter().any(|w| e.end_ns + 1_000_000 >= w.0 && e.end_ns <= w.1 + 1_000_000),
            "a switch at {} ns outside every attached window {:?}",
            e.end_ns,
            trace.windows
        );
    }
    // And the detached stretches really were empty: some switch in each window, none between.
    for w in &trace.windows {
        assert!(switches.iter().any(|e| e.end_ns >= w.0 && e.end_ns <= w.1), "window {w:?} recorded nothing");
    }
}

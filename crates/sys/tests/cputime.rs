//! Thread CPU accounting against a known load: a thread that spins for a
//! known amount of its own CPU time, and one that sleeps.

use detpath_sys::cputime::{CoreTicks, CpuReport, ThreadMeter};
use std::time::{Duration, Instant};

/// Spins until the calling thread has used `secs` of CPU time (not wall
/// time: on a loaded machine the spinner gets the core only part of the time).
/// The thread's CPU clock is a system call, so it is read only between long
/// stretches of arithmetic: the spin is user time, as a polling loop's is.
fn spin_cpu(secs: f64) {
    let start = detpath_sys::thread::cpu_ns();
    let mut x = 1u64;
    while (detpath_sys::thread::cpu_ns() - start) as f64 * 1e-9 < secs {
        for _ in 0..200_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

#[test]
fn a_spinner_is_charged_its_cpu_time_and_a_sleeper_almost_none() {
    let before = CoreTicks::now();
    let spinner = std::thread::spawn(|| {
        let m = ThreadMeter::start("spinner");
        spin_cpu(0.4);
        m.stop()
    });
    let sleeper = std::thread::spawn(|| {
        let m = ThreadMeter::start("sleeper");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(400) {
            std::thread::sleep(Duration::from_millis(20));
        }
        m.stop()
    });
    let (spin, sleep) = (spinner.join().unwrap(), sleeper.join().unwrap());
    let after = CoreTicks::now();
    eprintln!("spinner charged {:.4} s, sleeper {:.6} s", spin.total_s(), sleep.total_s());
    // CPU time, not wall time, so the load on the machine does not move
    // these: the spinner stops at 0.4 s of its own CPU clock, overshooting
    // by at most one inner loop (about a ms); getrusage's sum may lag that
    // clock by up to a tick (4 ms at HZ=250), hence 0.38 below.
    assert!((0.38..0.6).contains(&spin.total_s()), "spinner charged {spin:?}");
    assert!(spin.user_s > spin.system_s, "a spin loop is user time: {spin:?}");
    // The sleeper really uses ~20 wake-ups of microseconds each (well under
    // a ms in all). The faults this catches charge it at least its 0.4 s:
    // wall time instead of CPU time, or the process's time (RUSAGE_SELF,
    // which holds the spinner's 0.4 s). An eighth of that (50 ms) tells them
    // apart by a factor of eight on one side and of fifty on the other, room
    // for a VM that charges steal and interrupts to whichever thread ran.
    let sleeper_wall_s = 0.4;
    assert!(sleep.total_s() < sleeper_wall_s / 8.0, "sleeper charged {sleep:?}");
    let core = spin.core.expect("the kernel names the spinner's core");
    let report = CpuReport::new(vec![spin.clone(), sleep], &before, &after, &[], 400.0);
    // 400 units over ~0.4 CPU-s: ~1000 per CPU-second.
    let w = report.work_per_cpu_s.unwrap();
    assert!((600.0..1100.0).contains(&w), "{w}");
    // The spinner's last core was busy at least part of the time it spun
    // there (it may have moved between cores, so only a floor).
    let c = report.cores.iter().find(|c| c.core == core).expect("the spinner's core is reported");
    assert!(c.busy > 0.0 && c.busy <= 1.0, "{c:?}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["threads"][0]["name"], "spinner");
    for key in ["threads", "cores", "work_per_cpu_s"] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
}

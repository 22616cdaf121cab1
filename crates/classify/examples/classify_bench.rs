//! The per-frame cost of the classifier and of the two no-op anchors (drop, pass) under
//! BPF_PROG_TEST_RUN (no I/O), for every encapsulation and rule count of
//! `detpath classify bench`: the quick loop for profiling the program. Root.
//!
//!     cargo run --release -p detpath-classify --example classify_bench -- [SIZE] [REPEAT]
//!
//! With `CLS_OBJ=path/to/classify.bpf.o`, that build of the program instead
//! of the crate's (to compare a change without rebuilding the crate).
//!
//! The figures through a veth are `detpath classify bench`.
use detpath_classify::bench::{frame, rules_for, Anchor, Encap, RULE_COUNTS};
use detpath_classify::{parse_intent, Classifier};

fn load(max_rules: u32) -> Result<Classifier, Box<dyn std::error::Error>> {
    Ok(match std::env::var_os("CLS_OBJ") {
        Some(p) => Classifier::load_object(&std::fs::read(p)?, max_rules)?,
        None => Classifier::load(max_rules)?,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let size: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(132);
    let repeat: u32 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    println!("BPF_PROG_TEST_RUN, {size} B frames, {repeat} runs each, ns/frame (best of 3, the thread's CPU time over the runs)");
    println!("{:<6} {:>6} {:>9} {}", "encap", "noop", "noop_pass", RULE_COUNTS.iter().map(|n| format!("{:>8}", format!("cls/{n}"))).collect::<String>());
    for encap in Encap::ALL {
        let f = frame(encap, size);
        // The thread's CPU time over the call, per run: a tenth of a nanosecond
        // (the kernel's own figure is whole nanoseconds), and time the thread
        // spent descheduled is not in it.
        let best = |c: &Classifier, prog: &str| -> Result<String, Box<dyn std::error::Error>> {
            let mut b = f64::MAX;
            for _ in 0..3 {
                let t = thread_cpu_ns();
                c.test_run_prog(prog, &f, repeat)?;
                b = b.min((thread_cpu_ns() - t) as f64 / f64::from(repeat));
            }
            Ok(format!("{b:.1}"))
        };
        let base = load(1)?;
        let mut line = format!("{:<6} {:>6} {:>9}", encap.name(), best(&base, Anchor::Drop.bpf_program())?, best(&base, Anchor::Pass.bpf_program())?);
        for n in RULE_COUNTS {
            let mut c = load(1024)?;
            for r in rules_for(encap, n) {
                c.install(&parse_intent(r.as_bytes())?, None)?;
            }
            line += &format!("{:>8}", best(&c, "cls_main")?);
        }
        println!("{line}");
    }
    Ok(())
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

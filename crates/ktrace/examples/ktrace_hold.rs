//! Attaches the kernel tracer, prints `attached`, and holds it until its
//! standard input closes (then stops it and prints how many records it got).
//! The detach tests end it in every way a run can end: a normal exit,
//! Ctrl-C (SIGINT) and SIGKILL.

use std::io::Read;

fn main() {
    let tracer = match detpath_ktrace::Tracer::start() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!("attached");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    match tracer.stop() {
        Ok(trace) => println!("stopped: {} records, {} dropped", trace.events.len(), trace.dropped),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

//! `detpath sched` as a stand-alone program: the same CLI file the `detpath`
//! binary uses (crates/cli/src/sched_cmd.rs), so the benchmark runs (and that
//! file compiles) from this crate alone.
//!
//! ```text
//! sudo target/release/examples/sched bench --duration 5
//! sudo target/release/examples/sched sync --datapath udp
//! target/release/examples/sched model
//! ```

#[path = "../../cli/src/sched_cmd.rs"]
mod sched_cmd;

use clap::Parser;

/// detpath sched: the time-slotted transmit scheduler.
#[derive(Parser)]
#[command(name = "sched")]
struct Cli {
    #[command(flatten)]
    args: sched_cmd::Args,
}

fn main() {
    match sched_cmd::run(Cli::parse().args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}

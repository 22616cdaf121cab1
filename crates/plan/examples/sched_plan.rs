//! `detpath sched plan` without the rest of the CLI: the same argument parser and code
//! (crates/cli/src/sched_plan_cmd.rs), so it can be built and run with only this crate.
//!
//! `cargo run --release -p detpath-plan --example sched_plan -- spec.json [--json]`
//! `cargo run --release -p detpath-plan --example sched_plan -- --evaluate --out plan-eval`

use clap::Parser;

#[path = "../../cli/src/sched_plan_cmd.rs"]
mod sched_plan_cmd;

#[derive(Parser)]
#[command(
    name = "sched-plan",
    about = "Transmit-ring partitions and send schedules (paper 003)"
)]
struct Cli {
    #[command(flatten)]
    args: sched_plan_cmd::Args,
}

fn main() {
    let cli = Cli::parse();
    match sched_plan_cmd::run(cli.args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("sched-plan: error: {e:#}");
            std::process::exit(2);
        }
    }
}

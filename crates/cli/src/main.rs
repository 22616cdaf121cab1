//! `detpath`: the command-line front end. Parsing and printing only; the work
//! is done by the library crates. One module per subcommand.

#![warn(missing_docs)]

use clap::{Parser, Subcommand};

mod bench_cmd;
mod bench_remote;
mod bench_testbed;
mod classify_bench_cmd;
mod classify_cmd;
mod echo_cmd;
mod generate_cmd;
mod metrics_args;
mod pubsub_cmd;
mod report_cmd;
mod sched_cmd;
mod sched_plan_cmd;
mod sched_ptp_cmd;
mod testbed_cmd;
mod tune_cmd;
mod vocab;
#[cfg(test)]
mod vocab_help_tests;

#[derive(Parser)]
#[command(name = "detpath", version, about = "A deterministic datapath for Linux end devices", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The built-in two-namespace testbed (veth pair between two namespaces).
    Testbed(testbed_cmd::Args),
    /// Ping-pong latency benchmark of every datapath (the main job).
    Bench(bench_cmd::Args),
    /// Echo server on any datapath (every datagram back to its sender).
    Echo(echo_cmd::Args),
    /// Tables and plots (PNG, SVG) from saved benchmark results.
    Report(report_cmd::Args),
    /// Audit, apply and revert the low-latency OS tuning.
    Tune(tune_cmd::Args),
    /// XDP classifier for encapsulated traffic, driven by intents.
    Classify(classify_cmd::Args),
    /// Time-slotted transmission (paper 003): benchmark, clock sync, NIC model, planner.
    Sched(sched_cmd::Args),
    /// DDS-interoperable publish-subscribe (RTPS) on any datapath (paper 001): ping, pong, pub, sub, bench.
    Pubsub(pubsub_cmd::Args),
    /// Man pages and shell completions from this CLI (for packaging; hidden).
    #[command(hide = true)]
    Generate(generate_cmd::Args),
}

/// The exit codes every command shares (each command's `--help` lists its own).
const EXIT_CODES: &str = "Exit codes: 0 success; 1 the command ran and its result says no (loss beyond a gate, not tuned, \
not locked, ...: see the command's --help); 2 an error (bad arguments, permissions, a missing package); \
101 a crash (what the command changed is undone first); 130 interrupted where a command saves partial results.

Durations take a unit (5s, 250ms, 100us, 2500ns); a bare number keeps the unit the flag always had (its --help says which).";

fn main() {
    let cli = Cli::parse();
    // A panic unwinds the command (its guards undo what they changed), then
    // whatever is still registered is undone (detpath::sys::cleanup) before exit 101.
    let code = detpath::sys::cleanup::guard_main(move || dispatch(cli));
    std::process::exit(code);
}

fn dispatch(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Testbed(args) => testbed_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Echo(args) => echo_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Tune(args) => tune_cmd::run(args),
        Command::Classify(args) => classify_cmd::run(args),
        Command::Sched(args) => sched_cmd::run(args),
        Command::Pubsub(args) => pubsub_cmd::run(args),
        Command::Generate(args) => generate_cmd::run::<Cli>(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("detpath: error: {e:#}");
            2
        }
    }
}

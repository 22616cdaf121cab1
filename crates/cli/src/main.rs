//! `detpath`: the command-line front end. Parsing and printing only; the work
//! is done by the library crates. One module per subcommand.

#![warn(missing_docs)]

use clap::{Parser, Subcommand};

mod bench;
mod classify;
mod echo_cmd;
mod generate_cmd;
mod metrics_args;
mod pubsub;
mod report;
mod sched;
mod testbed_cmd;
mod tune_cmd;
mod vocab;
mod wait_arg;
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
    Bench(bench::Args),
    /// Echo server on any datapath (every datagram back to its sender).
    Echo(echo_cmd::Args),
    /// Tables and plots (PNG, SVG) from saved benchmark results.
    Report(report::Args),
    /// Audit, apply and revert the low-latency OS tuning.
    Tune(tune_cmd::Args),
    /// XDP classifier for encapsulated traffic, driven by intents.
    Classify(classify::Args),
    /// Time-slotted transmission (paper 003): benchmark, clock sync, NIC model, planner.
    Sched(sched::Args),
    /// DDS-interoperable publish-subscribe (RTPS) on any datapath (paper 001): ping, pong, pub, sub, bench.
    Pubsub(pubsub::Args),
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
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        if e.kind() == clap::error::ErrorKind::DisplayVersion {
            let _ = e.print();
            python_module_note();
            std::process::exit(0);
        }
        e.exit()
    });
    // A panic unwinds the command (its guards undo what they changed), then
    // whatever is still registered is undone (detpath::sys::cleanup) before exit 101.
    let code = detpath::sys::cleanup::guard_main(move || dispatch(cli));
    std::process::exit(code);
}

fn dispatch(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Testbed(args) => testbed_cmd::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Echo(args) => echo_cmd::run(args),
        Command::Report(args) => report::run(args),
        Command::Tune(args) => tune_cmd::run(args),
        Command::Classify(args) => classify::run(args),
        Command::Sched(args) => sched::run(args),
        Command::Pubsub(args) => pubsub::run(args),
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

/// `detpath --version` names a Python module that does not go with this
/// command (on stderr): another version, or, for the Debian package's
/// /usr/bin/detpath, a copy earlier on python3's path than the package's own
/// (a pip or `make install` into /usr/local shadows /usr/lib/python3/dist-packages).
/// Both the `python3` a user types and Debian's /usr/bin/python3 are asked.
fn python_module_note() {
    const PACKAGED: &str = "/usr/lib/python3/dist-packages/detpath/";
    let ours = env!("CARGO_PKG_VERSION");
    let is_package = std::env::current_exe().is_ok_and(|p| p == std::path::Path::new("/usr/bin/detpath"));
    let mut seen = Vec::new();
    for python in ["python3", "/usr/bin/python3"] {
        let probe = "import detpath; print(detpath.__version__); print(detpath.__file__)";
        let Ok(out) = std::process::Command::new(python).args(["-c", probe]).current_dir("/").stderr(std::process::Stdio::null()).output() else {
            continue;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let (true, Some(version), Some(file)) = (out.status.success(), lines.next(), lines.next()) else { continue };
        if seen.iter().any(|f| f == file) {
            continue;
        }
        seen.push(file.to_string());
        let fix = "remove that copy: `make uninstall` with the PREFIX it was installed with, or `python3 -m pip uninstall detpath`";
        if version != ours {
            eprintln!("detpath: note: `{python}` imports the detpath Python module {version} from {file}, this command is {ours}; {fix}");
        } else if is_package && !file.starts_with(PACKAGED) && std::path::Path::new(PACKAGED).is_dir() {
            eprintln!("detpath: note: `{python}` imports detpath from {file}, which shadows this package's {PACKAGED}; {fix}");
        }
    }
}

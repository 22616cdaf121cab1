//! `detpath`: the command-line front end. Parsing and printing only; the work
//! is done by the library crates. One module per subcommand.

use clap::{Parser, Subcommand};

mod testbed_cmd;

#[derive(Parser)]
#[command(name = "detpath", version, about = "A deterministic datapath for Linux end devices")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The built-in two-namespace testbed (veth pair between two namespaces).
    Testbed(testbed_cmd::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Testbed(args) => testbed_cmd::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("detpath: error: {e:#}");
            std::process::exit(2);
        }
    }
}

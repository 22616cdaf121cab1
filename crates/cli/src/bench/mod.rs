//! `detpath bench`: paper 000's ping-pong. Without a subcommand, every
//! datapath in the built-in testbed ([`testbed`]); `bench server` / `bench
//! client --peer` run the two sides on two hosts ([`remote`]). What both
//! share (the probe options, the loss gate, the closing table and exit
//! code, the progress bar) is in [`common`], which imports neither: this
//! module only dispatches.

mod common;
mod remote;
mod testbed;

use common::EXIT_CODES;

/// Arguments of `detpath bench`: a role on one of two hosts (`server`,
/// `client`) or, without one, the options of the run in the built-in testbed.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, after_help = EXIT_CODES)]
pub struct Args {
    #[command(subcommand)]
    role: Option<Role>,
    #[command(flatten)]
    testbed: testbed::Args,
}

#[derive(clap::Subcommand)]
enum Role {
    /// Echo probes on this host (the other host runs `detpath bench client`).
    Server(remote::ServerArgs),
    /// Measure against a `detpath bench server` on another host.
    Client(remote::ClientArgs),
}

/// Runs `detpath bench`: the testbed run without a subcommand, else the
/// server or client side; returns the process exit code ([`EXIT_CODES`],
/// the server's own for `bench server`).
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.role {
        None => testbed::run(args.testbed),
        Some(Role::Server(a)) => remote::server(a),
        Some(Role::Client(a)) => remote::client(a),
    }
}

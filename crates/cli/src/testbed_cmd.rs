//! `detpath testbed up|down|status`: the built-in two-namespace testbed.
//! `down` also removes the testbeds other detpath commands left behind
//! (their process is gone: killed, crashed), found by the naming rule of
//! `detpath::testbed::find`, and names those still in use.

use detpath::testbed::{Testbed, TestbedConfig};

/// Arguments of `detpath testbed`: the action (up, down, status), the
/// namespace prefix and whether to print JSON.
#[derive(clap::Args)]
#[command(after_help = EXIT_CODES)]
pub struct Args {
    /// Namespace name prefix: the testbed is <NAME>-a and <NAME>-b.
    #[arg(long, default_value = "detpath", global = true)]
    testbed: String,
    /// Print one JSON document instead of text (up: the layout; down: what
    /// was removed and kept; status: both sides).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Create the namespaces and veth pair (idempotent; repairs a half-built one).
    #[command(after_help = "Exit codes: 0 the testbed is up; 2 an error (not root, `ip` or `ethtool` missing).")]
    Up,
    /// Remove them (idempotent), and every testbed a detpath command left
    /// behind (`detpath-<tag>-<pid>-<n>-a|b` whose process is gone).
    #[command(after_help = "Exit codes: 0 removed (or nothing to remove); 1 a namespace could not be removed; 2 an error.")]
    Down,
    /// Show what exists; exit 0 when the testbed is complete, 1 otherwise.
    #[command(after_help = "Exit codes: 0 the testbed is complete; 1 it is not (absent or half-built); 2 an error.")]
    Status,
}

/// The exit codes of `detpath testbed`.
const EXIT_CODES: &str = "Exit codes: 0 done (status: the testbed is complete); 1 status: not complete, down: a namespace could not be removed; 2 an error.";

fn side_json(s: &detpath::testbed::Side, prefix_len: u8) -> serde_json::Value {
    serde_json::json!({ "netns": s.netns, "iface": s.iface, "addr": format!("{}/{}", s.addr, prefix_len), "mac": s.mac })
}

/// Brings the testbed up, takes it down or reports it; returns the exit
/// code of [`EXIT_CODES`].
pub fn run(args: Args) -> anyhow::Result<i32> {
    let cfg = TestbedConfig::with_prefix(&args.testbed);
    match args.action {
        Action::Up => {
            let cfg = Testbed::up(cfg)?.keep();
            if args.json {
                println!("{}", serde_json::json!({ "up": true, "a": side_json(&cfg.a, cfg.prefix_len), "b": side_json(&cfg.b, cfg.prefix_len) }));
            } else {
                print_layout(&cfg);
            }
            Ok(0)
        }
        Action::Down => {
            let json = args.json;
            let say = |s: String| {
                if !json {
                    println!("{s}")
                }
            };
            Testbed::down(&cfg);
            say(format!("testbed down ({} and {} removed)", cfg.a.netns, cfg.b.netns));
            let mut in_use = std::collections::BTreeMap::new();
            let mut removed = vec![cfg.a.netns.clone(), cfg.b.netns.clone()];
            for (netns, name) in detpath::testbed::find() {
                if name.orphaned() {
                    detpath::testbed::remove_netns(&netns);
                    say(format!("removed {netns} (left by process {}, which is gone)", name.owner.unwrap_or(0)));
                    removed.push(netns);
                } else if name.base != args.testbed {
                    in_use.entry(name.base.clone()).or_insert(name.owner);
                }
            }
            let left: Vec<String> = detpath::testbed::find().into_iter().filter(|(_, n)| n.orphaned() || n.base == args.testbed).map(|(ns, _)| ns).collect();
            removed.retain(|n| !left.contains(n));
            for (base, owner) in &in_use {
                match owner {
                    Some(pid) => say(format!("kept {base}-a/-b: process {pid} is using it")),
                    None => say(format!("kept {base}-a/-b (another testbed; remove it with `detpath testbed down --testbed {base}`)")),
                }
            }
            if json {
                let kept: Vec<serde_json::Value> = in_use.iter().map(|(base, owner)| serde_json::json!({ "testbed": base, "owner_pid": owner })).collect();
                println!("{}", serde_json::json!({ "removed": removed, "kept": kept, "not_removed": left }));
            }
            if !left.is_empty() {
                eprintln!("detpath: could not remove {}; run `ip netns del NAME` for each", left.join(", "));
                return Ok(1);
            }
            Ok(0)
        }
        Action::Status => {
            let json = args.json;
            let st = Testbed::status(&cfg);
            let complete = st.complete(&cfg);
            if json {
                let side = |d: &Option<detpath::sys::netdev::NetDev>, s: &detpath::testbed::Side| {
                    serde_json::json!({
                        "netns": s.netns, "iface": s.iface, "expected_addr": s.addr.to_string(),
                        "present": d.is_some(),
                        "up": d.as_ref().map(|d| d.up),
                        "addrs": d.as_ref().map(|d| d.ipv4.iter().map(|(a, p)| format!("{a}/{p}")).collect::<Vec<_>>()),
                        "mtu": d.as_ref().map(|d| d.mtu),
                    })
                };
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "complete": complete, "a": side(&st.a, &cfg.a), "b": side(&st.b, &cfg.b)
                    }))?
                );
            } else {
                for (d, s) in [(&st.a, &cfg.a), (&st.b, &cfg.b)] {
                    match d {
                        Some(d) => println!(
                            "{:<10} {:<4} {} mtu {} {}",
                            s.netns,
                            s.iface,
                            d.ipv4.iter().map(|(a, p)| format!("{a}/{p}")).collect::<Vec<_>>().join(","),
                            d.mtu,
                            if d.up { "up" } else { "DOWN" }
                        ),
                        None => println!("{:<10} {:<4} absent", s.netns, s.iface),
                    }
                }
                println!("testbed {}", if complete { "complete" } else { "not complete (run `detpath testbed up`)" });
            }
            Ok(if complete { 0 } else { 1 })
        }
    }
}

fn print_layout(cfg: &TestbedConfig) {
    println!("testbed up:");
    for s in [&cfg.a, &cfg.b] {
        println!("  namespace {:<10} iface {:<4} {}/{} mac {}", s.netns, s.iface, s.addr, cfg.prefix_len, s.mac);
    }
    println!("  e.g. ip netns exec {} ping -c1 {}", cfg.a.netns, cfg.b.addr);
}

//! `detpath testbed up|down|status`: the built-in two-namespace testbed.
//! `down` also removes the testbeds other detpath commands left behind
//! (their process is gone: killed, crashed), found by the naming rule of
//! `detpath::testbed::find`, and names those still in use.

use detpath::testbed::{Testbed, TestbedConfig};

#[derive(clap::Args)]
pub struct Args {
    /// Namespace name prefix: the testbed is <NAME>-a and <NAME>-b.
    #[arg(long, default_value = "detpath", global = true)]
    testbed: String,
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Create the namespaces and veth pair (idempotent; repairs a half-built one).
    Up,
    /// Remove them (idempotent), and every testbed a detpath command left
    /// behind (`detpath-<tag>-<pid>-<n>-a|b` whose process is gone).
    Down,
    /// Show what exists; exit 0 when the testbed is complete, 1 otherwise.
    Status {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let cfg = TestbedConfig::with_prefix(&args.testbed);
    match args.action {
        Action::Up => {
            let cfg = Testbed::up(cfg)?.keep();
            print_layout(&cfg);
            Ok(0)
        }
        Action::Down => {
            Testbed::down(&cfg);
            println!("testbed down ({} and {} removed)", cfg.a.netns, cfg.b.netns);
            let mut in_use = std::collections::BTreeMap::new();
            for (netns, name) in detpath::testbed::find() {
                if name.orphaned() {
                    detpath::testbed::remove_netns(&netns);
                    println!("removed {netns} (left by process {}, which is gone)", name.owner.unwrap_or(0));
                } else if name.base != args.testbed {
                    in_use.entry(name.base.clone()).or_insert(name.owner);
                }
            }
            let left: Vec<String> = detpath::testbed::find().into_iter().filter(|(_, n)| n.orphaned() || n.base == args.testbed).map(|(ns, _)| ns).collect();
            for (base, owner) in &in_use {
                match owner {
                    Some(pid) => println!("kept {base}-a/-b: process {pid} is using it"),
                    None => println!("kept {base}-a/-b (another testbed; remove it with `detpath testbed down --testbed {base}`)"),
                }
            }
            if !left.is_empty() {
                eprintln!("detpath: could not remove {}; run `ip netns del NAME` for each", left.join(", "));
                return Ok(1);
            }
            Ok(0)
        }
        Action::Status { json } => {
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

//! `detpath classify`: the XDP classifier daemon and its client.
//!
//! ```text
//! detpath classify serve --iface eth0 [--socket PATH] [--listen ADDR:PORT --token-file FILE] [--alt MAC,IP]...
//! detpath classify add intent.json      # or - for stdin
//! detpath classify ls | stats | rm ID
//! detpath classify config --load-flag on
//! ```
//!
//! The API is a root-only Unix socket (`/run/detpath/classify-IFACE.sock`)
//! unless `--listen` asks for TCP, which needs a token. Clients find the
//! socket themselves when one daemon runs (else `--iface` or `--socket`);
//! `--server ADDR:PORT` goes over TCP with `--token-file`.

pub mod bench;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use detpath_classify::classifier::{parse_mac, AltNode, DefaultAction};
use detpath_classify::client::{self, Target};
use detpath_classify::server::{self, ServeConfig};
use detpath_classify::XdpMode;
use detpath_metrics::http::Token;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `detpath classify`: one subcommand (the daemon, its API
/// clients, or the benchmark).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Parser, Clone)]
struct ClientOpts {
    /// The daemon's Unix socket. Default: /run/detpath/classify-IFACE.sock
    /// with --iface, else the only daemon's socket there.
    #[arg(long, global = true, conflicts_with = "server")]
    socket: Option<PathBuf>,
    /// Which daemon (by interface) when several run.
    #[arg(long, global = true)]
    iface: Option<String>,
    /// The daemon's namespace (its default socket name has it) with --iface.
    #[arg(long, global = true)]
    netns: Option<String>,
    /// Talk to a daemon started with --listen ADDR:PORT (TCP; needs the token).
    #[arg(long, global = true, value_name = "ADDR:PORT")]
    server: Option<SocketAddr>,
    /// File holding the bearer token for --server (a trailing newline is ignored).
    #[arg(long, global = true, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Bearer token for --server (or DETPATH_CLASSIFY_TOKEN); prefer --token-file,
    /// a command line is visible to every local user.
    #[arg(long, global = true, conflicts_with = "token_file")]
    token: Option<String>,
    /// Print the daemon's answer as one JSON document instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

/// The exit codes of the API clients (add, rm, ls, stats, config).
const CLIENT_EXIT_CODES: &str = "Exit codes: 0 the daemon answered 2xx; 1 it refused (its status and message on stderr: \
400 bad intent, 401 token, 404 no such intent, ...); 2 an error (no daemon, no socket, bad arguments).";

#[derive(Subcommand)]
enum Cmd {
    /// The classifier against a no-op XDP program at paper 004's sizes (root).
    #[command(after_help = "Exit codes: 0 every cell ran; 2 an error (not root, bad arguments, a program that would not load).")]
    Bench(crate::classify::bench::BenchArgs),
    /// Attach the classifier to an interface and serve the intent API until SIGINT/SIGTERM.
    #[command(after_help = "Exit codes: 0 stopped by SIGINT/SIGTERM (the program detached); 2 an error (attach, socket, token, state file).")]
    Serve(ServeArgs),
    /// Post an intent (a JSON file, or - for stdin).
    #[command(after_help = CLIENT_EXIT_CODES)]
    Add {
        file: PathBuf,
        #[command(flatten)]
        c: ClientOpts,
    },
    /// Delete an intent by id.
    #[command(after_help = CLIENT_EXIT_CODES)]
    Rm {
        id: String,
        #[command(flatten)]
        c: ClientOpts,
    },
    /// List the intents.
    #[command(after_help = CLIENT_EXIT_CODES)]
    Ls {
        #[command(flatten)]
        c: ClientOpts,
    },
    /// Per-rule and per-action statistics.
    #[command(after_help = CLIENT_EXIT_CODES)]
    Stats {
        #[command(flatten)]
        c: ClientOpts,
    },
    /// Show or change the overload signal, default action and alternative nodes.
    #[command(after_help = CLIENT_EXIT_CODES)]
    Config {
        /// The user-space load flag (on = overloaded).
        #[arg(long, value_parser = parse_on_off)]
        load_flag: Option<bool>,
        #[command(flatten)]
        settings: SettingsArgs,
        #[command(flatten)]
        c: ClientOpts,
    },
}

/// The settings flags `serve` and `config` share: each one given replaces
/// that field of the settings, the rest keep theirs.
#[derive(clap::Args)]
struct SettingsArgs {
    /// Alternative node for forward-when-overloaded, MAC,IP (repeatable, index
    /// = order; given, they replace the list).
    #[arg(long = "alt")]
    alt: Vec<String>,
    /// Per-CPU packet rate above which a CPU counts as overloaded (0 = off).
    #[arg(long)]
    rate_threshold_pps: Option<u64>,
    /// Per-CPU packet rate above which even prioritised flows are forwarded
    /// (their excess is processed elsewhere, not lost); 0 = never.
    #[arg(long)]
    saturation_pps: Option<u64>,
    /// What unmatched encapsulated flows get: forward (when overloaded, the
    /// default) or pass.
    #[arg(long)]
    default_action: Option<String>,
}

impl SettingsArgs {
    /// The fields given (and the load flag, if given), as `PUT /v1/config`
    /// takes them: what `config` sends and what `serve` lays over the state
    /// file's settings.
    fn patch(&self, load_flag: Option<bool>) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        let mut body = serde_json::Map::new();
        if let Some(f) = load_flag {
            body.insert("load_flag".into(), f.into());
        }
        if let Some(r) = self.rate_threshold_pps {
            body.insert("rate_threshold_pps".into(), r.into());
        }
        if let Some(s) = self.saturation_pps {
            body.insert("saturation_pps".into(), s.into());
        }
        if let Some(d) = &self.default_action {
            body.insert("default_action".into(), serde_json::to_value(parse_default(d)?)?);
        }
        if !self.alt.is_empty() {
            let nodes = self.alt.iter().map(|x| parse_alt(x)).collect::<anyhow::Result<Vec<_>>>()?;
            body.insert("alt_nodes".into(), serde_json::to_value(nodes)?);
        }
        Ok(body)
    }
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Interface to classify.
    #[arg(long)]
    iface: String,
    /// The API's Unix socket (mode 0600, root only).
    /// Default /run/detpath/classify-IFACE.sock (classify-NETNS-IFACE.sock with --netns).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// No Unix socket (then --listen is required).
    #[arg(long, conflicts_with = "socket")]
    no_socket: bool,
    /// Serve the API on TCP too, e.g. 127.0.0.1:7460. Needs a token
    /// (--token-file); the Host and Origin headers are checked.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// File holding the bearer token TCP clients must send (a trailing
    /// newline is ignored). Without it: --token, DETPATH_CLASSIFY_TOKEN, or
    /// $CREDENTIALS_DIRECTORY/token (systemd LoadCredential=token:FILE).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Bearer token on the command line (visible to every local user: prefer --token-file).
    #[arg(long, conflicts_with = "token_file")]
    token: Option<String>,
    /// State file (intents and settings, reinstalled on start).
    /// Default /var/lib/detpath/classify-IFACE.json.
    #[arg(long)]
    state: Option<PathBuf>,
    /// native (driver) or skb (generic); never a silent fallback.
    #[arg(long, default_value = "native")]
    xdp_mode: XdpMode,
    /// Rule table size (1..=1024).
    #[arg(long, default_value_t = 1024)]
    max_rules: u32,
    /// Attach inside this network namespace (the API stays in the current one).
    #[arg(long)]
    netns: Option<String>,
    /// Start with the load flag set.
    #[arg(long)]
    load_flag: bool,
    // Given, these override the stored settings field by field.
    #[command(flatten)]
    settings: SettingsArgs,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("`{s}`: on or off")),
    }
}

fn parse_alt(s: &str) -> anyhow::Result<AltNode> {
    let (mac, ip) = s.split_once(',').with_context(|| format!("--alt `{s}`: expected MAC,IP such as 02:00:00:00:00:aa,10.0.0.9"))?;
    let mac = parse_mac(mac).with_context(|| format!("--alt `{s}`: `{mac}` is not a MAC address"))?;
    let ip = ip.trim().parse().with_context(|| format!("--alt `{s}`: `{ip}` is not an IP address"))?;
    Ok(AltNode { mac, ip })
}

fn parse_default(s: &str) -> anyhow::Result<DefaultAction> {
    match s {
        "forward" => Ok(DefaultAction::Forward),
        "pass" => Ok(DefaultAction::Pass),
        _ => bail!("--default-action `{s}`: forward or pass"),
    }
}

/// The token from --token-file, --token or DETPATH_CLASSIFY_TOKEN; with
/// `credentials`, then `$CREDENTIALS_DIRECTORY/token` (systemd).
fn token(file: Option<&PathBuf>, arg: Option<&String>, credentials: bool) -> anyhow::Result<Option<Token>> {
    if let Some(f) = file {
        return Ok(Some(Token::from_file(f)?));
    }
    if let Some(t) = arg {
        return Ok(Some(Token::new(t, "--token")?));
    }
    if let Some(t) = std::env::var("DETPATH_CLASSIFY_TOKEN").ok().filter(|s| !s.is_empty()) {
        return Ok(Some(Token::new(&t, "DETPATH_CLASSIFY_TOKEN")?));
    }
    if credentials {
        if let Some(dir) = std::env::var_os("CREDENTIALS_DIRECTORY") {
            let f = PathBuf::from(dir).join("token");
            if f.exists() {
                return Ok(Some(Token::from_file(&f)?));
            }
        }
    }
    Ok(None)
}

fn call(c: &ClientOpts, method: &str, path: &str, body: Option<&[u8]>) -> anyhow::Result<(u16, serde_json::Value)> {
    let target = match (&c.server, &c.socket) {
        (Some(a), _) => Target::Tcp(*a),
        (None, Some(p)) => Target::Unix(p.clone()),
        (None, None) => Target::Unix(client::default_socket(c.iface.as_deref(), c.netns.as_deref())?),
    };
    let t = token(c.token_file.as_ref(), c.token.as_ref(), false)?;
    Ok(client::request(&target, t.as_ref().map(Token::as_str), method, path, body)?)
}

/// A class intent's class for the statistics table: its topic and DSCPs by
/// name (`Control EF`, `AF21,AF31`); `-` for an intent of no class.
fn class_of(rule: &serde_json::Value) -> String {
    let dscps: Vec<String> = rule["dscp"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_u64())
        .map(|d| detpath_wire::dscp::name(d as u8).map_or_else(|| d.to_string(), str::to_string))
        .collect();
    match (rule["topic"].as_str(), dscps.is_empty()) {
        (_, true) => "-".into(),
        (Some(t), false) => format!("{t} {}", dscps.join(",")),
        (None, false) => dscps.join(","),
    }
}

/// Prints the answer; non-2xx becomes exit code 1 with the daemon's message.
fn report(status: u16, v: &serde_json::Value, json: bool, table: impl FnOnce(&serde_json::Value)) -> i32 {
    if !(200..300).contains(&status) {
        let code = v["error"]["code"].as_str().unwrap_or("error");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        eprintln!("detpath classify: {status} {code}: {msg}");
        return 1;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
    } else {
        table(v);
    }
    0
}

/// Runs the `detpath classify` subcommand; returns its exit code (each
/// subcommand's `--help` lists them).
pub fn run(a: Args) -> anyhow::Result<i32> {
    match a.cmd {
        Cmd::Bench(b) => crate::classify::bench::run(b),
        Cmd::Serve(s) => {
            // The settings flags given override the stored ones; the rest
            // (and what `classify config` set) stay as the state file has them.
            let settings = s.settings.patch(s.load_flag.then_some(true))?;
            let state = s.state.clone().unwrap_or_else(|| server::default_state_path(&s.iface, s.netns.as_deref()));
            let socket = (!s.no_socket).then(|| s.socket.clone().unwrap_or_else(|| server::default_socket_path(&s.iface, s.netns.as_deref())));
            let cfg = ServeConfig {
                socket,
                listen: s.listen,
                token: token(s.token_file.as_ref(), s.token.as_ref(), true)?,
                state: Some(state),
                xdp_mode: s.xdp_mode,
                max_rules: s.max_rules,
                netns: s.netns,
                settings,
                ..ServeConfig::new(&s.iface)
            };
            let stop = server::stop_on_signal();
            server::serve(cfg, stop, None)?;
            Ok(0)
        }
        Cmd::Add { file, c } => {
            let mut body = Vec::new();
            if file.as_os_str() == "-" {
                std::io::stdin().read_to_end(&mut body)?;
            } else {
                body = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            }
            let (st, v) = call(&c, "POST", "/v1/intents", Some(&body))?;
            Ok(report(st, &v, c.json, |v| println!("installed {} (slot {}, priority {})", v["id"].as_str().unwrap_or("?"), v["slot"], v["priority"])))
        }
        Cmd::Rm { id, c } => {
            let (st, v) = call(&c, "DELETE", &format!("/v1/intents/{id}"), None)?;
            Ok(report(st, &v, c.json, |_| println!("deleted {id}")))
        }
        Cmd::Ls { c } => {
            let (st, v) = call(&c, "GET", "/v1/intents", None)?;
            Ok(report(st, &v, c.json, |v| {
                println!("{:<18} {:>5} {:>8}  {:<28} match", "id", "slot", "priority", "action");
                for e in v["intents"].as_array().into_iter().flatten() {
                    let mut m = e["rule"]["matches"].clone();
                    if let Some(o) = m.as_object_mut() {
                        o.retain(|_, v| !matches!(v, serde_json::Value::Bool(false)));
                    }
                    println!(
                        "{:<18} {:>5} {:>8}  {:<28} {}",
                        e["id"].as_str().unwrap_or("?"),
                        e["slot"].to_string(),
                        e["priority"].to_string(),
                        e["rule"]["action"].to_string(),
                        m
                    );
                }
            }))
        }
        Cmd::Stats { c } => {
            let (st, v) = call(&c, "GET", "/v1/stats", None)?;
            Ok(report(st, &v, c.json, |v| {
                println!("interface {}  forwarded fraction {:.4}", v["iface"].as_str().unwrap_or("?"), v["forwarded_fraction"].as_f64().unwrap_or(0.0));
                println!("{:<16} {:>14} {:>16}", "total", "packets", "bytes");
                for (k, t) in v["totals"].as_object().into_iter().flatten() {
                    println!("{:<16} {:>14} {:>16}", k, t["packets"].to_string(), t["bytes"].to_string());
                }
                println!("{:<18} {:>14} {:>16} {:>12} {:>20}  class", "rule", "packets", "bytes", "forwarded", "last_seen_ns");
                for r in v["rules"].as_array().into_iter().flatten() {
                    println!(
                        "{:<18} {:>14} {:>16} {:>12} {:>20}  {}",
                        r["id"].as_str().unwrap_or("?"),
                        r["packets"].to_string(),
                        r["bytes"].to_string(),
                        r["forwarded"].to_string(),
                        r["last_seen_ns"].to_string(),
                        class_of(r)
                    );
                }
            }))
        }
        Cmd::Config { load_flag, settings, c } => {
            let body = settings.patch(load_flag)?;
            let (st, v) =
                if body.is_empty() { call(&c, "GET", "/v1/config", None)? } else { call(&c, "PUT", "/v1/config", Some(&serde_json::to_vec(&body)?))? };
            Ok(report(st, &v, c.json, |v| {
                for (k, x) in v.as_object().into_iter().flatten() {
                    match x {
                        serde_json::Value::Array(nodes) => {
                            println!("{k:<20} {}", nodes.len());
                            for (i, n) in nodes.iter().enumerate() {
                                println!("  [{i}] {}", n);
                            }
                        }
                        serde_json::Value::String(t) => println!("{k:<20} {t}"),
                        other => println!("{k:<20} {other}"),
                    }
                }
            }))
        }
    }
}

//! Walks every (sub)command of the CLI, as `--help` shows it, and checks the
//! shared vocabulary of [`crate::vocab`]: durations take the shared duration
//! types (their help names the unit of a bare number), no flag carries a unit
//! in its visible name, every runnable command lists its exit codes, every
//! reporting command has `--json`, and each `--json` says whether it prints a
//! JSON document or JSON lines. Old spellings still parse, with their old units.

use crate::vocab::{Offset, Warmup};
use crate::Cli;
use clap::{Arg, ArgMatches, Command, CommandFactory};
use std::any::TypeId;
use std::time::Duration;

/// Every command with its path (`detpath bench server`), globals propagated.
fn all_commands() -> Vec<(String, Command)> {
    fn walk(path: String, cmd: &Command, out: &mut Vec<(String, Command)>) {
        out.push((path.clone(), cmd.clone()));
        // `help` is clap's own (`detpath tune help apply`), not a command of ours.
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(format!("{path} {}", sub.get_name()), sub, out);
        }
    }
    let mut top = Cli::command();
    top.build();
    let mut out = Vec::new();
    walk("detpath".into(), &top, &mut out);
    out
}

fn help_of(a: &Arg) -> String {
    a.get_long_help().or(a.get_help()).map(|h| h.to_string()).unwrap_or_default()
}

fn visible_args(cmd: &Command) -> impl Iterator<Item = &Arg> {
    cmd.get_arguments().filter(|a| !a.is_hide_set() && a.get_long().is_some())
}

/// Flag names that say a length of time.
fn names_a_time(long: &str) -> bool {
    const EXEMPT: &[&str] = &[
        // `10x` (times the run's median) or a latency: detpath_instrument::tail::TailThreshold parses it.
        "tail-threshold",
        // a packet rate, not a time
        "rate-threshold-pps",
        // PTP's own unit: log2 of seconds, as ptp4l's logSyncInterval
        "log-sync-interval",
        "log-announce-interval",
    ];
    if EXEMPT.contains(&long) {
        return false;
    }
    ["duration", "timeout", "period", "warmup", "interval", "latency", "tolerance", "segment-on", "segment-off", "slice", "threshold"]
        .iter()
        .any(|w| long.contains(w))
        || ["slot", "spin", "offset"].contains(&long)
}

#[test]
fn every_duration_flag_uses_the_shared_type_and_names_its_bare_unit() {
    let mut checked = 0;
    for (path, cmd) in all_commands() {
        for a in visible_args(&cmd) {
            let long = a.get_long().unwrap();
            for suffix in ["-ns", "-us", "-ms", "-secs", "seconds"] {
                assert!(!long.ends_with(suffix), "{path} --{long}: the unit goes in the value (`--x 100us`), not the flag's name");
            }
            if !names_a_time(long) {
                continue;
            }
            let t = a.get_value_parser().type_id();
            assert!(
                t == TypeId::of::<Duration>() || t == TypeId::of::<Warmup>() || t == TypeId::of::<Offset>(),
                "{path} --{long}: a time flag must use a crate::vocab duration parser"
            );
            let value_name = a.get_value_names().and_then(|v| v.first()).map(|v| v.to_string()).unwrap_or_default();
            assert!(["DURATION", "WARMUP", "OFFSET"].contains(&value_name.as_str()), "{path} --{long}: value name {value_name}");
            let help = help_of(a);
            assert!(help.contains("a bare number is"), "{path} --{long}: the help must say what a bare number means: {help}");
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} duration flags found: is the walk broken?");
}

#[test]
fn one_name_per_idea() {
    for (path, cmd) in all_commands() {
        for a in visible_args(&cmd) {
            let long = a.get_long().unwrap();
            assert!(
                !["datapaths", "seconds", "timeout-ms", "fair-slice-us", "slot-ns", "period-us"].contains(&long),
                "{path} --{long}: an old spelling is visible"
            );
            if long == "rt-priority" {
                assert!(help_of(a).contains("1..=99"), "{path} --rt-priority: the help must give the range 1..=99");
            }
            if long == "rate" {
                let v = a.get_value_names().and_then(|v| v.first()).map(|v| v.to_string()).unwrap_or_default();
                assert!(["MBIT/S", "PER_SECOND"].contains(&v.as_str()), "{path} --rate: say what it counts ({v})");
            }
        }
    }
}

#[test]
fn every_runnable_command_lists_its_exit_codes() {
    for (path, cmd) in all_commands() {
        if cmd.has_subcommands() && cmd.is_subcommand_required_set() && path != "detpath" {
            continue; // not runnable by itself: each subcommand lists its own
        }
        let after = cmd.get_after_long_help().or(cmd.get_after_help()).map(|h| h.to_string()).unwrap_or_default();
        assert!(after.contains("Exit codes:"), "{path}: --help lists no exit codes");
    }
}

/// Commands that report nothing a script would read (they write files or serve).
const NOT_REPORTING: &[&str] = &["detpath generate man", "detpath generate completions", "detpath classify serve"];

#[test]
fn every_reporting_command_has_json_and_says_which_kind() {
    let cmds = all_commands();
    for n in NOT_REPORTING {
        assert!(cmds.iter().any(|(p, _)| p == n), "{n} is no longer a command: update NOT_REPORTING");
    }
    let mut leaves = 0;
    for (path, cmd) in &cmds {
        let runnable = !cmd.has_subcommands() || !cmd.is_subcommand_required_set();
        if !runnable || path == "detpath" || NOT_REPORTING.contains(&path.as_str()) {
            continue;
        }
        leaves += 1;
        let json = cmd.get_arguments().find(|a| a.get_long() == Some("json"));
        let json = json.unwrap_or_else(|| panic!("{path}: no --json"));
        let help = help_of(json);
        assert!(help.contains("JSON lines") || help.contains("JSON document"), "{path} --json: say whether it prints one JSON document or JSON lines: {help}");
    }
    assert!(leaves >= 25, "only {leaves} commands walked");
}

fn parse(args: &[&str]) -> ArgMatches {
    let mut full = vec!["detpath"];
    full.extend_from_slice(args);
    Cli::command().try_get_matches_from(full).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn leaf(m: &ArgMatches) -> &ArgMatches {
    match m.subcommand() {
        Some((_, sub)) => leaf(sub),
        None => m,
    }
}

fn dur(m: &ArgMatches, id: &str) -> Duration {
    *leaf(m).get_one::<Duration>(id).unwrap_or_else(|| panic!("no {id}"))
}

#[test]
fn units_in_the_value_and_old_spellings_keep_their_meaning() {
    // detpath bench: --timeout (old --timeout-ms, bare ms), --duration (bare s), --warmup rounds or a time.
    let m = parse(&["bench", "--timeout", "1s", "--duration", "2.5", "--warmup", "2s", "--period", "1ms,250"]);
    assert_eq!(dur(&m, "timeout"), Duration::from_secs(1));
    assert_eq!(dur(&m, "duration"), Duration::from_millis(2500));
    assert_eq!(leaf(&m).get_one::<Warmup>("warmup"), Some(&Warmup::Time(Duration::from_secs(2))));
    let periods: Vec<Duration> = leaf(&m).get_many::<Duration>("period").unwrap().copied().collect();
    assert_eq!(periods, [Duration::from_millis(1), Duration::from_micros(250)]);
    let m = parse(&["bench", "--timeout-ms", "50", "--warmup", "500", "--rate", "80mbit,1.6gbit"]);
    let rates: Vec<f64> = leaf(&m).get_many::<f64>("rate").unwrap().copied().collect();
    assert_eq!(rates, [80.0, 1600.0]);
    assert_eq!(dur(&m, "timeout"), Duration::from_millis(50));
    assert_eq!(leaf(&m).get_one::<Warmup>("warmup"), Some(&Warmup::Rounds(500)));
    let m = parse(&["bench", "--period-us", "100"]);
    assert_eq!(dur(&m, "period"), Duration::from_micros(100));
    let m = parse(&["bench"]);
    assert_eq!(leaf(&m).get_one::<Warmup>("warmup"), Some(&Warmup::Rounds(1000)), "the default warm-up is 1000 rounds, as before");
    assert_eq!(dur(&m, "timeout"), Duration::from_millis(100));
    assert!(Cli::command().try_get_matches_from(["detpath", "bench", "--rate", "1000/s"]).is_err(), "bench --rate counts bits");
    assert!(Cli::command().try_get_matches_from(["detpath", "bench", "--rt-priority", "0"]).is_err());

    // pubsub: --datapath (old --datapaths), --duration (old --seconds), --fair-slice (old --fair-slice-us).
    let m = parse(&["pubsub", "bench", "--datapaths", "udp,afxdp", "--seconds", "3", "--fair-slice-us", "50"]);
    let dps: Vec<&String> = leaf(&m).get_many::<String>("datapath").unwrap().collect();
    assert_eq!(dps, ["udp", "afxdp"]);
    assert_eq!(dur(&m, "duration"), Duration::from_secs(3));
    assert_eq!(dur(&m, "fair_slice"), Duration::from_micros(50));
    let m = parse(&["pubsub", "ping", "--endpoint", "udp://10.77.0.1:7410", "--rate", "2khz", "--spin-us", "20", "--duration", "1s"]);
    assert_eq!(leaf(&m).get_one::<f64>("rate"), Some(&2000.0));
    assert_eq!(dur(&m, "spin"), Duration::from_micros(20));
    assert!(Cli::command().try_get_matches_from(["detpath", "pubsub", "ping", "--endpoint", "x", "--rate", "80mbit"]).is_err(), "ping --rate counts samples");

    // sched bench: bare numbers keep ns / ms / s; --rt-priority off.
    let m = parse(&["sched", "bench", "--slot-ns", "20000", "--segment-on", "500", "--warmup", "0.5", "--late-tolerance", "3us", "--rt-priority", "off"]);
    assert_eq!(dur(&m, "slot"), Duration::from_micros(20));
    assert_eq!(dur(&m, "segment_on"), Duration::from_millis(500));
    assert_eq!(dur(&m, "warmup"), Duration::from_millis(500));
    assert_eq!(dur(&m, "late_tolerance"), Duration::from_micros(3));
    assert_eq!(leaf(&m).get_one::<u8>("rt_priority"), Some(&0));
    let m = parse(&["sched", "ptp", "slave", "--endpoint", "udp://dpb?port=319", "--offset", "-37us", "--lock-threshold-ns", "5000"]);
    assert_eq!(leaf(&m).get_one::<Offset>("offset"), Some(&Offset(-37_000)));
    assert_eq!(dur(&m, "lock_threshold"), Duration::from_micros(5));
    let m = parse(&["sched", "sync", "--offset-ns", "5000", "--interval-ms", "250"]);
    assert_eq!(leaf(&m).get_one::<Offset>("offset"), Some(&Offset(5000)));
    assert_eq!(dur(&m, "interval"), Duration::from_millis(250));
    let m = parse(&["tune", "hold", "--latency-us", "10"]);
    assert_eq!(dur(&m, "latency"), Duration::from_micros(10));
    let m = parse(&["testbed", "status", "--json"]);
    assert_eq!(leaf(&m).get_one::<bool>("json"), Some(&true));
}

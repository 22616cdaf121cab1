//! `detpath tune`: audit, apply and revert the low-latency OS tuning.

use std::path::PathBuf;

use anyhow::Context;
use detpath_tune::profile::{apply_profile, plan_profile, verify, Match, SavedProfile};
use detpath_tune::{
    apply_with_progress, audit, default_state_dir, discard_stale_journal, is_tuned, journal_status, plan, revert, rt, ApplyRequest, AuditRequest, ChangeKind,
    CpuList, Host, Knob, Profile, Status, Step, StepOutcome, TuneError,
};

/// `audit --from`: some knob is not as the profile says.
pub const EXIT_DRIFT: i32 = 3;
/// `audit --from` / `apply --from`: the host does not fit the profile (fewer
/// cores, no such NIC, a knob missing); `apply --from` changed nothing.
pub const EXIT_MISFIT: i32 = 4;

/// Arguments of `detpath tune`: one subcommand (audit, apply, revert,
/// status, hold).
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Report every latency knob: current, recommended, why, runtime or reboot.
    #[command(after_help = "Exit codes: 0 tuned for the cores; 1 something misconfigured; 2 an error. \
With --from PROFILE (verify against a saved profile): 0 the host matches, 3 drift (a knob is not as the profile says), \
4 the host does not fit the profile (fewer cores, no such NIC, a knob missing), 2 an error.")]
    Audit(AuditArgs),
    /// Apply the runtime knobs for the datapath cores (journalled; undo with `revert`).
    ///
    /// --save FILE writes what is in force afterwards as a profile (JSON);
    /// --from FILE applies a saved profile, refusing with exit code 4 and
    /// changing nothing where this host differs (fewer cores, no such NIC,
    /// a knob missing). A second apply changes nothing and says so
    /// (`--json`: "changed": 0).
    #[command(after_help = "Exit codes: 0 applied (or --dry-run printed the plan); 4 --from: the host does not fit the profile, \
nothing changed; 2 an error (what was changed is reverted).")]
    Apply(ApplyArgs),
    /// Restore what the journal recorded (also after a crashed or killed apply).
    #[command(after_help = "Exit codes: 0 restored (or nothing to restore); 2 an error (a setting could not be restored: the journal stays).")]
    Revert(RevertArgs),
    /// Say whether a tuning journal is pending. Exit code 1 when one is.
    #[command(after_help = "Exit codes: 0 no journal pending; 1 a journal is pending; 2 an error.")]
    Status(StatusArgs),
    /// Hold /dev/cpu_dma_latency (C-state limit) until Ctrl-C or SIGTERM.
    #[command(after_help = "Exit codes: 0 released after SIGINT/SIGTERM; 2 an error (/dev/cpu_dma_latency could not be opened).")]
    Hold(HoldArgs),
}

#[derive(clap::Args)]
struct Target {
    /// Datapath cores (kernel list format: 1 or 2-3,6). Default: the isolated
    /// cores, else the highest-numbered online CPU.
    #[arg(long)]
    cores: Option<String>,
    /// The datapath's network interface (for NIC coalescing, GRO, rings, NAPI knobs).
    #[arg(long)]
    iface: Option<String>,
    /// Root of /proc, /sys and /dev (testing against a fake tree).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
}

#[derive(clap::Args)]
struct AuditArgs {
    #[command(flatten)]
    target: Target,
    /// Verify the host against a saved profile (`apply --save`), per knob:
    /// exit 0 matches, 3 drift, 4 the host does not fit the profile.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cores", "iface"])]
    from: Option<PathBuf>,
    /// One JSON document instead of a table (the knobs; with --from: {"matches", "drift": N, "differences", "knobs"}).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ApplyArgs {
    #[command(flatten)]
    target: Target,
    /// Tuning profile (only `latency`).
    #[arg(long, default_value = "latency")]
    profile: String,
    /// Print the plan, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// After applying, write what is in force as a profile (JSON: knobs and
    /// values, cores, NICs, the host's core count and kernel).
    #[arg(long, value_name = "FILE", conflicts_with = "dry_run")]
    save: Option<PathBuf>,
    /// Apply a saved profile instead of --cores/--iface/--profile; refuses
    /// (exit 4, nothing changed) where this host does not fit it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cores", "iface", "profile"])]
    from: Option<PathBuf>,
    /// Journal directory (default $DETPATH_STATE_DIR or /var/lib/detpath).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// One JSON document instead of text (what changed, the journal, the summary; with --dry-run the plan).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct RevertArgs {
    /// Journal directory (default $DETPATH_STATE_DIR or /var/lib/detpath).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Delete a journal left from another boot (its changes died with that boot).
    #[arg(long)]
    discard_stale: bool,
    /// Root of /proc, /sys and /dev (testing against a fake tree).
    #[arg(long, default_value = "/", hide = true)]
    root: PathBuf,
    /// One JSON document instead of text (`restored`, `gone`; with --discard-stale `discarded`).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct StatusArgs {
    /// Journal directory (default $DETPATH_STATE_DIR or /var/lib/detpath).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// One JSON document instead of text (`pending`, `this_boot`, `journal`).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct HoldArgs {
    /// Maximum C-state exit latency, e.g. `0us`, `10us` (a bare number is µs;
    /// 0: never leave C0/poll).
    #[arg(long, alias = "latency-us", value_name = "DURATION", value_parser = crate::vocab::micros, default_value = "0us")]
    latency: std::time::Duration,
    /// JSON lines instead of text: one object when the hold starts
    /// (`holding_us`, `effective_us`), one when it is released (`released`, `signal`).
    #[arg(long)]
    json: bool,
}

/// Runs the `detpath tune` subcommand; returns its exit code (each
/// subcommand's `--help` lists them, [`EXIT_DRIFT`] and [`EXIT_MISFIT`] among them).
pub fn run(a: Args) -> anyhow::Result<i32> {
    match a.cmd {
        Cmd::Audit(x) => run_audit(x),
        Cmd::Apply(x) => run_apply(x),
        Cmd::Revert(x) => run_revert(x),
        Cmd::Status(x) => run_status(x),
        Cmd::Hold(x) => run_hold(x),
    }
}

fn cores_of(host: &Host, t: &Target) -> anyhow::Result<(CpuList, bool)> {
    Ok(match &t.cores {
        Some(s) => (CpuList::parse(s)?, false),
        None => (host.default_cores(), true),
    })
}

fn run_audit_from(host: &Host, file: &std::path::Path, json: bool) -> anyhow::Result<i32> {
    let p = SavedProfile::load(file)?;
    let v = verify(host, &p)?;
    let code = if !v.differences.is_empty() {
        EXIT_MISFIT
    } else if v.drift > 0 {
        EXIT_DRIFT
    } else {
        0
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "profile": file, "matches": v.matches(), "drift": v.drift, "differences": v.differences,
                "kernel_note": v.kernel_note, "knobs": v.knobs, "exit_code": code,
            }))?
        );
        return Ok(code);
    }
    println!(
        "profile {} (saved on {}, {} CPU(s)): datapath cores {}, housekeeping {}{}",
        file.display(),
        if p.host.hostname.is_empty() { "?" } else { &p.host.hostname },
        p.host.cpu_count,
        p.cores.datapath,
        p.cores.housekeeping,
        p.iface().map(|i| format!(", interface {i}")).unwrap_or_default()
    );
    let head = ["KNOB".to_string(), "EXPECTED".to_string(), "CURRENT".to_string(), "STATE".to_string()];
    let rows: Vec<[String; 4]> = v.knobs.iter().map(|r| [r.knob.clone(), r.expected.clone(), r.current.clone(), r.state.label().to_string()]).collect();
    let mut w = [0usize; 4];
    for r in std::iter::once(&head).chain(rows.iter()) {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    for r in std::iter::once(&head).chain(rows.iter()) {
        println!("{:<w0$}  {:<w1$}  {:<w2$}  {}", r[0], r[1], r[2], r[3], w0 = w[0], w1 = w[1], w2 = w[2]);
    }
    if let Some(n) = &v.kernel_note {
        println!("\nnote: {n}");
    }
    for d in &v.differences {
        println!("does not fit: {d}");
    }
    let matched = v.knobs.iter().filter(|r| r.state == Match::Match || r.state == Match::Refused).count();
    match code {
        0 => println!("\nthe host matches the profile ({matched} knob(s))"),
        EXIT_DRIFT => println!("\n{} knob(s) drifted from the profile: `detpath tune apply --from {}` puts them back", v.drift, file.display()),
        _ => println!("\nthe host does not fit the profile ({} difference(s)); {} knob(s) drifted", v.differences.len(), v.drift),
    }
    Ok(code)
}

fn run_audit(a: AuditArgs) -> anyhow::Result<i32> {
    let host = Host::at(&a.target.root);
    if let Some(file) = &a.from {
        return run_audit_from(&host, file, a.json);
    }
    let (cores, defaulted) = cores_of(&host, &a.target)?;
    let knobs = audit(&host, &AuditRequest { cores: Some(cores.clone()), iface: a.target.iface.clone() })?;
    let tuned = is_tuned(&knobs);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&knobs)?);
    } else {
        println!(
            "datapath cores: {cores}{}{}",
            if defaulted { " (default; pass --cores)" } else { "" },
            a.target.iface.as_deref().map(|i| format!(", interface {i}")).unwrap_or_else(|| ", no --iface: NIC knobs not audited".into())
        );
        print_table(&knobs);
        print_advice(&knobs, &cores);
        // On a guest, the noise no knob removes: what the hypervisor took while we looked.
        if let Some(vm) = detpath_tune::vm::watch(&host, &cores, std::time::Duration::from_secs(1)) {
            println!(
                "\nvirtual machine ({}): the datapath cores {cores} lost {} ms to the hypervisor (steal time) in {} ms of audit.",
                vm.hypervisor, vm.steal_ms, vm.window_ms
            );
        }
        println!("{}", detpath_tune::vm::WHAT_TUNING_REMOVES);
    }
    Ok(if tuned { 0 } else { 1 })
}

fn print_table(knobs: &[Knob]) {
    let rows: Vec<[String; 6]> = knobs
        .iter()
        .map(|k| {
            [k.name.clone(), k.current.clone(), k.recommended.clone(), k.status.label().to_string(), format!("{:?}", k.change).to_lowercase(), k.why.clone()]
        })
        .collect();
    let head = ["KNOB", "CURRENT", "RECOMMENDED", "STATUS", "CHANGE", "WHY"];
    let mut w = head.map(|h| h.len());
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(5) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |r: &[String; 6]| {
        let mut s = String::new();
        for (i, c) in r.iter().enumerate() {
            if i < 5 {
                s.push_str(&format!("{c:<width$}  ", width = w[i]));
            } else {
                s.push_str(c);
            }
        }
        println!("{}", s.trim_end());
    };
    line(&head.map(String::from));
    for r in &rows {
        line(r);
    }
}

fn print_advice(knobs: &[Knob], cores: &CpuList) {
    let bad: Vec<&Knob> = knobs.iter().filter(|k| k.status == Status::Misconfigured).collect();
    if bad.is_empty() {
        println!("\ntuned for cores {cores}: nothing misconfigured");
        return;
    }
    println!("\n{} misconfigured:", bad.len());
    let runtime = bad.iter().filter(|k| k.fix.is_some()).count();
    if runtime > 0 {
        println!("  {runtime} runtime: detpath tune apply --cores {cores}");
    }
    for k in bad.iter().filter(|k| k.change == ChangeKind::Manual) {
        println!("  by hand: {} ({})", k.how, k.name);
    }
    let cmdline: Vec<&str> = bad.iter().filter_map(|k| if k.change == ChangeKind::Reboot { k.cmdline.as_deref() } else { None }).collect();
    if !cmdline.is_empty() {
        println!("  kernel command line (then reboot): {}", cmdline.join(" "));
    }
}

fn state_dir(o: Option<PathBuf>) -> PathBuf {
    o.unwrap_or_else(default_state_dir)
}

fn print_plan(p: &[detpath_tune::PlannedChange], cores: &CpuList, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else if p.is_empty() {
        println!("nothing to change: the runtime knobs are tuned for cores {cores}");
    } else {
        println!("plan ({} change(s), nothing changed):", p.len());
        for c in p {
            println!("  {c}{}", if c.may_refuse { " [may be refused]" } else { "" });
        }
    }
    Ok(())
}

fn run_apply(a: ApplyArgs) -> anyhow::Result<i32> {
    let host = Host::at(&a.target.root);
    let json = a.json;
    let state = state_dir(a.state_dir);
    let mut progress = |s: &Step<'_>| {
        if json {
            return;
        }
        match &s.outcome {
            StepOutcome::Changed => println!("changed   {}: {} -> {}", s.change.knob, s.change.from, s.change.to),
            StepOutcome::Unchanged => {}
            StepOutcome::Skipped(r) => println!("skipped   {}: {r}", s.change.knob),
        }
    };
    let (req, applied) = if let Some(file) = &a.from {
        let p = SavedProfile::load(file)?;
        let req = p.request(&state);
        let r = if a.dry_run {
            plan_profile(&host, &p, file).map(|plan| {
                let _ = print_plan(&plan, &req.cores, json);
                None
            })
        } else {
            apply_profile(&host, &p, file, &state, &mut progress).map(Some)
        };
        match r {
            Ok(Some(t)) => (req, t),
            Ok(None) => return Ok(0),
            Err(e @ TuneError::ProfileMismatch { .. }) => {
                if json {
                    let differences = match &e {
                        TuneError::ProfileMismatch { differences, .. } => differences.clone(),
                        _ => vec![],
                    };
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&serde_json::json!({"changed": 0, "fits": false, "differences": differences, "error": e.to_string()}))?
                    );
                }
                eprintln!("error: {e}");
                return Ok(EXIT_MISFIT);
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        let Some(cores) = &a.target.cores else { anyhow::bail!("apply needs --cores (the datapath cores, e.g. --cores 1) or --from PROFILE") };
        let cores = CpuList::parse(cores)?;
        let profile: Profile = a.profile.parse()?;
        let req = ApplyRequest { cores, iface: a.target.iface.clone(), profile, state_dir: state };
        if a.dry_run {
            print_plan(&plan(&host, &req)?, &req.cores, json)?;
            return Ok(0);
        }
        let t = apply_with_progress(&host, &req, &mut progress)?;
        (req, t)
    };
    let summary = applied.summary();
    let changes = applied.changes().to_vec();
    let skipped = applied.skipped().to_vec();
    let journal = applied.keep();
    if let Some(out) = &a.save {
        SavedProfile::capture(&host, &req)?.save(out)?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "changed": changes.len(), "changes": changes, "skipped": skipped, "journal": journal, "summary": summary,
                "from": a.from, "saved": a.save,
            }))?
        );
    } else {
        if changes.is_empty() {
            println!(
                "changed nothing: the host already has {}",
                a.from.as_ref().map(|f| format!("the profile {}", f.display())).unwrap_or_else(|| format!("the tuning for cores {}", req.cores))
            );
        }
        println!("{summary}");
        if !changes.is_empty() {
            println!("journal: {} (undo with `detpath tune revert`)", journal.display());
        }
        if let Some(out) = &a.save {
            println!("profile saved: {} (apply elsewhere with `detpath tune apply --from`, verify with `detpath tune audit --from`)", out.display());
        }
        let knobs = audit(&host, &AuditRequest { cores: Some(req.cores.clone()), iface: req.iface.clone() })?;
        let left: Vec<&Knob> = knobs.iter().filter(|k| k.status == Status::Misconfigured && k.fix.is_none()).collect();
        if !left.is_empty() {
            println!(
                "still misconfigured (reboot or by hand, see `detpath tune audit --cores {}`): {}",
                req.cores,
                left.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(0)
}

fn run_revert(a: RevertArgs) -> anyhow::Result<i32> {
    let host = Host::at(&a.root);
    let dir = state_dir(a.state_dir);
    if a.discard_stale {
        let discarded = discard_stale_journal(&host, &dir)?;
        if a.json {
            println!("{}", serde_json::json!({ "discarded": discarded, "state_dir": dir }));
        } else if discarded {
            println!("removed the journal of another boot in {}", dir.display());
        } else {
            println!("no stale journal in {} (a journal of this boot is reverted with `detpath tune revert`)", dir.display());
        }
        return Ok(0);
    }
    let r = revert(&host, &dir)?;
    if a.json {
        println!("{}", serde_json::json!({ "restored": r.restored, "gone": r.gone, "state_dir": dir }));
    } else if r.restored.is_empty() && r.gone.is_empty() {
        println!("nothing to revert (no journal in {})", dir.display());
    } else {
        println!("restored {} setting(s)", r.restored.len());
        if !r.gone.is_empty() {
            println!("no longer present (nothing to restore): {}", r.gone.join(", "));
        }
    }
    Ok(0)
}

fn run_status(a: StatusArgs) -> anyhow::Result<i32> {
    let dir = state_dir(a.state_dir);
    let j = journal_status(&dir)?;
    let boot = Host::real().boot_id().ok();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pending": j.is_some(),
                "this_boot": j.as_ref().map(|j| Some(&j.boot_id) == boot.as_ref()),
                "journal": j,
            }))?
        );
    } else {
        match &j {
            None => println!("no tuning journal pending in {}", dir.display()),
            Some(j) => {
                let this_boot = Some(&j.boot_id) == boot.as_ref();
                println!(
                    "tuning journal pending in {}: {} change(s), {}",
                    dir.display(),
                    j.entries.len(),
                    if this_boot { "this boot (undo with `detpath tune revert`)" } else { "ANOTHER boot (`detpath tune revert --discard-stale`)" }
                );
                for e in &j.entries {
                    println!("  {}: {} (was {})", e.knob, e.new, e.old.trim());
                }
            }
        }
    }
    Ok(if j.is_some() { 1 } else { 0 })
}

fn run_hold(a: HoldArgs) -> anyhow::Result<i32> {
    let us = u32::try_from(a.latency.as_micros()).context("--latency: too long")?;
    let hold = rt::CpuDmaLatencyHold::new(us)?;
    let effective = rt::current_cpu_dma_latency();
    if a.json {
        println!("{}", serde_json::json!({ "holding_us": hold.latency_us(), "effective_us": effective.as_ref().ok() }));
    } else {
        println!(
            "holding /dev/cpu_dma_latency at {} us (effective now: {} us); Ctrl-C or SIGTERM to release",
            hold.latency_us(),
            effective.map(|v| v.to_string()).unwrap_or_else(|e| e.to_string())
        );
    }
    let sig = rt::wait_for_termination_signal().context("waiting for SIGINT/SIGTERM")?;
    drop(hold);
    if a.json {
        println!("{}", serde_json::json!({ "released": true, "signal": sig }));
    } else {
        println!("released (signal {sig})");
    }
    Ok(0)
}

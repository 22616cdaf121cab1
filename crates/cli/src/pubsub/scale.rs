//! `detpath pubsub scale`: discovery time and memory as the number of
//! participants grows, and fan-out latency from one writer to many readers,
//! detpath beside CycloneDDS in the same run (`detpath_pubsub_bench::scale`).

use detpath::sys::cleanup::{self, OnSignal};
use detpath_pubsub_bench::scale::{self, report, Row, ScaleOptions, MAX_PARTICIPANTS, MAX_READERS};
use std::time::Duration;

/// Arguments of `detpath pubsub scale`.
#[derive(clap::Args)]
#[command(after_help = "Exit codes: 0 the run ended (a measurement that failed is a FAILED row); 2 an error \
(bad counts, testbed, permissions, ddsperf or the cyclonedds Python package missing without --no-cyclonedds); \
130 interrupted (Ctrl-C: the rows so far are saved).")]
pub struct ScaleArgs {
    /// Participant counts of the discovery test, comma separated, each from 2 to 128; half of
    /// them in each namespace, one writer and one reader each.
    #[arg(long, value_delimiter = ',', default_value = "2,8,32,64")]
    participants: Vec<u32>,
    /// Reader counts of the fan-out test (one writer, 32 B at 1 kHz, reliable), each from 1 to 64.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    readers: Vec<u32>,
    /// detpath's datapaths, comma separated (udp; others if several endpoints can share an
    /// interface: a datapath that cannot gives FAILED rows that say why).
    #[arg(long, alias = "datapaths", value_delimiter = ',', default_value = "udp")]
    datapath: Vec<String>,
    /// How long each fan-out runs, e.g. `10s` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "10s")]
    duration: Duration,
    /// Skip CycloneDDS (its Python binding for discovery, ddsperf for fan-out).
    #[arg(long)]
    no_cyclonedds: bool,
    /// Print JSON lines (one object per row, as it is measured) instead of the table.
    #[arg(long)]
    json: bool,
    /// Where the result directory goes: summary.json (rows and the environment record),
    /// table.txt, scale.png.
    #[arg(long, default_value = "results")]
    out: std::path::PathBuf,
    /// Internal: run one side's detpath discovery participants (a JSON WorkerSpec).
    #[arg(long, hide = true)]
    worker: Option<String>,
}

/// Runs the scale benchmark (or, with `--worker`, one of its discovery workers); returns its exit code.
pub fn run(a: ScaleArgs) -> anyhow::Result<i32> {
    if let Some(spec) = a.worker {
        let spec: scale::worker::WorkerSpec = serde_json::from_str(&spec).map_err(|e| anyhow::anyhow!("--worker: {e}"))?;
        scale::worker::run(&spec);
        return Ok(0);
    }
    cleanup::install_signal_handler(OnSignal::SetFlag);
    anyhow::ensure!(a.duration >= Duration::from_secs(1), "--duration: at least 1s");
    let o = ScaleOptions {
        participants: a.participants,
        readers: a.readers,
        datapaths: a.datapath,
        seconds: a.duration.as_secs() + u64::from(a.duration.subsec_nanos() > 0),
        with_cyclone: !a.no_cyclonedds,
        exe: std::env::current_exe()?,
    };
    if let Err(e) = o.check() {
        anyhow::bail!("{e} (limits: participants 2..={MAX_PARTICIPANTS}, readers 1..={MAX_READERS})");
    }
    if o.with_cyclone {
        need("ddsperf", &["-h"], "ddsperf is missing: apt-get install cyclonedds-tools, or --no-cyclonedds")?;
        need("python3", &["-c", "import cyclonedds.domain"], "the cyclonedds Python package is missing: pip install cyclonedds, or --no-cyclonedds")?;
    }
    let dir = detpath_instrument::results::ResultDir::create_named(
        &a.out,
        &format!("pubsub-scale-{}", detpath_instrument::results::utc_compact(detpath_instrument::results::now_unix())),
    )?;
    let json = a.json;
    let r = scale::run(&o, |row| {
        if json {
            println!("{}", serde_json::to_string(row).unwrap_or_default());
        } else {
            match row {
                Row::Discovery(d) => eprintln!("done: discovery {} N={}", d.system, d.participants),
                Row::Fanout(f) if f.reader.is_none() => eprintln!("done: fan-out {} K={}", f.system, f.readers),
                Row::Fanout(_) => {}
            }
        }
    })?;
    let table = report::save(dir.path(), &r)?;
    // The figure is a view of summary.json: failing to draw it loses no figure.
    match report::plot(dir.path(), &r) {
        Ok(Some(png)) => eprintln!("figure: {}", png.display()),
        Ok(None) => {}
        Err(e) => eprintln!("pubsub scale: the figure was not drawn: {e:#}"),
    }
    if !json {
        print!("{table}");
    }
    eprintln!("results saved in {}", dir.path().display());
    Ok(if cleanup::interrupted() { 130 } else { 0 })
}

/// Fails with `hint` unless `cmd args` runs and succeeds.
fn need(cmd: &str, args: &[&str], hint: &str) -> anyhow::Result<()> {
    let ok = std::process::Command::new(cmd)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success() || cmd == "ddsperf");
    anyhow::ensure!(ok, "{hint}");
    Ok(())
}

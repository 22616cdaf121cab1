//! `detpath sched`: the time-slotted transmit scheduler (crates/sched, paper 003).
//!
//! - `bench`: periodic flows plus a best-effort flood through the slot
//!   scheduler versus clock_nanosleep-then-send, on each datapath in the testbed.
//! - `sync`: synchronises a slave slot clock (injected offset and drift) to a
//!   master's over detpath datagrams in the testbed; time to lock, residual.
//! - `model`: the NIC ring model (simulated line-rate NIC): the paper's Table 3,
//!   the clock-error sweep of its Figure 8 and the dual clock of its §5.2.
//! - `probe`: what an interface offers (line rate, PTP clock, launch time).
//! - `ptp`: the slot clock over IEEE 1588 with ptp4l (`ptp.rs`).
//!
//! Argument parsing and printing only; the work is in `detpath_sched` and `detpath_sched_bench` (the bench).

pub mod plan;
pub mod ptp;

use crate::vocab::ns;
use anyhow::Context;
use detpath_sched_bench::{self as bench, BenchConfig, FlowSpec, Method};
use detpath_sched::{ClassConfig, Mode};
use std::path::PathBuf;
use std::time::Duration;

/// `detpath sched ...`
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Slots versus clock_nanosleep on afxdp, dpdk and udp in the testbed.
    #[command(after_help = "Exit codes: 0 every run ran and no strict violation; 1 a run failed or a strict class let a packet out late \
or outside its slots; 3 --plan: the traffic is proven not to fit; 4 --plan: the planner timed out; 2 an error.")]
    Bench(Box<BenchArgs>),
    /// Synchronise two slot clocks over detpath datagrams in the testbed.
    #[command(after_help = "Exit codes: 0 every run locked; 1 a run failed or never locked; 2 an error.")]
    Sync(SyncArgs),
    /// The NIC ring model: line-rate fraction (Table 3) and clock error (Figure 8).
    #[command(after_help = crate::vocab::EXIT_0_2)]
    Model(ModelArgs),
    /// What an interface offers a slot scheduler.
    #[command(after_help = crate::vocab::EXIT_0_2)]
    Probe(ProbeArgs),
    /// Does this periodic traffic fit the ring, and how (partitions and a validated schedule; paper 003's planner).
    #[command(after_help = crate::sched::plan::EXIT_CODES)]
    Plan(crate::sched::plan::Args),
    /// The slot clock over IEEE 1588 (PTPv2, UDP/IPv4): master or slave, with linuxptp's ptp4l or another detpath.
    #[command(after_help = "Exit codes: 0 a master ran, or a slave locked; 1 a slave never locked; 2 an error.")]
    Ptp(crate::sched::ptp::Args),
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Datapaths to measure.
    #[arg(long, value_delimiter = ',', default_values_t = ["afxdp".to_string(), "dpdk".to_string(), "udp".to_string()])]
    datapath: Vec<String>,
    /// Methods: slots, sleep, slots-idle (slots without the flood).
    #[arg(long, value_delimiter = ',', default_values_t = ["slots".to_string(), "sleep".to_string(), "slots-idle".to_string()])]
    method: Vec<String>,
    /// Measured duration of each run, e.g. `5s` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "5s")]
    duration: Duration,
    /// Warm-up of each run (not measured), a duration, e.g. `300ms` (a bare
    /// number is seconds; this bench has no rounds to count).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "300ms")]
    warmup: Duration,
    /// Slot length, e.g. `10us` (a bare number is ns).
    #[arg(long, alias = "slot-ns", value_name = "DURATION", value_parser = crate::vocab::nanos, default_value = "10us")]
    slot: Duration,
    /// Slots per ring cycle.
    #[arg(long, default_value_t = 100)]
    ring_slots: u32,
    /// Insertion lead, slots.
    #[arg(long, default_value_t = 2)]
    lead_slots: u32,
    /// A slot released later than this is late (strict mode drops its
    /// packet), e.g. `5us` (a bare number is ns).
    #[arg(long, alias = "late-tolerance-ns", value_name = "DURATION", value_parser = crate::vocab::nanos, default_value = "5us")]
    late_tolerance: Duration,
    /// Default mode of real-time classes.
    #[arg(long, default_value = "strict")]
    mode: String,
    /// Traffic class NAME:rt|be[:strict|relaxed]:MASK[@CAPACITY] (repeat; default: ctl, io, bulk).
    #[arg(long)]
    class: Vec<String>,
    /// Flow NAME:CLASS:PERIOD:SIZE:PHASE_SLOT, PERIOD with a unit (e.g. 100us; a bare number is µs) (repeat; default: 100 µs/64 B, 250 µs/256 B, 500 µs/512 B, 1 ms/1024 B).
    #[arg(long)]
    flow: Vec<String>,
    /// Best-effort class of the flood ("none": no flood).
    #[arg(long, default_value = "bulk")]
    be_class: String,
    /// Flood payload bytes.
    #[arg(long, default_value_t = 1024)]
    be_size: usize,
    /// Cores of the sender and receiver threads.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1])]
    cpu: Vec<u32>,
    /// Apply the low-latency tuning (detpath tune apply) for the runs and revert it afterwards.
    #[arg(long)]
    tuned: bool,
    /// Cores the tuning isolates (default: the receiver's core).
    #[arg(long)]
    tune_cores: Option<String>,
    /// SCHED_FIFO priority (1..=99) of both threads, or `off` (also 0):
    /// SCHED_OTHER at --nice. Runs are cut into segments
    /// (--segment-on/--segment-off) so busy-polling real-time threads stay
    /// under the kernel's RT throttle.
    #[arg(long, default_value = "50", value_parser = crate::vocab::rt_priority_or_off)]
    rt_priority: u8,
    /// Nice value of both threads when --rt-priority is off.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    nice: i32,
    /// Sending part of each segment, e.g. `800ms` (a bare number is ms).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::millis, default_value = "800ms")]
    segment_on: Duration,
    /// Pause of each segment, e.g. `200ms` (a bare number is ms; 0: no pauses).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::millis, default_value = "200ms")]
    segment_off: Duration,
    /// Where the result directory goes.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Testbed namespace prefix (default: detpath-sch<pid>).
    #[arg(long)]
    testbed: Option<String>,
    /// Where the receiver time-stamps each frame: `arrival` (the XDP program
    /// on afxdp, xdppoll and dpdk, the kernel on udp) or `user` (when
    /// the receiving thread polls it).
    #[arg(long, default_value = "arrival", value_parser = ["arrival", "user"])]
    rx_stamp: String,
    /// Print one JSON document (the list of runs) instead of the table.
    #[arg(long)]
    json: bool,
    /// Planner input (JSON, as `detpath sched plan`): solve it and send every
    /// planned flow at its planned times, one strict class per application
    /// owning its partition (replaces --class, --flow, --slot, --ring-slots).
    /// Exit 3 if the traffic is proven not to fit, 4 if the planner timed out.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["class", "flow"])]
    plan: Option<PathBuf>,
    /// With --plan: a saved plan (`detpath sched plan FILE --json`) to run
    /// instead of solving; it is validated against the --plan input.
    #[arg(long, value_name = "FILE", requires = "plan")]
    plan_result: Option<PathBuf>,
    /// With --plan: the planner's time limit, e.g. `60s` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "60s", requires = "plan")]
    plan_timeout: Duration,
    /// With --plan: payload bytes of every planned flow.
    #[arg(long, default_value_t = 64, requires = "plan")]
    plan_size: usize,
    /// With --plan: the flood (unless --be-class none) goes in a best-effort
    /// class on the free slots, except this many slots before each planned slot.
    #[arg(long, default_value_t = 1, requires = "plan")]
    plan_guard: u32,
    /// Run paper 003's sweeps instead of the method comparison (comma list):
    /// `be-share` (best effort against offered load at 25/50/100 % of the free
    /// slots reserved, strict and relaxed real-time classes; Figure 17),
    /// `iat-size` (inter-arrival error per frame size, idle and busy; Figures 6
    /// and 15), `cost` (sender CPU against release error for slot and poll
    /// batch sizes; Figure 19). Writes a sched-sweep-<UTC> result directory
    /// with plots; --json prints its points.
    #[arg(long, value_delimiter = ',', value_parser = ["be-share", "iat-size", "cost"])]
    sweep: Vec<String>,
    /// Offered load of the best-effort flood, % of the slot rate (100: one
    /// packet per slot of the ring); default: the flood keeps its class's
    /// pre-buffer full. With --sweep be-share: the loads swept (default 10,20,40,60,80,100).
    #[arg(long, value_delimiter = ',')]
    offered_load: Option<Vec<f64>>,
    /// With --sweep be-share: % of the slots the real-time classes leave free reserved for best effort.
    #[arg(long, value_delimiter = ',', default_values_t = [25.0, 50.0, 100.0])]
    reservation: Vec<f64>,
    /// With --sweep iat-size: real-time payload sizes, bytes.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 256, 512, 1024, 1400])]
    frame_size: Vec<usize>,
    /// With --sweep cost: slot lengths, polled every slot (a unit: 5us, 0.1ms; bare: ns).
    #[arg(long, value_delimiter = ',', default_values_t = ["5us".to_string(), "10us".to_string(), "20us".to_string(), "50us".to_string(), "100us".to_string()])]
    sweep_slot: Vec<String>,
    /// Poll the scheduler once per this many slots, sleeping in between (0:
    /// busy poll). With --sweep cost: the batches swept (default 0,1,2,4,8,16,32).
    #[arg(long, value_delimiter = ',')]
    batch: Option<Vec<u32>>,
    /// With --plan: rotate the plan by this many slots (partitions and send
    /// times alike). This VM's 250 Hz tick lands on the millisecond boundary,
    /// ring position 0 of a ring whose cycle divides 1 ms: 1 moves the plan off it.
    #[arg(long, default_value_t = 0, requires = "plan")]
    plan_shift: u32,
}

#[derive(clap::Args)]
struct SyncArgs {
    /// Datapaths to synchronise over (one run each).
    #[arg(long, value_delimiter = ',', default_values_t = ["afxdp".to_string(), "dpdk".to_string(), "udp".to_string()])]
    datapath: Vec<String>,
    /// Offset injected into the slave's slot counter, e.g. `37us` (a bare
    /// number is ns; ahead of the master, so not negative here).
    #[arg(long, alias = "offset-ns", value_name = "OFFSET", value_parser = crate::vocab::offset, default_value = "37us", allow_hyphen_values = true)]
    offset: crate::vocab::Offset,
    /// Drift injected into the slave's oscillator, ppb (50 ppm = 50000).
    #[arg(long, default_value_t = 50_000, allow_negative_numbers = true)]
    drift_ppb: i64,
    /// Sync interval, e.g. `125ms` (a bare number is ms).
    #[arg(long, alias = "interval-ms", value_name = "DURATION", value_parser = crate::vocab::millis, default_value = "125ms")]
    interval: Duration,
    /// Duration of each run, e.g. `30s` (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "30s")]
    duration: Duration,
    /// Locked means |true offset| within this from then on, e.g. `20us` (a
    /// bare number is ns; software receive time stamps on this VM carry
    /// 20-50 µs one-way delays with ±10 µs asymmetry).
    #[arg(long, alias = "lock-threshold-ns", value_name = "DURATION", value_parser = crate::vocab::nanos, default_value = "20us")]
    lock_threshold: Duration,
    /// Testbed namespace prefix (default: detpath-sch<pid>).
    #[arg(long)]
    testbed: Option<String>,
    /// Print one JSON document (the list of runs) instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ModelArgs {
    /// Slot sizes (bytes on the wire) of the clock-error sweep.
    #[arg(long, value_delimiter = ',', default_values_t = [300u32, 600, 900, 1200, 1500])]
    slot_bytes: Vec<u32>,
    /// Batch sizes of the clock-error sweep.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 8, 16, 32, 64])]
    batch: Vec<u32>,
    /// Print one JSON document (table3, figure8, dual_clock) instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ProbeArgs {
    /// Interface (in the current network namespace).
    iface: String,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `detpath sched ...`; the exit code is 0 when every run succeeded (and, for bench, no strict violation).
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.cmd {
        Cmd::Bench(a) => run_bench(*a),
        Cmd::Sync(a) => run_sync(a),
        Cmd::Model(a) => run_model(a),
        Cmd::Plan(a) => crate::sched::plan::run(a),
        Cmd::Ptp(a) => crate::sched::ptp::run(a),
        Cmd::Probe(a) => {
            let p = detpath_sched::probe::probe(&a.iface);
            if a.json {
                println!("{}", serde_json::to_string_pretty(&p)?);
            } else {
                println!(
                    "{} (driver {}, speed {})",
                    p.iface,
                    p.driver.as_deref().unwrap_or("?"),
                    p.speed_mbps.map(|s| format!("{s} Mb/s")).unwrap_or("none".into())
                );
                for l in p.lines() {
                    println!("  {l}");
                }
            }
            Ok(0)
        }
    }
}

fn bench_config(a: &BenchArgs) -> anyhow::Result<BenchConfig> {
    let mut cfg = BenchConfig::paper();
    let mode: Mode = a.mode.parse()?;
    cfg.datapaths = a.datapath.clone();
    for d in &cfg.datapaths {
        anyhow::ensure!(detpath::datapath::find(d).is_some(), "unknown datapath `{d}`");
    }
    cfg.methods = a.method.iter().map(|m| m.parse()).collect::<Result<Vec<Method>, _>>()?;
    anyhow::ensure!(!a.duration.is_zero(), "--duration must be positive");
    cfg.duration_ns = ns(a.duration);
    cfg.warmup_ns = ns(a.warmup);
    let slot_ns = ns(a.slot);
    let custom_ring = slot_ns != cfg.sched.slot_ns || a.ring_slots != cfg.sched.ring_slots;
    cfg.sched.slot_ns = slot_ns;
    cfg.sched.ring_slots = a.ring_slots;
    cfg.sched.lead_slots = a.lead_slots;
    cfg.sched.late_tolerance_ns = ns(a.late_tolerance);
    if !a.class.is_empty() {
        cfg.sched.classes = a.class.iter().map(|c| ClassConfig::parse(c, a.ring_slots, mode)).collect::<Result<_, _>>()?;
    } else if custom_ring && a.plan.is_none() {
        anyhow::bail!("with another --slot or --ring-slots, give the classes (--class) and flows (--flow) for it");
    } else {
        for c in &mut cfg.sched.classes {
            c.mode = mode;
        }
    }
    if !a.flow.is_empty() {
        cfg.flows = a.flow.iter().map(|f| FlowSpec::parse(f)).collect::<Result<_, _>>()?;
    }
    cfg.be_class = (a.be_class != "none").then(|| a.be_class.clone());
    cfg.be_size = a.be_size;
    if let Some(spec) = &a.plan {
        anyhow::ensure!(!a.plan_timeout.is_zero(), "--plan-timeout must be positive");
        let planned = bench::plan::load(spec, a.plan_result.as_deref(), a.plan_timeout)?;
        planned.apply(&mut cfg, a.plan_size, mode, a.be_class != "none", a.plan_guard, a.plan_shift)?;
    }
    cfg.cpus = (a.cpu.first().copied().unwrap_or(0), a.cpu.get(1).copied().unwrap_or(1));
    if let Some(t) = &a.testbed {
        cfg.testbed_prefix = t.clone();
    }
    cfg.arrival_stamps = a.rx_stamp == "arrival";
    if a.sweep.is_empty() {
        match a.offered_load.as_deref() {
            None => {}
            Some([pct]) => cfg.be_load = Some(pct / 100.0),
            Some(_) => anyhow::bail!("--offered-load takes one value unless --sweep be-share"),
        }
        match a.batch.as_deref() {
            None => {}
            Some([b]) => cfg.poll_batch = *b,
            Some(_) => anyhow::bail!("--batch takes one value unless --sweep cost"),
        }
    }
    cfg.validate()?;
    Ok(cfg)
}

/// A duration with a unit (`ns`, `us`/`µs`, `ms`, `s`; bare: ns) in ns.
fn duration_ns(text: &str) -> anyhow::Result<u64> {
    let ns = detpath::sys::units::parse_duration_ns(text, detpath::sys::units::Unit::Nanos)?;
    anyhow::ensure!(ns > 0, "`{text}` is not a positive duration");
    Ok(ns)
}

/// The sweeps' grid from the flags.
fn sweep_params(a: &BenchArgs) -> anyhow::Result<bench::sweep::SweepParams> {
    let d = bench::sweep::SweepParams::default();
    Ok(bench::sweep::SweepParams {
        reservations: a.reservation.iter().map(|p| p / 100.0).collect(),
        loads: a.offered_load.as_ref().map(|v| v.iter().map(|p| p / 100.0).collect()).unwrap_or(d.loads),
        modes: d.modes,
        sizes: a.frame_size.clone(),
        slots_ns: a.sweep_slot.iter().map(|s| duration_ns(s)).collect::<anyhow::Result<_>>()?,
        batches: a.batch.clone().unwrap_or(d.batches),
    })
}

fn run_bench(a: BenchArgs) -> anyhow::Result<i32> {
    detpath::sys::cleanup::install_signal_handler(detpath::sys::cleanup::OnSignal::SetFlag);
    let mut cfg = match bench_config(&a) {
        Ok(c) => c,
        // An infeasible or undecided plan has its own exit status (as `detpath sched plan`).
        Err(e) => match e.downcast_ref::<bench::plan::PlanError>() {
            Some(p) => {
                eprintln!("detpath: error: {p}");
                return Ok(p.exit_code());
            }
            None => return Err(e),
        },
    };
    // Tuning holds for all runs and is reverted when `_tuning` drops (the journal covers a crash: `detpath tune revert`).
    cfg.nice = Some(a.nice);
    cfg.rt_priority = (a.rt_priority > 0).then_some(a.rt_priority);
    anyhow::ensure!(!a.segment_on.is_zero(), "--segment-on must be positive");
    cfg.segment_on_ns = ns(a.segment_on);
    cfg.segment_off_ns = ns(a.segment_off);
    let threads = match cfg.rt_priority {
        Some(p) => format!("threads pinned, SCHED_FIFO {p}"),
        None => format!("threads pinned, SCHED_OTHER nice {}", a.nice),
    };
    let (_tuning, state) = if a.tuned {
        let cores = a.tune_cores.clone().unwrap_or_else(|| cfg.cpus.1.to_string());
        let list = detpath_tune::CpuList::parse(&cores)?;
        let t = detpath_tune::apply(&detpath_tune::Host::real(), &detpath_tune::ApplyRequest::new(list)).context("applying the tuning")?;
        let s = format!("tuned (cores {cores}; {threads}): {}", t.summary());
        (Some(t), s)
    } else {
        (None, format!("default (no tuning; {threads})"))
    };
    let log = |l: &str| eprintln!("sched bench: {l}");
    if !a.sweep.is_empty() {
        let kinds = a.sweep.iter().map(|k| k.parse()).collect::<anyhow::Result<Vec<bench::sweep::SweepKind>>>()?;
        let report = bench::sweep::run(&cfg, &kinds, &sweep_params(&a)?, &state, &log, &detpath::sys::cleanup::interrupted)?;
        let dir = bench::sweep::write_results(&a.out, &report)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&report.points)?);
        } else {
            print!("{}", bench::sweep::table(&report));
        }
        eprintln!("sched bench: results in {}", dir.display());
        return Ok(if report.errors.is_empty() { 0 } else { 1 });
    }
    let report = bench::run(&cfg, &state, &log, &detpath::sys::cleanup::interrupted)?;
    let dir = bench::write_results(&a.out, &report)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report.runs)?);
    } else {
        print!("{}", bench::table(&report));
    }
    eprintln!("sched bench: results in {}", dir.display());
    // Slots runs: a strict class let a packet out late, or a packet left outside its class's slots.
    let violations: u64 =
        report.runs.iter().filter(|r| r.method != Method::Sleep).map(|r| r.violations + r.flows.iter().map(|f| f.outside_partition).sum::<u64>()).sum();
    Ok(if report.errors.is_empty() && violations == 0 { 0 } else { 1 })
}

fn run_sync(a: SyncArgs) -> anyhow::Result<i32> {
    use detpath_sched_bench::sync_run::{self, SyncRunConfig};
    detpath::sys::cleanup::install_signal_handler(detpath::sys::cleanup::OnSignal::SetFlag);
    let offset_ns = u64::try_from(a.offset.ns()).map_err(|_| anyhow::anyhow!("--offset: the slave's injected offset is not negative here"))?;
    let prefix = a.testbed.clone().unwrap_or_else(|| detpath::testbed::process_prefix("sch"));
    let tb = detpath::testbed::Testbed::up(detpath::testbed::TestbedConfig::with_prefix(&prefix))?;
    let mut runs = Vec::new();
    let mut failed = false;
    for (i, dp) in a.datapath.iter().enumerate() {
        anyhow::ensure!(detpath::datapath::find(dp).is_some(), "unknown datapath `{dp}`");
        let cfg = SyncRunConfig {
            offset_ns,
            drift_ppb: a.drift_ppb,
            interval_ns: ns(a.interval),
            duration_ns: ns(a.duration),
            lock_threshold_ns: ns(a.lock_threshold),
            port: 7600 + 2 * i as u16,
            ..SyncRunConfig::default_for(dp)
        };
        eprintln!("sched sync: {dp}: {} µs offset, {} ppb drift, Sync every {:?}, {:?}", offset_ns as f64 / 1000.0, a.drift_ppb, a.interval, a.duration);
        match sync_run::run(&tb, &cfg) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("sched sync: {dp}: {e:#}");
                failed = true;
            }
        }
    }
    drop(tb);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else {
        println!("{:<7} {:>12} {:>14} {:>14} {:>14} {:>14}  endpoints", "path", "lock (s)", "residual p50", "residual p99", "residual max", "drift est.");
        for r in &runs {
            let p = &r.report;
            let ns = |v: Option<u64>| v.map(|x| format!("{x} ns")).unwrap_or_else(|| "-".into());
            println!(
                "{:<7} {:>12} {:>14} {:>14} {:>14} {:>10.0} ppb  {}",
                r.datapath,
                p.time_to_lock_s.map(|t| format!("{t:.2}")).unwrap_or_else(|| "never".into()),
                ns(p.residual_p50_ns),
                ns(p.residual_p99_ns),
                ns(p.residual_max_ns),
                p.final_drift_ppb,
                r.endpoints
            );
        }
        println!("(lock: servo locked and |true offset| <= {} ns from then on; truth from the shared CLOCK_MONOTONIC)", ns(a.lock_threshold));
    }
    let unlocked = runs.iter().any(|r| r.report.time_to_lock_s.is_none());
    Ok(if failed || unlocked { 1 } else { 0 })
}

fn run_model(a: ModelArgs) -> anyhow::Result<i32> {
    use detpath_sched::ringmodel;
    let t3 = ringmodel::table3();
    let f8 = ringmodel::figure8(&a.slot_bytes, &a.batch);
    let dual = detpath_sched::dualclock::sweep();
    if a.json {
        println!("{}", serde_json::json!({ "table3": t3, "figure8": f8, "dual_clock": dual }));
        return Ok(0);
    }
    println!("SIMULATED NIC ring (no line-rate NIC on this host). Table 3: fraction of line rate, 300-byte slots at 1 Gb/s");
    println!("{:>6} {:>9} {:>9} {:>9} {:>9}   (paper: poll period 0/10/100/1000 µs)", "batch", "0 µs", "10 µs", "100 µs", "1000 µs");
    for batch in [1u32, 8, 64, 512] {
        let row: Vec<String> = t3.iter().filter(|r| r.0 == batch).map(|r| format!("{:.2}%", r.2 * 100.0)).collect();
        println!("{batch:>6} {:>9} {:>9} {:>9} {:>9}", row[0], row[1], row[2], row[3]);
    }
    println!("paper:   1: 99.99% 16.77% 2.18% 0.00% | 8: 100% 100% 18.31% 1.89% | 64: 100% 100% 100% 15.30% | 512: all 100%");
    println!("\nFigure 8: |slot clock - true time| (completion-counted clock, polled just often enough for its batch)");
    println!(
        "{:>6} {:>6} {:>9} {:>10} {:>10} {:>10} {:>10} {:>16}",
        "slot B", "batch", "slot µs", "line rate", "err p50", "err p99", "err max", "36µs-wave p99 err"
    );
    for r in &f8 {
        println!(
            "{:>6} {:>6} {:>9.2} {:>9.2}% {:>8.2}µs {:>8.2}µs {:>8.2}µs {:>14.2}µs",
            r.config.slot_bytes,
            r.config.batch,
            r.slot_ns / 1000.0,
            r.line_rate_fraction * 100.0,
            r.clock_error_p50_ns as f64 / 1000.0,
            r.clock_error_p99_ns as f64 / 1000.0,
            r.clock_error_max_ns as f64 / 1000.0,
            r.wave_error_p99_ns as f64 / 1000.0
        );
    }
    crate::sched::ptp::print_dual_clock(&dual);
    Ok(0)
}

//! The main job as a library call: every datapath in the built-in testbed,
//! in one or more configurations (paper 000's Default, Default & Stress,
//! Tuned & Stress), client in namespace a and server in namespace b, each a
//! thread pinned to its own core, every run saved in one result directory.
//! The `detpath bench` command parses its options into a [`MatrixConfig`],
//! calls [`run_matrix`] and prints; a program can do the same.

use crate::run::{run_client, run_server, ClientOutcome, PingPongConfig, ServerReport};
use detpath_instrument::stats::Quantile;
use detpath_instrument::noise::{self, Gap};
use detpath_instrument::sampler::{CpuSample, ProcReader, Sampler, SAMPLE_PERIOD};
use detpath_instrument::tail::{self, TailThreshold, ThreadGaps};
use detpath_instrument::{Environment, ResultDir, RunConfig, RunResult};
use anyhow::Context;
use detpath::sys::cleanup;
use detpath::sys::cputime::{CoreTicks, CpuReport};
use detpath::testbed::{Testbed, TestbedConfig};
use detpath::{EndpointSpec, RealtimeSpec};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

/// How early a real-time client wakes before its next send deadline.
const CLIENT_WAKE_SLACK_NS: u64 = 30_000;

/// The name of the sockperf reference run in results and tables.
pub const SOCKPERF: &str = "sockperf";

/// One column of the matrix: stress level and whether tuned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Configuration {
    /// CPU load (percent) from stress-ng on both datapath cores during each run.
    pub stress: u8,
    /// `detpath tune apply` for the configuration, polling threads real-time.
    pub tuned: bool,
}

impl Configuration {
    /// Paper 000's three: Default, Default & Stress, Tuned & Stress.
    pub fn paper_matrix(stress: u8) -> Vec<Configuration> {
        vec![Configuration { stress: 0, tuned: false }, Configuration { stress, tuned: false }, Configuration { stress, tuned: true }]
    }

    /// `D`, `D&S`, `T` or `T&S`.
    pub fn label(&self) -> &'static str {
        detpath_instrument::results::configuration_label(self.tuned, self.stress > 0)
    }
}

/// What the main job measures.
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    /// Datapath names (registered ones; [`SOCKPERF`] is added by `with_sockperf`).
    pub datapaths: Vec<String>,
    /// One probe stream per rate (paper 000's Figure 2 sweeps 8 to 1600 Mbit/s);
    /// every datapath runs at each, rates outermost within a configuration.
    pub probes: Vec<PingPongConfig>,
    /// The matrix's columns (stress and tuning), run in this order.
    pub configurations: Vec<Configuration>,
    /// Cores of the client and server polling threads.
    pub cpus: (u32, u32),
    /// Where the result directory is created.
    pub out: PathBuf,
    /// Testbed namespace prefix (`<NAME>-a`, `<NAME>-b`).
    pub testbed: String,
    /// Cores the tuning isolates (default: the server core).
    pub tune_cores: Option<String>,
    /// SCHED_FIFO priority of the polling threads in tuned runs.
    pub rt_priority: u8,
    /// Also run sockperf ping-pong as a reference row in each configuration.
    pub with_sockperf: bool,
    /// Rounds above this are the tail, each attributed to a cause.
    pub tail_threshold: TailThreshold,
    /// Extra spec keys for every endpoint (`mode=skb`, `rcvbuf=8388608`,
    /// the slot scheduler's `sched=slots&...`: endpoints open with
    /// `detpath_open`, or the fault layer's `drop=100`).
    pub keys: String,
    /// Extra spec keys for the server's endpoint only (after `keys`).
    pub server_keys: String,
    /// The C libraries' messages (libbpf, libxdp, the DPDK EAL) go to
    /// `libs.log` in the result directory; with this, to stderr as well (`-v`).
    pub library_logs_to_stderr: bool,
    /// Run the kernel tracer (`detpath-ktrace`) on every core during each
    /// datapath run, for the rounds no polling-thread gap explains.
    pub trace_kernel: bool,
    /// With `trace_kernel`: attach the tracer in alternating windows of
    /// [`TRACE_COST_WINDOW`] and report what it costs (the rounds with it
    /// against the rounds without it, same run).
    pub trace_cost: bool,
}

/// The window of `--trace-cost`: attached this long, detached this long, and so on.
pub const TRACE_COST_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// How the kernel tracer runs during one datapath's run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tracing {
    Off,
    Attached,
    Alternating(std::time::Duration),
}

/// The file in a result directory that holds libbpf's, libxdp's and the DPDK EAL's messages.
pub const LIBRARY_LOG: &str = "libs.log";

/// What the runner tells its caller while it works (for progress bars and logs).
#[derive(Debug, Clone)]
pub enum Event {
    /// A run starts: its label and how many rounds its client sends.
    RunStarting {
        /// `bench: udp: 100000 rounds of 64 B every 100 µs, stress 0 %, default`.
        label: String,
        /// Rounds the client sends, warm-up included.
        total_rounds: u64,
    },
    /// Rounds sent so far in the current run.
    Sent(u64),
    /// The current run's client finished.
    RunDone,
    /// Something worth a line (tuning applied, a run that failed and why).
    Note(String),
}

/// Receives [`Event`]s; called from the runner's threads.
pub type Observer = Arc<dyn Fn(Event) + Send + Sync>;

/// The result directory and whether any run failed to run at all.
pub struct MatrixOutcome {
    /// The result directory every run was saved in.
    pub dir: ResultDir,
    /// Some run could not run (its reason was sent as an [`Event::Note`]).
    pub failed: bool,
}

/// Runs every datapath in every configuration. Ctrl-C (with
/// `cleanup::OnSignal::SetFlag` installed) stops after the current run and
/// keeps what was measured; tuning is reverted when its configuration ends.
pub fn run_matrix(cfg: &MatrixConfig, observe: Observer) -> anyhow::Result<MatrixOutcome> {
    for d in &cfg.datapaths {
        anyhow::ensure!(
            detpath::datapath::find(d).is_some() || detpath_open::LAYERS.iter().any(|l| l.name() == d.as_str()),
            "unknown datapath `{d}`; available: {}",
            detpath::datapath::transports().map(|d| d.name).collect::<Vec<_>>().join(", ")
        );
    }
    // A testbed that is already there (`detpath testbed up`) is used and left alone.
    let tb = Testbed::up_or_use(TestbedConfig::with_prefix(&cfg.testbed))?;
    if !tb.owned() {
        observe(Event::Note(format!("using the testbed {} / {} that was already up (left in place)", tb.a().netns, tb.b().netns)));
    }
    let env = Environment::capture();
    let mut dir = ResultDir::create(&cfg.out).with_context(|| format!("creating a result directory under {}", cfg.out.display()))?;
    let lib_log = dir.path().join(LIBRARY_LOG);
    detpath::route_library_logs(&lib_log, cfg.library_logs_to_stderr).with_context(|| format!("opening {}", lib_log.display()))?;
    let tune_cores = cfg.tune_cores.clone().unwrap_or_else(|| cfg.cpus.1.to_string());
    let mut runs: Vec<&str> = cfg.datapaths.iter().map(String::as_str).collect();
    if cfg.with_sockperf {
        runs.push(SOCKPERF);
    }
    let note = |s: String| observe(Event::Note(s));
    let mut failed = false;
    for conf in &cfg.configurations {
        if cleanup::interrupted() {
            break;
        }
        // Tuning holds for the whole configuration and is reverted when `_tuning`
        // drops (also after Ctrl-C; the journal covers a SIGKILL: `detpath tune revert`).
        let (_tuning, tuning_state) = if conf.tuned {
            match apply_tuning(&tune_cores, cfg.rt_priority) {
                Ok((t, state)) => {
                    note(format!("bench: {state}"));
                    (Some(t), state)
                }
                Err(e) => {
                    note(format!("bench: cannot apply the tuning: {e:#}"));
                    failed = true;
                    continue;
                }
            }
        } else {
            (None, "default".to_string())
        };
        for (i, (pp, dp)) in cfg.probes.iter().flat_map(|pp| runs.iter().map(move |dp| (pp, *dp))).enumerate() {
            if cleanup::interrupted() {
                break;
            }
            // A fresh port pair per run: a socket closed a moment ago may still hold its port.
            let port = 7100 + (i % 400) as u16 * 2;
            let label = format!(
                "bench: {dp}: {} rounds of {} B every {} µs, stress {} %, {}",
                pp.rounds,
                pp.size,
                pp.period_ns as f64 / 1000.0,
                conf.stress,
                if conf.tuned { "tuned" } else { "default" }
            );
            observe(Event::RunStarting { label, total_rounds: pp.total_rounds() });
            // stress-ng runs for exactly this run; a missing stress-ng fails before the run.
            let stress = if conf.stress > 0 {
                match detpath_instrument::stress::Stress::start(conf.stress, &[cfg.cpus.0 as usize, cfg.cpus.1 as usize]) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        note(format!("bench: {dp}: {e}"));
                        failed = true;
                        continue;
                    }
                }
            } else {
                None
            };
            let rt = conf.tuned.then_some(cfg.rt_priority);
            let tracing = match (cfg.trace_kernel, cfg.trace_cost) {
                (false, _) => Tracing::Off,
                (true, false) => Tracing::Attached,
                (true, true) => Tracing::Alternating(TRACE_COST_WINDOW),
            };
            // A real-time client spinning on the OS's core would starve it: between
            // rounds it sleeps until 30 µs before the next deadline (hrtimer wake-up).
            let pp = PingPongConfig { sleep_slack_ns: rt.map(|_| CLIENT_WAKE_SLACK_NS), ..pp.clone() };
            let config = RunConfig {
                datapath: dp.to_string(),
                mode: String::new(),
                size: pp.size,
                period_ns: pp.period_ns,
                rounds: pp.rounds,
                timeout_ns: pp.loss_timeout_ns,
                stress_percent: conf.stress,
                tuned: conf.tuned,
                tuning: tuning_state.clone(),
                cpu_client: Some(cfg.cpus.0),
                cpu_server: Some(cfg.cpus.1),
                peer: None,
                extra: Default::default(),
            };
            let result = if dp == SOCKPERF {
                run_sockperf(&tb, &pp, cfg.cpus, config, &env, &mut dir)
            } else {
                // The user's keys join the testbed's URI as text, parsed
                // once: a layer named as the scheme (`fault` with
                // `inner=udp&drop=...`) needs its `inner=` at parse time.
                let spec = |uri: String, keys: &[&str]| {
                    let text = keys.iter().map(|k| k.trim_start_matches('&')).filter(|k| !k.is_empty()).fold(uri, |u, k| format!("{u}&{k}"));
                    detpath_open::parse(&text).with_context(|| format!("the endpoint {text}"))
                };
                let specs = spec(tb.a().uri(dp, port + 1), &[&cfg.keys]).and_then(|c| Ok((c, spec(tb.b().uri(dp, port), &[&cfg.keys, &cfg.server_keys])?)));
                specs.and_then(|specs| {
                    bench_one(&tb, specs, &pp, cfg.cpus, rt, tracing, observe.clone()).and_then(|run| {
                        let threads = [
                            ThreadGaps { thread: "client", cpu: Some(cfg.cpus.0), gaps: run.outcome.gaps.clone(), not_kept: run.outcome.gaps_not_kept },
                            ThreadGaps { thread: "server", cpu: Some(cfg.cpus.1), gaps: run.server_gaps, not_kept: run.server_gaps_not_kept },
                        ];
                        let kernel = run.kernel.map(|trace| tail::KernelTrace {
                            timeline: detpath_ktrace::Timeline::new(&trace.events),
                            cores: vec![cfg.cpus.0, cfg.cpus.1],
                            own_tids: run.tids.clone(),
                            events: trace.events.len() as u64,
                            dropped: trace.dropped,
                            alternating: if tracing == Tracing::Attached { Vec::new() } else { trace.windows },
                        });
                        let evidence = TailEvidence { threshold: cfg.tail_threshold, threads: &threads, samples: &run.samples, kernel: kernel.as_ref() };
                        save_outcome(&mut dir, RunConfig { mode: run.mode, ..config }, &env, &pp, &run.outcome, Some(evidence), Some(run.cpu))
                    })
                })
            };
            drop(stress);
            observe(Event::RunDone);
            if let Err(e) = result {
                note(format!("bench: {dp}: {e:#}"));
                failed = true;
            }
        }
    }
    Ok(MatrixOutcome { dir, failed })
}

/// What a run recorded about its noise, for [`tail::attribute`].
pub struct TailEvidence<'a> {
    /// Which rounds are the tail (× the median, or µs).
    pub threshold: TailThreshold,
    /// The polling threads' noise gaps (client, server).
    pub threads: &'a [ThreadGaps],
    /// The per-CPU counters sampled during the run.
    pub samples: &'a [CpuSample],
    /// The kernel tracer's record of the run (`--trace-kernel`).
    pub kernel: Option<&'a tail::KernelTrace>,
}

/// Builds the result of one client run (with its tail attribution, given the
/// evidence) and saves it (records first, then the summary), with what it
/// cost in CPU when measured ([`run_cpu`]).
pub fn save_outcome(
    dir: &mut ResultDir,
    config: RunConfig,
    env: &Environment,
    pp: &PingPongConfig,
    outcome: &ClientOutcome,
    tail: Option<TailEvidence<'_>>,
    cpu: Option<CpuReport>,
) -> anyhow::Result<()> {
    let records = outcome.records(pp.warmup);
    let mut result = RunResult::from_records(config, env.clone(), &records, None);
    if let (Some(t), Some(median)) = (tail, result.latency.get(Quantile::MEDIAN)) {
        result.tail = Some(tail::attribute_traced(&records, t.threshold.resolve(median), t.threads, t.samples, outcome.started_ns, t.kernel));
    }
    result.duration_s = (outcome.finished_ns - outcome.started_ns) as f64 / 1e9;
    result.cpu = cpu;
    if outcome.interrupted {
        result.complete = false;
        result.interrupted = Some("interrupted by a signal".into());
    }
    if outcome.foreign > 0 {
        result.notes.push(format!("{} datagrams that were not our probes", outcome.foreign));
    }
    if outcome.not_sent > 0 {
        let first = outcome.first_not_sent.as_deref().unwrap_or("");
        result.notes.push(format!("{} probes not sent (their rounds count as lost); the first: {first}", outcome.not_sent));
    }
    dir.save_run(&result, &records)?;
    Ok(())
}

/// The `cpu` record of a ping-pong run: the threads' own CPU times (client
/// first; then the server, the noise sampler and, in a traced run, the
/// kernel tracer's reader), the busy share of the cores they ran on (and `cores`) between the
/// two snapshots, and rounds sent (warm-up included, as the threads' CPU
/// time covers it) per CPU-second.
pub fn run_cpu(threads: Vec<detpath::sys::cputime::ThreadCpu>, outcome: &ClientOutcome, before: &CoreTicks, after: &CoreTicks, cores: &[u32]) -> CpuReport {
    CpuReport::new(threads, before, after, cores, outcome.sent as f64)
}

/// sockperf ping-pong over kernel UDP in the testbed, for as long as the
/// probe stream would take (whole seconds), saved like a datapath's run.
fn run_sockperf(tb: &Testbed, pp: &PingPongConfig, cpus: (u32, u32), config: RunConfig, env: &Environment, dir: &mut ResultDir) -> anyhow::Result<()> {
    let seconds = ((pp.total_rounds() * pp.period_ns) as f64 / 1e9).ceil().max(1.0) as u64;
    let cfg = crate::sockperf::SockperfConfig {
        binary: "sockperf".into(),
        size: pp.size,
        period_ns: pp.period_ns,
        seconds,
        cpu_client: cpus.0,
        cpu_server: cpus.1,
        port: 11111,
    };
    // Its rows carry sockperf's own CPU: both processes' user and system time.
    let outcome = crate::sockperf::run(tb, &cfg)?;
    let config = RunConfig { mode: "sockperf ping-pong, kernel UDP, blocking recvfrom".into(), rounds: outcome.rows.len() as u64, ..config };
    let (result, records) = outcome.run_result(config, env.clone());
    dir.save_run(&result, &records)?;
    Ok(())
}

/// The tuning of one configuration, in force while this value lives: reverted
/// (from its journal session) when it drops, and by cleanup when a second
/// Ctrl-C, a SIGTERM or a panic ends the process first. A revert that fails
/// says to run `detpath tune revert`; after a SIGKILL the journal is left
/// for that command.
pub struct HeldTuning {
    _guard: cleanup::UndoGuard,
}

/// Applies the latency profile for `cores` (detpath tune apply); the returned
/// value reverts it on drop (see [`HeldTuning`]).
pub fn apply_tuning(cores: &str, rt_priority: u8) -> anyhow::Result<(HeldTuning, String)> {
    let list = detpath_tune::CpuList::parse(cores)?;
    // Registered before the apply starts, and the slot is locked while it runs:
    // a cleanup that comes during the apply waits for it, then reverts it.
    let slot: Arc<Mutex<Option<detpath_tune::AppliedTuning>>> = Arc::new(Mutex::new(None));
    let undo_slot = slot.clone();
    // Declared first so that it drops last: its undo takes the slot's lock.
    let guard;
    let state = {
        let mut held = slot.lock().unwrap_or_else(|p| p.into_inner());
        guard = cleanup::UndoGuard::new(format!("the tuning of cores {cores}"), Some("detpath tune revert".into()), move || {
            let applied = undo_slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            match applied {
                Some(t) => t.revert().map(|_| ()).map_err(|e| e.to_string()),
                None => Ok(()),
            }
        });
        let t = detpath_tune::apply(&detpath_tune::Host::real(), &detpath_tune::ApplyRequest::new(list))?;
        let state = format!("tuned (cores {cores}; polling threads SCHED_FIFO {rt_priority}, memory locked, cpu_dma_latency 0): {}", t.summary());
        *held = Some(t);
        state
    };
    Ok((HeldTuning { _guard: guard }, state))
}

/// What one datapath's run gave: its mode line, the client's outcome, the
/// server's noise gaps and the per-CPU counters sampled during it.
struct OneRun {
    mode: String,
    outcome: ClientOutcome,
    server_gaps: Vec<Gap>,
    /// Gaps the server's probe could not keep.
    server_gaps_not_kept: u64,
    samples: Vec<CpuSample>,
    /// The polling threads' ids (the client's, the server's).
    tids: Vec<u32>,
    /// What the kernel tracer recorded, when it ran.
    kernel: Option<detpath_ktrace::Trace>,
    /// What the client, server, noise sampler (and kernel tracer reader) threads cost in CPU.
    cpu: CpuReport,
}

/// The real-time layer's settings of a polling thread on `core`: with `rt`,
/// SCHED_FIFO at that priority with memory locked (and `hold_cstates`:
/// cpu_dma_latency held at 0); without, pinned only (memory not locked).
/// `None` without a core.
pub fn realtime(core: Option<u32>, rt: Option<u8>, hold_cstates: bool) -> Option<RealtimeSpec> {
    let core = core? as usize;
    Some(match rt {
        Some(p) => RealtimeSpec { fifo_priority: Some(p), dma_latency_us: hold_cstates.then_some(0), ..RealtimeSpec::pinned(core) },
        None => RealtimeSpec { lock_memory: false, ..RealtimeSpec::pinned(core) },
    })
}

/// One datapath: server thread in namespace b, client thread in namespace a.
fn bench_one(
    tb: &Testbed,
    (client_spec, server_spec): (EndpointSpec, EndpointSpec),
    pp: &PingPongConfig,
    (cpu_client, cpu_server): (u32, u32),
    rt: Option<u8>,
    tracing: Tracing,
    observe: Observer,
) -> anyhow::Result<OneRun> {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let server_uri = server_spec.with_realtime(&realtime(Some(cpu_server), rt, true).expect("a core"));
    let stop_s = stop.clone();
    let gaps = noise::gap_capacity(pp.total_rounds(), pp.period_ns);
    let server = tb.b().spawn(move || -> anyhow::Result<ServerReport> {
        let mut ep = match detpath::open_spec(&server_uri) {
            Ok(ep) => ep,
            Err(e) => {
                let _ = ready_tx.send(Err(e.to_string()));
                return Ok(ServerReport::default());
            }
        };
        let _ = ready_tx.send(Ok((ep.local_addr(), ep.capabilities().summary(), detpath::sys::thread::tid())));
        Ok(run_server(ep.as_mut(), &stop_s, gaps)?)
    });
    let ((server_addr, server_mode, server_tid), server) = detpath_instrument::ready::wait_ready("server", &ready_rx, server)?;
    // Attached before the client starts and detached after it ends: the whole run is traced.
    let tracer = match tracing {
        Tracing::Off => None,
        Tracing::Attached => Some(detpath_ktrace::Tracer::start()?),
        Tracing::Alternating(w) => Some(detpath_ktrace::Tracer::start_alternating(w)?),
    };
    let client_uri = client_spec.with_realtime(&realtime(Some(cpu_client), rt, false).expect("a core"));
    let pp2 = pp.clone();
    let ticks_before = CoreTicks::now();
    let stop_c = stop.clone();
    let client = tb.a().spawn(move || -> anyhow::Result<(String, ClientOutcome, u32)> {
        let mut ep = detpath::open_spec(&client_uri)?;
        let client_tid = detpath::sys::thread::tid();
        let mode = format!("client {} / server {}", ep.capabilities().summary(), server_mode);
        let stop_now = AtomicBool::new(false);
        let out = run_client(ep.as_mut(), server_addr, &pp2, &stop_now, |n| {
            observe(Event::Sent(n));
            if cleanup::interrupted() {
                stop_now.store(true, Ordering::Relaxed);
            }
        });
        // The server stops the moment the client is done (not when this
        // process's main thread next runs), so its CPU time covers the run.
        stop_c.store(true, Ordering::Relaxed);
        Ok((mode, out?, client_tid))
    });
    // Traced, the tracer sees interrupts and softirqs: the sampler reads only steal.
    let reader = if tracing != Tracing::Off { ProcReader::host().traced() } else { ProcReader::host() };
    let sampler = Sampler::start(reader, SAMPLE_PERIOD);
    let result = client.join().map_err(|_| anyhow::anyhow!("client thread panicked"))?;
    let ticks_after = CoreTicks::now();
    stop.store(true, Ordering::Relaxed);
    let kernel = tracer.map(detpath_ktrace::Tracer::stop).transpose()?;
    let server = server.join().ok().and_then(|r| r.ok()).and_then(|r| r.ok()).unwrap_or_default();
    let (samples, sampler_cpu) = sampler.finish_with_cpu();
    let (mode, outcome, client_tid) = result??;
    // The kernel tracer's reader thread is listed too (`ktrace-reader`): what tracing cost.
    let reader_cpu = kernel.as_ref().and_then(|k| k.reader_cpu.clone());
    let threads = std::iter::once(outcome.cpu.clone()).chain(server.cpu.map(|c| c.0)).chain(sampler_cpu).chain(reader_cpu).collect();
    let cpu = run_cpu(threads, &outcome, &ticks_before, &ticks_after, &[cpu_client, cpu_server]);
    Ok(OneRun { mode, outcome, server_gaps: server.gaps, server_gaps_not_kept: server.gaps_not_kept, samples, tids: vec![client_tid, server_tid], kernel, cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_keys_are_built_on_the_typed_spec() {
        let spec = |s: &str, rt: Option<RealtimeSpec>| {
            rt.map_or_else(|| s.parse::<EndpointSpec>().unwrap(), |rt| s.parse::<EndpointSpec>().unwrap().with_realtime(&rt)).to_string()
        };
        assert_eq!(spec("udp://1.2.3.4:5", realtime(Some(1), Some(50), true)), "udp://1.2.3.4:5?rt_core=1&rt_dma_latency=0&rt_priority=50");
        assert_eq!(spec("afxdp://eth0?port=5", realtime(Some(0), None, true)), "afxdp://eth0?port=5&rt_core=0&rt_mlock=false");
        assert_eq!(spec("udp://1.2.3.4:5", realtime(None, Some(50), true)), "udp://1.2.3.4:5");
    }

    #[test]
    fn keys_are_set_on_the_typed_spec() {
        let with = |s: &str, k: &str| detpath_open::parse(s).unwrap().with_keys(k).unwrap().to_string();
        assert_eq!(with("udp://1.2.3.4:5", "rcvbuf=9"), "udp://1.2.3.4:5?rcvbuf=9");
        assert_eq!(with("afxdp://dpb?port=5", "&mode=skb"), "afxdp://dpb?port=5&mode=skb");
        assert_eq!(with("afxdp://dpb?port=5", ""), "afxdp://dpb?port=5");
        assert_eq!(with("udp://1.2.3.4:5", "sched=slots&classes=a:be:0"), "udp://1.2.3.4:5?classes=a:be:0&sched=slots");
    }

    #[test]
    fn the_paper_matrix_has_three_columns() {
        let m = Configuration::paper_matrix(80);
        assert_eq!(m.iter().map(|c| (c.stress, c.tuned)).collect::<Vec<_>>(), [(0, false), (80, false), (80, true)]);
    }
}

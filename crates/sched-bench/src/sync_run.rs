//! A live synchronisation run in the testbed: a master slot clock in
//! namespace a (CLOCK_MONOTONIC), a slave in namespace b whose slot counter
//! runs on an oscillator with an injected offset and drift, the exchange
//! over detpath datagrams on one datapath. Both namespaces share
//! CLOCK_MONOTONIC, so the slave's true offset is known exactly at every
//! sample.

use detpath::testbed::Testbed;
use detpath_sched::clock::{MonotonicSource, OverlaySource};
use detpath_sched::config::{ClassConfig, Mode, SchedConfig};
use detpath_sched::endpoint::SchedEndpoint;
use detpath_sched::servo::ServoConfig;
use detpath_sched::sync::{run_master, run_slave, LiveConfig, SyncReport};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Parameters of a live run.
#[derive(Debug, Clone)]
pub struct SyncRunConfig {
    /// Datapath to synchronise over.
    pub datapath: String,
    /// Injected into the slave's slot counter.
    pub offset_ns: u64,
    /// Injected oscillator error, ppb (positive: fast).
    pub drift_ppb: i64,
    /// Time between Syncs, ns.
    pub interval_ns: u64,
    /// Length of the run, ns.
    pub duration_ns: u64,
    /// Locked means |true offset| at most this from then on, ns.
    pub lock_threshold_ns: u64,
    /// Cores of the master and the slave threads.
    pub cpus: (u32, u32),
    /// SCHED_FIFO priority of both polling threads; `None`: SCHED_OTHER.
    pub rt_priority: Option<u8>,
    /// Master's UDP port (the slave takes the next).
    pub port: u16,
}

impl SyncRunConfig {
    /// The case: 37 µs and 50 ppm, Sync every 125 ms, 30 s.
    pub fn default_for(datapath: &str) -> SyncRunConfig {
        SyncRunConfig {
            datapath: datapath.into(),
            offset_ns: 37_000,
            drift_ppb: 50_000,
            interval_ns: 125_000_000,
            duration_ns: 30_000_000_000,
            lock_threshold_ns: 20_000,
            cpus: (0, 1),
            rt_priority: Some(50),
            port: 7600,
        }
    }
}

/// A live run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct SyncRun {
    /// Datapath used.
    pub datapath: String,
    /// Injected offset, ns.
    pub offset_ns: u64,
    /// Injected drift, ppb.
    pub drift_ppb: i64,
    /// Time between Syncs, ns.
    pub interval_ns: u64,
    /// Endpoint modes obtained (master / slave).
    pub endpoints: String,
    /// The slave's samples and summary.
    pub report: SyncReport,
}

/// The scheduler both sides use: 10 µs slots, 100-slot ring; the sync class
/// owns every tenth slot, off the millisecond boundary (the tick).
pub fn sync_sched_config() -> SchedConfig {
    let mut cfg = SchedConfig::new(10_000, 100, 2);
    cfg.late_tolerance_ns = 5_000;
    cfg.classes.push(ClassConfig::parse("ptp:rt:relaxed:5/10@64", 100, Mode::Relaxed).expect("built-in class"));
    cfg
}

/// Runs master (namespace a) and slave (namespace b) for `cfg.duration_ns`.
pub fn run(tb: &Testbed, cfg: &SyncRunConfig) -> anyhow::Result<SyncRun> {
    let sched = sync_sched_config();
    let (dp, port) = (cfg.datapath.clone(), cfg.port);
    // Real-time polling threads; they sleep between rounds, so the RT throttle never bites.
    let rt = |c: u32| match cfg.rt_priority {
        Some(p) => format!("&rt_core={c}&rt_priority={p}"),
        None => format!("&rt_core={c}&rt_mlock=false"),
    };
    // Both sides time-stamp receipts on arrival (t2, t4): the polling delay would be path asymmetry.
    let stamp = super::arrival_stamp_key(&dp);
    let master_uri = format!("{}{}{stamp}", tb.a().uri(&dp, port), rt(cfg.cpus.0));
    let slave_uri = format!("{}{}{stamp}", tb.b().uri(&dp, port + 1), rt(cfg.cpus.1));
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let servo = ServoConfig::linuxptp(cfg.interval_ns as f64 / 1e9);
    let live = LiveConfig { class: 0, interval_ns: cfg.interval_ns, duration_ns: cfg.duration_ns, servo, lock_threshold_ns: cfg.lock_threshold_ns };
    let (stop_m, sched_m) = (stop.clone(), sched.clone());
    let slave_addr = std::net::SocketAddrV4::new(tb.b().addr, port + 1);
    let master = tb.a().spawn(move || -> anyhow::Result<u32> {
        let ep = match detpath_open::open(&master_uri) {
            Ok(ep) => ep,
            Err(e) => {
                let _ = ready_tx.send(Err(format!("{master_uri}: {e}")));
                anyhow::bail!("master: {e}");
            }
        };
        let _ = ready_tx.send(Ok((ep.local_addr(), ep.capabilities().summary())));
        let mut ep = SchedEndpoint::with_source(ep, &sched_m, MonotonicSource { epoch_mono: 0 }, 0)?;
        Ok(run_master(&mut ep, slave_addr, &live, &stop_m)?)
    });
    let ((master_addr, master_mode), master) = detpath_instrument::ready::wait_ready("master", &ready_rx, master)?;
    let (offset, drift) = (cfg.offset_ns, cfg.drift_ppb);
    let slave = tb.b().spawn(move || -> anyhow::Result<(SyncReport, String)> {
        let ep = detpath_open::open(&slave_uri).map_err(|e| anyhow::anyhow!("slave {slave_uri}: {e}"))?;
        let mode = ep.capabilities().summary();
        // The slave's oscillator: from now on CLOCK_MONOTONIC `drift` fast and `offset` ahead;
        // its slot clock starts out reading CLOCK_MONOTONIC plus that error.
        let epoch = detpath::monotonic_ns();
        let src = OverlaySource { epoch_mono: epoch, offset_ns: offset, drift_ppb: drift };
        let mut ep = SchedEndpoint::with_source(ep, &sched, src, epoch)?;
        // The master's clock reads CLOCK_MONOTONIC: that is the truth to compare with.
        let report = run_slave(&mut ep, master_addr, &live, |m| m)?;
        Ok((report, mode))
    });
    let slave_result = slave.join().map_err(|_| anyhow::anyhow!("slave thread panicked"));
    stop.store(true, Ordering::Relaxed);
    let _ = master.join();
    let (report, slave_mode) = slave_result???;
    Ok(SyncRun {
        datapath: cfg.datapath.clone(),
        offset_ns: cfg.offset_ns,
        drift_ppb: cfg.drift_ppb,
        interval_ns: cfg.interval_ns,
        endpoints: format!("master {master_mode} / slave {slave_mode}"),
        report,
    })
}

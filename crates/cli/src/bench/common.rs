//! What `detpath bench`'s testbed run and its two-host roles share: the
//! probe options, the loss gate, turning a result directory into the closing
//! table and exit code, the progress bar.

use crate::vocab::Warmup;
use detpath_bench::run::PingPongConfig;
use detpath_instrument::ResultDir;
use std::time::Duration;

/// What every probe stream is made of: size, rate, length.
#[derive(clap::Args, Clone)]
pub struct ProbeArgs {
    /// Probe (UDP payload) size in bytes (paper: 1024; 128 as the small option).
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Send period, e.g. `100us`, `1ms`, `250000ns` (a bare number is µs);
    /// a list (`1ms,100us`) runs every datapath at each. Default 100 µs,
    /// about 80 Mbit/s with 1024 B.
    #[arg(long, alias = "period-us", value_name = "DURATION", value_parser = crate::vocab::micros, conflicts_with = "rate", value_delimiter = ',')]
    pub period: Vec<Duration>,
    /// Offered bit rate of probe payload: `80mbit`, `1.6gbit` (a bare
    /// number is Mbit/s; the period follows from --size); a list
    /// (`8,80,800,1600`, paper 000's Figure 2) runs every datapath at each.
    #[arg(long, value_name = "MBIT/S", value_parser = crate::vocab::mbit_rate, value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// Measured rounds per run (paper: 1,000,000 for a full run; default 100,000).
    #[arg(long, conflicts_with = "duration")]
    pub rounds: Option<u64>,
    /// Measured duration per run, e.g. `2s`, `500ms` (a bare number is
    /// seconds; rounds = duration / period).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs)]
    pub duration: Option<Duration>,
    /// Warm-up left out of the statistics: a number of rounds (a bare number
    /// is rounds: `1000`) or a duration with a unit (`2s`: duration / period rounds).
    #[arg(long, value_name = "WARMUP", value_parser = crate::vocab::warmup_rounds, default_value = "1000")]
    pub warmup: Warmup,
    /// Per-round loss timeout, e.g. `100ms`, `1s` (a bare number is ms).
    #[arg(long, alias = "timeout-ms", value_name = "DURATION", value_parser = crate::vocab::millis, default_value = "100ms")]
    pub timeout: Duration,
}

/// Default measured rounds (a short run; the paper's full run is 1,000,000).
pub const DEFAULT_ROUNDS: u64 = 100_000;

impl ProbeArgs {
    /// The ping-pong configuration these options describe, or what is wrong with them
    /// (exactly one period or rate: two hosts measure one stream).
    pub fn config(&self) -> anyhow::Result<PingPongConfig> {
        let mut all = self.configs()?;
        anyhow::ensure!(all.len() == 1, "give one --rate or --period here (a list sweeps rates in the testbed only)");
        Ok(all.remove(0))
    }

    /// One ping-pong configuration per period or rate asked for (default: one, 100 µs).
    pub fn configs(&self) -> anyhow::Result<Vec<PingPongConfig>> {
        anyhow::ensure!(self.size >= detpath_wire::probe::HEADER_LEN, "--size must be at least {} bytes (the probe header)", detpath_wire::probe::HEADER_LEN);
        let mut periods: Vec<u64> = self.period.iter().map(|d| crate::vocab::ns(*d)).collect();
        for &mbps in &self.rate {
            anyhow::ensure!(mbps > 0.0 && mbps.is_finite(), "--rate must be a positive number of Mbit/s");
            periods.push((self.size as f64 * 8.0 * 1000.0 / mbps).round() as u64);
        }
        if periods.is_empty() {
            periods.push(100_000);
        }
        periods
            .into_iter()
            .map(|period_ns| {
                anyhow::ensure!(period_ns >= 1000, "the period must be at least 1 µs (got {period_ns} ns)");
                let rounds = match (self.rounds, self.duration) {
                    (Some(r), _) => r,
                    (None, Some(d)) => {
                        anyhow::ensure!(!d.is_zero(), "--duration must be positive");
                        (crate::vocab::ns(d) as f64 / period_ns as f64).round().max(1.0) as u64
                    }
                    (None, None) => DEFAULT_ROUNDS,
                };
                anyhow::ensure!(rounds > 0, "--rounds must be at least 1");
                Ok(PingPongConfig {
                    size: self.size,
                    period_ns,
                    rounds,
                    warmup: self.warmup.rounds(period_ns),
                    loss_timeout_ns: crate::vocab::ns(self.timeout),
                    stall: None,
                    sleep_slack_ns: None,
                })
            })
            .collect()
    }
}

/// When loss makes the exit code non-zero (`--fail-on-loss`, `--max-loss N`).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct LossGate {
    /// Exit 1 when any round was lost (for gating scripts; by default loss is a result, exit 0).
    #[arg(long)]
    pub fail_on_loss: bool,
    /// Exit 1 when more than N rounds of any one run were lost.
    #[arg(long, value_name = "N")]
    pub max_loss: Option<u64>,
}

impl LossGate {
    fn allows(&self, lost: u64) -> bool {
        match (self.fail_on_loss, self.max_loss) {
            (true, _) => lost == 0,
            (false, Some(n)) => lost <= n,
            (false, None) => true,
        }
    }
}

/// The exit codes of `detpath bench`, for `--help` and scripts.
pub const EXIT_CODES: &str = "Exit codes: 0 the measurement completed (whatever it measured: loss is a result, shown in the table and JSON); \
1 loss beyond --fail-on-loss / --max-loss; 2 an error (testbed, permissions, missing package, a run that could not start); \
130 interrupted (Ctrl-C: the runs so far are saved).";

/// Prints the runs of a result directory (table or JSON) and returns the
/// exit code ([`EXIT_CODES`]).
pub fn finish(dir: &ResultDir, json: bool, failed: bool, gate: LossGate) -> anyhow::Result<i32> {
    if json {
        println!("{}", serde_json::to_string_pretty(dir.runs())?);
    } else {
        print!("{}", detpath_instrument::table::render(dir.runs()));
    }
    eprintln!("results saved in {}", dir.path().display());
    let lib_log = dir.path().join(detpath_bench::matrix::LIBRARY_LOG);
    let lib_lines = std::fs::read_to_string(&lib_log).map(|t| t.lines().count()).unwrap_or(0);
    if lib_lines > 0 {
        eprintln!("{lib_lines} lines from libbpf/libxdp/DPDK in {} (-v shows them here)", lib_log.display());
    }
    let interrupted = detpath::sys::cleanup::interrupted() || dir.runs().iter().any(|r| !r.complete);
    Ok(if failed {
        2
    } else if interrupted {
        130
    } else if dir.runs().iter().any(|r| !gate.allows(r.loss.lost)) {
        1
    } else {
        0
    })
}

/// The progress bar of a client run (rate and ETA).
pub fn progress_bar(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("  {bar:40} {pos}/{len} rounds  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(period: Option<&str>, rate: Option<f64>, rounds: Option<u64>, duration: Option<f64>) -> ProbeArgs {
        ProbeArgs {
            size: 1024,
            period: period.map(|p| crate::vocab::micros(p).unwrap()).into_iter().collect(),
            rate: rate.into_iter().collect(),
            rounds,
            duration: duration.map(Duration::from_secs_f64),
            warmup: Warmup::Rounds(0),
            timeout: Duration::from_millis(100),
        }
    }

    #[test]
    fn a_rate_list_is_a_sweep() {
        let p = ProbeArgs {
            size: 1000,
            period: vec![],
            rate: vec![8.0, 80.0, 800.0, 1600.0],
            rounds: Some(10),
            duration: None,
            warmup: Warmup::Time(Duration::from_millis(2)),
            timeout: Duration::from_millis(100),
        };
        let c = p.configs().unwrap();
        assert_eq!(c.iter().map(|c| c.period_ns).collect::<Vec<_>>(), [1_000_000, 100_000, 10_000, 5_000]);
        // A warm-up time is as many rounds as fit in it at each period.
        assert_eq!(c.iter().map(|c| c.warmup).collect::<Vec<_>>(), [2, 20, 200, 400]);
        assert!(p.config().unwrap_err().to_string().contains("one --rate"));
    }

    #[test]
    fn loss_gates() {
        assert!(LossGate::default().allows(5));
        assert!(!LossGate { fail_on_loss: true, max_loss: None }.allows(1));
        assert!(LossGate { fail_on_loss: false, max_loss: Some(3) }.allows(3));
        assert!(!LossGate { fail_on_loss: false, max_loss: Some(3) }.allows(4));
    }

    #[test]
    fn rate_and_duration_give_period_and_rounds() {
        // 1024 B at 81.92 Mbit/s is the paper's 100 µs.
        let c = probe(None, Some(81.92), None, Some(2.0)).config().unwrap();
        assert_eq!(c.period_ns, 100_000);
        assert_eq!(c.rounds, 20_000);
        let d = probe(None, None, None, None).config().unwrap();
        assert_eq!((d.period_ns, d.rounds), (100_000, DEFAULT_ROUNDS));
        assert!(probe(None, Some(0.0), None, None).config().is_err());
        assert!(probe(Some("100ns"), None, None, None).config().unwrap_err().to_string().contains("at least 1 µs"));
    }
}

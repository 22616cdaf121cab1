//! Synthetic runs for the tests: deterministic, no datapath needed.

use detpath_instrument::{Environment, Record, RunConfig, RunResult, Status};

/// xorshift64*: deterministic pseudo-random numbers.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` rounds with a one-way latency around `base_ns`, an exponential body
/// of mean `spread_ns`, a spike of `spike_ns` every `spike_every` rounds,
/// and every 1000th round lost.
pub fn records(seed: u64, n: u64, base_ns: u64, spread_ns: f64, spike_ns: u64, spike_every: u64) -> Vec<Record> {
    let mut rng = Rng(seed | 1);
    let period = 100_000;
    (0..n)
        .map(|i| {
            let send = 1_000_000_000 + i * period + rng.next() % 500;
            if i % 1000 == 999 {
                return Record { seq: i, client_send_ns: send, send_lateness_ns: send % 500, status: Status::Lost, ..Default::default() };
            }
            let mut lat = base_ns + (-(1.0 - rng.unit()).ln() * spread_ns) as u64;
            if spike_every > 0 && i % spike_every == spike_every / 2 {
                lat += spike_ns;
            }
            let srv = 2_000_000_000 + i * period;
            Record {
                seq: i,
                client_send_ns: send,
                server_recv_ns: srv,
                server_send_ns: srv + 500 + rng.next() % 300,
                client_recv_ns: send + 2 * lat,
                send_lateness_ns: send % 500,
                status: Status::Ok,
            }
        })
        .collect()
}

pub fn config(datapath: &str, stress: u8, tuned: bool) -> RunConfig {
    RunConfig {
        datapath: datapath.into(),
        mode: "synthetic".into(),
        size: 1024,
        period_ns: 100_000,
        rounds: 0,
        timeout_ns: 10_000_000,
        stress_percent: stress,
        tuned,
        tuning: if tuned { "tuned".into() } else { "default".into() },
        cpu_client: Some(2),
        cpu_server: Some(3),
        ..Default::default()
    }
}

pub fn run(datapath: &str, stress: u8, tuned: bool, recs: &[Record]) -> RunResult {
    let mut c = config(datapath, stress, tuned);
    c.rounds = recs.len() as u64;
    RunResult::from_records(c, Environment::capture(), recs, None)
}

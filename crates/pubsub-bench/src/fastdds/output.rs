//! What the Fast DDS reference program prints (one JSON object a line,
//! `{"ev": ...}`; see crates/pubsub-bench/fastdds/perf.cpp), read back.

use serde_json::Value;

/// A ping run: every answered ping's send and receive time, and the counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PingOutput {
    /// (seq, sent ns, received ns) per answered ping, times from the program's start.
    pub rounds: Vec<(u32, u64, u64)>,
    /// Pings written.
    pub sent: u64,
    /// Time from the participant's creation to both ends matched, ms.
    pub discovery_ms: Option<f64>,
    /// The run's `done` line came (false: it died or never matched).
    pub done: bool,
}

/// A sub run: samples per second and the totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubOutput {
    /// Samples taken in each second of the run, in order.
    pub per_second: Vec<u64>,
    /// Samples taken in all.
    pub received: u64,
    /// Samples the writer sent that never came (gaps in seq).
    pub lost: u64,
}

fn lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["ev"].is_string())
}

/// A ping's output.
pub fn ping(text: &str) -> PingOutput {
    let mut out = PingOutput::default();
    for v in lines(text) {
        match v["ev"].as_str() {
            Some("rtt") => {
                if let (Some(seq), Some(sent), Some(recv)) = (v["seq"].as_u64(), v["sent_ns"].as_u64(), v["recv_ns"].as_u64()) {
                    if recv >= sent {
                        out.rounds.push((seq as u32, sent, recv));
                    }
                }
            }
            Some("done") => {
                out.sent = v["sent"].as_u64().unwrap_or(0);
                out.discovery_ms = v["discovery_ms"].as_f64();
                out.done = true;
            }
            _ => {}
        }
    }
    out
}

/// A sub's output (its last totals win: the `done` line, else the last second's).
pub fn sub(text: &str) -> SubOutput {
    let mut out = SubOutput::default();
    for v in lines(text) {
        match v["ev"].as_str() {
            Some("second") => {
                out.per_second.push(v["samples"].as_u64().unwrap_or(0));
                out.received = v["total"].as_u64().unwrap_or(out.received);
                out.lost = v["lost"].as_u64().unwrap_or(out.lost);
            }
            Some("done") => {
                out.received = v["received"].as_u64().unwrap_or(out.received);
                out.lost = v["lost"].as_u64().unwrap_or(out.lost);
            }
            _ => {}
        }
    }
    out
}

/// Samples per second over the full seconds that carried traffic (the
/// first and the last such second, partial, dropped; as detpath's rows).
pub fn steady_rate(per_second: &[u64]) -> f64 {
    let busy: Vec<u64> = per_second.iter().copied().filter(|&n| n > 0).collect();
    let core = if busy.len() > 2 { &busy[1..busy.len() - 1] } else { &busy[..] };
    if core.is_empty() {
        return 0.0;
    }
    core.iter().sum::<u64>() as f64 / core.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_lines_give_rounds_and_counts() {
        let t = "{\"ev\":\"rtt\",\"seq\":1,\"sent_ns\":100,\"recv_ns\":300}\nnoise\n{\"ev\":\"rtt\",\"seq\":3,\"sent_ns\":500,\"recv_ns\":900}\n\
                 {\"ev\":\"done\",\"sent\":3,\"received\":2,\"discovery_ms\":4.5}\n";
        let p = ping(t);
        assert_eq!(p.rounds, vec![(1, 100, 300), (3, 500, 900)]);
        assert_eq!((p.sent, p.discovery_ms, p.done), (3, Some(4.5), true));
        assert!(!ping("{\"ev\":\"unmatched\"}\n").done);
    }

    #[test]
    fn sub_lines_give_seconds_and_the_last_totals() {
        let t = "{\"ev\":\"second\",\"t\":1,\"samples\":10,\"total\":10,\"lost\":0}\n{\"ev\":\"second\",\"t\":2,\"samples\":30,\"total\":40,\"lost\":2}\n\
                 {\"ev\":\"second\",\"t\":3,\"samples\":20,\"total\":60,\"lost\":2}\n{\"ev\":\"done\",\"received\":61,\"lost\":3}\n";
        let s = sub(t);
        assert_eq!(s, SubOutput { per_second: vec![10, 30, 20], received: 61, lost: 3 });
        assert_eq!(steady_rate(&s.per_second), 30.0);
        assert_eq!(steady_rate(&[0, 5, 0]), 5.0);
        assert_eq!(steady_rate(&[]), 0.0);
    }
}

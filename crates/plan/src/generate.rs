//! Synthetic flow sets in the space of paper 003's Table 4, from a seed (same seed, same sets).
//!
//! Table 4: utilisation 5-50% in 5% steps, {2, 4, 8, 12, 16} flows, periods from {80, 160, ..., 1600}
//! µs and harmonic within a set, jitter 5-20% of the period, 10 µs slots, 32-slot ring, 8 traffic
//! classes, 64 sets per point. Utilisation is packets per ring cycle over ring slots, i.e. the sum of
//! slot/period.
//!
//! How a set is drawn: a harmonic chain of periods (a start in {80..400} µs, each next one 2, 3 or 5
//! times the last, up to 1600 µs); a flow count from Table 4 that can reach the target on that chain;
//! per-flow shares of the target by UUniFast, each rounded to the chain period closest in log scale;
//! then single-flow period moves along the chain while they bring the total closer, until it is within
//! ±0.5 percentage points of the target (else the set is drawn again). Jitter is uniform in 5-20% of
//! the period (whole µs); each flow joins one of the 8 classes uniformly (classes without flows are
//! left out). Each set has its own random stream, so asking for more sets never changes the first ones.

use crate::spec::{AppSpec, FlowSpec, Spec};

/// Table 4's slot size.
pub const SLOT_NS: i64 = 10_000;
/// Table 4's ring size.
pub(crate) const RING_SLOTS: i64 = 32;
/// Table 4's number of traffic classes.
pub(crate) const CLASSES: usize = 8;
/// Table 4's flow counts.
pub(crate) const FLOW_COUNTS: [usize; 5] = [2, 4, 8, 12, 16];
/// Periods are multiples of this, up to 20 of them (80..1600 µs).
pub(crate) const PERIOD_UNIT_NS: i64 = 80_000;
/// Generated utilisation is within this of the target (absolute).
pub(crate) const UTIL_TOLERANCE: f64 = 0.005;

/// A generated flow set.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSet {
    /// Stable name, e.g. `u25_007`.
    pub name: String,
    /// Target utilisation (fraction).
    pub target_util: f64,
    /// The set's actual utilisation.
    pub util: f64,
    /// The planning request.
    pub spec: Spec,
}

/// SplitMix64: small, fast, and the same on every platform and crate version.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The utilisation points: Table 4's 5..50 % and, when `points > 10`, further 5 % steps.
pub fn utilisations(points: usize) -> Vec<f64> {
    (1..=points).map(|i| i as f64 * 0.05).collect()
}

/// `count` sets at utilisation `util` (fraction); `point` distinguishes the streams of different points.
/// A target no Table 4 set can reach (above 200%) gives no sets.
pub fn flow_sets(seed: u64, point: usize, util: f64, count: usize) -> Vec<FlowSet> {
    (0..count)
        .filter_map(|i| {
            let stream = seed ^ ((point as u64) << 40) ^ ((i as u64) << 16) ^ 0x5EED;
            let mut rng = Rng::new(stream);
            one_set(&mut rng, util, format!("u{:02}_{:03}", (util * 100.0).round() as u64, i))
        })
        .collect()
}

/// Utilisation of a flow whose period is `c` period units: slot / (c * unit).
fn unit_util(c: i64) -> f64 {
    SLOT_NS as f64 / (c * PERIOD_UNIT_NS) as f64
}

fn chain(rng: &mut Rng) -> Vec<i64> {
    let mut c = vec![1 + rng.below(5) as i64];
    loop {
        let f = [2, 3, 5][rng.below(3) as usize];
        let next = c[c.len() - 1] * f;
        if next > 20 {
            // Try the smaller factors before stopping, so chains reach as far as they can.
            let last = c[c.len() - 1];
            match [2, 3, 5].iter().map(|f| last * f).find(|&n| n <= 20) {
                Some(n) if rng.below(2) == 0 => c.push(n),
                _ => return c,
            }
        } else {
            c.push(next);
        }
    }
}

fn one_set(rng: &mut Rng, util: f64, name: String) -> Option<FlowSet> {
    (0..100_000).find_map(|_| try_set(rng, util, &name))
}

fn try_set(rng: &mut Rng, util: f64, name: &str) -> Option<FlowSet> {
    let chain = chain(rng);
    let (umin, umax) = (unit_util(chain[chain.len() - 1]), unit_util(chain[0]));
    let counts: Vec<usize> =
        FLOW_COUNTS.iter().copied().filter(|&n| n as f64 * umin <= util + UTIL_TOLERANCE && util - UTIL_TOLERANCE <= n as f64 * umax).collect();
    if counts.is_empty() {
        return None;
    }
    let n = counts[rng.below(counts.len() as u64) as usize];
    // UUniFast shares.
    let mut shares = Vec::with_capacity(n);
    let mut rest = util;
    for i in 1..n {
        let next = rest * rng.unit().powf(1.0 / (n - i) as f64);
        shares.push(rest - next);
        rest = next;
    }
    shares.push(rest);
    let mut idx: Vec<usize> = shares
        .iter()
        .map(|&u| {
            (0..chain.len())
                .min_by(|&a, &b| {
                    let da = (unit_util(chain[a]).ln() - u.max(1e-9).ln()).abs();
                    let db = (unit_util(chain[b]).ln() - u.max(1e-9).ln()).abs();
                    da.total_cmp(&db)
                })
                .unwrap_or(0)
        })
        .collect();
    let total = |idx: &[usize]| idx.iter().map(|&i| unit_util(chain[i])).sum::<f64>();
    for _ in 0..4 * n {
        let err = (total(&idx) - util).abs();
        if err <= UTIL_TOLERANCE {
            break;
        }
        let mut best: Option<(f64, usize, usize)> = None;
        for f in 0..n {
            for j in [idx[f].wrapping_sub(1), idx[f] + 1] {
                if j >= chain.len() {
                    continue;
                }
                let mut t = idx.clone();
                t[f] = j;
                let e = (total(&t) - util).abs();
                if e < err && !matches!(best, Some(b) if b.0 <= e) {
                    best = Some((e, f, j));
                }
            }
        }
        let (_, f, j) = best?;
        idx[f] = j;
    }
    let actual = total(&idx);
    if (actual - util).abs() > UTIL_TOLERANCE {
        return None;
    }
    let mut apps: Vec<AppSpec> = (0..CLASSES).map(|c| AppSpec { name: format!("c{c}"), flows: Vec::new() }).collect();
    for (i, &ci) in idx.iter().enumerate() {
        let period_ns = chain[ci] * PERIOD_UNIT_NS;
        let lo = (period_ns as f64 * 0.05 / 1000.0).ceil() as i64;
        let hi = (period_ns as f64 * 0.20 / 1000.0).floor() as i64;
        let jitter_ns = (lo + rng.below((hi - lo + 1) as u64) as i64) * 1000;
        let class = rng.below(CLASSES as u64) as usize;
        apps[class].flows.push(FlowSpec { name: format!("f{i}"), period_ns, jitter_ns });
    }
    apps.retain(|a| !a.flows.is_empty());
    Some(FlowSet { name: name.to_string(), target_util: util, util: actual, spec: Spec { ring_slots: RING_SLOTS, slot_ns: SLOT_NS, apps } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_deterministic_harmonic_and_on_target() {
        let a = flow_sets(7, 4, 0.25, 16);
        let b = flow_sets(7, 4, 0.25, 16);
        assert_eq!(a, b);
        for s in &a {
            assert!((s.util - 0.25).abs() <= UTIL_TOLERANCE + 1e-12, "{} at {}", s.name, s.util);
            let periods: Vec<i64> = s.spec.apps.iter().flat_map(|a| &a.flows).map(|f| f.period_ns).collect();
            assert!(FLOW_COUNTS.contains(&periods.len()));
            for &p in &periods {
                assert!(p % PERIOD_UNIT_NS == 0 && (PERIOD_UNIT_NS..=1_600_000).contains(&p));
                for &q in &periods {
                    assert!(p % q == 0 || q % p == 0, "{p} and {q} are not harmonic");
                }
            }
            for f in s.spec.apps.iter().flat_map(|a| &a.flows) {
                assert!(f.jitter_ns * 20 >= f.period_ns && f.jitter_ns * 5 <= f.period_ns);
            }
        }
        // More sets leave the first ones unchanged.
        assert_eq!(flow_sets(7, 4, 0.25, 20)[..16], a[..]);
    }
}

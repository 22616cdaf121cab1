//! Exact statistics over all samples of a run (no histogram, no error bound
//! to state): the samples are sorted once and every quantile is read off
//! the sorted array. Sorting 1,000,000 `u64` takes a few tens of ms.
//!
//! # Percentile method: nearest rank
//!
//! For `n` sorted samples `x[1] <= ... <= x[n]` and a fraction `q` in
//! (0, 1], the q-quantile is `x[ceil(q * n)]` (the smallest sample with at
//! least a fraction `q` of the samples at or below it). It is always a
//! measured value, never an interpolation. Quantiles are given exactly as
//! parts per million ([`Quantile`]), and the rank is computed in integers,
//! so p99.9999 of 1,000,000 samples is exactly `x[999_999]`.
//!
//! # When a percentile is supported ("n/a (needs N)")
//!
//! An upper quantile `q >= 0.5` is reported only if at least one sample lies
//! above the part it describes, i.e. `n * (1 - q) >= 1`, i.e.
//! `n >= N(q) = ceil(1 / (1 - q))`: p99 needs 100 samples, p99.9 1,000,
//! p99.99 10,000, p99.999 100,000 and p99.9999 1,000,000. A lower quantile
//! `q < 0.5` needs symmetrically `n >= ceil(1 / q)` (p0.01 needs 10,000).
//! The median (q = 0.5), min, max and mean are reported from one sample on.
//! Otherwise the value is `None` and [`Quantile::needs`] says how many
//! samples it would take.

use serde::{Deserialize, Serialize};

/// A quantile as an exact fraction: parts per million, 1..=1_000_000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Quantile(pub u32);

impl Quantile {
    /// p0.01: the box plot's lower whisker (needs 10,000 samples).
    pub const P0_01: Quantile = Quantile(100);
    /// p25: the lower edge of a box plot's box.
    pub const P25: Quantile = Quantile(250_000);
    /// p50, the median (reported from one sample on).
    pub const MEDIAN: Quantile = Quantile(500_000);
    /// p75: the upper edge of a box plot's box.
    pub const P75: Quantile = Quantile(750_000);
    /// p99 (needs 100 samples).
    pub const P99: Quantile = Quantile(990_000);
    /// p99.9 (needs 1,000 samples).
    pub const P99_9: Quantile = Quantile(999_000);
    /// p99.99 (needs 10,000 samples): the box plot's upper whisker.
    pub const P99_99: Quantile = Quantile(999_900);
    /// p99.999 (needs 100,000 samples).
    pub const P99_999: Quantile = Quantile(999_990);
    /// p99.9999, six nines (needs 1,000,000 samples).
    pub const P99_9999: Quantile = Quantile(999_999);
    /// The largest sample (p100).
    pub const MAX: Quantile = Quantile(1_000_000);

    /// The tail percentiles the benchmark reports, with their labels.
    pub const TAIL: [(Quantile, &'static str); 5] =
        [(Quantile::P99, "p99"), (Quantile::P99_9, "p99.9"), (Quantile::P99_99, "p99.99"), (Quantile::P99_999, "p99.999"), (Quantile::P99_9999, "p99.9999")];

    /// Samples needed for this quantile to be reported (see the module doc).
    pub const fn needs(self) -> u64 {
        let q = self.0 as u64;
        if q == 500_000 {
            1
        } else if q > 500_000 {
            if q >= 1_000_000 {
                1
            } else {
                1_000_000u64.div_ceil(1_000_000 - q)
            }
        } else if q == 0 {
            u64::MAX
        } else {
            1_000_000u64.div_ceil(q)
        }
    }

    /// 1-based nearest rank `ceil(q * n)`, at least 1.
    pub const fn rank(self, n: u64) -> u64 {
        let r = (n as u128 * self.0 as u128).div_ceil(1_000_000) as u64;
        if r == 0 {
            1
        } else {
            r
        }
    }

    /// The quantile as a percentage (99.9999 for P99_9999).
    pub fn percent(self) -> f64 {
        self.0 as f64 / 10_000.0
    }
}

/// The nearest-rank quantile of sorted samples, or `Err(needs)` when the
/// sample count cannot support it (also for an empty slice).
pub fn quantile_sorted(sorted: &[u64], q: Quantile) -> Result<u64, u64> {
    let n = sorted.len() as u64;
    if n == 0 || n < q.needs() {
        return Err(q.needs().max(1));
    }
    Ok(sorted[(q.rank(n) - 1) as usize])
}

/// The nearest-rank quantile of sorted samples without the support rule
/// (for plot geometry such as box edges); `None` only if empty.
pub fn quantile_unchecked(sorted: &[u64], q: Quantile) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    Some(sorted[(q.rank(sorted.len() as u64) - 1) as usize])
}

/// Summary of one distribution in ns (latency, RTT, server processing time,
/// send lateness). Every value is `None` when there were no samples; a tail
/// percentile is also `None` when the count cannot support it
/// ([`Quantile::needs`]). `jitter_ns` is max - min (paper 000's jitter).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Summary {
    /// Samples in the distribution (what decides which percentiles are supported).
    pub count: u64,
    /// Smallest sample, ns.
    pub min_ns: Option<u64>,
    /// Arithmetic mean, ns.
    pub mean_ns: Option<f64>,
    /// Median (nearest rank), ns.
    pub median_ns: Option<u64>,
    /// p99, ns (from 100 samples).
    pub p99_ns: Option<u64>,
    /// p99.9, ns (from 1,000 samples).
    pub p99_9_ns: Option<u64>,
    /// p99.99, ns (from 10,000 samples).
    pub p99_99_ns: Option<u64>,
    /// p99.999, ns (from 100,000 samples).
    pub p99_999_ns: Option<u64>,
    /// p99.9999, ns (from 1,000,000 samples).
    pub p99_9999_ns: Option<u64>,
    /// Largest sample, ns.
    pub max_ns: Option<u64>,
    /// max - min, ns: paper 000's jitter.
    pub jitter_ns: Option<u64>,
    /// Population standard deviation.
    pub stddev_ns: Option<f64>,
}

impl Summary {
    /// Sorts `samples` in place and summarises them.
    pub fn from_samples(samples: &mut [u64]) -> Summary {
        samples.sort_unstable();
        Summary::from_sorted(samples)
    }

    /// Summarises samples already sorted ascending.
    pub fn from_sorted(sorted: &[u64]) -> Summary {
        debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "samples not sorted");
        let n = sorted.len();
        if n == 0 {
            return Summary::default();
        }
        // Mean and variance by Welford's method in f64 (no u64 overflow).
        let (mut mean, mut m2) = (0.0f64, 0.0f64);
        for (i, &x) in sorted.iter().enumerate() {
            let x = x as f64;
            let d = x - mean;
            mean += d / (i + 1) as f64;
            m2 += d * (x - mean);
        }
        let q = |q: Quantile| quantile_sorted(sorted, q).ok();
        let (min, max) = (sorted[0], sorted[n - 1]);
        Summary {
            count: n as u64,
            min_ns: Some(min),
            mean_ns: Some(mean),
            median_ns: q(Quantile::MEDIAN),
            p99_ns: q(Quantile::P99),
            p99_9_ns: q(Quantile::P99_9),
            p99_99_ns: q(Quantile::P99_99),
            p99_999_ns: q(Quantile::P99_999),
            p99_9999_ns: q(Quantile::P99_9999),
            max_ns: Some(max),
            jitter_ns: Some(max - min),
            stddev_ns: Some((m2 / n as f64).sqrt()),
        }
    }

    /// The value of one of the reported quantiles (`MEDIAN`, the `TAIL`
    /// ones, `MAX`); `None` for any other quantile or when unsupported.
    pub fn get(&self, q: Quantile) -> Option<u64> {
        match q {
            Quantile::MEDIAN => self.median_ns,
            Quantile::P99 => self.p99_ns,
            Quantile::P99_9 => self.p99_9_ns,
            Quantile::P99_99 => self.p99_99_ns,
            Quantile::P99_999 => self.p99_999_ns,
            Quantile::P99_9999 => self.p99_9999_ns,
            Quantile::MAX => self.max_ns,
            _ => None,
        }
    }
}

/// The geometry of one box in a box plot (paper 000, Figures 2-3): box from
/// p25 to p75, median line, whiskers at p0.01 and p99.99, and every sample
/// beyond the whiskers as an outlier dot. When the count cannot support
/// p0.01 / p99.99 (fewer than 10,000 samples) the whiskers fall back to min
/// and max and there are no outliers (`whiskers_are_extremes` is true).
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    /// Lower edge of the box, in the samples' unit (ns for latencies).
    pub p25: u64,
    /// The line in the box, in the samples' unit.
    pub median: u64,
    /// Upper edge of the box, in the samples' unit.
    pub p75: u64,
    /// Lower whisker: p0.01, or the minimum when the count cannot support it.
    pub whisker_lo: u64,
    /// Upper whisker: p99.99, or the maximum when the count cannot support it.
    pub whisker_hi: u64,
    /// The whiskers are min and max (fewer than 10,000 samples), so no outliers.
    pub whiskers_are_extremes: bool,
    /// Samples beyond the whiskers drawn as dots (capped per side, the most extreme kept).
    pub outliers: Vec<u64>,
}

impl BoxStats {
    /// From sorted samples; `None` if empty. `max_outliers` caps the dots
    /// drawn on each side (the most extreme ones are always kept).
    pub fn from_sorted(sorted: &[u64], max_outliers: usize) -> Option<BoxStats> {
        let p25 = quantile_unchecked(sorted, Quantile::P25)?;
        let lo = quantile_sorted(sorted, Quantile::P0_01);
        let hi = quantile_sorted(sorted, Quantile::P99_99);
        let (whisker_lo, whisker_hi, extremes) = match (lo, hi) {
            (Ok(l), Ok(h)) => (l, h, false),
            _ => (sorted[0], sorted[sorted.len() - 1], true),
        };
        let mut outliers = Vec::new();
        if !extremes {
            let below = sorted.partition_point(|&x| x < whisker_lo);
            let above = sorted.partition_point(|&x| x <= whisker_hi);
            outliers.extend(thin(&sorted[..below], max_outliers, true));
            outliers.extend(thin(&sorted[above..], max_outliers, false));
        }
        Some(BoxStats {
            p25,
            median: quantile_unchecked(sorted, Quantile::MEDIAN)?,
            p75: quantile_unchecked(sorted, Quantile::P75)?,
            whisker_lo,
            whisker_hi,
            whiskers_are_extremes: extremes,
            outliers,
        })
    }
}

/// At most `cap` values of `s`, evenly spaced, always keeping the extreme end.
fn thin(s: &[u64], cap: usize, low_end: bool) -> Vec<u64> {
    if s.len() <= cap {
        return s.to_vec();
    }
    if cap == 0 {
        return Vec::new();
    }
    let mut out: Vec<u64> = (0..cap).map(|i| s[i * s.len() / cap]).collect();
    let extreme = if low_end { s[0] } else { s[s.len() - 1] };
    if !out.contains(&extreme) {
        *out.last_mut().unwrap() = extreme;
    }
    out
}

/// Points of the complementary CDF `P(X > x)` for a log-log plot, from
/// sorted samples: at most about `max_points` points, spaced evenly in
/// log(probability) so the tail keeps its resolution down to `1/n`.
/// Each point is `(x_ns, p)` with `p = (n - i) / n` for the sample of
/// 0-based index `i` (the fraction of samples at or above it), so the
/// last point is the maximum at `p = 1/n`.
pub fn ccdf_points(sorted: &[u64], max_points: usize) -> Vec<(u64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let max_points = max_points.max(2);
    let mut idx: Vec<usize> = if n <= max_points {
        (0..n).collect()
    } else {
        // Exceedance counts k = n - i from n down to 1, log-spaced.
        let ln = (n as f64).ln();
        (0..max_points)
            .map(|j| {
                let k = (ln * (1.0 - j as f64 / (max_points - 1) as f64)).exp().round() as usize;
                n - k.clamp(1, n)
            })
            .collect()
    };
    idx.dedup();
    idx.into_iter().map(|i| (sorted[i], (n - i) as f64 / n as f64)).collect()
}

/// One bucket of a downsampled time series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Index of the first sample in the bucket.
    pub start: usize,
    /// Smallest sample of the bucket, in the series' unit (ns for latencies).
    pub min: u64,
    /// Median sample of the bucket, in the series' unit.
    pub median: u64,
    /// Largest sample of the bucket (no spike is hidden), in the series' unit.
    pub max: u64,
}

/// Splits a series (in time order) into at most `buckets` consecutive
/// buckets and gives min, median and max of each: enough to draw latency
/// over time for a million rounds without hiding a single spike (the max
/// of every bucket is kept).
pub fn downsample(series: &[u64], buckets: usize) -> Vec<Bucket> {
    let n = series.len();
    if n == 0 || buckets == 0 {
        return Vec::new();
    }
    let b = buckets.min(n);
    let mut out = Vec::with_capacity(b);
    let mut scratch = Vec::new();
    for j in 0..b {
        let (s, e) = (j * n / b, (j + 1) * n / b);
        scratch.clear();
        scratch.extend_from_slice(&series[s..e]);
        scratch.sort_unstable();
        out.push(Bucket { start: s, min: scratch[0], median: scratch[(scratch.len() - 1) / 2], max: scratch[scratch.len() - 1] });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_rule() {
        assert_eq!(Quantile::P99.needs(), 100);
        assert_eq!(Quantile::P99_9.needs(), 1_000);
        assert_eq!(Quantile::P99_99.needs(), 10_000);
        assert_eq!(Quantile::P99_999.needs(), 100_000);
        assert_eq!(Quantile::P99_9999.needs(), 1_000_000);
        assert_eq!(Quantile::MEDIAN.needs(), 1);
        assert_eq!(Quantile::MAX.needs(), 1);
        assert_eq!(Quantile::P0_01.needs(), 10_000);
        assert_eq!(Quantile::P25.needs(), 4);
    }

    #[test]
    fn nearest_rank_on_1_to_100() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile_sorted(&v, Quantile::MEDIAN), Ok(50));
        assert_eq!(quantile_sorted(&v, Quantile::P25), Ok(25));
        assert_eq!(quantile_sorted(&v, Quantile::P75), Ok(75));
        assert_eq!(quantile_sorted(&v, Quantile::P99), Ok(99));
        assert_eq!(quantile_sorted(&v, Quantile::MAX), Ok(100));
        assert_eq!(quantile_sorted(&v, Quantile::P99_9), Err(1_000));
        let s = Summary::from_sorted(&v);
        assert_eq!(s.count, 100);
        assert_eq!(s.min_ns, Some(1));
        assert_eq!(s.max_ns, Some(100));
        assert_eq!(s.jitter_ns, Some(99));
        assert_eq!(s.mean_ns, Some(50.5));
        assert_eq!(s.p99_ns, Some(99));
        assert_eq!(s.p99_9_ns, None);
        // population std dev of 1..=100 = sqrt((100^2 - 1) / 12)
        assert!((s.stddev_ns.unwrap() - (9999.0f64 / 12.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn six_nines_of_a_million() {
        // 0..1_000_000: p99.9999 is x[999_999] (1-based) = 999_998.
        let v: Vec<u64> = (0..1_000_000).collect();
        let s = Summary::from_sorted(&v);
        assert_eq!(s.p99_9999_ns, Some(999_998));
        assert_eq!(s.p99_999_ns, Some(999_989));
        assert_eq!(s.p99_99_ns, Some(999_899));
        assert_eq!(s.p99_9_ns, Some(998_999));
        assert_eq!(s.p99_ns, Some(989_999));
        assert_eq!(s.median_ns, Some(499_999));
        assert_eq!(s.max_ns, Some(999_999));
        // One sample fewer and six nines is not supported.
        let s = Summary::from_sorted(&v[..999_999]);
        assert_eq!(s.p99_9999_ns, None);
        assert!(s.p99_999_ns.is_some());
    }

    #[test]
    fn one_sample() {
        let s = Summary::from_samples(&mut [42]);
        assert_eq!(s.count, 1);
        assert_eq!((s.min_ns, s.median_ns, s.max_ns), (Some(42), Some(42), Some(42)));
        assert_eq!(s.jitter_ns, Some(0));
        assert_eq!(s.stddev_ns, Some(0.0));
        assert_eq!(s.p99_ns, None);
    }

    #[test]
    fn empty() {
        let s = Summary::from_samples(&mut []);
        assert_eq!(s, Summary::default());
        assert_eq!(quantile_sorted(&[], Quantile::MEDIAN), Err(1));
        assert!(BoxStats::from_sorted(&[], 10).is_none());
        assert!(ccdf_points(&[], 10).is_empty());
    }

    #[test]
    fn all_equal() {
        let mut v = vec![7_000u64; 20_000];
        let s = Summary::from_samples(&mut v);
        assert_eq!(s.jitter_ns, Some(0));
        assert_eq!(s.stddev_ns, Some(0.0));
        assert_eq!(s.p99_99_ns, Some(7_000));
        assert_eq!(s.mean_ns, Some(7_000.0));
        let b = BoxStats::from_sorted(&v, 100).unwrap();
        assert!(b.outliers.is_empty());
        assert_eq!((b.whisker_lo, b.whisker_hi), (7_000, 7_000));
    }

    #[test]
    fn huge_outliers() {
        // 9,998 samples of 10 us, one of u64::MAX / 2 and one of 0, unsorted.
        let mut v = vec![10_000u64; 9_998];
        v.insert(5_000, u64::MAX / 2);
        v.push(0);
        let s = Summary::from_samples(&mut v);
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_ns, Some(0));
        assert_eq!(s.max_ns, Some(u64::MAX / 2));
        assert_eq!(s.jitter_ns, Some(u64::MAX / 2));
        assert_eq!(s.median_ns, Some(10_000));
        assert_eq!(s.p99_99_ns, Some(10_000), "rank 9,999 of 10,000 is below the single outlier");
        assert!(s.mean_ns.unwrap() > 1e14 && s.mean_ns.unwrap().is_finite());
        let b = BoxStats::from_sorted(&v, 100).unwrap();
        assert!(!b.whiskers_are_extremes);
        assert_eq!(b.whisker_hi, 10_000);
        assert_eq!(b.whisker_lo, 0, "rank 1 of 10,000 is the minimum");
        assert_eq!(b.outliers, vec![u64::MAX / 2]);
    }

    #[test]
    fn box_whiskers_fall_back_below_ten_thousand() {
        let v: Vec<u64> = (1..=1_000).collect();
        let b = BoxStats::from_sorted(&v, 100).unwrap();
        assert!(b.whiskers_are_extremes);
        assert_eq!((b.whisker_lo, b.p25, b.median, b.p75, b.whisker_hi), (1, 250, 500, 750, 1_000));
    }

    #[test]
    fn outliers_are_capped_but_keep_the_extreme() {
        let v: Vec<u64> = (0..1_000_000).collect();
        let b = BoxStats::from_sorted(&v, 10).unwrap();
        assert_eq!(b.outliers.len(), 20);
        assert!(b.outliers.contains(&0) && b.outliers.contains(&999_999));
    }

    #[test]
    fn ccdf_reaches_one_over_n() {
        let v: Vec<u64> = (1..=100_000).collect();
        let pts = ccdf_points(&v, 200);
        assert!(pts.len() <= 200 && pts.len() > 100);
        assert_eq!(pts[0], (1, 1.0));
        assert_eq!(*pts.last().unwrap(), (100_000, 1e-5));
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1));
        let small = ccdf_points(&[5, 6, 7], 200);
        assert_eq!(small, vec![(5, 1.0), (6, 2.0 / 3.0), (7, 1.0 / 3.0)]);
    }

    #[test]
    fn downsample_keeps_every_spike() {
        let mut v = vec![10u64; 100_000];
        v[77_777] = 9_999;
        let b = downsample(&v, 1_000);
        assert_eq!(b.len(), 1_000);
        assert_eq!(b.iter().filter(|b| b.max == 9_999).count(), 1);
        assert_eq!(b[777].max, 9_999);
        assert_eq!(b[777].median, 10);
        assert_eq!(downsample(&[1, 2, 3], 10).len(), 3);
    }
}

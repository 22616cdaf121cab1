//! A proportional-integral clock servo, after the PI servo of linuxptp
//! (`pi.c`: its three states, its frequency estimate from the first two
//! samples, its gains as functions of the sync interval and its defaults).
//! Written from the algorithm's description, not from its code.
//!
//! Input: the measured offset of the local clock from the master
//! (local − master, ns) and the local time of the measurement. Output: the
//! state and the rate adjustment to apply to the local clock (ppb; positive
//! makes it run faster), plus, in state [`ServoState::Jump`], the step to
//! apply first.
//!
//! 1. First sample: remember it ([`ServoState::Unlocked`]).
//! 2. A later sample at least `0.016 / ki` s after the first: the frequency
//!    error is the offset's slope between the two; the servo adopts its
//!    opposite as the rate, and asks for a step if the offset exceeds the
//!    first-step threshold (20 µs by default) or the step threshold
//!    ([`ServoState::Jump`]), else locks.
//! 3. Every later sample: `rate = -(kp·offset + ki·offset + drift)` where
//!    `drift` integrates `ki·offset` (not while the output is clamped); an
//!    offset beyond the step threshold (if set) starts over at 1.
//!
//! The samples come from the network, so the PTP slave and the sync slave
//! feed the servo through a [`SpikeFilter`]: a forged or held-up time stamp
//! is counted and dropped, and the first step waits for samples that agree.

/// The servo's state after a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServoState {
    /// Collecting samples for the frequency estimate; apply nothing.
    Unlocked,
    /// Step the clock by [`ServoOutput::step_ns`], then apply the rate.
    Jump,
    /// Apply the rate.
    Locked,
}

/// What the caller should do to its clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoOutput {
    /// What the caller should do.
    pub state: ServoState,
    /// Rate adjustment for the local clock in ppb (positive: faster). Meaningful unless unlocked.
    pub rate_ppb: f64,
    /// Step for the local clock in ns (state Jump only; 0 otherwise).
    pub step_ns: i64,
}

/// Gains as linuxptp defines them: `kp = min(kp_scale · interval^kp_exponent, kp_norm_max / interval)`, likewise `ki`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiGains {
    /// kp scale (linuxptp pi_proportional_scale).
    pub kp_scale: f64,
    /// kp exponent of the interval (pi_proportional_exponent).
    pub kp_exponent: f64,
    /// kp cap times the interval (pi_proportional_norm_max).
    pub kp_norm_max: f64,
    /// ki scale (pi_integral_scale).
    pub ki_scale: f64,
    /// ki exponent of the interval (pi_integral_exponent).
    pub ki_exponent: f64,
    /// ki cap times the interval (pi_integral_norm_max).
    pub ki_norm_max: f64,
}

impl PiGains {
    /// linuxptp's defaults with hardware time stamps (kp scale 0.7, ki scale 0.3).
    /// KeepON time-stamps transmissions with the slot's scheduled time, which
    /// is exact by construction, so these are the defaults here.
    pub(crate) fn linuxptp_hardware() -> PiGains {
        PiGains { kp_scale: 0.7, kp_exponent: -0.3, kp_norm_max: 0.7, ki_scale: 0.3, ki_exponent: 0.4, ki_norm_max: 0.3 }
    }
    /// linuxptp's defaults with software time stamps (kp scale 0.1, ki scale 0.001).
    pub fn linuxptp_software() -> PiGains {
        PiGains { kp_scale: 0.1, ki_scale: 0.001, ..PiGains::linuxptp_hardware() }
    }
    /// (kp, ki) for a sync interval of `interval_s` seconds.
    pub(crate) fn for_interval(&self, interval_s: f64) -> (f64, f64) {
        let kp = (self.kp_scale * interval_s.powf(self.kp_exponent)).min(self.kp_norm_max / interval_s);
        let ki = (self.ki_scale * interval_s.powf(self.ki_exponent)).min(self.ki_norm_max / interval_s);
        (kp, ki)
    }
}

/// Servo configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServoConfig {
    /// The PI gains.
    pub gains: PiGains,
    /// Seconds between samples (the sync interval); sets kp and ki.
    pub interval_s: f64,
    /// Offset beyond which the first lock steps the clock (linuxptp: 20 µs); 0 disables.
    pub first_step_threshold_ns: u64,
    /// Offset beyond which any sample steps (restarts the servo); 0 disables (linuxptp's default).
    pub step_threshold_ns: u64,
    /// Largest rate the servo outputs, ppb.
    pub max_rate_ppb: f64,
}

impl ServoConfig {
    /// linuxptp's defaults (hardware gains) for samples every `interval_s` seconds.
    pub fn linuxptp(interval_s: f64) -> ServoConfig {
        ServoConfig {
            gains: PiGains::linuxptp_hardware(),
            interval_s,
            first_step_threshold_ns: 20_000,
            step_threshold_ns: 0,
            max_rate_ppb: crate::clock::MAX_RATE_PPB as f64,
        }
    }
}

/// The PI servo.
#[derive(Debug, Clone)]
pub struct PiServo {
    cfg: ServoConfig,
    kp: f64,
    ki: f64,
    /// Estimated frequency error of the local clock, ppb (positive: local fast).
    drift: f64,
    first: Option<(i64, u64)>,
    stage: Stage,
    first_update: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Empty,
    OneSample,
    Running,
}

impl PiServo {
    /// A servo starting unlocked with no frequency estimate.
    pub fn new(cfg: ServoConfig) -> PiServo {
        let (kp, ki) = cfg.gains.for_interval(cfg.interval_s);
        PiServo { cfg, kp, ki, drift: 0.0, first: None, stage: Stage::Empty, first_update: true }
    }

    /// The gains in use (kp, ki).
    pub fn gains(&self) -> (f64, f64) {
        (self.kp, self.ki)
    }

    /// Current frequency-error estimate (ppb, positive: local clock fast).
    pub fn drift_ppb(&self) -> f64 {
        self.drift
    }

    /// Starts over from the first sample (keeps the frequency estimate).
    pub fn reset(&mut self) {
        self.stage = Stage::Empty;
        self.first = None;
    }

    /// Starts over as at the start, keeping the frequency estimate: the next
    /// estimate may step the clock again (the master's time moved for good).
    pub fn restart(&mut self) {
        self.reset();
        self.first_update = true;
    }

    fn clamp(&self, v: f64) -> f64 {
        v.clamp(-self.cfg.max_rate_ppb, self.cfg.max_rate_ppb)
    }

    /// Feeds one measurement: `offset_ns` = local − master, taken at local time `local_ns`.
    pub fn sample(&mut self, offset_ns: i64, local_ns: u64) -> ServoOutput {
        let unlocked = ServoOutput { state: ServoState::Unlocked, rate_ppb: -self.drift, step_ns: 0 };
        let out = match self.stage {
            Stage::Empty => {
                self.first = Some((offset_ns, local_ns));
                self.stage = Stage::OneSample;
                unlocked
            }
            Stage::OneSample => {
                let Some((o0, t0)) = self.first else {
                    self.stage = Stage::Empty;
                    return unlocked;
                };
                if local_ns <= t0 {
                    // Samples out of order: start again from this one.
                    self.first = Some((offset_ns, local_ns));
                    return unlocked;
                }
                let span_s = (local_ns - t0) as f64 / 1e9;
                let min_span_s = (0.016 / self.ki).min(1000.0);
                if span_s * 1.001 < min_span_s {
                    return unlocked;
                }
                // The offset's slope is the local clock's frequency error relative to
                // the master (corrected for the rate already applied). In i128: two
                // offsets of opposite sign may differ by more than an i64 holds.
                let slope = (offset_ns as i128 - o0 as i128) as f64 / (local_ns - t0) as f64;
                self.drift = self.clamp(self.drift + (1e9 - self.drift) * slope);
                self.stage = Stage::Running;
                let over = |th: u64| th != 0 && offset_ns.unsigned_abs() > th;
                let jump = (self.first_update && over(self.cfg.first_step_threshold_ns)) || over(self.cfg.step_threshold_ns);
                if jump {
                    ServoOutput { state: ServoState::Jump, rate_ppb: -self.drift, step_ns: offset_ns.saturating_neg() }
                } else {
                    ServoOutput { state: ServoState::Locked, rate_ppb: -self.drift, step_ns: 0 }
                }
            }
            Stage::Running => {
                if self.cfg.step_threshold_ns != 0 && offset_ns.unsigned_abs() > self.cfg.step_threshold_ns {
                    self.reset();
                    return unlocked;
                }
                let i_term = self.ki * offset_ns as f64;
                let raw = self.kp * offset_ns as f64 + self.drift + i_term;
                let out = self.clamp(raw);
                if out == raw {
                    // Anti-windup: integrate only while the output is not saturated.
                    self.drift += i_term;
                }
                ServoOutput { state: ServoState::Locked, rate_ppb: -out, step_ns: 0 }
            }
        };
        if out.state != ServoState::Unlocked {
            self.first_update = false;
        }
        out
    }
}

/// Samples in a row that must agree before the servo takes them: for its
/// first estimate (whose step may be large), and to follow the master's time
/// when it moved for good.
pub const AGREE: u32 = 3;

/// Rate error the spike filter allows for between two samples, ppb: 500 ppm,
/// five times a common crystal's tolerance (the 1 ms floor covers the rest).
pub const SPIKE_SLEW_PPB: u64 = 500_000;

/// The spike threshold for a lock threshold: max(1 ms, 16 × lock threshold).
/// Far beyond a locked servo's spread, far below a forged time stamp's.
pub fn spike_threshold_ns(lock_threshold_ns: u64) -> u64 {
    lock_threshold_ns.saturating_mul(16).max(1_000_000)
}

/// Consecutive samples that agree with each other: how many, and the last.
#[derive(Debug, Clone, Copy)]
struct Run {
    n: u32,
    offset_ns: i64,
    local_ns: u64,
}

impl Run {
    fn one(offset_ns: i64, local_ns: u64) -> Run {
        Run { n: 1, offset_ns, local_ns }
    }
    fn extend(self, s: Run) -> Run {
        Run { n: self.n.saturating_add(1), ..s }
    }
}

/// The [`PiServo`] behind a spike filter: one forged or held-up time stamp
/// must not step the clock or pin its rate.
///
/// The rule: two samples agree when their offsets differ by at most the
/// spike threshold plus [`SPIKE_SLEW_PPB`] of the time between them. The
/// servo gets its first sample only once [`AGREE`] samples in a row agree
/// (so its first estimate, and the step it may ask for, follows a consistent
/// master, however large the offset); from then on a sample that disagrees
/// with the last one the servo took (after the step the servo asked for) is
/// an outlier: counted, not fed. [`AGREE`] outliers in a row that agree with
/// each other are the master's new time: the servo restarts on them.
#[derive(Debug, Clone)]
pub struct SpikeFilter {
    servo: PiServo,
    threshold_ns: u64,
    /// The samples the servo follows (before its first sample: the run being collected).
    main: Option<Run>,
    /// Samples that disagree with `main`, in a run of their own.
    other: Option<Run>,
    /// The servo has had a sample.
    fed: bool,
    outliers: u64,
}

impl SpikeFilter {
    /// A fresh servo behind a filter with spike threshold `threshold_ns` (see [`spike_threshold_ns`]).
    pub fn new(cfg: ServoConfig, threshold_ns: u64) -> SpikeFilter {
        SpikeFilter { servo: PiServo::new(cfg), threshold_ns, main: None, other: None, fed: false, outliers: 0 }
    }

    /// The servo.
    pub fn servo(&self) -> &PiServo {
        &self.servo
    }

    /// Samples not fed to the servo because they disagreed with the samples it follows.
    pub fn outliers(&self) -> u64 {
        self.outliers + self.other.map_or(0, |r| r.n as u64)
    }

    fn agree(&self, a: &Run, b: &Run) -> bool {
        let d = (b.offset_ns as i128 - a.offset_ns as i128).unsigned_abs();
        let slew = b.local_ns.abs_diff(a.local_ns) as u128 * SPIKE_SLEW_PPB as u128 / 1_000_000_000;
        d <= self.threshold_ns as u128 + slew
    }

    /// Feeds one measurement (as [`PiServo::sample`]); `None`: not fed (an
    /// outlier, or agreement still being collected): apply nothing.
    pub fn sample(&mut self, offset_ns: i64, local_ns: u64) -> Option<ServoOutput> {
        let s = Run::one(offset_ns, local_ns);
        let Some(main) = self.main else {
            self.main = Some(s);
            return self.feed();
        };
        if self.agree(&main, &s) {
            self.main = Some(main.extend(s));
            // The run that challenged `main` died out: it was spikes.
            self.outliers += self.other.take().map_or(0, |r| r.n as u64);
            return self.feed();
        }
        let other = match self.other {
            Some(o) if self.agree(&o, &s) => o.extend(s),
            Some(o) => {
                self.outliers += o.n as u64;
                s
            }
            None => s,
        };
        if other.n < AGREE {
            self.other = Some(other);
            return None;
        }
        // AGREE samples in a row tell another time than `main`'s. Before the
        // servo's first sample, `main` was the odd one out; after, the master's
        // time moved for good: start over on it, a step allowed as at the start.
        if self.fed {
            self.servo.restart();
        } else {
            self.outliers += main.n as u64;
        }
        self.main = Some(other);
        self.other = None;
        self.feed()
    }

    /// Feeds the last sample of `main` once enough agree; after a step, the
    /// offset the servo asked for is the one the next sample must agree with.
    fn feed(&mut self) -> Option<ServoOutput> {
        let main = self.main.as_mut()?;
        if main.n < AGREE {
            return None;
        }
        let out = self.servo.sample(main.offset_ns, main.local_ns);
        self.fed = true;
        if out.state == ServoState::Jump {
            main.offset_ns = main.offset_ns.saturating_add(out.step_ns);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gains_follow_the_interval() {
        let g = PiGains::linuxptp_hardware();
        let (kp, ki) = g.for_interval(1.0);
        assert!((kp - 0.7).abs() < 1e-12 && (ki - 0.3).abs() < 1e-12);
        let (kp, ki) = g.for_interval(0.125);
        assert!((kp - 0.7 * 0.125f64.powf(-0.3)).abs() < 1e-9);
        assert!((ki - 0.3 * 0.125f64.powf(0.4)).abs() < 1e-9);
    }

    #[test]
    fn estimates_drift_then_jumps() {
        let mut s = PiServo::new(ServoConfig::linuxptp(0.125));
        assert_eq!(s.sample(37_000, 1_000_000_000).state, ServoState::Unlocked);
        // 50 ppm fast: the offset grows 50 ns per ms.
        let out = s.sample(37_000 + 12_500, 1_250_000_000);
        assert_eq!(out.state, ServoState::Jump);
        assert_eq!(out.step_ns, -49_500);
        assert!((out.rate_ppb + 50_000.0).abs() < 1.0, "{out:?}");
        assert_eq!(s.sample(100, 1_375_000_000).state, ServoState::Locked);
    }

    #[test]
    fn extreme_offsets_neither_overflow_nor_wrap() {
        // Offsets of opposite extremes: their difference and the step's sign overflow an i64.
        let mut s = PiServo::new(ServoConfig::linuxptp(0.125));
        s.sample(i64::MAX, 1_000_000_000);
        let out = s.sample(i64::MIN, 2_000_000_000);
        assert_eq!((out.state, out.step_ns), (ServoState::Jump, i64::MAX));
        assert!(out.rate_ppb.abs() <= crate::clock::MAX_RATE_PPB as f64, "{out:?}");
        let mut s = PiServo::new(ServoConfig::linuxptp(0.125));
        s.sample(i64::MIN, 1_000_000_000);
        assert_eq!(s.sample(i64::MAX, 2_000_000_000).step_ns, -i64::MAX);
    }

    /// A slave 300 µs ahead and 30 ppm fast, a sample every 250 ms: (offset, local time) of sample `k`.
    fn genuine(k: u64) -> (i64, u64) {
        let t = 1_000_000_000 + k * 250_000_000;
        (300_000 + (k * 250_000_000) as i64 * 30 / 1_000_000, t)
    }

    #[test]
    fn a_forged_sample_never_reaches_the_first_step() {
        // A Sync forged with originTimestamp 0 s reads as the slave being 1.7e18 ns ahead;
        // landing as the servo's second sample it would set the first step.
        let forged = -1_700_000_000_000_000_000i64;
        let mut f = SpikeFilter::new(ServoConfig::linuxptp(0.25), spike_threshold_ns(20_000));
        let mut outs = Vec::new();
        for k in 0..5 {
            // After the step (sample 3) the genuine offsets are small.
            let (o, t) = if k < 4 { genuine(k) } else { (1_000, genuine(k).1) };
            outs.push(f.sample(o, t));
            if k == 0 || k == 3 {
                assert_eq!(f.sample(forged, t + 1_000_000), None, "the forgery after sample {k} is not fed");
            }
        }
        assert_eq!(f.outliers(), 2);
        // Samples 0 and 1 collect agreement, 2 is the servo's first, 3 its second: the step.
        assert_eq!(&outs[..2], &[None, None]);
        assert_eq!(outs[2].map(|o| o.state), Some(ServoState::Unlocked));
        let jump = outs[3].expect("fed");
        assert_eq!(jump.state, ServoState::Jump);
        assert_eq!(jump.step_ns, -genuine(3).0, "the step is the genuine offset's");
        assert!((jump.rate_ppb + 30_000.0).abs() < 1.0, "{jump:?}");
        assert_eq!(outs[4].map(|o| o.state), Some(ServoState::Locked), "after the step, the next genuine sample agrees");
    }

    #[test]
    fn a_forged_first_sample_is_outvoted() {
        let mut f = SpikeFilter::new(ServoConfig::linuxptp(0.25), spike_threshold_ns(20_000));
        assert_eq!(f.sample(-1_700_000_000_000_000_000, 900_000_000), None);
        let outs: Vec<_> = (0..4).map(genuine).map(|(o, t)| f.sample(o, t).map(|o| o.state)).collect();
        assert_eq!(outs, [None, None, Some(ServoState::Unlocked), Some(ServoState::Jump)]);
        assert_eq!(f.outliers(), 1);
    }

    #[test]
    fn a_spike_while_locked_does_not_move_the_rate() {
        let mut f = SpikeFilter::new(ServoConfig::linuxptp(0.25), spike_threshold_ns(20_000));
        for k in 0..4 {
            let (o, t) = genuine(k);
            f.sample(o, t);
        }
        // Locked and steered: the offsets are small now.
        let t = genuine(4).1;
        let locked = f.sample(2_000, t).expect("fed");
        assert_eq!(locked.state, ServoState::Locked);
        for spike in [5_000_000, -1_700_000_000_000_000_000, i64::MIN, i64::MAX] {
            assert_eq!(f.sample(spike, t + 100_000_000), None, "{spike}");
        }
        assert_eq!(f.outliers(), 4);
        let next = f.sample(1_500, t + 250_000_000).expect("fed");
        assert_eq!(next.state, ServoState::Locked);
        assert!((next.rate_ppb - locked.rate_ppb).abs() < 5_000.0, "{locked:?} then {next:?}");
    }

    #[test]
    fn a_large_consistent_offset_still_steps() {
        // 2 s ahead: the step follows the master once three samples agree.
        let mut f = SpikeFilter::new(ServoConfig::linuxptp(0.25), spike_threshold_ns(20_000));
        let outs: Vec<_> = (0..4u64).map(|k| f.sample(2_000_000_000 + k as i64 * 7_500, 1_000_000_000 + k * 250_000_000)).collect();
        assert_eq!(outs[..3].iter().map(|o| o.map(|o| o.state)).collect::<Vec<_>>(), [None, None, Some(ServoState::Unlocked)]);
        let jump = outs[3].expect("fed");
        assert_eq!((jump.state, jump.step_ns), (ServoState::Jump, -2_000_022_500));
        assert_eq!(f.outliers(), 0);
    }

    #[test]
    fn a_lasting_change_of_the_masters_time_is_followed() {
        let mut f = SpikeFilter::new(ServoConfig::linuxptp(0.25), spike_threshold_ns(20_000));
        for k in 0..4 {
            let (o, t) = genuine(k);
            f.sample(o, t);
        }
        let t = genuine(4).1;
        assert_eq!(f.sample(1_000, t).map(|o| o.state), Some(ServoState::Locked));
        // The master steps its clock by 50 ms: two samples are outliers, the third starts over.
        let offsets = [-50_000_000, -50_000_000, -50_000_000, -50_000_000, 2_000];
        let shifted: Vec<_> = (1..=5u64).zip(offsets).map(|(k, o)| f.sample(o, t + k * 250_000_000).map(|o| o.state)).collect();
        assert_eq!(shifted, [None, None, Some(ServoState::Unlocked), Some(ServoState::Jump), Some(ServoState::Locked)]);
        assert_eq!(f.outliers(), 0, "a run that became the master's time was no spike");
    }
}

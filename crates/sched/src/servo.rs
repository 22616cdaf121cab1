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
    pub fn linuxptp_hardware() -> PiGains {
        PiGains { kp_scale: 0.7, kp_exponent: -0.3, kp_norm_max: 0.7, ki_scale: 0.3, ki_exponent: 0.4, ki_norm_max: 0.3 }
    }
    /// linuxptp's defaults with software time stamps (kp scale 0.1, ki scale 0.001).
    pub fn linuxptp_software() -> PiGains {
        PiGains { kp_scale: 0.1, ki_scale: 0.001, ..PiGains::linuxptp_hardware() }
    }
    /// (kp, ki) for a sync interval of `interval_s` seconds.
    pub fn for_interval(&self, interval_s: f64) -> (f64, f64) {
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
                // the master (corrected for the rate already applied).
                let slope = (offset_ns - o0) as f64 / (local_ns - t0) as f64;
                self.drift = self.clamp(self.drift + (1e9 - self.drift) * slope);
                self.stage = Stage::Running;
                let over = |th: u64| th != 0 && offset_ns.unsigned_abs() > th;
                let jump = (self.first_update && over(self.cfg.first_step_threshold_ns)) || over(self.cfg.step_threshold_ns);
                if jump {
                    ServoOutput { state: ServoState::Jump, rate_ppb: -self.drift, step_ns: -offset_ns }
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
}

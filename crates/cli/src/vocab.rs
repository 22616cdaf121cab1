//! One command-line vocabulary for every `detpath` command: the value
//! parsers and help texts of the flags that name the same idea in several
//! commands, so each idea has one spelling, one unit rule and one range.
//!
//! - **Durations and periods** carry their unit in the value: `5s`, `250ms`,
//!   `100us` (or `100µs`), `2500ns`, fractions allowed (`2.5ms`). A bare
//!   number keeps the unit that flag had before units were accepted (so
//!   scripts keep working); each flag's help names it ("a bare number is
//!   seconds"). The flag type is [`std::time::Duration`] (the parsers
//!   [`secs`], [`millis`], [`micros`], [`nanos`]), or [`Offset`] for a signed
//!   injected clock offset. Flags that used to carry the unit in their name
//!   (`--timeout-ms`, `--slot-ns`, `--fair-slice-us`, ...) are now named
//!   without it; the old names stay as hidden aliases with their old unit.
//! - **Warm-up** is one type, [`Warmup`]: a duration with a unit (`2s`), or
//!   where a command counts rounds, a bare number of rounds (`1000`).
//! - **Rates** say what they count: `--rate` of `detpath bench` is a bit
//!   rate (`80`, `80mbit`, `1.6gbit`; a bare number is Mbit/s, [`mbit_rate`]),
//!   `--rate` of `detpath pubsub ping|pub` a sample rate (`1000`, `1000/s`,
//!   `1khz`; [`per_second`]). Each refuses the other's unit.
//! - **`--rt-priority`** is a SCHED_FIFO priority 1..=99 everywhere
//!   ([`rt_priority`]); where a command can also run its threads without
//!   real-time scheduling, `0` or `off` says so ([`rt_priority_or_off`]).
//! - **`--datapath`** names datapaths everywhere (a comma list where a
//!   command runs several), **`--duration`** is how long a run lasts,
//!   **`--json`** is on every command that reports something, and its help
//!   says whether it prints one JSON document or JSON lines (one object per
//!   line, as they happen).
//! - Every command's `--help` ends with its exit codes.

use std::time::Duration;

/// The unit a bare number means for one flag (the one duration parser of
/// the workspace is `detpath_sys::units`; this module only picks units).
pub use detpath_sys::units::Unit as Bare;

/// A duration with a unit (`5s`, `250ms`, `100us`, `2500ns`), a bare
/// number being `bare`; zero is allowed, negative values are not.
pub fn parse_duration(s: &str, bare: Bare) -> Result<Duration, String> {
    detpath_sys::units::parse_duration(s, bare).map_err(|e| e.to_string())
}

/// Value parser: a duration, a bare number in seconds.
pub fn secs(s: &str) -> Result<Duration, String> {
    parse_duration(s, Bare::Secs)
}

/// Value parser: a duration, a bare number in milliseconds.
pub fn millis(s: &str) -> Result<Duration, String> {
    parse_duration(s, Bare::Millis)
}

/// Value parser: a duration, a bare number in microseconds.
pub fn micros(s: &str) -> Result<Duration, String> {
    parse_duration(s, Bare::Micros)
}

/// Value parser: a duration, a bare number in nanoseconds.
pub fn nanos(s: &str) -> Result<Duration, String> {
    parse_duration(s, Bare::Nanos)
}

/// Nanoseconds of a duration as the libraries take them (saturating).
pub fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A signed time offset (an error injected into a clock): `-37us`, `2ms`;
/// a bare number is nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset(pub i64);

impl Offset {
    /// The offset in nanoseconds.
    pub fn ns(self) -> i64 {
        self.0
    }
}

/// Value parser of [`Offset`].
pub fn offset(s: &str) -> Result<Offset, String> {
    let t = s.trim();
    let (neg, rest) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let d = parse_duration(rest, Bare::Nanos)?;
    let v = i64::try_from(d.as_nanos()).map_err(|_| format!("`{s}`: too large"))?;
    Ok(Offset(if neg { -v } else { v }))
}

/// Warm-up before the measured part of a run: a number of rounds or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warmup {
    /// This many rounds.
    Rounds(u64),
    /// For this long.
    Time(Duration),
}

impl Warmup {
    /// Rounds of `period_ns` each this warm-up lasts.
    pub fn rounds(self, period_ns: u64) -> u64 {
        match self {
            Warmup::Rounds(n) => n,
            Warmup::Time(d) => (ns(d) as f64 / period_ns.max(1) as f64).round() as u64,
        }
    }
}

/// Value parser of [`Warmup`]: a duration with a unit (`2s`, `300ms`), or a
/// bare number of rounds (`1000`; also `1000rounds`).
pub fn warmup_rounds(s: &str) -> Result<Warmup, String> {
    let t = s.trim();
    let n = t.strip_suffix("rounds").or_else(|| t.strip_suffix("round")).unwrap_or(t).trim();
    if let Ok(r) = n.parse::<u64>() {
        return Ok(Warmup::Rounds(r));
    }
    match t.contains(|c: char| c.is_alphabetic()) {
        true => parse_duration(t, Bare::Secs).map(Warmup::Time),
        false => Err(format!("`{s}`: a number of rounds (1000) or a duration with a unit (2s, 300ms)")),
    }
}

/// Value parser of a bit rate in Mbit/s: `80`, `80mbit`, `80Mbit/s`,
/// `1.6gbit`, `500kbit` (a bare number is Mbit/s). A sample rate (`/s`,
/// `hz`) is refused: this rate counts bits.
pub fn mbit_rate(s: &str) -> Result<f64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let counts_bits = |u: &str| u.contains('b');
    let at = lower.find(|c: char| c.is_ascii_alphabetic() || c == '/').unwrap_or(lower.len());
    let (num, unit) = lower.split_at(at);
    let unit = unit.trim();
    let bits = unit.strip_suffix("/s").or_else(|| unit.strip_suffix("ps")).unwrap_or(unit);
    let scale = match bits {
        "" if unit.is_empty() => 1.0,
        "mbit" | "mb" => 1.0,
        "gbit" | "gb" => 1000.0,
        "kbit" | "kb" => 0.001,
        _ if !counts_bits(unit) => return Err(format!("`{s}`: a bit rate such as 80 (Mbit/s), 80mbit or 1.6gbit (this rate counts bits, not samples)")),
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (kbit, mbit, gbit)")),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("`{s}`: a bit rate such as 80 (Mbit/s), 80mbit or 1.6gbit"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("`{s}`: the rate must be positive"));
    }
    Ok(v * scale)
}

/// Value parser of a sample rate per second: `1000`, `1000/s`, `1000hz`,
/// `1khz` (a bare number is per second; 0 where the command gives it a
/// meaning). A bit rate (`mbit`) is refused: this rate counts samples.
pub fn per_second(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = t.strip_suffix("khz") {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix("hz").or_else(|| t.strip_suffix("/s")) {
        (n, 1.0)
    } else {
        (t.as_str(), 1.0)
    };
    let v: f64 =
        num.trim().parse().map_err(|_| format!("`{s}`: a sample rate such as 1000, 1000/s or 1khz (this rate counts samples per second, not bits)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("`{s}`: the rate must be >= 0"));
    }
    Ok(v * scale)
}

/// Value parser of `--rt-priority`: a SCHED_FIFO priority, 1..=99.
pub fn rt_priority(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(p @ 1..=99) => Ok(p),
        _ => Err(format!("`{s}`: a SCHED_FIFO priority 1..=99")),
    }
}

/// Value parser of `--rt-priority` where threads may also run without
/// real-time scheduling: 1..=99, or `0` / `off` (not real-time; returned as 0).
pub fn rt_priority_or_off(s: &str) -> Result<u8, String> {
    match s.trim() {
        "off" | "0" => Ok(0),
        t => rt_priority(t).map_err(|_| format!("`{s}`: a SCHED_FIFO priority 1..=99, or off (0)")),
    }
}

/// Exit codes shared by most commands: a line for `after_help`.
pub const EXIT_0_2: &str = "Exit codes: 0 done; 2 an error (bad arguments, permissions, a missing package); 101 a crash (what it changed is undone first).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_carry_their_unit_and_a_bare_number_keeps_the_flags_unit() {
        assert_eq!(secs("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(secs("5").unwrap(), Duration::from_secs(5));
        assert_eq!(secs("0.3").unwrap(), Duration::from_millis(300));
        assert_eq!(millis("100").unwrap(), Duration::from_millis(100));
        assert_eq!(millis("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(micros("100").unwrap(), Duration::from_micros(100));
        assert_eq!(micros("2.5ms").unwrap(), Duration::from_micros(2500));
        assert_eq!(micros("100µs").unwrap(), Duration::from_micros(100));
        assert_eq!(nanos("10000").unwrap(), Duration::from_micros(10));
        assert_eq!(nanos("10us").unwrap(), Duration::from_micros(10));
        assert_eq!(secs("0").unwrap(), Duration::ZERO);
        assert!(secs("fast").unwrap_err().contains("duration `fast`"));
        assert!(secs("10h").unwrap_err().contains("unknown unit"));
        assert!(secs("-5s").is_err());
        assert!(secs("nan").is_err());
    }

    #[test]
    fn offsets_are_signed() {
        assert_eq!(offset("-37us").unwrap(), Offset(-37_000));
        assert_eq!(offset("37000").unwrap(), Offset(37_000));
        assert_eq!(offset("+1ms").unwrap(), Offset(1_000_000));
        assert!(offset("-x").is_err());
    }

    #[test]
    fn warmup_is_rounds_or_a_time() {
        assert_eq!(warmup_rounds("1000").unwrap(), Warmup::Rounds(1000));
        assert_eq!(warmup_rounds("1000rounds").unwrap(), Warmup::Rounds(1000));
        assert_eq!(warmup_rounds("2s").unwrap(), Warmup::Time(Duration::from_secs(2)));
        assert_eq!(warmup_rounds("2s").unwrap().rounds(100_000), 20_000);
        assert_eq!(warmup_rounds("0").unwrap().rounds(100_000), 0);
        assert!(warmup_rounds("1.5").is_err(), "a fraction of a round has no meaning");
        assert!(warmup_rounds("soon").is_err());
    }

    #[test]
    fn rates_say_what_they_count() {
        assert_eq!(mbit_rate("80").unwrap(), 80.0);
        assert_eq!(mbit_rate("80mbit").unwrap(), 80.0);
        assert_eq!(mbit_rate("80Mbit/s").unwrap(), 80.0);
        assert_eq!(mbit_rate("80mbps").unwrap(), 80.0);
        assert_eq!(mbit_rate("1.6gbit").unwrap(), 1600.0);
        assert!(mbit_rate("1000/s").unwrap_err().contains("not samples"));
        assert!(mbit_rate("1000hz").unwrap_err().contains("not samples"));
        assert!(mbit_rate("0").is_err());
        assert_eq!(per_second("1000").unwrap(), 1000.0);
        assert_eq!(per_second("1000/s").unwrap(), 1000.0);
        assert_eq!(per_second("2khz").unwrap(), 2000.0);
        assert_eq!(per_second("0").unwrap(), 0.0);
        assert!(per_second("80mbit").unwrap_err().contains("not bits"));
    }

    #[test]
    fn one_rt_priority_range() {
        assert_eq!(rt_priority("1").unwrap(), 1);
        assert_eq!(rt_priority("99").unwrap(), 99);
        assert!(rt_priority("0").is_err());
        assert!(rt_priority("100").is_err());
        assert_eq!(rt_priority_or_off("off").unwrap(), 0);
        assert_eq!(rt_priority_or_off("0").unwrap(), 0);
        assert_eq!(rt_priority_or_off("50").unwrap(), 50);
        assert!(rt_priority_or_off("100").is_err());
    }
}


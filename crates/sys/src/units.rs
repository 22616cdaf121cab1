//! Durations as people write them: `100us`, `2.5ms`, `5s`, `250000ns`,
//! `1m`. One parser for the whole workspace (spec keys, CLI flags, bench
//! thresholds), so `5ms` means the same everywhere.
//!
//! A number without a unit keeps the meaning its flag or key always had
//! (scripts written before units were accepted keep working): the caller
//! says which [`Unit`] a bare number is in.
//!
//! ```
//! use detpath_sys::units::{parse_duration, Unit};
//! use std::time::Duration;
//! assert_eq!(parse_duration("100us", Unit::Nanos)?, Duration::from_micros(100));
//! assert_eq!(parse_duration("2.5ms", Unit::Micros)?, Duration::from_micros(2500));
//! assert_eq!(parse_duration("42", Unit::Micros)?, Duration::from_micros(42)); // bare: the caller's unit
//! # Ok::<(), detpath_sys::units::DurationError>(())
//! ```

use std::fmt;
use std::time::Duration;

/// A unit of time: what a suffix means, or what a bare number is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// `ns`.
    Nanos,
    /// `us` or `µs`.
    Micros,
    /// `ms`.
    Millis,
    /// `s`.
    Secs,
    /// `m` or `min`.
    Mins,
}

impl Unit {
    /// Nanoseconds in one of this unit.
    pub const fn ns(self) -> u64 {
        match self {
            Unit::Nanos => 1,
            Unit::Micros => 1_000,
            Unit::Millis => 1_000_000,
            Unit::Secs => 1_000_000_000,
            Unit::Mins => 60_000_000_000,
        }
    }

    /// The unit a suffix names (`ns`, `us`, `µs`, `ms`, `s`, `m`, `min`).
    pub(crate) fn from_suffix(suffix: &str) -> Option<Unit> {
        Some(match suffix {
            "ns" => Unit::Nanos,
            "us" | "µs" => Unit::Micros,
            "ms" => Unit::Millis,
            "s" => Unit::Secs,
            "m" | "min" => Unit::Mins,
            _ => return None,
        })
    }

    /// The suffix written for this unit.
    pub const fn suffix(self) -> &'static str {
        match self {
            Unit::Nanos => "ns",
            Unit::Micros => "us",
            Unit::Millis => "ms",
            Unit::Secs => "s",
            Unit::Mins => "m",
        }
    }
}

/// A duration that does not parse: the text and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "duration `{}`: {} (write e.g. 100us, 2.5ms, 5s; units ns, us, ms, s, m)", self.input, self.reason)
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration: a non-negative number (decimals allowed) and an
/// optional unit suffix (`ns`, `us`/`µs`, `ms`, `s`, `m`/`min`, spaces
/// allowed between). A bare number is in `bare`. The result is rounded to
/// the nanosecond and must fit in a `u64` of ns (584 years).
pub fn parse_duration(text: &str, bare: Unit) -> Result<Duration, DurationError> {
    parse_duration_ns(text, bare).map(Duration::from_nanos)
}

/// [`parse_duration`] in nanoseconds.
pub fn parse_duration_ns(text: &str, bare: Unit) -> Result<u64, DurationError> {
    let bad = |reason| DurationError { input: text.to_string(), reason };
    let t = text.trim();
    let split = t.find(|c: char| c.is_alphabetic()).unwrap_or(t.len());
    let (num, suffix) = (t[..split].trim(), t[split..].trim());
    let unit = if suffix.is_empty() { bare } else { Unit::from_suffix(suffix).ok_or(bad("unknown unit"))? };
    if num.is_empty() {
        return Err(bad("no number"));
    }
    if !num.chars().all(|c| c.is_ascii_digit() || c == '.') || num.matches('.').count() > 1 || num == "." {
        return Err(bad("not a non-negative number"));
    }
    let scale = unit.ns();
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: u128 = if int.is_empty() { 0 } else { int.parse().map_err(|_| bad("too large"))? };
    // The fraction exactly, in units of 10^-digits; digits past the ns are rounded.
    let digits = frac.len().min(30) as u32;
    let frac_v: u128 = if digits == 0 { 0 } else { frac[..digits as usize].parse().map_err(|_| bad("not a non-negative number"))? };
    let den = 10u128.pow(digits);
    let ns = int.checked_mul(u128::from(scale)).ok_or(bad("too large"))? + (frac_v * u128::from(scale) + den / 2) / den;
    u64::try_from(ns).map_err(|_| bad("too large"))
}

/// Formats ns with the largest unit that keeps it exact (`1500us`, `5s`,
/// `250ns`): what [`parse_duration`] reads back to the same value.
pub fn format_ns(ns: u64) -> String {
    for unit in [Unit::Mins, Unit::Secs, Unit::Millis, Unit::Micros] {
        if ns != 0 && ns.checked_rem(unit.ns()) == Some(0) {
            return format!("{}{}", ns / unit.ns(), unit.suffix());
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(s: &str, bare: Unit) -> Result<u64, DurationError> {
        parse_duration_ns(s, bare)
    }

    #[test]
    fn suffixes_name_their_unit() {
        assert_eq!(ns("250000ns", Unit::Secs), Ok(250_000));
        assert_eq!(ns("100us", Unit::Secs), Ok(100_000));
        assert_eq!(ns("100µs", Unit::Secs), Ok(100_000));
        assert_eq!(ns("5ms", Unit::Nanos), Ok(5_000_000));
        assert_eq!(ns("1s", Unit::Nanos), Ok(1_000_000_000));
        assert_eq!(ns("2m", Unit::Nanos), Ok(120_000_000_000));
        assert_eq!(ns("2min", Unit::Nanos), Ok(120_000_000_000));
        assert_eq!(ns(" 3 ms ", Unit::Nanos), Ok(3_000_000));
    }

    #[test]
    fn a_bare_number_is_in_the_callers_unit() {
        assert_eq!(ns("42", Unit::Nanos), Ok(42));
        assert_eq!(ns("42", Unit::Micros), Ok(42_000));
        assert_eq!(ns("42", Unit::Millis), Ok(42_000_000));
        assert_eq!(ns("42", Unit::Secs), Ok(42_000_000_000));
        assert_eq!(parse_duration("0", Unit::Secs), Ok(Duration::ZERO));
    }

    #[test]
    fn decimals_are_exact_to_the_ns() {
        assert_eq!(ns("2.5ms", Unit::Nanos), Ok(2_500_000));
        assert_eq!(ns("0.2ms", Unit::Nanos), Ok(200_000));
        assert_eq!(ns(".5s", Unit::Nanos), Ok(500_000_000));
        assert_eq!(ns("0.001s", Unit::Nanos), Ok(1_000_000));
        assert_eq!(ns("1.5", Unit::Micros), Ok(1_500));
        assert_eq!(ns("0.0004us", Unit::Nanos), Ok(0), "rounded to the ns");
        assert_eq!(ns("0.0006us", Unit::Nanos), Ok(1));
        assert_eq!(ns("1.", Unit::Secs), Ok(1_000_000_000));
    }

    #[test]
    fn nonsense_is_refused_with_the_reason() {
        for (s, why) in [
            ("", "no number"),
            ("ms", "no number"),
            ("5h", "unknown unit"),
            ("5 sec", "unknown unit"),
            ("-5ms", "not a non-negative number"),
            ("1e3us", "unknown unit"),
            ("1.2.3s", "not a non-negative number"),
            (".", "not a non-negative number"),
            ("99999999999999999999999s", "too large"),
            ("600000000000m", "too large"),
        ] {
            let e = ns(s, Unit::Micros).unwrap_err();
            assert_eq!(e.reason, why, "{s}");
            assert!(e.to_string().contains(s), "{e}");
        }
    }

    #[test]
    fn formatted_durations_read_back() {
        for v in [0, 1, 999, 1_000, 1_500_000, 5_000_000_000, 120_000_000_000, 123_456_789] {
            assert_eq!(ns(&format_ns(v), Unit::Nanos), Ok(v), "{}", format_ns(v));
        }
        assert_eq!(format_ns(1_500_000), "1500us");
        assert_eq!(format_ns(5_000_000_000), "5s");
    }
}

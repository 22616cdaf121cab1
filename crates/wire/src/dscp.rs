//! Differentiated Services code points (RFC 2474, names from RFC 4594) and
//! the default mapping from a DDS TRANSPORT_PRIORITY to a DSCP.
//!
//! The mapping is what a writer's datagrams carry unless the user
//! configures another ([`PriorityMap::parse`]); the receiving host's
//! classifier reads the same DSCP, so both ends agree without talking.
//! Priority 0 (DDS's default) is best effort, DSCP 0; any priority above 0
//! gives a DSCP other than 0, higher priorities the more urgent classes:
//!
//! | TRANSPORT_PRIORITY | DSCP       |
//! |--------------------|------------|
//! | ≤ 0                | CS0 (0)    |
//! | 1 – 9              | AF11 (10)  |
//! | 10 – 19            | AF21 (18)  |
//! | 20 – 29            | AF31 (26)  |
//! | 30 – 39            | AF41 (34)  |
//! | ≥ 40               | EF (46)    |

use core::fmt;

/// The named code points, by name and value.
pub const NAMED: &[(&str, u8)] = &[
    ("CS0", 0),
    ("CS1", 8),
    ("AF11", 10),
    ("AF12", 12),
    ("AF13", 14),
    ("CS2", 16),
    ("AF21", 18),
    ("AF22", 20),
    ("AF23", 22),
    ("CS3", 24),
    ("AF31", 26),
    ("AF32", 28),
    ("AF33", 30),
    ("CS4", 32),
    ("AF41", 34),
    ("AF42", 36),
    ("AF43", 38),
    ("CS5", 40),
    ("VA", 44),
    ("EF", 46),
    ("CS6", 48),
    ("CS7", 56),
];

/// The largest DSCP (six bits).
pub const MAX: u8 = 63;

/// A DSCP from a name (`EF`, `af41`, case-insensitive) or a number 0..=63.
pub fn parse(s: &str) -> Result<u8, String> {
    let t = s.trim();
    if let Some(&(_, v)) = NAMED.iter().find(|(n, _)| n.eq_ignore_ascii_case(t)) {
        return Ok(v);
    }
    match t.parse::<u8>() {
        Ok(v) if v <= MAX => Ok(v),
        _ => Err(format!("`{t}` is not a DSCP: a number 0..=63 or a name (CS0..CS7, AF11..AF43, EF, VA)")),
    }
}

/// The name of a DSCP, when it has one.
pub fn name(dscp: u8) -> Option<&'static str> {
    NAMED.iter().find(|(_, v)| *v == dscp).map(|(n, _)| *n)
}

/// The DSCP of a priority by the default mapping (table above).
pub fn default_for_priority(priority: i32) -> u8 {
    PriorityMap::default().dscp(priority)
}

/// From TRANSPORT_PRIORITY to DSCP: steps of (lowest priority, DSCP),
/// ascending; a priority takes the DSCP of the highest step at or below it,
/// and priorities below the first step take DSCP 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityMap {
    steps: Vec<(i32, u8)>,
}

impl Default for PriorityMap {
    fn default() -> PriorityMap {
        PriorityMap { steps: vec![(i32::MIN, 0), (1, 10), (10, 18), (20, 26), (30, 34), (40, 46)] }
    }
}

impl PriorityMap {
    /// The DSCP of `priority`.
    pub fn dscp(&self, priority: i32) -> u8 {
        self.steps.iter().rev().find(|(from, _)| priority >= *from).map_or(0, |&(_, d)| d)
    }

    /// The steps, ascending by their lowest priority.
    pub fn steps(&self) -> &[(i32, u8)] {
        &self.steps
    }

    /// A map from `PRIORITY=DSCP` pairs, comma separated, e.g.
    /// `0=CS0,1=AF21,50=EF` (each DSCP a name or a number). Priorities below
    /// the lowest given take DSCP 0. Refused: an empty list, a repeated
    /// priority, a DSCP above 63, and a map that gives a priority above 0
    /// DSCP 0 (the contract: any priority above 0 is marked).
    pub fn parse(s: &str) -> Result<PriorityMap, String> {
        let steps = parse_steps(s, "priority map", "DSCP", ("10=AF41", "0=CS0,1=AF21,40=EF"), |_, d| parse(d))?;
        let map = PriorityMap { steps };
        // Every step at or above priority 1 (and priority 1 itself) must mark.
        let first_positive = map.dscp(1);
        if first_positive == 0 || map.steps.iter().any(|&(p, d)| p > 0 && d == 0) {
            return Err("this map gives a priority above 0 DSCP 0: every priority above 0 must be marked (its datagrams are told apart by it)".into());
        }
        Ok(map)
    }
}

/// `PRIORITY=VALUE` pairs, comma separated, ascending by priority: the shape
/// of [`PriorityMap::parse`] and of the pub-sub's priority-to-class map.
/// `what` names the map and `value` the right-hand side in messages
/// (`priority map`, `DSCP`); `examples` are one pair and one whole list;
/// `parse_value` gets the pair and its value. Refused: a pair without `=`, a
/// priority that is not an integer, a repeated priority, an empty list.
pub fn parse_steps<T>(
    s: &str,
    what: &str,
    value: &str,
    examples: (&str, &str),
    parse_value: impl Fn(&str, &str) -> Result<T, String>,
) -> Result<Vec<(i32, T)>, String> {
    let mut steps: Vec<(i32, T)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (p, v) = part.split_once('=').ok_or_else(|| format!("`{part}`: expected PRIORITY={value}, e.g. {}", examples.0))?;
        let p: i32 = p.trim().parse().map_err(|_| format!("`{part}`: the priority `{}` is not an integer", p.trim()))?;
        let v = parse_value(part, v.trim())?;
        if steps.iter().any(|(q, _)| *q == p) {
            return Err(format!("priority {p} is given twice"));
        }
        steps.push((p, v));
    }
    if steps.is_empty() {
        return Err(format!("an empty {what}: give PRIORITY={value} pairs, e.g. {}", examples.1));
    }
    steps.sort_by_key(|(p, _)| *p);
    Ok(steps)
}

impl fmt::Display for PriorityMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for &(p, d) in &self.steps {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            let p = if p == i32::MIN { 0 } else { p };
            match name(d) {
                Some(n) => write!(f, "{p}={n}")?,
                None => write!(f, "{p}={d}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_map_marks_every_positive_priority() {
        assert_eq!(default_for_priority(0), 0);
        assert_eq!(default_for_priority(-5), 0);
        assert_eq!(default_for_priority(1), 10);
        assert_eq!(default_for_priority(15), 18);
        assert_eq!(default_for_priority(35), 34);
        assert_eq!(default_for_priority(i32::MAX), 46);
        for p in 1..200 {
            assert_ne!(default_for_priority(p), 0, "priority {p}");
        }
    }

    #[test]
    fn names_and_numbers_parse() {
        assert_eq!(parse("EF"), Ok(46));
        assert_eq!(parse("af41"), Ok(34));
        assert_eq!(parse("63"), Ok(63));
        assert!(parse("64").is_err());
        assert!(parse("BE1").is_err());
        assert_eq!(name(46), Some("EF"));
        assert_eq!(name(1), None);
    }

    #[test]
    fn a_map_parses_and_prints_back() {
        let m = PriorityMap::parse("0=CS0, 50=EF, 1=AF21").unwrap();
        assert_eq!(m.dscp(0), 0);
        assert_eq!(m.dscp(1), 18);
        assert_eq!(m.dscp(49), 18);
        assert_eq!(m.dscp(50), 46);
        assert_eq!(m.to_string(), "0=CS0,1=AF21,50=EF");
        assert_eq!(PriorityMap::parse(&m.to_string()).unwrap(), m);
        assert_eq!(PriorityMap::default().to_string(), "0=CS0,1=AF11,10=AF21,20=AF31,30=AF41,40=EF");
    }

    #[test]
    fn bad_maps_are_refused_with_the_reason() {
        assert!(PriorityMap::parse("").unwrap_err().contains("empty"));
        assert!(PriorityMap::parse("1=EF,1=AF11").unwrap_err().contains("twice"));
        assert!(PriorityMap::parse("0=CS0,5=0").unwrap_err().contains("above 0"));
        assert!(PriorityMap::parse("10=EF").unwrap_err().contains("above 0"));
        assert!(PriorityMap::parse("x=EF").unwrap_err().contains("not an integer"));
        assert!(PriorityMap::parse("1=64").unwrap_err().contains("not a DSCP"));
        assert!(PriorityMap::parse("1:EF").unwrap_err().contains("PRIORITY=DSCP"));
    }
}

//! CPU lists ("0-3,8") and CPU masks ("ff,00000000") as the kernel writes them.

use std::collections::BTreeSet;
use std::fmt;

use crate::error::TuneError;

/// A set of CPU numbers, printed and parsed in the kernel's list format
/// (`0-3,8,10-11`), as in `isolcpus=`, `smp_affinity_list` or `cpu/online`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuList(BTreeSet<usize>);

/// The largest CPU number accepted by the parser: anything above is surely a
/// typo and would make masks absurdly long.
pub const MAX_CPU: usize = 8191;

impl CpuList {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the kernel list format. An empty string (or only whitespace) is the empty set.
    pub fn parse(s: &str) -> Result<Self, TuneError> {
        let bad = |reason: String| TuneError::InvalidCoreList { input: s.to_string(), reason };
        let mut set = BTreeSet::new();
        let t = s.trim();
        if t.is_empty() {
            return Ok(Self(set));
        }
        for part in t.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad("empty element between commas".into()));
            }
            // The kernel also accepts "a-b:stride/group"; we only need plain ranges.
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let num = |x: &str| -> Result<usize, TuneError> {
                let v: usize = x.parse().map_err(|_| bad(format!("`{x}` is not a CPU number")))?;
                if v > MAX_CPU {
                    return Err(bad(format!("CPU {v} is above {MAX_CPU}")));
                }
                Ok(v)
            };
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(bad(format!("range {a}-{b} is reversed")));
            }
            set.extend(a..=b);
        }
        Ok(Self(set))
    }

    /// Parses a hexadecimal mask as in `/proc/irq/N/smp_affinity` (`3`, `00000000,00000003`).
    pub fn parse_mask(s: &str) -> Result<Self, TuneError> {
        let bad = |reason: &str| TuneError::InvalidCoreList { input: s.to_string(), reason: reason.into() };
        let hex: String = s.trim().chars().filter(|c| *c != ',').collect();
        if hex.is_empty() {
            return Err(bad("empty mask"));
        }
        let mut set = BTreeSet::new();
        for (i, c) in hex.chars().rev().enumerate() {
            let d = c.to_digit(16).ok_or_else(|| bad("not a hexadecimal mask"))? as usize;
            for bit in 0..4 {
                if d & (1 << bit) != 0 {
                    let cpu = i * 4 + bit;
                    if cpu > MAX_CPU {
                        return Err(bad("mask too long"));
                    }
                    set.insert(cpu);
                }
            }
        }
        Ok(Self(set))
    }

    /// Formats as a hexadecimal mask in 32-bit words separated by commas, as the kernel does.
    pub fn to_mask(&self) -> String {
        let max = self.0.iter().next_back().copied().unwrap_or(0);
        let words = max / 32 + 1;
        let mut w = vec![0u32; words];
        for &c in &self.0 {
            w[c / 32] |= 1 << (c % 32);
        }
        let mut out: Vec<String> = Vec::with_capacity(words);
        for (i, word) in w.iter().rev().enumerate() {
            if i == 0 {
                out.push(format!("{word:x}"));
            } else {
                out.push(format!("{word:08x}"));
            }
        }
        out.join(",")
    }

    /// Builds a set from CPU numbers.
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> Self {
        Self(cpus.into_iter().collect())
    }
    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }
    /// Whether every CPU of `other` is in `self`.
    pub fn is_superset(&self, other: &CpuList) -> bool {
        self.0.is_superset(&other.0)
    }
    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuList) -> bool {
        !self.0.is_disjoint(&other.0)
    }
    /// The CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuList) -> CpuList {
        Self(self.0.difference(&other.0).copied().collect())
    }
    /// The CPUs in both sets.
    pub fn intersection(&self, other: &CpuList) -> CpuList {
        Self(self.0.intersection(&other.0).copied().collect())
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v: Vec<usize> = self.0.iter().copied().collect();
        let mut i = 0;
        let mut first = true;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j == i {
                write!(f, "{}", v[i])?;
            } else {
                write!(f, "{}-{}", v[i], v[j])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

impl From<CpuList> for String {
    fn from(c: CpuList) -> String {
        c.to_string()
    }
}

impl TryFrom<String> for CpuList {
    type Error = TuneError;
    fn try_from(s: String) -> Result<Self, TuneError> {
        CpuList::parse(&s)
    }
}

impl std::str::FromStr for CpuList {
    type Err = TuneError;
    fn from_str(s: &str) -> Result<Self, TuneError> {
        CpuList::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_and_print() {
        let c = CpuList::parse("0-3,8, 10-11").unwrap();
        assert_eq!(c.to_string(), "0-3,8,10-11");
        assert_eq!(CpuList::parse("").unwrap().len(), 0);
        assert!(CpuList::parse("3-1").is_err());
        assert!(CpuList::parse("a").is_err());
        assert!(CpuList::parse("1,,2").is_err());
        assert!(CpuList::parse("99999").is_err());
    }

    #[test]
    fn masks() {
        assert_eq!(CpuList::parse_mask("3").unwrap().to_string(), "0-1");
        assert_eq!(CpuList::parse_mask("00000001,00000002").unwrap().to_string(), "1,32");
        assert_eq!(CpuList::parse("1,32").unwrap().to_mask(), "1,00000002");
        assert_eq!(CpuList::parse("0").unwrap().to_mask(), "1");
        assert!(CpuList::parse_mask("xyz").is_err());
    }

    proptest! {
        #[test]
        fn roundtrip(cpus in proptest::collection::btree_set(0usize..300, 0..40)) {
            let c = CpuList(cpus);
            prop_assert_eq!(CpuList::parse(&c.to_string()).unwrap(), c.clone());
            if !c.is_empty() {
                prop_assert_eq!(CpuList::parse_mask(&c.to_mask()).unwrap(), c);
            }
        }
    }
}

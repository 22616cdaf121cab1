//! CPUs as the kernel lists them: CPU lists ("0-3,8") and masks
//! ("ff,00000000") ([`CpuList`]), and the CPU facts of /sys and /proc
//! ([`Cpus`]: online, possible and isolated CPUs, IRQs and where they may
//! run), read under a root directory (`/` on the machine, a fake tree in
//! tests). [`online`] is the machine's online CPUs in one call.

use std::collections::BTreeSet;
use std::fmt;

use std::fs;
use std::path::PathBuf;

/// A CPU list or mask that does not parse: the text and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list `{input}`: {reason} (expected e.g. `1` or `2-3,6`)")]
pub struct CpuListError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A set of CPU numbers, printed and parsed in the kernel's list format
/// (`0-3,8,10-11`), as in `isolcpus=`, `smp_affinity_list` or `cpu/online`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuList(BTreeSet<usize>);

/// The largest CPU number accepted by the parser: anything above is surely a
/// typo and would make masks absurdly long.
pub(crate) const MAX_CPU: usize = 8191;

impl CpuList {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the kernel list format. An empty string (or only whitespace) is the empty set.
    pub fn parse(s: &str) -> Result<Self, CpuListError> {
        let bad = |reason: String| CpuListError { input: s.to_string(), reason };
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
            let num = |x: &str| -> Result<usize, CpuListError> {
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
    pub fn parse_mask(s: &str) -> Result<Self, CpuListError> {
        let bad = |reason: &str| CpuListError { input: s.to_string(), reason: reason.into() };
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
    type Error = CpuListError;
    fn try_from(s: String) -> Result<Self, CpuListError> {
        CpuList::parse(&s)
    }
}

impl std::str::FromStr for CpuList {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, CpuListError> {
        CpuList::parse(s)
    }
}

/// A core that cannot be used for a datapath thread or a `--cores` list:
/// the one check behind [`crate::thread::check_core_on`] and the tuning
/// layer's core validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// A core number above what the kernel can have (`cpu/possible`).
    #[error("core {core} is out of range: this kernel has CPUs {possible} (see /sys/devices/system/cpu/possible)")]
    OutOfRange {
        /// The core asked for.
        core: usize,
        /// The CPUs the kernel can have.
        possible: CpuList,
    },
    /// A core number that is possible but not online on this machine.
    #[error("core {core} is not an online CPU: online CPUs are {online} (see /sys/devices/system/cpu/online)")]
    NotOnline {
        /// The core asked for.
        core: usize,
        /// The online CPUs.
        online: CpuList,
    },
}

impl CoreError {
    /// Checks that `core` is in `possible` and in `online`.
    pub fn check(core: usize, possible: &CpuList, online: &CpuList) -> Result<(), CoreError> {
        if !possible.contains(core) {
            return Err(CoreError::OutOfRange { core, possible: possible.clone() });
        }
        if !online.contains(core) {
            return Err(CoreError::NotOnline { core, online: online.clone() });
        }
        Ok(())
    }
}

/// The CPU facts of a host, read from /sys and /proc under a root directory:
/// [`Cpus::real`] is the machine itself, [`Cpus::at`] a fake tree (tests,
/// and the tuning layer's `Host` pointed elsewhere). Absent files are facts
/// too: a kernel without `cpu/isolated` has no isolated CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpus {
    root: PathBuf,
}

impl Default for Cpus {
    fn default() -> Self {
        Self::real()
    }
}

impl Cpus {
    /// The running machine (root `/`).
    pub fn real() -> Self {
        Self { root: PathBuf::from("/") }
    }

    /// A host whose /proc and /sys live under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The real path of a host path such as `/sys/devices/system/cpu/online`.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// A host file's text, trimmed; `None` when absent or unreadable.
    pub fn read_trim(&self, abs: &str) -> Option<String> {
        fs::read(self.path(abs)).ok().map(|b| String::from_utf8_lossy(&b).trim().to_string())
    }

    /// Names of the entries of a host directory in natural order ("2" before
    /// "10"); empty when absent.
    pub fn list_dir(&self, abs: &str) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path(abs))
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    /// Online CPUs (`/sys/devices/system/cpu/online`; CPU 0 alone when absent).
    pub fn online(&self) -> CpuList {
        self.read_trim("/sys/devices/system/cpu/online").and_then(|s| CpuList::parse(&s).ok()).unwrap_or_else(|| CpuList::from_cpus([0]))
    }

    /// Possible CPUs (`/sys/devices/system/cpu/possible`; the online ones when absent).
    pub fn possible(&self) -> CpuList {
        self.read_trim("/sys/devices/system/cpu/possible").and_then(|s| CpuList::parse(&s).ok()).unwrap_or_else(|| self.online())
    }

    /// Isolated CPUs (`/sys/devices/system/cpu/isolated`, else `isolcpus=` of the command line).
    pub fn isolated(&self) -> CpuList {
        if let Some(s) = self.read_trim("/sys/devices/system/cpu/isolated") {
            if let Ok(c) = CpuList::parse(&s) {
                return c;
            }
        }
        self.cmdline_param("isolcpus").map(|v| parse_isolcpus(&v)).unwrap_or_default()
    }

    /// The value of `name=` on the kernel command line (`/proc/cmdline`), if given.
    pub fn cmdline_param(&self, name: &str) -> Option<String> {
        let cmdline = self.read_trim("/proc/cmdline")?;
        let kernel_part = cmdline.split(" -- ").next().unwrap_or("");
        kernel_part.split_whitespace().filter_map(|w| w.split_once('=')).filter(|(k, _)| *k == name).map(|(_, v)| v.to_string()).next_back()
    }

    /// The numbered IRQs under `/proc/irq`, each with its handlers (the
    /// action directories: empty for an IRQ that never fires) and the path of
    /// its `smp_affinity_list`.
    pub fn irqs(&self) -> Vec<Irq> {
        self.list_dir("/proc/irq")
            .into_iter()
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            .map(|number| {
                let dir = format!("/proc/irq/{number}");
                let actions = self.list_dir(&dir).into_iter().filter(|n| self.path(&format!("{dir}/{n}")).is_dir()).collect();
                Irq { affinity_list: format!("{dir}/smp_affinity_list"), number, actions }
            })
            .collect()
    }
}

/// The machine's online CPUs (`/sys/devices/system/cpu/online`; CPU 0 alone
/// when the file is absent).
pub fn online() -> CpuList {
    Cpus::real().online()
}

/// One IRQ as `/proc/irq` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Irq {
    /// Its number, as the directory is named.
    pub number: String,
    /// Names of its handlers (devices); empty when it has none.
    pub actions: Vec<String>,
    /// Absolute host path of its `smp_affinity_list`.
    pub affinity_list: String,
}

/// `isolcpus=` accepts flags before the list (`isolcpus=nohz,domain,managed_irq,2-3`).
pub(crate) fn parse_isolcpus(v: &str) -> CpuList {
    let list: Vec<&str> = v.split(',').filter(|p| p.starts_with(|c: char| c.is_ascii_digit())).collect();
    CpuList::parse(&list.join(",")).unwrap_or_default()
}

/// Orders "irq2" before "irq10" and "state2" before "state10".
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let key = |s: &str| {
        let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
        let text: String = s.chars().filter(|c| !c.is_ascii_digit()).collect();
        (text, digits.parse::<u64>().unwrap_or(u64::MAX), s.to_string())
    };
    key(a).cmp(&key(b))
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

    #[test]
    fn isolcpus_flags() {
        assert_eq!(parse_isolcpus("nohz,domain,managed_irq,2-3,6").to_string(), "2-3,6");
        assert_eq!(parse_isolcpus("1").to_string(), "1");
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["10", "2", "1", "default_smp_affinity"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["1", "2", "10", "default_smp_affinity"]);
    }

    #[test]
    fn online_cpus_of_a_fake_tree() {
        let d = std::env::temp_dir().join(format!("detpath-sys-cpu-{}", std::process::id()));
        let cpu = d.join("sys/devices/system/cpu");
        fs::create_dir_all(&cpu).unwrap();
        let tree = Cpus::at(&d);
        // No file: CPU 0 alone; possible falls back to online.
        assert_eq!(tree.online().to_string(), "0");
        fs::write(cpu.join("online"), "0-2,4\n").unwrap();
        assert_eq!(tree.online().to_string(), "0-2,4");
        assert_eq!(tree.possible().to_string(), "0-2,4");
        fs::write(cpu.join("online"), "garbage").unwrap();
        assert_eq!(tree.online().to_string(), "0", "an unreadable list is CPU 0 alone");
        fs::create_dir_all(d.join("proc")).unwrap();
        fs::write(d.join("proc/cmdline"), "ro isolcpus=managed_irq,3 quiet").unwrap();
        assert_eq!(tree.isolated().to_string(), "3");
        fs::remove_dir_all(&d).unwrap();
        // The machine has at least one online CPU.
        assert!(!online().is_empty());
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

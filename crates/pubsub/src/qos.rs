//! The QoS policies detpath implements and the request/offer matching rules
//! between a writer and a reader (DDS 1.4 §2.2.3).

/// Durations in nanoseconds; this one means "infinite".
pub const INFINITE_NS: i64 = i64::MAX;

/// RELIABILITY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reliability {
    /// Samples are sent once; what is lost stays lost.
    BestEffort,
    /// Lost samples are resent (HEARTBEAT, ACKNACK) while the writer's history holds them.
    Reliable,
}

/// DURABILITY (what detpath keeps for late joiners: volatile, nothing; transient-local, its history).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Durability {
    /// Nothing is kept for readers that match later.
    Volatile = 0,
    /// A writer resends its history to readers that match later.
    TransientLocal = 1,
    /// TRANSIENT: detpath has no durability service; it behaves as
    /// [`Durability::TransientLocal`].
    Transient = 2,
    /// PERSISTENT: detpath has no durability service; it behaves as
    /// [`Durability::TransientLocal`].
    Persistent = 3,
}

/// HISTORY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum History {
    /// Keep the last n samples of each instance (key); of the one instance
    /// for topics without a key.
    KeepLast(u32),
    /// Keep every sample until delivered (writer: acknowledged; reader: taken),
    /// bounded by the resource limit `max_samples`.
    KeepAll,
}

/// LIVELINESS kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LivelinessKind {
    /// AUTOMATIC: the participant's activity asserts liveliness.
    Automatic = 0,
    /// MANUAL_BY_PARTICIPANT: the application asserts it for the participant.
    ManualByParticipant = 1,
    /// MANUAL_BY_TOPIC: the application asserts it per writer.
    ManualByTopic = 2,
}

/// OWNERSHIP kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Any number of writers update an instance.
    Shared,
    /// Only the strongest writer of an instance is heard.
    Exclusive,
}

/// The QoS of one writer or reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Qos {
    /// RELIABILITY kind.
    pub reliability: Reliability,
    /// max_blocking_time, announced for writers.
    pub max_blocking_ns: i64,
    /// DURABILITY kind.
    pub durability: Durability,
    /// HISTORY kind and depth.
    pub history: History,
    /// RESOURCE_LIMITS max_samples (bounds KEEP_ALL; -1 unlimited is not allowed: memory is preallocated).
    pub max_samples: u32,
    /// RESOURCE_LIMITS max_instances: the instance table's size, allocated
    /// when the writer or reader is created (a sample of one instance more
    /// is counted and refused). Keyed topics only.
    pub max_instances: u32,
    /// DEADLINE period.
    pub deadline_ns: i64,
    /// LIVELINESS kind (announced and matched; detpath does not enforce it).
    pub liveliness: LivelinessKind,
    /// LIVELINESS lease_duration, ns ([`INFINITE_NS`]: none).
    pub liveliness_lease_ns: i64,
    /// OWNERSHIP kind (announced and matched; the engine does not pick the
    /// strongest writer of an instance).
    pub ownership: Ownership,
    /// PARTITION names; empty means the default partition "".
    pub partitions: Vec<String>,
    /// USER_DATA of the endpoint.
    pub user_data: Vec<u8>,
    /// TRANSPORT_PRIORITY (PID 0x0049): 0 is best effort; a writer's value
    /// picks its datagrams' traffic class and DSCP ([`crate::priority`]).
    pub transport_priority: i32,
    /// LATENCY_BUDGET duration, ns (0: none, DDS's default). A reader judges
    /// every sample's one-way latency against it ([`crate::budget`]).
    pub latency_budget_ns: i64,
}

impl Default for Qos {
    fn default() -> Qos {
        Qos {
            reliability: Reliability::Reliable,
            max_blocking_ns: 100_000_000,
            durability: Durability::Volatile,
            history: History::KeepLast(1),
            max_samples: 1024,
            max_instances: 32,
            deadline_ns: INFINITE_NS,
            liveliness: LivelinessKind::Automatic,
            liveliness_lease_ns: INFINITE_NS,
            ownership: Ownership::Shared,
            partitions: Vec::new(),
            user_data: Vec::new(),
            transport_priority: 0,
            latency_budget_ns: 0,
        }
    }
}

impl Qos {
    /// Reliable, KEEP_LAST n.
    pub fn reliable_keep_last(n: u32) -> Qos {
        Qos { history: History::KeepLast(n.max(1)), ..Qos::default() }
    }
    /// Reliable, KEEP_ALL bounded by `max_samples`.
    pub fn reliable_keep_all(max_samples: u32) -> Qos {
        Qos { history: History::KeepAll, max_samples: max_samples.max(1), ..Qos::default() }
    }
    /// Best effort, KEEP_LAST n.
    pub fn best_effort(n: u32) -> Qos {
        Qos { reliability: Reliability::BestEffort, history: History::KeepLast(n.max(1)), ..Qos::default() }
    }
    /// With these partitions.
    pub fn with_partition(mut self, name: &str) -> Qos {
        self.partitions = vec![name.to_string()];
        self
    }
    /// With at most `n` instances.
    pub fn with_max_instances(mut self, n: u32) -> Qos {
        self.max_instances = n.max(1);
        self
    }
    /// How many samples a history of a keyed topic holds: KEEP_LAST n for
    /// each of `max_instances`, within `max_samples`.
    pub fn keyed_depth(&self) -> usize {
        match self.history {
            History::KeepLast(n) => (n.max(1) as usize).saturating_mul(self.max_instances.max(1) as usize).min(self.max_samples.max(n).max(1) as usize),
            History::KeepAll => self.max_samples.max(1) as usize,
        }
    }
    /// How many samples the history holds (the slots preallocated for it).
    pub fn depth(&self) -> usize {
        match self.history {
            History::KeepLast(n) => n.max(1) as usize,
            History::KeepAll => self.max_samples.max(1) as usize,
        }
    }
}

/// Why a writer and a reader do not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Incompatible {
    /// Reserved: the engine matches only endpoints of equal topic names and
    /// never reports this.
    #[error("topic name differs")]
    TopicName,
    /// Reserved: the engine matches only endpoints of equal type names and
    /// never reports this.
    #[error("type name differs")]
    TypeName,
    /// The reader requests RELIABLE and the writer offers BEST_EFFORT: make
    /// the writer reliable or the reader best effort.
    #[error("reader requests reliable, writer offers best effort")]
    Reliability,
    /// The reader requests a stronger DURABILITY than the writer offers.
    #[error("reader requests a stronger durability than the writer offers")]
    Durability,
    /// The writer's DEADLINE period is longer than the reader's.
    #[error("writer's deadline is longer than the reader's")]
    Deadline,
    /// The writer's LATENCY_BUDGET is longer than the reader's (CycloneDDS's
    /// rule: offered <= requested; both 0 by default). Give the reader a
    /// budget at least the writer's.
    #[error("writer's latency budget is longer than the reader's")]
    LatencyBudget,
    /// The writer's LIVELINESS kind is weaker, or its lease longer, than the reader requests.
    #[error("writer's liveliness is weaker than the reader requests")]
    Liveliness,
    /// One side is SHARED, the other EXCLUSIVE.
    #[error("ownership kinds differ")]
    Ownership,
    /// No PARTITION name of one side matches one of the other.
    #[error("no partition in common")]
    Partition,
    /// No data representation in common: the writer writes neither XCDR1
    /// nor XCDR2, or the reader does not accept XCDR1 (what detpath writes).
    #[error("no data representation in common")]
    DataRepresentation,
}

/// Offered (writer) against requested (reader): `Ok` when they match.
pub fn check_compatible(writer: &Qos, reader: &Qos) -> Result<(), Incompatible> {
    if reader.reliability == Reliability::Reliable && writer.reliability == Reliability::BestEffort {
        return Err(Incompatible::Reliability);
    }
    if writer.durability < reader.durability {
        return Err(Incompatible::Durability);
    }
    if writer.deadline_ns > reader.deadline_ns {
        return Err(Incompatible::Deadline);
    }
    if writer.latency_budget_ns > reader.latency_budget_ns {
        return Err(Incompatible::LatencyBudget);
    }
    if writer.liveliness < reader.liveliness || writer.liveliness_lease_ns > reader.liveliness_lease_ns {
        return Err(Incompatible::Liveliness);
    }
    if writer.ownership != reader.ownership {
        return Err(Incompatible::Ownership);
    }
    if !partitions_match(&writer.partitions, &reader.partitions) {
        return Err(Incompatible::Partition);
    }
    Ok(())
}

/// PARTITION matching: some name of one side matches some name of the other,
/// with `*` and `?` wildcards on either side (not both); no names means "".
pub fn partitions_match(a: &[String], b: &[String]) -> bool {
    let default = [String::new()];
    let a = if a.is_empty() { &default[..] } else { a };
    let b = if b.is_empty() { &default[..] } else { b };
    a.iter().any(|x| {
        b.iter().any(|y| {
            let (wx, wy) = (has_wildcard(x), has_wildcard(y));
            match (wx, wy) {
                (false, false) => x == y,
                (true, false) => glob(x.as_bytes(), y.as_bytes()),
                (false, true) => glob(y.as_bytes(), x.as_bytes()),
                (true, true) => x == y,
            }
        })
    })
}

fn has_wildcard(s: &str) -> bool {
    s.bytes().any(|c| c == b'*' || c == b'?')
}

/// fnmatch-style matching of `*` and `?` (iterative, no recursion depth to blow).
fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let (mut star, mut mark) = (None, 0usize);
    while i < s.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == s[i]) {
            p += 1;
            i += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some(p);
            mark = i;
            p += 1;
        } else if let Some(sp) = star {
            p = sp + 1;
            mark += 1;
            i = mark;
        } else {
            return false;
        }
    }
    while p < pat.len() && pat[p] == b'*' {
        p += 1;
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn partitions() {
        assert!(partitions_match(&[], &[]));
        assert!(partitions_match(&v(&[""]), &[]));
        assert!(!partitions_match(&v(&["a"]), &[]));
        assert!(partitions_match(&v(&["a", "b"]), &v(&["b"])));
        assert!(partitions_match(&v(&["01*"]), &v(&["0110289e_05d445a1_07c4a865_000001c1"])));
        assert!(partitions_match(&v(&["x?z"]), &v(&["xyz"])));
        assert!(!partitions_match(&v(&["x?z"]), &v(&["xz"])));
        assert!(!partitions_match(&v(&["a*"]), &v(&["b*"])));
    }

    #[test]
    fn request_offer() {
        let w = Qos::best_effort(1);
        let r = Qos::reliable_keep_last(1);
        assert_eq!(check_compatible(&w, &r), Err(Incompatible::Reliability));
        assert_eq!(check_compatible(&r, &w), Ok(()));
        let tl = Qos { durability: Durability::TransientLocal, ..Qos::default() };
        assert_eq!(check_compatible(&Qos::default(), &tl), Err(Incompatible::Durability));
        let dl = Qos { deadline_ns: 1_000_000, ..Qos::default() };
        assert_eq!(check_compatible(&Qos::default(), &dl), Err(Incompatible::Deadline));
        assert_eq!(check_compatible(&dl, &Qos::default()), Ok(()));
        let lb = Qos { latency_budget_ns: 100_000, ..Qos::default() };
        assert_eq!(check_compatible(&lb, &Qos::default()), Err(Incompatible::LatencyBudget));
        assert_eq!(check_compatible(&Qos::default(), &lb), Ok(()));
        assert_eq!(check_compatible(&lb, &lb), Ok(()));
        assert_eq!(check_compatible(&Qos::default().with_partition("p"), &Qos::default()), Err(Incompatible::Partition));
    }
}

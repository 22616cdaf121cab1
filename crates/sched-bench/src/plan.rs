//! `detpath sched bench --plan FILE`: a planner input (crates/plan's JSON) is
//! solved, or a saved plan (`detpath sched plan FILE --json`) is read back and
//! validated, and the benchmark's classes and flows are built from
//! [`RingConfig::from_plan`]: one strict real-time class per application
//! owning its partition, one flow per planned flow sending every instance at
//! its planned transmission time, and optionally a best-effort class on the
//! slots no application owns (the flood).

use super::{BenchConfig, FlowSpec};
use detpath_plan::{plan, Options, Plan, RingConfig, Spec, Status};
use detpath_sched::config::{ClassConfig, ClassKind, Mode, DEFAULT_CAPACITY};
use detpath_sched::mask::SlotMask;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// Name of the best-effort class on the free slots.
pub(crate) const FREE_SLOTS_CLASS: &str = "free";

/// A plan that cannot be run, with the exit status the command gives for it.
#[derive(Debug, Error)]
pub enum PlanError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The planner input (or the saved plan) is malformed.
    #[error("{path}: {why}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The planner proved that the traffic does not fit.
    #[error("{path}: the traffic does not fit the ring (proven infeasible: {reason}){}", detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Infeasible {
        /// The file.
        path: PathBuf,
        /// Which proof.
        reason: String,
        /// The planner's explanation.
        detail: Option<String>,
    },
    /// The planner reached its time limit without an answer.
    #[error("{path}: the planner found no schedule within its time limit (unknown, not proven infeasible); raise --plan-timeout")]
    Unknown {
        /// The file.
        path: PathBuf,
    },
    /// A saved plan that does not satisfy the specification.
    #[error("{path}: the plan does not satisfy the specification: {why}")]
    Invalid {
        /// The plan file.
        path: PathBuf,
        /// The violated rule.
        why: String,
    },
}

impl PlanError {
    /// The command's exit status: 3 proven infeasible, 4 unknown (as `detpath sched plan`), 2 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            PlanError::Infeasible { .. } => 3,
            PlanError::Unknown { .. } => 4,
            _ => 2,
        }
    }
}

/// A solved (or read back) and validated plan.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The planner input.
    pub spec: Spec,
    /// The feasible plan.
    pub plan: Plan,
    /// What the scheduler loads: per-application masks, per-flow offsets.
    pub ring: RingConfig,
}

fn read(path: &Path) -> Result<String, PlanError> {
    std::fs::read_to_string(path).map_err(|source| PlanError::Read { path: path.to_path_buf(), source })
}

/// Reads the planner input at `spec_path`; solves it (within `timeout`) or,
/// with `plan_path`, reads that plan; validates it and builds the ring configuration.
pub fn load(spec_path: &Path, plan_path: Option<&Path>, timeout: Duration) -> Result<Planned, PlanError> {
    let input = |path: &Path, why: String| PlanError::Input { path: path.to_path_buf(), why };
    let spec = Spec::from_json(&read(spec_path)?).map_err(|e| input(spec_path, e.to_string()))?;
    let (plan, from) = match plan_path {
        Some(p) => (serde_json::from_str::<Plan>(&read(p)?).map_err(|e| input(p, format!("not a plan (detpath sched plan --json): {e}")))?, p),
        None => (plan(&spec, &Options { timeout: Some(timeout), ..Options::default() }).map_err(|e| input(spec_path, e.to_string()))?, spec_path),
    };
    match plan.status {
        Status::Feasible => {}
        Status::Infeasible => {
            let reason = plan.reason.map(|r| serde_json::to_value(r).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()).unwrap_or_default();
            return Err(PlanError::Infeasible { path: from.to_path_buf(), reason, detail: plan.detail.clone() });
        }
        Status::Unknown => return Err(PlanError::Unknown { path: from.to_path_buf() }),
    }
    let ring = RingConfig::from_plan(&spec, &plan).map_err(|e| PlanError::Invalid { path: from.to_path_buf(), why: e.to_string() })?;
    Ok(Planned { spec, plan, ring })
}

impl Planned {
    /// Puts the plan into `cfg`: ring geometry, one `mode` real-time class per
    /// application with flows (its partition), one flow per planned flow
    /// (`APP/FLOW`, `size` bytes), and with `free_slots_flood` a best-effort
    /// class on the free slots except the `guard` slots before each planned
    /// slot (a software send here can take most of a slot), which the flood
    /// uses. Lead and late tolerance stay as `cfg` has them.
    ///
    /// `shift` rotates the whole plan by that many slots (partitions and send
    /// times alike, which keeps all three rules): on a host whose timer tick
    /// lands on ring position 0 (this VM's 250 Hz tick on the millisecond
    /// boundary), `shift` 1 moves the plan's slot 0 off it.
    pub fn apply(&self, cfg: &mut BenchConfig, size: usize, mode: Mode, free_slots_flood: bool, guard: u32, shift: u32) -> Result<(), super::BenchError> {
        let r = &self.ring;
        let n = r.ring_slots;
        let shift = shift % n;
        let shift_ns = shift as i64 * r.slot_ns as i64;
        cfg.sched.slot_ns = r.slot_ns;
        cfg.sched.ring_slots = n;
        cfg.sched.classes.clear();
        cfg.flows.clear();
        let mut planned = vec![false; n as usize];
        for app in r.apps.iter().filter(|a| !a.flows.is_empty()) {
            let positions: Vec<u32> = (0..n).filter(|&s| app.owns(s as usize)).map(|s| (s + shift) % n).collect();
            for &p in &positions {
                planned[p as usize] = true;
            }
            let mask = SlotMask::from_positions(n, positions).map_err(|source| detpath_sched::config::ConfigError::Mask { name: app.name.clone(), source })?;
            cfg.sched.classes.push(ClassConfig { name: app.name.clone(), kind: ClassKind::RealTime, mode, mask, capacity: DEFAULT_CAPACITY });
            for f in &app.flows {
                cfg.flows.push(FlowSpec {
                    name: format!("{}/{}", app.name, f.name),
                    class: app.name.clone(),
                    period_ns: f.period_ns,
                    size,
                    phase_slot: 0,
                    offsets_ns: f.offsets_ns.iter().map(|o| o + shift_ns).collect(),
                });
            }
        }
        cfg.be_class = None;
        if free_slots_flood {
            let near_planned = |s: u32| (1..=guard).any(|d| planned[((s + d) % n) as usize]);
            let free: Vec<u32> = (0..n).filter(|&s| !planned[s as usize] && !near_planned(s)).collect();
            if !free.is_empty() {
                let mask =
                    SlotMask::from_positions(n, free).map_err(|source| detpath_sched::config::ConfigError::Mask { name: FREE_SLOTS_CLASS.into(), source })?;
                cfg.sched.classes.push(ClassConfig { name: FREE_SLOTS_CLASS.into(), kind: ClassKind::BestEffort, mode, mask, capacity: DEFAULT_CAPACITY });
                cfg.be_class = Some(FREE_SLOTS_CLASS.into());
            }
        }
        cfg.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("detpath-sched-plan-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_plan_becomes_classes_and_flows_at_their_planned_times() {
        // Ring 16 x 50 µs (800 µs cycle); hyperperiod 1600 µs, two cycles.
        let spec = write(
            "ok.json",
            r#"{"ring_slots": 16, "slot_ns": 50000, "apps": [
                {"name": "ctl", "flows": [{"name": "c1", "period_ns": 400000, "jitter_ns": 0}, {"name": "c2", "period_ns": 800000, "jitter_ns": 100000}]},
                {"name": "io", "flows": [{"name": "i1", "period_ns": 1600000, "jitter_ns": 0}]}]}"#,
        );
        let p = load(&spec, None, Duration::from_secs(5)).unwrap();
        let mut cfg = BenchConfig::paper();
        p.apply(&mut cfg, 64, Mode::Strict, true, 1, 0).unwrap();
        assert_eq!((cfg.sched.slot_ns, cfg.sched.ring_slots), (50_000, 16));
        assert_eq!(cfg.sched.classes.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["ctl", "io", FREE_SLOTS_CLASS]);
        assert_eq!(cfg.flows.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["ctl/c1", "ctl/c2", "io/i1"]);
        // Every planned transmission is an instance time of its flow, in its class's slots.
        for t in &p.plan.schedule {
            let f = cfg.flows.iter().find(|f| f.name == format!("{}/{}", t.app, t.flow)).unwrap();
            assert_eq!(f.instance_offset_ns(50_000, t.instance), t.tx_ns);
            let class = cfg.sched.classes.iter().find(|c| c.name == t.app).unwrap();
            assert!(class.mask.contains(((t.tx_ns / 50_000) % 16) as u32));
        }
        // The free-slot class keeps a guard slot before every planned slot.
        let free = &cfg.sched.classes[2].mask;
        for c in &cfg.sched.classes[..2] {
            for pos in c.mask.positions() {
                assert!(!free.contains(pos) && !free.contains((pos + 15) % 16), "{pos}");
            }
        }
        // Rotated by 3 slots: every transmission 3 slots later, in the rotated partition.
        let mut rot = BenchConfig::paper();
        p.apply(&mut rot, 64, Mode::Strict, false, 1, 3).unwrap();
        for t in &p.plan.schedule {
            let f = rot.flows.iter().find(|f| f.name == format!("{}/{}", t.app, t.flow)).unwrap();
            assert_eq!(f.instance_offset_ns(50_000, t.instance), t.tx_ns + 150_000);
            let class = rot.sched.classes.iter().find(|c| c.name == t.app).unwrap();
            assert!(class.mask.contains((((t.tx_ns / 50_000) + 3) % 16) as u32));
        }
        // A saved plan is read back and gives the same configuration.
        let saved = write("plan.json", &serde_json::to_string(&p.plan).unwrap());
        let q = load(&spec, Some(&saved), Duration::from_secs(5)).unwrap();
        assert_eq!(q.ring, p.ring);
        // A tampered plan is refused by the validator.
        let mut bad = p.plan.clone();
        bad.schedule[0].tx_ns += 50_000;
        let tampered = write("bad.json", &serde_json::to_string(&bad).unwrap());
        let e = load(&spec, Some(&tampered), Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, PlanError::Invalid { .. }) && e.exit_code() == 2, "{e}");
        for f in [spec, saved, tampered] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn infeasible_and_malformed_plans_say_so_with_their_exit_codes() {
        // Three strictly periodic 20 µs flows of one application need 3 of every 2 slots.
        let spec = write(
            "inf.json",
            r#"{"ring_slots": 4, "slot_ns": 10000, "apps": [{"name": "a", "flows": [
                {"name": "x", "period_ns": 20000, "jitter_ns": 0}, {"name": "y", "period_ns": 20000, "jitter_ns": 0},
                {"name": "z", "period_ns": 20000, "jitter_ns": 0}]}]}"#,
        );
        let e = load(&spec, None, Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, PlanError::Infeasible { .. }), "{e}");
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("does not fit"), "{e}");
        let junk = write("junk.json", r#"{"ring_slots": 4, "slot_ns": 10000, "apps": [], "extra": 1}"#);
        let e = load(&junk, None, Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, PlanError::Input { .. }) && e.exit_code() == 2, "{e}");
        let e = load(Path::new("/nonexistent/plan.json"), None, Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, PlanError::Read { .. }) && e.exit_code() == 2, "{e}");
        for f in [spec, junk] {
            let _ = std::fs::remove_file(f);
        }
    }

    #[test]
    fn a_hyperperiod_that_is_not_whole_ring_cycles_is_refused() {
        // 80 µs flow on a 32 x 10 µs ring: the plan's hyperperiod (80 µs) is a
        // quarter cycle, so the next instances would fall in positions 8, 16, 24.
        let spec = write(
            "rep.json",
            r#"{"ring_slots": 32, "slot_ns": 10000, "apps": [{"name": "a", "flows": [{"name": "a1", "period_ns": 80000, "jitter_ns": 0}]}]}"#,
        );
        let p = load(&spec, None, Duration::from_secs(5)).unwrap();
        let mut cfg = BenchConfig::paper();
        let e = p.apply(&mut cfg, 64, Mode::Strict, false, 1, 0).unwrap_err();
        assert!(matches!(e, super::super::BenchError::PlanRepeat { hyperperiod_ns: 80_000, cycle_ns: 320_000 }), "{e}");
        let _ = std::fs::remove_file(spec);
    }
}

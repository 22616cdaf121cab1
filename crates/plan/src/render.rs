//! The human-readable answer: verdict, ring diagram of the partitions, per-flow offsets, utilisation.

use crate::ring::RingConfig;
use crate::spec::{Plan, Spec, Status};
use std::fmt::Write;

/// One character per application in the ring diagram ('.' is a slot no application owns).
fn symbol(i: usize) -> char {
    const SYMBOLS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    SYMBOLS.get(i).map_or('#', |&b| b as char)
}

fn us(ns: i64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// Renders a plan for a person.
pub fn render(spec: &Spec, plan: &Plan) -> String {
    let mut o = String::new();
    let verdict = match plan.status {
        Status::Feasible => "feasible".to_string(),
        Status::Infeasible => {
            format!("INFEASIBLE (proven by {})", plan.reason.map_or("?".into(), |r| serde_json::to_string(&r).unwrap_or_default().replace('"', "")))
        }
        Status::Unknown => "UNKNOWN (no proof either way)".to_string(),
    };
    let _ = writeln!(o, "status: {verdict}, solved in {:.1} ms", plan.solve_ms);
    if let Some(d) = &plan.detail {
        let _ = writeln!(o, "  {d}");
    }
    let ring = spec.ring_slots.max(0) as usize;
    let slot_ns = spec.slot_ns;
    let util: f64 = spec.apps.iter().flat_map(|a| &a.flows).map(|f| slot_ns as f64 / f.period_ns as f64).sum();
    let _ = writeln!(o, "ring: {ring} slots x {slot_ns} ns (ring cycle {} us), hyperperiod {} us", us(ring as i64 * slot_ns), us(plan.hyperperiod_ns as i64));
    let _ = writeln!(o, "utilisation: {:.1}% ({:.2} packets per ring cycle of {ring} slots)", util * 100.0, util * ring as f64);
    if plan.status != Status::Feasible {
        return o;
    }
    let config = match RingConfig::from_plan(spec, plan) {
        Ok(c) => c,
        Err(v) => {
            let _ = writeln!(o, "plan does not validate: {v}");
            return o;
        }
    };
    let owned: usize = plan.partitions.0.iter().map(|(_, s)| s.len()).sum();
    let _ = writeln!(o, "partitions use {owned} of {ring} slots; '.' slots are left to best-effort traffic\n");
    // Ring diagram, 64 slots a row, with a tens/units ruler.
    for row in (0..ring).step_by(64) {
        let end = (row + 64).min(ring);
        let tens: String = (row..end).map(|s| if s % 10 == 0 { char::from(b'0' + ((s / 10) % 10) as u8) } else { ' ' }).collect();
        let units: String = (row..end).map(|s| char::from(b'0' + (s % 10) as u8)).collect();
        let cells: String = (row..end).map(|s| config.apps.iter().position(|a| a.owns(s)).map_or('.', symbol)).collect();
        let _ = writeln!(o, "  slot {tens}\n       {units}\n  ring {cells}\n");
    }
    for (i, a) in config.apps.iter().enumerate() {
        let slots: Vec<String> = (0..ring).filter(|&s| a.owns(s)).map(|s| s.to_string()).collect();
        let _ = writeln!(o, "  {} = {} ({} slots: {})", symbol(i), a.name, slots.len(), slots.join(" "));
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "  {:<12} {:<12} {:>10} {:>10} {:>10} {:>10} {:>9}", "app", "flow", "period_us", "jitter_us", "offset_us", "worst_us", "instances");
    for (a, ac) in spec.apps.iter().zip(&config.apps) {
        for (f, fc) in a.flows.iter().zip(&ac.flows) {
            let _ = writeln!(
                o,
                "  {:<12} {:<12} {:>10} {:>10} {:>10} {:>10} {:>9}",
                a.name,
                f.name,
                us(f.period_ns),
                us(f.jitter_ns),
                us(fc.base_offset_ns),
                us(fc.worst_deviation_ns),
                fc.offsets_ns.len()
            );
        }
    }
    o
}

#![warn(missing_docs)]
//! detpath-plan: transmit-ring partitions and send schedules for periodic critical traffic.
//!
//! Paper 003 (KeepON, §6.1) divides the transmit ring into N slots of fixed duration, gives each
//! critical application a disjoint partition of slots, and asks for a schedule: every instance of every
//! periodic flow is sent in a slot of its application's partition, the spread of its deviations from
//! the release times stays within the flow's jitter bound, and no two packets of one application share
//! a slot. The paper solves it with Z3. This crate solves it exactly with a native search:
//!
//! - [`plan`] answers feasible (with partitions and schedule, checked by [`validate()`] before it is
//!   returned), infeasible (with the proof used, [`Reason`]) or unknown (time limit reached; never
//!   "infeasible" on a timeout);
//! - [`RingConfig`] turns a feasible plan into what the scheduler loads: a slot bitmask per
//!   application and per-flow send offsets;
//! - [`evaluate`] reproduces the paper's Table 4 / Figure 24 experiment and runs Debian's `z3` on the
//!   same flow sets ([`smtlib`] writes them as SMT-LIB2).
//!
//! How the solver works: [`app_solver`] (one application on a slot set: branch and bound over flow
//! offsets with an EDF relaxation), [`need`] (how many slots an application needs at least) and
//! [`search`] (which slots each application owns).
//!
//! ```
//! use detpath_plan::spec::{Spec, Status};
//! use detpath_plan::{plan, Options};
//! // A ring of 4 slots of 10 µs: one flow every 40 µs, another every 20 µs, both without jitter.
//! let spec = Spec::from_json(r#"{"ring_slots": 4, "slot_ns": 10000, "apps": [
//!     {"name": "control", "flows": [{"name": "loop", "period_ns": 40000, "jitter_ns": 0}]},
//!     {"name": "video", "flows": [{"name": "frame", "period_ns": 20000, "jitter_ns": 0}]}]}"#)?;
//! let answer = plan(&spec, &Options::default())?;
//! assert_eq!(answer.status, Status::Feasible);
//! assert_eq!(answer.schedule.len(), 1 + 2); // every instance in one 40 µs hyperperiod
//! # Ok::<(), detpath_plan::InputError>(())
//! ```

pub mod app_solver;
pub mod clock;
pub mod edf;
pub mod error;
pub mod evaluate;
pub mod generate;
pub mod need;
pub mod planner;
pub mod plot;
pub mod points;
pub mod problem;
pub mod render;
pub mod ring;
pub mod search;
pub mod slotset;
pub mod smtlib;
pub mod spec;
pub mod validate;

pub use error::InputError;
pub use planner::{plan, Options};
pub use problem::Problem;
pub use render::render;
pub use ring::{AppSlots, FlowOffsets, RingConfig};
pub use spec::{AppSpec, FlowSpec, Partitions, Plan, Reason, Spec, Status, Tx};
pub use validate::{validate, Violation};

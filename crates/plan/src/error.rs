//! Typed errors for bad input: each names the field and what would fix it.

use thiserror::Error;

/// A specification the planner refuses, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InputError {
    /// The text is not JSON of the expected shape (includes unknown fields).
    #[error("invalid plan specification: {0}")]
    Json(String),
    /// A number that must be positive is zero or negative.
    #[error("{field} must be positive, got {value}")]
    NotPositive {
        /// Path of the field, e.g. `apps[0].flows[1].period_ns`.
        field: String,
        /// The value found.
        value: i64,
    },
    /// A jitter below zero.
    #[error("{field} must be zero or more, got {value}")]
    Negative {
        /// Path of the field.
        field: String,
        /// The value found.
        value: i64,
    },
    /// A period that is not a whole number of slots.
    #[error("{field} = {period_ns} is not a multiple of slot_ns = {slot_ns}")]
    PeriodNotMultiple {
        /// Path of the field.
        field: String,
        /// The period.
        period_ns: i64,
        /// The slot duration.
        slot_ns: i64,
    },
    /// Two applications with one name, or two flows of one application with one name.
    #[error("duplicate name {name:?} ({what})")]
    DuplicateName {
        /// The repeated name.
        name: String,
        /// "application" or "flow of application X".
        what: String,
    },
    /// An empty application or flow name.
    #[error("{field} is empty: every application and flow needs a name")]
    EmptyName {
        /// Path of the field.
        field: String,
    },
    /// A ring larger than the planner's slot sets hold.
    #[error("ring_slots = {ring_slots} is more than the planner supports ({max})")]
    RingTooLarge {
        /// Requested ring size.
        ring_slots: i64,
        /// Largest supported ring.
        max: usize,
    },
    /// The hyperperiod (or the number of instances in it) is too large to enumerate.
    #[error("hyperperiod too large to enumerate: {what} (limit {limit}); use harmonic periods or a coarser slot_ns")]
    HyperperiodTooLarge {
        /// What exceeded the limit, with its value.
        what: String,
        /// The limit.
        limit: u64,
    },
}

//! The layers of this crate and their registry. A new layer is one module
//! here and one line in [`LAYERS`]; the `detpath-open` facade lists these
//! and the layers of the crates above detpath (the slot scheduler).

use crate::layer::Registry;

pub mod fault;
pub mod pcap;

pub use crate::realtime;

/// The layers a spec opened through [`crate::open_spec`] can use, innermost
/// first: the order the pipeline wraps in (a capture sees what the
/// datapath sends; the fault injector's drops never reach it).
pub const LAYERS: Registry = &[&pcap::LAYER, &fault::LAYER, &realtime::LAYER];

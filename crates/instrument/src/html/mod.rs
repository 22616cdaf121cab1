//! The parts of `detpath report DIR --html` pages that every harness draws
//! with: the page skeleton with its tables and figures ([`page`]), the
//! environment record and command ([`env`](mod@env)), and the tail-by-cause bars
//! ([`bars`]). Each harness composes its own page from them; the CLI picks
//! the page by what a result directory holds.

pub mod bars;
pub mod env;
pub mod page;

pub use page::{base64, esc};

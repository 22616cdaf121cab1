//! The solver's time limit: searches tick it and stop with [`TimedOut`] once it has passed.

use std::time::{Duration, Instant};

/// The time limit was reached: the answer is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut;

/// A deadline checked every few ticks (reading the clock on every node would cost more than the node).
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    deadline: Option<Instant>,
    ticks: u64,
}

impl Clock {
    /// A clock that expires `limit` from now (None: never).
    pub fn new(limit: Option<Duration>) -> Clock {
        let start = Instant::now();
        Clock { start, deadline: limit.map(|l| start + l), ticks: 0 }
    }

    /// Counts one unit of work; Err once the deadline has passed.
    pub fn tick(&mut self) -> Result<(), TimedOut> {
        self.ticks += 1;
        if self.ticks & 31 == 0 {
            if let Some(d) = self.deadline {
                if Instant::now() >= d {
                    return Err(TimedOut);
                }
            }
        }
        Ok(())
    }

    /// Work units counted so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Time since the clock was made.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

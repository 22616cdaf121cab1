//! How a receive call waits: the one rule every datapath follows.
//!
//! A receive always looks once. When that finds nothing, [`Wait::after_empty`]
//! decides: a non-blocking call gives up; a call whose deadline has passed
//! gives up; a busy-polling call looks again at once; a blocking call sleeps
//! in the kernel until the deadline (rounded up to whole milliseconds, as
//! poll(2) counts) or until the fd is readable, then looks again. So a
//! timeout of zero still looks once, and no call returns before its deadline
//! unless data came.
//!
//! ```ignore
//! let wait = Wait::new(mode);
//! loop {
//!     if let Some(m) = self.try_recv(buf)? { return Ok(Some(m)); }
//!     match wait.after_empty() {
//!         Step::GiveUp => return Ok(None),
//!         Step::Spin => std::hint::spin_loop(),
//!         Step::Sleep(ms) => wait_readable(self.fd(), ms, "the UDP socket")?,
//!     }
//! }
//! ```

use crate::endpoint::RecvMode;
use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::time::Instant;

/// What to do after a look that found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Return "nothing" to the caller.
    GiveUp,
    /// Look again at once (busy polling).
    Spin,
    /// Sleep in poll(2) for at most this many ms (-1: no limit), then look again.
    Sleep(i32),
}

/// One receive call's waiting policy: its mode and its deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait {
    mode: RecvMode,
    deadline: Option<Instant>,
}

impl Wait {
    /// Starts the clock of a receive call in `mode`.
    pub(crate) fn new(mode: RecvMode) -> Wait {
        let deadline = match mode {
            RecvMode::NonBlocking => None,
            RecvMode::BusyPoll { timeout } | RecvMode::Blocking { timeout } => timeout.map(|t| Instant::now() + t),
        };
        Wait { mode, deadline }
    }

    /// The step after a look that found nothing, at time `now`.
    pub(crate) fn after_empty_at(&self, now: Instant) -> Step {
        if self.deadline.is_some_and(|d| now >= d) {
            return Step::GiveUp;
        }
        match self.mode {
            RecvMode::NonBlocking => Step::GiveUp,
            RecvMode::BusyPoll { .. } => Step::Spin,
            RecvMode::Blocking { .. } => Step::Sleep(match self.deadline {
                None => -1,
                Some(d) => d.saturating_duration_since(now).as_micros().div_ceil(1000).clamp(1, i32::MAX as u128) as i32,
            }),
        }
    }

    /// The step after a look that found nothing, now.
    pub(crate) fn after_empty(&self) -> Step {
        self.after_empty_at(Instant::now())
    }
}

/// Sleeps until `fd` is readable or `timeout_ms` passes (-1: no limit). An
/// interrupted sleep (EINTR) is a normal wake-up: the caller looks again.
pub(crate) fn wait_readable(fd: RawFd, timeout_ms: i32, what: &str) -> Result<()> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call.
    if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(Error::io(format!("waiting on {what}"), e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(w: &Wait, after: Duration) -> Step {
        w.after_empty_at(Instant::now() + after)
    }

    #[test]
    fn non_blocking_gives_up_after_one_look() {
        assert_eq!(Wait::new(RecvMode::NonBlocking).after_empty(), Step::GiveUp);
    }

    #[test]
    fn busy_poll_spins_until_its_deadline() {
        let w = Wait::new(RecvMode::BusyPoll { timeout: Some(Duration::from_millis(5)) });
        assert_eq!(at(&w, Duration::ZERO), Step::Spin);
        assert_eq!(at(&w, Duration::from_millis(6)), Step::GiveUp);
        let forever = Wait::new(RecvMode::BusyPoll { timeout: None });
        assert_eq!(at(&forever, Duration::from_secs(3600)), Step::Spin);
    }

    #[test]
    fn blocking_sleeps_the_time_left_rounded_up_then_gives_up() {
        let w = Wait::new(RecvMode::Blocking { timeout: Some(Duration::from_micros(2500)) });
        match at(&w, Duration::ZERO) {
            Step::Sleep(ms) => assert!((1..=3).contains(&ms), "{ms}"),
            s => panic!("{s:?}"),
        }
        // 0.3 ms left: poll(2) would round 0 down to "don't wait"; we sleep 1 ms.
        assert_eq!(at(&w, Duration::from_micros(2200)), Step::Sleep(1));
        assert_eq!(at(&w, Duration::from_millis(3)), Step::GiveUp);
        assert_eq!(at(&Wait::new(RecvMode::Blocking { timeout: None }), Duration::from_secs(9)), Step::Sleep(-1));
    }

    #[test]
    fn a_zero_timeout_is_one_look() {
        for mode in [RecvMode::BusyPoll { timeout: Some(Duration::ZERO) }, RecvMode::Blocking { timeout: Some(Duration::ZERO) }] {
            assert_eq!(Wait::new(mode).after_empty(), Step::GiveUp, "{mode:?}");
        }
    }
}

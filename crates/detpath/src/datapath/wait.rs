//! How a receive call waits: the one rule every datapath follows.
//!
//! A receive always looks once. When that finds nothing, [`Wait::after_empty`]
//! decides: a non-blocking call gives up; a call whose deadline has passed
//! gives up; a busy-polling call looks again at once; a blocking call sleeps
//! in the kernel until the deadline (ppoll(2), to the nanosecond: poll(2)'s
//! whole milliseconds made a sender that waits 0.2 ms for its next slot sleep
//! a full 1 ms, so a 1 kHz pinger ran at about 800 Hz) or until the fd is
//! readable, then looks again. So a timeout of zero still looks once, and no
//! call returns before its deadline unless data came.
//!
//! ```ignore
//! let wait = Wait::new(mode);
//! loop {
//!     if let Some(m) = self.try_recv(buf)? { return Ok(Some(m)); }
//!     match wait.after_empty() {
//!         Step::GiveUp => return Ok(None),
//!         Step::Spin => std::hint::spin_loop(),
//!         Step::Sleep(left) => wait_readable(self.fd(), left, "the UDP socket")?,
//!     }
//! }
//! ```

use crate::endpoint::RecvMode;
use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Longest sleep while datagrams are parked for a neighbour (afxdp, dpdk),
/// so they go out (or are dropped) on time even if nothing arrives.
pub(crate) const PARKED_SLEEP: Duration = Duration::from_millis(1);

/// What to do after a look that found nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Return "nothing" to the caller.
    GiveUp,
    /// Look again at once (busy polling).
    Spin,
    /// Sleep in ppoll(2) for at most this long (None: no limit), then look again.
    Sleep(Option<Duration>),
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
            RecvMode::Blocking { .. } => Step::Sleep(self.deadline.map(|d| d.saturating_duration_since(now))),
        }
    }

    /// The step after a look that found nothing, now.
    pub(crate) fn after_empty(&self) -> Step {
        self.after_empty_at(Instant::now())
    }
}

/// Sleeps until `fd` is readable or `timeout` passes (None: no limit), to
/// the nanosecond (ppoll(2)). An interrupted sleep (EINTR) is a normal
/// wake-up: the caller looks again.
pub(crate) fn wait_readable(fd: RawFd, timeout: Option<Duration>, what: &str) -> Result<()> {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one valid pollfd, and a timespec (or null: no limit), for the duration of the call; no signal mask.
    if unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) } < 0 {
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
    fn blocking_sleeps_the_time_left_to_the_nanosecond_then_gives_up() {
        let start = Instant::now();
        let w = Wait { mode: RecvMode::Blocking { timeout: Some(Duration::from_micros(2500)) }, deadline: Some(start + Duration::from_micros(2500)) };
        assert_eq!(w.after_empty_at(start), Step::Sleep(Some(Duration::from_micros(2500))));
        // 0.3 ms left is a 0.3 ms sleep, not poll(2)'s whole millisecond.
        assert_eq!(w.after_empty_at(start + Duration::from_micros(2200)), Step::Sleep(Some(Duration::from_micros(300))));
        assert_eq!(w.after_empty_at(start + Duration::from_millis(3)), Step::GiveUp);
        assert_eq!(at(&Wait::new(RecvMode::Blocking { timeout: None }), Duration::from_secs(9)), Step::Sleep(None));
    }

    #[test]
    fn a_sleep_on_a_quiet_fd_lasts_at_least_its_timeout() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        use std::os::fd::AsRawFd;
        // Twenty 200 µs sleeps: with millisecond rounding they took at least 20 ms.
        let t = Instant::now();
        for _ in 0..20 {
            wait_readable(sock.as_raw_fd(), Some(Duration::from_micros(200)), "a test socket").unwrap();
        }
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(4), "a sleep returned before its timeout: {took:?}");
        // The upper side is not a timing gate: a loaded machine may stretch any sleep. What
        // rounding did is visible in the count of whole-millisecond sleeps, which this replaces.
        eprintln!("20 sleeps of 200 µs took {took:?}");
    }

    #[test]
    fn a_zero_timeout_is_one_look() {
        for mode in [RecvMode::BusyPoll { timeout: Some(Duration::ZERO) }, RecvMode::Blocking { timeout: Some(Duration::ZERO) }] {
            assert_eq!(Wait::new(mode).after_empty(), Step::GiveUp, "{mode:?}");
        }
    }
}

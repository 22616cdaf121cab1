//! Waiting for a side thread to open its endpoint, keeping the cause when it
//! could not. A run starts a thread in a testbed namespace that opens its
//! endpoint and sends `Ok(what the caller needs)` or `Err(why)` on a channel.
//! When the thread ends before sending anything (the namespace vanished, so
//! the closure never ran; or it panicked), the channel only says "closed":
//! the cause is in the thread's result, and this joins it to fetch it.

use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

/// A side thread started by `detpath::testbed::Side::spawn` running a closure that returns `anyhow::Result<T>`.
pub type SideThread<T> = JoinHandle<detpath::Result<anyhow::Result<T>>>;

/// Waits for `thread`'s ready message on `ready`. `Ok`: the message and the
/// still-running thread. `Err`: why the thread (named `who`) could not get
/// ready: its own message, or, when it ended without one, its error (the
/// namespace it could not enter, the setup that failed) or its panic.
pub fn wait_ready<R, T>(who: &str, ready: &Receiver<Result<R, String>>, thread: SideThread<T>) -> anyhow::Result<(R, SideThread<T>)> {
    match ready.recv() {
        Ok(Ok(r)) => Ok((r, thread)),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(anyhow::anyhow!("{who}: {e}"))
        }
        Err(_) => Err(cause_of_end(who, thread)),
    }
}

/// Why `thread` ended without saying it was ready (joins it).
fn cause_of_end<T>(who: &str, thread: SideThread<T>) -> anyhow::Error {
    match thread.join() {
        Ok(Err(e)) => anyhow::Error::from(e).context(format!("{who} thread")),
        Ok(Ok(Err(e))) => e.context(format!("{who} thread")),
        Ok(Ok(Ok(_))) => anyhow::anyhow!("{who} thread ended before it opened its endpoint"),
        Err(panic) => {
            let msg = panic.downcast_ref::<String>().map(String::as_str).or_else(|| panic.downcast_ref::<&str>().copied()).unwrap_or("(no message)");
            anyhow::anyhow!("{who} thread panicked before it opened its endpoint: {msg}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread<T: Send + 'static>(f: impl FnOnce() -> detpath::Result<anyhow::Result<T>> + Send + 'static) -> SideThread<T> {
        std::thread::spawn(f)
    }

    #[test]
    fn a_thread_that_never_ran_its_closure_gives_its_namespace_error() {
        let (_tx, rx) = std::sync::mpsc::channel::<Result<u8, String>>();
        let t = thread::<()>(move || {
            drop(_tx);
            Err(detpath::Error::io("entering the network namespace detpath-x-b", std::io::Error::from_raw_os_error(libc::ENOENT)))
        });
        let e = wait_ready("server", &rx, t).unwrap_err();
        let text = format!("{e:#}");
        assert!(text.contains("server thread") && text.contains("namespace detpath-x-b"), "{text}");
        assert!(!text.contains("closed channel"), "{text}");
    }

    #[test]
    fn a_setup_error_and_a_panic_are_named() {
        let (tx, rx) = std::sync::mpsc::channel::<Result<u8, String>>();
        let t = thread::<()>(move || {
            drop(tx);
            Ok(Err(anyhow::anyhow!("opening udp://x: address in use")))
        });
        assert!(format!("{:#}", wait_ready("receiver", &rx, t).unwrap_err()).contains("address in use"));
        let (tx, rx) = std::sync::mpsc::channel::<Result<u8, String>>();
        let t = thread::<()>(move || {
            drop(tx);
            panic!("boom")
        });
        assert!(format!("{:#}", wait_ready("sender", &rx, t).unwrap_err()).contains("panicked before it opened its endpoint: boom"));
    }

    #[test]
    fn a_ready_thread_is_handed_back_running_and_an_open_error_is_its_message() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = thread(move || {
            tx.send(Ok(7u8)).unwrap();
            Ok(Ok(42u32))
        });
        let (r, t) = wait_ready("server", &rx, t).unwrap();
        assert_eq!((r, t.join().unwrap().unwrap().unwrap()), (7, 42));
        let (tx, rx) = std::sync::mpsc::channel::<Result<u8, String>>();
        let t = thread::<()>(move || {
            tx.send(Err("no such interface dpq".into())).unwrap();
            Ok(Ok(()))
        });
        assert_eq!(format!("{:#}", wait_ready("master", &rx, t).unwrap_err()), "master: no such interface dpq");
    }
}

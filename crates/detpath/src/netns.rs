//! Entering named network namespaces (those `ip netns add` creates under
//! /run/netns) from a thread. The network namespace is per thread, so a
//! thread can open endpoints inside a namespace while the rest of the process
//! stays outside; sockets and XDP attachments keep the namespace they were
//! made in.

use crate::error::{last_os_error, Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;

/// Where `ip netns` keeps its namespace handles.
pub const NETNS_RUN_DIR: &str = "/run/netns";

/// While alive, the calling thread is in another network namespace; drop returns it.
/// Not `Send`: it must be dropped on the thread that entered.
pub struct NetnsGuard {
    original: File,
    _not_send: std::marker::PhantomData<*const ()>,
}

fn setns(f: &File, what: &str) -> Result<()> {
    // SAFETY: f is an open namespace file; CLONE_NEWNET restricts it to network namespaces.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(Error::os(format!("entering network namespace {what}"), last_os_error(), "CAP_SYS_ADMIN"));
    }
    Ok(())
}

/// Moves the calling thread into the named namespace until the guard drops.
pub fn enter(name: &str) -> Result<NetnsGuard> {
    let original = File::open("/proc/thread-self/ns/net").map_err(|e| Error::io("opening this thread's network namespace", e))?;
    let target = File::open(format!("{NETNS_RUN_DIR}/{name}")).map_err(|e| Error::Netns {
        ns: name.to_string(),
        why: format!("{e}; does it exist? (`ip netns list`; for the testbed run `detpath testbed up`)"),
    })?;
    setns(&target, name)?;
    Ok(NetnsGuard { original, _not_send: std::marker::PhantomData })
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        // Returning to the namespace we came from cannot fail for lack of
        // privilege (we were just there); if it does, say so loudly.
        if let Err(e) = setns(&self.original, "of origin") {
            eprintln!("detpath: {e}");
        }
    }
}

/// Runs `f` on the calling thread inside the named namespace.
pub fn run_in<T>(name: &str, f: impl FnOnce() -> T) -> Result<T> {
    let _guard = enter(name)?;
    Ok(f())
}

/// Spawns a thread that runs `f` inside the named namespace.
pub fn spawn_in<T: Send + 'static>(name: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<Result<T>> {
    let name = name.to_string();
    std::thread::spawn(move || run_in(&name, f))
}

/// Whether a namespace of this name exists.
pub fn exists(name: &str) -> bool {
    std::path::Path::new(NETNS_RUN_DIR).join(name).exists()
}

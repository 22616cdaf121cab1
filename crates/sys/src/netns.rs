//! Network namespaces, the only place detpath calls `setns`.
//!
//! The network namespace is per thread, so a thread can open endpoints
//! inside a namespace while the rest of the process stays outside; sockets,
//! XDP links and DPDK ports keep the namespace they were made in. Named
//! namespaces are those `ip netns add` creates under [`NETNS_RUN_DIR`].

use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

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
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EPERM) => Error::MissingCapability { cap: "CAP_SYS_ADMIN", what: format!("entering network namespace {what}") },
            _ => Error::Netns { ns: what.to_string(), why: format!("setns: {e}") },
        });
    }
    Ok(())
}

/// The calling thread's network namespace, as an open file.
pub fn current() -> Result<File> {
    File::open("/proc/thread-self/ns/net").map_err(|e| Error::io("opening this thread's network namespace", e))
}

/// The inode of a namespace file: equal inodes are the same namespace.
pub fn inode(ns: &File) -> Result<u64> {
    Ok(ns.metadata().map_err(|e| Error::io("reading a network namespace's inode", e))?.ino())
}

/// Opens the named namespace (`/run/netns/NAME`).
pub fn open(name: &str) -> Result<File> {
    File::open(format!("{NETNS_RUN_DIR}/{name}"))
        .map_err(|e| Error::Netns { ns: name.to_string(), why: format!("{e}; does it exist? (`ip netns list`; for the testbed run `detpath testbed up`)") })
}

/// Moves the calling thread into the named namespace until the guard drops.
pub fn enter(name: &str) -> Result<NetnsGuard> {
    enter_file(&open(name)?, name)
}

/// Moves the calling thread into the namespace of `ns` until the guard drops.
pub fn enter_file(ns: &File, what: &str) -> Result<NetnsGuard> {
    let original = current()?;
    setns(ns, what)?;
    Ok(NetnsGuard { original, _not_send: std::marker::PhantomData })
}

/// Moves the calling thread into the named namespace for the rest of its life
/// (a thread that serves from there).
pub fn move_to(name: &str) -> Result<()> {
    setns(&open(name)?, name)
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

/// Runs `f` on a short-lived thread inside the namespace of `ns` and waits for
/// it: for work that must happen there from any thread (drop and signal
/// handlers restoring an interface), without moving the caller.
pub fn run_on_thread_in<T: Send>(ns: &File, f: impl FnOnce() -> T + Send) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            // The thread ends with the scope, so it never needs to come back.
            setns(ns, "of the endpoint")?;
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| Err(Error::Netns { ns: "of the endpoint".into(), why: "the thread working there panicked".into() }))
    })
}

/// Whether a namespace of this name exists.
pub fn exists(name: &str) -> bool {
    std::path::Path::new(NETNS_RUN_DIR).join(name).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_namespace_is_named() {
        let e = enter("detpath-no-such-ns").err().unwrap().to_string();
        assert!(e.contains("detpath-no-such-ns") && e.contains("ip netns list"), "{e}");
        assert!(!exists("detpath-no-such-ns"));
    }

    #[test]
    fn a_thread_in_its_own_namespace_is_the_same_namespace() {
        let me = current().unwrap();
        let ino = inode(&me).unwrap();
        let there = run_on_thread_in(&me, || inode(&current().unwrap()).unwrap()).unwrap();
        assert_eq!(there, ino);
    }
}

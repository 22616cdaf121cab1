//! Undo on signals. Everything that changes the host (an XDP attachment, a
//! namespace, a tuning change) undoes itself on drop; it also registers its
//! undo here so SIGINT / SIGTERM run it before the process exits.
//!
//! Two policies, chosen once per process with [`install_signal_handler`]:
//! - [`OnSignal::CleanupAndExit`]: run every registered undo, exit 130.
//! - [`OnSignal::SetFlag`]: set [`interrupted`] so a long run can stop at
//!   the next round, keep its results and drop its guards normally; a second
//!   signal falls back to cleanup-and-exit.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, Once};

type Undo = Box<dyn FnOnce() + Send>;

static REGISTRY: Mutex<BTreeMap<u64, (String, Undo)>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();

/// What a signal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    CleanupAndExit,
    SetFlag,
}

/// Unregisters its undo when dropped (the owner undid the change itself).
#[must_use = "dropping the handle unregisters the undo"]
pub struct CleanupHandle(u64);

impl Drop for CleanupHandle {
    fn drop(&mut self) {
        if let Ok(mut r) = REGISTRY.lock() {
            r.remove(&self.0);
        }
    }
}

/// Registers `undo` to run if the process is stopped by a signal before the
/// handle drops. `what` names the change for the message printed then.
pub fn register(what: String, undo: Box<dyn FnOnce() + Send>) -> CleanupHandle {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut r) = REGISTRY.lock() {
        r.insert(id, (what, undo));
    }
    CleanupHandle(id)
}

/// Runs every registered undo, newest first. Safe to call more than once.
pub fn run_all() {
    let items: Vec<(u64, (String, Undo))> = match REGISTRY.lock() {
        Ok(mut r) => std::mem::take(&mut *r).into_iter().rev().collect(),
        Err(_) => return,
    };
    for (_, (what, undo)) in items {
        eprintln!("detpath: undoing {what}");
        undo();
    }
}

/// True once a SIGINT/SIGTERM arrived under [`OnSignal::SetFlag`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Installs the process's SIGINT/SIGTERM handler (first call wins).
pub fn install_signal_handler(policy: OnSignal) {
    INSTALL.call_once(|| {
        let r = ctrlc::set_handler(move || {
            if policy == OnSignal::SetFlag && !INTERRUPTED.swap(true, Ordering::SeqCst) {
                eprintln!("\ndetpath: interrupted; finishing and keeping results (again to abort)");
                return;
            }
            run_all();
            std::process::exit(130);
        });
        if let Err(e) = r {
            eprintln!("detpath: cannot install the signal handler: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn dropped_handles_do_not_run_and_live_ones_run_once() {
        let hits = Arc::new(AtomicU64::new(0));
        let h1 = {
            let hits = hits.clone();
            register(
                "one".into(),
                Box::new(move || {
                    hits.fetch_add(1, Ordering::SeqCst);
                }),
            )
        };
        let h2 = {
            let hits = hits.clone();
            register(
                "two".into(),
                Box::new(move || {
                    hits.fetch_add(10, Ordering::SeqCst);
                }),
            )
        };
        drop(h1);
        run_all();
        run_all();
        assert_eq!(hits.load(Ordering::SeqCst), 10);
        drop(h2);
    }
}

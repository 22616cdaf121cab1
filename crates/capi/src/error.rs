//! Errors across the C boundary: a negative errno for the caller's `if`, and
//! the message (the same text the `detpath` CLI prints) in a thread-local
//! string for `detpath_last_error()`. Panics are caught here and become an
//! error too, so none unwinds into C.

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A failed call: the errno it returns (negated) and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub errno: i32,
    pub message: String,
}

impl Failure {
    pub fn new(errno: i32, message: String) -> Failure {
        Failure { errno, message }
    }

    /// A NULL or otherwise unusable argument.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(libc::EINVAL, message.into())
    }
}

/// The errno that best names a detpath error (the message says the rest).
pub fn errno_of(e: &dp::Error) -> i32 {
    e.errno()
}

impl From<dp::Error> for Failure {
    fn from(e: dp::Error) -> Failure {
        Failure::new(errno_of(&e), e.to_string())
    }
}

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Records the message of a failure for this thread.
pub fn set_last(message: &str) {
    // A message never holds NUL in practice; if it did, cut it there rather than lose it.
    let text = message.split('\0').next().unwrap_or_default();
    let c = CString::new(text).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// The calling thread's last message; valid until its next failing call.
pub fn last_ptr() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
    format!("internal error in libdetpath (a bug: please report it): {what}")
}

/// Runs one entry point: a failure is recorded and becomes `on_error(errno)`,
/// a panic is caught and becomes `on_error(EIO)`.
pub fn call<T>(on_error: impl Fn(i32) -> T, f: impl FnOnce() -> Result<T, Failure>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(fail)) => {
            set_last(&fail.message);
            on_error(fail.errno)
        }
        Err(p) => {
            set_last(&panic_message(p.as_ref()));
            on_error(libc::EIO)
        }
    }
}

/// A C string argument as UTF-8, or a failure naming the argument.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: last_ptr points to this thread's NUL-terminated message.
        unsafe { CStr::from_ptr(last_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_an_error_with_a_message() {
        let r: i32 = call(|e| -e, || -> Result<i32, Failure> { panic!("boom {}", 7) });
        assert_eq!(r, -libc::EIO);
        assert!(last().contains("internal error in libdetpath") && last().contains("boom 7"), "{}", last());
    }

    #[test]
    fn failures_set_the_message_and_successes_keep_it() {
        let r: i32 = call(|e| -e, || Err(Failure::invalid("first")));
        assert_eq!((r, last()), (-libc::EINVAL, "first".to_string()));
        let ok: i32 = call(|e| -e, || Ok(5));
        assert_eq!((ok, last()), (5, "first".to_string()));
        set_last("with\0nul inside");
        assert_eq!(last(), "with");
    }

    #[test]
    fn detpath_errors_keep_their_text_and_map_to_errno() {
        let e = detpath_open::open("bogus://x").err().expect("unknown datapath");
        let text = e.to_string();
        let f = Failure::from(e);
        assert_eq!((f.errno, f.message), (libc::EINVAL, text));
    }
}

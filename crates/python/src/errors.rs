//! The Python exceptions: `detpath.Error` and one subclass per kind of
//! detpath error, each carrying detpath's own message (the text the CLI prints).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(detpath, Error, PyException, "Base class of every error detpath raises.");
create_exception!(detpath, SpecError, Error, "The endpoint spec is invalid or names an unknown datapath.");
create_exception!(detpath, InterfaceError, Error, "The interface, queue or address is missing, down or unsuitable.");
create_exception!(detpath, CapabilityError, Error, "A privilege or resource limit is missing (run as root or grant the capability).");
create_exception!(detpath, UnsupportedError, Error, "The datapath, driver or kernel does not support what was asked.");
create_exception!(detpath, NetworkError, Error, "A send or receive failed (unresolved peer, payload too large, I/O error).");
create_exception!(detpath, ClosedError, Error, "The endpoint or testbed was closed.");
create_exception!(detpath, DdsError, Error, "The DDS API (detpath.dds) refused a call: the message says what was wrong.");
create_exception!(detpath, QosError, DdsError, "A QoS policy detpath.dds does not know or cannot honour.");
create_exception!(detpath, SampleError, DdsError, "A sample that cannot be written or read: too large, not serializable, or of another layout.");
create_exception!(detpath, ResultsError, Error, "A bench result directory is missing or malformed.");

/// The Python exception for a detpath error.
pub fn to_py(e: dp::Error) -> PyErr {
    let msg = e.to_string();
    // One mapping for every binding: detpath's own errno for the error.
    match e.errno() {
        libc::EINVAL => SpecError::new_err(msg),
        libc::ENODEV | libc::ENETDOWN | libc::EADDRNOTAVAIL | libc::EBUSY | libc::ENOENT => InterfaceError::new_err(msg),
        libc::EPERM | libc::ENOMEM => CapabilityError::new_err(msg),
        libc::EOPNOTSUPP => UnsupportedError::new_err(msg),
        libc::EHOSTUNREACH | libc::EMSGSIZE => NetworkError::new_err(msg),
        _ if matches!(e, dp::Error::Io { .. }) => NetworkError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("InterfaceError", py.get_type::<InterfaceError>())?;
    m.add("CapabilityError", py.get_type::<CapabilityError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("NetworkError", py.get_type::<NetworkError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("ResultsError", py.get_type::<ResultsError>())?;
    m.add("DdsError", py.get_type::<DdsError>())?;
    m.add("QosError", py.get_type::<QosError>())?;
    m.add("SampleError", py.get_type::<SampleError>())?;
    Ok(())
}

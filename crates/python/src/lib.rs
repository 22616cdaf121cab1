//! The native part of the `detpath` Python package (`detpath._detpath`):
//! `open`, `Endpoint`, `Testbed` and the exceptions, as Python sees them.
//! The pure-Python parts (`detpath.results`) live in `python/detpath/`.

#![warn(missing_docs)]

mod dds;
mod endpoint;
mod errors;
mod testbed;

use pyo3::prelude::*;

/// Opens an endpoint from a spec such as `"afxdp://eth1?port=7000"` or
/// `"udp://10.77.0.2:7000"`. With `netns`, the endpoint is made inside that
/// network namespace (it keeps it afterwards, whichever thread uses it).
/// With `sched=slots&slot_ns=...&classes=...` sends go through the slot
/// scheduler and leave in their slots while the endpoint is received on.
/// Raises a `detpath.Error` subclass with detpath's message on failure.
#[pyfunction]
#[pyo3(signature = (spec, netns=None))]
fn open(py: Python<'_>, spec: &str, netns: Option<&str>) -> PyResult<endpoint::Endpoint> {
    let ep = py
        .detach(|| match netns {
            None => detpath_open::open(spec),
            Some(ns) => dp::sys::netns::run_in(ns, || detpath_open::open(spec)).map_err(dp::Error::from).and_then(|r| r),
        })
        .map_err(errors::to_py)?;
    Ok(endpoint::Endpoint::new(ep))
}

/// The native part of the `detpath` package: `open`, `Endpoint`, `Testbed` and
/// the `detpath.Error` exceptions. Import `detpath`, which re-exports them.
#[pymodule]
fn _detpath(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(dds::ros2_names, m)?)?;
    m.add_class::<endpoint::Endpoint>()?;
    m.add_class::<testbed::Testbed>()?;
    m.add_class::<dds::Participant>()?;
    m.add_class::<dds::Writer>()?;
    m.add_class::<dds::Reader>()?;
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

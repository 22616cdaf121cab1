//! `detpath.Testbed`: the two-namespace veth testbed, for tests and
//! experiments from Python (root). Removed on `close()`, on leaving a
//! `with` block, or when garbage-collected.

use crate::errors::{to_py, ClosedError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// Two network namespaces joined by a veth pair: side `a` (dpa, 10.77.0.1)
/// and side `b` (dpb, 10.77.0.2). Open endpoints inside a side with
/// `detpath.open(tb.uri("b", "afxdp", 7000), netns=tb.b["netns"])`.
#[pyclass(module = "detpath", name = "Testbed", frozen)]
pub struct Testbed {
    inner: Mutex<Option<dp::testbed::Testbed>>,
    cfg: dp::testbed::TestbedConfig,
}

impl Testbed {
    fn side(&self, name: &str) -> PyResult<&dp::testbed::Side> {
        match name {
            "a" => Ok(&self.cfg.a),
            "b" => Ok(&self.cfg.b),
            other => Err(PyValueError::new_err(format!("side must be 'a' or 'b', not {other:?}"))),
        }
    }

    fn side_dict<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
        if self.inner.lock().map(|g| g.is_none()).unwrap_or(true) {
            return Err(ClosedError::new_err("the testbed was closed"));
        }
        let s = self.side(name)?;
        let d = PyDict::new(py);
        d.set_item("netns", &s.netns)?;
        d.set_item("iface", &s.iface)?;
        d.set_item("addr", s.addr.to_string())?;
        d.set_item("mac", &s.mac)?;
        Ok(d)
    }
}

#[pymethods]
impl Testbed {
    /// Brings a testbed up. `prefix` names its namespaces `<prefix>-a` and
    /// `<prefix>-b`; by default the names are unique to this process.
    #[new]
    #[pyo3(signature = (prefix=None))]
    fn new(py: Python<'_>, prefix: Option<&str>) -> PyResult<Testbed> {
        let cfg = match prefix {
            Some(p) => dp::testbed::TestbedConfig::with_prefix(p),
            None => dp::testbed::TestbedConfig::unique("py"),
        };
        let tb = py.detach(|| dp::testbed::Testbed::up(cfg.clone())).map_err(to_py)?;
        Ok(Testbed { inner: Mutex::new(Some(tb)), cfg })
    }

    /// Side a: a dict with `netns`, `iface`, `addr`, `mac`.
    #[getter]
    fn a<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.side_dict(py, "a")
    }

    /// Side b: a dict with `netns`, `iface`, `addr`, `mac`.
    #[getter]
    fn b<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.side_dict(py, "b")
    }

    /// The endpoint spec of `datapath` on `side` ('a' or 'b') at `port`.
    fn uri(&self, side: &str, datapath: &str, port: u16) -> PyResult<String> {
        Ok(self.side(side)?.uri(datapath, port))
    }

    /// Removes both namespaces (and everything in them). Idempotent.
    fn close(&self, py: Python<'_>) {
        let taken = self.inner.lock().ok().and_then(|mut g| g.take());
        py.detach(|| drop(taken));
    }

    /// Returns the testbed itself, for `with detpath.Testbed() as tb:`.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Removes the testbed on leaving the `with` block; an exception raised
    /// inside the block goes on (it is not suppressed).
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }
}

//! `detpath.Endpoint`: one endpoint, used from Python.
//!
//! The GIL is released while a call waits in the datapath, so other Python
//! threads run meanwhile. Long waits are cut into slices of at most
//! [`SIGNAL_SLICE`] so Ctrl-C (KeyboardInterrupt) is seen. An endpoint is
//! used by one thread at a time, as in the C API: a call while another
//! thread is inside one raises `detpath.Error` at once (no waiting, no race).

use crate::errors::{to_py, ClosedError, Error};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Mutex, TryLockError};
use std::time::{Duration, Instant};

/// The longest a receive waits without looking for a pending signal.
const SIGNAL_SLICE: Duration = Duration::from_millis(100);
/// Receive buffer: the largest UDP payload fits.
const RX_BYTES: usize = 65536;

/// What `recv` returns: payload, sender `(ip, port)`, CLOCK_MONOTONIC ns at receipt.
type Received = (Py<PyBytes>, (String, u16), u64);

struct State {
    ep: Box<dyn dp::Endpoint>,
    /// Receive buffer, allocated once: receiving allocates only the returned `bytes`.
    buf: Vec<u8>,
}

/// A detpath endpoint: sends UDP datagrams to peers and receives them on one
/// datapath (udp, afxdp, xdppoll, dpdk). Made by `detpath.open(spec)`; a
/// context manager that closes it.
#[pyclass(module = "detpath", name = "Endpoint", frozen)]
pub struct Endpoint {
    state: Mutex<Option<State>>,
    /// The capability summary line, kept for `repr` after close.
    summary: String,
    /// The address and port the endpoint owns, kept for `local_addr` and `repr` after close.
    local: SocketAddrV4,
}

fn peer_arg(peer: (String, u16)) -> PyResult<SocketAddrV4> {
    let ip: Ipv4Addr = peer.0.parse().map_err(|_| PyValueError::new_err(format!("`{}` is not an IPv4 address (dotted quad, e.g. '10.77.0.2')", peer.0)))?;
    Ok(SocketAddrV4::new(ip, peer.1))
}

fn addr_tuple(a: SocketAddrV4) -> (String, u16) {
    (a.ip().to_string(), a.port())
}

impl Endpoint {
    /// Wraps an opened endpoint for Python; its local address and capability
    /// summary are read once here so `repr` still works after `close()`.
    pub fn new(ep: Box<dyn dp::Endpoint>) -> Endpoint {
        let summary = ep.capabilities().summary();
        let local = ep.local_addr();
        Endpoint { state: Mutex::new(Some(State { ep, buf: vec![0; RX_BYTES] })), summary, local }
    }

    /// Runs `f` on the open endpoint; errors when closed or in use by another thread.
    fn with<T>(&self, f: impl FnOnce(&mut State) -> PyResult<T>) -> PyResult<T> {
        let mut guard = match self.state.try_lock() {
            Ok(g) => g,
            Err(TryLockError::WouldBlock) => {
                return Err(Error::new_err("the endpoint is in use by another thread right now; an endpoint is used by one thread at a time"))
            }
            // A panic inside a call cannot leave the endpoint half-changed in a way Python could see; go on.
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
        };
        match guard.as_mut() {
            Some(state) => f(state),
            None => Err(ClosedError::new_err("the endpoint is closed")),
        }
    }
}

#[pymethods]
impl Endpoint {
    /// Sends one datagram: `data` (bytes or bytearray, may be empty) to `peer`,
    /// an `(ip, port)` tuple such as `("10.77.0.2", 7000)`. Returns None once
    /// the datapath has taken the datagram. Raises a `detpath.Error` (mostly
    /// `detpath.NetworkError`) when this datagram cannot go (peer off the
    /// interface's subnets or its MAC unresolved, payload too large, ring or
    /// socket buffer full; the endpoint stays usable),
    /// `ValueError` for an `ip` that is not a dotted quad, `TypeError` for
    /// other `data`, `detpath.ClosedError` after `close()`.
    fn send_to(&self, py: Python<'_>, data: &Bound<'_, PyAny>, peer: (String, u16)) -> PyResult<()> {
        let peer = peer_arg(peer)?;
        let copied;
        let payload: &[u8] = if let Ok(b) = data.cast::<PyBytes>() {
            b.as_bytes()
        } else if let Ok(b) = data.cast::<PyByteArray>() {
            copied = b.to_vec();
            &copied
        } else {
            return Err(PyTypeError::new_err(format!("data must be bytes or bytearray, not {}", data.get_type().name()?)));
        };
        self.with(|s| py.detach(|| s.ep.send_to(payload, peer)).map_err(to_py))
    }

    /// Receives one datagram. `timeout`: seconds to wait (None: forever, 0: do
    /// not wait); `busy`: spin on the ring or socket (True, lowest latency) or
    /// sleep in the kernel (False). Returns `(payload, (ip, port), rx_ns)`,
    /// `rx_ns` being CLOCK_MONOTONIC nanoseconds at receipt, or None when the
    /// wait ended with nothing. A datagram longer than 65536 bytes is cut to
    /// that. Ctrl-C interrupts a wait within 0.1 s (KeyboardInterrupt).
    #[pyo3(signature = (timeout=None, busy=true))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>, busy: bool) -> PyResult<Option<Received>> {
        let deadline = match timeout {
            None => None,
            Some(t) if t.is_finite() && t >= 0.0 => Some(Instant::now() + Duration::from_secs_f64(t.min(1e9))),
            Some(t) => return Err(PyValueError::new_err(format!("timeout must be None or a number of seconds >= 0, not {t}"))),
        };
        let deliver = |buf: &[u8], rx: dp::RxMeta| (PyBytes::new(py, &buf[..rx.len]).unbind(), addr_tuple(rx.peer), rx.rx_ns);
        if timeout == Some(0.0) {
            // Polling: no clock reads, no GIL release (the call does not wait).
            return self.with(|s| Ok(s.ep.recv(&mut s.buf, dp::RecvMode::NonBlocking).map_err(to_py)?.map(|rx| deliver(&s.buf, rx))));
        }
        self.with(|s| loop {
            let slice = match deadline {
                None => SIGNAL_SLICE,
                Some(d) => d.saturating_duration_since(Instant::now()).min(SIGNAL_SLICE),
            };
            let mode = match (slice.is_zero(), busy) {
                (true, _) => dp::RecvMode::NonBlocking,
                (false, true) => dp::RecvMode::BusyPoll { timeout: Some(slice) },
                (false, false) => dp::RecvMode::Blocking { timeout: Some(slice) },
            };
            let State { ep, buf } = &mut *s;
            let got = if slice.is_zero() { ep.recv(buf, mode) } else { py.detach(|| ep.recv(buf, mode)) };
            if let Some(rx) = got.map_err(to_py)? {
                return Ok(Some(deliver(buf, rx)));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) || slice.is_zero() {
                return Ok(None);
            }
            py.check_signals()?;
        })
    }

    /// The counters since the endpoint was opened, as a dict of ints by name
    /// (`rx_packets`, `rx_bytes`, `tx_packets`, `tx_no_neigh`, ...: the same
    /// names as the C API and the `detpath_endpoint_<name>_total` metrics).
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.with(|s| Ok(s.ep.counters()))?;
        let d = PyDict::new(py);
        // Every counter of detpath's table, by name (a new counter needs no edit here).
        for (name, value) in c.iter() {
            d.set_item(name, value)?;
        }
        Ok(d)
    }

    /// What the endpoint obtained, which may be less than the spec asked for,
    /// as a dict: `datapath`, `iface`, `queue`, `xdp_mode` ('native', 'skb' or
    /// None), `zero_copy` and `need_wakeup` (AF_XDP; None elsewhere),
    /// `busy_poll`, `max_payload` (bytes one datagram carries in one frame),
    /// `max_batch` (datagrams one call moves), `notes` (list of str) and
    /// `summary`, the one-line form (e.g. 'afxdp native copy q0 need_wakeup busy-poll').
    fn capabilities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.with(|s| Ok(s.ep.capabilities().clone()))?;
        let d = PyDict::new(py);
        d.set_item("datapath", c.datapath)?;
        d.set_item("iface", c.iface.clone())?;
        d.set_item("queue", c.queue)?;
        d.set_item("xdp_mode", c.xdp_mode.map(|m| m.as_str()))?;
        d.set_item("zero_copy", c.zero_copy)?;
        d.set_item("need_wakeup", c.need_wakeup)?;
        d.set_item("busy_poll", c.busy_poll)?;
        d.set_item("max_payload", c.max_payload)?;
        d.set_item("max_batch", c.max_batch)?;
        d.set_item("notes", c.notes.clone())?;
        d.set_item("summary", c.summary())?;
        Ok(d)
    }

    /// The `(ip, port)` this endpoint owns.
    #[getter]
    fn local_addr(&self) -> (String, u16) {
        addr_tuple(self.local)
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        // Never wait for the lock here: the holder may be receiving with the
        // GIL released and would need the GIL (which we hold) to finish.
        match self.state.try_lock() {
            Ok(g) => g.is_none(),
            Err(TryLockError::WouldBlock) => false,
            Err(TryLockError::Poisoned(p)) => p.into_inner().is_none(),
        }
    }

    /// Closes the endpoint (detaches its XDP program, frees its rings).
    /// Closing twice is allowed; any other call afterwards raises `detpath.ClosedError`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = match self.state.try_lock() {
            Ok(mut g) => g.take(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::new_err("the endpoint is in use by another thread; close it from that thread or after its call returns"))
            }
        };
        if let Some(state) = taken {
            py.detach(|| drop(state));
        }
        Ok(())
    }

    /// Returns the endpoint itself, for `with detpath.open(spec) as ep:`.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the endpoint on leaving the `with` block; an exception raised
    /// inside the block goes on (it is not suppressed).
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// `<detpath.Endpoint IP:PORT (capability summary) open|closed>`.
    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!("<detpath.Endpoint {} ({}) {state}>", self.local, self.summary)
    }
}

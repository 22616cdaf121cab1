//! The native half of `detpath.dds`: a participant, raw writers and raw
//! readers of detpath-dds, carrying payloads the user's Python type
//! serialized (`pycdr2` / `cyclonedds.idl` `IdlStruct`), so one type
//! declaration serves detpath and CycloneDDS. The Python half
//! (`python/detpath/dds.py`) turns samples into bytes and back and spells
//! the API as the `cyclonedds` package does.
//!
//! The GIL is released while a call waits (a waiting take, a participant's
//! goodbye); waits are cut into slices so Ctrl-C is seen.

use crate::errors::{ClosedError, DdsError, QosError, SampleError};
use detpath_dds::{DomainParticipant, Error as DdsErr, InstanceState, ParticipantOptions, Qos, RawReader, RawWriter, SampleInfo};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest a waiting take waits without looking for a pending signal.
const SIGNAL_SLICE: Duration = Duration::from_millis(100);

/// The Python exception for a detpath-dds error.
pub fn dds_to_py(e: DdsErr) -> PyErr {
    let msg = e.to_string();
    match e {
        DdsErr::Open { source, .. } | DdsErr::Netns { source, .. } => {
            // The datapath's class (interface, capability, spec), with the whole message.
            let class = crate::errors::to_py(source);
            Python::attach(|py| PyErr::from_type(class.get_type(py), msg))
        }
        DdsErr::BadQos(_) => QosError::new_err(msg),
        DdsErr::SampleTooLarge { .. } | DdsErr::BadPayload(_) => SampleError::new_err(msg),
        DdsErr::BadPeer(_) | DdsErr::NoDiscovery { .. } => crate::errors::SpecError::new_err(msg),
        DdsErr::Closed => ClosedError::new_err(msg),
        _ => DdsError::new_err(msg),
    }
}

/// The DDS names of a ROS 2 topic and message type (`("/cmd_vel",
/// "geometry_msgs.msg.Twist")` gives `("rt/cmd_vel",
/// "geometry_msgs::msg::dds_::Twist_")`); a name ROS refuses raises
/// `DdsError` saying why.
#[pyfunction]
#[pyo3(name = "_ros2_names")]
pub fn ros2_names(ros_topic: &str, ros_type: &str) -> PyResult<(String, String)> {
    let topic = detpath_dds::ros2::topic_name(ros_topic).map_err(dds_to_py)?;
    Ok((topic, detpath_dds::ros2::type_name(ros_type).map_err(dds_to_py)?))
}

/// A participant (`detpath.dds.DomainParticipant` wraps it).
#[pyclass(module = "detpath._detpath", name = "_DdsParticipant", frozen)]
pub struct Participant {
    inner: Mutex<Option<Arc<DomainParticipant>>>,
}

impl Participant {
    fn get(&self) -> PyResult<Arc<DomainParticipant>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone().ok_or_else(|| ClosedError::new_err("the participant is closed"))
    }
}

#[pymethods]
impl Participant {
    #[new]
    #[pyo3(signature = (domain_id, endpoint, peers, netns=None, busy=false, options=""))]
    fn new(py: Python<'_>, domain_id: u32, endpoint: &str, peers: Vec<String>, netns: Option<String>, busy: bool, options: &str) -> PyResult<Participant> {
        let parsed = ParticipantOptions::parse(options).map_err(dds_to_py)?;
        let opts = ParticipantOptions { netns, wait: if busy { detpath_dds::Wait::Busy } else { detpath_dds::Wait::Block }, ..parsed };
        let peers: Vec<&str> = peers.iter().map(String::as_str).collect();
        let dp = py.detach(|| DomainParticipant::with_options(domain_id, endpoint, &peers, opts)).map_err(dds_to_py)?;
        Ok(Participant { inner: Mutex::new(Some(Arc::new(dp))) })
    }

    /// Says goodbye to the peers and stops the participant's thread.
    fn close(&self, py: Python<'_>) {
        let dp = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        py.detach(|| drop(dp));
    }

    /// Waits until the engine handled datagrams or `timeout` s passed (GIL
    /// released): listeners and wait sets look again after it.
    fn wait_for_activity(&self, py: Python<'_>, timeout: f64) -> PyResult<()> {
        let dp = self.get()?;
        let t = Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
        py.detach(|| dp.wait_for_activity(t)).map_err(dds_to_py)
    }

    /// Remote participants known now.
    fn remote_participants(&self) -> PyResult<usize> {
        self.get()?.remote_participants().map_err(dds_to_py)
    }

    /// The engine's counters as a dict (rx_datagrams, rx_malformed, ...).
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.get()?.counters().map_err(dds_to_py)?;
        let d = PyDict::new(py);
        for (k, v) in [
            ("rx_datagrams", c.rx_datagrams),
            ("tx_datagrams", c.tx_datagrams),
            ("rx_malformed", c.rx_malformed),
            ("retransmits", c.retransmits),
            ("data_lost", c.data_lost),
            ("discovery_rejected", c.discovery_rejected),
            ("incompatible_qos", c.incompatible_qos),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// A writer of serialized samples.
    fn create_writer(&self, topic: &str, type_name: &str, keyed: bool, qos: &str) -> PyResult<Writer> {
        let q = Qos::parse(qos).map_err(dds_to_py)?;
        let w = self.get()?.create_raw_writer(topic, type_name, keyed, &q).map_err(dds_to_py)?;
        Ok(Writer { w })
    }

    /// A reader of serialized samples.
    fn create_reader(&self, topic: &str, type_name: &str, keyed: bool, qos: &str) -> PyResult<Reader> {
        let q = Qos::parse(qos).map_err(dds_to_py)?;
        let r = self.get()?.create_raw_reader(topic, type_name, keyed, &q).map_err(dds_to_py)?;
        Ok(Reader { r })
    }
}

fn key16(key_hash: Option<&[u8]>) -> PyResult<Option<[u8; 16]>> {
    key_hash.map(|k| k.try_into().map_err(|_| SampleError::new_err(format!("a key hash is 16 bytes, not {}", k.len())))).transpose()
}

/// A raw writer (`detpath.dds.DataWriter` wraps it).
#[pyclass(module = "detpath._detpath", name = "_DdsWriter", frozen)]
pub struct Writer {
    w: RawWriter,
}

#[pymethods]
impl Writer {
    /// Writes one serialized sample (encapsulation header first) with its key hash.
    #[pyo3(signature = (payload, key_hash=None))]
    fn write(&self, payload: &[u8], key_hash: Option<&[u8]>) -> PyResult<()> {
        self.w.write(payload, key16(key_hash)?).map_err(dds_to_py)
    }

    /// Disposes (1) / unregisters (2) the instance of `key_hash`, sending the serialized key too.
    fn write_status(&self, key_hash: &[u8], status: u32, serialized_key: &[u8]) -> PyResult<()> {
        let k = key16(Some(key_hash))?.unwrap_or_default();
        self.w.write_status(k, status, serialized_key).map_err(dds_to_py)
    }

    /// matched_subscriptions, incompatible_qos, written, unacknowledged, ...
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.w.status().map_err(dds_to_py)?;
        let d = PyDict::new(py);
        d.set_item("matched_subscriptions", s.matched_subscriptions)?;
        d.set_item("incompatible_qos", s.incompatible_qos)?;
        d.set_item("unmatched", s.unmatched)?;
        d.set_item("written", s.detail.written)?;
        d.set_item("unacknowledged", s.detail.unacknowledged)?;
        d.set_item("offered_deadline_missed", s.detail.offered_deadline_missed)?;
        Ok(d)
    }

    /// Waits until every reliable reader acknowledged everything, at most `timeout` s.
    fn wait_for_acks(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let end = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if py.detach(|| self.w.wait_for_acknowledgments(left.min(SIGNAL_SLICE))).map_err(dds_to_py)? {
                return Ok(true);
            }
            py.check_signals()?;
            if left.is_zero() {
                return Ok(false);
            }
        }
    }
}

/// What `take` returns per sample: payload and its info.
type Taken = (Py<PyBytes>, Py<PyDict>);

fn info_dict<'py>(py: Python<'py>, i: &SampleInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("publication_handle", PyBytes::new(py, &i.writer.to_bytes()))?;
    d.set_item("sequence_number", i.sn.0)?;
    d.set_item("source_timestamp", i.source_timestamp.map(|t| t.to_nanos()))?;
    d.set_item("reception_timestamp", i.reception_ns)?;
    d.set_item("valid_data", i.valid_data)?;
    d.set_item("instance_state", instance_state_name(i.instance_state))?;
    d.set_item("key_hash", i.key_hash.map(|k| PyBytes::new(py, &k)))?;
    Ok(d)
}

fn instance_state_name(s: InstanceState) -> &'static str {
    match s {
        InstanceState::Alive => "alive",
        InstanceState::Disposed => "disposed",
        InstanceState::NoWriters => "no_writers",
    }
}

fn to_py_samples(py: Python<'_>, got: Vec<detpath_dds::RawSample>) -> PyResult<Vec<Taken>> {
    got.iter().map(|(b, i)| Ok((PyBytes::new(py, b).unbind(), info_dict(py, i)?.unbind()))).collect()
}

/// A raw reader (`detpath.dds.DataReader` wraps it).
#[pyclass(module = "detpath._detpath", name = "_DdsReader", frozen)]
pub struct Reader {
    r: RawReader,
}

#[pymethods]
impl Reader {
    /// Up to `n` samples without waiting; `keep`: read (they stay), else take.
    fn take(&self, py: Python<'_>, n: usize, keep: bool) -> PyResult<Vec<Taken>> {
        let got = if keep { self.r.read(n) } else { self.r.take(n) }.map_err(dds_to_py)?;
        to_py_samples(py, got)
    }

    /// Up to `n` samples, waiting at most `timeout` s for the first (GIL released).
    fn take_timeout(&self, py: Python<'_>, n: usize, timeout: f64) -> PyResult<Vec<Taken>> {
        let end = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let got = py.detach(|| self.r.take_timeout(n, left.min(SIGNAL_SLICE))).map_err(dds_to_py)?;
            if !got.is_empty() || left.is_zero() {
                return to_py_samples(py, got);
            }
            py.check_signals()?;
        }
    }

    /// Up to `n` samples no read returned before, left in the reader.
    fn read_unread(&self, py: Python<'_>, n: usize) -> PyResult<Vec<Taken>> {
        let got = self.r.read_unread(n).map_err(dds_to_py)?;
        to_py_samples(py, got)
    }

    /// Up to `n` samples left in the reader without changing their sample
    /// state (`unread`: only those no read returned before).
    #[pyo3(signature = (n, unread=false))]
    fn peek(&self, py: Python<'_>, n: usize, unread: bool) -> PyResult<Vec<Taken>> {
        let got = self.r.peek(n, unread).map_err(dds_to_py)?;
        to_py_samples(py, got)
    }

    /// Takes (`keep`: reads, now READ) the samples a read or peek returned,
    /// named by (publication_handle, sequence_number).
    #[pyo3(signature = (which, keep=false))]
    fn take_these(&self, py: Python<'_>, which: Vec<(Vec<u8>, i64)>, keep: bool) -> PyResult<Vec<Taken>> {
        let mut ids = Vec::with_capacity(which.len());
        for (g, sn) in which {
            let g: [u8; 16] = g.as_slice().try_into().map_err(|_| SampleError::new_err(format!("a publication handle is 16 bytes, not {}", g.len())))?;
            ids.push((detpath_dds::Guid::from_bytes(g), sn));
        }
        let got = if keep { self.r.read_these(&ids) } else { self.r.take_these(&ids) }.map_err(dds_to_py)?;
        to_py_samples(py, got)
    }

    /// Waits until a sample is there (`unread`: one no read returned
    /// before), at most `timeout` s (GIL released): True when one is.
    #[pyo3(signature = (timeout, unread=false))]
    fn wait_for_data(&self, py: Python<'_>, timeout: f64, unread: bool) -> PyResult<bool> {
        let end = Instant::now() + Duration::from_secs_f64(timeout.clamp(0.0, 1e9));
        loop {
            let left = end.saturating_duration_since(Instant::now()).min(SIGNAL_SLICE);
            let got = py.detach(|| if unread { self.r.wait_for_unread(left) } else { self.r.wait_for_data(left) }).map_err(dds_to_py)?;
            if got {
                return Ok(true);
            }
            py.check_signals()?;
            if Instant::now() >= end {
                return Ok(false);
            }
        }
    }

    /// The state of the reader's instance of `key_hash` ("alive",
    /// "disposed", "no_writers"), None when it has none.
    fn instance_state(&self, key_hash: &[u8]) -> PyResult<Option<&'static str>> {
        let k = key16(Some(key_hash))?.unwrap_or_default();
        Ok(self.r.instance_state(&k).map_err(dds_to_py)?.map(instance_state_name))
    }

    /// Reports a sample of the writer `publication_handle` (its GUID, 16
    /// bytes) the Python type could not deserialize: counted in the
    /// reader's status, the writer's type reported once.
    fn report_undecodable(&self, publication_handle: &[u8]) -> PyResult<()> {
        let g: [u8; 16] = publication_handle.try_into().map_err(|_| SampleError::new_err(format!("a publication handle is 16 bytes, not {}", publication_handle.len())))?;
        self.r.report_undecodable(detpath_dds::Guid::from_bytes(g), detpath_dds::cdr::WireError::Truncated);
        Ok(())
    }

    /// The LATENCY_BUDGET status as a dict (reading it resets `over_change`):
    /// budget_ns, clock, within, over, over_change, causes {name: n},
    /// unjudged, implausible, latency {count, sum_ns, max_ns, buckets: [(bound_ns or None, n)]}.
    fn budget_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.r.latency_budget_status().map_err(dds_to_py)?;
        let d = PyDict::new(py);
        d.set_item("budget_ns", s.budget_ns)?;
        d.set_item("clock", s.clock.name())?;
        d.set_item("within", s.within)?;
        d.set_item("over", s.over)?;
        d.set_item("over_change", s.over_change)?;
        let causes = PyDict::new(py);
        for (c, n) in &s.causes {
            causes.set_item(c.name(), n)?;
        }
        d.set_item("causes", causes)?;
        d.set_item("unjudged", s.unjudged)?;
        d.set_item("implausible", s.implausible)?;
        let h = &s.histogram;
        let lat = PyDict::new(py);
        lat.set_item("count", h.count)?;
        lat.set_item("sum_ns", u64::try_from(h.sum_ns).unwrap_or(u64::MAX))?;
        lat.set_item("max_ns", h.max_ns)?;
        let buckets: Vec<(Option<u64>, u64)> = h.counts.iter().enumerate().map(|(i, n)| (detpath_dds::BUCKET_BOUNDS_NS.get(i).copied(), *n)).collect();
        lat.set_item("buckets", buckets)?;
        d.set_item("latency", lat)?;
        Ok(d)
    }

    /// Waits until a sample arrived over budget since the status was last
    /// read, at most `timeout` s (GIL released): True when one did.
    fn wait_over_budget(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let end = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if py.detach(|| self.r.wait_for_over_budget(left.min(SIGNAL_SLICE))).map_err(dds_to_py)? {
                return Ok(true);
            }
            py.check_signals()?;
            if left.is_zero() {
                return Ok(false);
            }
        }
    }

    /// matched_publications, lost, rejected, undecodable, ...
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.r.status().map_err(dds_to_py)?;
        let d = PyDict::new(py);
        d.set_item("matched_publications", s.matched_publications)?;
        d.set_item("lost", s.lost)?;
        d.set_item("rejected", s.rejected)?;
        d.set_item("undecodable", s.undecodable)?;
        d.set_item("incompatible_qos", s.incompatible_qos)?;
        d.set_item("unmatched", s.unmatched)?;
        d.set_item("received", s.detail.received)?;
        d.set_item("waiting", s.detail.waiting)?;
        d.set_item("requested_deadline_missed", s.detail.requested_deadline_missed)?;
        Ok(d)
    }
}

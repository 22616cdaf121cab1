//! Loading, attaching and reading the kernel tracer (`bpf/ktrace.bpf.c`).
//!
//! One thread owns the BPF object, its links and the ring buffer: it
//! attaches every program, says it is ready, then drains the ring buffer
//! every few milliseconds until told to stop, and detaches on its way out.
//! The links are plain BPF links (file descriptors, never pinned), so
//! whatever ends the process, a return, a panic, Ctrl-C or SIGKILL, the
//! kernel detaches the programs when the descriptors close: nothing stays
//! attached.
//!
//! The thread's own CPU time from attach to its last drain is metered
//! ([`Trace::reader_cpu`], named `ktrace-reader`), so a traced benchmark
//! run lists what reading the trace cost beside its polling threads. (The
//! programs themselves run in the context of whatever they trace, and
//! their cost lands there.)

use crate::event::{Event, Kind};
use detpath_sys::cputime::{ThreadCpu, ThreadMeter};
use libbpf_rs::{MapCore, MapFlags, RingBufferBuilder};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ktrace.bpf.o"));

/// The most records one trace keeps (about 80 bytes each in memory); more
/// are counted as dropped.
pub const MAX_EVENTS: usize = 20_000_000;

/// How often the ring buffer is drained (16 MiB holds far more than this much of records).
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// Why the tracer could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Loading or attaching failed (the error names the capability, memlock or verifier problem).
    #[error("the kernel tracer: {0}")]
    Sys(#[from] detpath_sys::Error),
    /// A libbpf call on the loaded object failed.
    #[error("the kernel tracer: {what}: {source}")]
    Bpf {
        /// What was being done.
        what: String,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// The tracer thread ended without a word (it panicked).
    #[error("the kernel tracer's thread ended unexpectedly")]
    ThreadLost,
}

/// What a stopped tracer recorded.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Every record, in the order the ring buffer gave them (per CPU in time order).
    pub events: Vec<Event>,
    /// Records lost: the ring buffer was full, the trace was at [`MAX_EVENTS`], or a record could not be decoded.
    pub dropped: u64,
    /// CLOCK_MONOTONIC ns when the programs were first attached and last detached.
    pub attached_ns: (u64, u64),
    /// The stretches the programs were attached (CLOCK_MONOTONIC ns): one,
    /// `attached_ns`, for [`Tracer::start`]; every other window for
    /// [`Tracer::start_alternating`].
    pub windows: Vec<(u64, u64)>,
    /// The reader thread's user and system time from the programs' attach
    /// to its last drain (its name is [`READER`]; its core, the one it
    /// ended on: it is not pinned). Loading and verifying the programs
    /// before that is left out, as a one-off cost of no round.
    pub reader_cpu: Option<ThreadCpu>,
}

/// The reader thread's name in a run's `cpu.threads`.
pub const READER: &str = "ktrace-reader";

impl Trace {
    /// How many records of each kind (for a summary line).
    pub fn count(&self, kind: Kind) -> usize {
        self.events.iter().filter(|e| e.kind == kind).count()
    }
}

/// A running tracer: attached on every core until [`Tracer::stop`] (or drop).
pub struct Tracer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Trace, Error>>>,
}

impl Tracer {
    /// Loads and attaches the tracer on every core; returns once it records.
    /// Needs CAP_BPF and CAP_PERFMON (root has them).
    pub fn start() -> Result<Tracer, Error> {
        Tracer::spawn(None)
    }

    /// As [`start`](Self::start), but the programs are detached and attached
    /// again every `window` (attached first): the rounds of the detached
    /// windows are the same run without the tracer, so what tracing costs
    /// can be read from one run ([`Trace::windows`] says which was which).
    /// The reader thread drains every 10 ms in both kinds of window: the
    /// comparison is the programs' cost (the reader's own CPU time is
    /// metered apart, [`Trace::reader_cpu`]).
    pub fn start_alternating(window: Duration) -> Result<Tracer, Error> {
        Tracer::spawn(Some(window))
    }

    fn spawn(alternate: Option<Duration>) -> Result<Tracer, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), Error>>();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("detpath-ktrace".into())
            .spawn(move || run(flag, alternate, ready_tx))
            .map_err(|e| Error::Bpf { what: "starting its thread".into(), source: libbpf_rs::Error::from(e) })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Tracer { stop, thread: Some(thread) }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => match thread.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(Error::ThreadLost),
            },
        }
    }

    /// Detaches the programs and returns what they recorded.
    pub fn stop(mut self) -> Result<Trace, Error> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("a running tracer has its thread");
        thread.join().map_err(|_| Error::ThreadLost)?
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Attaches every program of the object (each link detaches when dropped).
fn attach_all(progs: &[libbpf_rs::ProgramMut<'_>]) -> Result<Vec<libbpf_rs::Link>, Error> {
    progs.iter().map(|prog| prog.attach().map_err(|e| Error::Bpf { what: format!("attaching `{}`", prog.name().to_string_lossy()), source: e })).collect()
}

/// The tracer thread: load, attach, say ready, drain until stopped (detaching
/// and attaching again each `alternate` window), detach.
fn run(stop: Arc<AtomicBool>, alternate: Option<Duration>, ready: mpsc::Sender<Result<(), Error>>) -> Result<Trace, Error> {
    let setup = || -> Result<_, Error> {
        let obj = detpath_sys::xdp::load(OBJECT, "ktrace")?;
        // The ring buffer through its own descriptor, so the programs can be
        // borrowed for attaching while it is read.
        let ring = obj
            .maps()
            .find(|m| m.name() == "kt_events")
            .ok_or_else(|| Error::Bpf { what: "finding map kt_events".into(), source: libbpf_rs::Error::from_raw_os_error(libc::ENOENT) })
            .and_then(|m| libbpf_rs::MapHandle::try_from(&m).map_err(|e| Error::Bpf { what: "opening map kt_events".into(), source: e }))?;
        // A window starts when its first program attaches, not when the
        // last one has: the first records events while the others attach.
        let attaching = now_ns();
        let links = attach_all(&obj.progs_mut().collect::<Vec<_>>())?;
        Ok((obj, ring, links, attaching))
    };
    let (obj, ring, links, attached) = match setup() {
        Ok(v) => v,
        Err(e) => {
            // The error goes to `start`, which returns it; this thread's result is not read.
            let _ = ready.send(Err(e));
            return Ok(Trace::default());
        }
    };
    let meter = ThreadMeter::start(READER);
    let mut events: Vec<Event> = Vec::new();
    let mut undecodable = 0u64;
    let mut over = 0u64;
    let mut windows: Vec<(u64, u64)> = Vec::new();
    let progs: Vec<libbpf_rs::ProgramMut<'_>> = obj.progs_mut().collect();
    let result = (|| -> Result<(), Error> {
        let mut links = Some(links);
        let mut window_start = attached;
        let mut next_toggle = alternate.map(|w| attached + w.as_nanos() as u64);
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&ring, |data: &[u8]| {
                match Event::decode(data) {
                    Some(e) if events.len() < MAX_EVENTS => events.push(e),
                    Some(_) => over += 1,
                    None => undecodable += 1,
                }
                0
            })
            .map_err(|e| Error::Bpf { what: "reading the ring buffer".into(), source: e })?;
        let rb = builder.build().map_err(|e| Error::Bpf { what: "reading the ring buffer".into(), source: e })?;
        let _ = ready.send(Ok(()));
        // The programs submit without waking us (BPF_RB_NO_WAKEUP): drain on a clock.
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(DRAIN_EVERY);
            rb.consume().map_err(|e| Error::Bpf { what: "draining the ring buffer".into(), source: e })?;
            let (Some(w), Some(at)) = (alternate, next_toggle) else { continue };
            let now = now_ns();
            if now < at {
                continue;
            }
            match links.take() {
                Some(attached) => {
                    drop(attached); // detached here: the window ends after it
                    windows.push((window_start, now_ns()));
                }
                None => {
                    window_start = now_ns();
                    links = Some(attach_all(&progs)?);
                }
            }
            next_toggle = Some(now + w.as_nanos() as u64);
        }
        // Detach first, then read what is left.
        if let Some(attached) = links.take() {
            drop(attached);
            windows.push((window_start, now_ns()));
        }
        rb.consume().map_err(|e| Error::Bpf { what: "draining the ring buffer".into(), source: e })?;
        Ok(())
    })();
    drop(progs);
    let detached = now_ns();
    let reader_cpu = meter.stop();
    result?;
    let dropped_in_kernel = obj
        .maps()
        .find(|m| m.name() == "kt_dropped")
        .and_then(|m| m.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY).ok().flatten())
        .map(|per_cpu| per_cpu.iter().filter_map(|v| v.get(..8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))).sum())
        .unwrap_or(0);
    Ok(Trace { events, dropped: dropped_in_kernel + undecodable + over, attached_ns: (attached, detached), windows, reader_cpu: Some(reader_cpu) })
}

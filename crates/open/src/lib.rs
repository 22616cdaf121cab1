//! detpath-open: the one layer registry, and `open` with it.
//!
//! detpath's open pipeline (`detpath::open_spec`) runs whatever layers a
//! typed spec holds; *which* layer a key of the spec text belongs to is the
//! registry's business. Layers live in different crates: the fault
//! injector, the real-time thread and the capture in detpath, the slot
//! scheduler in detpath-sched (which depends on detpath, so detpath cannot
//! name it), `metrics=ADDR` in detpath-metrics. This crate depends on them
//! and lists every layer in [`LAYERS`];
//! everything that opens a user's spec (the C and Python bindings, the CLI,
//! bench, pub-sub) opens it here, so a spec opens the same everywhere and
//! no binding depends on the scheduler crate itself.
//!
//! Two endpoints on the loopback interface, the sender's datagrams released
//! by the slot scheduler (one best-effort class in slots 0 and 1 of its
//! cycle) and captured to a pcap file on the way out (no root needed):
//!
//! ```
//! use std::time::Duration;
//! use detpath::RecvMode;
//! let pcap = std::env::temp_dir().join(format!("detpath-open-doc-{}.pcap", std::process::id()));
//! let mut rx = detpath_open::open("udp://127.0.0.1:0")?;
//! let spec = format!("udp://127.0.0.1:0?sched=slots&classes=bulk:be:0/2&pcap={}", pcap.display());
//! let mut tx = detpath_open::open(&spec)?;
//! assert!(tx.capabilities().notes.iter().any(|n| n.starts_with("sched=slots")));
//! tx.send_to(b"in its slot", rx.local_addr())?;
//! // The scheduler releases due slots whenever its endpoint is called (a
//! // receive, here, that finds nothing): call it until the datagram is out.
//! let (mut buf, mut scratch) = ([0u8; 2048], [0u8; 2048]);
//! let wait = RecvMode::BusyPoll { timeout: Some(Duration::from_micros(200)) };
//! let deadline = std::time::Instant::now() + Duration::from_secs(5);
//! let got = loop {
//!     tx.recv(&mut scratch, wait)?;
//!     if let Some(got) = rx.recv(&mut buf, wait)? {
//!         break got;
//!     }
//!     assert!(std::time::Instant::now() < deadline, "released within a cycle");
//! };
//! assert_eq!(&buf[..got.len], b"in its slot");
//! drop(tx); // closes the capture
//! assert!(std::fs::metadata(&pcap)?.len() > 24, "the pcap holds the datagram");
//! std::fs::remove_file(&pcap)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub use detpath::{open_frames_spec, open_spec, EndpointSpec, Layer};
use detpath::{Endpoint, FrameEndpoint, Result};

/// How many layers detpath itself has.
const OWN: usize = detpath::layers::LAYERS.len();

/// Every layer, innermost first (the order the pipeline wraps in):
/// detpath's, in detpath's order (a new one there is here without an edit),
/// then the slot scheduler's (its releases go through the capture and the
/// fault injector), then the metrics key's, outermost: it counts what the
/// application sees.
static ALL: [&dyn Layer; OWN + 2] = {
    let mut all: [&dyn Layer; OWN + 2] = [&detpath_sched::LAYER; OWN + 2];
    let mut i = 0;
    while i < OWN {
        all[i] = detpath::layers::LAYERS[i];
        i += 1;
    }
    all[OWN + 1] = &detpath_metrics::spec_key::LAYER;
    all
};

/// The one registry: every layer of the workspace, innermost first: detpath's
/// in detpath's order, then the slot scheduler's, then `metrics=ADDR`'s.
pub static LAYERS: detpath::layer::Registry = &ALL;

/// Parses a spec with every layer's keys.
pub fn parse(spec: &str) -> Result<EndpointSpec> {
    EndpointSpec::parse_with(spec, LAYERS)
}

/// Opens a datagram endpoint from spec text with every layer.
pub fn open(spec: &str) -> Result<Box<dyn Endpoint>> {
    open_spec(&parse(spec)?)
}

/// Opens a frame endpoint from spec text with every layer.
pub fn open_frames(spec: &str) -> Result<Box<dyn FrameEndpoint>> {
    open_frames_spec(&parse(spec)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_of_detpath_is_listed_in_its_order() {
        let names = |r: detpath::layer::Registry| r.iter().map(|l| l.name()).collect::<Vec<_>>();
        let ours = names(LAYERS);
        let theirs = names(detpath::layers::LAYERS);
        // detpath's layers appear here in detpath's order, the scheduler among them.
        assert_eq!(ours.iter().filter(|n| theirs.contains(n)).copied().collect::<Vec<_>>(), theirs);
        assert_eq!(ours[ours.len() - 2..], ["sched", "metrics"]);
    }

    #[test]
    fn a_scheduled_spec_opens_with_its_layers_in_order() {
        let s = parse("udp://127.0.0.1:0?rt_core=0&rt_mlock=false&sched=slots&classes=bulk:be:0/2&drop=5").unwrap();
        assert_eq!(s.layers.iter().map(|u| u.name()).collect::<Vec<_>>(), ["fault", "rt", "sched"]);
        let e = open("udp://127.0.0.1:0?sched=slots").err().unwrap().to_string();
        assert!(e.contains("no traffic class"), "{e}");
        let ep = open("udp://127.0.0.1:0?sched=slots&classes=bulk:be:0/2").unwrap();
        assert!(ep.capabilities().notes.iter().any(|n| n.starts_with("sched=slots")));
    }
}

//! detpath classify: an XDP classifier for encapsulated traffic, driven by
//! intents (paper 004, "DPPnApp").
//!
//! - `bpf/classify.bpf.c` parses Ethernet [802.1Q/QinQ] / IPv4|IPv6 / UDP|TCP,
//!   VXLAN / Ethernet / IP / L4 and GTP-U [extension headers] / IP / L4,
//!   builds the flow key from the innermost 5-tuple and DSCP + VNI + TEID, and applies
//!   the highest-priority matching rule: pass, steer to a CPU (cpumap),
//!   redirect to an AF_XDP socket (xskmap), drop, or forward-when-overloaded
//!   (rewrite outer destination MAC/IP to an alternative node, XDP_TX).
//! - [`intent::parse_intent`] turns an intent document into a [`intent::Rule`]
//!   (pure; the fuzz entry point).
//! - [`classifier::Classifier`] loads, attaches (BPF link: detached on drop and
//!   on process exit) and programs the maps.
//! - [`api::Service`] is the northbound API; [`server::serve`] carries it over
//!   HTTP (a root-only Unix socket by default, TCP with a token on request;
//!   hyper with limits); [`client::request`] is the CLI's side.
//!
//! Needs root (CAP_BPF, CAP_NET_ADMIN) and Linux >= 5.9 (BPF links for XDP).
//!
//! An intent is parsed (and refused, with the reason) without root; this one
//! steers a DDS topic of TRANSPORT_PRIORITY 40 (EF under the default map) on
//! the RTPS port to CPU 1:
//!
//! ```
//! use detpath_classify::{parse_intent, Action};
//!
//! let rule = parse_intent(br#"{"Resources": [{"topic": "Control", "priority": 40}, {"dstPort": 7410, "protocol": "udp"}],
//!     "Action": {"actionType": "INSERT", "actionName": "STEER_CPU", "cpu": 1, "flow_hash": "control"}}"#)?;
//! assert_eq!(rule.matches.dscp, Some(vec![46]));
//! assert_eq!(rule.matches.dst_port, Some(7410));
//! assert!(matches!(rule.action, Action::SteerCpu { cpu: 1, .. }));
//! let bad = parse_intent(br#"{"Resources": [{"dscp": "EX"}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#);
//! assert!(bad.unwrap_err().to_string().contains("EX"));
//! # Ok::<(), detpath_classify::IntentError>(())
//! ```

#![warn(missing_docs)]

pub mod api;
pub mod bench;
pub mod classifier;
pub mod client;
pub mod error;
pub mod frames;
pub mod intent;
pub mod maps;
pub(crate) mod metrics;
pub mod server;

pub use classifier::{AltNode, Classifier, DefaultAction, Settings};
pub use detpath_sys::XdpMode;
pub use error::{Error, Result};
pub use intent::{parse_intent, Action, IntentError, Rule};

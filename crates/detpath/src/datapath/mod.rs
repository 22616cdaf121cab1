//! The datapaths: one module each, registered in [`DATAPATHS`] (one entry
//! per datapath, with its datagram opener, its frame opener, or both).
//! Adding a datapath is one new module and one line in that list; nothing
//! above the [`Endpoint`](crate::Endpoint) trait changes. A datapath built
//! outside this crate joins the same list at run time with [`register`].

pub use entry::{DatagramOpener, Datapath, FrameDatapath, GroupReception};

pub mod afxdp;
pub(crate) mod defrag;
pub mod dpdk;
pub mod entry;
pub mod filter;
pub(crate) mod keys;
pub mod packet;
pub(crate) mod rx_rule;
pub(crate) mod tx;
pub mod udp;
pub(crate) mod wait;
pub mod xdppoll;

use std::sync::RwLock;

/// Every datapath this build knows, in the order reports list them.
pub static DATAPATHS: &[&Datapath] = &[&udp::DATAPATH, &xdppoll::DATAPATH, &afxdp::DATAPATH, &dpdk::DATAPATH, &packet::DATAPATH];

/// The datapaths added at run time by [`register`], after [`DATAPATHS`].
static REGISTERED: RwLock<Vec<&'static Datapath>> = RwLock::new(Vec::new());

/// Adds a datapath to this process's registry, after [`DATAPATHS`]: from
/// then on [`find`], [`transports`] and [`names`] list it, so
/// [`open_spec`](crate::open_spec) opens its scheme and every caller that asks the
/// registry (the benchmark, pub-sub discovery, the slot scheduler) uses it
/// with no edit of theirs. Why at run time: a datapath built outside this
/// crate (an out-of-tree plugin, or a test's wrapper that proves a new
/// datapath needs only its entry) cannot add a line to the static list.
/// Refuses a name that a datapath or a layer already has, since the URI
/// scheme must name one thing.
pub fn register(datapath: &'static Datapath) -> Result<(), NameTaken> {
    let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    let name = datapath.name;
    if DATAPATHS.iter().chain(registered.iter()).any(|d| d.name == name) || crate::layers::LAYERS.iter().any(|l| l.name() == name) {
        return Err(NameTaken(name));
    }
    registered.push(datapath);
    Ok(())
}

/// [`register`] refused a datapath: its name is already a datapath's or a layer's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameTaken(pub &'static str);

impl std::fmt::Display for NameTaken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot register the datapath `{}`: a datapath or layer of that name is already registered", self.0)
    }
}

impl std::error::Error for NameTaken {}

/// Every datapath: the static list, then those [`register`]ed, in that order.
fn all() -> Vec<&'static Datapath> {
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    DATAPATHS.iter().copied().chain(registered.iter().copied()).collect()
}

/// The datapath with this URI scheme.
pub fn find(name: &str) -> Option<&'static Datapath> {
    DATAPATHS.iter().copied().find(|d| d.name == name).or_else(|| REGISTERED.read().unwrap_or_else(|e| e.into_inner()).iter().copied().find(|d| d.name == name))
}

/// The datapaths that carry datagrams (every registered one with a datagram
/// opener), in report order: what "every datapath" means to the benchmark,
/// the interop matrix and the examples.
pub fn transports() -> impl Iterator<Item = &'static Datapath> {
    all().into_iter().filter(|d| d.open.is_some())
}

/// The names of every registered datapath, for messages and `--help`.
pub fn names() -> Vec<&'static str> {
    all().into_iter().map(|d| d.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::EndpointSpec;

    /// An entry's facts agree with its keys: the arrival-stamp `key=value`
    /// names a key the datapath takes, and a datapath that hears a group by
    /// itself takes the `group` key the caller opens it with.
    #[test]
    fn every_entrys_facts_are_keys_it_takes() {
        for d in DATAPATHS {
            assert!(!d.display.is_empty(), "{}", d.name);
            if let Some(kv) = d.arrival_stamp {
                let spec: EndpointSpec = format!("{}://lo?port=9&{kv}", d.name).parse().unwrap_or_else(|e| panic!("{}: {e}", d.name));
                d.check_keys(&spec).unwrap_or_else(|e| panic!("{}: {kv}: {e}", d.name));
            }
            let wants_group_key = d.group_reception == GroupReception::Endpoint;
            assert_eq!(d.keys.contains(&"group"), wants_group_key, "{}", d.name);
            if d.open.is_none() {
                assert_eq!(d.group_reception, GroupReception::Unsupported, "{}: no datagrams, no group", d.name);
                assert_eq!(d.arrival_stamp, None, "{}", d.name);
            }
        }
    }
}

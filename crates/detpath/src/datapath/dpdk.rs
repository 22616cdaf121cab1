//! The `dpdk` datapath (not written yet).

use crate::endpoint::{Datapath, Endpoint};
use crate::error::{Error, Result};
use crate::spec::EndpointSpec;

pub static DATAPATH: Datapath = Datapath { name: "dpdk", summary: "not implemented yet", open };

fn open(_spec: &EndpointSpec) -> Result<Box<dyn Endpoint>> {
    Err(Error::Unsupported { datapath: "dpdk", what: "opening an endpoint (not implemented yet)".into() })
}

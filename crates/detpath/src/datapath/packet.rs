//! The `packet` frame datapath: an AF_PACKET datagram socket bound to one
//! interface and one EtherType (`detpath_sys::packet::EtherSocket`). Works on
//! every interface and kernel, with no XDP program: the frame datapath usable
//! everywhere, and the same socket CycloneDDS's `raweth` transport uses.
//!
//! Spec: `packet://<iface>?port=<EtherType>[&rcvbuf=B][&sndbuf=B]` (EtherType
//! decimal, at least 1536; 7400 for CycloneDDS's default domain; socket
//! buffers in bytes). The receive buffer defaults to 4 MiB: with the kernel's
//! default (rmem_default, 208 KiB here) a reliable 1 KiB stream over veth
//! overran it and ran at a fifth of the rate (retransmissions). Needs CAP_NET_RAW.

use crate::datapath::entry::{FrameDatapath, GroupReception};
use crate::datapath::wait::{wait_readable, Step, Wait};
use crate::endpoint::{monotonic_ns, Capabilities, Counters, RecvMode};
use crate::error::Result;
use crate::frame::{FrameEndpoint, FrameMeta, MacAddr};
use crate::spec::EndpointSpec;
use detpath_sys::packet::EtherSocket;
use detpath_sys::NetDev;

/// Frames only: `packet` has no datagram opener.
pub(crate) static DATAPATH: crate::datapath::entry::Datapath = crate::datapath::entry::Datapath {
    name: "packet",
    display: "AF_PACKET",
    summary: "AF_PACKET socket bound to one EtherType (frames only)",
    arrival_stamp: None,
    group_reception: GroupReception::Unsupported,
    keys: &[],
    open: None,
    frames: Some(&FRAME_DATAPATH),
};

/// The `packet` frame side: its keys (`rcvbuf`, `sndbuf`, bytes) and opener.
pub static FRAME_DATAPATH: FrameDatapath = FrameDatapath {
    name: "packet",
    summary: "AF_PACKET socket bound to one EtherType (any interface, no XDP)",
    keys: &["rcvbuf", "sndbuf"],
    open: |spec| Ok(Box::new(PacketEndpoint::open(spec)?)),
};

/// The receive buffer unless `rcvbuf` says otherwise.
const DEFAULT_RCVBUF: i32 = 4 << 20;

/// An open `packet` frame endpoint.
pub(crate) struct PacketEndpoint {
    sock: EtherSocket,
    mac: MacAddr,
    caps: Capabilities,
    counters: Counters,
}

impl PacketEndpoint {
    /// Opens the spec's interface (which must exist and be up) at EtherType `port`.
    pub fn open(spec: &EndpointSpec) -> Result<PacketEndpoint> {
        let iface = spec.require_iface()?;
        let ethertype = spec.require_port()?;
        let dev = NetDev::lookup(iface)?;
        dev.require_up()?;
        let sock = EtherSocket::open(iface, ethertype)?;
        for (key, receive, default) in [("rcvbuf", true, Some(DEFAULT_RCVBUF)), ("sndbuf", false, None)] {
            let bytes =
                match spec.extra.get(key) {
                    None => default,
                    Some(v) => Some(v.parse::<i32>().ok().filter(|n| *n > 0).ok_or_else(|| crate::Error::BadSpec {
                        spec: spec.to_string(),
                        why: format!("`{key}` takes a positive number of bytes, not `{v}`"),
                    })?),
                };
            if let Some(bytes) = bytes {
                sock.set_buffer(receive, bytes)?;
            }
        }
        let caps = Capabilities {
            datapath: "packet",
            iface: Some(iface.to_string()),
            max_payload: dev.mtu as usize,
            max_batch: 1,
            notes: vec![format!("EtherType {ethertype:#06x}")],
            ..Capabilities::default()
        };
        Ok(PacketEndpoint { sock, mac: dev.mac, caps, counters: Counters::default() })
    }
}

impl FrameEndpoint for PacketEndpoint {
    fn local_mac(&self) -> MacAddr {
        self.mac
    }
    fn ethertype(&self) -> u16 {
        self.sock.ethertype()
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn counters(&self) -> Counters {
        self.counters
    }
    fn send_frame(&mut self, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        if payload.len() > self.caps.max_payload {
            self.counters.tx_errors += 1;
            return Err(crate::Error::PayloadTooLarge { iface: self.caps.iface.clone().unwrap_or_default(), len: payload.len(), max: self.caps.max_payload });
        }
        match self.sock.send(payload, dst.0, ethertype) {
            Ok(()) => {
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += (payload.len() + detpath_wire::ETH_HLEN) as u64;
                Ok(())
            }
            Err(e) => {
                self.counters.tx_errors += 1;
                Err(e.into())
            }
        }
    }
    fn recv_frame(&mut self, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        let wait = Wait::new(mode);
        loop {
            if let Some(r) = self.sock.recv(buf)? {
                let rx_ns = monotonic_ns();
                if !r.for_us {
                    // Another host's unicast frame, seen because the link is promiscuous.
                    self.counters.rx_not_for_me += 1;
                    continue;
                }
                if r.truncated {
                    self.counters.rx_truncated += 1;
                }
                self.counters.rx_packets += 1;
                self.counters.rx_bytes += r.len as u64;
                return Ok(Some(FrameMeta { len: r.len, truncated: r.truncated, src: MacAddr(r.src), rx_ns }));
            }
            match wait.after_empty() {
                Step::GiveUp => return Ok(None),
                Step::Spin => std::hint::spin_loop(),
                Step::Sleep(left) => wait_readable(self.sock.raw_fd(), left, "the AF_PACKET socket")?,
            }
        }
    }
}

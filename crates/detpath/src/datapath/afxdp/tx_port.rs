//! The AF_XDP endpoint as the shared sender's port ([`TxPort`]): what is
//! AF_XDP's own on transmit. A frame buffer is a UMEM chunk of the TX half
//! (its address), taken from the free list the completion ring refills;
//! staged frames are descriptors written on the TX ring, published and
//! kicked together; neighbours come from the kernel's table
//! ([`detpath_sys::neigh::Neighbours`]). Resolving, parking, fragments and
//! counting are `datapath/tx.rs`.

use super::AfxdpEndpoint;
use crate::datapath::tx::TxPort;
use crate::endpoint::{monotonic_ns, Counters};
use crate::error::{Error, Result};
use detpath_sys::neigh::Lookup;
use std::net::Ipv4Addr;
use std::sync::Arc;

impl TxPort for AfxdpEndpoint {
    type Buf = u64;

    fn resolve(&mut self, ip: Ipv4Addr) -> Lookup {
        self.neigh.try_resolve(ip, monotonic_ns())
    }

    fn unresolved(&self, ip: Ipv4Addr) -> Error {
        Error::NoNeighbour { peer: ip, iface: self.iface.clone(), why: "no ARP reply within 1 s; remembered for 1 s" }
    }

    fn name(&self) -> &Arc<str> {
        &self.iface
    }

    fn counters(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn reserve(&mut self, want: usize) -> Result<usize> {
        Ok(self.tx_reserve(want as u32)? as usize)
    }

    fn spare(&mut self) -> usize {
        self.reap_completions();
        self.tx_free.len()
    }

    fn take(&mut self) -> Result<u64> {
        self.take_tx_frame()
    }

    fn room(&mut self, addr: u64) -> &mut [u8] {
        self.umem.frame_mut(addr)
    }

    fn stage(&mut self, addr: u64, len: usize) {
        self.tx.write(self.staged, libc::xdp_desc { addr, len: len as u32, options: 0 });
        self.staged += 1;
    }

    fn flush(&mut self) -> Result<()> {
        if self.staged > 0 {
            self.tx.submit(self.staged);
            self.staged = 0;
            self.kick_tx();
        }
        Ok(())
    }

    fn send_parked(&mut self, addr: u64, len: usize) -> bool {
        self.reap_completions();
        if self.tx.free(self.staged + 1) <= self.staged {
            return false;
        }
        self.stage(addr, len);
        true
    }

    fn give_back(&mut self, addr: u64) {
        self.tx_free.push(addr);
    }
}

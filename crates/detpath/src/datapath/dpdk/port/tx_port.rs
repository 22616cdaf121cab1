//! The DPDK endpoint as the shared sender's port ([`TxPort`]): what is
//! DPDK's own on transmit. A frame buffer is an mbuf from the endpoint's
//! pool; staged frames go out together in one `rte_eth_tx_burst` (retried
//! while the queue is full, see `tx_all`); frames are padded to the
//! Ethernet minimum (the PMD may not pad); neighbours come from the
//! endpoint's own ARP (`arp_resolve`, `neigh_cache.rs`). Resolving,
//! parking, fragments and counting are `datapath/tx.rs`.

use super::*;
use crate::datapath::tx::TxPort;

impl DpdkEndpoint {
    /// Sets a built frame's length to `len`, zero-padded to [`MIN_FRAME`].
    fn finish(&mut self, m: *mut sys::rte_mbuf, len: usize) {
        let padded = len.max(MIN_FRAME);
        // SAFETY: m is a taken mbuf with at least `frame_room` (>= MIN_FRAME) bytes of room.
        let data = unsafe { sys::detpath_dpdk_mbuf_set_len(m, padded as u16) };
        if !data.is_null() && len < padded {
            // SAFETY: data points to `padded` writable bytes of m.
            unsafe { std::slice::from_raw_parts_mut(data, padded)[len..].fill(0) };
        }
    }
}

impl TxPort for DpdkEndpoint {
    type Buf = *mut sys::rte_mbuf;

    fn resolve(&mut self, ip: Ipv4Addr) -> Lookup {
        self.arp_resolve(ip)
    }

    fn unresolved(&self, ip: Ipv4Addr) -> Error {
        DpdkError::Unresolved { peer: ip, device: self.device_name.clone(), ms: self.arp_timeout.as_millis() as u64 }.into()
    }

    fn name(&self) -> &Arc<str> {
        &self.device_name
    }

    fn counters(&mut self) -> &mut Counters {
        &mut self.counters
    }

    fn reserve(&mut self, want: usize) -> Result<usize> {
        Ok(want.min(self.tx_buf.len() - self.staged).max(1))
    }

    fn spare(&mut self) -> usize {
        // SAFETY: pool is ours.
        unsafe { sys::detpath_dpdk_pool_avail(self.pool) as usize }
    }

    fn take(&mut self) -> Result<*mut sys::rte_mbuf> {
        let mut m: *mut sys::rte_mbuf = std::ptr::null_mut();
        // SAFETY: pool is ours; m is a valid out-slot for one pointer.
        if unsafe { sys::detpath_dpdk_mbuf_alloc_bulk(self.pool, &mut m, 1) } != 0 {
            self.counters.tx_errors += 1;
            // SAFETY: pool is ours.
            let avail = unsafe { sys::detpath_dpdk_pool_avail(self.pool) };
            return Err(DpdkError::PoolExhausted { what: format!("no free mbuf to send on `{}` ({avail} free)", self.device), mbufs: self.mbufs }.into());
        }
        Ok(m)
    }

    fn room(&mut self, m: *mut sys::rte_mbuf) -> &mut [u8] {
        let room = (self.max_payload + HEADERS_LEN).max(MIN_FRAME);
        // SAFETY: m is a taken mbuf; set_len checks the room (a frame of
        // max_payload fits: setup sized max_payload to the mbuf).
        let data = unsafe { sys::detpath_dpdk_mbuf_set_len(m, room as u16) };
        if data.is_null() {
            return &mut [];
        }
        // SAFETY: data points to `room` writable bytes of m, which the endpoint owns.
        unsafe { std::slice::from_raw_parts_mut(data, room) }
    }

    fn stage(&mut self, m: *mut sys::rte_mbuf, len: usize) {
        self.finish(m, len);
        self.tx_buf[self.staged] = m;
        self.staged += 1;
    }

    fn flush(&mut self) -> Result<()> {
        let n = std::mem::take(&mut self.staged);
        self.tx_all(n)
    }

    fn send_parked(&mut self, m: *mut sys::rte_mbuf, len: usize) -> bool {
        self.finish(m, len);
        let mut one = [m];
        // SAFETY: one holds one built mbuf we own; the port is started.
        if unsafe { sys::detpath_dpdk_tx_burst(self.port, 0, one.as_mut_ptr(), 1) } != 1 {
            self.counters.tx_ring_full += 1;
            return false;
        }
        true
    }

    fn give_back(&mut self, m: *mut sys::rte_mbuf) {
        self.free(m);
    }
}

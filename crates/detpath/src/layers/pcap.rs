//! The `pcap` layer: `pcap=FILE` on any endpoint, datagram or frame, writes
//! every datagram or frame it sends and receives to FILE, a pcap capture
//! (link type Ethernet, nanosecond time stamps) that tcpdump, tshark and
//! scapy read.
//!
//! A frame endpoint's record is the Ethernet frame as it went out or came
//! in (its header rebuilt from the destination, source and EtherType the
//! endpoint reports). A datagram endpoint's record is the Ethernet/IPv4/UDP
//! frame of the datagram, built by `detpath-wire` from the endpoint's
//! address, the peer's and the payload: the datapaths that see frames
//! (afxdp, xdppoll, dpdk) and udp (whose kernel keeps them) are captured
//! alike. The local MAC is the interface's when the endpoint has one, the
//! peer's is 00:00:00:00:00:00 (a datagram endpoint is not told it).
//!
//! A received record carries the datagram's receive time stamp
//! ([`crate::RxMeta::rx_ns`], which `rx_stamp=` chooses), a sent one the time
//! of the send call, both CLOCK_MONOTONIC moved to the wall clock by the
//! offset measured when the capture opened. The file is written through a
//! buffer and flushed when the endpoint is dropped; a write error stops the
//! capture (said once on stderr), never the endpoint.

use crate::endpoint::{monotonic_ns, Endpoint, FrameEndpoint, FrameMeta, MacAddr, Mark, RecvMode, RxBatch, RxMeta, TxDatagram};
use crate::error::{Error, Result};
use crate::layer::{EndpointHooks, FrameHooks, Layer, LayerKeys, Prepared, Wrapped, WrappedFrames};
use detpath_wire::{build_udp_frame, UdpFrameHeader};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddrV4;

/// The capture layer.
pub static LAYER: PcapLayer = PcapLayer;

/// The capture layer (see the module's text).
pub struct PcapLayer;

/// Link type Ethernet (LINKTYPE_ETHERNET).
const LINKTYPE_ETHERNET: u32 = 1;
/// The magic number of a pcap file with nanosecond time stamps.
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// The largest record kept (and the snapshot length in the file header).
const SNAPLEN: usize = 65_535;
/// Ethernet II header bytes.
const ETH_HLEN: usize = 14;

impl Layer for PcapLayer {
    fn name(&self) -> &'static str {
        "pcap"
    }
    fn summary(&self) -> &'static str {
        "writes every datagram or frame sent and received, with receive time stamps, to a pcap file (pcap=FILE)"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["pcap"]
    }
    fn check(&self, keys: &LayerKeys) -> std::result::Result<(), String> {
        match keys.get("pcap") {
            Some(f) if !f.is_empty() => Ok(()),
            _ => Err("`pcap` takes a file name".into()),
        }
    }
    fn prepare(&self, keys: &LayerKeys, _spec: &str) -> Result<Box<dyn Prepared>> {
        let path = keys.get("pcap").map(String::as_str).unwrap_or_default();
        let file = File::create(path).map_err(|e| Error::io(format!("creating the capture file {path}"), e))?;
        let w = PcapWriter::new(BufWriter::new(file)).map_err(|e| Error::io(format!("writing the capture file {path}"), e))?;
        Ok(Box::new(Capture { w, path: path.to_string(), failed: false, buf: Vec::new(), local_mac: MacAddr([0; 6]) }))
    }
}

/// A pcap file being written: the file header, then one record per frame.
pub(crate) struct PcapWriter<W: Write> {
    out: W,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns, when the capture opened.
    wall_offset: i128,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header (link type Ethernet, nanosecond stamps).
    pub fn new(mut out: W) -> io::Result<PcapWriter<W>> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&(SNAPLEN as u32).to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i128).unwrap_or(0);
        Ok(PcapWriter { out, wall_offset: wall - monotonic_ns() as i128 })
    }

    /// Writes one record: `frame` (cut to the snapshot length), taken at
    /// `mono_ns` (CLOCK_MONOTONIC), `orig_len` bytes long on the wire.
    pub fn record(&mut self, mono_ns: u64, frame: &[u8], orig_len: usize) -> io::Result<()> {
        let t = (mono_ns as i128 + self.wall_offset).max(0) as u128;
        let kept = &frame[..frame.len().min(SNAPLEN)];
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(kept.len() as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(orig_len as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(kept)
    }

    /// Flushes what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The capture of one endpoint: the writer and a frame buffer (allocated once).
struct Capture {
    w: PcapWriter<BufWriter<File>>,
    path: String,
    failed: bool,
    buf: Vec<u8>,
    local_mac: MacAddr,
}

impl Capture {
    fn write(&mut self, mono_ns: u64, frame_len: usize, orig_len: usize) {
        if self.failed {
            return;
        }
        if let Err(e) = self.w.record(mono_ns, &self.buf[..frame_len], orig_len) {
            self.failed = true;
            eprintln!("detpath: capture to {} stopped: {e}", self.path);
        }
    }

    /// Records the Ethernet/IPv4/UDP frame of one datagram (`tos`: the
    /// type of service its mark gave it; received ones are not read back: 0).
    fn datagram(&mut self, mono_ns: u64, src: SocketAddrV4, dst: SocketAddrV4, outgoing: bool, payload: &[u8], tos: u8) {
        let (src_mac, dst_mac) = if outgoing { (self.local_mac, MacAddr([0; 6])) } else { (MacAddr([0; 6]), self.local_mac) };
        let h = UdpFrameHeader { src_mac, dst_mac, src, dst, ip_id: 0, ttl: 64, tos };
        if self.buf.len() < SNAPLEN + 64 {
            self.buf.resize(SNAPLEN + 64, 0);
        }
        if let Some(n) = build_udp_frame(&mut self.buf, &h, payload) {
            self.write(mono_ns, n, n);
        }
    }

    /// Records one Ethernet frame.
    fn frame(&mut self, mono_ns: u64, dst: MacAddr, src: MacAddr, ethertype: u16, payload: &[u8]) {
        let n = ETH_HLEN + payload.len();
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        self.buf[0..6].copy_from_slice(&dst.0);
        self.buf[6..12].copy_from_slice(&src.0);
        self.buf[12..ETH_HLEN].copy_from_slice(&ethertype.to_be_bytes());
        self.buf[ETH_HLEN..n].copy_from_slice(payload);
        self.write(mono_ns, n, n);
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if !self.failed {
            let _ = self.w.flush();
        }
    }
}

impl Prepared for Capture {
    fn wrap(mut self: Box<Self>, ep: Box<dyn Endpoint>) -> Result<Box<dyn Endpoint>> {
        if let Some(iface) = &ep.capabilities().iface {
            self.local_mac = detpath_sys::NetDev::lookup(iface).map(|d| d.mac).unwrap_or(MacAddr([0; 6]));
        }
        let note = format!("pcap: every datagram sent and received is written to {}", self.path);
        Ok(Box::new(Wrapped::new(ep, *self, |c| c.notes.push(note))))
    }
    fn wrap_frames(self: Box<Self>, ep: Box<dyn FrameEndpoint>) -> Result<Box<dyn FrameEndpoint>> {
        let note = format!("pcap: every frame sent and received is written to {}", self.path);
        Ok(Box::new(WrappedFrames::new(ep, *self, |c| c.notes.push(note))))
    }
}

impl EndpointHooks for Capture {
    fn send(&mut self, inner: &mut dyn Endpoint, payload: &[u8], peer: SocketAddrV4, mark: Mark) -> Result<()> {
        let at = monotonic_ns();
        inner.send_marked(payload, peer, mark)?;
        self.datagram(at, inner.local_addr(), peer, true, payload, mark.tos());
        Ok(())
    }
    fn recv(&mut self, inner: &mut dyn Endpoint, buf: &mut [u8], mode: RecvMode) -> Result<Option<RxMeta>> {
        let got = inner.recv(buf, mode)?;
        if let Some(m) = &got {
            self.datagram(m.rx_ns, m.peer, inner.local_addr(), false, &buf[..m.len], 0);
        }
        Ok(got)
    }
    fn send_batch(&mut self, inner: &mut dyn Endpoint, batch: &[TxDatagram<'_>]) -> Result<usize> {
        let at = monotonic_ns();
        let n = inner.send_batch(batch)?;
        let local = inner.local_addr();
        for d in &batch[..n] {
            self.datagram(at, local, d.peer, true, d.payload, 0);
        }
        Ok(n)
    }
    fn recv_batch(&mut self, inner: &mut dyn Endpoint, batch: &mut RxBatch, mode: RecvMode) -> Result<usize> {
        let n = inner.recv_batch(batch, mode)?;
        let local = inner.local_addr();
        for (m, payload) in batch.iter() {
            self.datagram(m.rx_ns, m.peer, local, false, payload, 0);
        }
        Ok(n)
    }
}

impl FrameHooks for Capture {
    fn send_frame(&mut self, inner: &mut dyn FrameEndpoint, payload: &[u8], dst: MacAddr, ethertype: u16) -> Result<()> {
        let at = monotonic_ns();
        inner.send_frame(payload, dst, ethertype)?;
        self.frame(at, dst, inner.local_mac(), ethertype, payload);
        Ok(())
    }
    fn recv_frame(&mut self, inner: &mut dyn FrameEndpoint, buf: &mut [u8], mode: RecvMode) -> Result<Option<FrameMeta>> {
        let got = inner.recv_frame(buf, mode)?;
        if let Some(m) = &got {
            self.frame(m.rx_ns, inner.local_mac(), m.src, inner.ethertype(), &buf[..m.len]);
        }
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_header_and_a_record_are_pcap_with_nanosecond_stamps() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.record(5, &[1, 2, 3], 3).unwrap();
        let out = w.out;
        assert_eq!(out.len(), 24 + 16 + 3);
        assert_eq!(u32::from_le_bytes(out[0..4].try_into().unwrap()), MAGIC_NS);
        assert_eq!(u32::from_le_bytes(out[20..24].try_into().unwrap()), LINKTYPE_ETHERNET);
        assert_eq!(u32::from_le_bytes(out[32..36].try_into().unwrap()), 3);
        assert!(u32::from_le_bytes(out[24..28].try_into().unwrap()) > 1_600_000_000, "a wall-clock second");
        assert_eq!(&out[40..], &[1, 2, 3]);
    }
}

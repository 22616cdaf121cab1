//! The `afxdp` datapath's own spec keys, read from the spec into typed
//! settings ([`AfxdpKeys::from_spec`]); the registry entries list them
//! ([`KEYS`], [`FRAME_KEYS`]). Syntax shared with other datapaths
//! (`mode`, `ring`, ...) is `datapath/keys.rs`; what only AF_XDP asks
//! (the UMEM chunk size, the ring bounds) is checked when opening.

use crate::datapath::keys;
use crate::error::Result;
use crate::spec::EndpointSpec;
use detpath_sys::XdpMode;

/// The keys an `afxdp` datagram endpoint takes besides the common ones.
pub const KEYS: &[&str] = &["queue", "mode", "zerocopy", "busy_poll", "ring", "frame", "batch", "checksum", "xdp", "rx_stamp"];

/// The keys an `afxdp` frame endpoint takes (no UDP checksum to verify).
pub const FRAME_KEYS: &[&str] = &["queue", "mode", "zerocopy", "busy_poll", "ring", "frame", "batch", "xdp", "rx_stamp"];

/// The typed `afxdp` keys of a spec, each at its default when not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfxdpKeys {
    /// The NIC receive queue to serve (`queue=`, default 0).
    pub queue: u32,
    /// XDP mode asked for; `None` (`mode=auto`): native if the driver has it, else skb, reported.
    pub mode: Option<XdpMode>,
    /// `Some(true)`: zero-copy or fail; `Some(false)` / `None`: copy mode.
    pub zero_copy: Option<bool>,
    /// Ask for socket busy polling (`busy_poll=`, default true; what was
    /// obtained is in `Capabilities::busy_poll`).
    pub busy_poll: bool,
    /// Descriptors per ring (`ring=`, a power of two; default 2048).
    pub ring_size: u32,
    /// UMEM chunk size (`frame=`, 2048 or 4096 bytes; default 4096).
    pub frame_size: u32,
    /// Most datagrams one batched call moves (`batch=`, at least 1; default 64).
    pub batch: u32,
    /// Verify UDP checksums on receive (default). `checksum=skip` accepts
    /// frames from senders that leave partial checksums (kernel over veth with tx offload).
    pub verify_checksum: bool,
}

impl AfxdpKeys {
    /// Reads the keys from `spec`; a bad value is an error naming the key.
    pub fn from_spec(spec: &EndpointSpec) -> Result<AfxdpKeys> {
        Ok(AfxdpKeys {
            queue: spec.key("queue", 0, |v| keys::number("queue", v))?,
            mode: spec.key("mode", None, keys::mode)?,
            zero_copy: spec.key("zerocopy", None, |v| keys::boolean("zerocopy", v).map(Some))?,
            busy_poll: spec.key("busy_poll", true, |v| keys::boolean("busy_poll", v))?,
            ring_size: spec.key("ring", 2048, keys::ring)?,
            frame_size: spec.key("frame", 4096, |v| keys::number("frame", v))?,
            batch: spec.key("batch", 64, keys::batch)?,
            verify_checksum: spec.key("checksum", true, keys::checksum)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_typed_with_their_defaults() {
        let spec: EndpointSpec = "afxdp://veth0?port=7000&queue=1&mode=native&zerocopy=true&busy_poll=off&ring=512&frame=2048&batch=8&checksum=skip".parse().unwrap();
        let k = AfxdpKeys::from_spec(&spec).unwrap();
        assert_eq!(
            k,
            AfxdpKeys { queue: 1, mode: Some(XdpMode::Native), zero_copy: Some(true), busy_poll: false, ring_size: 512, frame_size: 2048, batch: 8, verify_checksum: false }
        );
        let d = AfxdpKeys::from_spec(&"afxdp://veth0?port=7000&mode=auto".parse().unwrap()).unwrap();
        assert_eq!(d, AfxdpKeys { queue: 0, mode: None, zero_copy: None, busy_poll: true, ring_size: 2048, frame_size: 4096, batch: 64, verify_checksum: true });
        // A key given again overrides, as before the keys left the shared spec.
        let again: EndpointSpec = "afxdp://veth0?port=7&ring=64&ring=128".parse().unwrap();
        assert_eq!(AfxdpKeys::from_spec(&again).unwrap().ring_size, 128);
    }

    /// One bad value per key, refused when the spec is read, naming the key;
    /// and the same message from `from_spec` for a spec built in code.
    #[test]
    fn a_bad_value_of_each_key_names_it() {
        for (kv, needle) in [
            ("queue=first", "`queue` takes a number, not `first`"),
            ("mode=fast", "`mode` takes auto, native or skb, not `fast`"),
            ("mode=strict", "sched_mode=strict"),
            ("zerocopy=maybe", "`zerocopy` takes true or false"),
            ("busy_poll=2", "`busy_poll` takes true or false"),
            ("ring=1000", "`ring` must be a power of two"),
            ("ring=0", "`ring` must be a power of two"),
            ("frame=big", "`frame` takes a number"),
            ("batch=0", "`batch` must be at least 1"),
            ("checksum=maybe", "`checksum` takes verify or skip"),
        ] {
            let e = format!("afxdp://veth0?port=7&{kv}").parse::<EndpointSpec>().unwrap_err().to_string();
            assert!(e.contains(needle), "{kv}: {e}");
            let (k, v) = kv.split_once('=').unwrap();
            let mut built = EndpointSpec::new("afxdp");
            built.extra.insert(k.into(), v.into());
            let e = AfxdpKeys::from_spec(&built).unwrap_err().to_string();
            assert!(e.contains(needle), "{kv} built in code: {e}");
        }
    }
}

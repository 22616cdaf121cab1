//! NIC settings through the ethtool ioctl (`SIOCETHTOOL`): interrupt
//! coalescing, ring sizes, GRO and LRO.
//!
//! The [`Nic`] trait is how the tuning layer reads and writes these settings,
//! so that tests can run the same apply/revert logic over a NIC that the test
//! machine does not have. [`EthtoolIoctl`] is the real implementation; it
//! works on interfaces of the calling thread's network namespace and needs
//! `CAP_NET_ADMIN` to change settings.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One NIC setting, named as `ethtool` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum NicSetting {
    /// `ethtool -C IF rx-usecs N`: microseconds the NIC waits before raising an RX interrupt.
    #[serde(rename = "rx-usecs")]
    RxUsecs,
    /// `ethtool -C IF tx-usecs N`.
    #[serde(rename = "tx-usecs")]
    TxUsecs,
    /// `ethtool -C IF adaptive-rx on|off` (1/0).
    #[serde(rename = "adaptive-rx")]
    AdaptiveRx,
    /// `ethtool -C IF adaptive-tx on|off` (1/0).
    #[serde(rename = "adaptive-tx")]
    AdaptiveTx,
    /// `ethtool -G IF rx N` (current RX ring size).
    #[serde(rename = "rx-ring")]
    RxRing,
    /// `ethtool -G IF tx N`.
    #[serde(rename = "tx-ring")]
    TxRing,
    /// Maximum RX ring size (read only).
    #[serde(rename = "rx-ring-max")]
    RxRingMax,
    /// Maximum TX ring size (read only).
    #[serde(rename = "tx-ring-max")]
    TxRingMax,
    /// `ethtool -K IF gro on|off` (1/0).
    #[serde(rename = "gro")]
    Gro,
    /// `ethtool -K IF lro on|off` (1/0).
    #[serde(rename = "lro")]
    Lro,
}

impl NicSetting {
    /// The ethtool name of the setting.
    pub fn name(self) -> &'static str {
        match self {
            NicSetting::RxUsecs => "rx-usecs",
            NicSetting::TxUsecs => "tx-usecs",
            NicSetting::AdaptiveRx => "adaptive-rx",
            NicSetting::AdaptiveTx => "adaptive-tx",
            NicSetting::RxRing => "rx-ring",
            NicSetting::TxRing => "tx-ring",
            NicSetting::RxRingMax => "rx-ring-max",
            NicSetting::TxRingMax => "tx-ring-max",
            NicSetting::Gro => "gro",
            NicSetting::Lro => "lro",
        }
    }
}

impl fmt::Display for NicSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads and writes NIC settings. Errors of kind
/// [`io::ErrorKind::Unsupported`] (EOPNOTSUPP) mean the driver does not have
/// the setting; the audit reports those as "unsupported".
pub trait Nic: Send + Sync + fmt::Debug {
    /// Current value of `setting` on `iface` (booleans are 0/1).
    fn get(&self, iface: &str, setting: NicSetting) -> io::Result<u32>;
    /// Sets `setting` on `iface` to `value`, leaving every other setting as it is.
    fn set(&self, iface: &str, setting: NicSetting, value: u32) -> io::Result<()>;
}

/// Whether an ethtool error means "the driver does not have this setting".
pub fn is_unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported || e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// The real NIC backend: the `SIOCETHTOOL` ioctl on an `AF_INET` datagram socket.
#[derive(Debug, Default, Clone, Copy)]
pub struct EthtoolIoctl;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GCOALESCE: u32 = 0x0e;
const ETHTOOL_SCOALESCE: u32 = 0x0f;
const ETHTOOL_GRINGPARAM: u32 = 0x10;
const ETHTOOL_SRINGPARAM: u32 = 0x11;
const ETHTOOL_GFLAGS: u32 = 0x25;
const ETHTOOL_SFLAGS: u32 = 0x26;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;
const ETH_FLAG_LRO: u32 = 1 << 15;
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// `struct ethtool_channels`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Channels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

/// `struct ethtool_coalesce`: the command word and 22 u32 fields.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Coalesce {
    cmd: u32,
    rx_usecs: u32,
    rx_frames: u32,
    rx_usecs_irq: u32,
    rx_frames_irq: u32,
    tx_usecs: u32,
    tx_frames: u32,
    tx_usecs_irq: u32,
    tx_frames_irq: u32,
    stats_block_usecs: u32,
    adaptive_rx: u32,
    adaptive_tx: u32,
    rest: [u32; 11],
}

/// `struct ethtool_ringparam`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Ring {
    cmd: u32,
    rx_max: u32,
    rx_mini_max: u32,
    rx_jumbo_max: u32,
    tx_max: u32,
    rx: u32,
    rx_mini: u32,
    rx_jumbo: u32,
    tx: u32,
}

/// `struct ethtool_value`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Value {
    cmd: u32,
    data: u32,
}

/// `struct ifreq` with the `ifr_data` member of the union (40 bytes on 64-bit).
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

impl EthtoolIoctl {
    fn call<T>(&self, iface: &str, arg: &mut T) -> io::Result<()> {
        if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains('/') || iface.contains('\0') {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("`{iface}` is not a valid interface name")));
        }
        // SAFETY: socket() has no memory-safety preconditions; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a freshly created descriptor that nothing else owns.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], data: arg as *mut T as *mut libc::c_void, _pad: [0; 16] };
        for (d, s) in req.name.iter_mut().zip(iface.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: req is a properly initialised ifreq whose name is NUL-terminated (length
        // checked above) and whose data points to a live ethtool struct of the type matching
        // its `cmd` word, which the kernel reads and writes within its size.
        let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &mut req as *mut IfReq) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn coalesce(&self, iface: &str) -> io::Result<Coalesce> {
        let mut c = Coalesce { cmd: ETHTOOL_GCOALESCE, ..Default::default() };
        self.call(iface, &mut c)?;
        Ok(c)
    }

    fn ring(&self, iface: &str) -> io::Result<Ring> {
        let mut r = Ring { cmd: ETHTOOL_GRINGPARAM, ..Default::default() };
        self.call(iface, &mut r)?;
        Ok(r)
    }

    /// Receive queues of `iface` (`ethtool -l`: combined + rx-only channels),
    /// at least 1; an error when the driver does not report channels.
    pub fn rx_queues(&self, iface: &str) -> io::Result<u32> {
        let mut ch = Channels { cmd: ETHTOOL_GCHANNELS, ..Default::default() };
        self.call(iface, &mut ch)?;
        Ok((ch.combined_count + ch.rx_count).max(1))
    }

    fn value(&self, iface: &str, cmd: u32) -> io::Result<u32> {
        let mut v = Value { cmd, data: 0 };
        self.call(iface, &mut v)?;
        Ok(v.data)
    }
}

impl Nic for EthtoolIoctl {
    fn get(&self, iface: &str, setting: NicSetting) -> io::Result<u32> {
        use NicSetting::*;
        Ok(match setting {
            RxUsecs => self.coalesce(iface)?.rx_usecs,
            TxUsecs => self.coalesce(iface)?.tx_usecs,
            AdaptiveRx => self.coalesce(iface)?.adaptive_rx,
            AdaptiveTx => self.coalesce(iface)?.adaptive_tx,
            RxRing => self.ring(iface)?.rx,
            TxRing => self.ring(iface)?.tx,
            RxRingMax => self.ring(iface)?.rx_max,
            TxRingMax => self.ring(iface)?.tx_max,
            Gro => self.value(iface, ETHTOOL_GGRO)? & 1,
            Lro => u32::from(self.value(iface, ETHTOOL_GFLAGS)? & ETH_FLAG_LRO != 0),
        })
    }

    fn set(&self, iface: &str, setting: NicSetting, value: u32) -> io::Result<()> {
        use NicSetting::*;
        match setting {
            RxUsecs | TxUsecs | AdaptiveRx | AdaptiveTx => {
                let mut c = self.coalesce(iface)?;
                match setting {
                    RxUsecs => c.rx_usecs = value,
                    TxUsecs => c.tx_usecs = value,
                    AdaptiveRx => c.adaptive_rx = value,
                    _ => c.adaptive_tx = value,
                }
                c.cmd = ETHTOOL_SCOALESCE;
                self.call(iface, &mut c)
            }
            RxRing | TxRing => {
                let mut r = self.ring(iface)?;
                if setting == RxRing {
                    r.rx = value
                } else {
                    r.tx = value
                }
                r.cmd = ETHTOOL_SRINGPARAM;
                self.call(iface, &mut r)
            }
            RxRingMax | TxRingMax => {
                Err(io::Error::new(io::ErrorKind::InvalidInput, "ring maxima are read-only"))
            }
            Gro => {
                let mut v = Value { cmd: ETHTOOL_SGRO, data: value };
                self.call(iface, &mut v)
            }
            Lro => {
                let flags = self.value(iface, ETHTOOL_GFLAGS)?;
                let data = if value != 0 { flags | ETH_FLAG_LRO } else { flags & !ETH_FLAG_LRO };
                let mut v = Value { cmd: ETHTOOL_SFLAGS, data };
                self.call(iface, &mut v)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_kernel() {
        assert_eq!(std::mem::size_of::<Coalesce>(), 23 * 4);
        assert_eq!(std::mem::size_of::<Ring>(), 9 * 4);
        assert_eq!(std::mem::size_of::<Channels>(), 9 * 4);
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
    }

    #[test]
    fn loopback_and_missing_interface() {
        // lo exists everywhere; it has no coalescing: either an error or a value, never a crash.
        let n = EthtoolIoctl;
        let _ = n.get("lo", NicSetting::RxUsecs);
        let e = n.get("nonexistent0", NicSetting::Gro).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "{e}");
        assert!(n.get("a/b", NicSetting::Gro).is_err());
        assert!(n.get("waytoolonginterfacename", NicSetting::Gro).is_err());
    }
}

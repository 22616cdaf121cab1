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
pub(crate) fn is_unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported || e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// The real NIC backend: the `SIOCETHTOOL` ioctl (through `detpath_sys::ethtool`).
#[derive(Debug, Default, Clone, Copy)]
pub struct EthtoolIoctl;

use detpath_sys::ethtool::{self as ioctl, ETHTOOL_GFLAGS, ETHTOOL_GGRO, ETHTOOL_SFLAGS, ETHTOOL_SGRO, ETH_FLAG_LRO};

impl Nic for EthtoolIoctl {
    fn get(&self, iface: &str, setting: NicSetting) -> io::Result<u32> {
        use NicSetting::*;
        Ok(match setting {
            RxUsecs => ioctl::coalesce(iface)?.rx_usecs,
            TxUsecs => ioctl::coalesce(iface)?.tx_usecs,
            AdaptiveRx => ioctl::coalesce(iface)?.adaptive_rx,
            AdaptiveTx => ioctl::coalesce(iface)?.adaptive_tx,
            RxRing => ioctl::rings(iface)?.rx,
            TxRing => ioctl::rings(iface)?.tx,
            RxRingMax => ioctl::rings(iface)?.rx_max,
            TxRingMax => ioctl::rings(iface)?.tx_max,
            Gro => ioctl::get_value(iface, ETHTOOL_GGRO)? & 1,
            Lro => u32::from(ioctl::get_value(iface, ETHTOOL_GFLAGS)? & ETH_FLAG_LRO != 0),
        })
    }

    fn set(&self, iface: &str, setting: NicSetting, value: u32) -> io::Result<()> {
        use NicSetting::*;
        match setting {
            RxUsecs | TxUsecs | AdaptiveRx | AdaptiveTx => {
                let mut c = ioctl::coalesce(iface)?;
                match setting {
                    RxUsecs => c.rx_usecs = value,
                    TxUsecs => c.tx_usecs = value,
                    AdaptiveRx => c.adaptive_rx = value,
                    _ => c.adaptive_tx = value,
                }
                ioctl::set_coalesce(iface, &c)
            }
            RxRing | TxRing => {
                let mut r = ioctl::rings(iface)?;
                if setting == RxRing {
                    r.rx = value
                } else {
                    r.tx = value
                }
                ioctl::set_rings(iface, &r)
            }
            RxRingMax | TxRingMax => Err(io::Error::new(io::ErrorKind::InvalidInput, "ring maxima are read-only")),
            Gro => ioctl::set_value(iface, ETHTOOL_SGRO, value),
            Lro => {
                let flags = ioctl::get_value(iface, ETHTOOL_GFLAGS)?;
                let data = if value != 0 { flags | ETH_FLAG_LRO } else { flags & !ETH_FLAG_LRO };
                ioctl::set_value(iface, ETHTOOL_SFLAGS, data)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

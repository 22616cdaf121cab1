//! NIC settings through the ethtool ioctl (`SIOCETHTOOL`): channels (queues),
//! interrupt coalescing, ring sizes, GRO and LRO; and what the NIC is: its
//! driver, link speed and PTP hardware clock ([`driver`], [`speed_mbps`],
//! [`phc_index`]: `ethtool -i`, `ethtool`, `ethtool -T` without the binary). Works on interfaces of the
//! calling thread's network namespace; changing a setting needs CAP_NET_ADMIN.
//! Errors are `io::Error`s as the kernel gives them (EOPNOTSUPP: the driver
//! does not have the setting; ENODEV: no such interface).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// Get interrupt coalescing (`struct ethtool_coalesce`).
pub const ETHTOOL_GCOALESCE: u32 = 0x0e;
/// Set interrupt coalescing.
pub const ETHTOOL_SCOALESCE: u32 = 0x0f;
/// Get ring sizes (`struct ethtool_ringparam`).
pub const ETHTOOL_GRINGPARAM: u32 = 0x10;
/// Set ring sizes.
pub const ETHTOOL_SRINGPARAM: u32 = 0x11;
/// Get the offload flags word (`struct ethtool_value`; LRO is [`ETH_FLAG_LRO`]).
pub const ETHTOOL_GFLAGS: u32 = 0x25;
/// Set the offload flags word.
pub const ETHTOOL_SFLAGS: u32 = 0x26;
/// Get GRO on/off (`struct ethtool_value`).
pub const ETHTOOL_GGRO: u32 = 0x2b;
/// Set GRO on/off.
pub const ETHTOOL_SGRO: u32 = 0x2c;
/// The LRO bit of the flags word.
pub const ETH_FLAG_LRO: u32 = 1 << 15;
const ETHTOOL_GCHANNELS: u32 = 0x3c;
const ETHTOOL_GSET: u32 = 0x01;
const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GET_TS_INFO: u32 = 0x41;

/// `struct ethtool_drvinfo` (`ethtool -i`).
#[repr(C)]
struct DrvInfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    counts: [u32; 5],
}

/// `struct ethtool_cmd` (the legacy `ETHTOOL_GSET`, which every kernel
/// still answers from the link settings).
#[repr(C)]
#[derive(Default)]
struct LinkCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}

/// `struct ethtool_ts_info` (`ethtool -T`).
#[repr(C)]
#[derive(Default)]
struct TsInfo {
    cmd: u32,
    so_timestamping: u32,
    phc_index: i32,
    tx_types: u32,
    tx_reserved: [u32; 3],
    rx_filters: u32,
    rx_reserved: [u32; 3],
}

/// `struct ethtool_channels` (`ethtool -l`).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(crate) struct Channels {
    /// `ETHTOOL_GCHANNELS`.
    pub cmd: u32,
    /// Most rx-only channels the NIC has.
    pub max_rx: u32,
    /// Most tx-only channels.
    pub max_tx: u32,
    /// Most other channels (link interrupts, SR-IOV).
    pub max_other: u32,
    /// Most combined rx/tx channels.
    pub max_combined: u32,
    /// rx-only channels in use.
    pub rx_count: u32,
    /// tx-only channels in use.
    pub tx_count: u32,
    /// Other channels in use.
    pub other_count: u32,
    /// Combined channels in use.
    pub combined_count: u32,
}

/// `struct ethtool_coalesce` (`ethtool -c`): the command word and 22 u32 fields.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct Coalesce {
    /// `ETHTOOL_GCOALESCE` or `ETHTOOL_SCOALESCE`.
    pub cmd: u32,
    /// µs after a receive before its interrupt.
    pub rx_usecs: u32,
    /// Frames received before an interrupt.
    pub rx_frames: u32,
    /// `rx_usecs` while an interrupt is being serviced.
    pub rx_usecs_irq: u32,
    /// `rx_frames` while an interrupt is being serviced.
    pub rx_frames_irq: u32,
    /// µs after a send completes before its interrupt.
    pub tx_usecs: u32,
    /// Completed sends before an interrupt.
    pub tx_frames: u32,
    /// `tx_usecs` while an interrupt is being serviced.
    pub tx_usecs_irq: u32,
    /// `tx_frames` while an interrupt is being serviced.
    pub tx_frames_irq: u32,
    /// µs between statistics block updates.
    pub stats_block_usecs: u32,
    /// Adaptive receive coalescing on (1) or off (0).
    pub adaptive_rx: u32,
    /// Adaptive transmit coalescing on (1) or off (0).
    pub adaptive_tx: u32,
    /// The packet-rate thresholds and their settings, kept as read.
    pub rest: [u32; 11],
}

/// `struct ethtool_ringparam` (`ethtool -g`).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct Rings {
    /// `ETHTOOL_GRINGPARAM` or `ETHTOOL_SRINGPARAM`.
    pub cmd: u32,
    /// Largest rx ring.
    pub rx_max: u32,
    /// Largest rx mini ring.
    pub rx_mini_max: u32,
    /// Largest rx jumbo ring.
    pub rx_jumbo_max: u32,
    /// Largest tx ring.
    pub tx_max: u32,
    /// rx ring size in use.
    pub rx: u32,
    /// rx mini ring size in use.
    pub rx_mini: u32,
    /// rx jumbo ring size in use.
    pub rx_jumbo: u32,
    /// tx ring size in use.
    pub tx: u32,
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

fn call<T>(iface: &str, arg: &mut T) -> io::Result<()> {
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

/// The interrupt coalescing of `iface` (`ethtool -c`).
pub fn coalesce(iface: &str) -> io::Result<Coalesce> {
    let mut c = Coalesce { cmd: ETHTOOL_GCOALESCE, ..Default::default() };
    call(iface, &mut c)?;
    Ok(c)
}

/// The ring sizes of `iface` (`ethtool -g`).
pub fn rings(iface: &str) -> io::Result<Rings> {
    let mut r = Rings { cmd: ETHTOOL_GRINGPARAM, ..Default::default() };
    call(iface, &mut r)?;
    Ok(r)
}

/// Receive queues of `iface` (`ethtool -l`: combined + rx-only channels),
/// at least 1; an error when the driver does not report channels.
pub fn rx_queues(iface: &str) -> io::Result<u32> {
    let mut ch = Channels { cmd: ETHTOOL_GCHANNELS, ..Default::default() };
    call(iface, &mut ch)?;
    Ok((ch.combined_count + ch.rx_count).max(1))
}

/// Reads one `struct ethtool_value` command (GGRO, GFLAGS...): its data word.
pub fn get_value(iface: &str, cmd: u32) -> io::Result<u32> {
    let mut v = Value { cmd, data: 0 };
    call(iface, &mut v)?;
    Ok(v.data)
}

/// Writes one `struct ethtool_value` command (SGRO, SFLAGS...).
pub fn set_value(iface: &str, cmd: u32, data: u32) -> io::Result<()> {
    let mut v = Value { cmd, data };
    call(iface, &mut v)
}

/// Writes coalescing settings read with [`coalesce`] and changed.
pub fn set_coalesce(iface: &str, c: &Coalesce) -> io::Result<()> {
    let mut c = Coalesce { cmd: ETHTOOL_SCOALESCE, ..*c };
    call(iface, &mut c)
}

/// Writes ring sizes read with [`rings`] and changed.
pub fn set_rings(iface: &str, r: &Rings) -> io::Result<()> {
    let mut r = Rings { cmd: ETHTOOL_SRINGPARAM, ..*r };
    call(iface, &mut r)
}

/// The driver of `iface` (`ethtool -i`: `veth`, `ixgbe`); an error when the
/// driver does not say (the loopback).
pub fn driver(iface: &str) -> io::Result<String> {
    let mut d = DrvInfo {
        cmd: ETHTOOL_GDRVINFO,
        driver: [0; 32],
        version: [0; 32],
        fw_version: [0; 32],
        bus_info: [0; 32],
        erom_version: [0; 32],
        reserved2: [0; 12],
        counts: [0; 5],
    };
    call(iface, &mut d)?;
    let end = d.driver.iter().position(|&b| b == 0).unwrap_or(d.driver.len());
    Ok(String::from_utf8_lossy(&d.driver[..end]).into_owned())
}

/// The link speed of `iface` in Mb/s (`ethtool`'s `Speed:`); `Ok(None)`
/// when the link reports none (down, or a device without a speed).
pub fn speed_mbps(iface: &str) -> io::Result<Option<u64>> {
    let mut c = LinkCmd { cmd: ETHTOOL_GSET, ..Default::default() };
    call(iface, &mut c)?;
    let speed = (u32::from(c.speed_hi) << 16) | u32::from(c.speed);
    // SPEED_UNKNOWN is -1 (all ones); 0 is no speed either.
    Ok((speed != u32::MAX && speed != 0).then_some(u64::from(speed)))
}

/// The index of the PTP hardware clock of `iface` (`/dev/ptpN`; `ethtool
/// -T`'s `PTP Hardware Clock:`), `Ok(None)` when it has none.
pub fn phc_index(iface: &str) -> io::Result<Option<u32>> {
    let mut t = TsInfo { cmd: ETHTOOL_GET_TS_INFO, ..Default::default() };
    call(iface, &mut t)?;
    Ok(u32::try_from(t.phc_index).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_kernel() {
        assert_eq!(std::mem::size_of::<Coalesce>(), 23 * 4);
        assert_eq!(std::mem::size_of::<Rings>(), 9 * 4);
        assert_eq!(std::mem::size_of::<Channels>(), 9 * 4);
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
        assert_eq!(std::mem::size_of::<DrvInfo>(), 196);
        assert_eq!(std::mem::size_of::<LinkCmd>(), 44);
        assert_eq!(std::mem::size_of::<TsInfo>(), 44);
    }

    #[test]
    fn the_loopback_has_no_driver_speed_or_clock() {
        assert!(driver("lo").is_err(), "the loopback names no driver");
        assert_eq!(speed_mbps("lo").ok().flatten(), None);
        assert_eq!(phc_index("lo").unwrap(), None, "every device answers -T; lo has no PHC");
        assert_eq!(driver("nonexistent0").unwrap_err().raw_os_error(), Some(libc::ENODEV));
    }

    #[test]
    fn missing_and_bad_interface_names() {
        let e = rx_queues("nonexistent0").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "{e}");
        assert!(get_value("a/b", ETHTOOL_GGRO).is_err());
        assert!(get_value("waytoolonginterfacename", ETHTOOL_GGRO).is_err());
    }
}

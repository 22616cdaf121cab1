//! Facts about a network interface, read through ioctls and getifaddrs on the
//! calling thread, so they answer for the thread's network namespace (unlike
//! /sys, which shows the namespace sysfs was mounted in).

use crate::error::{Error, Result};
use detpath_wire::MacAddr;
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An interface as found in the current network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetDev {
    /// Its name.
    pub name: String,
    /// Its index in the namespace.
    pub ifindex: u32,
    /// Its MAC address.
    pub mac: MacAddr,
    /// Its MTU.
    pub mtu: u32,
    /// Whether it is administratively up (`IFF_UP`).
    pub up: bool,
    /// IPv4 addresses with their prefix lengths.
    pub ipv4: Vec<(Ipv4Addr, u8)>,
    /// Combined or RX channels (queues); 1 when the driver does not say.
    pub queues: u32,
}

fn ctl_socket() -> Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Error::io("socket for interface ioctls", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is a fresh, owned descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ifreq_for(name: &str) -> Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains('\0') {
        return Err(Error::NoSuchInterface { iface: name.to_string() });
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(ifr)
}

fn ioctl(fd: &OwnedFd, req: libc::Ioctl, ifr: &mut libc::ifreq, name: &str) -> Result<()> {
    // SAFETY: ifr is a valid ifreq with a NUL-terminated name; req is an interface ioctl.
    if unsafe { libc::ioctl(fd.as_raw_fd(), req, ifr as *mut libc::ifreq) } < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENODEV) => Error::NoSuchInterface { iface: name.to_string() },
            _ => Error::io(format!("reading interface `{name}`"), e),
        });
    }
    Ok(())
}

/// The interface flags (`IFF_*`), e.g. to snapshot IFF_UP and IFF_PROMISC.
pub fn flags(name: &str) -> Result<i32> {
    let fd = ctl_socket()?;
    let mut ifr = ifreq_for(name)?;
    ioctl(&fd, libc::SIOCGIFFLAGS as _, &mut ifr, name)?;
    // SAFETY: the kernel filled the flags member of the union.
    Ok(unsafe { ifr.ifr_ifru.ifru_flags } as i32)
}

/// Sets the interface flags (`IFF_*`); needs CAP_NET_ADMIN.
pub fn set_flags(name: &str, flags: i32) -> Result<()> {
    let fd = ctl_socket()?;
    let mut ifr = ifreq_for(name)?;
    ifr.ifr_ifru.ifru_flags = flags as libc::c_short;
    ioctl(&fd, libc::SIOCSIFFLAGS as _, &mut ifr, name).map_err(|e| match e {
        Error::Io { what, source } => Error::os(what, source, "CAP_NET_ADMIN"),
        e => e,
    })
}

/// Index of the interface, or `NoSuchInterface`.
pub fn ifindex(name: &str) -> Result<u32> {
    let c = CString::new(name).map_err(|_| Error::NoSuchInterface { iface: name.to_string() })?;
    // SAFETY: c is a valid C string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(Error::NoSuchInterface { iface: name.to_string() });
    }
    Ok(idx)
}

impl NetDev {
    /// Looks the interface up in the calling thread's network namespace.
    pub fn lookup(name: &str) -> Result<NetDev> {
        let fd = ctl_socket()?;
        let ifindex = ifindex(name)?;
        let flags = flags(name)?;
        let mut ifr = ifreq_for(name)?;
        ioctl(&fd, libc::SIOCGIFMTU as _, &mut ifr, name)?;
        // SAFETY: the kernel filled the mtu member.
        let mtu = unsafe { ifr.ifr_ifru.ifru_mtu } as u32;
        let mut ifr = ifreq_for(name)?;
        ioctl(&fd, libc::SIOCGIFHWADDR as _, &mut ifr, name)?;
        // SAFETY: the kernel filled the hwaddr member.
        let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
        let mut mac = [0u8; 6];
        for (d, s) in mac.iter_mut().zip(sa.sa_data.iter()) {
            *d = *s as u8;
        }
        Ok(NetDev {
            name: name.to_string(),
            ifindex,
            mac: MacAddr(mac),
            mtu,
            up: flags & libc::IFF_UP != 0 && flags & libc::IFF_RUNNING != 0,
            ipv4: ipv4_addrs(name)?,
            queues: crate::ethtool::rx_queues(name).unwrap_or(1),
        })
    }

    /// Fails with `InterfaceDown` unless the interface is up and running.
    pub fn require_up(&self) -> Result<()> {
        if self.up {
            Ok(())
        } else {
            Err(Error::InterfaceDown { iface: self.name.clone() })
        }
    }

    /// The address to use: `want` if it is on the interface, else the first one.
    pub fn pick_ipv4(&self, want: Option<Ipv4Addr>) -> Result<Ipv4Addr> {
        let have = || self.ipv4.iter().map(|(a, p)| format!("{a}/{p}")).collect::<Vec<_>>().join(", ");
        match want {
            Some(a) if self.ipv4.iter().any(|(x, _)| *x == a) => Ok(a),
            Some(a) => Err(Error::AddressNotOnInterface { iface: self.name.clone(), addr: a.to_string(), have: or_none(have()) }),
            None => self.ipv4.first().map(|(a, _)| *a).ok_or_else(|| Error::AddressNotOnInterface {
                iface: self.name.clone(),
                addr: "an IPv4 address".into(),
                have: "none".into(),
            }),
        }
    }
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        s
    }
}

/// IPv4 addresses on the interface (getifaddrs uses netlink in the caller's namespace).
fn ipv4_addrs(name: &str) -> Result<Vec<(Ipv4Addr, u8)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: head is a valid out-pointer; freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(Error::io("listing interface addresses", std::io::Error::last_os_error()));
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let n = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        // SAFETY: ifa_addr is non-null and points to a sockaddr of at least sa_family.
        if n.to_bytes() != name.as_bytes() || unsafe { (*ifa.ifa_addr).sa_family } as i32 != libc::AF_INET {
            continue;
        }
        // SAFETY: the family is AF_INET, so the sockaddr is a sockaddr_in (and so is the netmask).
        let (addr, mask) = unsafe {
            let a = &*(ifa.ifa_addr as *const libc::sockaddr_in);
            let m = if ifa.ifa_netmask.is_null() { 0 } else { (*(ifa.ifa_netmask as *const libc::sockaddr_in)).sin_addr.s_addr };
            (a.sin_addr.s_addr, m)
        };
        out.push((Ipv4Addr::from(u32::from_be(addr)), u32::from_be(mask).count_ones() as u8));
    }
    // SAFETY: head came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_found() {
        let lo = NetDev::lookup("lo").unwrap();
        assert!(lo.ifindex > 0);
        assert!(lo.ipv4.contains(&(Ipv4Addr::LOCALHOST, 8)));
        assert_eq!(lo.pick_ipv4(None).unwrap(), Ipv4Addr::LOCALHOST);
        assert!(matches!(lo.pick_ipv4(Some(Ipv4Addr::new(192, 0, 2, 1))), Err(Error::AddressNotOnInterface { .. })));
    }

    #[test]
    fn missing_interface_is_named() {
        let e = NetDev::lookup("nosuchif0").unwrap_err();
        assert!(matches!(e, Error::NoSuchInterface { ref iface } if iface == "nosuchif0"), "{e}");
        assert!(e.to_string().contains("nosuchif0"));
    }
}

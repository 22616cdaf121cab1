//! Owning a DPDK port: claiming it in this process, undoing everything
//! opening did (stop and close the port, remove the device, free the pool,
//! restore the Linux interface) on drop and on signals.

use super::*;
/// A port claimed by an endpoint of this process; released on drop.
pub(super) struct Claim(String);

impl Claim {
    pub(super) fn take(key: String, device: &str) -> Result<Claim> {
        let mut c = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        if c.contains(&key) {
            return Err(DpdkError::PortInUse { device: device.to_string(), by: "by another dpdk endpoint of this process; close it first".into() }.into());
        }
        c.push(key.clone());
        Ok(Claim(key))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut c = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        c.retain(|k| k != &self.0);
    }
}

pub(super) fn call_err(what: impl Into<String>, code: i32) -> Error {
    DpdkError::Call { what: what.into(), code, msg: sys::strerror(code) }.into()
}

/// What to put back on the host, shared between the endpoint and its signal undo.
pub(super) struct Restore {
    pub(super) host: HostState,
    /// XDP program ids (driver, skb) the PMD attached.
    pub(super) xdp: (u32, u32),
}

/// Owns what opening did, and undoes it on drop, in this order: stop and
/// close the port, remove the device, free the pool, restore the host.
pub(super) struct PortOwner {
    pub(super) port: Option<u16>,
    pub(super) bus: &'static str,
    pub(super) dev_name: String,
    pub(super) probed: bool,
    pub(super) pool: *mut sys::rte_mempool,
    /// net_af_xdp's socket (fd, inode), closed after the port if DPDK leaked it.
    pub(super) xsk: Option<(i32, u64)>,
    pub(super) ns: Option<Arc<File>>,
    pub(super) restore: Arc<Mutex<Option<Restore>>>,
    pub(super) _cleanup: Option<CleanupHandle>,
    pub(super) _claim: Claim,
}

/// What [`teardown`] undoes on the DPDK side (plain data, so it can move to
/// the thread that runs in the endpoint's namespace).
#[derive(Clone, Copy)]
pub(super) struct DeviceParts {
    pub(super) port: Option<u16>,
    pub(super) probed: bool,
    pub(super) pool: usize,
    pub(super) xsk: Option<(i32, u64)>,
}

/// Stops and closes the port, closes a leaked AF_XDP socket, removes the
/// device, frees the pool. Runs in the endpoint's namespace (net_af_xdp
/// detaches its XDP program by ifindex, which is per namespace).
pub(super) fn teardown(d: DeviceParts, bus: &str, name: &str) {
    if let Some(p) = d.port {
        // SAFETY: p is a port this endpoint configured; nothing else uses it (its owner is going).
        unsafe {
            sys::detpath_dpdk_port_stop(p);
            sys::detpath_dpdk_port_close(p);
        }
    }
    if let Some((fd, ino)) = d.xsk {
        release_leaked_xsk(fd, ino);
    }
    if d.probed {
        let (b, n) = (CString::new(bus).unwrap_or_default(), CString::new(name).unwrap_or_default());
        // SAFETY: valid C strings; the device's port was closed above.
        unsafe { sys::detpath_dpdk_hotplug_remove(b.as_ptr(), n.as_ptr()) };
    }
    if d.pool != 0 {
        // SAFETY: the pool was created by this endpoint; the port that used it is closed.
        unsafe { sys::detpath_dpdk_pool_free(d.pool as *mut sys::rte_mempool) };
    }
}

impl PortOwner {
    pub(super) fn parts(&self) -> DeviceParts {
        DeviceParts { port: self.port, probed: self.probed, pool: self.pool as usize, xsk: self.xsk }
    }

    /// Undoes the DPDK side only, on the calling thread (already in the
    /// endpoint's namespace), so opening can try again.
    pub(super) fn release_device(&mut self) {
        teardown(self.parts(), self.bus, &self.dev_name);
        self.port = None;
        self.probed = false;
        self.pool = std::ptr::null_mut();
        self.xsk = None;
    }
}

impl Drop for PortOwner {
    fn drop(&mut self) {
        let parts = self.parts();
        let (bus, name) = (self.bus, self.dev_name.clone());
        let restore = self.restore.clone();
        let work = move || {
            teardown(parts, bus, &name);
            let r = restore.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(r) = r {
                for f in r.host.restore(r.xdp) {
                    eprintln!("detpath: dpdk: could not restore {f}");
                }
            }
        };
        let done = match &self.ns {
            Some(ns) => netns::run_on_thread_in(ns, work),
            None => {
                work();
                Ok(())
            }
        };
        if let Err(e) = done {
            eprintln!("detpath: dpdk: closing {}: {e}", self.dev_name);
        }
    }
}

/// The inode of the socket behind `fd`, when `fd` is an AF_XDP socket.
pub(super) fn xsk_inode(fd: i32) -> Option<u64> {
    let mut domain: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: an int option into a local of the right size.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_DOMAIN, (&mut domain as *mut libc::c_int).cast(), &mut len) };
    if r != 0 || domain != libc::AF_XDP {
        return None;
    }
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open (getsockopt succeeded); st is writable.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_ino)
}

/// Closes net_af_xdp's socket if DPDK 22.11 left it open (see the shim's
/// `detpath_dpdk_af_xdp_fd`), after unmapping any ring still mapped. Only
/// when `fd` still is the very socket recorded at setup.
pub(super) fn release_leaked_xsk(fd: i32, ino: u64) {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if link != format!("socket:[{ino}]") {
        return; // DPDK closed it; the number may belong to someone else now.
    }
    let tag = format!("socket:[{ino}]");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    for line in maps.lines().filter(|l| l.trim_end().ends_with(&tag)) {
        let range = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = range.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                // SAFETY: a ring of the leaked socket that nothing uses any more (its port is closed).
                unsafe { libc::munmap(a as *mut libc::c_void, b - a) };
            }
        }
    }
    // SAFETY: fd is the leaked socket (checked above); nothing else refers to it.
    unsafe { libc::close(fd) };
}

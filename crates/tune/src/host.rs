//! The host being tuned: a root directory (normally `/`) under which /proc,
//! /sys and /dev are read and written, and the NIC backend.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cpus::CpuList;
use crate::error::TuneError;
use crate::nic::{EthtoolIoctl, Nic};
pub use detpath_sys::cpu::Irq;
use detpath_sys::cpu::{natural_cmp, Cpus};

/// Where tuning reads and writes. [`Host::real`] is the machine itself;
/// [`Host::at`] points every /proc, /sys and /dev access at another root
/// (a fake tree in tests).
#[derive(Clone, Debug)]
pub struct Host {
    root: PathBuf,
    nic: Arc<dyn Nic>,
    cgroups: Arc<dyn Cgroups>,
}

/// The cgroup operations whose effect is more than the bytes of one file:
/// making and removing a cgroup (the kernel fills a new one with its
/// interface files), moving a process (it leaves the cgroup it was in) and
/// switching a controller on for the children. [`KernelCgroups`] is the
/// kernel's cgroupfs; tests give a fake tree one that acts the same on
/// plain files (this machine's cgroup v2 has no cpuset controller).
pub trait Cgroups: Send + Sync + std::fmt::Debug {
    /// Creates the cgroup `dir` (a real path).
    fn create(&self, dir: &Path) -> io::Result<()>;
    /// Removes the empty cgroup `dir`.
    fn remove(&self, dir: &Path) -> io::Result<()>;
    /// Moves process `pid` into the cgroup whose `cgroup.procs` is `procs`.
    fn attach(&self, procs: &Path, pid: u32) -> io::Result<()>;
    /// Enables (`+ctl`) or disables (`-ctl`) a controller in `subtree_control`.
    fn set_controller(&self, subtree_control: &Path, controller: &str, on: bool) -> io::Result<()>;
}

/// The kernel's cgroupfs: mkdir, rmdir, one write per pid, `+ctl`/`-ctl`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KernelCgroups;

impl Cgroups for KernelCgroups {
    fn create(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir(dir)
    }
    fn remove(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)
    }
    fn attach(&self, procs: &Path, pid: u32) -> io::Result<()> {
        fs::OpenOptions::new().write(true).open(procs)?.write_all(pid.to_string().as_bytes())
    }
    fn set_controller(&self, subtree_control: &Path, controller: &str, on: bool) -> io::Result<()> {
        let v = format!("{}{controller}", if on { '+' } else { '-' });
        fs::OpenOptions::new().write(true).open(subtree_control)?.write_all(v.as_bytes())
    }
}

impl Default for Host {
    fn default() -> Self {
        Self::real()
    }
}

impl Host {
    /// The running machine: root `/`, NIC settings through the ethtool ioctl.
    pub fn real() -> Self {
        Self { root: PathBuf::from("/"), nic: Arc::new(EthtoolIoctl), cgroups: Arc::new(KernelCgroups) }
    }

    /// A host whose /proc, /sys and /dev live under `root`. NIC settings still go
    /// through the ethtool ioctl unless replaced with [`Host::with_nic`].
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), nic: Arc::new(EthtoolIoctl), cgroups: Arc::new(KernelCgroups) }
    }

    /// Replaces the NIC backend.
    pub fn with_nic(mut self, nic: Arc<dyn Nic>) -> Self {
        self.nic = nic;
        self
    }

    /// Replaces the cgroup backend (a fake tree's).
    pub fn with_cgroups(mut self, cgroups: Arc<dyn Cgroups>) -> Self {
        self.cgroups = cgroups;
        self
    }

    /// The cgroup backend.
    pub fn cgroups(&self) -> &dyn Cgroups {
        &*self.cgroups
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The NIC backend.
    pub fn nic(&self) -> &dyn Nic {
        &*self.nic
    }

    /// The real path of a host path such as `/proc/sys/vm/swappiness`.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// Reads a host file; `Ok(None)` when it does not exist (a knob this kernel lacks).
    pub(crate) fn read_opt(&self, abs: &str) -> Result<Option<String>, TuneError> {
        let p = self.path(abs);
        match fs::read(&p) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(TuneError::io("read", p, e)),
        }
    }

    /// Reads a host file, trimmed; `None` when absent or unreadable.
    pub fn read_trim(&self, abs: &str) -> Option<String> {
        self.read_opt(abs).ok().flatten().map(|s| s.trim().to_string())
    }

    /// Whether a host path exists.
    pub fn exists(&self, abs: &str) -> bool {
        self.path(abs).exists()
    }

    /// Writes `value` to an existing host file in one `write(2)` (as sysfs and
    /// procfs want), truncating it (which matters only for regular files).
    pub fn write(&self, abs: &str, value: &str) -> Result<(), TuneError> {
        let p = self.path(abs);
        let r = (|| -> io::Result<()> {
            let mut f = fs::OpenOptions::new().write(true).truncate(true).open(&p)?;
            let n = f.write(value.as_bytes())?;
            if n != value.len() {
                return Err(io::Error::new(io::ErrorKind::WriteZero, format!("short write ({n} of {} bytes)", value.len())));
            }
            Ok(())
        })();
        r.map_err(|e| TuneError::io("write", p, e))
    }

    /// Names of the entries of a host directory (empty when absent).
    pub fn list_dir(&self, abs: &str) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path(abs))
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    /// The CPU facts of this host's tree (online, possible and isolated
    /// CPUs, IRQs), read by [`detpath_sys::cpu::Cpus`] under the same root.
    pub fn cpus(&self) -> Cpus {
        Cpus::at(&self.root)
    }

    /// The numbered IRQs under `/proc/irq`, each with its handlers (the
    /// action directories: empty for an IRQ that never fires) and the path of
    /// its `smp_affinity_list`.
    pub fn irqs(&self) -> Vec<Irq> {
        self.cpus().irqs()
    }

    /// Online CPUs (`/sys/devices/system/cpu/online`; CPU 0 alone when absent).
    pub fn online_cpus(&self) -> CpuList {
        self.cpus().online()
    }

    /// Possible CPUs (`/sys/devices/system/cpu/possible`; the online ones when absent).
    pub(crate) fn possible_cpus(&self) -> CpuList {
        self.cpus().possible()
    }

    /// Isolated CPUs (`/sys/devices/system/cpu/isolated`, else `isolcpus=` of the command line).
    pub(crate) fn isolated_cpus(&self) -> CpuList {
        self.cpus().isolated()
    }

    /// The value of `name=` on the kernel command line (`/proc/cmdline`), if given.
    pub fn cmdline_param(&self, name: &str) -> Option<String> {
        self.cpus().cmdline_param(name)
    }

    /// The boot id (`/proc/sys/kernel/random/boot_id`).
    pub fn boot_id(&self) -> Result<String, TuneError> {
        let abs = "/proc/sys/kernel/random/boot_id";
        match self.read_opt(abs)? {
            Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            _ => Err(TuneError::io("read", self.path(abs), io::Error::new(io::ErrorKind::NotFound, "no boot id: is /proc mounted?"))),
        }
    }

    /// Checks that every core is possible and online, and returns them.
    pub(crate) fn validate_cores(&self, cores: &CpuList) -> Result<(), TuneError> {
        if cores.is_empty() {
            return Err(TuneError::NoCores);
        }
        let possible = self.possible_cpus();
        let online = self.online_cpus();
        for c in cores.iter() {
            detpath_sys::cpu::CoreError::check(c, &possible, &online)?;
        }
        Ok(())
    }

    /// Checks that a network interface exists (`/sys/class/net/IF`).
    pub(crate) fn validate_iface(&self, iface: &str) -> Result<(), TuneError> {
        let abs = format!("/sys/class/net/{iface}");
        if iface.is_empty() || iface.contains('/') || iface == "." || iface == ".." || !self.exists(&abs) {
            return Err(TuneError::NoSuchInterface { iface: iface.to_string(), path: self.path(&abs) });
        }
        Ok(())
    }

    /// The cores a datapath should use when none are given: the isolated ones,
    /// else the highest-numbered online CPU (CPU 0 on a single-CPU machine).
    pub fn default_cores(&self) -> CpuList {
        let iso = self.isolated_cpus().intersection(&self.online_cpus());
        if !iso.is_empty() {
            return iso;
        }
        let online = self.online_cpus();
        CpuList::from_cpus(online.iter().last())
    }
}

fn is_absent(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
        || e.raw_os_error() == Some(libc::ENOTDIR)
        || e.raw_os_error() == Some(libc::ENODEV)
}

//! The calling thread's capabilities and locked-memory limit, read so that
//! errors can say which privilege is missing instead of "operation not permitted".

/// CAP_NET_ADMIN: attach XDP, change interfaces.
pub const CAP_NET_ADMIN: u32 = 12;
/// CAP_NET_RAW: AF_PACKET and AF_XDP sockets.
pub const CAP_NET_RAW: u32 = 13;
/// CAP_SYS_ADMIN: setns, open BPF objects by id.
pub const CAP_SYS_ADMIN: u32 = 21;
/// CAP_BPF: load BPF programs and maps (Linux 5.8+).
pub const CAP_BPF: u32 = 39;

/// Effective capability bits of the calling thread (from /proc), if readable.
pub fn effective() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// Whether `caps` (from [`effective`]) has `cap`; unknown caps count as present,
/// so a failure is then reported as the kernel's own error.
pub fn has(caps: Option<u64>, cap: u32) -> bool {
    !matches!(caps, Some(c) if c & (1 << cap) == 0)
}

/// The RLIMIT_MEMLOCK soft limit for messages: "8192 KiB", "unlimited" or "unknown".
pub fn memlock_limit() -> String {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: r is a valid out-parameter.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0 {
        return "unknown".into();
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        format!("{} KiB", r.rlim_cur / 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_bits() {
        assert!(has(Some(1 << CAP_BPF), CAP_BPF));
        assert!(!has(Some(0), CAP_NET_ADMIN));
        assert!(has(None, CAP_SYS_ADMIN));
    }

    #[test]
    fn this_thread_has_readable_caps_and_limit() {
        assert!(effective().is_some());
        assert_ne!(memlock_limit(), "unknown");
    }
}

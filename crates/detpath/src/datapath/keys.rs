//! The syntax of the spec keys several datapaths take (`queue`, `mode`,
//! `zerocopy`, `busy_poll`, `ring`, `frame`, `batch`, `checksum`): one
//! meaning and one parser per key name, so `mode=` is the XDP mode wherever
//! it is taken. Which keys a datapath takes is in its registry entry
//! ([`Datapath::keys`](crate::datapath::Datapath::keys)); each datapath
//! reads them into its own settings with these parsers (e.g.
//! [`AfxdpKeys::from_spec`](crate::datapath::afxdp::AfxdpKeys::from_spec)),
//! through [`EndpointSpec::key`](crate::EndpointSpec::key). The spec parser
//! checks a value's syntax here as it reads the string ([`check`]), so a
//! bad value is refused at once, naming the key. A leaf: imports no other
//! module of the crate.

use detpath_sys::XdpMode;
use std::str::FromStr;

/// Checks the syntax of `value` for `key`: `None` when `key` is not one of
/// these shared keys (its datapath or layer checks it).
pub(crate) fn check(key: &str, value: &str) -> Option<Result<(), String>> {
    Some(match key {
        "queue" => number::<u32>(key, value).map(drop),
        "mode" => mode(value).map(drop),
        "zerocopy" | "busy_poll" => boolean(key, value).map(drop),
        "ring" => ring(value).map(drop),
        "frame" => number::<u32>(key, value).map(drop),
        "batch" => batch(value).map(drop),
        "checksum" => checksum(value).map(drop),
        _ => return None,
    })
}

/// `mode`: the XDP mode asked for; `auto` is `None` (native if the driver
/// has it, else skb, reported).
pub(crate) fn mode(v: &str) -> Result<Option<XdpMode>, String> {
    match v {
        "auto" => Ok(None),
        _ => v.parse::<XdpMode>().map(Some).map_err(|_| {
            // `mode` is the XDP mode; the slot scheduler's delivery mode has its own key.
            let hint = if matches!(v, "strict" | "relaxed") { format!(" (the slot scheduler's delivery mode is `sched_mode={v}`)") } else { String::new() };
            format!("`mode` takes auto, native or skb, not `{v}`{hint}")
        }),
    }
}

/// `ring`: descriptors per ring, a power of two.
pub(crate) fn ring(v: &str) -> Result<u32, String> {
    let n: u32 = number("ring", v)?;
    if n == 0 || !n.is_power_of_two() {
        return Err(format!("`ring` must be a power of two, not {n}"));
    }
    Ok(n)
}

/// `batch`: the most datagrams one batched call moves, at least 1.
pub(crate) fn batch(v: &str) -> Result<u32, String> {
    match number("batch", v)? {
        0 => Err("`batch` must be at least 1".into()),
        n => Ok(n),
    }
}

/// `checksum`: verify UDP checksums on receive (`verify`) or accept frames
/// whose checksum a sender's offload left partial (`skip`).
pub(crate) fn checksum(v: &str) -> Result<bool, String> {
    match v {
        "verify" => Ok(true),
        "skip" => Ok(false),
        _ => Err(format!("`checksum` takes verify or skip, not `{v}`")),
    }
}

/// A yes/no key (`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`).
pub(crate) fn boolean(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{key}` takes true or false, not `{v}`")),
    }
}

/// A number key.
pub(crate) fn number<T: FromStr>(key: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("`{key}` takes a number, not `{v}`"))
}

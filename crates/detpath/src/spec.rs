//! Endpoint specs: the URI-style strings that name an endpoint, so one program
//! switches datapath by argument.
//!
//! ```text
//! <datapath>://<authority>[?key=value&...]
//!
//! authority: <ipv4>:<port>        udp://10.77.0.1:7000
//!            <iface>              afxdp://veth0?port=7000&queue=0&mode=native
//!            <device>             dpdk://0000:03:00.0?addr=10.0.0.1&port=7000
//! ```
//!
//! Every datapath takes [`COMMON_KEYS`]: `iface`, `addr`, `port`, and the
//! real-time polling thread keys (see [`crate::realtime`]): `rt_core` (pin
//! the thread that opens and polls the endpoint to this core), `rt_priority`
//! (SCHED_FIFO 1..99), `rt_mlock` (true|false, default true), `rt_strict`
//! (refuse a core that is not isolated or carries IRQs), `rt_dma_latency`
//! (hold /dev/cpu_dma_latency at this many us while the endpoint lives).
//!
//! `rx_stamp` (user|xdp|kernel: where `RxMeta::rx_ns` is taken; see
//! [`EndpointSpec::rx_stamp`]) is read by the datapaths that offer more than `user`.
//!
//! Keys parsed here into typed fields, taken by the datapaths that declare
//! them ([`crate::Datapath::keys`]): `queue`, `mode` (auto|native|skb),
//! `zerocopy` (true|false), `busy_poll` (true|false), `ring` (ring size),
//! `frame` (AF_XDP frame size), `batch`, `checksum` (verify|skip). Any other
//! key lands in [`EndpointSpec::extra`] for its datapath to read. A key the
//! datapath does not declare is refused by [`crate::open_spec`], naming the
//! key and the datapath: `udp://10.0.0.1:7000?zerocopy=true` is an error.

use crate::error::{Error, Result};
use detpath_sys::XdpMode;
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// Keys every datapath takes.
pub const COMMON_KEYS: &[&str] = &["iface", "addr", "port", "rt_core", "rt_priority", "rt_mlock", "rt_strict", "rt_dma_latency"];

/// A parsed endpoint spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    pub datapath: String,
    /// Network interface (required for datapaths that attach to one).
    pub iface: Option<String>,
    /// Datapath-specific device name when the authority is neither an address nor an interface (e.g. a PCI address).
    pub device: Option<String>,
    /// Local IPv4 address; when absent, the interface's first IPv4 address.
    pub addr: Option<Ipv4Addr>,
    /// Local UDP port (0: any, kernel sockets only).
    pub port: u16,
    pub queue: u32,
    /// XDP mode asked for; `None` (`mode=auto`): native if the driver has it, else skb, reported.
    pub mode: Option<XdpMode>,
    /// `Some(true)`: zero-copy or fail; `Some(false)` / `None`: copy mode.
    pub zero_copy: Option<bool>,
    pub busy_poll: bool,
    pub ring_size: u32,
    pub frame_size: u32,
    pub batch: u32,
    /// Verify UDP checksums on receive (default). `checksum=skip` accepts
    /// frames from senders that leave partial checksums (kernel over veth with tx offload).
    pub verify_checksum: bool,
    /// Run the polling thread real-time (`rt_*` keys); `None`: leave the thread as it is.
    pub realtime: Option<RealtimeSpec>,
    pub extra: BTreeMap<String, String>,
    /// Every key the spec string gave, in order (what [`crate::Datapath::check_keys`] checks).
    pub given: GivenKeys,
}

/// The keys a spec string spelled out. Two specs that mean the same are
/// equal however they were spelled (`mode=auto` or nothing), so this never
/// takes part in equality.
#[derive(Debug, Clone, Default, Eq)]
pub struct GivenKeys(pub Vec<String>);

impl PartialEq for GivenKeys {
    fn eq(&self, _: &GivenKeys) -> bool {
        true
    }
}

/// How the thread that opens (and then polls) an endpoint runs: the `rt_*` keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealtimeSpec {
    pub core: usize,
    /// SCHED_FIFO priority; `None` keeps SCHED_OTHER (pinning and mlock only).
    pub fifo_priority: Option<u8>,
    pub lock_memory: bool,
    pub strict: bool,
    /// Hold the C-state exit-latency limit at this many us while the endpoint lives.
    pub dma_latency_us: Option<u32>,
}

impl EndpointSpec {
    pub fn new(datapath: &str) -> EndpointSpec {
        EndpointSpec {
            datapath: datapath.to_string(),
            iface: None,
            device: None,
            addr: None,
            port: 0,
            queue: 0,
            mode: None,
            zero_copy: None,
            busy_poll: true,
            ring_size: 2048,
            frame_size: 4096,
            batch: 64,
            verify_checksum: true,
            realtime: None,
            extra: BTreeMap::new(),
            given: GivenKeys::default(),
        }
    }

    fn bad(&self, why: impl Into<String>) -> Error {
        Error::BadSpec { spec: self.to_string(), why: why.into() }
    }

    /// The interface, or an error naming the key to add.
    pub fn require_iface(&self) -> Result<&str> {
        self.iface
            .as_deref()
            .ok_or_else(|| self.bad(format!("the {} datapath needs an interface: `{}://<iface>?port=N` or `iface=<iface>`", self.datapath, self.datapath)))
    }

    /// The `rx_stamp` key: `user` (default) or one of the sources this
    /// datapath offers (`offered`), else an error naming them.
    pub fn rx_stamp(&self, offered: &[crate::RxStamp]) -> Result<crate::RxStamp> {
        use crate::RxStamp;
        let Some(v) = self.extra.get("rx_stamp") else { return Ok(RxStamp::User) };
        let all = [RxStamp::User, RxStamp::Xdp, RxStamp::Kernel];
        let names = || std::iter::once("user").chain(offered.iter().map(|s| s.as_str())).collect::<Vec<_>>().join("|");
        match all.into_iter().find(|s| s.as_str() == v) {
            Some(RxStamp::User) => Ok(RxStamp::User),
            Some(s) if offered.contains(&s) => Ok(s),
            Some(s) => Err(self.bad(format!("the {} datapath cannot take `rx_stamp={}`; it offers {}", self.datapath, s.as_str(), names()))),
            None => Err(self.bad(format!("`rx_stamp` takes {}, not `{v}`", names()))),
        }
    }

    /// The port, or an error when it is 0 and the datapath cannot pick one.
    pub fn require_port(&self) -> Result<u16> {
        if self.port == 0 {
            Err(self.bad(format!("the {} datapath needs a UDP port: add `port=N`", self.datapath)))
        } else {
            Ok(self.port)
        }
    }
}

fn parse_bool(key: &str, v: &str) -> std::result::Result<bool, String> {
    match v {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{key}` takes true or false, not `{v}`")),
    }
}

fn parse_num<T: FromStr>(key: &str, v: &str) -> std::result::Result<T, String> {
    v.parse().map_err(|_| format!("`{key}` takes a number, not `{v}`"))
}

impl FromStr for EndpointSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<EndpointSpec> {
        let bad = |why: String| Error::BadSpec { spec: s.to_string(), why };
        let (scheme, rest) = s.split_once("://").ok_or_else(|| bad("expected <datapath>://<address or interface>".into()))?;
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad(format!("`{scheme}` is not a datapath name")));
        }
        let mut spec = EndpointSpec::new(scheme);
        let (authority, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut rt_core: Option<usize> = None;
        let mut rt = RealtimeSpec { core: 0, fifo_priority: None, lock_memory: true, strict: false, dma_latency_us: None };
        let mut rt_keys: Vec<&str> = Vec::new();
        if authority.is_empty() {
            return Err(bad("empty address or interface".into()));
        }
        if let Ok(sa) = authority.parse::<std::net::SocketAddrV4>() {
            spec.addr = Some(*sa.ip());
            spec.port = sa.port();
        } else if let Ok(ip) = authority.parse::<Ipv4Addr>() {
            spec.addr = Some(ip);
        } else if let Some((ip, port)) = authority.rsplit_once(':').filter(|(ip, _)| ip.parse::<Ipv4Addr>().is_ok()) {
            return Err(bad(format!("`{port}` is not a UDP port (0..65535) after {ip}")));
        } else if authority.len() <= 15 && authority.chars().all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c)) {
            spec.iface = Some(authority.to_string());
        } else {
            spec.device = Some(authority.to_string());
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad(format!("`{pair}` is not key=value")))?;
            // A typed key given again overrides (URIs are built by appending
            // keys); a datapath-specific key given twice is refused below.
            if !spec.given.0.iter().any(|g| g == k) {
                spec.given.0.push(k.to_string());
            }
            let r: std::result::Result<(), String> = (|| {
                match k {
                    "iface" => spec.iface = Some(v.to_string()),
                    "addr" => spec.addr = Some(v.parse().map_err(|_| format!("`addr` takes an IPv4 address, not `{v}`"))?),
                    "port" => spec.port = parse_num(k, v)?,
                    "queue" => spec.queue = parse_num(k, v)?,
                    "mode" => {
                        spec.mode = match v {
                            "auto" => None,
                            _ => Some(v.parse::<XdpMode>().map_err(|_| format!("`mode` takes auto, native or skb, not `{v}`"))?),
                        }
                    }
                    "zerocopy" => spec.zero_copy = Some(parse_bool(k, v)?),
                    "busy_poll" => spec.busy_poll = parse_bool(k, v)?,
                    "ring" => spec.ring_size = parse_num(k, v)?,
                    "frame" => spec.frame_size = parse_num(k, v)?,
                    "batch" => spec.batch = parse_num(k, v)?,
                    "rt_core" => rt_core = Some(parse_num(k, v)?),
                    "rt_priority" => {
                        let p: u8 = parse_num(k, v)?;
                        if !(1..=99).contains(&p) {
                            return Err(format!("`rt_priority` takes a SCHED_FIFO priority 1..99, not `{v}`"));
                        }
                        rt.fifo_priority = Some(p);
                        rt_keys.push(k);
                    }
                    "rt_mlock" => {
                        rt.lock_memory = parse_bool(k, v)?;
                        rt_keys.push(k);
                    }
                    "rt_strict" => {
                        rt.strict = parse_bool(k, v)?;
                        rt_keys.push(k);
                    }
                    "rt_dma_latency" => {
                        rt.dma_latency_us = Some(parse_num(k, v)?);
                        rt_keys.push(k);
                    }
                    "checksum" => {
                        spec.verify_checksum = match v {
                            "verify" => true,
                            "skip" => false,
                            _ => return Err(format!("`checksum` takes verify or skip, not `{v}`")),
                        }
                    }
                    _ => {
                        if spec.extra.insert(k.to_string(), v.to_string()).is_some() {
                            return Err(format!("`{k}` given twice"));
                        }
                    }
                }
                Ok(())
            })();
            r.map_err(bad)?;
        }
        match (rt_core, rt_keys.first()) {
            (Some(core), _) => spec.realtime = Some(RealtimeSpec { core, ..rt }),
            (None, Some(k)) => return Err(bad(format!("`{k}` needs `rt_core=N` (the core the polling thread runs on)"))),
            (None, None) => {}
        }
        if spec.ring_size == 0 || !spec.ring_size.is_power_of_two() {
            return Err(bad(format!("`ring` must be a power of two, not {}", spec.ring_size)));
        }
        if spec.batch == 0 {
            return Err(bad("`batch` must be at least 1".into()));
        }
        Ok(spec)
    }
}

impl fmt::Display for EndpointSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.datapath)?;
        let mut q: Vec<String> = Vec::new();
        match (&self.iface, &self.device, self.addr) {
            (Some(i), _, _) => {
                write!(f, "{i}")?;
                if let Some(a) = self.addr {
                    q.push(format!("addr={a}"));
                }
                if let Some(d) = &self.device {
                    q.push(format!("device={d}"));
                }
            }
            (None, Some(d), _) => {
                write!(f, "{d}")?;
                if let Some(a) = self.addr {
                    q.push(format!("addr={a}"));
                }
            }
            (None, None, Some(a)) => write!(f, "{a}")?,
            (None, None, None) => write!(f, "?")?,
        }
        if self.iface.is_some() || self.device.is_some() || self.addr.is_none() {
            if self.port != 0 {
                q.push(format!("port={}", self.port));
            }
        } else {
            write!(f, ":{}", self.port)?;
        }
        if self.queue != 0 {
            q.push(format!("queue={}", self.queue));
        }
        if let Some(m) = self.mode {
            q.push(format!("mode={m}"));
        }
        if let Some(z) = self.zero_copy {
            q.push(format!("zerocopy={z}"));
        }
        if let Some(rt) = &self.realtime {
            q.push(format!("rt_core={}", rt.core));
            if let Some(p) = rt.fifo_priority {
                q.push(format!("rt_priority={p}"));
            }
            if !rt.lock_memory {
                q.push("rt_mlock=false".into());
            }
            if rt.strict {
                q.push("rt_strict=true".into());
            }
            if let Some(us) = rt.dma_latency_us {
                q.push(format!("rt_dma_latency={us}"));
            }
        }
        for (k, v) in &self.extra {
            q.push(format!("{k}={v}"));
        }
        if !q.is_empty() {
            write!(f, "?{}", q.join("&"))?;
        }
        Ok(())
    }
}

/// Appends `keys` (`a=1&b=2`, may be empty) to a spec.
pub fn with_keys(spec: &str, keys: &str) -> String {
    let keys = keys.trim_matches('&');
    if keys.is_empty() {
        spec.to_string()
    } else {
        format!("{spec}{}{keys}", if spec.contains('?') { '&' } else { '?' })
    }
}

/// Appends the `rt_*` keys that pin an endpoint's polling thread to `core`
/// and, with `rt`, run it SCHED_FIFO at that priority with memory locked
/// (see [`crate::realtime`]); `hold_cstates` also holds cpu_dma_latency at 0.
pub fn with_rt_keys(spec: &str, core: Option<u32>, rt: Option<u8>, hold_cstates: bool) -> String {
    let Some(core) = core else { return spec.to_string() };
    let mut uri = format!("{spec}{}rt_core={core}", if spec.contains('?') { '&' } else { '?' });
    match rt {
        Some(prio) => {
            uri += &format!("&rt_priority={prio}");
            if hold_cstates {
                uri += "&rt_dma_latency=0";
            }
        }
        None => uri += "&rt_mlock=false",
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_address_form() {
        let s: EndpointSpec = "udp://10.77.0.1:7000".parse().unwrap();
        assert_eq!(s.datapath, "udp");
        assert_eq!(s.addr, Some(Ipv4Addr::new(10, 77, 0, 1)));
        assert_eq!(s.port, 7000);
        assert_eq!(s.iface, None);
        assert_eq!(s.to_string(), "udp://10.77.0.1:7000");
    }

    #[test]
    fn afxdp_interface_form() {
        let s: EndpointSpec = "afxdp://veth0?port=7000&queue=1&mode=native&zerocopy=true".parse().unwrap();
        assert_eq!(s.iface.as_deref(), Some("veth0"));
        assert_eq!((s.port, s.queue, s.mode, s.zero_copy), (7000, 1, Some(XdpMode::Native), Some(true)));
        let again: EndpointSpec = s.to_string().parse().unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn device_form_and_extra_keys() {
        let s: EndpointSpec = "dpdk://0000:03:00.0?addr=10.0.0.1&port=7&vdev=net_tap0".parse().unwrap();
        assert_eq!(s.device.as_deref(), Some("0000:03:00.0"));
        assert_eq!(s.extra.get("vdev").map(String::as_str), Some("net_tap0"));
        assert_eq!(s.given.0, ["addr", "port", "vdev"]);
        assert!("dpdk://veth0?vdev=x&vdev=y".parse::<EndpointSpec>().unwrap_err().to_string().contains("given twice"));
        assert_eq!("udp://1.2.3.4:5?port=6&port=7".parse::<EndpointSpec>().unwrap().port, 7, "a typed key given again overrides");
    }

    #[test]
    fn errors_name_the_problem() {
        for (input, needle) in [
            ("veth0", "expected <datapath>://"),
            ("udp://", "empty"),
            ("afxdp://veth0?mode=fast", "auto, native or skb"),
            ("afxdp://veth0?port=x", "`port` takes a number"),
            ("afxdp://veth0?port", "not key=value"),
            ("afxdp://veth0?ring=1000", "power of two"),
            ("afxdp://veth0?zerocopy=maybe", "true or false"),
            ("afxdp://veth0?addr=1.2.3", "IPv4"),
            ("udp://127.0.0.1:99999", "not a UDP port"),
        ] {
            let e = input.parse::<EndpointSpec>().unwrap_err().to_string();
            assert!(e.contains(needle), "{input}: {e}");
        }
    }

    #[test]
    fn realtime_keys() {
        let s: EndpointSpec = "afxdp://veth0?port=7&rt_core=1&rt_priority=50&rt_strict=true&rt_dma_latency=0".parse().unwrap();
        let rt = s.realtime.clone().unwrap();
        assert_eq!((rt.core, rt.fifo_priority, rt.lock_memory, rt.strict, rt.dma_latency_us), (1, Some(50), true, true, Some(0)));
        assert_eq!(s.to_string().parse::<EndpointSpec>().unwrap(), s);
        assert!("udp://10.0.0.1:7".parse::<EndpointSpec>().unwrap().realtime.is_none());
        for (input, needle) in [
            ("udp://10.0.0.1:7?rt_priority=50", "needs `rt_core=N`"),
            ("udp://10.0.0.1:7?rt_core=1&rt_priority=0", "1..99"),
            ("udp://10.0.0.1:7?rt_core=x", "`rt_core` takes a number"),
        ] {
            let e = input.parse::<EndpointSpec>().unwrap_err().to_string();
            assert!(e.contains(needle), "{input}: {e}");
        }
    }

    #[test]
    fn require_helpers() {
        let s: EndpointSpec = "afxdp://10.0.0.1".parse().unwrap();
        assert!(s.require_iface().unwrap_err().to_string().contains("needs an interface"));
        assert!(s.require_port().unwrap_err().to_string().contains("port=N"));
    }
}

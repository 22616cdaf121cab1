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
//! A spec is typed once parsed: the datapath, the common keys (typed
//! fields), the datapath's own keys as given ([`EndpointSpec::extra`]) and
//! an ordered list of layers ([`EndpointSpec::layers`], see
//! [`crate::layer`]). Parsing routes each key: to a typed field, to the
//! layer that claims it (the `rt_*` keys are the real-time layer's,
//! `drop=`/`dup=`/... the fault injector's, `pcap=` the capture's, with the
//! `detpath-open` facade `sched=...` the slot scheduler's), or to `extra`
//! for the datapath. A program that adds keys builds on the typed value
//! ([`EndpointSpec::with_key`], [`EndpointSpec::with_layer`]) and never
//! appends text.
//!
//! Every datapath takes [`COMMON_KEYS`]: `iface`, `addr`, `port`.
//!
//! `rx_stamp` (user|xdp|kernel: where `RxMeta::rx_ns` is taken; see
//! [`EndpointSpec::rx_stamp`]) is read by the datapaths that offer more than `user`.
//!
//! Each datapath reads its own keys from `extra` into its own settings
//! (e.g. [`crate::datapath::afxdp::AfxdpKeys::from_spec`]) and lists them in
//! its registry entry ([`crate::datapath::Datapath::keys`]). Keys several
//! datapaths share (`queue`, `mode`, `zerocopy`, `busy_poll`, `ring`,
//! `frame`, `batch`, `checksum`) have one syntax, checked here as the
//! string is read (a bad value is refused at once, naming the key), and,
//! like the typed fields, a later one overrides an earlier one. A key the
//! datapath does not declare is refused by [`crate::open_spec`], naming the
//! key and the datapath: `udp://10.0.0.1:7000?zerocopy=true` is an error.
//!
//! A layer's name is also a scheme, with the datapath in `inner=`:
//! `fault://10.0.0.1:7?inner=udp&drop=3` is `udp://10.0.0.1:7?drop=3`.

use crate::endpoint::RxStamp;
use crate::error::{Error, Result};
use crate::layer::{Layer, LayerKeys, LayerRef, LayerUse, Registry};
use crate::realtime::RealtimeSpec;
use crate::datapath::keys;
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// Keys every datapath takes.
pub const COMMON_KEYS: &[&str] = &["iface", "addr", "port"];

/// A parsed endpoint spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    /// The scheme: a datapath's name (`afxdp`), or a layer's with the datapath in `inner=`.
    pub datapath: String,
    /// Network interface (required for datapaths that attach to one).
    pub iface: Option<String>,
    /// Datapath-specific device name when the authority is neither an address nor an interface (e.g. a PCI address).
    pub device: Option<String>,
    /// Local IPv4 address; when absent, the interface's first IPv4 address.
    pub addr: Option<Ipv4Addr>,
    /// Local UDP port (0: any, kernel sockets only).
    pub port: u16,
    /// The layers over the datapath, innermost first (the order they wrap in).
    pub layers: Vec<LayerUse>,
    /// The datapath's own keys, as given (each datapath parses those it takes).
    pub extra: BTreeMap<String, String>,
    /// Every datapath key the spec gave, in order (what [`crate::datapath::Datapath::check_keys`] checks).
    pub given: GivenKeys,
    /// The layers whose keys this spec routes (what parsed it).
    pub registry: KnownLayers,
}

/// The layer registry a spec routes keys with. Never takes part in equality.
#[derive(Clone, Copy)]
pub struct KnownLayers(pub Registry);

impl PartialEq for KnownLayers {
    fn eq(&self, _: &KnownLayers) -> bool {
        true
    }
}
impl Eq for KnownLayers {}

impl fmt::Debug for KnownLayers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|l| l.name())).finish()
    }
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

impl EndpointSpec {
    /// A spec of `datapath` with every key at its default, routing layer
    /// keys with this crate's layers ([`crate::layers::LAYERS`]).
    pub fn new(datapath: &str) -> EndpointSpec {
        EndpointSpec {
            datapath: datapath.to_string(),
            iface: None,
            device: None,
            addr: None,
            port: 0,
            layers: Vec::new(),
            extra: BTreeMap::new(),
            given: GivenKeys::default(),
            registry: KnownLayers(crate::layers::LAYERS),
        }
    }

    /// Parses a spec, routing layer keys with `registry`.
    pub fn parse_with(s: &str, registry: Registry) -> Result<EndpointSpec> {
        let bad = |why: String| Error::BadSpec { spec: s.to_string(), why };
        let (scheme, rest) = s.split_once("://").ok_or_else(|| bad("expected <datapath>://<address or interface>".into()))?;
        if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad(format!("`{scheme}` is not a datapath name")));
        }
        let mut spec = EndpointSpec::new(scheme);
        spec.registry = KnownLayers(registry);
        let (authority, query) = rest.split_once('?').unwrap_or((rest, ""));
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
        // A layer's name as the scheme: the datapath is in `inner=`.
        let scheme_layer = registry.iter().copied().find(|l| l.name() == scheme);
        let mut inner = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad(format!("`{pair}` is not key=value")))?;
            if scheme_layer.is_some() && k == "inner" {
                inner = Some(v.to_string());
                continue;
            }
            spec.set_key(k, v, false).map_err(bad)?;
        }
        if let Some(layer) = scheme_layer {
            let name = layer.name();
            let inner = inner.ok_or_else(|| bad(format!("the {name} layer wraps a datapath: add `inner=<datapath>` (e.g. inner=udp)")))?;
            if registry.iter().any(|l| l.name() == inner) {
                return Err(bad(format!("`inner={inner}` would wrap a layer in a layer; name a datapath")));
            }
            spec.datapath = inner;
            spec.use_layer(LayerRef::Registered(layer));
        }
        spec.validate().map_err(bad)?;
        Ok(spec)
    }

    /// The spec with one more key, set as parsing would (a key given
    /// already is replaced): a datapath key, or a layer's. A layer's keys
    /// are checked together when the endpoint opens (they may be set one by one).
    pub fn with_key(mut self, key: &str, value: impl fmt::Display) -> Result<EndpointSpec> {
        self.set_key(key, &value.to_string(), true).map_err(|why| self.bad(why))?;
        Ok(self)
    }

    /// The spec with the keys of `keys` (`a=1&b=2`, as a user typed them
    /// on a command line; may be empty), each set as [`with_key`](Self::with_key) does.
    pub fn with_keys(mut self, keys: &str) -> Result<EndpointSpec> {
        for pair in keys.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| self.bad(format!("`{pair}` is not key=value")))?;
            self = self.with_key(k, v)?;
        }
        Ok(self)
    }

    /// The spec with a layer a program built added outermost (e.g. metrics).
    pub fn with_layer(mut self, layer: LayerUse) -> EndpointSpec {
        self.layers.push(layer);
        self
    }

    /// The spec with the real-time layer's keys for `rt` (replacing any).
    pub fn with_realtime(mut self, rt: &RealtimeSpec) -> EndpointSpec {
        if let Some(u) = self.layers.iter_mut().find(|u| u.name() == crate::realtime::LAYER.name()) {
            u.keys.clear();
        }
        for (k, v) in rt.to_keys() {
            self.set_key(k, &v, true).expect("real-time keys are the real-time layer's");
        }
        self
    }

    /// The real-time layer's settings, if the spec has `rt_*` keys.
    pub fn realtime(&self) -> Option<RealtimeSpec> {
        let u = self.layers.iter().find(|u| u.name() == crate::realtime::LAYER.name())?;
        RealtimeSpec::from_keys(&u.keys).ok().flatten()
    }

    /// The keys of the layer called `name`, if the spec has it.
    pub fn layer_keys(&self, name: &str) -> Option<&LayerKeys> {
        self.layers.iter().find(|u| u.name() == name).map(|u| &u.keys)
    }

    /// The layer use of `layer`, made (in registry order) if the spec has none yet.
    fn use_layer(&mut self, layer: LayerRef) -> &mut LayerKeys {
        let name = layer.name();
        let i = match self.layers.iter().position(|u| u.name() == name) {
            Some(i) => i,
            None => {
                let rank = |n: &str| self.registry.0.iter().position(|l| l.name() == n).unwrap_or(usize::MAX);
                let at = self.layers.iter().position(|u| rank(u.name()) > rank(name)).unwrap_or(self.layers.len());
                self.layers.insert(at, LayerUse { layer, keys: LayerKeys::new() });
                at
            }
        };
        &mut self.layers[i].keys
    }

    /// Sets one key; `replace`: a key given before is replaced (else
    /// refused, except typed keys, which a later one overrides).
    fn set_key(&mut self, k: &str, v: &str, replace: bool) -> std::result::Result<(), String> {
        match k {
            "iface" => self.iface = Some(v.to_string()),
            "addr" => self.addr = Some(v.parse().map_err(|_| format!("`addr` takes an IPv4 address, not `{v}`"))?),
            "port" => self.port = keys::number(k, v)?,
            _ => {
                if let Some(valid) = keys::check(k, v) {
                    // A shared datapath key: its syntax checked now; given again, it overrides.
                    valid?;
                    self.extra.insert(k.to_string(), v.to_string());
                } else if let Some(layer) = self.registry.0.iter().copied().find(|l| l.claims(k)) {
                    let keys = self.use_layer(LayerRef::Registered(layer));
                    if keys.insert(k.to_string(), v.to_string()).is_some() && !replace {
                        return Err(format!("`{k}` given twice"));
                    }
                    return Ok(());
                } else if self.extra.insert(k.to_string(), v.to_string()).is_some() && !replace {
                    return Err(format!("`{k}` given twice"));
                }
            }
        }
        // A typed key given again overrides (a later key wins); a datapath-specific key given twice was refused above.
        if !self.given.0.iter().any(|g| g == k) {
            self.given.0.push(k.to_string());
        }
        Ok(())
    }

    /// The checks of a whole spec (each layer's keys; the datapath's own
    /// keys are checked as they are read, and by the datapath when it opens).
    fn validate(&self) -> std::result::Result<(), String> {
        self.layers.iter().try_for_each(|u| u.layer.check(&u.keys))
    }

    fn bad(&self, why: impl Into<String>) -> Error {
        Error::BadSpec { spec: self.to_string(), why: why.into() }
    }

    /// The interface, or an error naming the key to add.
    pub(crate) fn require_iface(&self) -> Result<&str> {
        self.iface
            .as_deref()
            .ok_or_else(|| self.bad(format!("the {} datapath needs an interface: `{}://<iface>?port=N` or `iface=<iface>`", self.datapath, self.datapath)))
    }

    /// The `rx_stamp` key: `user` (default) or one of the sources this
    /// datapath offers (`offered`), else an error naming them.
    pub fn rx_stamp(&self, offered: &[RxStamp]) -> Result<RxStamp> {
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

    /// The datapath key `name` read with `parse` (a parser of
    /// [`crate::datapath::keys`] or the datapath's own), or `default` when
    /// the spec does not give it; a bad value is an error naming the spec.
    pub(crate) fn key<T>(&self, name: &str, default: T, parse: impl FnOnce(&str) -> std::result::Result<T, String>) -> Result<T> {
        match self.extra.get(name) {
            None => Ok(default),
            Some(v) => parse(v).map_err(|why| self.bad(why)),
        }
    }

    /// The port, or an error when it is 0 and the datapath cannot pick one.
    pub(crate) fn require_port(&self) -> Result<u16> {
        if self.port == 0 {
            Err(self.bad(format!("the {} datapath needs a UDP port: add `port=N`", self.datapath)))
        } else {
            Ok(self.port)
        }
    }
}

impl FromStr for EndpointSpec {
    type Err = Error;

    /// Parses with this crate's layers ([`crate::layers::LAYERS`]); the
    /// `detpath-open` facade parses with every layer.
    fn from_str(s: &str) -> Result<EndpointSpec> {
        EndpointSpec::parse_with(s, crate::layers::LAYERS)
    }
}

impl fmt::Display for EndpointSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut q: Vec<String> = Vec::new();
        // A registered layer without keys is only said by its scheme.
        match self.layers.iter().find(|u| u.keys.is_empty() && matches!(u.layer, LayerRef::Registered(_))) {
            Some(u) => {
                write!(f, "{}://", u.name())?;
                q.push(format!("inner={}", self.datapath));
            }
            None => write!(f, "{}://", self.datapath)?,
        }
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
        for (k, v) in &self.extra {
            q.push(format!("{k}={v}"));
        }
        for u in &self.layers {
            q.extend(u.keys.iter().map(|(k, v)| format!("{k}={v}")));
        }
        if !q.is_empty() {
            write!(f, "?{}", q.join("&"))?;
        }
        Ok(())
    }
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
        assert_eq!(s.port, 7000);
        assert_eq!(s.extra.get("mode").map(String::as_str), Some("native"), "the datapath's own keys stay as given");
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
        let rt = s.realtime().unwrap();
        assert_eq!((rt.core, rt.fifo_priority, rt.lock_memory, rt.strict, rt.dma_latency_us), (1, Some(50), true, true, Some(0)));
        assert_eq!(s.to_string().parse::<EndpointSpec>().unwrap(), s);
        assert!("udp://10.0.0.1:7".parse::<EndpointSpec>().unwrap().realtime().is_none());
        // Built on the typed value: the same spec.
        let built = "afxdp://veth0?port=7".parse::<EndpointSpec>().unwrap().with_realtime(&rt);
        assert_eq!(built, s);
        assert_eq!(built.layers.len(), 1);
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

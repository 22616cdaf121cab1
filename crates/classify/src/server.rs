//! `detpath classify serve`: the daemon. The intent API ([`crate::api::Service`])
//! and `GET /metrics` are served over HTTP/1.1 by detpath's hardened listener
//! (`detpath_metrics::http`: hyper with a header timeout, a body limit
//! checked from Content-Length before reading, bounded connections and
//! request time) on the calling thread, one request at a time: the BPF maps
//! keep a single writer.
//!
//! Transports: by default a Unix socket, mode 0600 owned by root, at
//! `/run/detpath/classify-IFACE.sock` (only root can change the policy);
//! `--listen ADDR:PORT` adds (or with no socket, replaces it by) TCP, which
//! always needs a bearer token and checks Host and Origin so that a web page
//! cannot reach it. The listening sockets are made in the caller's network
//! namespace; with `netns`, the classifier is then loaded and attached
//! inside that namespace.
//!
//! Shutdown: SIGINT/SIGTERM set a flag the server looks at every 50 ms; it
//! then drops every connection (a slow client cannot hold it), removes the
//! socket file and detaches the XDP program.

use crate::api::Service;
use crate::classifier::Classifier;
use crate::error::{Error, Result};
use detpath_metrics::http::{Bound, ConnCounts, Limits, Policy, Reply, Req, Server, Target, Token};
use detpath_sys::XdpMode;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where the daemons' sockets live.
pub(crate) const SOCKET_DIR: &str = "/run/detpath";

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The interface the classifier is attached to (in `netns` when given).
    pub iface: String,
    /// The API's Unix socket (mode 0600); None: TCP only.
    pub socket: Option<PathBuf>,
    /// The API on TCP as well (needs `token`).
    pub listen: Option<SocketAddr>,
    /// Bearer token TCP clients must send.
    pub token: Option<Token>,
    /// Where intents and settings persist (reinstalled on start).
    pub state: Option<PathBuf>,
    /// XDP mode to attach in (native by default; never silently replaced by skb).
    pub xdp_mode: XdpMode,
    /// Rule slots (1..=`maps::MAX_RULES`): more intents are refused as a full table.
    pub max_rules: u32,
    /// Attach inside this network namespace (`/run/netns/NAME`).
    pub netns: Option<String>,
    /// Settings fields from the command line (`load_flag`, `alt_nodes`, ...,
    /// as `PUT /v1/config` names them): each wins over the state file's; a
    /// field not named keeps its stored value.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// What one client may cost.
    pub limits: Limits,
}

impl ServeConfig {
    /// The defaults for `iface`: the root-only Unix socket at its default
    /// path, no TCP, no state file, native XDP, every rule slot, the default limits.
    pub fn new(iface: &str) -> ServeConfig {
        ServeConfig {
            iface: iface.into(),
            socket: Some(default_socket_path(iface, None)),
            listen: None,
            token: None,
            state: None,
            xdp_mode: XdpMode::Native,
            max_rules: crate::maps::MAX_RULES,
            netns: None,
            settings: serde_json::Map::new(),
            limits: Limits::default(),
        }
    }
}

/// Where the API is served once the daemon is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The Unix socket's path, when one is served.
    pub socket: Option<PathBuf>,
    /// The TCP address bound (port 0 resolved).
    pub tcp: Option<SocketAddr>,
}

impl Endpoints {
    /// Where a client on this host should go (the socket when there is one).
    pub fn target(&self) -> Target {
        match (&self.socket, self.tcp) {
            (Some(p), _) => Target::Unix(p.clone()),
            (None, Some(a)) => Target::Tcp(a),
            (None, None) => Target::Unix(PathBuf::new()),
        }
    }
}

/// Default state file of an interface.
pub fn default_state_path(iface: &str, netns: Option<&str>) -> PathBuf {
    match netns {
        Some(ns) => PathBuf::from(format!("/var/lib/detpath/classify-{ns}-{iface}.json")),
        None => PathBuf::from(format!("/var/lib/detpath/classify-{iface}.json")),
    }
}

/// Default API socket of an interface.
pub fn default_socket_path(iface: &str, netns: Option<&str>) -> PathBuf {
    match netns {
        Some(ns) => PathBuf::from(format!("{SOCKET_DIR}/classify-{ns}-{iface}.sock")),
        None => PathBuf::from(format!("{SOCKET_DIR}/classify-{iface}.sock")),
    }
}

/// A stop flag set by SIGINT/SIGTERM (the serve loop then detaches and returns).
pub fn stop_on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            // Second signal: the XDP link is an fd, the kernel detaches it on exit.
            std::process::exit(130);
        }
    }) {
        eprintln!("detpath classify: cannot install the signal handler: {e}");
    }
    stop
}

/// The access rules of the intent API.
pub fn policy(token: Option<Token>) -> Policy {
    Policy { token, check_host: true, json_errors: true, token_hint: "the daemon's token (--token-file FILE)".into() }
}

/// The request handler over a service: `GET /metrics` (with the listener's
/// connection counts) and the intent API.
pub fn handler(svc: Rc<RefCell<Service>>, conns: ConnCounts) -> impl Fn(Req) -> Reply {
    move |req: Req| {
        if req.method == "GET" && req.path.split('?').next() == Some("/metrics") {
            return Reply::new(200, detpath_metrics::http::CONTENT_TYPE, crate::metrics::render(&svc.borrow(), &conns));
        }
        let (status, v) = svc.borrow_mut().handle(&req.method, &req.path, &req.body);
        let mut body = serde_json::to_vec_pretty(&v).unwrap_or_default();
        body.push(b'\n');
        Reply::new(status, "application/json", body)
    }
}

/// A socket file removed when the daemon ends (or fails to start).
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Binds the Unix socket with mode 0600 (a stale file from a crashed daemon
/// is replaced; a live daemon's is not).
fn bind_unix(path: &Path) -> Result<(UnixListener, SocketFile)> {
    let shown = path.display().to_string();
    let fail = |why: String| Error::Listen { addr: shown.clone(), why };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(fail("another daemon answers on it; stop it or pass another --socket".into()));
            }
            std::fs::remove_file(path).map_err(|e| fail(format!("removing the stale socket: {e}")))?;
        }
        Ok(_) => return Err(fail("it exists and is not a socket; remove it or pass another --socket".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e.to_string())),
    }
    // The socket file takes its mode from the umask at bind(2): make it
    // 0600 from the start, so there is no moment others could connect.
    // SAFETY: umask(2) only swaps the process's creation mask; it is restored
    // right after (the daemon creates no other file meanwhile).
    let old = unsafe { libc::umask(0o177) };
    let l = UnixListener::bind(path);
    // SAFETY: as above, restores the previous mask.
    unsafe { libc::umask(old) };
    let l = l.map_err(|e| fail(e.to_string()))?;
    let file = SocketFile(path.to_path_buf());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| fail(format!("chmod 0600: {e}")))?;
    Ok((l, file))
}

/// Runs the daemon until `stop` is set. `ready` receives where the API is
/// served once the classifier is attached and the rules are reinstalled.
pub fn serve(cfg: ServeConfig, stop: Arc<AtomicBool>, ready: Option<std::sync::mpsc::Sender<Endpoints>>) -> Result<()> {
    if cfg.socket.is_none() && cfg.listen.is_none() {
        return Err(Error::Config("nothing to serve the API on: give --socket PATH (the default) and/or --listen ADDR:PORT".into()));
    }
    if let (Some(a), None) = (cfg.listen, &cfg.token) {
        return Err(Error::NeedToken(a.to_string()));
    }
    let mut listeners = Vec::new();
    let mut at = Endpoints { socket: None, tcp: None };
    if let Some(a) = cfg.listen {
        let l = std::net::TcpListener::bind(a).map_err(|e| Error::Listen { addr: a.to_string(), why: e.to_string() })?;
        at.tcp = Some(l.local_addr().map_err(|e| Error::Listen { addr: a.to_string(), why: e.to_string() })?);
        listeners.push(Bound::Tcp(l));
    }
    let mut _socket_file = None;
    if let Some(p) = &cfg.socket {
        let (l, f) = bind_unix(p)?;
        _socket_file = Some(f);
        at.socket = Some(p.clone());
        listeners.push(Bound::Unix(l));
    }
    if let Some(ns) = &cfg.netns {
        detpath_sys::netns::move_to(ns)?;
    }
    let mut cls = Classifier::load(cfg.max_rules)?;
    cls.attach(&cfg.iface, cfg.xdp_mode)?;
    let svc = Service::new(cls, &cfg.iface, cfg.state.clone(), &cfg.settings, cfg.max_rules)?;
    let mut where_ = Vec::new();
    if let Some(p) = &at.socket {
        where_.push(format!("unix:{}", p.display()));
    }
    if let Some(a) = at.tcp {
        where_.push(format!("http://{a}/v1/ (token required)"));
    }
    eprintln!(
        "detpath classify: XDP classifier on {} ({} mode), {} intent(s) installed, API on {}",
        cfg.iface,
        cfg.xdp_mode.as_str(),
        svc.entries.len(),
        where_.join(" and ")
    );
    if let Some(r) = ready {
        let _ = r.send(at);
    }
    let svc = Rc::new(RefCell::new(svc));
    let conns = ConnCounts::default();
    let server = Server::with_counts(policy(cfg.token.clone()), cfg.limits, conns.clone(), handler(svc.clone(), conns));
    let served = server.run(listeners, &stop);
    eprintln!("detpath classify: stopping; detaching from {}", cfg.iface);
    // `run` dropped the server and its connections; the last service handle detaches.
    drop(svc);
    served.map_err(|e| Error::io("serving the API", e))
}

//! `detpath classify serve`: the daemon. One thread serves the HTTP JSON API
//! (tiny_http, sequential: the maps have one writer) over [`crate::api::Service`].
//! The listening socket is made in the caller's network namespace; with
//! `netns`, the classifier is then loaded and attached inside that namespace.

use crate::api::Service;
use crate::classifier::{Classifier, Settings};
use crate::error::{Error, Result};
use crate::intent::MAX_INTENT_BYTES;
use detpath_sys::XdpMode;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the daemon runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub iface: String,
    pub listen: SocketAddr,
    /// Bearer token; required when `listen` is not a loopback address.
    pub token: Option<String>,
    /// Where intents and settings persist (reinstalled on start).
    pub state: Option<PathBuf>,
    pub xdp_mode: XdpMode,
    pub max_rules: u32,
    /// Attach inside this network namespace (`/run/netns/NAME`).
    pub netns: Option<String>,
    /// Settings from the command line (win over the state file's).
    pub settings: Option<Settings>,
}

impl ServeConfig {
    pub fn new(iface: &str) -> ServeConfig {
        ServeConfig {
            iface: iface.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 7460)),
            token: None,
            state: None,
            xdp_mode: XdpMode::Native,
            max_rules: crate::maps::MAX_RULES,
            netns: None,
            settings: None,
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

fn json_response(status: u16, v: &serde_json::Value) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut body = serde_json::to_vec_pretty(v).unwrap_or_default();
    body.push(b'\n');
    let mut r = tiny_http::Response::from_data(body).with_status_code(status);
    if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..]) {
        r.add_header(h);
    }
    r
}

/// Runs the daemon until `stop` is set. `ready` receives the bound address
/// once the classifier is attached and the rules are reinstalled.
pub fn serve(cfg: ServeConfig, stop: Arc<AtomicBool>, ready: Option<std::sync::mpsc::Sender<SocketAddr>>) -> Result<()> {
    if !cfg.listen.ip().is_loopback() && cfg.token.is_none() {
        return Err(Error::NeedToken(cfg.listen.to_string()));
    }
    let server = tiny_http::Server::http(cfg.listen).map_err(|e| Error::Listen { addr: cfg.listen.to_string(), why: e.to_string() })?;
    let addr = server.server_addr().to_ip().unwrap_or(cfg.listen);
    if let Some(ns) = &cfg.netns {
        detpath_sys::netns::move_to(ns)?;
    }
    let mut cls = Classifier::load(cfg.max_rules)?;
    cls.attach(&cfg.iface, cfg.xdp_mode)?;
    let mut svc = Service::new(cls, &cfg.iface, cfg.state.clone(), cfg.settings.clone())?;
    eprintln!(
        "detpath classify: XDP classifier on {} ({} mode), {} intent(s) installed, API on http://{addr}/v1/",
        cfg.iface,
        cfg.xdp_mode.as_str(),
        svc.entries.len()
    );
    if let Some(r) = ready {
        let _ = r.send(addr);
    }
    let expected_auth = cfg.token.as_ref().map(|t| format!("Bearer {t}"));
    while !stop.load(Ordering::SeqCst) {
        let mut req = match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                eprintln!("detpath classify: accepting a request: {e}");
                continue;
            }
        };
        if let Some(want) = &expected_auth {
            let got = req.headers().iter().find(|h| h.field.equiv("Authorization")).map(|h| h.value.as_str().to_string());
            if got.as_deref() != Some(want.as_str()) {
                let v = serde_json::json!({"error": {"code": "unauthorized", "message": "send `Authorization: Bearer <token>` with the daemon's --token"}});
                let _ = req.respond(json_response(401, &v));
                continue;
            }
        }
        if *req.method() == tiny_http::Method::Get && req.url().split('?').next() == Some("/metrics") {
            let _ = req.respond(crate::metrics::response(&svc));
            continue;
        }
        let mut body = Vec::new();
        let n = req.as_reader().take(MAX_INTENT_BYTES as u64 + 1).read_to_end(&mut body);
        let (status, v) = match n {
            Err(e) => (400, serde_json::json!({"error": {"code": "bad_request", "message": format!("reading the body: {e}")}})),
            Ok(_) if body.len() > MAX_INTENT_BYTES => {
                (413, serde_json::json!({"error": {"code": "too_large", "message": format!("the body is larger than {MAX_INTENT_BYTES} bytes")}}))
            }
            Ok(_) => {
                let method = req.method().as_str().to_string();
                let url = req.url().to_string();
                svc.handle(&method, &url, &body)
            }
        };
        let _ = req.respond(json_response(status, &v));
    }
    eprintln!("detpath classify: stopping; detaching from {}", cfg.iface);
    drop(svc);
    Ok(())
}

//! The CLI's side of the daemon's API (`detpath classify add|rm|ls|stats|config`):
//! one blocking HTTP/1.1 request over the daemon's Unix socket (the default)
//! or TCP, answered with a status and a JSON body.

use crate::error::{Error, Result};
use crate::server::SOCKET_DIR;
pub use detpath_metrics::http::Target;
use std::path::{Path, PathBuf};

/// Sends one request and returns the status and the JSON body.
pub fn request(target: &Target, token: Option<&str>, method: &str, path: &str, body: Option<&[u8]>) -> Result<(u16, serde_json::Value)> {
    let r = detpath_metrics::http::request(target, method, path, token, body).map_err(|e| {
        let hint = match target {
            Target::Unix(_) => "is `detpath classify serve` running, and are you root? --socket PATH, or --server ADDR:PORT for TCP",
            Target::Tcp(_) => "is `detpath classify serve --listen` running there? --server ADDR:PORT",
        };
        Error::io(format!("talking to the classify daemon at {target} ({hint})"), e)
    })?;
    let v = if r.body.trim().is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&r.body).map_err(|e| Error::Config(format!("the daemon's answer ({}) is not JSON: {e}", r.status)))?
    };
    Ok((r.status, v))
}

/// The daemons' sockets in `dir` (`classify-*.sock`), sorted.
pub(crate) fn sockets_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("classify-") && n.ends_with(".sock")))
        .collect();
    out.sort();
    out
}

/// The socket to use when none was given: the interface's, or the only
/// daemon's on this host; otherwise an error that lists them.
pub fn default_socket(iface: Option<&str>, netns: Option<&str>) -> Result<PathBuf> {
    if let Some(i) = iface {
        return Ok(crate::server::default_socket_path(i, netns));
    }
    let found = sockets_in(Path::new(SOCKET_DIR));
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Error::Config(format!(
            "no classify daemon socket in {SOCKET_DIR}: start `detpath classify serve --iface IFACE`, or pass --socket PATH or --server ADDR:PORT"
        ))),
        many => Err(Error::Config(format!(
            "several classify daemons run ({}): pass --iface IFACE or --socket PATH",
            many.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

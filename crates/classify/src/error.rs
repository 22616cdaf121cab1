//! Errors of the classifier: typed, and each says what to do.

use crate::intent::IntentError;

/// What went wrong, with the interface, capability or setting concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot load the classifier BPF program: {0}. Run as root (CAP_BPF and CAP_NET_ADMIN) on a kernel with BPF enabled")]
    Load(String),
    #[error("BPF map {map}: {what}: {why}")]
    Map { map: &'static str, what: String, why: String },
    /// An interface, namespace or XDP attachment said no (names the fix).
    #[error(transparent)]
    Sys(#[from] detpath_sys::Error),
    #[error("state file {path}: {why}")]
    State { path: String, why: String },
    #[error("cannot listen on {addr}: {why}")]
    Listen { addr: String, why: String },
    #[error("refusing to serve the API on TCP {0} without a token: pass --token-file FILE (a file holding a secret; clients send `Authorization: Bearer SECRET`), or leave out --listen and use the Unix socket")]
    NeedToken(String),
    #[error(transparent)]
    Token(#[from] detpath_metrics::http::TokenError),
    #[error("{what}: {err}")]
    Io { what: String, err: std::io::Error },
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Intent(#[from] IntentError),
    #[error("{0}")]
    Api(#[from] crate::api::ApiError),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, err: std::io::Error) -> Error {
        Error::Io { what: what.into(), err }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

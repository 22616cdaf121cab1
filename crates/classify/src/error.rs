//! Errors of the classifier: typed, and each says what to do.

use crate::intent::IntentError;

/// What went wrong, with the interface, capability or setting concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no interface `{0}` in this network namespace (list them with `ip link`; with --netns, in that namespace)")]
    NoSuchInterface(String),
    #[error("cannot load the classifier BPF program: {0}. Run as root (CAP_BPF and CAP_NET_ADMIN) on a kernel with BPF enabled")]
    Load(String),
    #[error("cannot attach XDP to {iface} in {mode} mode: {why}")]
    Attach { iface: String, mode: &'static str, why: String },
    #[error("BPF map {map}: {what}: {why}")]
    Map { map: &'static str, what: String, why: String },
    #[error("network namespace `{ns}`: {why}")]
    Netns { ns: String, why: String },
    #[error("state file {path}: {why}")]
    State { path: String, why: String },
    #[error("cannot listen on {addr}: {why}")]
    Listen { addr: String, why: String },
    #[error("refusing to listen on {0} (not a loopback address) without a token: pass --token SECRET (clients send `Authorization: Bearer SECRET`)")]
    NeedToken(String),
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

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
    #[error(transparent)]
    Rule(#[from] RuleError),
}

/// What the classifier refuses when it is programmed: a rule, its action or
/// the settings (the classifier's own domain; the HTTP API maps each kind to
/// a status in `api.rs`, and nothing else knows of HTTP).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("{n} alternative nodes; at most {max}")]
    TooManyAltNodes { n: usize, max: usize },
    /// A setting out of its range.
    #[error("{0}")]
    BadValue(String),
    /// A steer/spread action names a CPU that is not online.
    #[error("{0}")]
    NoSuchCpu(String),
    /// An XSK action names a receive queue the interface does not have.
    #[error("{0}")]
    NoSuchQueue(String),
    /// A forward action names an alternative node that is not configured.
    #[error("{0}")]
    NoSuchAltNode(String),
    /// Every mask slot holds another match shape.
    #[error("the rules already use {0} distinct match shapes (the most the program searches); reuse the fields of an existing rule")]
    MasksFull(usize),
    #[error("a rule with exactly this match is installed; delete it first")]
    Duplicate,
    /// No rule slot or no room in the kernel's rule map.
    #[error("{0}")]
    TableFull(String),
    /// The kernel (a map write) or the host (an interface lookup) failed.
    #[error("{0}")]
    System(String),
}

impl RuleError {
    /// The stable machine-readable name of the error (the API's `code`).
    pub fn code(&self) -> &'static str {
        match self {
            RuleError::TooManyAltNodes { .. } => "too_many_alt_nodes",
            RuleError::BadValue(_) => "bad_value",
            RuleError::NoSuchCpu(_) => "no_such_cpu",
            RuleError::NoSuchQueue(_) => "no_such_queue",
            RuleError::NoSuchAltNode(_) => "no_such_alt_node",
            RuleError::MasksFull(_) => "masks_full",
            RuleError::Duplicate => "duplicate",
            RuleError::TableFull(_) => "table_full",
            RuleError::System(_) => "internal",
        }
    }
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, err: std::io::Error) -> Error {
        Error::Io { what: what.into(), err }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

//! Errors of the classifier: typed, and each says what to do.

use crate::intent::IntentError;

/// What went wrong, with the interface, capability or setting concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The BPF object could not be loaded or is not the one expected (a map
    /// or program missing, no CPU count): the verifier's or libbpf's words.
    #[error("cannot load the classifier BPF program: {0}. Run as root (CAP_BPF and CAP_NET_ADMIN) on a kernel with BPF enabled")]
    Load(String),
    /// A read or write of one of the classifier's BPF maps failed.
    #[error("BPF map {map}: {what}: {why}")]
    Map {
        /// The map's name in `bpf/classify.bpf.c` (`cls_rules`, ...).
        map: &'static str,
        /// What was being done (which key, which entry).
        what: String,
        /// libbpf's error.
        why: String,
    },
    /// An interface, namespace or XDP attachment said no (names the fix).
    #[error(transparent)]
    Sys(#[from] detpath_sys::Error),
    /// The daemon's state file (intents and settings) cannot be read, is
    /// invalid, or a stored intent cannot be reinstalled: the daemon does not
    /// start until it is repaired or removed.
    #[error("state file {path}: {why}")]
    State {
        /// The file as the user named it.
        path: String,
        /// What is wrong with it, and the fix.
        why: String,
    },
    /// The API's Unix socket or TCP address cannot be bound (in use, a live
    /// daemon's socket, no permission on the directory).
    #[error("cannot listen on {addr}: {why}")]
    Listen {
        /// The socket path or TCP address.
        addr: String,
        /// Why (the OS error, or the live daemon found there).
        why: String,
    },
    /// `--listen` (TCP) without a token: TCP is never served unauthenticated.
    /// Holds the address asked for.
    #[error("refusing to serve the API on TCP {0} without a token: pass --token-file FILE (a file holding a secret; clients send `Authorization: Bearer SECRET`), or leave out --listen and use the Unix socket")]
    NeedToken(String),
    /// The token file or credential could not be read or is empty.
    #[error(transparent)]
    Token(#[from] detpath_metrics::http::TokenError),
    /// A file, socket or command failed outside the BPF side.
    #[error("{what}: {err}")]
    Io {
        /// What was being done (the file or command named).
        what: String,
        /// The OS error.
        err: std::io::Error,
    },
    /// A setting, argument or answer that makes no sense (the message says
    /// which and what would): bench options, the daemon's reply, which
    /// daemon to talk to.
    #[error("{0}")]
    Config(String),
    /// An intent document that does not parse or asks for the impossible.
    #[error(transparent)]
    Intent(#[from] IntentError),
    /// The classifier refused a rule or setting (see [`RuleError`]).
    #[error(transparent)]
    Rule(#[from] RuleError),
}

/// What the classifier refuses when it is programmed: a rule, its action or
/// the settings (the classifier's own domain; the HTTP API maps each kind to
/// a status in `api.rs`, and nothing else knows of HTTP).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// More alternative nodes than the program's table holds.
    #[error("{n} alternative nodes; at most {max}")]
    TooManyAltNodes {
        /// Nodes asked for.
        n: usize,
        /// The table's size (`CLS_MAX_ALT`).
        max: usize,
    },
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
    /// A rule with exactly this match (fields and values) is installed: the
    /// kernel's rule map has one entry per match, so a second would replace it.
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

/// The classifier's result: [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

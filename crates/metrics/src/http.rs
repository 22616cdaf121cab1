//! detpath's HTTP listeners (the metrics listener here, the classifier's
//! intent API in `detpath-classify`) on hyper 1.x, with limits so that no
//! client, careless or hostile, can end or stall the process:
//!
//! - the request head must arrive within [`Limits::header_timeout`] and fit
//!   [`Limits::max_header_bytes`];
//! - a body larger than [`Limits::max_body`] is refused with 413 from its
//!   `Content-Length` before a byte of it is read (and a chunked body is cut
//!   at the limit), so nothing is ever allocated from a length a client claims;
//! - at most [`Limits::max_connections`] connections are open: a new one
//!   evicts the oldest that has not yet sent a complete request head, and is
//!   closed at once when every slot is busy with a request;
//! - one request per connection (no keep-alive) and every connection ends
//!   [`Limits::header_timeout`] + [`Limits::request_timeout`] after it was
//!   accepted, whatever the client does;
//! - the server runs on one thread (a current-thread tokio runtime), polls a
//!   stop flag every 50 ms and, when it is set, drops every connection
//!   without waiting for them: a slow client never delays shutdown.
//!
//! Access ([`Policy`]): a bearer token compared in constant time (`subtle`),
//! required on TCP when configured (a Unix socket is authorised by its file
//! mode); any `Origin` header that is not the request's own origin is refused
//! (403), so a web page cannot send requests; optionally (the intent API) the
//! `Host` header must name the address connected to or a loopback name, which
//! defeats DNS rebinding.
//!
//! The client side ([`request`], [`get`]) is a small blocking HTTP/1.1 client
//! over TCP or a Unix socket for the CLI, scripts and tests.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

use crate::Error;

/// The content type of OpenMetrics text (what prometheus-client writes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How often the serving thread looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// What a client may cost the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From accept to the end of the request head.
    pub header_timeout: Duration,
    /// From the end of the head to the end of the answer (body, handler, write).
    pub request_timeout: Duration,
    /// Largest request body; a larger `Content-Length` is answered 413 unread.
    pub max_body: u64,
    /// Open connections at once.
    pub max_connections: usize,
    /// Largest request head (hyper's read buffer; at least 8192).
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            max_body: 1 << 20,
            max_connections: 64,
            max_header_bytes: 16 * 1024,
        }
    }
}

/// Why a token could not be used.
/// Why a bearer token could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "cannot read the token file {path}: {err}; create it (e.g. `head -c 32 /dev/urandom | base64 > {path}; chmod 600 {path}`) or pass another --token-file"
    )]
    /// The file could not be read.
    Read {
        /// The token file.
        path: String,
        /// The read error.
        err: io::Error,
    },
    /// The file holds no token (its path).
    #[error("the token from {0} is empty; put a secret of printable characters in it")]
    Empty(String),
    /// The token holds a character a header cannot carry (the file's path).
    #[error("the token from {0} holds a space or a control character; use printable ASCII (e.g. base64) so it fits an `Authorization: Bearer` header")]
    Invalid(String),
}

/// A bearer token. Its `Debug` form does not show the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A token from text (`from` names where it came from, for the error).
    pub fn new(s: &str, from: &str) -> Result<Token, TokenError> {
        if s.is_empty() {
            return Err(TokenError::Empty(from.to_string()));
        }
        if !s.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::Invalid(from.to_string()));
        }
        Ok(Token(s.to_string()))
    }

    /// The token in a file; trailing newlines (`\n`, `\r\n`) are ignored, as
    /// `echo secret > file` writes one.
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| TokenError::Read { path: shown.clone(), err })?;
        Token::new(text.trim_end_matches(['\n', '\r']), &shown)
    }

    /// The secret (for a client's `Authorization` header).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`,
    /// compared in constant time (only the length can be learnt).
    pub(crate) fn verify(&self, authorization: Option<&[u8]>) -> bool {
        let Some(v) = authorization else { return false };
        let Some(got) = v.strip_prefix(b"Bearer ") else { return false };
        bool::from(got.ct_eq(self.0.as_bytes()))
    }
}

/// Who may ask what.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The bearer token TCP clients must send. Unix-socket clients are
    /// authorised by the socket's file mode.
    pub token: Option<Token>,
    /// Check the `Host` header on TCP (the intent API; Prometheus may name
    /// a metrics target by DNS name, so the metrics listener does not).
    pub check_host: bool,
    /// Answer refusals as `{"error": {"code", "message"}}` instead of text.
    pub json_errors: bool,
    /// Where the token comes from, for the 401 message (e.g. "the daemon's --token-file").
    pub token_hint: String,
}

/// The transport a request came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// TCP, with the local address the client connected to.
    Tcp {
        /// The local address the client connected to.
        local: SocketAddr,
    },
    /// A Unix socket (access is the socket file's permissions).
    Unix,
}

/// A request as the handler sees it: limits and access already checked.
#[derive(Debug, Clone)]
pub struct Req {
    /// `GET`, `POST`...
    pub method: String,
    /// Path and query, e.g. `/v1/intents?x=1`.
    pub path: String,
    /// The request body.
    pub body: Bytes,
}

/// The handler's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The Content-Type header.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// A reply with this status, Content-Type and body.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply { status, content_type: content_type.to_string(), body: body.into() }
    }
}

/// A request refused before the handler saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status sent.
    pub status: u16,
    /// A stable machine-readable code (`too_large`, `unauthorized`...).
    pub code: &'static str,
    /// What to do about it.
    pub message: String,
}

fn refuse(status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal { status, code, message: message.into() }
}

/// Splits a `Host` value into its host and port (`[v6]:p`, `v4:p`, `name`).
fn split_host(h: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        (ip, after.strip_prefix(':'))
    } else {
        match h.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, Some(port)),
            Some(_) => return None,
            None => (h, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse().ok()?),
        None => None,
    };
    Some((host, port))
}

/// Whether `host` (a `Host` header) names this server for a client that
/// connected to `local`: the address itself or a loopback name, and its port.
pub(crate) fn host_allowed(host: &str, local: SocketAddr) -> bool {
    let Some((name, port)) = split_host(host) else { return false };
    if port.unwrap_or(80) != local.port() {
        return false;
    }
    match name.parse::<IpAddr>() {
        Ok(ip) => ip == local.ip() || ip.is_loopback() || matches!((ip, local.ip()), (IpAddr::V4(a), IpAddr::V6(b)) if b.to_ipv4_mapped() == Some(a)),
        Err(_) => name.eq_ignore_ascii_case("localhost") || name.eq_ignore_ascii_case("localhost."),
    }
}

/// The checks made on a request head before its body is read: origin,
/// host, token, size. Pure (the fuzz target and the tests call it too).
pub fn gate(policy: &Policy, limits: &Limits, peer: Peer, headers: &HeaderMap) -> Result<(), Refusal> {
    let text = |name: hyper::header::HeaderName| headers.get(name).map(|v| v.to_str().map_err(|_| ()));
    let host = text(hyper::header::HOST);
    if let Some(origin) = text(hyper::header::ORIGIN) {
        let same = match (&origin, &host) {
            (Ok(o), Some(Ok(h))) => o.strip_prefix("http://").is_some_and(|rest| rest.eq_ignore_ascii_case(h)),
            _ => false,
        };
        if !same {
            return Err(refuse(403, "cross_origin", "requests from web pages of another origin are refused (the Origin header is not this server)"));
        }
    }
    if let Peer::Tcp { local } = peer {
        if policy.check_host {
            match host {
                Some(Ok(h)) if host_allowed(h, local) => {}
                Some(_) => return Err(refuse(403, "bad_host", format!("the Host header must be {local} or localhost:{}", local.port()))),
                None => return Err(refuse(400, "no_host", "send a Host header (HTTP/1.1)")),
            }
        }
        if let Some(t) = &policy.token {
            if !t.verify(headers.get(hyper::header::AUTHORIZATION).map(HeaderValue::as_bytes)) {
                return Err(refuse(401, "unauthorized", format!("send `Authorization: Bearer <token>` with {}", policy.token_hint)));
            }
        }
    }
    if let Some(v) = headers.get(hyper::header::CONTENT_LENGTH) {
        let n: u64 = v.to_str().ok().and_then(|s| s.trim().parse().ok()).ok_or_else(|| refuse(400, "bad_length", "Content-Length is not a number"))?;
        if n > limits.max_body {
            return Err(refuse(413, "too_large", format!("the body ({n} bytes) is larger than {} bytes", limits.max_body)));
        }
    }
    Ok(())
}

/// What the connection limit did so far: shared with whoever reports it
/// (the classifier's `/metrics`, the metrics listener's own), so a caller
/// makes one, hands a clone to its handler and one to [`Server::with_counts`].
#[derive(Debug, Clone, Default)]
pub struct ConnCounts {
    refused: Arc<AtomicU64>,
    evicted: Arc<AtomicU64>,
}

impl ConnCounts {
    /// Connections closed at once because every slot was serving a request.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
    /// Connections closed to make room because they had not sent a
    /// complete request head (the half-open ones).
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

/// Open connections, oldest first.
#[derive(Default)]
struct Conns {
    next: u64,
    live: BTreeMap<u64, Conn>,
    counts: ConnCounts,
}

struct Conn {
    /// Set once the request head is complete (then it is not evicted).
    in_request: Rc<Cell<bool>>,
    cancel: Rc<Notify>,
}

impl Conns {
    /// A slot for a new connection: evicts the oldest still reading its
    /// head when full; None when every slot serves a request.
    fn admit(&mut self, max: usize) -> Option<(u64, Rc<Cell<bool>>, Rc<Notify>)> {
        if self.live.len() >= max {
            let victim = self.live.iter().find(|(_, c)| !c.in_request.get()).map(|(id, _)| *id);
            match victim.and_then(|id| self.live.remove(&id)) {
                Some(c) => {
                    c.cancel.notify_one();
                    self.counts.evicted.fetch_add(1, Ordering::Relaxed);
                }
                None => {
                    self.counts.refused.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
        }
        let id = self.next;
        self.next += 1;
        let c = Conn { in_request: Rc::new(Cell::new(false)), cancel: Rc::new(Notify::new()) };
        let out = (id, c.in_request.clone(), c.cancel.clone());
        self.live.insert(id, c);
        Some(out)
    }
}

/// The server: policy, limits and a handler, on one thread.
pub struct Server<H> {
    policy: Policy,
    limits: Limits,
    handler: H,
    conns: RefCell<Conns>,
}

/// A listening socket made by the caller (in the namespace it chose).
#[derive(Debug)]
pub enum Bound {
    /// A TCP listener.
    Tcp(std::net::TcpListener),
    /// A Unix-socket listener.
    Unix(std::os::unix::net::UnixListener),
}

impl<H: Fn(Req) -> Reply + 'static> Server<H> {
    /// A server that answers with `handler` under `policy` and `limits`.
    pub fn new(policy: Policy, limits: Limits, handler: H) -> Rc<Server<H>> {
        Server::with_counts(policy, limits, ConnCounts::default(), handler)
    }

    /// As [`Server::new`], counting refused and evicted connections in
    /// `counts` (a clone of which the handler may report).
    pub fn with_counts(policy: Policy, limits: Limits, counts: ConnCounts, handler: H) -> Rc<Server<H>> {
        let conns = RefCell::new(Conns { counts, ..Conns::default() });
        Rc::new(Server { policy, limits, handler, conns })
    }

    fn refusal(&self, r: Refusal) -> Reply {
        if self.policy.json_errors {
            let body = serde_json::json!({"error": {"code": r.code, "message": r.message}});
            let mut b = serde_json::to_vec_pretty(&body).unwrap_or_default();
            b.push(b'\n');
            Reply::new(r.status, "application/json", b)
        } else {
            Reply::new(r.status, "text/plain; charset=utf-8", format!("{}\n", r.message))
        }
    }

    async fn answer(&self, req: hyper::Request<Incoming>, peer: Peer) -> Reply {
        if let Err(r) = gate(&self.policy, &self.limits, peer, req.headers()) {
            return self.refusal(r);
        }
        let (parts, body) = req.into_parts();
        let limit = usize::try_from(self.limits.max_body).unwrap_or(usize::MAX);
        let body = match tokio::time::timeout(self.limits.request_timeout, Limited::new(body, limit).collect()).await {
            Err(_) => return self.refusal(refuse(408, "timeout", "the body did not arrive in time")),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return self.refusal(refuse(413, "too_large", format!("the body is larger than {} bytes", self.limits.max_body)))
            }
            Ok(Err(e)) => return self.refusal(refuse(400, "bad_body", format!("reading the body: {e}"))),
            Ok(Ok(c)) => c.to_bytes(),
        };
        let path = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
        (self.handler)(Req { method: parts.method.as_str().to_string(), path, body })
    }

    fn response(&self, r: Reply) -> hyper::Response<Full<Bytes>> {
        let status = r.status;
        let mut resp = hyper::Response::new(Full::new(Bytes::from(r.body)));
        *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        let h = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&r.content_type) {
            h.insert(hyper::header::CONTENT_TYPE, v);
        }
        h.insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
        if status == 401 {
            h.insert(hyper::header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }

    /// Serves one connection (one request) with every limit applied; ends
    /// at the deadline or when `cancel` is notified. Any byte stream will
    /// do: the fuzz target passes an in-memory pipe.
    pub async fn serve_connection<IO>(self: Rc<Self>, io: IO, peer: Peer, in_request: Rc<Cell<bool>>, cancel: Rc<Notify>)
    where
        IO: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        let me = self.clone();
        let svc = service_fn(move |req| {
            in_request.set(true);
            let me = me.clone();
            async move {
                let reply = me.answer(req, peer).await;
                Ok::<_, Infallible>(me.response(reply))
            }
        });
        let mut b = http1::Builder::new();
        b.timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout)
            .keep_alive(false)
            .max_buf_size(self.limits.max_header_bytes.max(8192))
            .max_headers(64);
        let conn = b.serve_connection(TokioIo::new(io), svc);
        let deadline = tokio::time::sleep(self.limits.header_timeout + self.limits.request_timeout);
        tokio::select! {
            _ = conn => {}
            _ = cancel.notified() => {}
            _ = deadline => {}
        }
    }

    fn admit<IO>(self: &Rc<Self>, io: IO, peer: Peer)
    where
        IO: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        let Some((id, in_request, cancel)) = self.conns.borrow_mut().admit(self.limits.max_connections) else {
            // Every slot is serving a request: close at once (the client sees EOF).
            drop(io);
            return;
        };
        let me = self.clone();
        tokio::task::spawn_local(async move {
            me.clone().serve_connection(io, peer, in_request, cancel).await;
            me.conns.borrow_mut().live.remove(&id);
        });
    }

    /// Serves on `listeners` until `stop` is set (checked every 50 ms), then
    /// drops every connection at once. Blocks the calling thread, which
    /// keeps its network namespace; the handler runs on it, one request at
    /// a time (a single writer for whatever it changes).
    pub fn run(self: Rc<Self>, listeners: Vec<Bound>, stop: &AtomicBool) -> io::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            for l in listeners {
                let me = self.clone();
                match l {
                    Bound::Tcp(l) => {
                        l.set_nonblocking(true)?;
                        let l = tokio::net::TcpListener::from_std(l)?;
                        tokio::task::spawn_local(async move {
                            loop {
                                match l.accept().await {
                                    Ok((s, _)) => {
                                        let Ok(local) = s.local_addr() else { continue };
                                        let _ = s.set_nodelay(true);
                                        me.admit(s, Peer::Tcp { local });
                                    }
                                    // Out of descriptors and the like: wait, connections end by their deadline.
                                    Err(_) => tokio::time::sleep(STOP_POLL).await,
                                }
                            }
                        });
                    }
                    Bound::Unix(l) => {
                        l.set_nonblocking(true)?;
                        let l = tokio::net::UnixListener::from_std(l)?;
                        tokio::task::spawn_local(async move {
                            loop {
                                match l.accept().await {
                                    Ok((s, _)) => me.admit(s, Peer::Unix),
                                    Err(_) => tokio::time::sleep(STOP_POLL).await,
                                }
                            }
                        });
                    }
                }
            }
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(STOP_POLL).await;
            }
            Ok::<(), io::Error>(())
        })?;
        // Dropping the set drops every connection task: their sockets close now.
        drop(local);
        drop(rt);
        Ok(())
    }
}

/// A running metrics listener; stops (and joins its thread) on drop.
pub struct Listener {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Binds `addr` in the calling thread's network namespace and serves
    /// `render(connection counts)` at `GET /metrics` until dropped.
    pub fn start(addr: SocketAddr, token: Option<Token>, render: impl Fn(&ConnCounts) -> String + Send + 'static) -> Result<Listener, Error> {
        if !addr.ip().is_loopback() && token.is_none() {
            return Err(Error::NeedToken(addr.to_string()));
        }
        let listen = std::net::TcpListener::bind(addr).map_err(|e| Error::Listen { addr: addr.to_string(), why: e.to_string() })?;
        let bound = listen.local_addr().map_err(|e| Error::Listen { addr: addr.to_string(), why: e.to_string() })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_t = stop.clone();
        let policy = Policy { token, check_host: false, json_errors: false, token_hint: "the --metrics-token value".into() };
        let thread = std::thread::Builder::new()
            .name("detpath-metrics".into())
            .spawn(move || {
                let counts = ConnCounts::default();
                let seen = counts.clone();
                let server = Server::with_counts(policy, Limits { max_body: 0, ..Limits::default() }, counts, move |req: Req| {
                    let path = req.path.split('?').next().unwrap_or("");
                    if path != "/metrics" {
                        Reply::new(404, "text/plain", format!("no {path} here: metrics are at /metrics\n"))
                    } else if req.method != "GET" && req.method != "HEAD" {
                        Reply::new(405, "text/plain", "use GET /metrics\n")
                    } else {
                        Reply::new(200, CONTENT_TYPE, render(&seen))
                    }
                });
                if let Err(e) = server.run(vec![Bound::Tcp(listen)], &stop_t) {
                    eprintln!("detpath metrics: the listener on {bound} stopped: {e}");
                }
            })
            .map_err(|e| Error::Listen { addr: addr.to_string(), why: format!("starting its thread: {e}") })?;
        Ok(Listener { addr: bound, stop, thread: Some(thread) })
    }

    /// The address actually bound (port 0 resolved).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where a client sends its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `http://ADDR`.
    Tcp(SocketAddr),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Tcp(a) => write!(f, "http://{a}"),
            Target::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// What one request returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The Content-Type header, lower-cased ("" when absent).
    pub content_type: String,
    /// The body, as text.
    pub body: String,
}

/// One blocking request (HTTP/1.1, connection closed after) to a TCP
/// address or a Unix socket, with a bearer token when given.
pub fn request(target: &Target, method: &str, path: &str, token: Option<&str>, body: Option<&[u8]>) -> io::Result<Response> {
    let mut s: Box<dyn ReadWrite> = match target {
        Target::Tcp(a) => Box::new(std::net::TcpStream::connect_timeout(a, Duration::from_secs(3))?),
        Target::Unix(p) => Box::new(std::os::unix::net::UnixStream::connect(p)?),
    };
    s.timeouts(Duration::from_secs(30))?;
    let host = match target {
        Target::Tcp(a) => a.to_string(),
        Target::Unix(_) => "localhost".to_string(),
    };
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    if let Some(b) = body {
        s.write_all(b)?;
    }
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    parse_response(&resp).map_err(|why| io::Error::new(io::ErrorKind::InvalidData, format!("{method} {path} at {target}: {why}")))
}

/// One blocking `GET path` over TCP: a scrape from a script or a test, of
/// this listener or of the classifier daemon's, without a Prometheus server.
pub fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> io::Result<Response> {
    request(&Target::Tcp(addr), "GET", path, token, None)
}

trait ReadWrite: Read + Write {
    fn timeouts(&self, t: Duration) -> io::Result<()>;
}
impl ReadWrite for std::net::TcpStream {
    fn timeouts(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}
impl ReadWrite for std::os::unix::net::UnixStream {
    fn timeouts(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

/// Parses a whole HTTP/1.1 answer (Content-Length, chunked or to EOF).
fn parse_response(resp: &[u8]) -> Result<Response, String> {
    let split = resp.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no end of headers")?;
    let head = String::from_utf8_lossy(&resp[..split]).to_string();
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("no status code")?;
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string()))
    };
    let content_type = header("content-type").map(|v| v.to_ascii_lowercase()).unwrap_or_default();
    let mut body = resp[split + 4..].to_vec();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.truncate(n);
    }
    Ok(Response { status, content_type, body: String::from_utf8_lossy(&body).into_owned() })
}

fn dechunk(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let Some(eol) = b[i..].windows(2).position(|w| w == b"\r\n") else { break };
        let n = usize::from_str_radix(String::from_utf8_lossy(&b[i..i + eol]).trim(), 16).unwrap_or(0);
        i += eol + 2;
        if n == 0 || i + n > b.len() {
            break;
        }
        out.extend_from_slice(&b[i..i + n]);
        i += n + 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn host_rules() {
        let local: SocketAddr = "10.1.2.3:7460".parse().unwrap();
        assert!(host_allowed("10.1.2.3:7460", local));
        assert!(host_allowed("localhost:7460", local));
        assert!(host_allowed("127.0.0.1:7460", local));
        assert!(host_allowed("[::1]:7460", local));
        assert!(!host_allowed("10.1.2.3:80", local));
        assert!(!host_allowed("evil.example:7460", local), "DNS rebinding: a name other than localhost");
        assert!(!host_allowed("10.1.2.4:7460", local));
        assert!(!host_allowed("10.1.2.3", local), "no port means 80");
        assert!(!host_allowed("[::1", local));
    }

    #[test]
    fn gate_order_and_answers() {
        let t = Token::new("s3cret", "test").unwrap();
        let p = Policy { token: Some(t), check_host: true, json_errors: true, token_hint: "x".into() };
        let l = Limits::default();
        let tcp = Peer::Tcp { local: "127.0.0.1:7460".parse().unwrap() };
        let ok = headers(&[("host", "127.0.0.1:7460"), ("authorization", "Bearer s3cret")]);
        assert_eq!(gate(&p, &l, tcp, &ok), Ok(()));
        let code = |h: &HeaderMap, peer| gate(&p, &l, peer, h).err().map(|r| (r.status, r.code));
        assert_eq!(code(&headers(&[("host", "127.0.0.1:7460"), ("authorization", "Bearer s3cre")]), tcp), Some((401, "unauthorized")));
        assert_eq!(code(&headers(&[("host", "127.0.0.1:7460")]), tcp), Some((401, "unauthorized")));
        assert_eq!(code(&headers(&[("host", "127.0.0.1:7460"), ("authorization", "Basic s3cret")]), tcp), Some((401, "unauthorized")));
        assert_eq!(
            code(&headers(&[("host", "127.0.0.1:7460"), ("authorization", "Bearer s3cret"), ("origin", "http://evil.example")]), tcp),
            Some((403, "cross_origin"))
        );
        assert_eq!(code(&headers(&[("host", "127.0.0.1:7460"), ("authorization", "Bearer s3cret"), ("origin", "null")]), tcp), Some((403, "cross_origin")));
        assert_eq!(code(&headers(&[("host", "127.0.0.1:7460"), ("authorization", "Bearer s3cret"), ("origin", "http://127.0.0.1:7460")]), tcp), None);
        assert_eq!(code(&headers(&[("host", "evil.example:7460"), ("authorization", "Bearer s3cret")]), tcp), Some((403, "bad_host")));
        assert_eq!(
            code(&headers(&[("host", "127.0.0.1:7460"), ("authorization", "Bearer s3cret"), ("content-length", "1099511627776")]), tcp),
            Some((413, "too_large"))
        );
        // The Unix socket needs no token (its file mode guards it) but keeps the other checks.
        assert_eq!(code(&headers(&[("content-length", "1099511627776")]), Peer::Unix), Some((413, "too_large")));
        assert_eq!(code(&headers(&[("host", "localhost")]), Peer::Unix), None);
        assert_eq!(code(&headers(&[("host", "localhost"), ("origin", "https://x")]), Peer::Unix), Some((403, "cross_origin")));
    }

    #[test]
    fn tokens() {
        let dir = std::env::temp_dir().join(format!("detpath-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t");
        std::fs::write(&f, "abc\r\n\n").unwrap();
        let t = Token::from_file(&f).unwrap();
        assert!(t.verify(Some(b"Bearer abc")));
        assert!(!t.verify(Some(b"Bearer abc\n")));
        assert!(!t.verify(Some(b"Bearer ab")));
        assert!(!t.verify(None));
        std::fs::write(&f, "\n").unwrap();
        assert!(Token::from_file(&f).unwrap_err().to_string().contains("empty"));
        std::fs::write(&f, "a b\n").unwrap();
        assert!(matches!(Token::from_file(&f), Err(TokenError::Invalid(_))));
        assert!(Token::from_file(&dir.join("none")).unwrap_err().to_string().contains("--token-file"));
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn connection_slots_evict_the_oldest_idle() {
        let mut c = Conns::default();
        let a = c.admit(2).unwrap();
        let b = c.admit(2).unwrap();
        a.1.set(true); // a is serving a request
        let n = c.admit(2).expect("b is idle: evicted");
        assert!(!c.live.contains_key(&b.0) && c.live.contains_key(&a.0) && c.live.contains_key(&n.0));
        n.1.set(true);
        assert!(c.admit(2).is_none(), "both serving: refused");
        assert_eq!((c.counts.refused(), c.counts.evicted()), (1, 1));
    }
}

//! The northbound API as plain functions: a request (method, path, body) in,
//! a status and a JSON body out. `server.rs` carries it over HTTP; the
//! OpenAPI description is `docs/classify-openapi.yaml`.
//!
//! | method | path                 | does                                            |
//! |--------|----------------------|-------------------------------------------------|
//! | GET    | /v1/health           | interface, XDP mode, rule count                 |
//! | POST   | /v1/intents          | install an intent (201), 4xx with a reason       |
//! | GET    | /v1/intents          | list intents                                    |
//! | GET    | /v1/intents/{id}     | one intent                                      |
//! | DELETE | /v1/intents/{id}     | remove it                                       |
//! | GET    | /v1/stats            | per-rule and per-action statistics              |
//! | GET    | /v1/config           | overload signal, default action, alt nodes      |
//! | PUT    | /v1/config           | change them (fields given are changed)          |

use crate::classifier::{Classifier, Installed, Settings};
use crate::error::RuleError;
use crate::intent::{parse_intent_value, IntentError, Rule, MAX_INTENT_BYTES};
use crate::maps;
use serde_json::{json, Value};
use std::path::PathBuf;

/// An answer that is not a success: status, code, message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status (4xx: the request; 500: the kernel or the host).
    pub status: u16,
    /// Stable machine-readable name (`bad_json`, `duplicate_id`, a
    /// [`RuleError::code`], ...): what clients match on, not the message.
    pub code: &'static str,
    /// What was wrong and what to do, for a person.
    pub message: String,
}

impl ApiError {
    /// 400: the request itself is wrong (`code` says how).
    pub fn bad(code: &'static str, message: String) -> ApiError {
        ApiError { status: 400, code, message }
    }
    /// 409: a well-formed request the current state refuses (a duplicate, a node in use).
    pub(crate) fn conflict(code: &'static str, message: String) -> ApiError {
        ApiError { status: 409, code, message }
    }
    /// 404 `not_found`: no such intent or endpoint.
    pub(crate) fn not_found(message: String) -> ApiError {
        ApiError { status: 404, code: "not_found", message }
    }
    /// 500 `internal`: the daemon or the host failed (the state file could not be written, ...).
    pub(crate) fn internal(message: String) -> ApiError {
        ApiError { status: 500, code: "internal", message }
    }
    /// The JSON body of the answer: `{"error": {"code", "message"}}`.
    pub fn body(&self) -> Value {
        json!({"error": {"code": self.code, "message": self.message}})
    }
}

/// The classifier's refusals as HTTP: a request it cannot honour is 400,
/// a table that says no is 409, the kernel or the host failing is 500.
impl From<RuleError> for ApiError {
    fn from(e: RuleError) -> ApiError {
        let status = match e {
            RuleError::TooManyAltNodes { .. } | RuleError::BadValue(_) | RuleError::NoSuchCpu(_) | RuleError::NoSuchQueue(_) | RuleError::NoSuchAltNode(_) => {
                400
            }
            RuleError::MasksFull(_) | RuleError::Duplicate | RuleError::TableFull(_) => 409,
            RuleError::System(_) => 500,
        };
        ApiError { status, code: e.code(), message: e.to_string() }
    }
}

impl From<IntentError> for ApiError {
    fn from(e: IntentError) -> ApiError {
        let status = if matches!(e, IntentError::TooLarge(_)) { 413 } else { 400 };
        ApiError { status, code: e.code(), message: e.to_string() }
    }
}

/// An installed intent.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The intent's id: its `flow_hash`, or one the service generated (8 hex digits).
    pub id: String,
    /// The document as posted (kept for the state file and the listing).
    pub intent: Value,
    /// The rule parsed from the document.
    pub rule: Rule,
    /// Where the rule sits in the kernel's maps (what removing it needs).
    pub installed: Installed,
}

/// What the state file holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateFile {
    /// Format version ([`STATE_VERSION`]); another version is refused on load.
    pub version: u32,
    /// The interface the daemon classified: a file of another interface is refused.
    pub iface: String,
    /// Overload signal, default action and alternative nodes.
    pub settings: Settings,
    /// The installed intents, in installation order.
    pub intents: Vec<StoredIntent>,
}

/// One intent in the state file, reinstalled under its id at start.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoredIntent {
    /// The intent's id as the API handed it out ([`valid_id`]).
    pub id: String,
    /// The document as posted.
    pub intent: Value,
}

/// The state file format written by this version.
pub(crate) const STATE_VERSION: u32 = 1;

/// Largest state file read: `MAX_RULES` intents of `MAX_INTENT_BYTES` each, pretty-printed.
pub(crate) const MAX_STATE_BYTES: u64 = 2 * (maps::MAX_RULES as u64) * (MAX_INTENT_BYTES as u64);

/// Whether an intent id is one the API hands out (`flow_hash`: 1 to 32 of
/// A-Z, a-z, 0-9, - and _; generated ids are 8 hex digits).
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 32 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Reads and checks a state file (None when there is none yet): its size,
/// format version, interface, the number of intents against `max_rules`,
/// each id (valid, unique) and each intent's size. Every error names the
/// file and says to remove or repair it.
pub(crate) fn load_state(path: &std::path::Path, iface: &str, max_rules: u32) -> crate::Result<Option<StateFile>> {
    let shown = path.display().to_string();
    let bad = |why: String| crate::Error::State {
        path: shown.clone(),
        why: format!("{why}; remove or repair {shown} (removing it starts the daemon with no intents and default settings), or pass another --state"),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::Error::State { path: shown.clone(), why: e.to_string() }),
    };
    if !meta.is_file() {
        return Err(bad("it is not a regular file".into()));
    }
    if meta.len() > MAX_STATE_BYTES {
        return Err(bad(format!("it is {} bytes, more than a state file can hold ({MAX_STATE_BYTES})", meta.len())));
    }
    let bytes = std::fs::read(path).map_err(|e| crate::Error::State { path: shown.clone(), why: e.to_string() })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(bad("it is empty".into()));
    }
    let st: StateFile = serde_json::from_slice(&bytes).map_err(|e| bad(format!("it is not a detpath classify state file: {e}")))?;
    if st.version != STATE_VERSION {
        return Err(bad(format!("format version {} (this detpath reads {STATE_VERSION})", st.version)));
    }
    if st.iface != iface {
        return Err(crate::Error::State { path: shown.clone(), why: format!("it is the state of interface {}, not {iface}; pass another --state", st.iface) });
    }
    if st.intents.len() > max_rules as usize {
        return Err(bad(format!("it holds {} intents, more than --max-rules {max_rules}; raise --max-rules or remove intents from it", st.intents.len())));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, si) in st.intents.iter().enumerate() {
        if !valid_id(&si.id) {
            return Err(bad(format!("intent #{i} has the id {:?}, not 1 to 32 characters of A-Z, a-z, 0-9, - or _", si.id)));
        }
        if !seen.insert(si.id.as_str()) {
            return Err(bad(format!("the id {} is there twice", si.id)));
        }
        let size = serde_json::to_vec(&si.intent).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_INTENT_BYTES {
            return Err(bad(format!("intent {} is {size} bytes, more than {MAX_INTENT_BYTES}", si.id)));
        }
    }
    Ok(Some(st))
}

/// `base` with the fields of `patch` in place of its own (what `PUT
/// /v1/config` and the daemon's command line do): a field settings do not
/// have, or a value of the wrong kind, is refused by name.
pub(crate) fn merge_settings(base: &Settings, patch: &serde_json::Map<String, Value>) -> Result<Settings, ApiError> {
    let mut cur = serde_json::to_value(base).map_err(|e| ApiError::internal(e.to_string()))?;
    let cur_obj = cur.as_object_mut().ok_or_else(|| ApiError::internal("settings are not an object".into()))?;
    for (k, v) in patch {
        if !cur_obj.contains_key(k) {
            let known: Vec<&String> = cur_obj.keys().collect();
            return Err(ApiError::bad("unknown_field", format!("unknown field `{k}` in the config; known fields: {known:?}")));
        }
        cur_obj.insert(k.clone(), v.clone());
    }
    serde_json::from_value(cur).map_err(|e| ApiError::bad("bad_value", e.to_string()))
}

/// The service behind the API: the classifier and its intents.
pub struct Service {
    /// The loaded classifier the intents are installed in.
    pub cls: Classifier,
    /// The interface it classifies (intents naming another are refused).
    pub iface: String,
    /// The installed intents, in installation order.
    pub entries: Vec<Entry>,
    /// Where intents and settings are written on every change (none: not kept).
    pub state_path: Option<PathBuf>,
    next_id: u64,
}

type Reply = Result<(u16, Value), ApiError>;

impl Service {
    /// A service over a loaded (and usually attached) classifier. With a state
    /// file, the intents and settings in it are reinstalled; one that cannot
    /// be, or a file that is not a valid state file for this interface and
    /// `max_rules`, is an error naming the file and the fix (the daemon does
    /// not start half-configured, and the file is left as it was: nothing in
    /// it is lost to a failed start). `settings` are the fields the command
    /// line gave: merged over the stored settings as `PUT /v1/config`
    /// merges, so a field it does not name keeps its stored value.
    pub fn new(cls: Classifier, iface: &str, state_path: Option<PathBuf>, settings: &serde_json::Map<String, Value>, max_rules: u32) -> crate::Result<Service> {
        let mut s = Service { cls, iface: iface.to_string(), entries: Vec::new(), state_path, next_id: 1 };
        let (loaded_settings, stored) = match &s.state_path {
            Some(p) => match load_state(p, iface, max_rules)? {
                Some(st) => (Some(st.settings), st.intents),
                None => (None, Vec::new()),
            },
            None => (None, Vec::new()),
        };
        let shown = s.state_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        // Command-line fields win over stored ones; the rest stay as stored.
        let base = loaded_settings.unwrap_or_default();
        let st = merge_settings(&base, settings)
            .map_err(|e| crate::Error::State { path: shown.clone(), why: format!("the command line's settings with the stored ones: {}", e.message) })?;
        s.cls.apply_settings(&st)?;
        // Every stored intent is installed before the file is written again:
        // one that cannot be leaves the file whole for the operator to repair.
        for si in stored {
            s.install_entry(si.intent.clone(), Some(si.id.clone())).map_err(|e| crate::Error::State {
                path: shown.clone(),
                why: format!("stored intent {} cannot be reinstalled: {e}; remove it from the file (or remove the file) or fix the host", si.id),
            })?;
        }
        s.save().map_err(|e| crate::Error::State { path: s.state_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(), why: e.message })?;
        Ok(s)
    }

    /// Writes the state file atomically and durably (temp file, fsync,
    /// rename, fsync of the directory): after a crash or a power cut it holds
    /// the old state or the new one, never an empty or half file.
    fn save(&self) -> Result<(), ApiError> {
        let Some(p) = &self.state_path else { return Ok(()) };
        let st = StateFile {
            version: STATE_VERSION,
            iface: self.iface.clone(),
            settings: self.cls.settings().clone(),
            intents: self.entries.iter().map(|e| StoredIntent { id: e.id.clone(), intent: e.intent.clone() }).collect(),
        };
        let body = serde_json::to_vec_pretty(&st).map_err(|e| ApiError::internal(e.to_string()))?;
        if body.len() as u64 > MAX_STATE_BYTES {
            // Never write a file the next start refuses (load_state): the
            // change that would is refused and undone by the caller.
            return Err(ApiError::conflict(
                "state_full",
                format!("the state file would be {} bytes, more than {MAX_STATE_BYTES}; delete intents or make them shorter", body.len()),
            ));
        }
        if let Some(dir) = p.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| ApiError::internal(format!("creating {}: {e}", dir.display())))?;
            }
        }
        detpath_sys::fsutil::write_atomic(p, &body).map_err(|e| ApiError::internal(format!("writing the state file {}: {e}", p.display())))
    }

    fn entry_json(&self, e: &Entry) -> Value {
        json!({
            "id": e.id,
            "rule": e.rule,
            "priority": e.rule.effective_priority(),
            "slot": e.installed.slot,
            "intent": e.intent,
        })
    }

    /// Installs an intent and writes the state file (undone when it cannot be
    /// written); `id` overrides the intent's own.
    pub fn add(&mut self, intent: Value, id: Option<String>) -> Reply {
        self.install_entry(intent, id)?;
        if let Err(e) = self.save() {
            // Not persisted: undo, so what is installed is what is stored.
            if let Some(e2) = self.entries.pop() {
                let _ = self.cls.remove(&e2.installed);
            }
            return Err(e);
        }
        let e = self.entries.last().map(|e| self.entry_json(e)).unwrap_or(Value::Null);
        Ok((201, e))
    }

    /// Installs an intent in the kernel and the list, without writing the
    /// state file (`add` writes it; a restart writes it once, after all).
    fn install_entry(&mut self, intent: Value, id: Option<String>) -> Result<(), ApiError> {
        let rule = parse_intent_value(&intent)?;
        if let Some(i) = &rule.interface {
            if *i != self.iface {
                return Err(ApiError::bad("wrong_interface", format!("the intent is for interface {i}; this daemon classifies {}", self.iface)));
            }
        }
        let id = match id.or_else(|| rule.id.clone()) {
            Some(id) => id,
            None => loop {
                let c = format!("{:08X}", self.next_id);
                self.next_id += 1;
                if !self.entries.iter().any(|e| e.id == c) {
                    break c;
                }
            },
        };
        if self.entries.iter().any(|e| e.id == id) {
            return Err(ApiError::conflict("duplicate_id", format!("an intent with id {id} is installed; delete it first or use another flow_hash")));
        }
        let installed = self.cls.install(&rule, Some(&self.iface))?;
        self.entries.push(Entry { id, intent, rule, installed });
        Ok(())
    }

    /// Removes the intent `id` from the kernel and the state file (404 when there is none).
    pub fn remove(&mut self, id: &str) -> Reply {
        let i =
            self.entries.iter().position(|e| e.id == id).ok_or_else(|| ApiError::not_found(format!("no intent with id {id} (GET /v1/intents lists them)")))?;
        // Out of the kernel first: if that fails, nothing changed. Then the
        // file; if that cannot be written, the rule goes back in, so what is
        // installed is what is stored (as `add` undoes).
        self.cls.remove(&self.entries[i].installed)?;
        let e = self.entries.remove(i);
        if let Err(err) = self.save() {
            if let Ok(installed) = self.cls.install(&e.rule, Some(&self.iface)) {
                self.entries.insert(i, Entry { installed, ..e });
            }
            return Err(err);
        }
        Ok((200, json!({"deleted": id})))
    }

    /// `GET /v1/stats`: the per-action totals, the fraction of classified
    /// frames forwarded, and each intent's packets, bytes, forwarded and last
    /// seen (CLOCK_MONOTONIC ns), summed over CPUs; a class intent's entry
    /// also names its `dscp` set (and `topic`): the class's counters.
    pub fn stats(&self) -> Value {
        let slots: Vec<u32> = self.entries.iter().map(|e| e.installed.slot).collect();
        let (totals, rule_stats) = self.cls.counts(&slots);
        let mut t = serde_json::Map::new();
        for (n, c) in maps::TOTAL_NAMES.iter().zip(totals.iter()) {
            t.insert(n.to_string(), json!(c));
        }
        let classified: u64 = totals.iter().take(9).map(|c| c.packets).sum();
        let fwd = totals[maps::total_index("forward").unwrap_or(0)].packets;
        let rules: Vec<Value> = self
            .entries
            .iter()
            .zip(rule_stats)
            .map(|(e, s)| {
                let mut r = json!({"id": e.id, "action": e.rule.action, "packets": s.packets, "bytes": s.bytes, "forwarded": s.forwarded, "last_seen_ns": s.last_seen_ns});
                // A class intent's counters are its class's: say which DSCPs (and topic) they count.
                if let Some(d) = &e.rule.matches.dscp {
                    r["dscp"] = json!(d);
                }
                if let Some(t) = e.rule.matches.class.as_ref().and_then(|c| c.topic.as_ref()) {
                    r["topic"] = json!(t);
                }
                r
            })
            .collect();
        json!({
            "iface": self.iface,
            "clock": "CLOCK_MONOTONIC",
            "totals": t,
            "forwarded_fraction": if classified == 0 { 0.0 } else { fwd as f64 / classified as f64 },
            "rules": rules,
        })
    }

    fn put_config(&mut self, body: &Value) -> Reply {
        let obj = body.as_object().ok_or_else(|| ApiError::bad("bad_json", "the config is a JSON object".into()))?;
        let new = merge_settings(self.cls.settings(), obj)?;
        // Rules naming an alt node must keep it.
        for e in &self.entries {
            if let crate::intent::Action::ForwardWhenOverloaded { alt_node: Some(n) } = e.rule.action {
                if n as usize >= new.alt_nodes.len() {
                    return Err(ApiError::conflict(
                        "alt_node_in_use",
                        format!("intent {} forwards to alternative node {n}; keep at least {} nodes or delete it first", e.id, n + 1),
                    ));
                }
            }
        }
        let old = self.cls.settings().clone();
        self.cls.apply_settings(&new)?;
        if let Err(e) = self.save() {
            let _ = self.cls.apply_settings(&old);
            return Err(e);
        }
        Ok((200, json!(self.cls.settings())))
    }

    /// Handles one request. `body` is the raw request body.
    pub(crate) fn handle(&mut self, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
        match self.route(method, path, body) {
            Ok(r) => r,
            Err(e) => (e.status, e.body()),
        }
    }

    fn route(&mut self, method: &str, path: &str, body: &[u8]) -> Reply {
        let path = path.split('?').next().unwrap_or("").trim_end_matches('/');
        let json_body = |b: &[u8]| -> Result<Value, ApiError> {
            if b.len() > MAX_INTENT_BYTES {
                return Err(IntentError::TooLarge(b.len()).into());
            }
            serde_json::from_slice(b).map_err(|e| ApiError::bad("bad_json", format!("malformed JSON: {e}")))
        };
        match (method, path) {
            ("GET", "/v1/health") => Ok((
                200,
                json!({
                    "iface": self.iface,
                    "attached": self.cls.link().is_some(),
                    "xdp_mode": self.cls.link().map(|l| l.mode().as_str()),
                    "intents": self.entries.len(),
                    "kernel_rules": self.cls.kernel_rule_count(),
                }),
            )),
            ("GET", "/v1/intents") => Ok((200, json!({"intents": self.entries.iter().map(|e| self.entry_json(e)).collect::<Vec<_>>()}))),
            ("POST", "/v1/intents") => {
                let v = json_body(body)?;
                self.add(v, None)
            }
            ("GET", "/v1/stats") => Ok((200, self.stats())),
            ("GET", "/v1/config") => Ok((200, json!(self.cls.settings()))),
            ("PUT", "/v1/config") => {
                let v = json_body(body)?;
                self.put_config(&v)
            }
            (m, p) if p.starts_with("/v1/intents/") => {
                let id = &p["/v1/intents/".len()..];
                match m {
                    "GET" => self
                        .entries
                        .iter()
                        .find(|e| e.id == id)
                        .map(|e| (200, self.entry_json(e)))
                        .ok_or_else(|| ApiError::not_found(format!("no intent with id {id}"))),
                    "DELETE" => self.remove(id),
                    _ => Err(ApiError { status: 405, code: "method_not_allowed", message: format!("{m} {p}: use GET or DELETE") }),
                }
            }
            (m, p @ ("/v1/health" | "/v1/intents" | "/v1/stats" | "/v1/config")) => {
                Err(ApiError { status: 405, code: "method_not_allowed", message: format!("{m} is not allowed on {p}") })
            }
            (_, p) => Err(ApiError::not_found(format!("no endpoint {p}; see docs/classify-openapi.yaml"))),
        }
    }
}

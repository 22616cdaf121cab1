//! A small HTTP/1.1 client for the daemon's API (the CLI's `add|rm|ls|stats`).

use crate::error::{Error, Result};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends one request and returns the status and the JSON body.
pub fn request(addr: SocketAddr, token: Option<&str>, method: &str, path: &str, body: Option<&[u8]>) -> Result<(u16, serde_json::Value)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map_err(|e| Error::io(format!("connecting to the classify daemon at {addr} (is `detpath classify serve` running? --server)"), e))?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    let body = body.unwrap_or(&[]);
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).and_then(|_| s.write_all(body)).map_err(|e| Error::io("sending the request", e))?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).map_err(|e| Error::io("reading the answer", e))?;
    let split = resp.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| Error::Config("the daemon's answer has no HTTP header".into()))?;
    let head = String::from_utf8_lossy(&resp[..split]).to_string();
    let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| Error::Config(format!("bad status line: {head}")))?;
    let mut payload = resp[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        payload = dechunk(&payload);
    }
    let v = if payload.iter().all(|b| b.is_ascii_whitespace()) {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&payload).map_err(|e| Error::Config(format!("the daemon's answer is not JSON: {e}")))?
    };
    Ok((status, v))
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

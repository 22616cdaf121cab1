//! Any bytes as one HTTP request (method, path, headers, body) into the
//! classify daemon's request path, without a socket: hyper's parser, the
//! limits and access gate (Host, Origin, token, Content-Length), the body
//! limit, then the intent API router (POST/GET/DELETE /v1/intents, PUT
//! /v1/config, /v1/stats, /metrics) over a real loaded (not attached) BPF
//! classifier, through an in-memory pipe. The first byte picks the
//! transport: even = the Unix socket (no token), odd = TCP (token
//! "fuzz-token", Host checked). Never a panic or a hang; every answer is an
//! HTTP answer. After each input the intents and settings are reset, so each
//! run sees the same daemon. Needs root (it loads the BPF program).
#![no_main]

use detpath_classify::api::Service;
use detpath_classify::server::{handler, policy};
use detpath_classify::{Classifier, Settings};
use detpath_metrics::http::{Limits, Peer, Server, Token};
use libfuzzer_sys::fuzz_target;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct World {
    rt: tokio::runtime::Runtime,
    svc: Rc<RefCell<Service>>,
}

thread_local! {
    static WORLD: World = {
        let cls = Classifier::load(8).expect("loading the classifier BPF program (run the fuzzer as root)");
        let svc = Service::new(cls, "lo", None, &Default::default(), 8).expect("service");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        World { rt, svc: Rc::new(RefCell::new(svc)) }
    };
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, request)) = data.split_first() else { return };
    WORLD.with(|w| {
        let peer = if pick & 1 == 0 { Peer::Unix } else { Peer::Tcp { local: "127.0.0.1:7460".parse().unwrap() } };
        let limits = Limits { max_body: 2048, header_timeout: Duration::from_secs(2), request_timeout: Duration::from_secs(2), ..Limits::default() };
        let server = Server::new(policy(Some(Token::new("fuzz-token", "fuzz").unwrap())), limits, handler(w.svc.clone(), Default::default()));
        let local = tokio::task::LocalSet::new();
        let answer = local.block_on(&w.rt, async {
            let (mut client, io) = tokio::io::duplex(1 << 20);
            let serve = server.serve_connection(io, peer, Rc::new(Cell::new(false)), Rc::new(tokio::sync::Notify::new()));
            let talk = async move {
                let _ = client.write_all(request).await;
                let _ = client.shutdown().await;
                let mut out = Vec::new();
                let _ = client.read_to_end(&mut out).await;
                out
            };
            tokio::join!(serve, talk).1
        });
        assert!(answer.is_empty() || answer.starts_with(b"HTTP/1."), "not an HTTP answer: {:?}", String::from_utf8_lossy(&answer));
        // Reset: no intents, default settings.
        let mut svc = w.svc.borrow_mut();
        let ids: Vec<String> = svc.entries.iter().map(|e| e.id.clone()).collect();
        for id in ids {
            let _ = svc.remove(&id);
        }
        let _ = svc.cls.apply_settings(&Settings::default());
    });
});

//! A batch whose COMMIT reply is lost: the store reports `io` (its outcome is unknown),
//! the transaction did commit, and the same keyed transaction applied again changes
//! nothing (issue 23, item 3).
//!
//! The store talks to the server through a proxy on loopback that, once armed, passes the
//! client's `COMMIT` on to the server, swallows the server's answer and closes both ends:
//! the nearest thing to a server that restarts between a commit and its reply.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fact_model::{ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{PgFactStore, SessionFactStore, StoreConfig, Transaction};

use super::{fresh_scope, options, server, t};

/// A proxy from a loopback port to the server; `armed` makes it drop the reply to the
/// next `COMMIT` and close the connection.
struct Proxy {
    port: u16,
    armed: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(AtomicBool::new(false));
        let arm = armed.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                relay(client, server, arm.clone());
            }
        });
        Proxy { port, armed }
    }
}

/// Copies both ways between `client` and `server`; see [`Proxy`].
fn relay(client: TcpStream, server: TcpStream, armed: Arc<AtomicBool>) {
    let lose_reply = Arc::new(AtomicBool::new(false));
    let (mut from_client, mut to_server) =
        (client.try_clone().unwrap(), server.try_clone().unwrap());
    let lose = lose_reply.clone();
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = from_client.read(&mut buffer) {
            let Some(chunk) = buffer.get(..n).filter(|c| !c.is_empty()) else {
                break;
            };
            if armed.load(Ordering::SeqCst) && chunk.windows(6).any(|w| w == b"COMMIT") {
                armed.store(false, Ordering::SeqCst);
                lose.store(true, Ordering::SeqCst);
            }
            if to_server.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Both);
    });
    let (mut from_server, mut to_client) = (server, client);
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n) = from_server.read(&mut buffer) {
            let Some(chunk) = buffer.get(..n).filter(|c| !c.is_empty()) else {
                break;
            };
            if lose_reply.load(Ordering::SeqCst) {
                // The commit's answer never reaches the client.
                break;
            }
            if to_client.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
        let _ = from_server.shutdown(Shutdown::Both);
    });
}

/// `host:port` of a `postgres://user@host:port/db` URL.
fn address(url: &str) -> (String, String) {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split_once('@').map_or(rest, |(_, rest)| rest);
    let host_port = rest.split_once('/').map_or(rest, |(hp, _)| hp);
    (host_port.to_owned(), url.replacen(host_port, "{proxy}", 1))
}

fn said(object: &str, secs: i64) -> SessionFact {
    SessionFact::builder("user", "lives_in", object)
        .tag(Tag::Context)
        .source("ep_1", SourceRole::Extractor)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

#[test]
fn a_lost_commit_reply_is_io_and_the_keyed_retry_applies_once() {
    let Some(url) = server() else { return };
    let (upstream, template) = address(&url);
    let proxy = Proxy::start(upstream);
    let via_proxy = template.replace("{proxy}", &format!("127.0.0.1:{}", proxy.port));
    let scope = fresh_scope("lost-commit");
    let clock = Arc::new(ManualClock::new(t(0)));
    let open = |url: &str| {
        PgFactStore::connect_with(
            url,
            &scope,
            StoreConfig::default(),
            options().with_attempts(1),
            clock.clone(),
        )
        .unwrap()
    };
    let store = open(&via_proxy);
    let direct = open(&url);
    let paris = said("Paris", 0);
    store.add(vec![paris.clone()]).unwrap();
    let berlin = said("Berlin", 10);
    let write = Transaction::new()
        .add(vec![berlin.clone()])
        .end(paris.id(), t(10), Some(berlin.id()))
        .with_key("ep_2:reply");

    proxy.armed.store(true, Ordering::SeqCst);
    let error = store.apply(write.clone()).unwrap_err();
    assert_eq!(error.code(), "io", "{error}");
    // It committed: the server holds Berlin, Paris ended by it.
    let valid: Vec<String> = direct
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect();
    assert_eq!(valid, ["Berlin"]);
    let before = direct.export_snapshot().unwrap();

    // What a caller does with `io`: apply the same keyed transaction again.
    let retry = store.apply(write).unwrap();
    assert!(retry.replayed, "{retry:?}");
    assert_eq!(
        direct.export_snapshot().unwrap(),
        before,
        "nothing applied twice"
    );
    assert_eq!(store.history("user").unwrap().len(), 2);
}

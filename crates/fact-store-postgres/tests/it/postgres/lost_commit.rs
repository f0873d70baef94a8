//! A batch whose COMMIT reply is lost: the store reports `io` (its outcome is unknown),
//! the transaction did commit, and the same keyed transaction applied again changes
//! nothing (issue 23, item 3).
//!
//! The store talks to the server through a proxy on loopback (`proxy.rs`) that, once
//! armed, passes the client's `COMMIT` on to the server, swallows the server's answer and
//! closes both ends: the nearest thing to a server that restarts between a commit and its
//! reply.

use std::sync::Arc;

use fact_model::{ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{SessionFactStore, StoreConfig, Transaction};
use fact_store_postgres::PgFactStore;

use super::proxy::{Proxy, address};
use super::{fresh_scope, options, server, t};

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
    let proxy = Proxy::start(address(&url).0);
    let via_proxy = proxy.url(&url);
    let scope = fresh_scope("lost-commit");
    let clock = Arc::new(ManualClock::new(t(0)));
    let open = |url: &str| {
        PgFactStore::open_with(
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

    proxy.lose_next_commit_reply();
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

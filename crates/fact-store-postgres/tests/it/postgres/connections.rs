//! Connections (issue 23, item 10): the stores of many scopes opened from one
//! [`PgDatabase`] share its pool and its schema check, and no operation waits on a lock
//! another one holds while it talks to the server.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use fact_model::{FactId, ManualClock};
use fact_store::{SessionFactStore, StoreConfig, TermQuery};
use fact_store_postgres::{PgDatabase, PgFactStore, PgOptions};

use super::proxy::{Proxy, address};
use super::{fact, fresh_scope, options, server, t};
use crate::durable::{MODEL, nearest};

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(t(0)))
}

/// `url` with a PostgreSQL `application_name` of its own, so the test counts its
/// connections alone.
fn named(url: &str, application: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name={application}")
}

/// An `application_name` no other test (of this run or another) uses.
fn application(test: &str) -> String {
    fresh_scope(test)
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        .chars()
        .take(60)
        .collect()
}

/// How many connections to the test database the server holds for `application`.
fn connections(url: &str, application: &str) -> i64 {
    let mut raw = postgres::Client::connect(url, postgres::NoTls).unwrap();
    raw.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND application_name = $1",
        &[&application],
    )
    .unwrap()
    .get(0)
}

/// The objects of the facts a search for `text` finds, sorted.
fn found(store: &dyn SessionFactStore, text: &str) -> Vec<String> {
    let mut objects: Vec<String> = crate::search(store, text, TermQuery::default().with_limit(10))
        .into_iter()
        .map(|(line, _)| line.rsplit(' ').next().unwrap_or_default().to_owned())
        .collect();
    objects.sort();
    objects
}

/// The objects of the valid facts, sorted.
fn valid(store: &dyn SessionFactStore) -> Vec<String> {
    let mut objects: Vec<String> = store
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect();
    objects.sort();
    objects
}

#[test]
fn a_hundred_scopes_of_one_database_use_at_most_its_pool() {
    let Some(url) = server() else { return };
    let application = application("pool");
    let database =
        PgDatabase::connect_with(&named(&url, &application), PgOptions::default()).unwrap();
    let clock = clock();
    let stores: Vec<PgFactStore> = (0..100)
        .map(|n| {
            database
                .open(
                    &fresh_scope(&format!("pool-{n}")),
                    StoreConfig::default(),
                    clock.clone(),
                )
                .unwrap()
        })
        .collect();
    // Every store writes and searches, eight threads at once.
    std::thread::scope(|scope| {
        for chunk in stores.chunks(13) {
            scope.spawn(move || {
                for store in chunk {
                    store
                        .add(vec![fact("parser", "requires", "lexer", 1, 0)])
                        .unwrap();
                    assert_eq!(found(store, "parser"), ["lexer"]);
                }
            });
        }
    });
    let open = connections(&url, &application);
    assert!(
        (1..=4).contains(&open),
        "{open} server connections for 100 stores with a pool of 4"
    );
}

#[test]
fn the_schema_is_checked_once_per_database_handle() {
    let Some(url) = server() else { return };
    let schema = format!("factmem_once_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let database = PgDatabase::connect_with(&url, options.clone()).unwrap();
    database
        .open(&fresh_scope("once"), StoreConfig::default(), clock())
        .unwrap();
    // A newer build migrates the database meanwhile.
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.batch_execute(&format!(
        "UPDATE {schema}.schema_version SET version = version + 1"
    ))
    .unwrap();
    // The handle checked the schema once; its next stores do not ask again.
    let later = database
        .open(&fresh_scope("once"), StoreConfig::default(), clock())
        .unwrap();
    later
        .add(vec![fact("parser", "requires", "lexer", 1, 0)])
        .unwrap();
    // A new handle checks it, and refuses the newer schema.
    let error = PgDatabase::connect_with(&url, options).unwrap_err();
    assert_eq!(error.code(), "newer_schema", "{error}");
    drop((later, database));
    raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

/// An operation on a store and what it answers (the objects it found, or holds after it).
type Operation = (fn(&PgFactStore) -> Vec<String>, &'static [&'static str]);

/// One case of [`nothing_waits_for_an_operation_stalled_on_the_network`].
struct Stall {
    name: &'static str,
    /// Runs first, on the store through the proxy and on a store of the same scope
    /// connected directly (another process).
    setup: fn(&PgFactStore, &PgFactStore),
    /// SQL the stalled operation prepares on its connection: the proxy holds that
    /// message back, so the operation waits on the network until released.
    marker: &'static str,
    /// The operation stalled, and what it answers once released.
    stalled: Operation,
    /// The operation on another thread, on the same store, that must not wait for the
    /// stalled one; what it answers.
    other: Operation,
}

fn add_a(store: &PgFactStore) {
    store
        .add(vec![fact("parser", "requires", "lexer", 1, 0)])
        .unwrap();
}

fn add_b(store: &PgFactStore) {
    store
        .add(vec![fact("parser", "blocked_by", "docs", 2, 1)])
        .unwrap();
}

fn search_parser(store: &PgFactStore) -> Vec<String> {
    found(store, "parser")
}

/// `a` and `b` with embeddings along two axes, for a search nearest the first.
fn embedded(store: &PgFactStore, _: &PgFactStore) {
    add_a(store);
    add_b(store);
    let a = FactId::for_triple("parser", "requires", "lexer");
    let b = FactId::for_triple("parser", "blocked_by", "docs");
    store
        .vectors()
        .unwrap()
        .put_embeddings(MODEL, vec![(a, vec![1.0, 0.0]), (b, vec![0.0, 1.0])])
        .unwrap();
}

fn nearest_first_axis(store: &PgFactStore) -> Vec<String> {
    nearest(store, &[1.0, 0.2])
}

#[test]
fn nothing_waits_for_an_operation_stalled_on_the_network() {
    let Some(url) = server() else { return };
    let cases = [
        Stall {
            name: "a search while another fetches the rows changed since the cache's generation",
            setup: |store, direct| {
                add_a(store);
                assert_eq!(found(store, "parser"), ["lexer"]);
                add_b(direct);
            },
            marker: "changed_generation > $2",
            stalled: (search_parser, &["docs", "lexer"]),
            other: (search_parser, &["docs", "lexer"]),
        },
        Stall {
            name: "a search while another loads the cache whole",
            setup: |store, direct| {
                add_a(store);
                add_b(direct);
            },
            marker: "AND valid_to IS NULL ORDER BY seq",
            stalled: (search_parser, &["docs", "lexer"]),
            other: (search_parser, &["docs", "lexer"]),
        },
        Stall {
            name: "a write while another waits to lock its scope",
            setup: |_, _| {},
            marker: "vocabulary FROM scopes WHERE id = $1 FOR UPDATE",
            stalled: (
                |store| {
                    add_a(store);
                    valid(store)
                },
                &["docs", "lexer"],
            ),
            other: (
                |store| {
                    add_b(store);
                    valid(store)
                },
                &["docs"],
            ),
        },
        Stall {
            name: "a vector search while another loads the model's embeddings",
            setup: embedded,
            marker: "seq > $3 ORDER BY seq",
            stalled: (nearest_first_axis, &["lexer", "docs"]),
            other: (nearest_first_axis, &["lexer", "docs"]),
        },
    ];
    for case in cases {
        check_stall(&url, &case);
    }
}

/// Stalls `case.stalled` on the network, runs `case.other` on another thread meanwhile,
/// and checks that it finished before the stall was released.
fn check_stall(url: &str, case: &Stall) {
    let proxy = Proxy::start(address(url).0);
    let scope = fresh_scope("stall");
    let clock = clock();
    let open = |url: &str| {
        PgFactStore::open_with(
            url,
            &scope,
            StoreConfig::default(),
            options(),
            clock.clone(),
        )
        .unwrap()
    };
    let (store, direct) = (open(&proxy.url(url)), open(url));
    (case.setup)(&store, &direct);
    proxy.stall_on(case.marker);
    let (done, finished) = mpsc::channel();
    let (stalled, other) = std::thread::scope(|scope| {
        let stalled = scope.spawn(|| (case.stalled.0)(&store));
        let reached = proxy.wait_stalled(Duration::from_secs(10));
        let other = scope.spawn(|| {
            let answer = (case.other.0)(&store);
            let _ = done.send(());
            answer
        });
        let in_time = reached && finished.recv_timeout(Duration::from_secs(10)).is_ok();
        proxy.release();
        let (stalled, other) = (stalled.join().unwrap(), other.join().unwrap());
        assert!(
            reached,
            "{}: the first operation never sent the marker",
            case.name
        );
        assert!(
            in_time,
            "{}: the second operation waited for the stalled one",
            case.name
        );
        (stalled, other)
    });
    assert_eq!(stalled, case.stalled.1, "{}: the stalled answer", case.name);
    assert_eq!(other, case.other.1, "{}: the other answer", case.name);
}

//! Connections on PostgreSQL (issue 23, item 10): the runtime's per-spec stores, and a
//! memory opened from the same handle, share one pool, so a hundred specs use at most the
//! pool's four connections (each spec's store used to open a pool of its own).
//!
//! The server counts the connections: each test names its own `application_name` in the
//! URL and asks `pg_stat_activity` how many connections carry it.

use std::sync::Arc;

use dispatch_runtime::NewMemory;
use dispatch_runtime::ReadOptions;
use dispatch_runtime::durable::{self, Database};
use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{SessionFactStore, TermQuery, TermWeighting};

use crate::concurrency::pg_server;

/// A name no other test run uses, for scopes and the `application_name`.
fn unique(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("factmem_{test}_{}_{nanos}", std::process::id())
}

/// `url` with the PostgreSQL `application_name` `application`.
fn named(url: &str, application: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name={application}")
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

/// Every term counts once.
#[derive(Debug)]
struct Overlap;

impl TermWeighting for Overlap {
    fn term_weight(&self, _: usize, _: usize, _: usize) -> f64 {
        1.0
    }
    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

/// Writes a fact to `store` and finds it again.
fn use_store(store: &dyn SessionFactStore) {
    let fact = SessionFact::builder("parser", "requires", "lexer")
        .tag(Tag::Decision)
        .source("1", SourceRole::Implementer)
        .valid_from(Timestamp::from_unix_secs(1_800_000_000).unwrap())
        .build()
        .unwrap();
    store.add(vec![fact]).unwrap();
    let found = store
        .search(&TermQuery::new("parser", 10), &Overlap)
        .unwrap();
    assert_eq!(found.len(), 1);
}

/// Uses every store of `stores`, eight threads at once.
fn use_all(stores: &[Arc<dyn SessionFactStore>]) {
    std::thread::scope(|scope| {
        for chunk in stores.chunks(stores.len().div_ceil(8)) {
            scope.spawn(move || {
                for store in chunk {
                    use_store(store.as_ref());
                }
            });
        }
    });
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(ManualClock::new(
        Timestamp::from_unix_secs(1_800_000_000).unwrap(),
    ))
}

#[test]
fn a_hundred_specs_on_postgres_use_at_most_one_pool() {
    let Some(url) = pg_server() else { return };
    let application = unique("specs");
    let database: Database = named(&url, &application).parse().unwrap();
    let factory = durable::stores(&database, durable::retained(None, None));
    let stores: Vec<Arc<dyn SessionFactStore>> = (0..100)
        .map(|n| factory(&format!("{application}-{n}"), clock()).unwrap())
        .collect();
    use_all(&stores);
    let open = connections(&url, &application);
    assert!(
        (1..=4).contains(&open),
        "{open} server connections for 100 specs (a pool holds at most 4)"
    );
}

#[test]
fn a_memory_and_the_specs_of_one_handle_share_its_pool() {
    let Some(url) = pg_server() else { return };
    let application = unique("handle");
    let database: Database = named(&url, &application).parse().unwrap();
    let handle = database.handle().unwrap();
    let config = durable::retained(None, None);
    let memory = handle
        .open_memory(&format!("user:{application}"), config, clock())
        .unwrap();
    let factory = handle.stores(config);
    let stores: Vec<Arc<dyn SessionFactStore>> = (0..20)
        .map(|n| factory(&format!("{application}-{n}"), clock()).unwrap())
        .collect();
    use_all(&stores);
    memory
        .add(
            NewMemory::new("user", "prefers_test_framework", "pytest")
                .with_category(Tag::Preference)
                .with_source("test"),
        )
        .unwrap();
    assert_eq!(
        memory
            .search("pytest", 10, &ReadOptions::default())
            .unwrap()
            .len(),
        1
    );
    let open = connections(&url, &application);
    assert!(
        (1..=4).contains(&open),
        "{open} server connections for a memory and 20 specs (a pool holds at most 4)"
    );
}

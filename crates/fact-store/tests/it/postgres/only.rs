//! What only the shared store has: reconnecting, scopes sharing one database, schemas
//! newer than the build, the temporal invariants as database constraints, episodes, long
//! texts, and several stores writing one scope at once.

use std::sync::Arc;

use fact_model::{FactId, ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{
    Episode, EpisodeStore, PgFactStore, PgOptions, SessionFactStore, StoreConfig, StoreError,
    TermQuery,
};

use super::{fact, fresh_scope, options, server, t};
use crate::durable;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(t(0)))
}

fn open(url: &str, scope: &str, clock: &Arc<ManualClock>) -> PgFactStore {
    PgFactStore::connect_with(url, scope, StoreConfig::default(), options(), clock.clone()).unwrap()
}

fn search(store: &dyn SessionFactStore, text: &str) -> Vec<(String, f64)> {
    let query = TermQuery::default().with_limit(10);
    crate::search(store, text, query)
}

#[test]
fn a_reconnected_store_holds_everything_and_carries_on() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("reconnect");
    let clock = clock();
    let before = {
        let store = open(&url, &scope, &clock);
        store
            .add(vec![
                fact("task:1", "requires", "parser", 1, 0),
                fact("task:1", "requires", "docs", 1, 0),
            ])
            .unwrap();
        store
            .add(vec![fact("task:1", "completed_with", "blocked", 1, 6)])
            .unwrap();
        store
            .add(vec![fact("task:1", "completed_with", "completed", 1, 9)])
            .unwrap();
        (store.export_snapshot(), search(&store, "parser docs"))
    };
    let store = open(&url, &scope, &clock);
    assert_eq!(store.export_snapshot(), before.0);
    assert_eq!(search(&store, "parser docs"), before.1);
    let report = store
        .add(vec![fact("task:1", "requires", "nothing", 1, 10)])
        .unwrap();
    assert_eq!(report.invalidated.len(), 2);
    let batches: Vec<u64> = store
        .export_snapshot()
        .records
        .iter()
        .map(|r| r.batch)
        .collect();
    assert_eq!(batches, [1, 1, 2, 3, 4]);
}

#[test]
fn scopes_of_one_database_see_nothing_of_each_other() {
    let Some(url) = server() else { return };
    let clock = clock();
    let spec = open(&url, &fresh_scope("spec"), &clock);
    let alice = open(&url, &fresh_scope("alice"), &clock);
    spec.add(vec![
        fact("task:1", "summary", "parser work", 1, 0),
        fact("task:1", "requires", "lexer", 1, 0),
    ])
    .unwrap();
    alice
        .add(vec![fact("task:1", "summary", "parser preference", 1, 0)])
        .unwrap();
    let report = alice
        .add(vec![fact("task:1", "requires", "coffee", 1, 5)])
        .unwrap();
    assert!(report.invalidated.is_empty());
    assert_eq!((spec.valid_count(), alice.valid_count()), (2, 2));
    assert_eq!(
        search(&spec, "parser"),
        [("task:1 summary parser work".to_owned(), 1.0)]
    );
    let lexer = FactId::for_triple("task:1", "requires", "lexer");
    assert!(alice.get(lexer).is_none());
    assert!(matches!(
        alice.delete(lexer),
        Err(StoreError::NotFound { .. })
    ));
    spec.put_episode(&Episode::new("Parser", "The parser is done.", "...", t(0)))
        .unwrap();
    assert!(alice.episodes().unwrap().is_empty());
    assert_eq!(spec.search_episodes("parser", 5).unwrap().len(), 1);
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let Some(url) = server() else { return };
    // A schema of its own, so the shared one stays as it is.
    let schema = format!("factmem_newer_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let scope = fresh_scope("newer");
    PgFactStore::connect_with(
        &url,
        &scope,
        StoreConfig::default(),
        options.clone(),
        clock(),
    )
    .unwrap()
    .add(vec![fact("a", "r", "o", 1, 0)])
    .unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.execute(
        &format!("UPDATE {schema}.schema_version SET version = 99"),
        &[],
    )
    .unwrap();
    let err = PgFactStore::connect_with(&url, &scope, StoreConfig::default(), options, clock())
        .unwrap_err();
    assert_eq!(err.code(), "newer_schema", "{err}");
    assert!(err.to_string().contains("99"), "{err}");
    let facts: i64 = raw
        .query_one(&format!("SELECT count(*) FROM {schema}.facts"), &[])
        .unwrap()
        .get(0);
    assert_eq!(facts, 1);
    raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

#[test]
fn openers_racing_on_an_empty_database_migrate_it_once() {
    let Some(url) = server() else { return };
    let schema = format!("factmem_race_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let stores: Vec<PgFactStore> = std::thread::scope(|threads| {
        let opening: Vec<_> = (0..8)
            .map(|n| {
                let (url, options) = (&url, options.clone());
                threads.spawn(move || {
                    PgFactStore::connect_with(
                        url,
                        &format!("race:{n}"),
                        StoreConfig::default(),
                        options,
                        clock(),
                    )
                })
            })
            .collect();
        opening
            .into_iter()
            .map(|handle| handle.join().unwrap().unwrap())
            .collect()
    });
    for store in &stores {
        store.add(vec![fact("a", "r", "o", 1, 0)]).unwrap();
    }
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let version: i32 = raw
        .query_one(&format!("SELECT version FROM {schema}.schema_version"), &[])
        .unwrap()
        .get(0);
    assert_eq!(u32::try_from(version).unwrap(), PgFactStore::SCHEMA_VERSION);
    let rows: i64 = raw
        .query_one(
            &format!("SELECT count(*) FROM {schema}.schema_version"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(rows, 1);
    drop(stores);
    raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

#[test]
fn the_database_itself_refuses_a_second_valid_fact_of_a_key_or_triple() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("constraints");
    let store = open(&url, &scope, &clock());
    store
        .add(vec![
            fact("task:1", "requires", "parser", 1, 0),
            fact("task:1", "requires", "docs", 1, 0),
        ])
        .unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.batch_execute("SET search_path = factmem").unwrap();
    let scope_id: i64 = raw
        .query_one("SELECT id FROM scopes WHERE name = $1", &[&scope])
        .unwrap()
        .get(0);
    // A writer that skipped the rules: another valid fact of the key from another batch.
    let insert = "INSERT INTO facts (scope, id, subject, relation, object, tags, valid_from, \
        source_task_id, source_role, confidence, batch) \
        VALUES ($1, $2, 'task:1', 'requires', $3, 'decision', 0, '1', 'implementer', 1, $4)";
    let err = raw
        .execute(insert, &[&scope_id, &7_i64, &"tests", &2_i64])
        .unwrap_err();
    assert_eq!(
        err.code(),
        Some(&postgres::error::SqlState::EXCLUSION_VIOLATION),
        "{err}"
    );
    // The same triple valid twice (the same batch, so only the unique index objects).
    let parser = FactId::for_triple("task:1", "requires", "parser");
    let id = i64::from_be_bytes(*parser.as_bytes());
    let err = raw
        .execute(insert, &[&scope_id, &id, &"parser", &1_i64])
        .unwrap_err();
    assert_eq!(
        err.code(),
        Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
        "{err}"
    );
    assert_eq!(store.valid_count(), 2);
    assert_eq!(store.valid_facts().len(), 2);
}

#[test]
fn episodes_are_stored_searched_and_marked() {
    let Some(url) = server() else { return };
    let store = open(&url, &fresh_scope("episodes"), &clock());
    durable::episodes_are_stored_searched_and_marked(&store);
}

#[test]
fn texts_at_their_longest_are_stored_and_found() {
    let Some(url) = server() else { return };
    let store = open(&url, &fresh_scope("long"), &clock());
    // Every field at its limit, in characters of several bytes: the store indexes texts
    // by hash, so no index entry grows with them.
    let subject = format!("a{}", "\u{301}".repeat(199));
    let word = "x".repeat(150);
    let long = SessionFact::builder(
        subject.as_str(),
        "summary",
        format!("{word} {}", "😀".repeat(49)),
    )
    .tag(Tag::Decision)
    .source("1", SourceRole::Implementer)
    .valid_from(t(0))
    .statement("😀".repeat(500))
    .build()
    .unwrap();
    store.add(vec![long.clone()]).unwrap();
    assert_eq!(store.history(&subject), std::slice::from_ref(&long));
    assert_eq!(search(&store, &word).len(), 1);
    let report = store
        .add(vec![fact(&subject, "summary", "short", 1, 5)])
        .unwrap();
    assert_eq!(report.invalidated, [long.id()]);
}

#[test]
fn eight_threads_on_two_stores_writing_one_scope_lose_nothing() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("shared");
    let clock = clock();
    let stores: Vec<PgFactStore> = (0..2)
        .map(|_| {
            PgFactStore::connect_with(&url, &scope, durable::roomy(), options(), clock.clone())
                .unwrap()
        })
        .collect();
    durable::writers_on_several_stores_lose_nothing(&stores, 8, 25);
}

#[test]
fn a_search_cache_follows_writes_of_other_stores() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("cache");
    let clock = clock();
    let reader = open(&url, &scope, &clock);
    let writer = open(&url, &scope, &clock);
    durable::a_search_cache_follows_writes_of_another_store(&reader, &writer, clock);
}

#[test]
fn opening_with_another_analyzer_reindexes_the_scope() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("analyzer");
    let clock = clock();
    let stemmed = open(&url, &scope, &clock);
    stemmed
        .add(vec![fact("task:1", "summary", "parsing parsers", 1, 0)])
        .unwrap();
    assert_eq!(search(&stemmed, "parse").len(), 1);
    drop(stemmed);
    let plain_config = StoreConfig::default()
        .with_analyzer(fact_store::AnalyzerConfig::default().with_stemming(false));
    let plain =
        PgFactStore::connect_with(&url, &scope, plain_config, options(), clock.clone()).unwrap();
    assert!(search(&plain, "parse").is_empty());
    assert_eq!(search(&plain, "parsers").len(), 1);
}

#[test]
fn an_unreachable_server_or_a_bad_url_is_a_typed_error() {
    // No server needed: nothing listens on port 1.
    let options = PgOptions::default().with_connect_timeout(std::time::Duration::from_millis(500));
    let err = PgFactStore::connect_with(
        "postgres://alice:s3cret@127.0.0.1:1/x",
        "s",
        StoreConfig::default(),
        options,
        clock(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
    assert!(!err.to_string().contains("s3cret"), "{err}");
    // The driver's own words, not a pool's timeout.
    assert!(
        err.to_string().contains("connection refused")
            || err.to_string().contains("Connection refused"),
        "{err}"
    );
    let err =
        PgFactStore::connect("postgres://[::1", "s", StoreConfig::default(), clock()).unwrap_err();
    assert_eq!(err.code(), "backend", "{err}");
    let bad_schema = PgOptions::default().with_schema("x; DROP TABLE facts");
    let err = PgFactStore::connect_with(
        "postgres://h/db",
        "s",
        StoreConfig::default(),
        bad_schema,
        clock(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("schema name"), "{err}");
}

/// With TLS built in, `sslmode=require` asks the server for TLS; the test server has none,
/// so the connection is refused with a typed error (and `prefer`, the default, which every
/// other test uses, falls back to plain text).
#[cfg(feature = "postgres-tls")]
#[test]
fn sslmode_require_asks_for_tls() {
    let Some(url) = server() else { return };
    let separator = if url.contains('?') { '&' } else { '?' };
    let options = options().with_connect_timeout(std::time::Duration::from_secs(2));
    let err = PgFactStore::connect_with(
        &format!("{url}{separator}sslmode=require"),
        &fresh_scope("tls"),
        StoreConfig::default(),
        options,
        clock(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
}

/// The client closes its connections with a blocking call; a store dropped on a thread
/// that runs async code must not panic for it (`facts mcp` drops its stores there).
#[test]
fn a_store_dropped_inside_an_async_runtime_closes_quietly() {
    let Some(url) = server() else { return };
    let store = open(&url, &fresh_scope("async-drop"), &clock());
    store.add(vec![fact("a", "r", "o", 1, 0)]).unwrap();
    assert_eq!(store.valid_count(), 1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async move { drop(store) });
}

#[test]
fn a_missing_database_is_an_io_error_naming_it() {
    let Some(url) = server() else { return };
    let Some((server_part, _database)) = url.rsplit_once('/') else {
        panic!("FACTMEM_PG_URL has no database: {url}");
    };
    let err = PgFactStore::connect(
        &format!("{server_part}/factmem_no_such_database"),
        &fresh_scope("missing"),
        StoreConfig::default(),
        clock(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
    assert!(
        err.to_string().contains("factmem_no_such_database"),
        "{err}"
    );
}

#[test]
fn embeddings_survive_reconnecting() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("vectors-reconnect");
    let clock = clock();
    durable::embeddings_survive_reopening(Box::new(open(&url, &scope, &clock)), || {
        Box::new(open(&url, &scope, &clock))
    });
}

#[test]
fn nearest_follows_embeddings_of_other_stores() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("vectors-follow");
    let clock = clock();
    let reader = open(&url, &scope, &clock);
    let writer = open(&url, &scope, &clock);
    durable::nearest_follows_embeddings_of_another_store(&reader, &writer);
}

#[test]
fn scopes_of_one_database_do_not_see_each_other_s_vectors() {
    let Some(url) = server() else { return };
    let clock = clock();
    durable::scopes_do_not_see_each_other_s_vectors(
        &open(&url, &fresh_scope("vectors-a"), &clock),
        &open(&url, &fresh_scope("vectors-b"), &clock),
    );
}

#[test]
fn a_version_1_schema_migrates_to_embeddings() {
    let Some(url) = server() else { return };
    // A schema of its own, brought back to version 1 as that build left it.
    let schema = format!("factmem_v1_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let scope = fresh_scope("v1");
    let open = || {
        PgFactStore::connect_with(
            &url,
            &scope,
            StoreConfig::default(),
            options.clone(),
            clock(),
        )
        .unwrap()
    };
    open()
        .add(vec![fact("src/a.rs", "modified_by", "task:1", 1, 0)])
        .unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.batch_execute(&format!(
        "DROP TABLE {schema}.embeddings; UPDATE {schema}.schema_version SET version = 1;"
    ))
    .unwrap();
    let store = open();
    let version: i32 = raw
        .query_one(&format!("SELECT version FROM {schema}.schema_version"), &[])
        .unwrap()
        .get(0);
    assert_eq!(u32::try_from(version).unwrap(), PgFactStore::SCHEMA_VERSION);
    assert_eq!(PgFactStore::SCHEMA_VERSION, 2);
    assert_eq!(store.valid_count(), 1);
    let id = FactId::for_triple("src/a.rs", "modified_by", "task:1");
    let vectors = store.vectors().unwrap();
    assert_eq!(vectors.unembedded(durable::MODEL, 10).len(), 1);
    assert_eq!(
        vectors
            .put_embeddings(durable::MODEL, vec![(id, vec![0.5, 0.5])])
            .unwrap(),
        1
    );
    assert_eq!(durable::nearest(&store, &[1.0, 1.0]), ["task:1"]);
    drop(store);
    raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

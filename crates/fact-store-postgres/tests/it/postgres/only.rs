//! What only the shared store has: reconnecting, scopes sharing one database, schemas
//! newer than the build, the temporal invariants as database constraints, episodes, long
//! texts, and several stores writing one scope at once.

use std::sync::Arc;

use fact_model::{
    FactId, ManualClock, Message, MessageRole, ProfileField, SessionFact, SourceRole, Tag,
};
use fact_store::{
    AliasChange, Episode, EpisodeStore, InMemoryEpisodeStore, LongTermStore, MemoryWrite,
    MessageHit, MessageQuery, ProfileEntry, SessionFactStore, StoreConfig, StoreError, TermQuery,
    TermWeighting,
};
use fact_store_postgres::{PgFactStore, PgOptions};

use super::{fact, fresh_scope, options, server, t};
use crate::durable;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(t(0)))
}

fn open(url: &str, scope: &str, clock: &Arc<ManualClock>) -> PgFactStore {
    PgFactStore::open_with(url, scope, StoreConfig::default(), options(), clock.clone()).unwrap()
}

/// BM25 with the usual constants (as the conformance suite's).
#[derive(Debug)]
struct Bm25;

impl TermWeighting for Bm25 {
    fn term_weight(&self, df: usize, docs: usize, _: usize) -> f64 {
        let (df, docs) = (df as f64, docs as f64);
        (1.0 + (docs - df + 0.5) / (df + 0.5)).ln().max(0.0)
    }
    fn tf_weight(&self, tf: u32, len: u32, avg: f64) -> f64 {
        let tf = f64::from(tf);
        let relative = if avg > 0.0 { f64::from(len) / avg } else { 1.0 };
        tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * relative))
    }
}

/// What a message search finds, comparable across stores.
fn found(store: &dyn EpisodeStore, query: &MessageQuery<'_>) -> Vec<(String, usize, Message, f64)> {
    store
        .search_messages(query, &Bm25)
        .unwrap()
        .into_iter()
        .map(|hit: MessageHit| (hit.episode_id, hit.turn, hit.message, hit.score))
        .collect()
}

fn assert_same_hits(got: &[(String, usize, Message, f64)], want: &[(String, usize, Message, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (a, b) in got.iter().zip(want) {
        assert_eq!((&a.0, a.1, &a.2), (&b.0, b.1, &b.2), "{got:?} vs {want:?}");
        assert!((a.3 - b.3).abs() < 1e-9, "{got:?} vs {want:?}");
    }
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
        (
            store.export_snapshot().unwrap(),
            search(&store, "parser docs"),
        )
    };
    let store = open(&url, &scope, &clock);
    assert_eq!(store.export_snapshot().unwrap(), before.0);
    assert_eq!(search(&store, "parser docs"), before.1);
    let report = store
        .add(vec![fact("task:1", "requires", "nothing", 1, 10)])
        .unwrap();
    assert_eq!(report.invalidated.len(), 2);
    let batches: Vec<u64> = store
        .export_snapshot()
        .unwrap()
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
    assert_eq!(
        (spec.valid_count().unwrap(), alice.valid_count().unwrap()),
        (2, 2)
    );
    assert_eq!(
        search(&spec, "parser"),
        [("task:1 summary parser work".to_owned(), 1.0)]
    );
    let lexer = FactId::for_triple("task:1", "requires", "lexer");
    assert!(alice.get(lexer).unwrap().is_none());
    assert!(matches!(
        alice.delete(lexer),
        Err(StoreError::NotFound { .. })
    ));
    let said = vec![Message::new(MessageRole::User, "Is the parser done?").at(t(0))];
    spec.put_episode(&Episode::new("Parser", "The parser is done.", said, t(0)))
        .unwrap();
    assert!(alice.episodes().unwrap().is_empty());
    assert_eq!(spec.search_episodes("parser", 5).unwrap().len(), 1);
    let query = MessageQuery::new("parser", 5);
    assert_eq!(spec.search_messages(&query, &Bm25).unwrap().len(), 1);
    assert!(alice.search_messages(&query, &Bm25).unwrap().is_empty());
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let Some(url) = server() else { return };
    // A schema of its own, so the shared one stays as it is.
    let schema = format!("factmem_newer_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let scope = fresh_scope("newer");
    PgFactStore::open_with(
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
    let err =
        PgFactStore::open_with(&url, &scope, StoreConfig::default(), options, clock()).unwrap_err();
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
                    PgFactStore::open_with(
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
    assert_eq!(store.valid_count().unwrap(), 2);
    assert_eq!(store.valid_facts().unwrap().len(), 2);
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
    assert_eq!(
        store.history(&subject).unwrap(),
        std::slice::from_ref(&long)
    );
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
            PgFactStore::open_with(&url, &scope, durable::roomy(), options(), clock.clone())
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
        PgFactStore::open_with(&url, &scope, plain_config, options(), clock.clone()).unwrap();
    assert!(search(&plain, "parse").is_empty());
    assert_eq!(search(&plain, "parsers").len(), 1);
}

#[test]
fn an_unreachable_server_or_a_bad_url_is_a_typed_error() {
    // No server needed: nothing listens on port 1.
    let options = PgOptions::default().with_connect_timeout(std::time::Duration::from_millis(500));
    let err = PgFactStore::open_with(
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
        PgFactStore::open("postgres://[::1", "s", StoreConfig::default(), clock()).unwrap_err();
    assert_eq!(err.code(), "backend", "{err}");
    let bad_schema = PgOptions::default().with_schema("x; DROP TABLE facts");
    let err = PgFactStore::open_with(
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
#[cfg(feature = "tls")]
#[test]
fn sslmode_require_asks_for_tls() {
    let Some(url) = server() else { return };
    let separator = if url.contains('?') { '&' } else { '?' };
    let options = options().with_connect_timeout(std::time::Duration::from_secs(2));
    let err = PgFactStore::open_with(
        format!("{url}{separator}sslmode=require"),
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
    assert_eq!(store.valid_count().unwrap(), 1);
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
    let err = PgFactStore::open(
        format!("{server_part}/factmem_no_such_database"),
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
        PgFactStore::open_with(
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
    back_to(&mut raw, &schema, 1);
    let store = open();
    let version: i32 = raw
        .query_one(&format!("SELECT version FROM {schema}.schema_version"), &[])
        .unwrap()
        .get(0);
    assert_eq!(u32::try_from(version).unwrap(), PgFactStore::SCHEMA_VERSION);
    assert_eq!(store.valid_count().unwrap(), 1);
    let id = FactId::for_triple("src/a.rs", "modified_by", "task:1");
    let vectors = store.vectors().unwrap();
    assert_eq!(vectors.unembedded(durable::MODEL, 10).unwrap().len(), 1);
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

#[test]
fn a_version_4_schema_migrates_to_token_vectors_and_keeps_its_embeddings() {
    let Some(url) = server() else { return };
    // A schema of its own, back to version 4 (before `token_vectors`).
    let schema = format!("factmem_v4_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let scope = fresh_scope("v4");
    let open = || {
        PgFactStore::open_with(
            &url,
            &scope,
            StoreConfig::default(),
            options.clone(),
            clock(),
        )
        .unwrap()
    };
    let id = FactId::for_triple("src/a.rs", "modified_by", "task:1");
    {
        let store = open();
        store
            .add(vec![fact("src/a.rs", "modified_by", "task:1", 1, 0)])
            .unwrap();
        store
            .vectors()
            .unwrap()
            .put_embeddings(durable::MODEL, vec![(id, vec![0.5, 0.5])])
            .unwrap();
    }
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    back_to(&mut raw, &schema, 4);
    let store = open();
    let version: i32 = raw
        .query_one(&format!("SELECT version FROM {schema}.schema_version"), &[])
        .unwrap()
        .get(0);
    assert_eq!(u32::try_from(version).unwrap(), PgFactStore::SCHEMA_VERSION);
    let vectors = store.vectors().unwrap();
    assert_eq!(vectors.embedded_count(durable::MODEL).unwrap(), 1);
    assert_eq!(vectors.untokenized(durable::MODEL, 10).unwrap().len(), 1);
    let tokens =
        fact_store::TokenVectors::encode(fact_store::TokenEncoding::Int8, 2, &[1.0, 0.0]).unwrap();
    assert_eq!(
        vectors
            .put_token_vectors(durable::MODEL, vec![(id, tokens.clone())])
            .unwrap(),
        1
    );
    assert_eq!(
        vectors.token_vectors(durable::MODEL, &[id]).unwrap(),
        [(id, tokens)]
    );
    drop(store);
    raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

/// Takes the store schema `schema`, empty of episodes and long-term memory, back to
/// `version` as that build left it, undoing each later migration in turn: version 7's
/// GIN index over metadata; version 6's metadata columns; version 5's token vectors; version 4's applied keys and profile;
/// version 3's message tables, aliases and `recorded_at` (transcripts back as text in
/// `episodes.transcript`); version 2's embeddings.
fn back_to(raw: &mut postgres::Client, schema: &str, version: u32) {
    let steps = [
        (2, format!("DROP TABLE {schema}.embeddings;")),
        (
            3,
            format!(
                "DROP TABLE {schema}.messages, {schema}.message_terms, {schema}.aliases;
                 DROP INDEX {schema}.facts_source;
                 ALTER TABLE {schema}.facts DROP COLUMN recorded_at;
                 ALTER TABLE {schema}.scopes DROP COLUMN message_count, DROP COLUMN message_len;
                 ALTER TABLE {schema}.episodes ADD COLUMN transcript TEXT NOT NULL DEFAULT '';
                 ALTER TABLE {schema}.episodes ALTER COLUMN transcript DROP DEFAULT;"
            ),
        ),
        (4, format!("DROP TABLE {schema}.applied, {schema}.profile;")),
        (5, format!("DROP TABLE {schema}.token_vectors;")),
        (
            6,
            format!(
                "ALTER TABLE {schema}.facts DROP COLUMN metadata;
                 ALTER TABLE {schema}.episodes DROP COLUMN metadata;"
            ),
        ),
        (
            7,
            format!(
                "DROP INDEX {schema}.facts_metadata; DROP INDEX {schema}.facts_object;
                 ALTER TABLE {schema}.scopes DROP COLUMN vocabulary;"
            ),
        ),
    ];
    assert_eq!(PgFactStore::SCHEMA_VERSION, 7, "a step for every migration");
    for (undone, sql) in steps.iter().rev() {
        if *undone > version {
            raw.batch_execute(sql).unwrap();
        }
    }
    raw.execute(
        &format!("UPDATE {schema}.schema_version SET version = $1"),
        &[&i32::try_from(version).unwrap()],
    )
    .unwrap();
}

#[test]
fn a_schema_of_every_earlier_version_migrates_to_metadata() {
    let Some(url) = server() else { return };
    for version in 1..PgFactStore::SCHEMA_VERSION {
        let schema = format!("factmem_every_v{version}_{}", std::process::id());
        let options = options().with_schema(schema.clone());
        let scope = fresh_scope("every");
        let open = || {
            PgFactStore::open_with(
                &url,
                &scope,
                StoreConfig::default(),
                options.clone(),
                clock(),
            )
            .unwrap()
        };
        let old = fact("src/a.rs", "modified_by", "task:1", 1, 0);
        open().add(vec![old.clone()]).unwrap();
        let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        back_to(&mut raw, &schema, version);
        let store = open();
        let migrated: i32 = raw
            .query_one(&format!("SELECT version FROM {schema}.schema_version"), &[])
            .unwrap()
            .get(0);
        assert_eq!(
            u32::try_from(migrated).unwrap(),
            PgFactStore::SCHEMA_VERSION,
            "from {version}"
        );
        // The old fact reads back without metadata (and, before 3, without a recorded
        // time, which it never had).
        assert_eq!(
            store.valid_facts().unwrap(),
            [old.clone()],
            "from {version}"
        );
        let meta = fact_model::Metadata::from_assignments(["project=rlm", "n=3"]).unwrap();
        let tagged = fact("src/b.rs", "modified_by", "task:2", 2, 1).with_metadata(meta.clone());
        store.add(vec![tagged.clone()]).unwrap();
        assert_eq!(store.get(tagged.id()).unwrap().unwrap().metadata(), &meta);
        let stored: serde_json::Value = raw
            .query_one(
                &format!("SELECT metadata FROM {schema}.facts WHERE subject = 'src/b.rs'"),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(stored, serde_json::json!({"project": "rlm", "n": 3}));
        // The filters find it through the index the migration made.
        let filter = fact_model::Filter::parse_where(r#"metadata.project = "rlm""#).unwrap();
        assert_eq!(
            store.select(&filter, None).unwrap(),
            [tagged],
            "from {version}"
        );
        let indexed: i64 = raw
            .query_one(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 \
                 AND indexname = 'facts_metadata'",
                &[&schema],
            )
            .unwrap()
            .get(0);
        assert_eq!(indexed, 1, "from {version}");
        drop(store);
        raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .unwrap();
    }
}

#[test]
fn a_version_2_schema_moves_its_transcripts_into_searchable_messages() {
    let Some(url) = server() else { return };
    // A schema of its own, brought back to version 2 (`back_to`), with
    // transcripts as JSON Lines in `episodes.transcript`.
    let schema = format!("factmem_v2_{}", std::process::id());
    let options = options().with_schema(schema.clone());
    let scope = fresh_scope("v2");
    let open = || {
        PgFactStore::open_with(
            &url,
            &scope,
            StoreConfig::default(),
            options.clone(),
            clock(),
        )
        .unwrap()
    };
    let recorded = fact("user", "lives_in", "Berlin", 1, 0).recorded(t(5));
    open()
        .add(vec![
            recorded.clone(),
            fact("user", "owns", "a beagle", 1, 0),
        ])
        .unwrap();
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    back_to(&mut raw, &schema, 2);
    let scope_id: i64 = raw
        .query_one(
            &format!("SELECT id FROM {schema}.scopes WHERE name = $1"),
            &[&scope],
        )
        .unwrap()
        .get(0);
    // Times under each name a transcript may give them, a line without one, a blank line
    // and two lines that are no message (skipped, with a warning).
    let moving = concat!(
        r#"{"role":"user","content":"I live in Paris, but not for long.","timestamp":"2027-01-15T08:01:40Z"}"#,
        "\n",
        r#"{"role":"assistant","content":"Where are you going?","time":"2027-01-15T08:01:41Z"}"#,
        "\n\nuser: not JSON at all\n",
        r#"{"role":"user","content":"Berlin! The flat on Torstrasse is ours.","created_at":"2027-01-15T08:01:42Z"}"#,
        "\n",
        r#"{"role":"robot","content":"beep"}"#,
        "\n",
        r#"{"role":"assistant","content":"Congratulations on the new flat."}"#,
        "\n",
    );
    let pets = concat!(
        r#"{"role":"user","content":"We adopted a puppy named Oscar, he hates the flat's stairs.","timestamp":"2027-01-15T08:03:20Z"}"#,
        "\n",
    );
    let insert = format!(
        "INSERT INTO {schema}.episodes (scope, id, title, summary, transcript, tags, \
         created_at, extracted_at, terms) VALUES ($1, $2, $3, $4, $5, '[\"home\"]', $6, NULL, $7)"
    );
    for (id, title, transcript, created, terms) in [
        (
            "ep_00000000000000aa",
            "Moving",
            moving,
            t(1_000),
            vec!["move"],
        ),
        ("ep_00000000000000bb", "Pets", pets, t(1_001), vec!["pet"]),
    ] {
        raw.execute(
            &insert,
            &[
                &scope_id,
                &id,
                &title,
                &"",
                &transcript,
                &created.unix_micros(),
                &terms,
            ],
        )
        .unwrap();
    }

    let store = open();
    let version: i32 = raw
        .query_one(&format!("SELECT version FROM {schema}.schema_version"), &[])
        .unwrap()
        .get(0);
    assert_eq!(u32::try_from(version).unwrap(), PgFactStore::SCHEMA_VERSION);
    // Transcripts are kept once: as messages.
    let transcript_columns: i64 = raw
        .query_one(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 \
             AND table_name = 'episodes' AND column_name = 'transcript'",
            &[&schema],
        )
        .unwrap()
        .get(0);
    assert_eq!(transcript_columns, 0);
    // The facts are all there, without the recorded time the old schema did not keep.
    assert_eq!(store.valid_count().unwrap(), 2);
    assert_eq!(
        store.get(recorded.id()).unwrap().unwrap().recorded_at(),
        None
    );
    assert!(
        store
            .valid_facts()
            .unwrap()
            .iter()
            .all(|f| f.recorded_at().is_none())
    );

    let episodes = store.episodes().unwrap();
    let titles: Vec<&str> = episodes.iter().map(|e| e.title.as_str()).collect();
    assert_eq!(titles, ["Moving", "Pets"]);
    let moved = &episodes[0];
    assert_eq!(moved.tags, ["home"]);
    let said: Vec<(&str, Option<fact_model::Timestamp>)> = moved
        .messages
        .iter()
        .map(|m| (m.content.as_str(), m.timestamp))
        .collect();
    assert_eq!(
        said,
        [
            ("I live in Paris, but not for long.", Some(t(100))),
            ("Where are you going?", Some(t(101))),
            ("Berlin! The flat on Torstrasse is ours.", Some(t(102))),
            ("Congratulations on the new flat.", None),
        ]
    );
    assert_eq!(moved.started_at(), t(100));
    assert_eq!(store.search_episodes("moving", 5).unwrap().len(), 1);

    // Searchable, with their times, ranked as an in-memory store holding the same
    // episodes ranks them (so the migration's statistics and frequencies are right).
    let memory = InMemoryEpisodeStore::default();
    for episode in &episodes {
        memory.put_episode(episode).unwrap();
    }
    for text in ["flat", "Torstrasse", "puppy stairs", "Where are you going?"] {
        for context in [0, 1] {
            let query = MessageQuery::new(text, 10).with_context(context, 0.3);
            assert_same_hits(&found(&store, &query), &found(&memory, &query));
        }
    }
    let query = MessageQuery::new("Torstrasse", 1).with_context(0, 0.0);
    let hit = &found(&store, &query)[0];
    assert_eq!((hit.0.as_str(), hit.1), ("ep_00000000000000aa", 2));
    assert_eq!(hit.2.timestamp, Some(t(102)));
    let query = MessageQuery::new("flat", 10).with_as_of(t(150));
    assert_same_hits(&found(&store, &query), &found(&memory, &query));
    // The migrated scope goes on as any other: a new episode, a deleted one.
    let new = Episode::new(
        "Work",
        "",
        vec![Message::new(MessageRole::User, "The flat is near the hospital.").at(t(300))],
        t(1_002),
    );
    store.put_episode(&new).unwrap();
    memory.put_episode(&new).unwrap();
    assert!(store.delete_episode("ep_00000000000000bb").unwrap());
    assert!(memory.delete_episode("ep_00000000000000bb").unwrap());
    let query = MessageQuery::new("flat hospital stairs", 10);
    assert_same_hits(&found(&store, &query), &found(&memory, &query));
    drop(store);
    raw.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

#[test]
fn two_stores_of_one_scope_see_each_other_s_messages_aliases_and_profile() {
    let Some(url) = server() else { return };
    let scope = fresh_scope("long-term-shared");
    let clock = clock();
    // Two stores, two pools: as two processes would.
    let (a, b) = (open(&url, &scope, &clock), open(&url, &scope, &clock));
    let episode = Episode::new(
        "Moving",
        "The user moved to Berlin.",
        vec![
            Message::new(MessageRole::User, "Where should I live?").at(t(1)),
            Message::new(MessageRole::Assistant, "Berlin has good flats.").at(t(2)),
        ],
        t(10),
    );
    let mut write = MemoryWrite::default();
    write.episode = Some(episode.clone());
    write.aliases = vec![AliasChange::Set {
        alias: "mel".into(),
        entity: "melanie".into(),
        at: t(3),
    }];
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Nurse".into(),
        at: t(3),
    }];
    a.commit(write).unwrap();
    assert_eq!(b.episode(&episode.id).unwrap().unwrap(), episode);
    let query = MessageQuery::new("flats", 5).with_context(1, 0.3);
    let seen_by_b = found(&b, &query);
    assert_eq!(seen_by_b.len(), 2);
    assert_same_hits(&seen_by_b, &found(&a, &query));
    assert_eq!(b.aliases().unwrap()[0].entity, "melanie");
    assert_eq!(b.profile().unwrap()[0].text, "Nurse");
    // And back: b writes, a sees.
    let mut write = MemoryWrite::default();
    write.aliases = vec![AliasChange::Set {
        alias: "mel".into(),
        entity: "melanie smith".into(),
        at: t(4),
    }];
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Head nurse".into(),
        at: t(4),
    }];
    write.delete_episodes = vec![episode.id.clone()];
    assert_eq!(b.commit(write).unwrap().episodes_deleted, 1);
    assert_eq!(a.aliases().unwrap()[0].entity, "melanie smith");
    assert_eq!(a.profile().unwrap()[0].text, "Head nurse");
    assert_eq!(a.profile_history().unwrap().len(), 2);
    assert!(found(&a, &query).is_empty());
    assert!(a.episodes().unwrap().is_empty());
    // A cycle through the other store's alias is refused.
    let mut write = MemoryWrite::default();
    write.aliases = vec![AliasChange::Set {
        alias: "melanie smith".into(),
        entity: "mel".into(),
        at: t(5),
    }];
    assert_eq!(a.commit(write).unwrap_err().code(), "alias_cycle");
    // The checks every durable store shares.
    let scope = fresh_scope("long-term-durable");
    crate::durable::another_store_sees_long_term_writes(
        &open(&url, &scope, &clock),
        &open(&url, &scope, &clock),
    );
}

#[test]
fn words_and_aliases_longer_than_an_index_entry_are_stored_and_found() {
    let Some(url) = server() else { return };
    let store = open(&url, &fresh_scope("long-memory"), &clock());
    // One word of 8,000 characters: longer than any B-tree entry may be.
    let word = "q".repeat(8_000);
    let episode = Episode::new(
        "Blob",
        "",
        vec![Message::new(
            MessageRole::Tool,
            format!("output {word} done"),
        )],
        t(1),
    );
    store.put_episode(&episode).unwrap();
    let query = MessageQuery::new(&word, 5);
    assert_eq!(found(&store, &query).len(), 1);
    let alias = "a".repeat(8_000);
    let mut write = MemoryWrite::default();
    write.aliases = vec![AliasChange::Set {
        alias: alias.clone(),
        entity: "x".repeat(8_000),
        at: t(2),
    }];
    store.commit(write).unwrap();
    assert_eq!(store.aliases().unwrap()[0].alias, alias);
}

#[test]
fn every_read_of_a_server_that_cut_and_refuses_connections_is_an_io_error() {
    let Some(url) = server() else { return };
    let database = super::OwnDatabase::create(&url, "reads");
    // A short connect timeout: each read waits that long for a connection the server
    // refuses.
    let options = options().with_connect_timeout(std::time::Duration::from_millis(200));
    let store = PgFactStore::open_with(
        &database.url,
        &fresh_scope("reads"),
        StoreConfig::default(),
        options,
        clock(),
    )
    .unwrap();
    durable::add_embedded_facts(&store);
    durable::assert_reads_answer(&store);
    database.cut();
    durable::assert_every_read_fails(&store, "io");
    // Nothing was lost, and the same store carries on once the server lets it in.
    database.restore();
    durable::assert_reads_answer(&store);
}

/// Everything of a scope, each part holding `word`: two versions of a fact with
/// metadata, an embedding, token vectors, an episode with its messages, an alias, a
/// profile version and a keyed transaction.
fn fill_scope(store: &PgFactStore, word: &str) {
    use fact_model::{MetaValue, Metadata};
    use fact_store::{TokenEncoding, TokenVectors, Transaction};
    let version = |object: &str, secs| {
        let metadata = Metadata::from_pairs([("note", MetaValue::typed(word))]).unwrap();
        SessionFact::builder("user", "lives_in", object)
            .tag(Tag::Preference)
            .statement(format!("The user lives in {object} and says {word}."))
            .source("chat", SourceRole::User)
            .metadata(metadata)
            .valid_from(t(secs))
            .build()
            .unwrap()
    };
    store
        .add(vec![version(&format!("{word}ville"), 0)])
        .unwrap();
    let current = version(&format!("{word}burg"), 1);
    store.add(vec![current.clone()]).unwrap();
    let vectors = store.vectors().unwrap();
    vectors
        .put_embeddings("m", vec![(current.id(), vec![1.0, 0.0])])
        .unwrap();
    let tokens = TokenVectors::encode(TokenEncoding::Int8, 2, &[0.5, -0.5]).unwrap();
    vectors
        .put_token_vectors("m", vec![(current.id(), tokens)])
        .unwrap();
    let mut write = MemoryWrite::default();
    write.episode = Some(Episode::new(
        format!("About {word}"),
        format!("The user said {word}."),
        vec![Message::new(MessageRole::User, format!("I say {word} every day.")).at(t(2))],
        t(3),
    ));
    write.aliases = vec![AliasChange::Set {
        alias: format!("{word}-alias"),
        entity: "user".into(),
        at: t(4),
    }];
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: format!("Works on {word}"),
        at: t(5),
    }];
    write.facts = Transaction::new().with_key(format!("{word}-key"));
    store.commit(write).unwrap();
}

/// The erasure test: every table of the store's schema is listed from
/// `information_schema`, and each must be accounted for: a table with a `scope` column
/// holds no row of the erased scope while the other scope keeps its rows there, `scopes`
/// keeps the erased scope's row with its counters at zero, and any other table is the
/// schema's version. A table added without erasure fails it.
#[test]
fn erasing_a_scope_leaves_no_row_of_it_in_any_table() {
    let Some(url) = server() else { return };
    let clock = clock();
    let (gone_name, kept_name) = (fresh_scope("erase-gone"), fresh_scope("erase-kept"));
    let (gone, kept) = (
        open(&url, &gone_name, &clock),
        open(&url, &kept_name, &clock),
    );
    fill_scope(&gone, "zyzzogeton");
    fill_scope(&kept, "quagga");
    assert_eq!(search(&gone, "zyzzogeton").len(), 1);

    let report = gone.erase().unwrap();
    assert_eq!(
        (report.versions, report.episodes, report.messages),
        (2, 1, 1)
    );
    assert_eq!((report.embeddings, report.token_vectors), (1, 1));
    assert_eq!(
        (report.aliases, report.profile_versions, report.keys),
        (1, 1, 1)
    );
    assert!(search(&gone, "zyzzogeton").is_empty());
    assert_eq!(
        search(&kept, "quagga").len(),
        1,
        "the other scope is untouched"
    );

    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let schema = options().schema;
    let scope_id = |raw: &mut postgres::Client, name: &str| -> i64 {
        raw.query_one(
            &format!("SELECT id FROM {schema}.scopes WHERE name = $1"),
            &[&name],
        )
        .unwrap()
        .get(0)
    };
    let (gone_id, kept_id) = (
        scope_id(&mut raw, &gone_name),
        scope_id(&mut raw, &kept_name),
    );
    let tables: Vec<(String, bool)> = raw
        .query(
            "SELECT t.table_name::text, EXISTS (SELECT 1 FROM information_schema.columns AS c \
             WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name \
             AND c.column_name = 'scope') \
             FROM information_schema.tables AS t WHERE t.table_schema = $1 ORDER BY 1",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let mut erased = 0;
    for (table, scoped) in &tables {
        if table == "scopes" {
            let row = raw
                .query_one(
                    &format!(
                        "SELECT valid_count, stored_count, total_len, message_count, \
                         message_len, last_batch, next_key_order FROM {schema}.scopes \
                         WHERE id = $1"
                    ),
                    &[&gone_id],
                )
                .unwrap();
            let counters: Vec<i64> = (0..7).map(|i| row.get(i)).collect();
            assert_eq!(counters, [0; 7], "the erased scope's counters");
        } else if *scoped {
            let count = |raw: &mut postgres::Client, scope: i64| -> i64 {
                raw.query_one(
                    &format!("SELECT count(*) FROM {schema}.{table} WHERE scope = $1"),
                    &[&scope],
                )
                .unwrap()
                .get(0)
            };
            assert_eq!(
                count(&mut raw, gone_id),
                0,
                "rows of the erased scope in `{table}`"
            );
            assert!(
                count(&mut raw, kept_id) > 0,
                "the other scope's rows in `{table}`"
            );
            erased += 1;
        } else {
            assert_eq!(
                table, "schema_version",
                "table `{table}` is neither erased nor known to hold nothing of a scope"
            );
        }
    }
    assert_eq!(erased, 10, "{tables:?}");
}

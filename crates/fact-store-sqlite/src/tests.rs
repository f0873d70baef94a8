//! Failures only a second, raw connection can cause: a write that fails halfway (an
//! injected trigger error) or finds the database locked leaves the store as it was; the
//! search cache following another connection's writes (counting its loads); migrations
//! of databases that older builds left.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use fact_model::{FactId, FactUpdate, ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use rusqlite::Connection;

use super::{SqliteFactStore, SqliteOptions};
use fact_store::{
    InMemorySessionFactStore, SessionFactStore, StoreConfig, TermQuery, TermWeighting,
};

#[derive(Debug)]
struct Overlap;

impl TermWeighting for Overlap {
    fn term_weight(&self, _: usize, _: usize, query_terms: usize) -> f64 {
        1.0 / query_terms as f64
    }

    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

fn fact(subject: &str, relation: &str, object: &str, secs: i64) -> SessionFact {
    SessionFact::builder(subject, relation, object)
        .tag(Tag::Decision)
        .source("1", SourceRole::Implementer)
        .valid_from(Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap())
        .build()
        .unwrap()
}

fn search(store: &dyn SessionFactStore, text: &str) -> Vec<(String, f64)> {
    let mut query = TermQuery::default().with_limit(10);
    query.text = text;
    store
        .search(&query, &Overlap)
        .unwrap()
        .into_iter()
        .map(|s| (s.fact.object().to_owned(), s.score))
        .collect()
}

#[test]
fn a_write_that_fails_halfway_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    for options in [
        SqliteOptions::default(),
        SqliteOptions {
            search_cache: false,
            ..SqliteOptions::default()
        },
    ] {
        let scope = format!("cache {}", options.search_cache);
        let store = SqliteFactStore::open_with(
            &path,
            &scope,
            StoreConfig::default(),
            options,
            clock.clone(),
        )
        .unwrap();
        let reference = InMemorySessionFactStore::new(StoreConfig::default(), clock.clone());
        let first = vec![
            fact("task:1", "status", "parser blocked", 0),
            fact("src/a.rs", "modified_by", "task:1", 0),
        ];
        store.add(first.clone()).unwrap();
        reference.add(first).unwrap();
        let before = (
            store.export_snapshot().unwrap(),
            store.valid_count().unwrap(),
            search(&store, "parser"),
        );
        let raw = Connection::open(&path).unwrap();
        raw.execute_batch(
            "CREATE TRIGGER boom BEFORE INSERT ON facts WHEN NEW.subject = 'boom' \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
        // The batch first supersedes a fact and indexes a new one, then fails.
        let err = store
            .add(vec![
                fact("task:1", "status", "parser done", 5),
                fact("boom", "r", "o", 5),
            ])
            .unwrap_err();
        assert_eq!(err.code(), "backend", "{err}");
        assert!(err.to_string().contains("injected failure"), "{err}");
        assert_eq!(
            (
                store.export_snapshot().unwrap(),
                store.valid_count().unwrap(),
                search(&store, "parser")
            ),
            before
        );
        raw.execute_batch("DROP TRIGGER boom").unwrap();
        // Afterwards the store carries on exactly as the in-memory one.
        let next = vec![
            fact("task:1", "status", "parser done", 5),
            fact("boom", "r", "o", 5),
        ];
        assert_eq!(
            store.add(next.clone()).unwrap(),
            reference.add(next).unwrap()
        );
        assert_eq!(
            store.export_snapshot().unwrap().records,
            reference.export_snapshot().unwrap().records
        );
        assert_eq!(
            search(&store, "parser done boom"),
            search(&reference, "parser done boom")
        );
    }
}

#[test]
fn a_locked_database_is_busy_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let options = SqliteOptions {
        busy_timeout: Duration::from_millis(50),
        ..SqliteOptions::default()
    };
    let store = SqliteFactStore::open_with(
        &path,
        "s",
        StoreConfig::default(),
        options,
        Arc::new(ManualClock::default()),
    )
    .unwrap();
    store.add(vec![fact("a", "r", "o", 0)]).unwrap();
    let raw = Connection::open(&path).unwrap();
    raw.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = store.add(vec![fact("b", "r", "o", 1)]).unwrap_err();
    assert_eq!(err.code(), "busy", "{err}");
    // Readers are not blocked by a writer in WAL mode.
    assert_eq!(store.valid_count().unwrap(), 1);
    raw.execute_batch("COMMIT").unwrap();
    store.add(vec![fact("b", "r", "o", 1)]).unwrap();
    assert_eq!(store.valid_count().unwrap(), 2);
}

// --- migrations ---------------------------------------------------------------------------

/// `1_800_000_000 + secs` seconds, as a timestamp.
fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap()
}

/// A transcript as a build before version 3 stored it: JSON Lines, one message with a
/// time, one without, and a line that is no message.
const OLD_TRANSCRIPT: &str = "{\"role\":\"user\",\"content\":\"Where should the piano go?\",\
     \"timestamp\":\"2027-01-15T08:00:00Z\"}\n\
     this line is not JSON\n\
     {\"role\":\"assistant\",\"content\":\"By the window.\"}\n";

/// A database at schema `version` (1 or 2) as the build of that version left it, made
/// with that version's own statements: scope `s` with one valid fact (whose term document
/// the store builds when it opens the scope: its analyzer is not recorded yet) and one
/// episode with [`OLD_TRANSCRIPT`]; returns the fact and the episode id.
fn old_database(path: &std::path::Path, version: usize) -> (SessionFact, String) {
    let fact = database_at(path, version);
    let conn = Connection::open(path).unwrap();
    let (title, summary) = ("Moving", "Where the piano goes.");
    let id = "ep_00000000000000aa";
    conn.execute(
        "INSERT INTO episodes (scope, id, title, summary, transcript, tags, created_at) \
         VALUES (1, ?1, ?2, ?3, ?4, '[]', ?5)",
        rusqlite::params![id, title, summary, OLD_TRANSCRIPT, at(1_000).unix_micros()],
    )
    .unwrap();
    let document = fact_store::Analyzer::new(fact_store::AnalyzerConfig::default())
        .analyze(&format!("{title} {summary}"))
        .join(" ");
    conn.execute(
        "INSERT INTO episode_fts (rowid, terms) VALUES (?1, ?2)",
        rusqlite::params![conn.last_insert_rowid(), document],
    )
    .unwrap();
    (fact, id.to_owned())
}

/// Keyword overlap for messages: each distinct query term a message holds counts 1.
#[derive(Debug)]
struct Count;

impl TermWeighting for Count {
    fn term_weight(&self, _: usize, _: usize, _: usize) -> f64 {
        1.0
    }

    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

#[test]
fn older_databases_migrate_to_messages_aliases_profile_and_embeddings() {
    use fact_model::{FactId, Message, MessageRole};
    use fact_store::{
        AliasChange, EpisodeStore, FactVectors, LongTermStore, MemoryWrite, MessageQuery,
    };

    assert_eq!(SqliteFactStore::SCHEMA_VERSION, 8);
    for version in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("facts.db");
        let (old_fact, episode_id) = old_database(&path, version);
        let clock = Arc::new(ManualClock::new(at(2_000)));
        let store =
            SqliteFactStore::open(&path, "s", StoreConfig::default(), clock.clone()).unwrap();
        let raw = Connection::open(&path).unwrap();
        let migrated: u32 = raw
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(migrated, SqliteFactStore::SCHEMA_VERSION, "from {version}");
        // The facts are kept, recorded at no known time, and found by search.
        assert_eq!(
            store.valid_facts().unwrap(),
            std::slice::from_ref(&old_fact)
        );
        assert_eq!(
            store.get(old_fact.id()).unwrap().unwrap().recorded_at(),
            None
        );
        assert_eq!(search(&store, "modified")[0].0, "task:1");
        let from_fts = SqliteFactStore::open_with(
            &path,
            "s",
            StoreConfig::default(),
            SqliteOptions::default().with_search_cache(false),
            clock.clone(),
        )
        .unwrap();
        assert_eq!(search(&from_fts, "modified"), search(&store, "modified"));
        assert_eq!(
            store.fact_ids_from_source("1").unwrap(),
            [old_fact.id()],
            "facts_source answers for old rows"
        );
        // The transcript became messages (the line that is no message skipped), kept once.
        let episode = store.episode(&episode_id).unwrap().unwrap();
        let said: Timestamp = "2027-01-15T08:00:00Z".parse().unwrap();
        assert_eq!(
            episode.messages,
            [
                Message::new(MessageRole::User, "Where should the piano go?").at(said),
                Message::new(MessageRole::Assistant, "By the window."),
            ]
        );
        let columns: Vec<String> = raw
            .prepare("SELECT name FROM pragma_table_info('episodes')")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(!columns.iter().any(|c| c == "transcript"), "{columns:?}");
        // Its messages are searchable, with their times, and the answer rides on the
        // question.
        let hits = store
            .search_messages(&MessageQuery::new("piano", 5), &Count)
            .unwrap();
        let turns: Vec<usize> = hits.iter().map(|hit| hit.turn).collect();
        assert_eq!(turns, [0, 1]);
        assert_eq!(hits[0].message.timestamp, Some(said));
        assert_eq!(hits[0].episode_id, episode_id);
        assert_eq!(store.search_episodes("piano", 5).unwrap().len(), 1);
        let before_said = MessageQuery::new("window", 5).with_as_of(at(-1_000_000_000));
        assert_eq!(
            store.search_messages(&before_said, &Count).unwrap().len(),
            1,
            "a message without a time is always said by then"
        );
        // The new tables and columns take writes.
        let recorded = fact("src/b.rs", "modified_by", "task:2", 5).recorded(at(9));
        store
            .commit({
                let mut write = MemoryWrite::default();
                write.aliases = vec![AliasChange::Set {
                    alias: "mel".into(),
                    entity: "melanie".into(),
                    at: at(1),
                }];
                write.facts = fact_store::Transaction::new().add(vec![recorded.clone()]);
                write
            })
            .unwrap();
        assert_eq!(store.aliases().unwrap().len(), 1);
        assert_eq!(
            store.get(recorded.id()).unwrap().unwrap().recorded_at(),
            Some(at(9))
        );
        // Embeddings (version 2) work too.
        let id = FactId::for_triple("src/a.rs", "modified_by", "task:1");
        assert_eq!(
            store
                .driver()
                .put_embeddings("m", vec![(id, vec![0.5, 0.5])])
                .unwrap(),
            1
        );
        // Deleting the migrated episode empties the message statistics.
        assert!(store.delete_episode(&episode_id).unwrap());
        let counts: (i64, i64) = raw
            .query_row(
                "SELECT message_count, message_len FROM scopes WHERE name = 's'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(counts, (0, 0));
        // ...and its terms, which no message holds any more, go with it.
        let terms: i64 = raw
            .query_row("SELECT count(*) FROM message_terms", [], |row| row.get(0))
            .unwrap();
        assert_eq!(terms, 0);
    }
}

// --- the search cache and other connections ------------------------------------------------

/// What a store opened now (its cache loaded from the file) answers.
fn fresh_search(path: &std::path::Path, text: &str) -> Vec<(String, f64)> {
    let clock = Arc::new(ManualClock::default());
    let store = SqliteFactStore::open(path, "s", StoreConfig::default(), clock).unwrap();
    search(&store, text)
}

#[test]
fn a_search_cache_follows_another_connection_row_by_row_and_reloads_after_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    let open = || SqliteFactStore::open(&path, "s", StoreConfig::default(), clock.clone()).unwrap();
    let (reader, writer) = (open(), open());
    let loads = || reader.driver().loads.load(Ordering::Relaxed);
    let query = "parser lexer tokenizer task";
    let agrees = |step: &str| {
        assert_eq!(search(&reader, query), fresh_search(&path, query), "{step}");
    };
    writer
        .add(vec![fact("task:1", "status", "parser blocked", 0)])
        .unwrap();
    agrees("first search");
    assert_eq!(loads(), 1);
    let lexer = fact("src/lexer.rs", "modified_by", "task:1", 1);
    writer.add(vec![lexer.clone()]).unwrap();
    agrees("an add");
    writer
        .add(vec![fact("task:1", "status", "parser done", 2)])
        .unwrap();
    agrees("a supersession");
    let statement = FactUpdate {
        statement: Some("the tokenizer moved".into()),
        ..FactUpdate::default()
    };
    writer.update(lexer.id(), &statement).unwrap();
    agrees("an update");
    reader
        .add(vec![fact("src/lexer.rs", "reviewed_by", "task:2", 3)])
        .unwrap();
    writer.invalidate("src/lexer.rs", "reviewed_by").unwrap();
    agrees("an invalidation after the reader's own write");
    // Two writes in a row, then one search.
    writer
        .add(vec![fact("task:3", "status", "lexer", 4)])
        .unwrap();
    writer
        .add(vec![fact("task:3", "status", "parser", 5)])
        .unwrap();
    agrees("two writes");
    // Deleting an ended version the cache saw end: nothing it holds is gone.
    let blocked = FactId::for_triple("task:1", "status", "parser blocked");
    assert_eq!(writer.delete(blocked).unwrap(), 1);
    agrees("a deleted ended version");
    assert_eq!(loads(), 1, "every write above was followed row by row");
    // Deleting a valid fact: the rows cannot show it, the scope is loaded again.
    writer.delete(lexer.id()).unwrap();
    agrees("a deleted valid fact");
    assert_eq!(loads(), 2);
    // A build of schema 4 writes without stamping its rows: here it ends `task:3`'s status.
    let raw = Connection::open(&path).unwrap();
    raw.execute_batch(
        "UPDATE facts SET valid_to = 1, key_order = NULL, doc_len = NULL, terms = NULL \
         WHERE subject = 'task:3' AND valid_to IS NULL; \
         UPDATE scopes SET generation = generation + 1, valid_count = valid_count - 1;",
    )
    .unwrap();
    assert!(
        !search(&reader, "task:3 parser")
            .iter()
            .any(|(o, _)| o == "parser"),
        "an unstamped write is not missed"
    );
    assert_eq!(loads(), 3);
    agrees("after an unstamped write");
    // The next stamped write carries on from there.
    writer
        .add(vec![fact("task:4", "status", "lexer", 6)])
        .unwrap();
    agrees("a stamped write after an unstamped one");
    assert_eq!(loads(), 3);
}

#[test]
fn databases_of_versions_3_and_4_migrate_to_stamped_rows() {
    use fact_store_sql::codec::{id_to_sql, tags_to_sql};

    for version in [3, 4] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("facts.db");
        {
            let conn = Connection::open(&path).unwrap();
            for migration in &super::schema::MIGRATIONS[..version] {
                migration(&conn).unwrap();
            }
            conn.pragma_update(None, "user_version", u32::try_from(version).unwrap())
                .unwrap();
            conn.execute(
                "INSERT INTO scopes (name, last_batch, newest_input_batch, valid_count, \
                 stored_count, next_key_order, generation) VALUES ('s', 2, 2, 1, 2, 2, 7)",
                [],
            )
            .unwrap();
            let old = fact("task:1", "status", "parser blocked", 0);
            let new = fact("task:1", "status", "parser done", 1);
            let old = old.superseded_at(new.valid_from(), new.id()).unwrap();
            for (batch, fact) in [(1, &old), (2, &new)] {
                conn.execute(
                    "INSERT INTO facts (scope, id, subject, relation, object, tags, valid_from, \
                     valid_to, source_task_id, source_role, confidence, superseded_by, batch, \
                     key_order) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                    rusqlite::params![
                        id_to_sql(fact.id()),
                        fact.subject(),
                        fact.relation(),
                        fact.object(),
                        tags_to_sql(fact.tags().as_slice()),
                        fact.valid_from().unix_micros(),
                        fact.valid_to().map(Timestamp::unix_micros),
                        fact.source_task_id(),
                        fact.source_role().as_str(),
                        fact.confidence(),
                        fact.superseded_by().map(id_to_sql),
                        batch,
                        fact.is_valid().then_some(1),
                    ],
                )
                .unwrap();
            }
        }
        let clock = Arc::new(ManualClock::new(at(2_000)));
        let open =
            || SqliteFactStore::open(&path, "s", StoreConfig::default(), clock.clone()).unwrap();
        let reader = open();
        let raw = Connection::open(&path).unwrap();
        let migrated: u32 = raw
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(migrated, SqliteFactStore::SCHEMA_VERSION, "from {version}");
        let (generation, stamped, deleted): (i64, i64, i64) = raw
            .query_row(
                "SELECT generation, stamped_generation, deleted_generation FROM scopes",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap();
        // Opening rebuilt the term documents (the old scope names no analyzer): one write.
        assert_eq!((generation, stamped, deleted), (8, 8, 0), "from {version}");
        let index: i64 = raw
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'facts_changed'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(index, 1);
        assert_eq!(search(&reader, "parser"), [("parser done".to_owned(), 1.0)]);
        // Another connection's writes are followed row by row on the migrated file.
        let writer = open();
        writer
            .add(vec![fact("task:1", "status", "parser merged", 2)])
            .unwrap();
        assert_eq!(
            search(&reader, "parser"),
            [("parser merged".to_owned(), 1.0)]
        );
        assert_eq!(
            reader.driver().loads.load(Ordering::Relaxed),
            1,
            "from {version}"
        );
        assert_eq!(writer.history("task:1").unwrap().len(), 3);
    }
}

#[test]
fn a_database_of_version_5_migrates_to_token_vectors_and_keeps_its_embeddings() {
    use fact_store::{FactVectors, TokenEncoding, TokenVectors};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    let open = || SqliteFactStore::open(&path, "s", StoreConfig::default(), clock.clone()).unwrap();
    let kept = fact("src/a.rs", "modified_by", "task:1", 0);
    {
        let store = open();
        store.add(vec![kept.clone()]).unwrap();
        store
            .driver()
            .put_embeddings("m", vec![(kept.id(), vec![1.0, 0.0])])
            .unwrap();
    }
    // Version 6 only added `token_vectors`, version 7 the metadata columns, version 8
    // `fact_meta`, `facts_object` and `scopes.vocabulary`: without them, the file is as
    // version 5 left it.
    let raw = Connection::open(&path).unwrap();
    raw.execute_batch(
        "DROP TABLE token_vectors; ALTER TABLE facts DROP COLUMN metadata;
         ALTER TABLE episodes DROP COLUMN metadata; DROP TRIGGER fact_meta_gone;
         DROP TABLE fact_meta; DROP INDEX facts_object;
         ALTER TABLE scopes DROP COLUMN vocabulary; PRAGMA user_version = 5;",
    )
    .unwrap();
    let store = open();
    let version: u32 = raw
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, 8);
    assert_eq!(SqliteFactStore::SCHEMA_VERSION, 8);
    assert_eq!(store.driver().embedded_count("m").unwrap(), 1);
    let missing: Vec<FactId> = store
        .driver()
        .untokenized("m", 10)
        .unwrap()
        .iter()
        .map(SessionFact::id)
        .collect();
    assert_eq!(missing, [kept.id()]);
    let tokens = TokenVectors::encode(TokenEncoding::Int8, 2, &[1.0, 0.0, 0.0, 1.0]).unwrap();
    assert_eq!(
        store
            .driver()
            .put_token_vectors("m", vec![(kept.id(), tokens.clone())])
            .unwrap(),
        1
    );
    assert_eq!(
        store.driver().token_vectors("m", &[kept.id()]).unwrap(),
        [(kept.id(), tokens)]
    );
    assert!(store.driver().untokenized("m", 10).unwrap().is_empty());
}

#[test]
fn stored_bytes_that_are_not_token_vectors_are_a_corrupt_store() {
    use fact_store::{FactVectors, StoreError, TokenEncoding, TokenVectors};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    let store = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock).unwrap();
    let kept = fact("src/a.rs", "modified_by", "task:1", 0);
    store.add(vec![kept.clone()]).unwrap();
    let tokens = TokenVectors::encode(TokenEncoding::Binary, 8, &[1.0; 8]).unwrap();
    store
        .driver()
        .put_token_vectors("m", vec![(kept.id(), tokens)])
        .unwrap();
    let raw = Connection::open(&path).unwrap();
    raw.execute("UPDATE token_vectors SET tokens = x'0102'", [])
        .unwrap();
    let error = store.driver().token_vectors("m", &[kept.id()]).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    // Another model's read does not touch the row.
    assert!(
        store
            .driver()
            .token_vectors("other", &[kept.id()])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_search_while_another_loads_the_scope_answers_from_fts5_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    let store = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock).unwrap();
    store
        .add(vec![
            fact("task:1", "status", "parser blocked", 0),
            fact("src/lexer.rs", "modified_by", "task:1", 1),
        ])
        .unwrap();
    let expected = fresh_search(&path, "parser lexer task");
    {
        // Another search holds the loader (it is loading the scope on its own connection).
        let _loading = crate::driver::Loading::try_start(&store.driver().loader).unwrap();
        assert_eq!(search(&store, "parser lexer task"), expected);
        store
            .add(vec![fact("task:2", "status", "lexer done", 2)])
            .unwrap();
        assert_eq!(
            search(&store, "parser lexer task"),
            fresh_search(&path, "parser lexer task")
        );
        assert_eq!(
            store.driver().loads.load(Ordering::Relaxed),
            0,
            "nothing was loaded"
        );
    }
    // Once it is free, the next search loads the cache and answers the same.
    assert_eq!(
        search(&store, "parser lexer task"),
        fresh_search(&path, "parser lexer task")
    );
    assert_eq!(store.driver().loads.load(Ordering::Relaxed), 1);
}

/// `mmap_size` and `cache_size` of the store's connection, read back.
fn connection_memory(store: &SqliteFactStore) -> (i64, i64) {
    store
        .driver()
        .with_conn(|conn, _| {
            let mmap: i64 = conn.pragma_query_value(None, "mmap_size", |row| row.get(0))?;
            let cache: i64 = conn.pragma_query_value(None, "cache_size", |row| row.get(0))?;
            Ok((mmap, cache))
        })
        .unwrap()
}

#[test]
fn the_connection_memory_options_reach_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let clock = Arc::new(ManualClock::default());
    let open = |options: SqliteOptions| {
        SqliteFactStore::open_with(
            &path,
            "spec:a",
            StoreConfig::default(),
            options,
            clock.clone(),
        )
        .unwrap()
    };
    let default = open(SqliteOptions::default());
    assert_eq!(connection_memory(&default), (256 * 1024 * 1024, -32 * 1024));
    let small = open(
        SqliteOptions::default()
            .with_mmap_size(0)
            .with_page_cache_kib(256),
    );
    assert_eq!(connection_memory(&small), (0, -256));
    // Beyond what SQLite's build allows, the map is clamped, never an error.
    let huge = open(SqliteOptions::default().with_mmap_size(u64::MAX));
    assert!(connection_memory(&huge).0 > 0);
}

/// A database at schema `version` made with that version's own migrations, holding scope
/// `s` with one valid fact written with the columns every version has.
fn database_at(path: &std::path::Path, version: usize) -> SessionFact {
    use fact_store_sql::codec::{id_to_sql, tags_to_sql};

    let conn = Connection::open(path).unwrap();
    for migration in &super::schema::MIGRATIONS[..version] {
        migration(&conn).unwrap();
    }
    conn.pragma_update(None, "user_version", u32::try_from(version).unwrap())
        .unwrap();
    let fact = fact("src/a.rs", "modified_by", "task:1", 0);
    conn.execute(
        "INSERT INTO scopes (name, last_batch, newest_input_batch, valid_count, stored_count, \
         next_key_order) VALUES ('s', 1, 1, 1, 1, 1)",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO facts (scope, id, subject, relation, object, tags, valid_from, \
         source_task_id, source_role, confidence, batch, key_order) \
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, 0)",
        rusqlite::params![
            id_to_sql(fact.id()),
            fact.subject(),
            fact.relation(),
            fact.object(),
            tags_to_sql(fact.tags().as_slice()),
            fact.valid_from().unix_micros(),
            fact.source_task_id(),
            fact.source_role().as_str(),
            fact.confidence(),
        ],
    )
    .unwrap();
    fact
}

#[test]
fn a_database_of_every_earlier_version_migrates_to_metadata() {
    use fact_model::Metadata;

    assert_eq!(SqliteFactStore::SCHEMA_VERSION, 8);
    for version in 1..8 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("facts.db");
        let old = database_at(&path, version);
        let clock = Arc::new(ManualClock::new(at(2_000)));
        let store = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock).unwrap();
        let raw = Connection::open(&path).unwrap();
        let migrated: u32 = raw
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(migrated, 8, "from {version}");
        // The old fact reads back as it was, without metadata.
        assert_eq!(
            store.valid_facts().unwrap(),
            std::slice::from_ref(&old),
            "from {version}"
        );
        assert!(store.get(old.id()).unwrap().unwrap().metadata().is_empty());
        // New facts carry metadata, stored as a JSON object.
        let meta = Metadata::from_assignments(["project=rlm", "n=3"]).unwrap();
        let tagged = fact("src/b.rs", "modified_by", "task:2", 1).with_metadata(meta.clone());
        store.add(vec![tagged.clone()]).unwrap();
        assert_eq!(store.get(tagged.id()).unwrap().unwrap().metadata(), &meta);
        let stored: String = raw
            .query_row(
                "SELECT metadata FROM facts WHERE subject = 'src/b.rs'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(stored, r#"{"n":3,"project":"rlm"}"#);
    }
}

#[test]
fn stored_metadata_that_is_not_valid_is_a_corrupt_store() {
    use fact_store::StoreError;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::default());
    let store = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock).unwrap();
    let kept = fact("src/a.rs", "modified_by", "task:1", 0);
    store.add(vec![kept.clone()]).unwrap();
    let raw = Connection::open(&path).unwrap();
    for bad in ["not json", r#"{"a b": 1}"#, "[1]"] {
        raw.execute("UPDATE facts SET metadata = ?1", [bad])
            .unwrap();
        let error = store.get(kept.id()).unwrap_err();
        assert!(
            matches!(error, StoreError::Corrupt { .. }),
            "{bad}: {error:?}"
        );
    }
}

#[test]
fn metadata_stored_before_version_8_is_found_by_filters_after_it() {
    use fact_model::{Filter, Metadata};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let old = database_at(&path, 7);
    {
        let raw = Connection::open(&path).unwrap();
        raw.execute(
            "UPDATE facts SET metadata = ?1",
            [r#"{"n":0.1,"ok":true,"project":"rlm"}"#],
        )
        .unwrap();
    }
    let clock = Arc::new(ManualClock::new(at(2_000)));
    let store = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock).unwrap();
    let meta = Metadata::from_assignments(["project=rlm", "n=0.1", "ok=true"]).unwrap();
    let old = old.with_metadata(meta);
    for text in [
        r#"metadata.project = "rlm""#,
        "metadata.n = 0.1 and metadata.ok = true",
        "metadata.n < 0.2",
    ] {
        let filter = Filter::parse_where(text).unwrap();
        assert_eq!(
            store.select(&filter, None).unwrap(),
            std::slice::from_ref(&old),
            "{text}"
        );
    }
    let none = Filter::parse_where(r#"metadata.project != "rlm""#).unwrap();
    assert!(store.select(&none, None).unwrap().is_empty());
    // Deleting the fact deletes its rows of `fact_meta` (the trigger).
    store.delete(old.id()).unwrap();
    let raw = Connection::open(&path).unwrap();
    let left: i64 = raw
        .query_row("SELECT count(*) FROM fact_meta", [], |row| row.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

/// Two stores of one scope on one file, as two processes would hold it: one deletes the
/// only fact holding a word (its term is dropped, `scopes.vocabulary` moves on), then
/// the other, whose cache still maps the word to the dropped term, writes the word again.
/// It must not reuse the dropped id: the database's own index (search cache off) finds
/// the new fact by the word, with the right document frequency.
#[test]
fn a_word_whose_term_another_store_dropped_gets_a_new_term() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("words.db");
    let open = || {
        SqliteFactStore::open_with(
            &path,
            "s",
            StoreConfig::default(),
            SqliteOptions::default().with_search_cache(false),
            Arc::new(ManualClock::default()),
        )
        .unwrap()
    };
    let (a, b) = (open(), open());
    let first = fact("quokka", "lives_in", "rottnest", 0);
    a.add(vec![
        first.clone(),
        fact("wombat", "lives_in", "tasmania", 1),
    ])
    .unwrap();
    let terms = |word: &str| -> i64 {
        let conn = Connection::open(&path).unwrap();
        conn.query_row(
            "SELECT count(*) FROM terms WHERE term = ?1",
            [word],
            |row| row.get(0),
        )
        .unwrap()
    };
    assert_eq!(terms("rottnest"), 1);
    assert_eq!(b.delete(first.id()).unwrap(), 1);
    assert_eq!(terms("rottnest"), 0, "the word of the deleted fact is gone");
    assert_eq!(terms("tasmania"), 1, "the other fact's words stay");
    // `a` learned `rottnest` and `quokka` with the first write.
    a.add(vec![fact("penguin", "visits", "rottnest", 2)])
        .unwrap();
    assert_eq!(terms("rottnest"), 1);
    let found = search(&a, "rottnest");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "rottnest");
    let conn = Connection::open(&path).unwrap();
    let df: i64 = conn
        .query_row("SELECT df FROM terms WHERE term = 'rottnest'", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(df, 1);
}

/// Everything of a scope: two versions of a fact with metadata, an embedding, token
/// vectors, an episode with its messages, an alias, a profile version and a keyed
/// transaction, each holding `word`.
#[allow(clippy::field_reassign_with_default)]
fn fill_scope(store: &SqliteFactStore, word: &str) {
    use fact_model::{Message, MessageRole, MetaValue, Metadata, ProfileField};
    use fact_store::{
        AliasChange, Episode, LongTermStore, MemoryWrite, ProfileEntry, TokenEncoding,
        TokenVectors, Transaction,
    };
    let at = |secs: i64| Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap();
    let version = |object: &str, secs| {
        let metadata = Metadata::from_pairs([("note", MetaValue::typed(word))]).unwrap();
        SessionFact::builder("user", "lives_in", object)
            .tag(Tag::Preference)
            .statement(format!("The user lives in {object} and says {word}."))
            .source("chat", SourceRole::User)
            .metadata(metadata)
            .valid_from(at(secs))
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
        vec![Message::new(MessageRole::User, format!("I say {word} every day.")).at(at(2))],
        at(3),
    ));
    write.aliases = vec![AliasChange::Set {
        alias: format!("{word}-alias"),
        entity: "user".into(),
        at: at(4),
    }];
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: format!("Works on {word}"),
        at: at(5),
    }];
    write.facts = Transaction::new().with_key(format!("{word}-key"));
    store.commit(write).unwrap();
}

/// The erasure test: every table of the schema is listed from `sqlite_schema` and each
/// must be accounted for: a table with a `scope` column is one erasure deletes from
/// (`ERASED_TABLES`) and holds no row of the erased scope, while the other scope keeps
/// its rows there; a full-text table holds no rowid of the erased scope's rows; `scopes`
/// keeps the erased scope's row with its counters at zero. A table added to the schema
/// without erasure fails it. Then the files hold no byte of the erased words.
#[test]
fn erasing_a_scope_leaves_no_row_of_it_in_any_table_and_no_byte_in_the_files() {
    use fact_store::{EpisodeStore, LongTermStore};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("erase.db");
    let open = |scope: &str| {
        SqliteFactStore::open_with(
            &path,
            scope,
            StoreConfig::default(),
            SqliteOptions::default(),
            Arc::new(ManualClock::default()),
        )
        .unwrap()
    };
    let (gone, kept) = (open("user:gone"), open("user:kept"));
    let sentinel = "zyzzogeton";
    fill_scope(&gone, sentinel);
    fill_scope(&kept, "quagga");
    // A search and a vector search load the caches the erasure must drop.
    assert_eq!(search(&gone, sentinel).len(), 1);
    let query = fact_store::VectorQuery::new("m", &[1.0, 0.0], 5);
    assert_eq!(gone.vectors().unwrap().nearest(&query).unwrap().len(), 1);

    let conn = Connection::open(&path).unwrap();
    let scope_id = |name: &str| -> i64 {
        conn.query_row("SELECT id FROM scopes WHERE name = ?1", [name], |row| {
            row.get(0)
        })
        .unwrap()
    };
    let (gone_id, kept_id) = (scope_id("user:gone"), scope_id("user:kept"));
    // The full-text rowids of the erased scope, read before it goes.
    let rowids = |sql: &str, scope: i64| -> Vec<i64> {
        conn.prepare(sql)
            .unwrap()
            .query_map([scope], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let fts_rows = |scope| {
        [
            (
                "fact_fts",
                rowids("SELECT seq FROM facts WHERE scope = ?1", scope),
            ),
            (
                "episode_fts",
                rowids("SELECT n FROM episodes WHERE scope = ?1", scope),
            ),
            (
                "message_fts",
                rowids("SELECT id FROM messages WHERE scope = ?1", scope),
            ),
        ]
    };
    let erased_rowids = fts_rows(gone_id);

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
    assert!(search(&gone, sentinel).is_empty());
    assert!(gone.vectors().unwrap().nearest(&query).unwrap().is_empty());
    assert_eq!(
        search(&kept, "quagga").len(),
        1,
        "the other scope is untouched"
    );
    assert_eq!(kept.episodes().unwrap().len(), 1);
    assert_eq!(kept.vectors().unwrap().nearest(&query).unwrap().len(), 1);

    let tables: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let fts: Vec<&str> = tables
        .iter()
        .filter(|(_, sql)| sql.starts_with("CREATE VIRTUAL TABLE"))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(fts, ["episode_fts", "fact_fts", "message_fts"]);
    let mut erased = Vec::new();
    for (table, _) in &tables {
        let columns: Vec<String> = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let count = |scope: i64| -> i64 {
            conn.query_row(
                &format!("SELECT count(*) FROM {table} WHERE scope = ?1"),
                [scope],
                |row| row.get(0),
            )
            .unwrap()
        };
        if table == "scopes" {
            let counters: Vec<i64> = conn
                .query_row(
                    "SELECT valid_count, stored_count, total_len, message_count, message_len, \
                     last_batch, next_key_order FROM scopes WHERE id = ?1",
                    [gone_id],
                    |row| (0..7).map(|i| row.get(i)).collect(),
                )
                .unwrap();
            assert_eq!(counters, [0; 7], "the erased scope's counters");
        } else if columns.iter().any(|c| c == "scope") {
            assert!(
                crate::rows::ERASED_TABLES.contains(&table.as_str()),
                "table `{table}` has a `scope` column but erasure does not delete from it"
            );
            assert_eq!(count(gone_id), 0, "rows of the erased scope in `{table}`");
            assert!(count(kept_id) > 0, "the other scope's rows in `{table}`");
            erased.push(table.as_str());
        } else if fts.contains(&table.as_str()) {
            let (_, before) = erased_rowids
                .iter()
                .find(|(name, _)| name == table)
                .unwrap();
            let left = rowids(&format!("SELECT rowid FROM {table} WHERE rowid = ?1"), 0);
            assert!(left.is_empty());
            for rowid in before {
                let found: i64 = conn
                    .query_row(
                        &format!("SELECT count(*) FROM {table} WHERE rowid = ?1"),
                        [rowid],
                        |row| row.get(0),
                    )
                    .unwrap();
                assert_eq!(found, 0, "`{table}` still indexes row {rowid}");
            }
        } else if fts
            .iter()
            .any(|name| table.starts_with(&format!("{name}_")))
        {
            // An FTS5 shadow table: its rows are its virtual table's, checked above and
            // in the files' bytes below.
        } else {
            assert_eq!(
                table, "sqlite_sequence",
                "table `{table}` is neither erased nor known to hold nothing of a scope"
            );
        }
    }
    erased.sort_unstable();
    let mut listed = crate::rows::ERASED_TABLES.to_vec();
    listed.sort_unstable();
    assert_eq!(erased, listed, "every table erasure deletes from exists");
    drop(conn);

    for file in ["erase.db", "erase.db-wal"] {
        let Ok(bytes) = std::fs::read(dir.path().join(file)) else {
            continue;
        };
        let found = bytes
            .windows(sentinel.len())
            .any(|window| window.eq_ignore_ascii_case(sentinel.as_bytes()));
        assert!(!found, "`{file}` still holds the erased word");
    }
    let kept_word = std::fs::read(&path).unwrap();
    assert!(
        kept_word.windows(6).any(|w| w == b"quagga"),
        "the byte check would see a word that is there"
    );
}

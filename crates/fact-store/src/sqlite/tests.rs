//! Failures only a second, raw connection can cause: a write that fails halfway (an
//! injected trigger error) or finds the database locked leaves the store as it was.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::time::Duration;

use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use rusqlite::Connection;

use super::{SqliteFactStore, SqliteOptions};
use crate::{InMemorySessionFactStore, SessionFactStore, StoreConfig, TermQuery, TermWeighting};

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
    let query = TermQuery {
        text,
        limit: 10,
        ..TermQuery::default()
    };
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
    use crate::sql::codec::{id_to_sql, tags_to_sql};

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
    let (title, summary) = ("Moving", "Where the piano goes.");
    let id = "ep_00000000000000aa";
    conn.execute(
        "INSERT INTO episodes (scope, id, title, summary, transcript, tags, created_at) \
         VALUES (1, ?1, ?2, ?3, ?4, '[]', ?5)",
        rusqlite::params![id, title, summary, OLD_TRANSCRIPT, at(1_000).unix_micros()],
    )
    .unwrap();
    let document = crate::Analyzer::new(crate::AnalyzerConfig::default())
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
    use crate::{AliasChange, EpisodeStore, FactVectors, LongTermStore, MemoryWrite, MessageQuery};
    use fact_model::{FactId, Message, MessageRole};

    assert_eq!(SqliteFactStore::SCHEMA_VERSION, 4);
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
            .commit(MemoryWrite {
                aliases: vec![AliasChange::Set {
                    alias: "mel".into(),
                    entity: "melanie".into(),
                    at: at(1),
                }],
                facts: crate::Transaction::new().add(vec![recorded.clone()]),
                ..MemoryWrite::default()
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
        let df: i64 = raw
            .query_row("SELECT sum(df) FROM message_terms", [], |row| row.get(0))
            .unwrap();
        assert_eq!(df, 0);
    }
}

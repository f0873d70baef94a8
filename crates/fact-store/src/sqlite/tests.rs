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
            store.export_snapshot(),
            store.valid_count(),
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
                store.export_snapshot(),
                store.valid_count(),
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
            store.export_snapshot().records,
            reference.export_snapshot().records
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
    assert_eq!(store.valid_count(), 1);
    raw.execute_batch("COMMIT").unwrap();
    store.add(vec![fact("b", "r", "o", 1)]).unwrap();
    assert_eq!(store.valid_count(), 2);
}

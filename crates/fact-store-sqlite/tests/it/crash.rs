//! The SQLite store under process death and concurrent writers: a writer killed with
//! SIGKILL in the middle of a stream of batches leaves an intact database holding every
//! batch it committed, whole; two processes writing one file lose nothing.
//!
//! The writers are a helper binary of this package, `fact-store-crash-writer`
//! (`tests/bin/crash_writer.rs`), which cargo builds for this test; it adds the batches of
//! `tests/bin/batches.rs`, compiled here too, and prints `committed N` after each commit.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use fact_model::SystemClock;
use fact_store::SessionFactStore;
use fact_store_sqlite::SqliteFactStore;

#[path = "../bin/batches.rs"]
mod batches;

use batches::{BATCH, unbounded};

/// The writer's binary, built by cargo with this test.
const WRITER: &str = env!("CARGO_BIN_EXE_fact-store-crash-writer");

fn batch(writer: &str, n: usize) -> Vec<fact_model::SessionFact> {
    batches::batch(writer, n).unwrap()
}

fn spawn_writer(db: &std::path::Path, name: &str, batches: usize) -> Child {
    Command::new(WRITER)
        .arg(db)
        .arg(name)
        .arg(batches.to_string())
        .stdout(Stdio::piped())
        // A writer that fails says why in the test's output.
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn integrity(db: &std::path::Path) -> String {
    let connection = rusqlite::Connection::open(db).unwrap();
    connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap()
}

fn open(db: &std::path::Path) -> SqliteFactStore {
    SqliteFactStore::open(db, "crash", unbounded(), Arc::new(SystemClock)).unwrap()
}

#[test]
fn a_killed_writer_leaves_every_committed_batch_whole() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("crash.db");
    let mut child = spawn_writer(&db, "w", 100_000);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut committed = None;
    for line in lines.by_ref() {
        if let Some(n) = line.unwrap().strip_prefix("committed ") {
            let n: usize = n.parse().unwrap();
            committed = Some(n);
            if n >= 30 {
                break;
            }
        }
    }
    // SIGKILL, mid-stream: the writer is busy with its next batch.
    child.kill().unwrap();
    child.wait().unwrap();
    let committed = committed.expect("the writer committed nothing");

    assert_eq!(integrity(&db), "ok");
    let store = open(&db);
    let stored = store.valid_count().unwrap();
    assert_eq!(
        stored % BATCH,
        0,
        "a batch was stored in part: {stored} facts"
    );
    assert!(
        stored >= (committed + 1) * BATCH,
        "{stored} facts, {committed} batches reported"
    );
    for n in 0..=committed {
        for fact in batch("w", n) {
            assert!(
                store.get(fact.id()).unwrap().is_some(),
                "batch {n} lost {}",
                fact.subject()
            );
        }
    }
    // The file still takes writes.
    store.add(batch("after", 0)).unwrap();
}

#[test]
fn two_processes_writing_one_file_lose_nothing() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("shared.db");
    // Create the schema first, so both writers start on an existing database.
    drop(open(&db));
    let batches = 40;
    let children: Vec<Child> = ["a", "b"]
        .iter()
        .map(|name| spawn_writer(&db, name, batches))
        .collect();
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a writer failed: {status}");
    }
    assert_eq!(integrity(&db), "ok");
    let store = open(&db);
    assert_eq!(store.valid_count().unwrap(), 2 * batches * BATCH);
    for name in ["a", "b"] {
        for n in 0..batches {
            assert!(store.get(batch(name, n)[0].id()).unwrap().is_some());
        }
    }
}

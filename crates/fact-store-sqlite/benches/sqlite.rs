//! `SqliteFactStore` benchmarks on the shared dispatch workload. Run with
//! `cargo bench -p fact-store --features sqlite --bench sqlite`.
//!
//! - `insert_batch_of_100`: one `add` of 100 workload facts (one transaction) into a store
//!   on a file that already holds 1,000 or 100,000 facts; divan reports facts per second.
//!   `insert_batch_of_100_small_connection`: the same on a connection without a memory
//!   map and with a 2 MiB page cache (as a `DatabaseHandle` under a bounded cache
//!   budget opens its stores).
//! - `search_*`: one search (limit 10, BM25, the querying task excluded) in a store of
//!   100,000 facts, cycling through the workload's queries: `workload_query` is the
//!   generator's 40 random domain words (nearly every fact is a candidate), `short_query`
//!   its first three words. `cached` is the default store (search cache on), `fts` the
//!   store with the cache off (FTS5 candidates scored from the stored term documents),
//!   `in_memory` the `InMemorySessionFactStore` on the same facts, for reference.
//!
//! - `follow::*`: a cached store over one file of 100,000 facts (built once per run) and
//!   another store (another connection, as another process would be) writing to the same
//!   scope. `after_another_write`: a 3-word search right after the other store committed a
//!   result of 10 facts (made before each sample, not timed); `first_search`: a new store's
//!   first search, which loads the whole scope into its cache.
//!
//! - `peer_fts5::*`: the raw FTS5 peer in the same run, the design of
//!   `../shared/eval/fts5_baseline.py` (one FTS5 table, `porter unicode61`, `bm25()`
//!   ranking, no temporal model, no dedup): the same facts inserted as
//!   `subject relation object` rows in transactions of 100, and the same queries as
//!   `OR` of their words, `ORDER BY bm25 LIMIT 10`.
//!
//! - `nearest::*`: `FactVectors::nearest` (limit 20) among 100,000 facts with 384-dimensional
//!   embeddings (synthetic, clustered: `support/vectors.rs`, as `benches/vectors.rs`'s),
//!   in one file built once per run: `first_search` is a new store object's first search,
//!   which loads every vector of the model into its index; `warm` a store's later
//!   searches, cycling through 100 query vectors (the median is the p50).
//!
//! Automatic compaction is off, so the size is what the argument says.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fact-store/benches/support/facts.rs"]
mod facts;
#[path = "../../fact-store/benches/support/search.rs"]
mod search_support;
#[path = "../../fact-store/benches/support/vectors.rs"]
mod vectors;
#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use divan::Bencher;
use divan::counter::ItemsCount;
use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, TermQuery};
use fact_store_sqlite::{SqliteFactStore, SqliteOptions};
use search_support::{Bm25, unbounded};

fn main() {
    divan::main();
}

/// The workload's facts in batches of about 100 (whole task results), for `tasks` tasks
/// starting at second `from`.
fn batches_of_100(tasks: &[workload::Task], from: i64) -> Vec<Vec<SessionFact>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    for (n, task) in tasks.iter().enumerate() {
        let at = Timestamp::from_unix_secs(from + n as i64).unwrap();
        for batch in facts::task_batches(task, at) {
            current.extend(batch);
        }
        if current.len() >= 100 {
            current.truncate(100);
            out.push(std::mem::take(&mut current));
        }
    }
    out
}

/// Fills `store` with workload facts until at least `size` are valid; returns the tasks
/// not used.
fn fill<'w>(
    store: &dyn SessionFactStore,
    tasks: &'w [workload::Task],
    size: usize,
) -> &'w [workload::Task] {
    let mut used = 0;
    while store.valid_count().unwrap() < size {
        let chunk = tasks.get(used..used + 50).expect("workload too small");
        for batch in batches_of_100(chunk, used as i64) {
            store.add(batch).unwrap();
        }
        used += 50;
    }
    tasks.get(used..).unwrap_or_default()
}

fn open_on_disk(options: SqliteOptions) -> (tempfile::TempDir, SqliteFactStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteFactStore::open_with(
        dir.path().join("bench.db"),
        "spec:bench",
        unbounded(),
        options,
        Arc::new(ManualClock::default()),
    )
    .unwrap();
    (dir, store)
}

#[divan::bench(args = [1_000, 100_000], sample_count = 200, sample_size = 1)]
fn insert_batch_of_100(bencher: Bencher<'_, '_>, size: usize) {
    let (_dir, store) = open_on_disk(SqliteOptions::default());
    let workload = workload::generate(size * 3 / 2 + 40_000, 0, 42);
    let rest = fill(&store, &workload.tasks, size);
    let mut batches = batches_of_100(rest, 1_000_000).into_iter();
    bencher
        .counter(ItemsCount::new(100usize))
        .with_inputs(|| batches.next().expect("spare batches ran out"))
        .bench_local_values(|batch| store.add(batch).unwrap());
}

/// `insert_batch_of_100` on a connection as `DatabaseHandle` opens it under a bounded
/// cache budget: no memory map, a page cache of 2 MiB.
#[divan::bench(args = [1_000, 100_000], sample_count = 200, sample_size = 1)]
fn insert_batch_of_100_small_connection(bencher: Bencher<'_, '_>, size: usize) {
    let options = SqliteOptions::default()
        .with_mmap_size(0)
        .with_page_cache_kib(2048);
    let (_dir, store) = open_on_disk(options);
    let workload = workload::generate(size * 3 / 2 + 40_000, 0, 42);
    let rest = fill(&store, &workload.tasks, size);
    let mut batches = batches_of_100(rest, 1_000_000).into_iter();
    bencher
        .counter(ItemsCount::new(100usize))
        .with_inputs(|| batches.next().expect("spare batches ran out"))
        .bench_local_values(|batch| store.add(batch).unwrap());
}

const SEARCH_FACTS: usize = 100_000;

/// A store of 100,000 facts (on disk for SQLite) and the workload's queries.
fn search_setup(store: &dyn SessionFactStore) -> Vec<(String, String)> {
    let workload = workload::generate(SEARCH_FACTS * 3 / 2, 500, 42);
    fill(store, &workload.tasks, SEARCH_FACTS);
    workload.queries
}

fn short(text: &str) -> String {
    text.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

fn bench_search(
    bencher: Bencher<'_, '_>,
    store: &dyn SessionFactStore,
    queries: &[(String, String)],
    words: fn(&str) -> String,
) {
    let queries: Vec<(String, String)> = queries
        .iter()
        .map(|(task, text)| (task.clone(), words(text)))
        .collect();
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(|(task, text)| {
            let query = TermQuery::new(text, 10).with_exclude_source_task(task);
            store.search(&query, &Bm25).unwrap()
        });
}

fn whole(text: &str) -> String {
    text.to_owned()
}

mod search {
    use super::*;

    #[divan::bench(sample_count = 300)]
    fn cached_workload_query(bencher: Bencher<'_, '_>) {
        let (_dir, store) = open_on_disk(SqliteOptions::default());
        let queries = search_setup(&store);
        bench_search(bencher, &store, &queries, whole);
    }

    #[divan::bench(sample_count = 300)]
    fn cached_short_query(bencher: Bencher<'_, '_>) {
        let (_dir, store) = open_on_disk(SqliteOptions::default());
        let queries = search_setup(&store);
        bench_search(bencher, &store, &queries, short);
    }

    #[divan::bench(sample_count = 30)]
    fn fts_workload_query(bencher: Bencher<'_, '_>) {
        let options = SqliteOptions::default().with_search_cache(false);
        let (_dir, store) = open_on_disk(options);
        let queries = search_setup(&store);
        bench_search(bencher, &store, &queries, whole);
    }

    #[divan::bench(sample_count = 100)]
    fn fts_short_query(bencher: Bencher<'_, '_>) {
        let options = SqliteOptions::default().with_search_cache(false);
        let (_dir, store) = open_on_disk(options);
        let queries = search_setup(&store);
        bench_search(bencher, &store, &queries, short);
    }

    #[divan::bench(sample_count = 300)]
    fn in_memory_workload_query(bencher: Bencher<'_, '_>) {
        let store = InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()));
        let queries = search_setup(&store);
        bench_search(bencher, &store, &queries, whole);
    }
}

/// A cached store following another connection's writes to a scope of 100,000 facts.
mod follow {
    use super::*;

    const SCOPE: &str = "spec:bench";

    /// The folder, the file and the workload's queries.
    type Database = (tempfile::TempDir, PathBuf, Vec<(String, String)>);

    /// The file holding the facts and the workload's queries, built at the first call.
    fn database() -> &'static Database {
        static DATABASE: OnceLock<Database> = OnceLock::new();
        DATABASE.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("follow.db");
            let queries = search_setup(&open(&path));
            (dir, path, queries)
        })
    }

    fn open(path: &PathBuf) -> SqliteFactStore {
        SqliteFactStore::open(path, SCOPE, unbounded(), Arc::new(ManualClock::default())).unwrap()
    }

    #[divan::bench(sample_count = 100, sample_size = 1)]
    fn after_another_write(bencher: Bencher<'_, '_>) {
        let (_, path, queries) = database();
        let reader = open(path);
        let writer = open(path);
        let search = |text: &str| {
            let query = TermQuery::new(text, 10);
            reader.search(&query, &Bm25).unwrap()
        };
        assert!(
            !search(&short(&queries.first().unwrap().1)).is_empty(),
            "no results"
        );
        let mut n = 0u64;
        let mut next = queries.iter().cycle();
        bencher
            .with_inputs(|| {
                n += 1;
                let at = Timestamp::from_unix_secs(2_000_000_000 + n as i64).unwrap();
                let batch = (0..10)
                    .map(|k| {
                        SessionFact::builder(
                            format!("src/bench/write_{n}_{k}.rs"),
                            "modified_by",
                            format!("task:w{n}"),
                        )
                        .tag(Tag::FileChange)
                        .source(format!("w{n}"), SourceRole::Implementer)
                        .valid_from(at)
                        .build()
                        .unwrap()
                    })
                    .collect();
                writer.add(batch).unwrap();
                short(&next.next().unwrap().1)
            })
            .bench_local_values(|text| search(&text));
    }

    /// A new store's first search: the cache loads the whole scope.
    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn first_search(bencher: Bencher<'_, '_>) {
        let (_, path, queries) = database();
        let text = short(&queries.first().unwrap().1);
        bencher
            .with_inputs(|| open(path))
            .bench_local_values(|store| {
                let query = TermQuery::new(&text, 10);
                store.search(&query, &Bm25).unwrap()
            });
    }
}

/// Nearest-neighbour search over the embeddings of 100,000 facts.
mod nearest {
    use super::*;

    const SCOPE: &str = "spec:vectors";

    /// The file holding the facts and their embeddings, built at the first call.
    fn database() -> &'static PathBuf {
        static DATABASE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
        &DATABASE
            .get_or_init(|| {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("vectors.db");
                vectors::load_nearest(&open(&path), "sqlite nearest setup");
                (dir, path)
            })
            .1
    }

    fn open(path: &PathBuf) -> SqliteFactStore {
        SqliteFactStore::open(path, SCOPE, unbounded(), Arc::new(ManualClock::default())).unwrap()
    }

    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn first_search(bencher: Bencher<'_, '_>) {
        let path = database();
        vectors::bench_first_search(bencher, || open(path));
    }

    #[divan::bench(sample_count = 300)]
    fn warm(bencher: Bencher<'_, '_>) {
        vectors::bench_warm(bencher, &open(database()), 100);
    }
}

/// The raw FTS5 peer: what a plain archive-style memory does with the same facts.
mod peer_fts5 {
    use super::*;
    use rusqlite::{Connection, params};

    fn open() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let db = Connection::open(dir.path().join("peer.db")).unwrap();
        db.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             CREATE VIRTUAL TABLE f USING fts5(subject, text, tokenize = 'porter unicode61');",
        )
        .unwrap();
        (dir, db)
    }

    fn insert(db: &mut Connection, batch: &[SessionFact]) {
        let tx = db.transaction().unwrap();
        {
            let mut stmt = tx
                .prepare_cached("INSERT INTO f(subject, text) VALUES (?1, ?2)")
                .unwrap();
            for fact in batch {
                let text = format!("{} {}", fact.relation(), fact.object());
                stmt.execute(params![fact.subject(), text]).unwrap();
            }
        }
        tx.commit().unwrap();
    }

    fn fill(db: &mut Connection, tasks: &[workload::Task], size: usize) -> usize {
        let mut rows = 0;
        for batch in batches_of_100(tasks, 0) {
            if rows >= size {
                break;
            }
            insert(db, &batch);
            rows += batch.len();
        }
        rows
    }

    #[divan::bench(args = [1_000, 100_000], sample_count = 200, sample_size = 1)]
    fn insert_batch_of_100(bencher: Bencher<'_, '_>, size: usize) {
        let (_dir, mut db) = open();
        let workload = workload::generate(size * 3 / 2 + 40_000, 0, 42);
        let used = fill(&mut db, &workload.tasks, size);
        let mut batches = batches_of_100(&workload.tasks, 0)
            .into_iter()
            .skip(used / 100 + 1);
        bencher
            .counter(ItemsCount::new(100usize))
            .with_inputs(|| batches.next().expect("spare batches ran out"))
            .bench_local_values(|batch| insert(&mut db, &batch));
    }

    fn search(bencher: Bencher<'_, '_>, words: fn(&str) -> String) {
        let (_dir, mut db) = open();
        let workload = workload::generate(SEARCH_FACTS * 3 / 2, 500, 42);
        fill(&mut db, &workload.tasks, SEARCH_FACTS);
        let queries: Vec<String> = workload
            .queries
            .iter()
            .map(|(_, text)| {
                words(text)
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(|w| format!("\"{w}\""))
                    .collect::<Vec<_>>()
                    .join(" OR ")
            })
            .collect();
        let mut next = queries.iter().cycle();
        bencher
            .with_inputs(|| next.next().unwrap())
            .bench_local_values(|query| {
                let mut stmt = db
                    .prepare_cached(
                        "SELECT rowid FROM f WHERE f MATCH ?1 ORDER BY bm25(f) LIMIT 10",
                    )
                    .unwrap();
                stmt.query_map([query], |row| row.get::<_, i64>(0))
                    .unwrap()
                    .count()
            });
    }

    #[divan::bench(sample_count = 100)]
    fn workload_query(bencher: Bencher<'_, '_>) {
        search(bencher, whole);
    }

    #[divan::bench(sample_count = 300)]
    fn short_query(bencher: Bencher<'_, '_>) {
        search(bencher, short);
    }
}

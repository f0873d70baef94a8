//! `PgFactStore` benchmarks on the shared dispatch workload, against the server
//! `FACTMEM_PG_URL` names (`eval "$(.ci/pg-server start)"` starts one on loopback). Run with
//! `cargo bench -p fact-store --features postgres --bench postgres`; without
//! `FACTMEM_PG_URL` it prints a skip message and runs nothing.
//!
//! - `add_batch_of_100`: one `add` of 100 workload facts (one transaction, one writer) into
//!   a fresh scope that already holds 1,000 facts; the time is per batch (batches/s is its
//!   inverse), divan's counter gives facts/s.
//! - `add_batches_of_100_one_scope` / `_own_scopes`: 1 or 8 writers (threads, each with its
//!   own store and connection) adding batches of 100 at once, to one scope or each to its
//!   own; divan's counter gives batches/s in all.
//! - `replica::*` (with `FACTMEM_PG_REPLICA_URL` too, a hot standby of the server:
//!   `.ci/pg-server start-standby`): `history` answered by the primary or by the standby,
//!   and an `add` then its `history` (the read waiting for the standby to replay the write);
//!   each prints how its reads were served (`ReplicaStats`).
//! - `search::*`: one search (limit 10, BM25, the querying task excluded) in a scope of
//!   100,000 valid facts, loaded once per run in batches of about 1,000, cycling through
//!   the workload's queries: `workload_query` is the generator's 40 random domain words,
//!   `short_query` its first three words. `cached_*` is the default store (the search
//!   cache: the scope's term index in this process, checked against the scope's generation
//!   on every search), `gin_*` the store with `search_cache: false` (candidates from the
//!   GIN index, scored from the stored term documents). `cached_after_another_write`: the
//!   cached store searches right after another store of the scope committed a result of
//!   10 facts (made before each sample, not timed): the cache catches up with the rows that
//!   write changed, not the whole scope. `cached_first_search`: a new store's first
//!   search, which loads the whole scope into its cache (what every search cost, before
//!   the cache followed other writers row by row, whenever another process had written).
//! - `search::cached_threads_one_store`: 1 or 4 threads searching one cached store at once
//!   (10 short queries each, the 100,000-fact scope); divan's counter gives searches/s in
//!   all. The cache's lock is held only while a search scores in memory, so one thread's
//!   round trips overlap another's scoring.
//! - `open::*`: opening the store of a new spec (a fresh scope): `own_database` with
//!   `PgFactStore::connect` (a connection of its own made, the schema checked, a pool of
//!   its own), what every spec's store cost when each opened its own; `shared_database`
//!   from a `PgDatabase` opened once (a pooled connection; the scope's row made).
//! - `nearest::*`: `FactVectors::nearest` (limit 20) among 100,000 facts with
//!   384-dimensional embeddings (synthetic, clustered: `support/vectors.rs`, as
//!   `benches/vectors.rs`'s), in a scope loaded once per run: `first_search` is a new
//!   store's first search, which loads every vector of the model into its index; `warm` a
//!   store's later searches, cycling through 100 query vectors (the median is the p50).
//!   Each search reads the vectors written since the last one and the candidates' facts,
//!   in one snapshot.
//!
//! Automatic compaction is off, so the size is what the argument says. Each run leaves its
//! scopes (`bench:*`) on the server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fact-store/benches/support/facts.rs"]
mod facts;
#[path = "../../fact-store/benches/support/search.rs"]
mod search_support;
#[path = "../../fact-store/benches/support/vectors.rs"]
mod vectors;
#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::io::Write;
use std::sync::{Arc, OnceLock};

use divan::Bencher;
use divan::counter::ItemsCount;
use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{SessionFactStore, TermQuery};
use fact_store_postgres::{PgDatabase, PgFactStore, PgOptions};
use search_support::{Bm25, unbounded};

fn main() {
    if url().is_none() {
        // Nothing is registered that could run without a server.
        let _ = writeln!(
            std::io::stderr(),
            "FACTMEM_PG_URL is not set: the PostgreSQL benchmarks are skipped; \
             `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
        return;
    }
    divan::main();
}

fn url() -> Option<String> {
    std::env::var("FACTMEM_PG_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

/// A scope no other run uses.
fn fresh_scope(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("bench:{name}:{}:{nanos}", std::process::id())
}

fn open(scope: &str, search_cache: bool) -> PgFactStore {
    let options = PgOptions::default().with_search_cache(search_cache);
    PgFactStore::open_with(
        url().expect("FACTMEM_PG_URL"),
        scope,
        unbounded(),
        options,
        Arc::new(ManualClock::default()),
    )
    .unwrap()
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

/// Fills `store` with workload facts, ten batches of 100 per `add`, until at least `size`
/// are valid; returns the tasks not used.
fn fill<'w>(
    store: &dyn SessionFactStore,
    tasks: &'w [workload::Task],
    size: usize,
) -> &'w [workload::Task] {
    let mut used = 0;
    while store.valid_count().unwrap() < size {
        let chunk = tasks.get(used..used + 100).expect("workload too small");
        for batches in batches_of_100(chunk, used as i64).chunks(10) {
            store.add(batches.concat()).unwrap();
        }
        used += 100;
    }
    tasks.get(used..).unwrap_or_default()
}

#[divan::bench(args = [1_000], sample_count = 200, sample_size = 1)]
fn add_batch_of_100(bencher: Bencher<'_, '_>, size: usize) {
    let store = open(&fresh_scope("add"), true);
    let workload = workload::generate(size * 3 / 2 + 40_000, 0, 42);
    let rest = fill(&store, &workload.tasks, size);
    let mut batches = batches_of_100(rest, 1_000_000).into_iter();
    bencher
        .counter(ItemsCount::new(100usize))
        .with_inputs(|| batches.next().expect("spare batches ran out"))
        .bench_local_values(|batch| store.add(batch).unwrap());
}

/// `writers` writers adding batches of 100 at once, each with a store (a connection) of its
/// own, on one scope or (`own_scopes`) each on a scope of its own; one sample is every
/// writer adding 4 batches, and divan's counter gives batches/s in all.
fn add_by_writers(bencher: Bencher<'_, '_>, writers: usize, own_scopes: bool) {
    const PER_WRITER: usize = 4;
    let shared = fresh_scope("writers");
    let stores: Vec<PgFactStore> = (0..writers)
        .map(|_| {
            if own_scopes {
                open(&fresh_scope("writer"), true)
            } else {
                open(&shared, true)
            }
        })
        .collect();
    let workload = workload::generate(20_000 * writers, 0, 42);
    let mut batches = batches_of_100(&workload.tasks, 0).into_iter();
    bencher
        .counter(ItemsCount::new(writers * PER_WRITER))
        .with_inputs(|| {
            (0..writers)
                .map(|_| {
                    (0..PER_WRITER)
                        .map(|_| batches.next().expect("spare batches ran out"))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .bench_local_values(|work| {
            std::thread::scope(|threads| {
                for (store, batches) in stores.iter().zip(work) {
                    threads.spawn(move || {
                        for batch in batches {
                            store.add(batch).unwrap();
                        }
                    });
                }
            });
        });
}

/// Writers of one scope: they take turns on the scope's row lock.
#[divan::bench(args = [1, 8], sample_count = 20, sample_size = 1)]
fn add_batches_of_100_one_scope(bencher: Bencher<'_, '_>, writers: usize) {
    add_by_writers(bencher, writers, false);
}

/// Writers of different scopes: they never wait for each other.
#[divan::bench(args = [8], sample_count = 20, sample_size = 1)]
fn add_batches_of_100_own_scopes(bencher: Bencher<'_, '_>, writers: usize) {
    add_by_writers(bencher, writers, true);
}

const SEARCH_FACTS: usize = 100_000;

/// The scope of 100,000 valid facts (loaded on the first call) and the workload's queries.
fn search_scope() -> &'static (String, Vec<(String, String)>) {
    static LOADED: OnceLock<(String, Vec<(String, String)>)> = OnceLock::new();
    LOADED.get_or_init(|| {
        let scope = fresh_scope("search");
        let store = open(&scope, false);
        let workload = workload::generate(SEARCH_FACTS * 3 / 2, 500, 42);
        fill(&store, &workload.tasks, SEARCH_FACTS);
        (scope, workload.queries)
    })
}

fn short(text: &str) -> String {
    text.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

fn whole(text: &str) -> String {
    text.to_owned()
}

fn bench_search(bencher: Bencher<'_, '_>, search_cache: bool, words: fn(&str) -> String) {
    let (scope, queries) = search_scope();
    let store = open(scope, search_cache);
    let queries: Vec<(String, String)> = queries
        .iter()
        .map(|(task, text)| (task.clone(), words(text)))
        .collect();
    let search = |(task, text): &(String, String)| {
        let query = TermQuery::new(text, 10).with_exclude_source_task(task.as_str());
        store.search(&query, &Bm25).unwrap()
    };
    // The first search of a cached store loads the scope's index: not what is measured.
    assert!(!search(queries.first().unwrap()).is_empty(), "no results");
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(search);
}

mod search {
    use super::*;

    #[divan::bench(sample_count = 300)]
    fn cached_workload_query(bencher: Bencher<'_, '_>) {
        bench_search(bencher, true, whole);
    }

    #[divan::bench(sample_count = 300)]
    fn cached_short_query(bencher: Bencher<'_, '_>) {
        bench_search(bencher, true, short);
    }

    #[divan::bench(sample_count = 100, sample_size = 1)]
    fn cached_after_another_write(bencher: Bencher<'_, '_>) {
        let (scope, queries) = search_scope();
        let reader = open(scope, true);
        let writer = open(scope, true);
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

    #[divan::bench(args = [1, 4], sample_count = 30, sample_size = 1)]
    fn cached_threads_one_store(bencher: Bencher<'_, '_>, threads: usize) {
        let (scope, queries) = search_scope();
        let store = open(scope, true);
        let texts: Vec<String> = queries.iter().map(|(_, text)| short(text)).collect();
        let search = |text: &str| store.search(&TermQuery::new(text, 10), &Bm25).unwrap();
        assert!(!search(texts.first().unwrap()).is_empty(), "no results");
        bencher
            .counter(ItemsCount::new(threads * 10))
            .bench_local(|| {
                std::thread::scope(|scope| {
                    for thread in 0..threads {
                        let (texts, search) = (&texts, &search);
                        scope.spawn(move || {
                            for text in texts.iter().cycle().skip(thread * 10).take(10) {
                                search(text);
                            }
                        });
                    }
                });
            });
    }

    /// A process's first search: the cache loads the whole scope.
    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn cached_first_search(bencher: Bencher<'_, '_>) {
        let (scope, queries) = search_scope();
        let text = short(&queries.first().unwrap().1);
        bencher
            .with_inputs(|| open(scope, true))
            .bench_local_values(|store| {
                let query = TermQuery::new(&text, 10);
                store.search(&query, &Bm25).unwrap()
            });
    }

    #[divan::bench(sample_count = 30)]
    fn gin_workload_query(bencher: Bencher<'_, '_>) {
        bench_search(bencher, false, whole);
    }

    #[divan::bench(sample_count = 100)]
    fn gin_short_query(bencher: Bencher<'_, '_>) {
        bench_search(bencher, false, short);
    }
}

mod open {
    use super::*;

    #[divan::bench(sample_count = 50, sample_size = 1)]
    fn own_database(bencher: Bencher<'_, '_>) {
        bencher
            .with_inputs(|| fresh_scope("open"))
            .bench_local_values(|scope| open(&scope, true));
    }

    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn shared_database(bencher: Bencher<'_, '_>) {
        let database =
            PgDatabase::connect_with(&url().expect("FACTMEM_PG_URL"), PgOptions::default())
                .unwrap();
        bencher
            .with_inputs(|| fresh_scope("open"))
            .bench_local_values(|scope| {
                database
                    .open(&scope, unbounded(), Arc::new(ManualClock::default()))
                    .unwrap()
            });
    }
}

/// Nearest-neighbour search over the embeddings of 100,000 facts.
mod nearest {
    use super::*;

    /// The scope holding the facts and their embeddings, loaded at the first call; or the
    /// scope `FACTMEM_BENCH_VECTOR_SCOPE` names, which an earlier run loaded (its setup
    /// line names it), to measure without the setup's load on the server (autovacuum
    /// runs over a fresh 150 MB of vectors for a while after it).
    fn scope() -> &'static str {
        static SCOPE: OnceLock<String> = OnceLock::new();
        SCOPE.get_or_init(|| {
            if let Ok(scope) = std::env::var("FACTMEM_BENCH_VECTOR_SCOPE") {
                return scope;
            }
            let scope = fresh_scope("vectors");
            vectors::load_nearest(
                &open(&scope, true),
                &format!("postgres nearest setup, scope {scope}"),
            );
            scope
        })
    }

    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn first_search(bencher: Bencher<'_, '_>) {
        let scope = scope();
        vectors::bench_first_search(bencher, || open(scope, true));
    }

    #[divan::bench(sample_count = 300)]
    fn warm(bencher: Bencher<'_, '_>) {
        vectors::bench_warm(bencher, &open(scope(), true), 100);
    }
}

/// Read replicas (with `FACTMEM_PG_REPLICA_URL`, a hot standby of the server:
/// `.ci/pg-server start-standby`): `history` of one subject of a scope of 1,000 facts,
/// answered by the primary (no replicas) or by the standby (the store wrote nothing since
/// the standby replayed it: no check); `write_then_read`: an `add` of one fact then its
/// `history`, the read waiting for the standby to replay the write (or, past the 50 ms
/// bound, the primary answering), on the standby's store and, for comparison, on the
/// primary's. The run prints how the reads were served.
mod replica {
    use fact_model::SourceRole;

    use super::*;

    fn replica_url() -> Option<String> {
        std::env::var("FACTMEM_PG_REPLICA_URL")
            .ok()
            .filter(|url| !url.is_empty())
    }

    /// A database with the standby as replica (`None` without one: the benches measure
    /// the primary twice).
    fn database(replicas: bool) -> PgDatabase {
        let url = url().expect("FACTMEM_PG_URL");
        let replicas: Vec<String> = replicas.then(replica_url).flatten().into_iter().collect();
        PgDatabase::connect_with_replicas(&url, &replicas, PgOptions::default()).unwrap()
    }

    fn one(subject: &str, relation: &str, object: &str, secs: i64) -> SessionFact {
        SessionFact::builder(subject, relation, object)
            .tag(fact_model::Tag::Decision)
            .source("bench", SourceRole::Implementer)
            .valid_from(fact_model::Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap())
            .build()
            .unwrap()
    }

    /// A store of a fresh scope with 1,000 facts about 100 subjects.
    fn filled(database: &PgDatabase) -> PgFactStore {
        let store = database
            .open(
                &fresh_scope("replica"),
                unbounded(),
                Arc::new(ManualClock::default()),
            )
            .unwrap();
        let facts: Vec<SessionFact> = (0..1_000)
            .map(|n| one(&format!("s{}", n % 100), &format!("r{n}"), "x", n))
            .collect();
        store.add(facts).unwrap();
        store
    }

    fn history(bencher: Bencher<'_, '_>, replicas: bool) {
        let database = database(replicas);
        let store = filled(&database);
        // Once, so the standby is known to have replayed the fill.
        assert_eq!(store.history("s1").unwrap().len(), 10);
        let mut n = 0usize;
        bencher.bench_local(|| {
            n += 1;
            store.history(&format!("s{}", n % 100)).unwrap()
        });
        eprintln!(
            "history, replicas {replicas}: {:?}",
            database.replica_stats()
        );
    }

    #[divan::bench(sample_count = 300)]
    fn history_on_the_primary(bencher: Bencher<'_, '_>) {
        history(bencher, false);
    }

    #[divan::bench(sample_count = 300)]
    fn history_on_the_replica(bencher: Bencher<'_, '_>) {
        history(bencher, true);
    }

    fn write_then_read(bencher: Bencher<'_, '_>, replicas: bool) {
        let database = database(replicas);
        let store = filled(&database);
        let mut n = 10_000i64;
        bencher.bench_local(|| {
            n += 1;
            store.add(vec![one("w", &format!("r{n}"), "x", n)]).unwrap();
            store.history("w").unwrap()
        });
        eprintln!(
            "write then read, replicas {replicas}: {:?}",
            database.replica_stats()
        );
    }

    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn write_then_read_on_the_primary(bencher: Bencher<'_, '_>) {
        write_then_read(bencher, false);
    }

    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn write_then_read_on_the_replica(bencher: Bencher<'_, '_>) {
        write_then_read(bencher, true);
    }
}

//! One scope of 1,000,000 facts, on SQLite and on PostgreSQL (issue 24, item 3). Run with
//! `cargo bench -p dispatch-runtime --features sqlite,postgres --bench scale -- sqlite` and, against the server
//! `FACTMEM_PG_URL` names, `cargo bench -p dispatch-runtime --features sqlite,postgres --bench scale -- postgres` (one
//! backend per process, so that each process's peak RSS is its own backend's).
//! `FACTMEM_SCALE_FACTS` sets the size (default 1,000,000), `FACTMEM_SCALE_BATCHES` how
//! many batches of 100 the load adds per call (default 1).
//!
//! The scope is built once per process, through the public API: `add` of batches of 100
//! workload facts (`../shared/bench/dispatch_workload.py`'s generator, as fact-store's
//! benches shape them: status, summaries, changed files, tests, review issues, fixes), one
//! transaction each. Test commands and issue files repeat across tasks, so about one fact
//! in eight supersedes an earlier one, and the store keeps its history. While it loads,
//! the ingest rate of every tenth of the facts, the process's RSS and the database's size
//! are printed to stderr (`scale:` lines): the growth the 10,000,000-fact case is
//! extrapolated from.
//!
//! - `*::insert_batch_of_100`: one `add` of 100 new workload facts (one transaction) into
//!   the scope at 100,000 facts (a store of its own) and at 1,000,000 (the big scope);
//!   divan's counter gives facts/s.
//! - `*::search_warm_*`: one search (limit 10, BM25, the querying task excluded) with the
//!   search cache loaded, cycling through the workload's queries: `short` is a query's
//!   first three words, `workload` the generator's 40 words.
//! - `*::search_cold_first`: a freshly opened store's first search (which loads the cache).
//! - `*::search_uncached_short`: a store with the search cache off (the database's index
//!   finds and scores the candidates).
//! - `*::recall`: `fact_retrieve::recall` (what `MemoryService::recall` runs without an
//!   embedder: the facts' search, the episodes' search, the rendering) with the whole
//!   task description as the question.
//!
//! Automatic compaction is off, so the size is what the argument says.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fact-store/benches/support/facts.rs"]
mod facts;
#[path = "../../fact-store/benches/support/search.rs"]
mod search_support;
#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use divan::Bencher;
use divan::counter::ItemsCount;
use fact_model::{CharsPerToken, ManualClock, SessionFact, Timestamp};
use fact_retrieve::{RecallQuery, recall};
use fact_store::{EpisodeStore, SessionFactStore, TermQuery};
use search_support::{Bm25, unbounded};

fn main() {
    divan::main();
    // The stores live in statics, which are never dropped: their files go here.
    let _ = std::fs::remove_dir_all(scratch());
}

/// This process's folder for its databases, removed when the benchmarks end.
fn scratch() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("factmem-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The size of the big scope.
fn size() -> usize {
    std::env::var("FACTMEM_SCALE_FACTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// How many batches of 100 the load adds at once (`FACTMEM_SCALE_BATCHES`, default 1): 10
/// loads a PostgreSQL scope several times faster when only the searches are measured (the
/// ingest figures are then those of batches of 1,000).
fn batches_per_add() -> usize {
    std::env::var("FACTMEM_SCALE_BATCHES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Batches of 100 workload facts (whole task results, cut at 100), for `tasks` tasks
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

/// A line of the load's progress on stderr.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "scale: {line}");
}

/// `VmRSS` and `VmHWM` of this process, in MiB.
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The CPU time (user and system) this process has used, in seconds: a rate per CPU
/// second is what the load costs, whatever else runs on the machine.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 12th
    // and 13th of them, in clock ticks (100 per second on Linux).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

/// Adds batches of 100 until `store` holds `size` facts (stored versions, history
/// included); prints the rate of every tenth; returns the tasks not used and the batches
/// left over of the last chunk.
fn fill<'w>(
    name: &str,
    store: &dyn SessionFactStore,
    tasks: &'w [workload::Task],
    size: usize,
    disk: &dyn Fn() -> f64,
) -> &'w [workload::Task] {
    let step = (size / 10).max(1);
    let mut used = 0;
    let mut stored = store.stored_count().unwrap();
    let mut next_report = stored + step;
    let (mut window_start, mut window_facts) = (Instant::now(), 0usize);
    let mut window_cpu = cpu_seconds();
    let started = Instant::now();
    while stored < size {
        let chunk = tasks.get(used..used + 50).expect("workload too small");
        for batches in batches_of_100(chunk, used as i64).chunks(batches_per_add()) {
            let batch = batches.concat();
            window_facts += batch.len();
            store.add(batch).unwrap();
        }
        used += 50;
        stored = store.stored_count().unwrap();
        if stored >= next_report || stored >= size {
            let rate = window_facts as f64 / window_start.elapsed().as_secs_f64();
            let cpu = cpu_seconds();
            let cpu_rate = window_facts as f64 / (cpu - window_cpu).max(0.01);
            window_cpu = cpu;
            let (rss, hwm) = rss();
            say(&format!(
                "{name} fill: {stored} stored, {} valid, {rate:.0} facts/s ({cpu_rate:.0} per CPU second) \
                 over the last {window_facts}, {:.1} s in all, database {:.1} MiB, RSS {rss:.0} MiB \
                 (peak {hwm:.0})",
                store.valid_count().unwrap(),
                started.elapsed().as_secs_f64(),
                disk(),
            ));
            next_report += step;
            (window_start, window_facts) = (Instant::now(), 0);
        }
    }
    tasks.get(used..).unwrap_or_default()
}

fn short(text: &str) -> String {
    text.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

/// Searches `store` cycling through `queries`, after a first search not measured.
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
    let search = |(task, text): &(String, String)| {
        let query = TermQuery::new(text, 10).with_exclude_source_task(task.as_str());
        store.search(&query, &Bm25).unwrap()
    };
    assert!(!search(queries.first().unwrap()).is_empty(), "no results");
    let (rss, hwm) = rss();
    say(&format!(
        "after the first search: RSS {rss:.0} MiB (peak {hwm:.0})"
    ));
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(search);
}

/// `recall` with each task description in turn.
fn bench_recall<S: SessionFactStore + EpisodeStore>(
    bencher: Bencher<'_, '_>,
    store: &S,
    queries: &[(String, String)],
) {
    let counter = CharsPerToken::default();
    let run = |text: &String| recall(store, store, &RecallQuery::new(text), &counter).unwrap();
    assert!(!run(&queries.first().unwrap().1).text.is_empty());
    let mut next = queries.iter().map(|(_, text)| text).cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(run);
}

/// Adds the next batch of 100 to `store` per sample.
fn bench_insert(bencher: Bencher<'_, '_>, store: &dyn SessionFactStore, tasks: &[workload::Task]) {
    let mut batches = batches_of_100(tasks, 1_000_000_000).into_iter();
    bencher
        .counter(ItemsCount::new(100usize))
        .with_inputs(|| batches.next().expect("spare batches ran out"))
        .bench_local_values(|batch| store.add(batch).unwrap());
}

mod sqlite {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use fact_store_sqlite::{SqliteFactStore, SqliteOptions};

    const SCOPE: &str = "spec:scale";

    /// The big scope's file, its writing store, the tasks left and the queries.
    struct Big {
        _dir: tempfile::TempDir,
        path: PathBuf,
        store: SqliteFactStore,
        workload: workload::Workload,
        /// The first task not loaded.
        used: usize,
    }

    fn open(path: &Path, options: SqliteOptions) -> SqliteFactStore {
        SqliteFactStore::open_with(
            path,
            SCOPE,
            unbounded(),
            options,
            Arc::new(ManualClock::default()),
        )
        .unwrap()
    }

    /// The database file and its write-ahead log, in MiB.
    fn disk(path: &Path) -> f64 {
        let len = |p: PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        (len(path.to_path_buf()) + len(wal)) as f64 / (1024.0 * 1024.0)
    }

    /// A file holding `size` facts of the scope.
    fn build(size: usize) -> Big {
        let dir = tempfile::tempdir_in(scratch()).unwrap();
        let path = dir.path().join("scale.db");
        let store = open(&path, SqliteOptions::default());
        let workload = workload::generate(size * 3 / 2 + 200_000, 500, 42);
        let spare = fill("sqlite", &store, &workload.tasks, size, &|| disk(&path));
        say(&format!(
            "sqlite: {size} facts, database {:.1} MiB",
            disk(&path)
        ));
        let used = workload.tasks.len() - spare.len();
        Big {
            _dir: dir,
            path,
            store,
            workload,
            used,
        }
    }

    impl Big {
        fn spare(&self) -> &[workload::Task] {
            self.workload.tasks.get(self.used..).unwrap()
        }
    }

    fn big() -> &'static Big {
        static BIG: OnceLock<Big> = OnceLock::new();
        BIG.get_or_init(|| build(size()))
    }

    #[divan::bench(args = [100_000, 1_000_000], sample_count = 200, sample_size = 1)]
    fn insert_batch_of_100(bencher: Bencher<'_, '_>, at: usize) {
        if at == 1_000_000 || at >= size() {
            let big = big();
            bench_insert(bencher, &big.store, big.spare());
        } else {
            let small = build(at);
            bench_insert(bencher, &small.store, small.spare());
        }
    }

    #[divan::bench(sample_count = 300)]
    fn search_warm_short(bencher: Bencher<'_, '_>) {
        let big = big();
        bench_search(bencher, &big.store, &big.workload.queries, short);
    }

    #[divan::bench(sample_count = 100)]
    fn search_warm_workload(bencher: Bencher<'_, '_>) {
        let big = big();
        bench_search(bencher, &big.store, &big.workload.queries, |t| t.to_owned());
    }

    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn search_cold_first(bencher: Bencher<'_, '_>) {
        let big = big();
        let text = short(&big.workload.queries.first().unwrap().1);
        bencher
            .with_inputs(|| open(&big.path, SqliteOptions::default()))
            .bench_local_values(|store| store.search(&TermQuery::new(&text, 10), &Bm25).unwrap());
    }

    #[divan::bench(sample_count = 100)]
    fn search_uncached_short(bencher: Bencher<'_, '_>) {
        let big = big();
        let store = open(&big.path, SqliteOptions::default().with_search_cache(false));
        bench_search(bencher, &store, &big.workload.queries, short);
    }

    #[divan::bench(sample_count = 100)]
    fn recall(bencher: Bencher<'_, '_>) {
        let big = big();
        bench_recall(bencher, &big.store, &big.workload.queries);
    }
}

mod postgres {
    use super::*;
    use std::sync::OnceLock;

    use fact_store_postgres::{PgFactStore, PgOptions};

    fn url() -> String {
        std::env::var("FACTMEM_PG_URL").expect("FACTMEM_PG_URL names the server")
    }

    fn open(scope: &str, search_cache: bool) -> PgFactStore {
        PgFactStore::open_with(
            url(),
            scope,
            unbounded(),
            PgOptions::default().with_search_cache(search_cache),
            Arc::new(ManualClock::default()),
        )
        .unwrap()
    }

    /// The size of the database and of the fact store's tables, in MiB.
    fn disk() -> f64 {
        let mut client = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
        let bytes: i64 = client
            .query_one("SELECT pg_database_size(current_database())", &[])
            .unwrap()
            .get(0);
        bytes as f64 / (1024.0 * 1024.0)
    }

    /// The scope's name, its writing store, the tasks left and the queries.
    struct Big {
        scope: String,
        store: PgFactStore,
        workload: workload::Workload,
        /// The first task not loaded.
        used: usize,
    }

    fn build(size: usize) -> Big {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let scope = format!("bench:scale:{size}:{nanos}");
        let store = open(&scope, true);
        let workload = workload::generate(size * 3 / 2 + 200_000, 500, 42);
        let spare = fill("postgres", &store, &workload.tasks, size, &disk);
        let mut client = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
        for row in client
            .query(
                "SELECT c.relname::text, pg_total_relation_size(c.oid) FROM pg_class AS c \
                 JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relkind = 'r' \
                 AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
                 ORDER BY 2 DESC LIMIT 6",
                &[],
            )
            .unwrap()
        {
            let (name, bytes): (String, i64) = (row.get(0), row.get(1));
            say(&format!(
                "postgres table {name}: {:.1} MiB with its indexes and TOAST",
                bytes as f64 / (1024.0 * 1024.0)
            ));
        }
        say(&format!(
            "postgres: {size} facts, database {:.1} MiB",
            disk()
        ));
        let used = workload.tasks.len() - spare.len();
        Big {
            scope,
            store,
            workload,
            used,
        }
    }

    impl Big {
        fn spare(&self) -> &[workload::Task] {
            self.workload.tasks.get(self.used..).unwrap()
        }
    }

    fn big() -> &'static Big {
        static BIG: OnceLock<Big> = OnceLock::new();
        BIG.get_or_init(|| build(size()))
    }

    #[divan::bench(args = [100_000, 1_000_000], sample_count = 200, sample_size = 1)]
    fn insert_batch_of_100(bencher: Bencher<'_, '_>, at: usize) {
        if at == 1_000_000 || at >= size() {
            let big = big();
            bench_insert(bencher, &big.store, big.spare());
        } else {
            let small = build(at);
            bench_insert(bencher, &small.store, small.spare());
        }
    }

    #[divan::bench(sample_count = 300)]
    fn search_warm_short(bencher: Bencher<'_, '_>) {
        let big = big();
        bench_search(bencher, &big.store, &big.workload.queries, short);
    }

    #[divan::bench(sample_count = 100)]
    fn search_warm_workload(bencher: Bencher<'_, '_>) {
        let big = big();
        bench_search(bencher, &big.store, &big.workload.queries, |t| t.to_owned());
    }

    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn search_cold_first(bencher: Bencher<'_, '_>) {
        let big = big();
        let text = short(&big.workload.queries.first().unwrap().1);
        bencher
            .with_inputs(|| open(&big.scope, true))
            .bench_local_values(|store| store.search(&TermQuery::new(&text, 10), &Bm25).unwrap());
    }

    #[divan::bench(sample_count = 100)]
    fn search_uncached_short(bencher: Bencher<'_, '_>) {
        let big = big();
        let store = open(&big.scope, false);
        bench_search(bencher, &store, &big.workload.queries, short);
    }

    #[divan::bench(sample_count = 100)]
    fn recall(bencher: Bencher<'_, '_>) {
        let big = big();
        bench_recall(bencher, &big.store, &big.workload.queries);
    }
}

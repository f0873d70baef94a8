//! Many scopes under one [`CacheBudget`]: process memory and search latency with the
//! search caches of every scope sharing a budget, against today's unbounded caches. Run
//! with `cargo bench -p fact-store --features sqlite --bench cache_budget`.
//!
//! Two SQLite files of the shared dispatch workload (built once, kept in the target
//! directory): 1,000 scopes of 1,000 facts, and 10 scopes of 100,000. For each file and
//! each budget (unbounded, 64 MiB, 256 MiB) a fresh process (this binary again, so each
//! figure of memory is its own) opens one store per scope, all sharing the budget, then:
//!
//! - touches every scope once, in order: one search each (the first, which loads the
//!   scope's cache), and reads `VmRSS` and `VmHWM` from `/proc/self/status`;
//! - **hot**: the p50 of 200 searches of the last scope touched (its cache loaded);
//! - **cold**: the p50 of the first search of each evicted scope (at most 50), the
//!   least recently used first, each timed alone (the scope's cache reload, if any, is
//!   waited for before the next).
//!
//! Queries are the workload's task descriptions cut to their first three words (a
//! question's length), with BM25 and limit 10. `FACTMEM_CACHE_BENCH=small` runs a
//! reduced set (100 × 1,000 and 2 × 100,000) for a quick look;
//! `FACTMEM_CACHE_BENCH_ONLY=1000x1000` one workload. With `FACTMEM_CACHE_BENCH_PG=1`
//! and `FACTMEM_PG_URL`, the same on PostgreSQL (schema `cachebench`, filled once): every
//! store opened from one `PgDatabase`, so the scopes share one pool of connections.
//!
//! The SQLite stores are opened as `DatabaseHandle` opens them: every scope's store from
//! one `SqliteDatabase`, sharing its connections (`FACTMEM_CACHE_BENCH_OWN_CONNECTIONS=1`
//! gives each store its own, as before), and under a bounded budget with no memory map
//! (`mmap_size` 0) and a page cache of 2 MiB per connection
//! (`FACTMEM_CACHE_BENCH_PAGE_KIB` changes it; `FACTMEM_CACHE_BENCH_MMAP=1` keeps the
//! single-store defaults, 256 MiB of map and 32 MiB of cache, for comparison).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::indexing_slicing
)]

#[path = "../../fact-store/benches/support/facts.rs"]
mod facts;
#[path = "../../fact-store/benches/support/search.rs"]
mod search_support;
#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fact_model::{ManualClock, SessionFact, Timestamp};
use fact_store::{SessionFactStore, TermQuery};
use fact_store_sqlite::{CacheBudget, SqliteDatabase, SqliteFactStore, SqliteOptions};
use search_support::{Bm25, unbounded};

/// The budgets measured, in MiB (`None`: unbounded, as stores were before budgets).
const BUDGETS: [Option<usize>; 3] = [None, Some(64), Some(256)];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("fts") {
        fts_only(Path::new(&args[2]), args[3].parse().unwrap());
        return;
    }
    if args.get(1).map(String::as_str) == Some("child") {
        let scopes: usize = args[3].parse().unwrap();
        let budget = args[4].parse::<usize>().ok();
        child(Path::new(&args[2]), scopes, budget);
        return;
    }
    if args.get(1).map(String::as_str) == Some("child-pg") {
        let scopes: usize = args[3].parse().unwrap();
        let budget = args[4].parse::<usize>().ok();
        child_pg(&args[2], &args[5], scopes, budget);
        return;
    }
    let small = std::env::var("FACTMEM_CACHE_BENCH").is_ok_and(|v| v == "small");
    let workloads: [(usize, usize); 2] = if small {
        [(100, 1_000), (2, 100_000)]
    } else {
        [(1_000, 1_000), (10, 100_000)]
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cache-budget");
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "| scopes × facts | budget | caches after touching all | evictions | VmRSS | VmHWM | first touch p50 | hot p50 | cold p50 (evicted) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let only = std::env::var("FACTMEM_CACHE_BENCH_ONLY").ok();
    let pg = std::env::var("FACTMEM_CACHE_BENCH_PG").is_ok_and(|v| v == "1");
    let pg_url = std::env::var("FACTMEM_PG_URL").ok().filter(|_| pg);
    for (scopes, facts) in workloads {
        if only
            .as_ref()
            .is_some_and(|only| *only != format!("{scopes}x{facts}"))
        {
            continue;
        }
        let mut runs: Vec<(&str, String)> = Vec::new();
        if let Some(url) = &pg_url {
            build_pg(url, scopes, facts);
            runs.push(("child-pg", url.clone()));
        } else {
            let path = build(&dir, scopes, facts);
            runs.push(("child", path.display().to_string()));
        }
        for ((mode, target), budget) in runs
            .iter()
            .flat_map(|run| BUDGETS.iter().map(move |budget| (run, *budget)))
        {
            let output = Command::new(std::env::current_exe().unwrap())
                .arg(mode)
                .arg(target)
                .arg(scopes.to_string())
                .arg(budget.map_or("unbounded".to_owned(), |mb| mb.to_string()))
                .arg(format!("{scopes}x{facts}:"))
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            print!("{}", String::from_utf8_lossy(&output.stdout));
        }
    }
}

/// The file of `scopes` scopes of `facts` facts each, built unless a finished one is there.
fn build(dir: &Path, scopes: usize, facts: usize) -> PathBuf {
    let path = dir.join(format!("scopes-{scopes}x{facts}.db"));
    let done = path.with_extension("done");
    if done.exists() {
        return path;
    }
    let _ = std::fs::remove_file(&path);
    let started = Instant::now();
    let clock = Arc::new(ManualClock::default());
    for scope in 0..scopes {
        let options = SqliteOptions::default().with_search_cache(false);
        let store =
            SqliteFactStore::open_with(&path, &name(scope), unbounded(), options, clock.clone())
                .unwrap();
        // Later facts supersede some earlier ones: add until `facts` are valid.
        let workload = workload::generate(facts * 2 + 200, 0, 42 + scope as u64);
        let mut batch: Vec<SessionFact> = Vec::new();
        'tasks: for (n, task) in workload.tasks.iter().enumerate() {
            let at = Timestamp::from_unix_secs(n as i64).unwrap();
            for part in facts::task_batches(task, at) {
                batch.extend(part);
                if batch.len() >= 100 {
                    store.add(std::mem::take(&mut batch)).unwrap();
                    if store.valid_count().unwrap() >= facts {
                        break 'tasks;
                    }
                }
            }
        }
        assert!(
            store.valid_count().unwrap() >= facts,
            "the workload ran out"
        );
    }
    std::fs::write(&done, b"").unwrap();
    eprintln!(
        "built {} in {:.0} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    path
}

fn name(scope: usize) -> String {
    format!("user:{scope}")
}

/// The PostgreSQL options of the benchmark's stores.
fn pg_options() -> fact_store_postgres::PgOptions {
    fact_store_postgres::PgOptions::default().with_schema("cachebench")
}

/// Fills `scopes` scopes of `facts` facts on the server, unless the last one is full.
fn build_pg(url: &str, scopes: usize, facts: usize) {
    let database = fact_store_postgres::PgDatabase::connect_with(url, pg_options()).unwrap();
    let clock = Arc::new(ManualClock::default());
    let prefix = format!("{scopes}x{facts}:");
    let last = database
        .open(
            &format!("{prefix}{}", name(scopes - 1)),
            unbounded(),
            clock.clone(),
        )
        .unwrap();
    if last.valid_count().unwrap() >= facts {
        return;
    }
    let started = Instant::now();
    for scope in 0..scopes {
        let store = database
            .open(
                &format!("{prefix}{}", name(scope)),
                unbounded(),
                clock.clone(),
            )
            .unwrap();
        if store.valid_count().unwrap() >= facts {
            continue;
        }
        fill(&store, facts, scope);
    }
    eprintln!(
        "built {prefix} on PostgreSQL in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Adds workload facts to `store` until `facts` are valid.
fn fill(store: &dyn SessionFactStore, facts: usize, scope: usize) {
    // Later facts supersede some earlier ones: add until `facts` are valid.
    let workload = workload::generate(facts * 2 + 200, 0, 42 + scope as u64);
    let mut batch: Vec<SessionFact> = Vec::new();
    'tasks: for (n, task) in workload.tasks.iter().enumerate() {
        let at = Timestamp::from_unix_secs(n as i64).unwrap();
        for part in facts::task_batches(task, at) {
            batch.extend(part);
            if batch.len() >= 100 {
                store.add(std::mem::take(&mut batch)).unwrap();
                if store.valid_count().unwrap() >= facts {
                    break 'tasks;
                }
            }
        }
    }
    assert!(
        store.valid_count().unwrap() >= facts,
        "the workload ran out"
    );
}

/// One process: the stores of `scopes` scopes on the server, from one `PgDatabase` whose
/// options carry a budget of `budget_mb`.
fn child_pg(url: &str, prefix: &str, scopes: usize, budget_mb: Option<usize>) {
    let budget = budget_mb.map_or_else(CacheBudget::unbounded, |mb| CacheBudget::new(mb << 20));
    let database = fact_store_postgres::PgDatabase::connect_with(
        url,
        pg_options().with_cache_budget(budget.clone()),
    )
    .unwrap();
    let clock = Arc::new(ManualClock::default());
    let stores: Vec<fact_store_postgres::PgFactStore> = (0..scopes)
        .map(|scope| {
            database
                .open(
                    &format!("{prefix}{}", name(scope)),
                    unbounded(),
                    clock.clone(),
                )
                .unwrap()
        })
        .collect();
    measure(
        &stores,
        fact_store_postgres::PgFactStore::cache_bytes,
        &budget,
        budget_mb,
        "PostgreSQL",
    );
}

/// One process: the stores of `scopes` scopes of `path` under one budget of `budget_mb`.
fn child(path: &Path, scopes: usize, budget_mb: Option<usize>) {
    let budget = budget_mb.map_or_else(CacheBudget::unbounded, |mb| CacheBudget::new(mb << 20));
    let clock = Arc::new(ManualClock::default());
    let mut options = SqliteOptions::default().with_cache_budget(budget.clone());
    // As `DatabaseHandle` opens the stores of a bounded budget: no memory map and a small
    // page cache per connection (`FACTMEM_CACHE_BENCH_MMAP=1`: defaults).
    if budget_mb.is_some() && std::env::var("FACTMEM_CACHE_BENCH_MMAP").is_err() {
        let kib = std::env::var("FACTMEM_CACHE_BENCH_PAGE_KIB")
            .ok()
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(2048);
        options = options.with_mmap_size(0).with_page_cache_kib(kib);
    }
    // As `DatabaseHandle` opens them too: every store from one database, sharing its
    // connections (`FACTMEM_CACHE_BENCH_OWN_CONNECTIONS=1`: a connection per store, as
    // before).
    let database = SqliteDatabase::new(path, options.clone());
    let own = std::env::var("FACTMEM_CACHE_BENCH_OWN_CONNECTIONS").is_ok();
    let stores: Vec<SqliteFactStore> = (0..scopes)
        .map(|scope| {
            if own {
                SqliteFactStore::open_with(
                    path,
                    &name(scope),
                    unbounded(),
                    options.clone(),
                    clock.clone(),
                )
                .unwrap()
            } else {
                database
                    .open(&name(scope), unbounded(), clock.clone())
                    .unwrap()
            }
        })
        .collect();
    measure(
        &stores,
        SqliteFactStore::cache_bytes,
        &budget,
        budget_mb,
        "SQLite",
    );
}

/// Touches every store once, then measures memory, hot and cold searches; prints a row.
fn measure<S: SessionFactStore>(
    stores: &[S],
    cache_bytes: fn(&S) -> usize,
    budget: &CacheBudget,
    budget_mb: Option<usize>,
    backend: &str,
) {
    let scopes = stores.len();
    let queries = queries();
    let mut next = queries.iter().cycle();
    let mut search = |store: &S| {
        let query = TermQuery::new(next.next().unwrap(), 10);
        let started = Instant::now();
        let found = store.search(&query, &Bm25).unwrap();
        let took = started.elapsed();
        assert!(!found.is_empty());
        took
    };
    let first: Vec<Duration> = stores.iter().map(&mut search).collect();
    let (rss, hwm, anon) = memory();
    let (loaded, used) = (budget.loaded(), budget.used());
    let evictions = budget.evictions();
    let last = stores.last().unwrap();
    let hot: Vec<Duration> = (0..200).map(|_| search(last)).collect();
    let mut cold = Vec::new();
    for store in stores.iter().filter(|s| cache_bytes(s) == 0).take(50) {
        cold.push(search(store));
        // A reload may go on after the answer: let it end before the next is timed.
        let waited = Instant::now();
        while cache_bytes(store) == 0 && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let facts = stores.first().unwrap().valid_count().unwrap();
    println!(
        "| {backend} {scopes} × {facts} | {} | {loaded} ({:.0} MiB) | {evictions} | {} MiB ({} anon) | {} MiB | {} | {} | {} |",
        budget_mb.map_or("unbounded".to_owned(), |mb| format!("{mb} MiB")),
        used as f64 / f64::from(1 << 20),
        rss / 1024,
        anon / 1024,
        hwm / 1024,
        p50(first),
        p50(hot),
        if cold.is_empty() {
            "none evicted".to_owned()
        } else {
            format!("{} ({} scopes)", p50(cold.clone()), cold.len())
        },
    );
}

/// The queries every measure cycles through: the workload's task descriptions cut to
/// three words.
fn queries() -> Vec<String> {
    workload::generate(2_000, 200, 7)
        .queries
        .into_iter()
        .map(|(_, text)| text.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .collect()
}

/// The p50 of searches without any cache (FTS5 alone), one per scope and query, as the
/// floor of a search of an evicted scope that answers from the database.
fn fts_only(path: &Path, scopes: usize) {
    let clock = Arc::new(ManualClock::default());
    let options = SqliteOptions::default().with_search_cache(false);
    let stores: Vec<SqliteFactStore> = (0..scopes.min(50))
        .map(|scope| {
            SqliteFactStore::open_with(
                path,
                &name(scope),
                unbounded(),
                options.clone(),
                clock.clone(),
            )
            .unwrap()
        })
        .collect();
    let queries = queries();
    let mut times = Vec::new();
    for (store, text) in stores.iter().cycle().zip(queries.iter()).take(100) {
        let started = Instant::now();
        store.search(&TermQuery::new(text, 10), &Bm25).unwrap();
        times.push(started.elapsed());
    }
    println!("FTS5 alone (no cache), {scopes} scopes: p50 {}", p50(times));
}

/// `VmRSS`, `VmHWM` and `RssAnon` in KiB.
fn memory() -> (u64, u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"), field("RssAnon:"))
}

fn p50(mut times: Vec<Duration>) -> String {
    times.sort();
    let median = times[times.len() / 2];
    format!("{:.2} ms", median.as_secs_f64() * 1000.0)
}

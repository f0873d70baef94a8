//! Filtered search against unfiltered search, and `neighbours` at depth 2, at 100,000 valid
//! workload facts in one scope, in memory, on SQLite and on PostgreSQL (issue 35's goals).
//! One backend per run:
//!
//! ```text
//! cargo bench -p dispatch-runtime --features sqlite,postgres --bench filters -- memory
//! cargo bench -p dispatch-runtime --features sqlite,postgres --bench filters -- sqlite
//! cargo bench -p dispatch-runtime --features sqlite,postgres --bench filters -- postgres
//! ```
//!
//! (PostgreSQL on the server `FACTMEM_PG_URL` names, in a fresh scope.) `FACTMEM_FILTER_FACTS`
//! sets the size (default 100,000).
//!
//! Every fact carries three metadata keys: `n` (0 to 99: `metadata.n = 7` holds for 1%),
//! `ok` (`true` for half) and `project` (one of four: `metadata.project = "rlm"` holds for a
//! quarter).
//!
//! - `*::search_*`: one of the workload's 40-word queries, the ten best facts (BM25), with
//!   no filter or with one of the three; on SQLite and PostgreSQL through the store's
//!   search cache (the default), and as `*::uncached_*` through the database's own index
//!   (FTS5, GIN) with the filter compiled into its query.
//! - `*::neighbours_depth_2`: `MemoryService::neighbours(subject, 2, 100)` (the MCP tool's
//!   and the CLI's default limit), cycling through the subjects of the valid facts.
//! - `*::erase_scope` (issue 36): `LongTermStore::erase` of a scope holding as many facts
//!   (every version), filled anew before each sample in a scope of its own (on SQLite, in
//!   the same file as the others, so the erasure also zeroes its pages and checkpoints).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fact-store/benches/support/facts.rs"]
mod facts;
#[path = "../../fact-store/benches/support/search.rs"]
mod search_support;
#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::sync::Arc;

use dispatch_runtime::{MemoryService, ReadOptions};
use divan::Bencher;
use fact_model::{Filter, ManualClock, MetaValue, Metadata, SessionFact, Timestamp};
use fact_store::{LongTermStore, SessionFactStore, TermQuery};
use search_support::{Bm25, unbounded};

fn main() {
    divan::main();
}

/// How many valid facts each store holds.
fn size() -> usize {
    std::env::var("FACTMEM_FILTER_FACTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000)
}

/// The filters measured, by name; `None`: unfiltered.
const SELECTIVE: &str = "metadata.n = 7";
const BROAD: &str = "metadata.ok = true";
const EQUALITY: &str = r#"metadata.project = "rlm""#;

/// The metadata of the `n`-th fact added.
fn metadata(n: usize) -> Metadata {
    let projects = ["rlm", "factmem", "home", "work"];
    let project = projects.get(n % projects.len()).copied().unwrap_or("rlm");
    Metadata::from_pairs([
        ("n", MetaValue::Number((n % 100) as f64)),
        ("ok", MetaValue::Bool(n.is_multiple_of(2))),
        ("project", MetaValue::String(project.into())),
    ])
    .unwrap()
}

/// Adds workload facts, each with its metadata, in whole task results, until `store`
/// holds `size()` valid facts.
fn fill(name: &str, store: &dyn SessionFactStore) {
    let size = size();
    let started = std::time::Instant::now();
    let workload = workload::generate(size * 3 / 2, 0, 42);
    let mut added = 0;
    for (secs, task) in (1..).zip(workload.tasks.iter()) {
        if store.valid_count().unwrap() >= size {
            break;
        }
        let at = Timestamp::from_unix_secs(secs).unwrap();
        let batch: Vec<SessionFact> = facts::task_batches(task, at)
            .into_iter()
            .flatten()
            .map(|fact| {
                added += 1;
                fact.with_metadata(metadata(added))
            })
            .collect();
        store.add(batch).unwrap();
    }
    eprintln!(
        "filters: {name} holds {} valid facts ({} stored), loaded in {:.1} s",
        store.valid_count().unwrap(),
        store.stored_count().unwrap(),
        started.elapsed().as_secs_f64()
    );
}

/// Searches `store` for the workload's queries, with `filter` when given.
fn search(bencher: Bencher<'_, '_>, store: &dyn SessionFactStore, filter: Option<&str>) {
    let filter = filter.map(|text| Filter::parse_where(text).unwrap());
    let queries = workload::generate(13, 500, 7).queries;
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().map(|(_, text)| text.as_str()).unwrap_or(""))
        .bench_local_values(|text| {
            let query = TermQuery::new(text, 10);
            let query = match &filter {
                Some(filter) => query.with_filter(filter),
                None => query,
            };
            store.search(&query, &Bm25).unwrap()
        });
}

/// `neighbours` at depth 2 from each subject in turn.
fn neighbours(bencher: Bencher<'_, '_>, memory: &MemoryService, subjects: &[String]) {
    let read = ReadOptions::default();
    let mut next = subjects.iter().cycle();
    bencher
        .with_inputs(|| next.next().cloned().unwrap_or_default())
        .bench_local_values(|entity| {
            memory
                .neighbours(
                    &entity,
                    2,
                    dispatch_runtime::memory_protocol::DEFAULT_NEIGHBOURS,
                    &read,
                )
                .unwrap()
        });
}

/// A store as the memory service reads it, and the subjects to walk from.
struct Loaded {
    memory: MemoryService,
    subjects: Vec<String>,
}

impl Loaded {
    fn new(name: &str, store: Arc<dyn LongTermStore>) -> Loaded {
        fill(name, &*store);
        let mut subjects: Vec<String> = store
            .valid_facts()
            .unwrap()
            .iter()
            .map(|f| f.subject().to_owned())
            .collect();
        subjects.sort();
        subjects.dedup();
        // Spread over the alphabet, not grouped by kind of subject.
        let stride = (subjects.len() / 500).max(1);
        let subjects = subjects.into_iter().step_by(stride).collect();
        Loaded {
            memory: MemoryService::new(store, Arc::new(ManualClock::default())),
            subjects,
        }
    }
}

impl Loaded {
    fn facts(&self) -> &dyn SessionFactStore {
        &**self.memory.store()
    }
}

/// Erases a store filled with `size()` facts anew before each sample by `fresh`.
fn erase(bencher: Bencher<'_, '_>, fresh: fn(usize) -> Arc<dyn LongTermStore>) {
    let mut next = 0;
    bencher
        .with_inputs(|| {
            next += 1;
            let store = fresh(next);
            fill("erase", &*store);
            store
        })
        .bench_local_values(|store| store.erase().unwrap());
}

/// The benchmarks of every backend; `$loaded` is a `fn() -> &'static Loaded` and `$fresh`
/// a `fn(usize) -> Arc<dyn LongTermStore>`, a new empty scope for each number.
macro_rules! benches {
    ($loaded:path, $fresh:path) => {
        #[divan::bench(sample_count = 3, sample_size = 1)]
        fn erase_scope(bencher: Bencher<'_, '_>) {
            erase(bencher, $fresh);
        }

        #[divan::bench(sample_count = 300, sample_size = 1)]
        fn search_unfiltered(bencher: Bencher<'_, '_>) {
            search(bencher, $loaded().facts(), None);
        }

        /// A selective filter: 1% of the facts.
        #[divan::bench(sample_count = 300, sample_size = 1)]
        fn search_selective_1_percent(bencher: Bencher<'_, '_>) {
            search(bencher, $loaded().facts(), Some(SELECTIVE));
        }

        /// A broad filter: half of the facts.
        #[divan::bench(sample_count = 300, sample_size = 1)]
        fn search_broad_50_percent(bencher: Bencher<'_, '_>) {
            search(bencher, $loaded().facts(), Some(BROAD));
        }

        /// A metadata equality: a quarter of the facts.
        #[divan::bench(sample_count = 300, sample_size = 1)]
        fn search_metadata_equality(bencher: Bencher<'_, '_>) {
            search(bencher, $loaded().facts(), Some(EQUALITY));
        }

        #[divan::bench(sample_count = 300, sample_size = 1)]
        fn neighbours_depth_2(bencher: Bencher<'_, '_>) {
            let loaded = $loaded();
            neighbours(bencher, &loaded.memory, &loaded.subjects);
        }
    };
}

/// The searches of a database store with its search cache off; `$uncached` is a
/// `fn() -> &'static dyn SessionFactStore`.
macro_rules! uncached {
    ($uncached:path) => {
        #[divan::bench(sample_count = 100, sample_size = 1)]
        fn uncached_unfiltered(bencher: Bencher<'_, '_>) {
            search(bencher, $uncached(), None);
        }

        #[divan::bench(sample_count = 100, sample_size = 1)]
        fn uncached_selective_1_percent(bencher: Bencher<'_, '_>) {
            search(bencher, $uncached(), Some(SELECTIVE));
        }

        #[divan::bench(sample_count = 100, sample_size = 1)]
        fn uncached_broad_50_percent(bencher: Bencher<'_, '_>) {
            search(bencher, $uncached(), Some(BROAD));
        }

        #[divan::bench(sample_count = 100, sample_size = 1)]
        fn uncached_metadata_equality(bencher: Bencher<'_, '_>) {
            search(bencher, $uncached(), Some(EQUALITY));
        }
    };
}

mod memory {
    use super::*;
    use std::sync::OnceLock;

    use fact_store::InMemoryLongTermStore;

    fn loaded() -> &'static Loaded {
        static LOADED: OnceLock<Loaded> = OnceLock::new();
        LOADED.get_or_init(|| {
            let store = InMemoryLongTermStore::new(unbounded(), Arc::new(ManualClock::default()));
            Loaded::new("memory", Arc::new(store))
        })
    }

    fn fresh(_: usize) -> Arc<dyn LongTermStore> {
        Arc::new(InMemoryLongTermStore::new(
            unbounded(),
            Arc::new(ManualClock::default()),
        ))
    }

    benches!(loaded, fresh);
}

mod sqlite {
    use super::*;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use fact_store_sqlite::{SqliteFactStore, SqliteOptions};

    const SCOPE: &str = "bench:filters";

    /// The database file, kept for the process's life.
    fn path() -> &'static PathBuf {
        static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
        static PATH: OnceLock<PathBuf> = OnceLock::new();
        PATH.get_or_init(|| {
            let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
            dir.path().join("filters.db")
        })
    }

    fn open(search_cache: bool) -> SqliteFactStore {
        open_scope(SCOPE, search_cache)
    }

    fn open_scope(scope: &str, search_cache: bool) -> SqliteFactStore {
        SqliteFactStore::open_with(
            path(),
            scope,
            unbounded(),
            SqliteOptions::default().with_search_cache(search_cache),
            Arc::new(ManualClock::default()),
        )
        .unwrap()
    }

    fn fresh(n: usize) -> Arc<dyn LongTermStore> {
        Arc::new(open_scope(&format!("bench:erase:{n}"), true))
    }

    fn loaded() -> &'static Loaded {
        static LOADED: OnceLock<Loaded> = OnceLock::new();
        LOADED.get_or_init(|| Loaded::new("sqlite", Arc::new(open(true))))
    }

    fn uncached() -> &'static dyn SessionFactStore {
        static UNCACHED: OnceLock<SqliteFactStore> = OnceLock::new();
        loaded();
        UNCACHED.get_or_init(|| open(false))
    }

    benches!(loaded, fresh);
    uncached!(uncached);
}

mod postgres {
    use super::*;
    use std::sync::OnceLock;

    use fact_store_postgres::{PgFactStore, PgOptions};

    fn scope() -> &'static str {
        static SCOPE: OnceLock<String> = OnceLock::new();
        SCOPE.get_or_init(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("bench:filters:{nanos}")
        })
    }

    fn open(search_cache: bool) -> PgFactStore {
        open_scope(scope(), search_cache)
    }

    fn open_scope(scope: &str, search_cache: bool) -> PgFactStore {
        let url = std::env::var("FACTMEM_PG_URL").expect("FACTMEM_PG_URL names the server");
        PgFactStore::open_with(
            url,
            scope,
            unbounded(),
            PgOptions::default().with_search_cache(search_cache),
            Arc::new(ManualClock::default()),
        )
        .unwrap()
    }

    fn fresh(n: usize) -> Arc<dyn LongTermStore> {
        Arc::new(open_scope(&format!("{}:erase:{n}", scope()), true))
    }

    fn loaded() -> &'static Loaded {
        static LOADED: OnceLock<Loaded> = OnceLock::new();
        LOADED.get_or_init(|| Loaded::new("postgres", Arc::new(open(true))))
    }

    fn uncached() -> &'static dyn SessionFactStore {
        static UNCACHED: OnceLock<PgFactStore> = OnceLock::new();
        loaded();
        UNCACHED.get_or_init(|| open(false))
    }

    benches!(loaded, fresh);
    uncached!(uncached);
}

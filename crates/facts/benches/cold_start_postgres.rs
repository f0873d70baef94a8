//! Cold start of the one-shot memory commands on PostgreSQL (issue 23): each sample is a
//! new `facts mem search` or `facts mem recall --db postgres://…` process, from its start
//! to its exit, against a scope of 1,000, 100,000 or 1,000,000 generated facts
//! (`support/cold_start.rs`), cycling through 50 questions.
//!
//! Run with `FACTMEM_COLD_PG_URL=postgres://… cargo bench -p factmem-cli --bench
//! cold_start_postgres`: a database of its own, since a million facts are loaded into it
//! at the first run (kept for later runs, one scope per size); without the variable it
//! prints why and measures nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/cold_start.rs"]
mod cold_start;

use std::io::Write;
use std::sync::Arc;

use cold_start::{SIZES, fill, one_shot, queries, scope};
use dispatch_runtime::reexports::{PgFactStore, StoreConfig, SystemClock};
use divan::Bencher;

/// The environment variable that names the database.
const URL_ENV: &str = "FACTMEM_COLD_PG_URL";

fn main() {
    if url().is_none() {
        let _ = writeln!(
            std::io::stderr(),
            "{URL_ENV} is not set: the PostgreSQL cold-start benchmark is skipped; give it a \
             database of its own (a million facts are loaded into it)"
        );
        return;
    }
    divan::main();
}

fn url() -> Option<String> {
    std::env::var(URL_ENV).ok().filter(|url| !url.is_empty())
}

fn bench(bencher: Bencher<'_, '_>, size: usize, command: &'static str) {
    let url = url().unwrap();
    let scope = scope(size);
    {
        let config = StoreConfig::default()
            .with_capacity(usize::MAX)
            .with_history_limit(usize::MAX)
            .with_auto_compact(false);
        let store = PgFactStore::open(&url, &scope, config, Arc::new(SystemClock)).unwrap();
        fill(&store, size);
    }
    let queries = queries();
    one_shot(&url, &scope, command, &queries[0]);
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(|query| one_shot(&url, &scope, command, query));
}

#[divan::bench(args = SIZES, sample_count = 30, sample_size = 1)]
fn search(bencher: Bencher<'_, '_>, size: usize) {
    bench(bencher, size, "search");
}

#[divan::bench(args = SIZES, sample_count = 30, sample_size = 1)]
fn recall(bencher: Bencher<'_, '_>, size: usize) {
    bench(bencher, size, "recall");
}

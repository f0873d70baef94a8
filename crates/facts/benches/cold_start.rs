//! Cold start of the one-shot memory commands on SQLite (issue 23): each sample is a new
//! `facts mem search` or `facts mem recall` process, from its start to its exit, against a
//! database of 1,000, 100,000 or 1,000,000 generated facts (`support/cold_start.rs`),
//! cycling through 50 questions. Goal: `search` at 100,000 facts within 50 ms.
//!
//! Run with `cargo bench -p factmem-cli --bench cold_start`. The databases are built at
//! the first run (a million facts take a few minutes) into `cold-start/` in the target
//! directory, and kept for later runs; `cold_start_postgres` measures the same on
//! PostgreSQL. `FACTMEM_COLD_FACTS=PATH` times another build's `facts` binary instead
//! (a before and after on the same databases).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/cold_start.rs"]
mod cold_start;

use std::path::PathBuf;
use std::sync::Arc;

use cold_start::{SIZES, data_dir, fill, one_shot, queries, scope};
use dispatch_runtime::reexports::{SqliteFactStore, StoreConfig, SystemClock};
use divan::Bencher;

fn main() {
    divan::main();
}

/// The database of `size` facts, built when missing (into a temporary name first, so an
/// interrupted build is not taken for a finished one).
fn database(size: usize) -> PathBuf {
    let path = data_dir().join(format!("{}.db", scope(size).replace(':', "-")));
    if path.exists() {
        return path;
    }
    let building = path.with_extension("building");
    let store = SqliteFactStore::open(
        &building,
        &scope(size),
        StoreConfig::default()
            .with_capacity(usize::MAX)
            .with_history_limit(usize::MAX)
            .with_auto_compact(false),
        Arc::new(SystemClock),
    )
    .unwrap();
    fill(&store, size);
    drop(store);
    std::fs::rename(&building, &path).unwrap();
    path
}

fn bench(bencher: Bencher<'_, '_>, size: usize, command: &'static str) {
    let db = database(size).to_string_lossy().into_owned();
    let scope = scope(size);
    let queries = queries();
    // Once untimed: a database built by an older schema is migrated here, not measured.
    one_shot(&db, &scope, command, &queries[0]);
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(|query| one_shot(&db, &scope, command, query));
}

#[divan::bench(args = SIZES, sample_count = 30, sample_size = 1)]
fn search(bencher: Bencher<'_, '_>, size: usize) {
    bench(bencher, size, "search");
}

#[divan::bench(args = SIZES, sample_count = 30, sample_size = 1)]
fn recall(bencher: Bencher<'_, '_>, size: usize) {
    bench(bencher, size, "recall");
}

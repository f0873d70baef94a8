//! Store benchmarks: adding one batch of six dispatch facts to stores of 1k, 100k and 1M
//! facts; searching stores of 1k and 100k facts; exporting and importing a snapshot of
//! 100k facts, as JSON text and as a `Snapshot` value. Run with
//! `cargo bench -p fact-store --bench store`.
//!
//! Each store is filled from the shared dispatch workload (`../shared/bench/`, ported in
//! `support/workload.rs`), with automatic compaction off so the size is what the argument
//! says. Each sample of `add_batch_of_6` adds one new task's batch, so a store grows by 6
//! facts per sample (1,800 over a run): figures are per batch at N to N + 1,800 facts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/facts.rs"]
mod facts;
#[path = "support/search.rs"]
mod search_support;
#[path = "support/workload.rs"]
mod workload;

use std::sync::Arc;

use divan::Bencher;
use fact_model::{ManualClock, SessionFact, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, TermQuery};
use search_support::{Bm25, unbounded};

fn main() {
    divan::main();
}

/// A store of at least `size` facts, and the batches the benchmark will add.
fn filled(
    size: usize,
) -> (
    InMemorySessionFactStore,
    std::vec::IntoIter<Vec<SessionFact>>,
) {
    let store = InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()));
    // Tasks add about 17 facts, of which 13 or more stay valid: generate enough tasks for
    // `size` valid facts plus spare batches for the samples.
    let workload = workload::generate(size * 3 / 2 + 20_000, 0, 42);
    let mut tasks = workload.tasks.iter();
    let mut secs = 0;
    while store.valid_count().unwrap() < size {
        let Some(task) = tasks.next() else { break };
        secs += 1;
        let at = Timestamp::from_unix_secs(secs).unwrap();
        for batch in facts::task_batches(task, at) {
            store.add(batch).unwrap();
        }
    }
    let at = Timestamp::from_unix_secs(secs + 1).unwrap();
    let rest: Vec<_> = tasks.map(|task| facts::batch_of_six(task, at)).collect();
    assert!(
        store.valid_count().unwrap() >= size && rest.len() >= 1_000,
        "workload too small"
    );
    (store, rest.into_iter())
}

#[divan::bench(args = [1_000, 100_000, 1_000_000], sample_count = 300, sample_size = 1)]
fn add_batch_of_6(bencher: Bencher<'_, '_>, size: usize) {
    let (store, mut batches) = filled(size);
    bencher
        .with_inputs(|| batches.next().expect("spare batches ran out"))
        .bench_local_values(|batch| store.add(batch));
}

/// The store's own `search` (no retriever, no formatting): one of the workload's 40-word
/// queries per sample, the ten best facts.
#[divan::bench(args = [1_000, 100_000], sample_count = 500, sample_size = 1)]
fn search_40_words(bencher: Bencher<'_, '_>, size: usize) {
    let (store, _) = filled(size);
    let queries = workload::generate(13, 500, 7).queries;
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().map(|(_, text)| text.as_str()).unwrap_or(""))
        .bench_local_values(|text| {
            let query = TermQuery::new(text, 10);
            store.search(&query, &Bm25).unwrap()
        });
}

/// A store of exactly `versions` stored facts (valid and superseded) from the workload.
fn stored(versions: usize) -> InMemorySessionFactStore {
    let store = InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()));
    let workload = workload::generate(versions + 20_000, 0, 42);
    for (n, task) in workload.tasks.iter().enumerate() {
        let at = Timestamp::from_unix_secs(n as i64).unwrap();
        for mut batch in facts::task_batches(task, at) {
            batch.truncate(versions - store.stored_count().unwrap());
            store.add(batch).unwrap();
        }
        if store.stored_count().unwrap() >= versions {
            break;
        }
    }
    assert_eq!(
        store.stored_count().unwrap(),
        versions,
        "workload too small"
    );
    store
}

/// `export_snapshot` then `to_json` of 100,000 stored facts.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn snapshot_export_json_100k(bencher: Bencher<'_, '_>) {
    let store = stored(100_000);
    bencher.bench_local(|| store.export_snapshot().unwrap().to_json());
}

/// `import_snapshot` of the JSON of 100,000 stored facts into an empty store.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn snapshot_import_json_100k(bencher: Bencher<'_, '_>) {
    let json = stored(100_000).export_snapshot().unwrap().to_json();
    bencher
        .with_inputs(empty)
        .bench_local_refs(|store| store.import_snapshot(&json).unwrap());
}

/// `export_snapshot` of 100,000 stored facts: the store's part of an export.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn snapshot_export_100k(bencher: Bencher<'_, '_>) {
    let store = stored(100_000);
    bencher.bench_local(|| store.export_snapshot().unwrap());
}

/// `import` of a `Snapshot` of 100,000 stored facts into an empty store: the store's part
/// of an import.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn snapshot_import_100k(bencher: Bencher<'_, '_>) {
    let snapshot = stored(100_000).export_snapshot().unwrap();
    bencher
        .with_inputs(|| (empty(), Some(snapshot.clone())))
        .bench_local_refs(|(store, snapshot)| {
            store
                .import(snapshot.take().expect("one import per input"))
                .unwrap()
        });
}

fn empty() -> InMemorySessionFactStore {
    InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()))
}

//! Store benchmarks: adding one batch of six dispatch facts to stores of 1k, 100k and 1M
//! facts. Run with `cargo bench -p fact-store --bench store`.
//!
//! Each store is filled from the shared dispatch workload (`../shared/bench/`, ported in
//! `support/workload.rs`), with automatic compaction off so the size is what the argument
//! says. Each sample adds one new task's batch, so a store grows by 6 facts per sample
//! (1,800 over a run): figures are per batch at N to N + 1,800 facts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/facts.rs"]
mod facts;
#[path = "support/workload.rs"]
mod workload;

use std::sync::Arc;

use divan::Bencher;
use fact_model::{ManualClock, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};

fn main() {
    divan::main();
}

/// A store of at least `size` facts, and the batches the benchmark will add.
fn filled(
    size: usize,
) -> (
    InMemorySessionFactStore,
    std::vec::IntoIter<Vec<fact_model::SessionFact>>,
) {
    let config = StoreConfig {
        capacity: usize::MAX,
        history_limit: usize::MAX,
        auto_compact: false,
        ..StoreConfig::default()
    };
    let store = InMemorySessionFactStore::new(config, Arc::new(ManualClock::default()));
    // Tasks add about 17 facts, of which 13 or more stay valid: generate enough tasks for
    // `size` valid facts plus spare batches for the samples.
    let workload = workload::generate(size * 3 / 2 + 20_000, 0, 42);
    let mut tasks = workload.tasks.iter();
    let mut secs = 0;
    while store.valid_count() < size {
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
        store.valid_count() >= size && rest.len() >= 1_000,
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

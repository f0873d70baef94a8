//! Extraction benchmarks on the shared dispatch workload: one implementer result (5 files,
//! 2 follow-ups, 1 test run) and one reviewer result (3 issues, 2 required fixes).
//! Run with `cargo bench -p fact-extract --bench extract`.

#![allow(clippy::unwrap_used)]

#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::sync::Arc;

use divan::Bencher;
use fact_extract::{FactExtractor, RuleBasedFactExtractor};
use fact_model::{DispatchResult, ManualClock};

fn main() {
    divan::main();
}

const TASKS: usize = 1_000;

fn setup() -> (RuleBasedFactExtractor, workload::Workload) {
    let extractor = RuleBasedFactExtractor::with_defaults(Arc::new(ManualClock::default()));
    (extractor, workload::generate(TASKS * 13, 0, 42))
}

#[divan::bench(sample_count = 1000)]
fn implementer_result(bencher: Bencher<'_, '_>) {
    let (extractor, workload) = setup();
    let mut next = workload.tasks.iter().cycle();
    bencher
        .with_inputs(|| DispatchResult::Implementer(next.next().unwrap().implementer.clone()))
        .bench_local_refs(|result| extractor.extract(result, result.task_id()));
}

#[divan::bench(sample_count = 1000)]
fn reviewer_result(bencher: Bencher<'_, '_>) {
    let (extractor, workload) = setup();
    let mut next = workload.tasks.iter().cycle();
    bencher
        .with_inputs(|| DispatchResult::Reviewer(next.next().unwrap().reviewer.clone()))
        .bench_local_refs(|result| extractor.extract(result, result.task_id()));
}

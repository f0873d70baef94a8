//! Retrieval benchmarks on the shared dispatch workload: retrieve + format one query
//! (40 random domain words, as in `../shared/bench/`) against stores of 1,000 and 100,000
//! facts, made by the default rule extractor from the workload's results; and one query of
//! 6 MB (varied prose, or two words repeated), which is analyzed only up to the caps.
//! Run with `cargo bench -p fact-retrieve --bench retrieve`.

#![allow(clippy::unwrap_used)]

#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::sync::Arc;

use divan::Bencher;
use fact_extract::{FactExtractor, RuleBasedFactExtractor};
use fact_model::{DispatchResult, ManualClock};
use fact_retrieve::{Bm25, FactQuery, FactRetriever, IndexRetriever, KeywordOverlap};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig, TermWeighting};

fn main() {
    divan::main();
}

/// A store filled from the workload for `facts` (the generator's argument), and its queries.
fn setup(facts: usize) -> (Arc<dyn SessionFactStore>, Vec<FactQuery>) {
    let clock = Arc::new(ManualClock::default());
    let config = StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX);
    let store: Arc<dyn SessionFactStore> =
        Arc::new(InMemorySessionFactStore::new(config, clock.clone()));
    let extractor = RuleBasedFactExtractor::with_defaults(clock.clone());
    let workload = workload::generate(facts, 500, 42);
    for task in &workload.tasks {
        clock.advance(std::time::Duration::from_secs(1));
        let id = &task.implementer.task_id;
        store
            .add(
                extractor
                    .extract(&DispatchResult::Implementer(task.implementer.clone()), id)
                    .facts,
            )
            .unwrap();
        store
            .add(
                extractor
                    .extract(&DispatchResult::Reviewer(task.reviewer.clone()), id)
                    .facts,
            )
            .unwrap();
    }
    let queries = workload
        .queries
        .into_iter()
        .map(|(task, text)| FactQuery::new(task, text))
        .collect();
    (store, queries)
}

fn bench(bencher: Bencher<'_, '_>, facts: usize, weighting: Box<dyn TermWeighting>) {
    let (store, queries) = setup(facts);
    let retriever = IndexRetriever::new(store).with_weighting(weighting);
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(|query| retriever.retrieve(query).unwrap());
}

#[divan::bench(args = [1_000, 100_000], sample_count = 500)]
fn retrieve_and_format_bm25(bencher: Bencher<'_, '_>, facts: usize) {
    bench(bencher, facts, Box::new(Bm25::default()));
}

#[divan::bench(args = [1_000, 100_000], sample_count = 500)]
fn retrieve_and_format_overlap(bencher: Bencher<'_, '_>, facts: usize) {
    bench(bencher, facts, Box::new(KeywordOverlap));
}

/// A 6 MB task prompt: `varied` mixes the workload's query words with numbered words (new
/// terms throughout, so [`fact_retrieve::MAX_QUERY_TERMS`] cuts it); otherwise two words
/// repeat (so [`fact_retrieve::MAX_QUERY_BYTES`] cuts it).
fn long_query(queries: &[FactQuery], varied: bool) -> FactQuery {
    const BYTES: usize = 6 << 20;
    let words: Vec<&str> = queries
        .iter()
        .flat_map(|q| q.task_description.split_whitespace())
        .collect();
    let mut pool = words.iter().cycle();
    let mut text = String::with_capacity(BYTES + 32);
    let mut n = 0usize;
    while text.len() < BYTES {
        match (varied, n % 3) {
            (true, 0) => text.push_str(&format!("w{n}")),
            (true, _) => text.push_str(pool.next().unwrap()),
            (false, _) => text.push_str(if n.is_multiple_of(2) {
                "parser"
            } else {
                "lexer"
            }),
        }
        text.push(' ');
        n += 1;
    }
    FactQuery::new("long", text)
}

#[divan::bench(args = [true, false], sample_count = 50)]
fn retrieve_long_query(bencher: Bencher<'_, '_>, varied: bool) {
    let (store, queries) = setup(1_000);
    let query = long_query(&queries, varied);
    let retriever = IndexRetriever::new(store);
    bencher.bench_local(|| retriever.retrieve(&query).unwrap());
}

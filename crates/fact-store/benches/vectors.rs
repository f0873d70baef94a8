//! Vector search benchmarks: `nearest` (limit 20, no filter) on in-memory stores of 10k and
//! 100k facts with 384-dimensional embeddings, and, printed once to stderr, the recall@10
//! of the store's search against an exact brute-force scan over 100 queries at 100k. Run
//! with `cargo bench -p fact-store --bench vectors`.
//!
//! The embeddings are synthetic but clustered as sentence embeddings are (a topic
//! mixture: `support/vectors.rs`, shared with the SQLite and Postgres `nearest`
//! benchmarks); queries are fresh points of the same distribution, so their nearest
//! neighbours are not copies of them. The benchmark prints the mean cosine of their exact
//! 1st, 10th and 1000th neighbours with the recall. `VECTORS_BENCH_NOISE` sets the noise
//! (default 1.8; more noise flattens the neighbourhoods and makes any approximate search
//! harder).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/search.rs"]
mod search_support;
#[path = "support/vectors.rs"]
mod vectors;

use std::sync::{Arc, Mutex, OnceLock};

use divan::Bencher;
use fact_model::{FactId, ManualClock};
use fact_store::{InMemorySessionFactStore, SessionFactStore, VectorQuery};
use search_support::unbounded;
use vectors::{DIMENSION, MODEL, queries};

fn main() {
    divan::main();
}

/// A store of `size` facts, each with an embedding, and those embeddings by fact id.
struct Filled {
    store: InMemorySessionFactStore,
    vectors: Vec<(FactId, Vec<f32>)>,
}

fn build(size: usize) -> Filled {
    let store = InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()));
    let vectors = vectors::fill_embedded(&store, size).vectors;
    Filled { store, vectors }
}

fn filled(size: usize) -> &'static Filled {
    static BUILT: Mutex<Vec<(usize, &'static Filled)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap();
    if let Some((_, filled)) = built.iter().find(|(n, _)| *n == size) {
        return filled;
    }
    let filled: &'static Filled = Box::leak(Box::new(build(size)));
    built.push((size, filled));
    filled
}

/// The `k` nearest ids of `query` by an exact f64 scan, ties to the smaller id.
fn brute_force(vectors: &[(FactId, Vec<f32>)], query: &[f32], k: usize) -> Vec<FactId> {
    scored(vectors, query, k)
        .into_iter()
        .map(|(_, id)| id)
        .collect()
}

/// The cosines of the `k` nearest, best first.
fn brute_force_scores(vectors: &[(FactId, Vec<f32>)], query: &[f32], k: usize) -> Vec<f64> {
    scored(vectors, query, k)
        .into_iter()
        .map(|(score, _)| score)
        .collect()
}

fn scored(vectors: &[(FactId, Vec<f32>)], query: &[f32], k: usize) -> Vec<(f64, FactId)> {
    let mut scored: Vec<(f64, FactId)> = vectors
        .iter()
        .map(|(id, v)| {
            let score = v
                .iter()
                .zip(query)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum::<f64>();
            (score, *id)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(k);
    scored
}

/// Recall@10 of the store's search against [`brute_force`] over 100 queries.
fn recall_at_10(filled: &Filled) -> f64 {
    let vectors = filled.store.vectors().unwrap();
    let (mut hits, mut total) = (0, 0);
    let mut cos = (0.0, 0.0, 0.0);
    for query in queries(100) {
        let exact = brute_force(&filled.vectors, &query, 10);
        let found: Vec<FactId> = vectors
            .nearest(&VectorQuery::new(MODEL, &query, 10))
            .unwrap()
            .into_iter()
            .map(|s| s.fact.id())
            .collect();
        total += exact.len();
        hits += exact.iter().filter(|id| found.contains(id)).count();
        let neighbours = brute_force_scores(&filled.vectors, &query, 1_000);
        cos.0 += neighbours[0];
        cos.1 += neighbours[9];
        cos.2 += neighbours[999];
    }
    eprintln!(
        "mean cosine of the exact neighbours 1, 10 and 1000: {:.3}, {:.3}, {:.3}",
        cos.0 / 100.0,
        cos.1 / 100.0,
        cos.2 / 100.0
    );
    hits as f64 / total as f64
}

/// `nearest`, limit 20, no filter: one query per sample.
#[divan::bench(args = [10_000, 100_000], sample_count = 300, sample_size = 1)]
fn nearest_20(bencher: Bencher<'_, '_>, size: usize) {
    let filled = filled(size);
    static PRINTED: OnceLock<()> = OnceLock::new();
    if size == 100_000 {
        PRINTED.get_or_init(|| {
            eprintln!(
                "recall@10 against exact search, 100 queries, {size} facts of dimension \
                 {DIMENSION}: {:.3}",
                recall_at_10(filled)
            );
        });
    }
    vectors::bench_warm(bencher, &filled.store, 300);
}

//! Vector search benchmarks: `nearest` (limit 20, no filter) on in-memory stores of 10k and
//! 100k facts with 384-dimensional embeddings, and, printed once to stderr, the recall@10
//! of the store's search against an exact brute-force scan over 100 queries at 100k. Run
//! with `cargo bench -p fact-store --bench vectors`.
//!
//! The embeddings are synthetic but clustered as sentence embeddings are: a direction
//! every vector shares a little of (embedding models are anisotropic), a thousand topic
//! centres, and per vector a main topic, a random share of a second one (so
//! neighbourhoods are continuous, not separate balls) and noise. Queries are fresh points
//! of the same distribution, so their nearest neighbours are not copies of them; the
//! benchmark prints the mean cosine of their exact 1st, 10th and 1000th neighbours with
//! the recall. `VECTORS_BENCH_NOISE` sets the noise (default 1.8; more noise flattens
//! the neighbourhoods and makes any approximate search harder). A seeded xorshift
//! generates everything: every run measures the same data.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

#[path = "support/search.rs"]
mod search_support;

use std::sync::{Arc, Mutex, OnceLock};

use divan::Bencher;
use fact_model::{FactId, ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, VectorQuery};
use search_support::unbounded;

const DIMENSION: usize = 384;
const MODEL: &str = "bench/minilm-like";
const TOPICS: usize = 1_000;
/// The noise's norm relative to a topic's (`VECTORS_BENCH_NOISE` overrides it): at 1.8 a
/// query's nearest fact has a cosine of about 0.35, its tenth 0.30, its thousandth 0.14.
const DEFAULT_NOISE: f32 = 1.8;

fn main() {
    divan::main();
}

/// xorshift64*: small, seeded, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Roughly standard normal (a centred sum of four uniforms).
    fn normal(&mut self) -> f32 {
        let mut sum = 0.0;
        for _ in 0..4 {
            sum += (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        }
        (sum - 2.0) * 1.732
    }

    fn gaussian(&mut self, dimension: usize) -> Vec<f32> {
        (0..dimension).map(|_| self.normal()).collect()
    }
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// The clustered distribution the benchmark samples (see the module docs).
struct Corpus {
    rng: Rng,
    /// The noise's norm, relative to a topic's.
    noise: f32,
    shared: Vec<f32>,
    topics: Vec<Vec<f32>>,
}

impl Corpus {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let shared = unit(rng.gaussian(DIMENSION));
        let topics = (0..TOPICS).map(|_| unit(rng.gaussian(DIMENSION))).collect();
        let noise = std::env::var("VECTORS_BENCH_NOISE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_NOISE);
        Corpus {
            rng,
            noise,
            shared,
            topics,
        }
    }

    /// A point near a main topic, pulled towards a second one by a random share, plus
    /// noise: neighbourhoods are continuous, not separate balls.
    fn sample(&mut self) -> Vec<f32> {
        let main = &self.topics[(self.rng.next() % TOPICS as u64) as usize];
        let second = &self.topics[(self.rng.next() % TOPICS as u64) as usize];
        let share = 0.6 * (self.rng.next() >> 40) as f32 / (1u64 << 24) as f32;
        let noise = self.noise / (DIMENSION as f32).sqrt();
        let v = (0..DIMENSION)
            .map(|i| 0.3 * self.shared[i] + main[i] + share * second[i] + self.rng.normal() * noise)
            .collect();
        unit(v)
    }
}

/// A store of `size` facts, each with an embedding, and those embeddings by fact id.
struct Filled {
    store: InMemorySessionFactStore,
    vectors: Vec<(FactId, Vec<f32>)>,
}

fn build(size: usize) -> Filled {
    let store = InMemorySessionFactStore::new(unbounded(), Arc::new(ManualClock::default()));
    let mut corpus = Corpus::new(42);
    let at = Timestamp::from_unix_secs(1_800_000_000).unwrap();
    let mut vectors = Vec::with_capacity(size);
    for start in (0..size).step_by(1_000) {
        let batch: Vec<SessionFact> = (start..size.min(start + 1_000))
            .map(|n| {
                SessionFact::builder(format!("doc:{n}"), "says", format!("sentence {n}"))
                    .tag(Tag::Preference)
                    .source("bench", SourceRole::Extractor)
                    .valid_from(at)
                    .build()
                    .unwrap()
            })
            .collect();
        let embeddings: Vec<(FactId, Vec<f32>)> =
            batch.iter().map(|f| (f.id(), corpus.sample())).collect();
        store.add(batch).unwrap();
        let vectors_of_store = store.vectors().expect("the in-memory store keeps vectors");
        let stored = vectors_of_store
            .put_embeddings(MODEL, embeddings.clone())
            .unwrap();
        assert_eq!(stored, embeddings.len());
        vectors.extend(embeddings);
    }
    assert_eq!(store.valid_count(), size);
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

fn queries(count: usize) -> Vec<Vec<f32>> {
    let mut corpus = Corpus::new(42);
    // Same topics as the stored facts, other noise.
    corpus.rng = Rng(7);
    (0..count).map(|_| corpus.sample()).collect()
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
    let vectors = filled.store.vectors().unwrap();
    let queries = queries(300);
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(|query| vectors.nearest(&VectorQuery::new(MODEL, query, 20)));
}

//! Synthetic embeddings for the vector benchmarks (`benches/vectors.rs` in memory, the
//! `nearest` benchmarks of `benches/sqlite.rs` and `benches/postgres.rs`), and what those
//! benchmarks share: the stored facts, the queries, the measured call.
//!
//! The embeddings are clustered as sentence embeddings are: a direction every vector
//! shares a little of (embedding models are anisotropic), a thousand topic centres, and per
//! vector a main topic, a random share of a second one (so neighbourhoods are continuous,
//! not separate balls) and noise. Queries are fresh points of the same distribution, so
//! their nearest neighbours are not copies of them. `VECTORS_BENCH_NOISE` sets the noise
//! (default 1.8: a query's nearest fact has a cosine of about 0.35, its tenth 0.30, its
//! thousandth 0.14; more noise flattens the neighbourhoods and makes any approximate
//! search harder). A seeded xorshift generates everything (no dependency): every run
//! measures the same data.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use divan::Bencher;
use fact_model::{FactId, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{ScoredFact, SessionFactStore, VectorQuery};

/// The dimension of the small sentence-embedding models (all-MiniLM-L6-v2, bge-small).
pub(crate) const DIMENSION: usize = 384;

/// The model identity the benchmarks store their vectors under. (Before the benchmarks
/// shared this distribution, the SQL ones stored another under `bench/minilm-384`: a
/// Postgres scope loaded then finds nothing under this name.)
pub(crate) const MODEL: &str = "bench/minilm-like";

/// The topic centres of the distribution.
const TOPICS: usize = 1_000;

/// The noise's norm relative to a topic's, unless `VECTORS_BENCH_NOISE` says otherwise.
const DEFAULT_NOISE: f32 = 1.8;

/// The seed of the topics and of the stored facts' vectors.
const FACTS_SEED: u64 = 42;

/// The seed of the queries' draws (of the facts' topics).
const QUERIES_SEED: u64 = 7;

/// The facts of the SQL `nearest` benchmarks.
pub(crate) const NEAREST_FACTS: usize = 100_000;

/// xorshift64*: small, seeded, good enough for synthetic data.
#[derive(Debug, Clone)]
pub(crate) struct Xorshift(u64);

impl Xorshift {
    /// A generator from `seed`, which must not be 0.
    pub(crate) fn new(seed: u64) -> Self {
        Xorshift(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`, 24 bits.
    fn fraction(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Below `n` (which must not be 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Roughly standard normal (a centred sum of four uniforms).
    pub(crate) fn normal(&mut self) -> f32 {
        let mut sum = 0.0;
        for _ in 0..4 {
            sum += self.fraction();
        }
        (sum - 2.0) * 1.732
    }

    fn gaussian(&mut self, dimension: usize) -> Vec<f32> {
        (0..dimension).map(|_| self.normal()).collect()
    }
}

/// `v` scaled to unit length.
fn unit(v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// The topic mixture (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Topics {
    rng: Xorshift,
    /// The noise's norm, relative to a topic's.
    noise: f32,
    shared: Vec<f32>,
    topics: Vec<Vec<f32>>,
}

impl Topics {
    /// The topics drawn from `seed`, and the points then drawn from where they left it.
    fn new(seed: u64) -> Self {
        let mut rng = Xorshift::new(seed);
        let shared = unit(rng.gaussian(DIMENSION));
        let topics = (0..TOPICS).map(|_| unit(rng.gaussian(DIMENSION))).collect();
        let noise = std::env::var("VECTORS_BENCH_NOISE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_NOISE);
        Topics {
            rng,
            noise,
            shared,
            topics,
        }
    }

    /// The stored facts' vectors, in order.
    pub(crate) fn facts() -> Self {
        Topics::new(FACTS_SEED)
    }

    /// Query vectors: the facts' topics, other draws.
    pub(crate) fn queries() -> Self {
        let mut topics = Topics::new(FACTS_SEED);
        topics.rng = Xorshift::new(QUERIES_SEED);
        topics
    }

    /// A point near a main topic, pulled towards a second one by a random share, plus
    /// noise: neighbourhoods are continuous, not separate balls.
    pub(crate) fn sample(&mut self) -> Vec<f32> {
        let Topics {
            rng,
            noise,
            shared,
            topics,
        } = self;
        let main = topics.get(rng.below(TOPICS)).expect("a topic");
        let second = topics.get(rng.below(TOPICS)).expect("a topic");
        let share = 0.6 * rng.fraction();
        let noise = *noise / (DIMENSION as f32).sqrt();
        let v = shared
            .iter()
            .zip(main)
            .zip(second)
            .map(|((s, m), t)| 0.3 * s + m + share * t + rng.normal() * noise)
            .collect();
        unit(v)
    }
}

/// `count` query vectors (the first `n` are the same whatever the count).
pub(crate) fn queries(count: usize) -> Vec<Vec<f32>> {
    let mut draws = Topics::queries();
    (0..count).map(|_| draws.sample()).collect()
}

/// The `n`th fact of the benchmarks' stores.
fn fact(n: usize) -> SessionFact {
    SessionFact::builder(format!("doc:{n}"), "says", format!("sentence {n}"))
        .tag(Tag::Preference)
        .source("bench", SourceRole::Extractor)
        .valid_from(Timestamp::from_unix_secs(1_800_000_000).unwrap())
        .build()
        .unwrap()
}

/// What [`fill_embedded`] did.
#[derive(Debug)]
pub(crate) struct Filled {
    /// How long adding the facts took.
    pub(crate) added: Duration,
    /// How long storing their embeddings took.
    pub(crate) embedded: Duration,
    /// The embeddings, by fact id, in the order stored.
    pub(crate) vectors: Vec<(FactId, Vec<f32>)>,
}

/// Adds `count` distinct facts to `store` (`add` calls of 1,000) and an embedding of each
/// (`put_embeddings` calls of 1,000), the `n`th fact's the `n`th of [`Topics::facts`].
pub(crate) fn fill_embedded(store: &dyn SessionFactStore, count: usize) -> Filled {
    let facts: Vec<SessionFact> = (0..count).map(fact).collect();
    let mut draws = Topics::facts();
    let vectors: Vec<(FactId, Vec<f32>)> = facts.iter().map(|f| (f.id(), draws.sample())).collect();
    let started = Instant::now();
    for batch in facts.chunks(1_000) {
        store.add(batch.to_vec()).unwrap();
    }
    let added = started.elapsed();
    assert_eq!(store.valid_count().unwrap(), count);
    let store_vectors = store.vectors().expect("the store keeps embeddings");
    let started = Instant::now();
    for batch in vectors.chunks(1_000) {
        let stored = store_vectors.put_embeddings(MODEL, batch.to_vec()).unwrap();
        assert_eq!(stored, batch.len());
    }
    Filled {
        added,
        embedded: started.elapsed(),
        vectors,
    }
}

/// Fills `store` for the `nearest` benchmarks ([`NEAREST_FACTS`] embedded facts) and
/// prints how long it took, after `label`.
pub(crate) fn load_nearest(store: &dyn SessionFactStore, label: &str) {
    let Filled {
        added, embedded, ..
    } = fill_embedded(store, NEAREST_FACTS);
    eprintln!(
        "{label}: {NEAREST_FACTS} facts added in {added:.2?}, their embeddings stored in \
         {embedded:.2?}"
    );
}

/// The measured call: `nearest`, limit 20, no filter.
pub(crate) fn nearest_20(store: &dyn SessionFactStore, query: &[f32]) -> Vec<ScoredFact> {
    let found = store
        .vectors()
        .expect("the store keeps embeddings")
        .nearest(&VectorQuery::new(MODEL, query, 20))
        .unwrap();
    assert_eq!(
        found.len(),
        20,
        "fewer than 20 facts with a {MODEL} embedding"
    );
    found
}

/// A new store's first [`nearest_20`] (`open` makes one per sample), cycling through 5
/// queries.
pub(crate) fn bench_first_search<S: SessionFactStore>(
    bencher: Bencher<'_, '_>,
    mut open: impl FnMut() -> S,
) {
    let queries = queries(5);
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| (open(), next.next().unwrap()))
        .bench_local_refs(|(store, query)| nearest_20(store, query));
}

/// A store's later [`nearest_20`] (one before measuring), cycling through `count`
/// queries.
pub(crate) fn bench_warm(bencher: Bencher<'_, '_>, store: &dyn SessionFactStore, count: usize) {
    let queries = queries(count);
    nearest_20(store, queries.first().unwrap());
    let mut next = queries.iter().cycle();
    bencher
        .with_inputs(|| next.next().unwrap())
        .bench_local_values(|query| nearest_20(store, query));
}

//! Synthetic embeddings for the vector benchmarks: unit vectors clustered around random
//! centres, as sentence embeddings of related facts are, from a seeded xorshift (no
//! dependency, the same vectors on every run).

#![allow(dead_code)]

use std::time::{Duration, Instant};

use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
use fact_store::SessionFactStore;

/// The dimension of the small sentence-embedding models (all-MiniLM-L6-v2, bge-small).
pub(crate) const DIMENSION: usize = 384;

/// xorshift64*: fast, seeded, good enough for synthetic data.
#[derive(Debug, Clone)]
pub(crate) struct Xorshift(u64);

impl Xorshift {
    /// A generator from `seed` (any value; 0 is replaced).
    pub(crate) fn new(seed: u64) -> Self {
        Xorshift(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[-1, 1)`.
    pub(crate) fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// Roughly normal, mean 0 and standard deviation 1 (a sum of four uniforms).
    pub(crate) fn normal(&mut self) -> f32 {
        (self.uniform() + self.uniform() + self.uniform() + self.uniform()) * 0.866
    }

    /// Below `n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// `v` scaled to unit length.
pub(crate) fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Clustered unit vectors: `clusters` random centres, and each vector a centre plus
/// noise of about `spread` of its length, normalized.
#[derive(Debug, Clone)]
pub(crate) struct Clustered {
    centres: Vec<Vec<f32>>,
    spread: f32,
    rng: Xorshift,
}

impl Clustered {
    pub(crate) fn new(dimension: usize, clusters: usize, spread: f32, seed: u64) -> Self {
        let mut rng = Xorshift::new(seed);
        let centres = (0..clusters.max(1))
            .map(|_| normalized((0..dimension).map(|_| rng.normal()).collect()))
            .collect();
        Clustered {
            centres,
            spread,
            rng,
        }
    }

    /// The next vector: near a random centre.
    pub(crate) fn next_vector(&mut self) -> Vec<f32> {
        let at = self.rng.below(self.centres.len());
        let Some(centre) = self.centres.get(at) else {
            return Vec::new();
        };
        let scale = self.spread / (centre.len() as f32).sqrt();
        let rng = &mut self.rng;
        normalized(centre.iter().map(|c| c + scale * rng.normal()).collect())
    }
}

/// The model identity the benchmarks store their vectors under.
pub(crate) const MODEL: &str = "bench/minilm-384";

/// The clusters of the benchmarks' vectors: 256 topics, about 400 facts each at 100,000.
pub(crate) fn generator() -> Clustered {
    Clustered::new(DIMENSION, 256, 1.0, 7)
}

/// `count` query vectors, drawn as the facts' vectors are (other draws of the same
/// clusters).
pub(crate) fn queries(count: usize) -> Vec<Vec<f32>> {
    let mut draws = Clustered::new(DIMENSION, 256, 1.0, 7);
    draws.rng = Xorshift::new(99);
    (0..count).map(|_| draws.next_vector()).collect()
}

/// Adds `count` distinct facts to `store` (batches of 1,000) and an embedding of each
/// (`put_embeddings` calls of 1,000); returns how long each part took.
pub(crate) fn fill_embedded(store: &dyn SessionFactStore, count: usize) -> (Duration, Duration) {
    let facts: Vec<SessionFact> = (0..count)
        .map(|n| {
            SessionFact::builder(
                format!("doc/{n}.md"),
                "mentions",
                format!("topic {}", n % 977),
            )
            .tag(Tag::Context)
            .source(format!("{}", n / 1_000), SourceRole::Extractor)
            .valid_from(Timestamp::from_unix_secs(1_800_000_000 + n as i64).unwrap())
            .build()
            .unwrap()
        })
        .collect();
    let started = Instant::now();
    for batch in facts.chunks(1_000) {
        store.add(batch.to_vec()).unwrap();
    }
    let added = started.elapsed();
    let vectors = store.vectors().expect("the store keeps embeddings");
    let mut draws = generator();
    let started = Instant::now();
    for batch in facts.chunks(1_000) {
        let embeddings = batch
            .iter()
            .map(|f| (f.id(), draws.next_vector()))
            .collect();
        vectors.put_embeddings(MODEL, embeddings).unwrap();
    }
    (added, started.elapsed())
}

//! Late-interaction benchmarks: MaxSim of one query (12 tokens) against 100 candidates of
//! 30 tokens each at 384 dimensions, as the `LateInteraction` stage of fact-retrieve
//! re-scores them after fusion, in both encodings; and the encoding of one fact's tokens.
//! Run with `cargo bench -p fact-store --bench token_vectors`.
//!
//! The vectors are pseudo-random (a fixed xorshift generator), so the figures are the
//! arithmetic's, not a model's; `cargo xtask eval locomo --frontier` measures the whole
//! query with the model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use divan::Bencher;
use fact_store::{TokenEncoding, TokenVectors};

const DIMENSION: usize = 384;
const CANDIDATES: usize = 100;
const DOC_TOKENS: usize = 30;
const QUERY_TOKENS: usize = 12;

fn main() {
    divan::main();
}

/// `n` pseudo-random unit rows of [`DIMENSION`] values, row-major.
fn rows(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.max(1);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut out = Vec::with_capacity(n * DIMENSION);
    for _ in 0..n {
        let row: Vec<f32> = (0..DIMENSION).map(|_| next()).collect();
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        out.extend(row.iter().map(|x| x / norm));
    }
    out
}

fn candidates(encoding: TokenEncoding) -> Vec<TokenVectors> {
    (0..CANDIDATES as u64)
        .map(|i| TokenVectors::encode(encoding, DIMENSION, &rows(i + 7, DOC_TOKENS)).unwrap())
        .collect()
}

/// `binary`: [`TokenEncoding::Binary`], else [`TokenEncoding::Int8`].
fn encoding(binary: bool) -> TokenEncoding {
    if binary {
        TokenEncoding::Binary
    } else {
        TokenEncoding::Int8
    }
}

#[divan::bench(args = [true, false])]
fn maxsim_100_candidates(bencher: Bencher<'_, '_>, binary: bool) {
    let docs = candidates(encoding(binary));
    let query = rows(1, QUERY_TOKENS);
    let mut scratch = Vec::new();
    bencher.bench_local(|| {
        docs.iter()
            .map(|doc| doc.max_sim(&query, &mut scratch).unwrap())
            .sum::<f32>()
    });
}

#[divan::bench(args = [true, false])]
fn encode_one_fact(bencher: Bencher<'_, '_>, binary: bool) {
    let values = rows(3, DOC_TOKENS);
    let encoding = encoding(binary);
    bencher.bench_local(|| TokenVectors::encode(encoding, DIMENSION, &values).unwrap());
}

//! `VectorIndex`: the in-process nearest-neighbour index every store searches its
//! embeddings with, and `ModelIndexes`, one index per model.
//!
//! # Layout
//!
//! An index holds unit vectors of one dimension, row by row in one allocation, and beside
//! each row its *binary code*: one sign bit per dimension (set when the value is
//! positive), packed into `u64` words (48 bytes for a 384-dimensional vector). Rows, codes
//! and ids share their slot; removing a vector swaps the last slot into the hole, so all
//! three stay dense and aligned, and an upsert or a removal costs O(dimension) whatever
//! the index size.
//!
//! # Search
//!
//! Up to [`EXACT_SEARCH_LIMIT`] vectors a search is exact: the query's dot product with
//! every row (all vectors are unit length, so this is the cosine), then a bounded top-k:
//! the best window of scores is selected (`select_nth_unstable`, O(n), no full sort),
//! sorted, and passed through the caller's filter; only when the filter rejects too many
//! does the window widen (four times, each time), so a filtered search stays cheap and an
//! unfiltered one looks at about `2 × limit` ids.
//!
//! Above the limit, three stages:
//!
//! 1. **Pool.** The Hamming distance between the query's code and every row's code (six
//!    XOR and popcounts per 384-dimensional row, over 48 bytes instead of 1,536) picks a
//!    pool of `max(200 × limit, 4,000)` rows: the smallest distances, whole distance
//!    classes at a time (found from a histogram of the distances, so no sort; the pool
//!    depends only on the stored vectors, never on slot order).
//! 2. **Ranking.** Each pooled code is scored against the query's *values* (the sum of
//!    the query's values where the code has a bit set, one table lookup per code byte):
//!    the query is not quantized, so this estimate ranks far better than the Hamming
//!    distance, at a cache line per row.
//! 3. **Re-scoring.** In that order, the caller's filter is asked about ids until
//!    `max(20 × limit, 200)` pass; those are scored exactly with their full vectors, and
//!    the best `limit` returned, ties to the smaller id. When the filter rejects so many
//!    that the pool runs out first, the pool doubles (the filter is asked about each id
//!    once), up to every row.
//!
//! Recall depends on the data: on clustered 384-dimensional vectors whose neighbourhoods
//! are as loose as sentence embeddings' (`cargo bench -p fact-store --bench vectors`:
//! a query's nearest fact at cosine 0.35, its tenth at 0.30, its thousandth at 0.14),
//! recall@10 against an exact search is 0.99 at 100,000 vectors, in about 2 ms on a
//! two-core machine; when neighbourhoods flatten further (nearest 0.26, tenth 0.22,
//! thousandth 0.13) it falls to about 0.8, as the sign bits carry too little to tell
//! the neighbours from the crowd.
//!
//! # Why binary codes and exact re-scoring, not a graph (HNSW)
//!
//! - nothing to build or persist: the codes are a function of each vector, computed on
//!   upsert, so a durable store reloading its vectors rebuilds the index in one pass, and
//!   no second structure can go stale against the rows;
//! - upsert and removal are incremental and O(dimension); graph indexes degrade under
//!   deletions and need repair or periodic rebuilds;
//! - deterministic: the same vectors and query give the same answer, whatever the order
//!   they were inserted in (a graph's answer depends on its construction order);
//! - small: 48 bytes of codes per 384-dimensional vector beside its 1,536 bytes of
//!   values, where a graph keeps tens of neighbour links per vector;
//! - fast enough: a linear pass over 4.8 MB of codes at 100,000 vectors, a few thousand
//!   table-driven estimates and a few hundred exact dot products stay within the issue's
//!   5 ms; the scores returned are exact cosines, never approximations.
//!
//! The cost is a linear scan: at millions of vectors per model a graph would win, and
//! this index would need sharding or a coarse quantizer in front of it.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::kernel::dot;
use super::tokens::TokenVectors;
use fact_model::FactId;

/// Up to this many vectors a search compares the query with every vector exactly; above
/// it, binary codes pick the candidates that are then compared exactly.
///
/// Chosen by measurement (`cargo bench -p fact-store --bench vectors` with the limit set
/// to 0 and to `usize::MAX`, 384 dimensions, limit 20, on a two-core machine): at 5,000
/// vectors the exact scan and the binary path both take about 0.4 ms (at 2,000 the exact
/// scan is a little faster, 0.16 ms against 0.18; at 10,000 the binary path is, 0.57 ms
/// against 0.8 to 1.9 ms, and at 20,000 the exact scan leaves the cache and takes 4 to
/// 8 ms). So up to the limit results are exact for no more than the approximation would
/// cost.
pub const EXACT_SEARCH_LIMIT: usize = 5_000;

/// The smallest pool the binary path picks by Hamming distance.
const MIN_POOL: usize = 4_000;
/// The binary path's pool per result asked for.
const POOL_PER_RESULT: usize = 200;
/// The fewest candidates the binary path re-scores exactly.
const MIN_RESCORED: usize = 200;
/// Candidates the binary path re-scores exactly per result asked for.
const RESCORED_PER_RESULT: usize = 20;
/// The first window of the exact path, in results asked for (at least [`MIN_WINDOW`]).
const WINDOW_PER_RESULT: usize = 2;
/// The smallest first window of the exact path.
const MIN_WINDOW: usize = 32;

/// Unit vectors of one dimension, by fact id, with their binary codes.
///
/// Vectors are stored row by row in one allocation, codes likewise; removal swaps the
/// last row (and code) into the hole, so the rows stay dense. See the module docs.
#[derive(Debug, Clone)]
pub struct VectorIndex {
    dimension: usize,
    /// `u64` words per code: `dimension / 64`, rounded up.
    words: usize,
    /// Up to this many vectors, searches are exact.
    exact_limit: usize,
    /// The smallest pool of the binary path ([`MIN_POOL`] but in tests).
    min_pool: usize,
    ids: Vec<FactId>,
    /// `ids.len() × dimension` values, row `i` the vector of `ids[i]`.
    values: Vec<f32>,
    /// `ids.len() × words` sign bits, code `i` of row `i`; bits past `dimension` are zero.
    codes: Vec<u64>,
    slots: HashMap<FactId, usize>,
}

impl VectorIndex {
    /// An empty index of `dimension`-dimensional vectors.
    pub fn new(dimension: usize) -> Self {
        VectorIndex::with_exact_limit(dimension, EXACT_SEARCH_LIMIT)
    }

    /// The heap the index holds, as the heap model ([`crate::backend::chunk`],
    /// [`crate::backend::map_bytes`]) counts it.
    pub fn heap_bytes(&self) -> usize {
        use crate::heap::{map_bytes, vec_bytes};
        vec_bytes::<FactId>(self.ids.capacity())
            + vec_bytes::<f32>(self.values.capacity())
            + vec_bytes::<u64>(self.codes.capacity())
            + map_bytes::<FactId, usize>(self.slots.capacity())
    }

    /// An empty index whose searches are exact up to `exact_limit` vectors (instead of
    /// [`EXACT_SEARCH_LIMIT`]): tests reach the binary path with few vectors.
    pub fn with_exact_limit(dimension: usize, exact_limit: usize) -> Self {
        VectorIndex {
            dimension,
            words: dimension.div_ceil(64),
            exact_limit,
            min_pool: MIN_POOL,
            ids: Vec::new(),
            values: Vec::new(),
            codes: Vec::new(),
            slots: HashMap::new(),
        }
    }

    /// This index with binary-path pools of at least `min_pool` rows (instead of
    /// [`MIN_POOL`]): tests reach a realistic pool share with few vectors.
    #[cfg(test)]
    fn with_min_pool(mut self, min_pool: usize) -> Self {
        self.min_pool = min_pool;
        self
    }

    /// The dimension of every vector of the index.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether it holds a vector of `id`.
    pub fn contains(&self, id: FactId) -> bool {
        self.slots.contains_key(&id)
    }

    /// The stored (unit) vector of `id`.
    #[cfg(test)]
    pub fn get(&self, id: FactId) -> Option<&[f32]> {
        let slot = *self.slots.get(&id)?;
        self.row_at(slot)
    }

    /// Stores `unit` (already normalized, of this index's dimension) for `id`, replacing
    /// its earlier vector. A vector of another dimension is ignored (callers validate).
    pub fn upsert(&mut self, id: FactId, unit: &[f32]) {
        if unit.len() != self.dimension {
            return;
        }
        let (dim, words) = (self.dimension, self.words);
        match self.slots.get(&id) {
            Some(&slot) => {
                let start = slot * dim;
                if let Some(row) = self.values.get_mut(start..start + dim) {
                    row.copy_from_slice(unit);
                }
                let start = slot * words;
                if let Some(code) = self.codes.get_mut(start..start + words) {
                    write_code(unit, code);
                }
            }
            None => {
                self.slots.insert(id, self.ids.len());
                self.ids.push(id);
                self.values.extend_from_slice(unit);
                let start = self.codes.len();
                self.codes.resize(start + words, 0);
                if let Some(code) = self.codes.get_mut(start..) {
                    write_code(unit, code);
                }
            }
        }
    }

    /// Removes the vector of `id`; whether there was one.
    pub fn remove(&mut self, id: FactId) -> bool {
        let Some(slot) = self.slots.remove(&id) else {
            return false;
        };
        let Some(last) = self.ids.len().checked_sub(1) else {
            return false;
        };
        let (dim, words) = (self.dimension, self.words);
        if slot != last {
            self.values
                .copy_within(last * dim..(last + 1) * dim, slot * dim);
            self.codes
                .copy_within(last * words..(last + 1) * words, slot * words);
            self.ids.swap(slot, last);
            if let Some(&moved) = self.ids.get(slot) {
                self.slots.insert(moved, slot);
            }
        }
        self.ids.pop();
        self.values.truncate(last * dim);
        self.codes.truncate(last * words);
        true
    }

    /// The ids `accept` admits whose vectors are nearest `query` (unit, of this index's
    /// dimension), with their cosine similarity, best first, ties to the smaller id; at
    /// most `limit`.
    ///
    /// Exact up to the index's exact limit ([`EXACT_SEARCH_LIMIT`]), approximate above
    /// it (binary codes, then exact re-scoring; see the module docs). `accept` is called
    /// at most once per id, and only for ids that could be returned.
    pub fn nearest(
        &self,
        query: &[f32],
        limit: usize,
        accept: &mut dyn FnMut(FactId) -> bool,
    ) -> Vec<(FactId, f32)> {
        if limit == 0 || query.len() != self.dimension || self.dimension == 0 {
            return Vec::new();
        }
        if self.len() <= self.exact_limit {
            self.nearest_exact(query, limit, accept)
        } else {
            self.nearest_binary(query, limit, accept)
        }
    }

    /// The exact search: every row scored, then a bounded top-k.
    pub fn nearest_exact(
        &self,
        query: &[f32],
        limit: usize,
        accept: &mut dyn FnMut(FactId) -> bool,
    ) -> Vec<(FactId, f32)> {
        if limit == 0 || query.len() != self.dimension || self.dimension == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(f32, FactId)> = self
            .values
            .chunks_exact(self.dimension)
            .zip(&self.ids)
            .map(|(row, &id)| (dot(query, row), id))
            .collect();
        best_accepted(&mut scored, limit, accept)
    }

    /// The binary path: a pool by Hamming distance of the codes, ranked by the query's
    /// values against the pool's codes, the best of those that `accept` admits re-scored
    /// exactly. See the module docs.
    fn nearest_binary(
        &self,
        query: &[f32],
        limit: usize,
        accept: &mut dyn FnMut(FactId) -> bool,
    ) -> Vec<(FactId, f32)> {
        let words = self.words;
        let mut query_code = vec![0u64; words];
        write_code(query, &mut query_code);
        let distances: Vec<u32> = self
            .codes
            .chunks_exact(words)
            .map(|code| hamming(code, &query_code))
            .collect();
        // How many rows lie at each distance (distances never exceed `words × 64`).
        let mut histogram = vec![0usize; words * 64 + 1];
        for &d in &distances {
            if let Some(count) = histogram.get_mut(d as usize) {
                *count += 1;
            }
        }
        let table = ByteTable::new(query, words);
        let rescore = limit.saturating_mul(RESCORED_PER_RESULT).max(MIN_RESCORED);
        let mut pool_size = limit.saturating_mul(POOL_PER_RESULT).max(self.min_pool);
        // `accept`'s answers, so that a widened pool asks about each id once.
        let mut answers: HashMap<FactId, bool> = HashMap::new();
        loop {
            // The smallest distance class that brings the pool to `pool_size` rows.
            let (mut upto, mut reached) = (0, 0);
            for (d, &count) in histogram.iter().enumerate() {
                upto = d;
                reached += count;
                if reached >= pool_size {
                    break;
                }
            }
            let mut pool: Vec<(f32, FactId, usize)> = Vec::with_capacity(reached);
            for (slot, ((&d, code), &id)) in distances
                .iter()
                .zip(self.codes.chunks_exact(words))
                .zip(&self.ids)
                .enumerate()
            {
                if d as usize <= upto {
                    pool.push((table.score(code), id, slot));
                }
            }
            // Best estimate first, ties to the smaller id: the pool is whole distance
            // classes, so nothing here depends on slot order.
            pool.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut candidates: Vec<(f32, FactId)> = Vec::with_capacity(rescore);
            for &(_, id, slot) in &pool {
                if candidates.len() == rescore {
                    break;
                }
                let Some(row) = self.row_at(slot) else {
                    continue;
                };
                if *answers.entry(id).or_insert_with(|| accept(id)) {
                    candidates.push((dot(query, row), id));
                }
            }
            if candidates.len() == rescore || reached >= self.len() {
                candidates.sort_unstable_by(rank);
                candidates.truncate(limit);
                return candidates
                    .into_iter()
                    .map(|(score, id)| (id, score))
                    .collect();
            }
            // The filter rejected too many: a pool twice as large.
            pool_size = pool_size.saturating_mul(2).max(reached + 1);
        }
    }

    fn row_at(&self, slot: usize) -> Option<&[f32]> {
        let start = slot.checked_mul(self.dimension)?;
        self.values.get(start..start.checked_add(self.dimension)?)
    }
}

/// The query's values summed by code byte: `score(code)` is the sum of the query's values
/// where the code has a bit set, which ranks unit vectors by their dot product with the
/// query far better than the Hamming distance of the two codes does (the query is not
/// quantized), at one table lookup per code byte.
struct ByteTable {
    /// For code byte `b` and byte value `v`, at `b * 256 + v`: the sum of the query's
    /// values `8b + k` for the bits `k` set in `v`.
    sums: Vec<f32>,
}

impl ByteTable {
    fn new(query: &[f32], words: usize) -> Self {
        let mut sums = vec![0f32; words * 8 * 256];
        for (table, values) in sums.chunks_exact_mut(256).zip(query.chunks(8)) {
            for v in 1..256usize {
                let low = v & (v - 1);
                let bit = v.trailing_zeros() as usize;
                let add = values.get(bit).copied().unwrap_or(0.0);
                let base = table.get(low).copied().unwrap_or(0.0);
                if let Some(entry) = table.get_mut(v) {
                    *entry = base + add;
                }
            }
        }
        ByteTable { sums }
    }

    fn score(&self, code: &[u64]) -> f32 {
        let mut total = 0.0;
        for (word, tables) in code.iter().zip(self.sums.chunks_exact(8 * 256)) {
            for (byte, table) in word.to_le_bytes().iter().zip(tables.chunks_exact(256)) {
                total += table.get(usize::from(*byte)).copied().unwrap_or(0.0);
            }
        }
        total
    }
}

/// Best first: the greater score, then the smaller id.
fn rank(a: &(f32, FactId), b: &(f32, FactId)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The best `limit` entries of `scored` that `accept` admits, best first: the best
/// window is selected (O(n)), sorted and filtered, and widened only while the filter
/// leaves it short. `accept` sees each id at most once, in rank order.
fn best_accepted(
    scored: &mut [(f32, FactId)],
    limit: usize,
    accept: &mut dyn FnMut(FactId) -> bool,
) -> Vec<(FactId, f32)> {
    let mut out = Vec::with_capacity(limit.min(scored.len()));
    let mut window = limit.saturating_mul(WINDOW_PER_RESULT).max(MIN_WINDOW);
    // `scored[..done]` is sorted and was offered to `accept`.
    let mut done = 0;
    while done < scored.len() && out.len() < limit {
        let Some(rest) = scored.get_mut(done..) else {
            break;
        };
        let take = window.saturating_sub(done).clamp(1, rest.len());
        if take < rest.len() {
            rest.select_nth_unstable_by(take, rank);
        }
        let Some(head) = rest.get_mut(..take) else {
            break;
        };
        head.sort_unstable_by(rank);
        for &(score, id) in head.iter() {
            if out.len() == limit {
                break;
            }
            if accept(id) {
                out.push((id, score));
            }
        }
        done += take;
        window = window.saturating_mul(4);
    }
    out
}

/// Sets bit `i` of `code` when `vector[i]` is positive (`code` is `dimension / 64`
/// words, rounded up, and is overwritten).
fn write_code(vector: &[f32], code: &mut [u64]) {
    for (word, chunk) in code.iter_mut().zip(vector.chunks(64)) {
        *word = chunk
            .iter()
            .enumerate()
            .filter(|(_, x)| **x > 0.0)
            .fold(0u64, |bits, (i, _)| bits | (1u64 << i));
    }
}

/// The number of bits where two codes of equal length differ.
fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// One [`VectorIndex`] per model identity, and the token vectors of each model.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelIndexes {
    models: HashMap<String, VectorIndex>,
    tokens: HashMap<String, HashMap<FactId, TokenVectors>>,
}

impl ModelIndexes {
    /// How many embeddings and how many token vectors it holds, over every model.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let embeddings = self.models.values().map(VectorIndex::len).sum();
        let tokens = self.tokens.values().map(HashMap::len).sum();
        (embeddings, tokens)
    }

    /// The index of `model`, if it has vectors.
    pub(crate) fn get(&self, model: &str) -> Option<&VectorIndex> {
        self.models.get(model)
    }

    /// The dimension of `model`'s vectors, if it has any.
    pub(crate) fn dimension(&self, model: &str) -> Option<usize> {
        self.models.get(model).map(VectorIndex::dimension)
    }

    /// Stores `unit` for `id` under `model` (the first vector fixes the dimension).
    pub(crate) fn upsert(&mut self, model: &str, id: FactId, unit: &[f32]) {
        match self.models.get_mut(model) {
            Some(index) => index.upsert(id, unit),
            None => {
                let mut index = VectorIndex::new(unit.len());
                index.upsert(id, unit);
                self.models.insert(model.to_owned(), index);
            }
        }
    }

    /// The token vectors of `model`, by fact id.
    pub(crate) fn tokens(&self, model: &str) -> Option<&HashMap<FactId, TokenVectors>> {
        self.tokens.get(model)
    }

    /// Stores `tokens` as `id`'s token vectors under `model`.
    pub(crate) fn put_tokens(&mut self, model: &str, id: FactId, tokens: TokenVectors) {
        self.tokens
            .entry(model.to_owned())
            .or_default()
            .insert(id, tokens);
    }

    /// Removes `id`'s vectors and token vectors under every model. A model left without
    /// vectors is forgotten (its next vector may have another dimension).
    pub(crate) fn remove(&mut self, id: FactId) {
        for tokens in self.tokens.values_mut() {
            tokens.remove(&id);
        }
        self.tokens.retain(|_, tokens| !tokens.is_empty());
        let mut emptied = false;
        for index in self.models.values_mut() {
            emptied |= index.remove(id) && index.is_empty();
        }
        if emptied {
            self.models.retain(|_, index| !index.is_empty());
        }
    }

    /// Whether no model has a vector.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;

    /// A tiny deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        /// Roughly normal (sum of four uniforms, centred).
        fn normal(&mut self) -> f32 {
            let u = |r: &mut Rng| (r.next() >> 40) as f32 / (1u64 << 24) as f32;
            (u(self) + u(self) + u(self) + u(self) - 2.0) * 1.7
        }
    }

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    /// `n` unit vectors around `clusters` centres (noise of 1.8 times a centre's norm, so
    /// a neighbourhood is loose, as in the benchmark), and 20 queries from the same
    /// distribution.
    fn clustered(
        n: usize,
        dim: usize,
        clusters: usize,
        seed: u64,
    ) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
        let mut rng = Rng(seed);
        let centres: Vec<Vec<f32>> = (0..clusters)
            .map(|_| unit((0..dim).map(|_| rng.normal()).collect()))
            .collect();
        let point = |rng: &mut Rng| {
            let centre = &centres[(rng.next() % clusters as u64) as usize];
            let noise = 1.8 / (dim as f32).sqrt();
            unit(centre.iter().map(|c| c + rng.normal() * noise).collect())
        };
        let vectors = (0..n).map(|_| point(&mut rng)).collect();
        let queries = (0..20).map(|_| point(&mut rng)).collect();
        (vectors, queries)
    }

    fn id(i: usize) -> FactId {
        FactId::for_triple("s", "r", &i.to_string())
    }

    #[test]
    fn binary_path_recall_against_exact_is_at_least_0_95() {
        // Sentence-embedding dimension: sign codes of fewer dimensions say less. The pool
        // is 1,000 rows by Hamming distance, 5% of the index (4,000 of 100,000 in use).
        let (dim, n) = (384, 20_000);
        let (vectors, queries) = clustered(n, dim, 300, 7);
        let mut index = VectorIndex::with_exact_limit(dim, 100).with_min_pool(1_000);
        for (i, v) in vectors.iter().enumerate() {
            index.upsert(id(i), v);
        }
        let (mut hits, mut total) = (0, 0);
        for q in &queries {
            let exact = index.nearest_exact(q, 5, &mut |_| true);
            let found = index.nearest(q, 5, &mut |_| true);
            assert_eq!(found.len(), 5);
            total += exact.len();
            hits += exact
                .iter()
                .filter(|e| found.iter().any(|f| f.0 == e.0))
                .count();
            // Scores are exact cosines, best first.
            for pair in found.windows(2) {
                assert!(rank(&(pair[0].1, pair[0].0), &(pair[1].1, pair[1].0)).is_lt());
            }
        }
        let recall = hits as f64 / total as f64;
        eprintln!("binary path recall@5: {recall}");
        assert!(recall >= 0.95, "recall {recall}");
    }

    #[test]
    fn binary_path_with_a_filter_fills_the_limit() {
        let (dim, n) = (64, 2_000);
        let (vectors, queries) = clustered(n, dim, 20, 11);
        // A pool of 100 rows, of which two pass: it doubles until enough do.
        let mut index = VectorIndex::with_exact_limit(dim, 10).with_min_pool(100);
        let ids: Vec<FactId> = (0..n).map(id).collect();
        for (id, v) in ids.iter().zip(&vectors) {
            index.upsert(*id, v);
        }
        // Only one id in fifty passes: the classes widen until enough candidates pass.
        let keep = |id: FactId| u64::from_le_bytes(*id.as_bytes()).is_multiple_of(50);
        let passing = ids.iter().filter(|id| keep(**id)).count();
        for q in &queries {
            let mut calls = HashMap::new();
            let found = index.nearest(q, 5, &mut |id| {
                *calls.entry(id).or_insert(0) += 1;
                keep(id)
            });
            assert_eq!(found.len(), 5.min(passing));
            assert!(found.iter().all(|(id, _)| keep(*id)));
            assert!(calls.values().all(|&c| c == 1), "accept once per id");
            let exact = index.nearest_exact(q, 5, &mut |id| keep(id));
            assert_eq!(found[0].0, exact[0].0, "the nearest passing id is found");
        }
    }

    #[test]
    fn exact_path_filters_lazily_and_widens() {
        let mut index = VectorIndex::new(2);
        for i in 0..500 {
            let angle = i as f32 / 500.0;
            index.upsert(id(i), &[angle.cos(), angle.sin()]);
        }
        let mut calls = 0;
        let found = index.nearest(&[1.0, 0.0], 3, &mut |_| {
            calls += 1;
            true
        });
        assert_eq!(
            found.iter().map(|f| f.0).collect::<Vec<_>>(),
            [id(0), id(1), id(2)]
        );
        assert_eq!(
            calls, 3,
            "an unfiltered search asks only about what it returns"
        );
        // A filter passing only the farthest ids widens the window to the whole index.
        let found = index.nearest(&[1.0, 0.0], 3, &mut |id_| (495..500).any(|i| id(i) == id_));
        assert_eq!(
            found.iter().map(|f| f.0).collect::<Vec<_>>(),
            [id(495), id(496), id(497)]
        );
    }

    #[test]
    fn ties_go_to_the_smaller_id_on_both_paths() {
        for exact_limit in [1_000, 1] {
            let mut index = VectorIndex::with_exact_limit(3, exact_limit);
            let mut ids: Vec<FactId> = (0..40).map(id).collect();
            for id in &ids {
                index.upsert(*id, &unit(vec![1.0, 2.0, 3.0]));
            }
            ids.sort();
            let found = index.nearest(&unit(vec![1.0, 2.0, 3.0]), 5, &mut |_| true);
            assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), ids[..5]);
        }
    }

    #[test]
    fn binary_path_answers_do_not_depend_on_insertion_order() {
        let (dim, n) = (64, 1_500);
        let (vectors, queries) = clustered(n, dim, 10, 13);
        let build = |order: &mut dyn Iterator<Item = usize>| {
            let mut index = VectorIndex::with_exact_limit(dim, 0).with_min_pool(50);
            for i in order {
                index.upsert(id(i), &vectors[i]);
            }
            index
        };
        let forward = build(&mut (0..n));
        let mut backward = build(&mut (0..n).rev());
        // Removing and re-inserting moves slots around too.
        for i in (0..n).step_by(7) {
            backward.remove(id(i));
        }
        for i in (0..n).step_by(7) {
            backward.upsert(id(i), &vectors[i]);
        }
        for q in &queries {
            for limit in [1, 10] {
                assert_eq!(
                    forward.nearest(q, limit, &mut |_| true),
                    backward.nearest(q, limit, &mut |_| true)
                );
            }
        }
    }

    /// Every slot's code is the code of its row, and every id's slot holds it.
    fn assert_aligned(index: &VectorIndex) {
        assert_eq!(index.values.len(), index.len() * index.dimension);
        assert_eq!(index.codes.len(), index.len() * index.words);
        assert_eq!(index.slots.len(), index.len());
        for (slot, id) in index.ids.iter().enumerate() {
            assert_eq!(index.slots[id], slot);
            let mut code = vec![0; index.words];
            write_code(index.row_at(slot).unwrap(), &mut code);
            assert_eq!(
                code,
                index.codes[slot * index.words..(slot + 1) * index.words]
            );
        }
    }

    #[test]
    fn remove_and_upsert_keep_codes_and_rows_aligned() {
        let dim = 70; // two code words, the second partly used
        let mut rng = Rng(3);
        let mut index = VectorIndex::with_exact_limit(dim, 0);
        let mut model: HashMap<FactId, Vec<f32>> = HashMap::new();
        for step in 0..2_000 {
            let i = (rng.next() % 60) as usize;
            if rng.next().is_multiple_of(3) {
                assert_eq!(index.remove(id(i)), model.remove(&id(i)).is_some());
            } else {
                let v = unit((0..dim).map(|_| rng.normal()).collect());
                index.upsert(id(i), &v);
                model.insert(id(i), v);
            }
            if step % 97 == 0 {
                assert_aligned(&index);
            }
        }
        assert_aligned(&index);
        assert_eq!(index.len(), model.len());
        for (id, v) in &model {
            assert_eq!(index.get(*id).unwrap(), v.as_slice());
            // Each vector is its own nearest on the binary path.
            let found = index.nearest(v, 1, &mut |_| true);
            assert_eq!(found[0].0, *id);
        }
    }

    #[test]
    fn rejects_queries_of_another_dimension_and_zero_limits() {
        let mut index = VectorIndex::new(2);
        index.upsert(id(1), &[1.0, 0.0]);
        index.upsert(id(2), &[1.0, 0.0, 0.0]);
        assert_eq!(index.len(), 1);
        assert!(index.nearest(&[1.0, 0.0, 0.0], 5, &mut |_| true).is_empty());
        assert!(index.nearest(&[1.0, 0.0], 0, &mut |_| true).is_empty());
        assert_eq!(index.nearest(&[1.0, 0.0], 5, &mut |_| true), [(id(1), 1.0)]);
    }

    #[test]
    fn models_are_kept_apart_and_forgotten_when_empty() {
        let mut models = ModelIndexes::default();
        models.upsert("a", id(1), &[1.0, 0.0]);
        models.upsert("b", id(1), &[0.0, 0.0, 1.0]);
        assert_eq!(
            (models.dimension("a"), models.dimension("b")),
            (Some(2), Some(3))
        );
        models.remove(id(1));
        assert!(models.is_empty());
        models.upsert("a", id(2), &[1.0]);
        assert_eq!(models.dimension("a"), Some(1));
    }
}

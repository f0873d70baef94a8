//! [`LateInteraction`]: the MaxSim stage of [`HybridRetriever`](crate::HybridRetriever).
//! The best fused candidates are re-scored by comparing the query's token vectors with
//! each fact's stored token vectors (every query token's best cosine, summed, as ColBERT
//! does) and the two scores are fused again.

use std::collections::HashMap;

use fact_model::FactId;
use fact_store::{FactVectors, StoreError, TokenEncoding, TokenVectors};

use crate::retrieved::RetrievedFact;

/// How many fused candidates [`LateInteraction::default`] re-scores.
pub const DEFAULT_LATE_CANDIDATES: usize = 100;
/// The weight of the MaxSim score in [`LateInteraction::default`].
pub const DEFAULT_LATE_WEIGHT: f64 = 0.8;

/// The late-interaction (MaxSim) stage of a [`HybridRetriever`](crate::HybridRetriever).
///
/// After the lexical and vector candidates are fused, the best
/// [`candidates`](Self::candidates) of them are re-scored: the query's token vectors (from
/// [`Embedder::embed_tokens`](crate::Embedder::embed_tokens)) against each fact's stored
/// token vectors, every query token's largest cosine summed (MaxSim). Both scores are
/// scaled to `0..=1` over the re-scored candidates (min–max) and a candidate scores
/// `(1 − weight) × fused + weight × maxsim`; a candidate without token vectors by the
/// model scores on its fused score alone. The re-scored candidates come first, the rest
/// after them in their fused order.
///
/// Token vectors are stored per model identity in the store
/// ([`FactVectors::put_token_vectors`]), encoded as [`encoding`](Self::encoding) says, by
/// [`HybridRetriever::embed_facts`](crate::HybridRetriever::embed_facts) and
/// [`embed_missing`](crate::HybridRetriever::embed_missing).
///
/// ```
/// use fact_retrieve::LateInteraction;
/// use fact_store::TokenEncoding;
///
/// let late = LateInteraction::default().with_candidates(30).with_weight(0.6);
/// assert_eq!((late.candidates, late.weight), (30, 0.6));
/// assert_eq!(LateInteraction::default().weight, 0.8);
/// assert_eq!(late.encoding, TokenEncoding::Binary);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LateInteraction {
    /// How many of the best fused candidates are re-scored. Default
    /// [`DEFAULT_LATE_CANDIDATES`].
    pub candidates: usize,
    /// The weight of the MaxSim score, in `0..=1`. Default [`DEFAULT_LATE_WEIGHT`].
    pub weight: f64,
    /// How token vectors are encoded when they are stored. Default
    /// [`TokenEncoding::Binary`]: 52 bytes a token at 384 dimensions, about 0.9 KB a
    /// LoCoMo observation and 1.4 KB a turn; it keeps nearly all of int8's recall at an
    /// eighth of its size (`docs/benchmarks.md`).
    pub encoding: TokenEncoding,
}

impl Default for LateInteraction {
    /// The configuration tuned on LoCoMo conversations 0–4 (`docs/benchmarks.md`).
    fn default() -> Self {
        LateInteraction {
            candidates: DEFAULT_LATE_CANDIDATES,
            weight: DEFAULT_LATE_WEIGHT,
            encoding: TokenEncoding::Binary,
        }
    }
}

impl LateInteraction {
    /// Re-scores the best `candidates` fused candidates instead.
    #[must_use]
    pub fn with_candidates(mut self, candidates: usize) -> Self {
        self.candidates = candidates;
        self
    }

    /// Weighs the MaxSim score by `weight` (clamped to `0..=1`; not finite: the default).
    #[must_use]
    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = if weight.is_finite() {
            weight.clamp(0.0, 1.0)
        } else {
            DEFAULT_LATE_WEIGHT
        };
        self
    }

    /// Stores token vectors in `encoding` instead.
    #[must_use]
    pub fn with_encoding(mut self, encoding: TokenEncoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// `ranked` (best first) with its first [`candidates`](Self::candidates) re-scored by
    /// MaxSim against `query` (the query's token vectors, row-major, unit length) and
    /// sorted again; the rest follow unchanged.
    ///
    /// # Errors
    ///
    /// The store's, when it cannot read the token vectors.
    pub(crate) fn rescore(
        &self,
        vectors: &dyn FactVectors,
        model: &str,
        query: &[f32],
        mut ranked: Vec<RetrievedFact>,
    ) -> Result<Vec<RetrievedFact>, StoreError> {
        let head = self.candidates.min(ranked.len());
        if head == 0 || query.is_empty() || self.weight == 0.0 {
            return Ok(ranked);
        }
        let tail = ranked.split_off(head);
        let ids: Vec<FactId> = ranked.iter().map(|found| found.fact.id()).collect();
        let stored: HashMap<FactId, TokenVectors> =
            vectors.token_vectors(model, &ids)?.into_iter().collect();
        let mut scratch = Vec::new();
        let late: Vec<Option<f64>> = ranked
            .iter()
            .map(|found| {
                let tokens = stored.get(&found.fact.id())?;
                tokens.max_sim(query, &mut scratch).map(f64::from)
            })
            .collect();
        let span = |values: &mut dyn Iterator<Item = f64>| {
            values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            })
        };
        let (low, high) = span(&mut late.iter().flatten().copied());
        let (fused_low, fused_high) = span(&mut ranked.iter().map(|found| found.score));
        let scale = |x: f64, lo: f64, hi: f64| if hi > lo { (x - lo) / (hi - lo) } else { 1.0 };
        let w = self.weight;
        for (found, late) in ranked.iter_mut().zip(&late) {
            let fused = scale(found.score, fused_low, fused_high);
            let late = late.map_or(0.0, |x| scale(x, low, high));
            found.score = (1.0 - w) * fused + w * late;
        }
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.fact.valid_from().cmp(&a.fact.valid_from()))
                .then(a.fact.id().cmp(&b.fact.id()))
        });
        // The rest keep their order below the re-scored ones, on the same scale.
        ranked.extend(tail.into_iter().map(|mut found| {
            found.score = ((1.0 - w) * scale(found.score, fused_low, fused_high)).max(0.0);
            found
        }));
        Ok(ranked)
    }
}

/// Encodes each text's token vectors (`dimension` values per token) as `encoding`.
pub(crate) fn encode_tokens(
    encoding: TokenEncoding,
    dimension: usize,
    tokens: &[f32],
) -> Result<TokenVectors, crate::EmbedError> {
    TokenVectors::encode(encoding, dimension, tokens).map_err(|e| {
        crate::EmbedError::TokenMismatch {
            message: e.reason().to_owned(),
        }
    })
}

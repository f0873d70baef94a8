//! The scorers: [`KeywordOverlap`] (the seed's) and [`Bm25`] (the default).
//!
//! Both are [`TermWeighting`]s: the store applies them over its inverted index, so only
//! facts sharing a term with the query are scored.

use fact_store::TermWeighting;

/// The seed's keyword overlap: the share of the query's distinct terms that a fact's
/// subject, relation and object contain. Every query term counts the same, so a term every
/// fact holds (`task`) weighs as much as a rare one.
///
/// ```
/// use fact_retrieve::KeywordOverlap;
/// use fact_store::TermWeighting;
///
/// // Two of four query terms found: 2 × (1/4 × 1) = 0.5.
/// let w = KeywordOverlap;
/// assert_eq!(2.0 * w.term_weight(10, 100, 4) * w.tf_weight(3, 8, 6.0), 0.5);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeywordOverlap;

impl TermWeighting for KeywordOverlap {
    fn term_weight(&self, _df: usize, _docs: usize, query_terms: usize) -> f64 {
        1.0 / query_terms.max(1) as f64
    }

    fn tf_weight(&self, _tf: u32, _doc_len: u32, _avg_doc_len: f64) -> f64 {
        1.0
    }

    fn max_tf_weight(&self) -> Option<f64> {
        Some(1.0)
    }
}

/// Okapi BM25: terms weigh by their rarity (IDF), so a term every fact contains stops
/// dominating, and repeated terms saturate (`k1`) relative to the fact's length (`b`).
///
/// `idf = ln(1 + (N - df + 0.5) / (df + 0.5))`, always positive;
/// `tf part = tf × (k1 + 1) / (tf + k1 × (1 - b + b × len / avg_len))`.
///
/// ```
/// use fact_retrieve::Bm25;
/// use fact_store::TermWeighting;
///
/// let bm25 = Bm25::default();
/// assert!(bm25.term_weight(1, 1000, 5) > bm25.term_weight(900, 1000, 5)); // rare beats common
/// assert!(bm25.tf_weight(2, 10, 10.0) > bm25.tf_weight(1, 10, 10.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation (default 1.2).
    pub k1: f64,
    /// Length normalization, 0 (none) to 1 (full) (default 0.75).
    pub b: f64,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

impl TermWeighting for Bm25 {
    fn term_weight(&self, df: usize, docs: usize, _query_terms: usize) -> f64 {
        let (df, docs) = (df as f64, docs as f64);
        (1.0 + (docs - df + 0.5) / (df + 0.5)).ln().max(0.0)
    }

    fn tf_weight(&self, tf: u32, doc_len: u32, avg_doc_len: f64) -> f64 {
        let tf = f64::from(tf);
        // `× (1 / avg)` rather than `/ avg`: in the index's scoring loop the reciprocal is
        // loop-invariant and computed once, and a scan computes exactly the same numbers.
        let relative_len = if avg_doc_len > 0.0 {
            f64::from(doc_len) * (1.0 / avg_doc_len)
        } else {
            1.0
        };
        tf * (self.k1 + 1.0) / (tf + self.k1 * (1.0 - self.b + self.b * relative_len))
    }

    /// `k1 + 1`: the tf part only approaches it, for `k1 ≥ 0` and `b` in `0..=1` (the
    /// length factor is then never negative); other parameters give no bound.
    fn max_tf_weight(&self) -> Option<f64> {
        let sane = self.k1.is_finite() && self.k1 >= 0.0 && (0.0..=1.0).contains(&self.b);
        sane.then_some(self.k1 + 1.0)
    }
}

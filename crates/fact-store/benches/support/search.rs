//! What the search benchmarks share: BM25 as fact-retrieve's default scorer computes it,
//! and a store configuration without limits.

#![allow(dead_code)]

use fact_store::{StoreConfig, TermWeighting};

/// BM25 (k1 1.2, b 0.75), as fact-retrieve's default scorer computes it.
#[derive(Debug)]
pub(crate) struct Bm25;

impl TermWeighting for Bm25 {
    fn term_weight(&self, df: usize, docs: usize, _: usize) -> f64 {
        let (df, docs) = (df as f64, docs as f64);
        (1.0 + (docs - df + 0.5) / (df + 0.5)).ln().max(0.0)
    }

    fn tf_weight(&self, tf: u32, doc_len: u32, avg: f64) -> f64 {
        let tf = f64::from(tf);
        let relative = if avg > 0.0 {
            f64::from(doc_len) * (1.0 / avg)
        } else {
            1.0
        };
        tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * relative))
    }

    fn max_tf_weight(&self) -> Option<f64> {
        Some(2.2)
    }
}

/// No capacity, no history limit, no automatic compaction: a store's size is what the
/// benchmark put in.
pub(crate) fn unbounded() -> StoreConfig {
    StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false)
}

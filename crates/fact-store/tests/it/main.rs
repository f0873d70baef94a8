//! Integration tests of `fact-store`, through `dyn SessionFactStore` as callers use it.
//!
//! The conformance suite (`compaction`, `crud`, `long_term`, `search`, `snapshot`,
//! `temporal`, `token_vectors`, `transaction`, `vectors`) is
//! written once against `&dyn SessionFactStore` (and `&dyn LongTermStore`) and compiled
//! once per backend: each backend module below defines `store_with(config)` and
//! `long_term()` and expands `conformance_suite!()`,
//! so a new backend passes the same tests by adding one module. `store_with` gives `None`
//! when the backend cannot run here (no PostgreSQL server outside CI), and each test then
//! returns at once. `properties` runs random
//! operation sequences against every backend and the in-memory store side by side.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// `[fact.clone()]` reads better in an assertion than `std::slice::from_ref(&fact)`.
#![allow(clippy::cloned_ref_to_slice_refs)]
// The conformance files are compiled once per backend on purpose.
#![allow(clippy::duplicate_mod)]

mod workload_port;

/// The behaviour tests every backend passes, as modules of the invoking backend module
/// (whose `store_with` they call through `super::`).
macro_rules! conformance_suite {
    () => {
        #[path = "../conformance/compaction.rs"]
        mod compaction;
        #[path = "../conformance/crud.rs"]
        mod crud;
        #[path = "../conformance/long_term.rs"]
        mod long_term;
        #[path = "../conformance/search.rs"]
        mod search;
        #[path = "../conformance/snapshot.rs"]
        mod snapshot;
        #[path = "../conformance/temporal.rs"]
        mod temporal;
        // `[march.clone()]` reads as the expected history; conformance files are not
        // edited per backend.
        #[path = "../conformance/token_vectors.rs"]
        mod token_vectors;
        #[allow(clippy::cloned_ref_to_slice_refs)]
        #[path = "../conformance/transaction.rs"]
        mod transaction;
        #[path = "../conformance/vectors.rs"]
        mod vectors;
    };
}

#[cfg(feature = "sqlite")]
mod cache_budget;
#[cfg(feature = "postgres")]
mod cache_budget_pg;
#[cfg(feature = "sqlite")]
mod crash;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod durable;
mod in_memory;
mod lock_stress;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_gin;
#[cfg(feature = "postgres")]
mod postgres_replica;
mod properties;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_fts;
mod token_properties;
mod vector_properties;

use std::sync::Arc;

use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{SessionFactStore, TermQuery, TermWeighting};

/// Keyword overlap, the simplest weighting: each distinct query term a fact holds counts
/// `1 / query terms`, whatever its frequency.
#[derive(Debug)]
pub(crate) struct Overlap;

impl TermWeighting for Overlap {
    fn term_weight(&self, _: usize, _: usize, query_terms: usize) -> f64 {
        1.0 / query_terms as f64
    }

    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

pub(crate) fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap()
}

/// A dispatch fact from task `task`, valid from `t(secs)`.
pub(crate) fn fact(
    subject: &str,
    relation: &str,
    object: &str,
    task: u32,
    secs: i64,
) -> SessionFact {
    SessionFact::builder(subject, relation, object)
        .tag(Tag::Decision)
        .source(task.to_string(), SourceRole::Implementer)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

/// A memory fact with a statement and a confidence.
pub(crate) fn memory(object: &str, statement: &str, confidence: f64) -> SessionFact {
    SessionFact::builder("user", "prefers", object)
        .tag(Tag::Preference)
        .source("chat-1", SourceRole::Extractor)
        .valid_from(t(0))
        .statement(statement)
        .confidence(confidence)
        .build()
        .unwrap()
}

/// A store made by `open` over a manual clock at `t(0)`, with that clock.
pub(crate) fn store_from(
    open: impl FnOnce(Arc<dyn Clock>) -> Arc<dyn SessionFactStore>,
) -> (Arc<dyn SessionFactStore>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t(0)));
    (open(clock.clone()), clock)
}

/// The valid facts as `subject relation object` lines, oldest first.
pub(crate) fn valid_lines(store: &dyn SessionFactStore) -> Vec<String> {
    store
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
        .collect()
}

/// The facts a search with [`Overlap`] finds for `text` (the rest of `query` as given), as
/// `subject relation object` lines with their scores, best first.
pub(crate) fn search(
    store: &dyn SessionFactStore,
    text: &str,
    query: TermQuery<'_>,
) -> Vec<(String, f64)> {
    let mut query = query;
    query.text = text;
    store
        .search(&query, &Overlap)
        .unwrap()
        .into_iter()
        .map(|s| {
            (
                format!(
                    "{} {} {}",
                    s.fact.subject(),
                    s.fact.relation(),
                    s.fact.object()
                ),
                s.score,
            )
        })
        .collect()
}

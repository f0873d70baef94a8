//! Integration tests of `fact-store`, through `dyn SessionFactStore` as callers use it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod compaction;
mod crud;
mod search;
mod snapshot;
mod temporal;
mod workload_port;

use std::sync::Arc;

use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};

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

pub(crate) fn store_with(config: StoreConfig) -> (Arc<dyn SessionFactStore>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t(0)));
    (
        Arc::new(InMemorySessionFactStore::new(config, clock.clone())),
        clock,
    )
}

pub(crate) fn store() -> (Arc<dyn SessionFactStore>, Arc<ManualClock>) {
    store_with(StoreConfig::default())
}

/// The valid facts as `subject relation object` lines, oldest first.
pub(crate) fn valid_lines(store: &dyn SessionFactStore) -> Vec<String> {
    store
        .valid_facts()
        .iter()
        .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
        .collect()
}

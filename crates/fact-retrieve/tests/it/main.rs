//! Integration tests of `fact-retrieve`: the pipeline step by step, the formatters, and
//! property tests against a brute-force scan.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod dedup;
mod expand;
mod format;
mod hybrid;
mod late;
mod memory;
mod pipeline;
mod properties;
mod query;
mod token;

use std::sync::Arc;

use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};

pub(crate) fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_800_000_000 + secs).unwrap()
}

pub(crate) fn fact(
    subject: &str,
    relation: &str,
    object: &str,
    task: &str,
    secs: i64,
) -> SessionFact {
    tagged(subject, relation, object, task, secs, Tag::Decision)
}

pub(crate) fn tagged(
    subject: &str,
    relation: &str,
    object: &str,
    task: &str,
    secs: i64,
    tag: Tag,
) -> SessionFact {
    SessionFact::builder(subject, relation, object)
        .tag(tag)
        .source(task, SourceRole::Implementer)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

pub(crate) fn store() -> Arc<dyn SessionFactStore> {
    let config = StoreConfig::default().with_auto_compact(false);
    Arc::new(InMemorySessionFactStore::new(
        config,
        Arc::new(fact_model::ManualClock::new(t(0))),
    ))
}

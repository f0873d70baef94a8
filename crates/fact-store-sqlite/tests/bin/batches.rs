//! The batches of the crash tests, compiled into both the writer
//! (`fact-store-crash-writer`) and the test that checks what it left (`tests/it/crash.rs`).

use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
use fact_store::StoreConfig;

/// Facts per batch.
pub(crate) const BATCH: usize = 100;

/// A store that keeps everything: no capacity or history limit, no automatic compaction.
pub(crate) fn unbounded() -> StoreConfig {
    StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false)
}

/// Batch `n` of the writer `writer`: [`BATCH`] file changes of task `n`, none of which
/// invalidates another writer's or another batch's facts.
pub(crate) fn batch(
    writer: &str,
    n: usize,
) -> Result<Vec<SessionFact>, Box<dyn std::error::Error>> {
    let at = Timestamp::from_unix_secs(1_800_000_000 + n as i64)?;
    (0..BATCH)
        .map(|i| {
            SessionFact::builder(
                format!("{writer}/batch{n}/src/file{i}.rs"),
                "modified_by",
                format!("task:{n}"),
            )
            .tag(Tag::FileChange)
            .source(n.to_string(), SourceRole::Implementer)
            .valid_from(at)
            .build()
            .map_err(Into::into)
        })
        .collect()
}

//! The column encoding of facts: what a [`SessionFact`] looks like in a row, and back.
//!
//! Ids are the 8 bytes of a [`FactId`] read as a big-endian `i64`; instants are
//! microseconds since the Unix epoch; tags are their wire names joined by `,`; batch
//! numbers are the bit pattern of the `u64` (compared in Rust, never in SQL). A row read
//! back goes through [`SessionFact`]'s validating builder, so a damaged row is a
//! [`DbError::Corrupt`], never a panic or a fact that breaks an invariant.

use fact_model::{FactId, SessionFact, SourceRole, Tag, Timestamp};
use rusqlite::Row;

use super::error::{DbError, DbResult};

/// The fact columns every fact query selects, in the order [`read_fact`] reads them.
pub(super) const FACT_COLUMNS: &str = "subject, relation, object, tags, valid_from, valid_to, \
     source_task_id, source_role, confidence, statement, superseded_by";

/// The number of columns in [`FACT_COLUMNS`].
pub(super) const FACT_COLUMN_COUNT: usize = 11;

/// A fact id as stored.
pub(super) fn id_to_sql(id: FactId) -> i64 {
    i64::from_be_bytes(*id.as_bytes())
}

/// A stored fact id.
pub(super) fn id_from_sql(value: i64) -> DbResult<FactId> {
    let text = format!("{:016x}", u64::from_be_bytes(value.to_be_bytes()));
    text.parse()
        .map_err(|e| DbError::Corrupt(format!("stored fact id: {e}")))
}

/// A batch number as stored (its bit pattern).
pub(super) fn batch_to_sql(batch: u64) -> i64 {
    i64::from_ne_bytes(batch.to_ne_bytes())
}

/// A stored batch number.
pub(super) fn batch_from_sql(value: i64) -> u64 {
    u64::from_ne_bytes(value.to_ne_bytes())
}

/// A stored instant.
pub(super) fn time_from_sql(micros: i64) -> DbResult<Timestamp> {
    Timestamp::from_unix_micros(micros)
        .map_err(|e| DbError::Corrupt(format!("stored instant: {e}")))
}

/// Tags as stored.
pub(super) fn tags_to_sql(tags: &[Tag]) -> String {
    let mut out = String::new();
    for tag in tags {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(tag.as_str());
    }
    out
}

/// Stored tags.
pub(super) fn tags_from_sql(text: &str) -> DbResult<Vec<Tag>> {
    text.split(',')
        .map(|name| {
            name.parse()
                .map_err(|e| DbError::Corrupt(format!("stored tags {text:?}: {e}")))
        })
        .collect()
}

/// Reads the fact in columns `at..at + FACT_COLUMN_COUNT` (see [`FACT_COLUMNS`]).
pub(super) fn read_fact(row: &Row<'_>, at: usize) -> DbResult<SessionFact> {
    let subject: String = row.get(at)?;
    let relation: String = row.get(at + 1)?;
    let object: String = row.get(at + 2)?;
    let tags: String = row.get(at + 3)?;
    let valid_from: i64 = row.get(at + 4)?;
    let valid_to: Option<i64> = row.get(at + 5)?;
    let source_task_id: String = row.get(at + 6)?;
    let source_role: String = row.get(at + 7)?;
    let confidence: f64 = row.get(at + 8)?;
    let statement: Option<String> = row.get(at + 9)?;
    let superseded_by: Option<i64> = row.get(at + 10)?;
    let role: SourceRole = source_role
        .parse()
        .map_err(|e| DbError::Corrupt(format!("stored source role: {e}")))?;
    let mut builder = SessionFact::builder(subject, relation, object)
        .tags(tags_from_sql(&tags)?)
        .valid_from(time_from_sql(valid_from)?)
        .source(source_task_id, role)
        .confidence(confidence);
    if let Some(valid_to) = valid_to {
        builder = builder.valid_to(time_from_sql(valid_to)?);
    }
    if let Some(statement) = statement {
        builder = builder.statement(statement);
    }
    if let Some(by) = superseded_by {
        builder = builder.superseded_by(id_from_sql(by)?);
    }
    builder
        .build()
        .map_err(|e| DbError::Corrupt(format!("stored fact is invalid: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_batches_round_trip() {
        for triple in [("a", "b", "c"), ("src/lib.rs", "modified_by", "task:1")] {
            let id = FactId::for_triple(triple.0, triple.1, triple.2);
            assert_eq!(id_from_sql(id_to_sql(id)).unwrap(), id);
        }
        for batch in [0, 1, u64::MAX, 1 << 63] {
            assert_eq!(batch_from_sql(batch_to_sql(batch)), batch);
        }
        let tags = [Tag::Decision, Tag::FileChange];
        assert_eq!(tags_from_sql(&tags_to_sql(&tags)).unwrap(), tags);
        assert!(tags_from_sql("decision,nonsense").is_err());
    }
}

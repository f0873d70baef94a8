//! The column encoding of facts shared by the SQL stores: what a [`SessionFact`] looks
//! like in a row, and back.
//!
//! Ids are the 8 bytes of a [`FactId`] read as a big-endian `i64`; instants are
//! microseconds since the Unix epoch; tags are their wire names joined by `,`; batch
//! numbers are the bit pattern of the `u64` (compared in Rust, never in SQL). A row read
//! back goes through [`SessionFact`]'s validating builder, so a damaged row is a
//! [`DbError::Corrupt`], never a panic or a fact that breaks an invariant.

use fact_model::{FactId, SessionFact, SourceRole, Tag, Timestamp};

use super::error::{DbError, DbResult};

/// The fact columns every fact query selects, in the order of [`FactRow`]'s fields.
pub(crate) const FACT_COLUMNS: &str = "subject, relation, object, tags, valid_from, valid_to, \
     source_task_id, source_role, confidence, statement, superseded_by, recorded_at";

/// The number of columns in [`FACT_COLUMNS`].
pub(crate) const FACT_COLUMN_COUNT: usize = 12;

/// The [`FACT_COLUMNS`] of one row, as the database gave them.
#[derive(Debug)]
pub(crate) struct FactRow {
    pub(crate) subject: String,
    pub(crate) relation: String,
    pub(crate) object: String,
    pub(crate) tags: String,
    pub(crate) valid_from: i64,
    pub(crate) valid_to: Option<i64>,
    pub(crate) source_task_id: String,
    pub(crate) source_role: String,
    pub(crate) confidence: f64,
    pub(crate) statement: Option<String>,
    pub(crate) superseded_by: Option<i64>,
    pub(crate) recorded_at: Option<i64>,
}

impl FactRow {
    /// The fact the row holds, checked by [`SessionFact`]'s builder.
    pub(crate) fn into_fact(self) -> DbResult<SessionFact> {
        let role: SourceRole = self
            .source_role
            .parse()
            .map_err(|e| DbError::Corrupt(format!("stored source role: {e}")))?;
        let mut builder = SessionFact::builder(self.subject, self.relation, self.object)
            .tags(tags_from_sql(&self.tags)?)
            .valid_from(time_from_sql(self.valid_from)?)
            .source(self.source_task_id, role)
            .confidence(self.confidence);
        if let Some(valid_to) = self.valid_to {
            builder = builder.valid_to(time_from_sql(valid_to)?);
        }
        if let Some(statement) = self.statement {
            builder = builder.statement(statement);
        }
        if let Some(by) = self.superseded_by {
            builder = builder.superseded_by(id_from_sql(by)?);
        }
        if let Some(at) = self.recorded_at {
            builder = builder.recorded_at(time_from_sql(at)?);
        }
        builder
            .build()
            .map_err(|e| DbError::Corrupt(format!("stored fact is invalid: {e}")))
    }
}

/// A fact id as stored.
pub(crate) fn id_to_sql(id: FactId) -> i64 {
    i64::from_be_bytes(*id.as_bytes())
}

/// A stored fact id.
pub(crate) fn id_from_sql(value: i64) -> DbResult<FactId> {
    let text = format!("{:016x}", u64::from_be_bytes(value.to_be_bytes()));
    text.parse()
        .map_err(|e| DbError::Corrupt(format!("stored fact id: {e}")))
}

/// A batch number as stored (its bit pattern).
pub(crate) fn batch_to_sql(batch: u64) -> i64 {
    i64::from_ne_bytes(batch.to_ne_bytes())
}

/// A stored batch number.
pub(crate) fn batch_from_sql(value: i64) -> u64 {
    u64::from_ne_bytes(value.to_ne_bytes())
}

/// A stored instant.
pub(crate) fn time_from_sql(micros: i64) -> DbResult<Timestamp> {
    Timestamp::from_unix_micros(micros)
        .map_err(|e| DbError::Corrupt(format!("stored instant: {e}")))
}

/// Tags as stored.
pub(crate) fn tags_to_sql(tags: &[Tag]) -> String {
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
pub(crate) fn tags_from_sql(text: &str) -> DbResult<Vec<Tag>> {
    text.split(',')
        .map(|name| {
            name.parse()
                .map_err(|e| DbError::Corrupt(format!("stored tags {text:?}: {e}")))
        })
        .collect()
}

/// The id of a term-document token (`t12`).
pub(crate) fn parse_term(token: &str) -> DbResult<i64> {
    token
        .strip_prefix('t')
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| DbError::Corrupt(format!("term document token {token:?}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

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
        assert_eq!(parse_term("t12").unwrap(), 12);
        assert!(parse_term("x12").is_err());
    }
}

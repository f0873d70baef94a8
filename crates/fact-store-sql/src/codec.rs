//! The column encoding of facts shared by the SQL stores: what a [`SessionFact`] looks
//! like in a row, and back.
//!
//! Ids are the 8 bytes of a [`FactId`] read as a big-endian `i64`; instants are
//! microseconds since the Unix epoch; tags are their wire names joined by `,`; batch
//! numbers are the bit pattern of the `u64` (compared in Rust, never in SQL). A row read
//! back goes through [`SessionFact`]'s validating builder, so a damaged row is a
//! [`DbError::Corrupt`], never a panic or a fact that breaks an invariant.

use fact_model::{FactId, Message, Metadata, SessionFact, SourceRole, Tag, Timestamp};

use super::error::{DbError, DbResult};

/// The fact columns every fact query selects, in the order of [`FactRow`]'s fields.
pub const FACT_COLUMNS: &str = "subject, relation, object, tags, valid_from, valid_to, \
     source_task_id, source_role, confidence, statement, superseded_by, recorded_at, metadata";

/// The number of columns in [`FACT_COLUMNS`].
pub const FACT_COLUMN_COUNT: usize = 13;

/// The [`FACT_COLUMNS`] of one row, as the database gave them.
#[derive(Debug)]
pub struct FactRow {
    /// The subject.
    pub subject: String,
    /// The relation.
    pub relation: String,
    /// The object.
    pub object: String,
    /// The tags, comma-separated (`decision,file_change`).
    pub tags: String,
    /// `valid_from` in microseconds since the epoch.
    pub valid_from: i64,
    /// `valid_to` in microseconds, `NULL` while valid.
    pub valid_to: Option<i64>,
    /// The source task or episode id.
    pub source_task_id: String,
    /// The source role, as `SourceRole` spells it.
    pub source_role: String,
    /// The confidence, 0 to 1.
    pub confidence: f64,
    /// The memory statement, if any.
    pub statement: Option<String>,
    /// The id of the fact that superseded it, as stored.
    pub superseded_by: Option<i64>,
    /// When the store recorded it, in microseconds.
    pub recorded_at: Option<i64>,
    /// Its metadata, decoded by the backend from its column type
    /// ([`metadata_from_text`], [`metadata_from_json`]).
    pub metadata: Metadata,
}

impl FactRow {
    /// The fact the row holds, checked by [`SessionFact`]'s builder.
    pub fn into_fact<E>(self) -> DbResult<SessionFact, E> {
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
            .metadata(self.metadata)
            .build()
            .map_err(|e| DbError::Corrupt(format!("stored fact is invalid: {e}")))
    }
}

/// Metadata as a text column holds it: a JSON object, `NULL` for none.
pub fn metadata_to_text(metadata: &Metadata) -> Option<String> {
    (!metadata.is_empty()).then(|| metadata.to_json().to_string())
}

/// Metadata as [`metadata_to_text`] stored it.
pub fn metadata_from_text<E>(text: Option<&str>) -> DbResult<Metadata, E> {
    let Some(text) = text else {
        return Ok(Metadata::new());
    };
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| DbError::Corrupt(format!("stored metadata is not JSON: {e}")))?;
    metadata_from_json(Some(value))
}

/// Metadata from a JSON column's value, `NULL` for none.
pub fn metadata_from_json<E>(value: Option<serde_json::Value>) -> DbResult<Metadata, E> {
    value.map_or_else(
        || Ok(Metadata::new()),
        |value| {
            Metadata::from_json(&value)
                .map_err(|e| DbError::Corrupt(format!("stored metadata is invalid: {e}")))
        },
    )
}

/// A fact id as stored.
pub fn id_to_sql(id: FactId) -> i64 {
    i64::from_be_bytes(*id.as_bytes())
}

/// A stored fact id.
pub fn id_from_sql<E>(value: i64) -> DbResult<FactId, E> {
    let text = format!("{:016x}", u64::from_be_bytes(value.to_be_bytes()));
    text.parse()
        .map_err(|e| DbError::Corrupt(format!("stored fact id: {e}")))
}

/// A batch number as stored (its bit pattern).
pub fn batch_to_sql(batch: u64) -> i64 {
    i64::from_ne_bytes(batch.to_ne_bytes())
}

/// A stored batch number.
pub fn batch_from_sql(value: i64) -> u64 {
    u64::from_ne_bytes(value.to_ne_bytes())
}

/// A stored instant.
pub fn time_from_sql<E>(micros: i64) -> DbResult<Timestamp, E> {
    Timestamp::from_unix_micros(micros)
        .map_err(|e| DbError::Corrupt(format!("stored instant: {e}")))
}

/// Tags as stored.
pub fn tags_to_sql(tags: &[Tag]) -> String {
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
pub fn tags_from_sql<E>(text: &str) -> DbResult<Vec<Tag>, E> {
    text.split(',')
        .map(|name| {
            name.parse()
                .map_err(|e| DbError::Corrupt(format!("stored tags {text:?}: {e}")))
        })
        .collect()
}

/// The id of a term-document token (`t12`).
pub fn parse_term<E>(token: &str) -> DbResult<i64, E> {
    token
        .strip_prefix('t')
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| DbError::Corrupt(format!("term document token {token:?}")))
}

/// The messages of a version-2 transcript (JSON Lines), as both SQL stores' migrations
/// read it: blank lines are skipped, and so, with a warning naming the episode and the
/// line, are the lines that are not a message.
pub fn parse_transcript(episode: &str, transcript: &str) -> Vec<Message> {
    let mut messages = Vec::new();
    for (index, line) in transcript.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Message>(line) {
            Ok(message) => messages.push(message),
            Err(error) => tracing::warn!(
                episode,
                line = index + 1,
                %error,
                "a transcript line is not a message; it is left out of the episode's messages"
            ),
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn ids_and_batches_round_trip() {
        for triple in [("a", "b", "c"), ("src/lib.rs", "modified_by", "task:1")] {
            let id = FactId::for_triple(triple.0, triple.1, triple.2);
            assert_eq!(id_from_sql::<()>(id_to_sql(id)).unwrap(), id);
        }
        for batch in [0, 1, u64::MAX, 1 << 63] {
            assert_eq!(batch_from_sql(batch_to_sql(batch)), batch);
        }
        let tags = [Tag::Decision, Tag::FileChange];
        assert_eq!(tags_from_sql::<()>(&tags_to_sql(&tags)).unwrap(), tags);
        assert!(tags_from_sql::<()>("decision,nonsense").is_err());
        assert_eq!(parse_term::<()>("t12").unwrap(), 12);
        assert!(parse_term::<()>("x12").is_err());
    }

    #[test]
    fn transcript_lines_that_are_not_messages_are_skipped() {
        let transcript = "{\"role\":\"user\",\"content\":\"hi\",\"time\":\"2026-03-01T09:00:00Z\"}\n\
             user: not json\n\n{\"role\":\"robot\",\"content\":\"x\"}\n\
             {\"role\":\"assistant\",\"content\":\"hello\"}";
        let messages = parse_transcript("ep_1", transcript);
        assert_eq!(messages.len(), 2);
        assert!(messages[0].timestamp.is_some());
        assert_eq!(messages[1].content, "hello");
    }
}

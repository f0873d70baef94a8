//! [`Snapshot`]: the JSON form of a store's full history.

use std::fmt;
use std::sync::Arc;

use fact_model::SessionFact;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::{ImportDiagnostic, StoreError, StoreResult};

/// The snapshot format version this crate writes and reads.
pub const SNAPSHOT_VERSION: u64 = 1;

/// Every version a store holds, oldest first, each with the batch it came from.
///
/// ```json
/// {"version": 1, "records": [{"batch": 1, "fact": {"id": "…", "subject": "…", …}}]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always [`SNAPSHOT_VERSION`].
    pub version: u64,
    /// The versions, oldest first.
    pub records: Vec<SnapshotRecord>,
}

/// One version of a fact, with its batch number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    /// The batch that added (or last refreshed) this version; later batches have larger numbers.
    pub batch: u64,
    /// The fact.
    pub fact: SessionFact,
}

impl Snapshot {
    /// Parses a JSON snapshot document, record by record.
    ///
    /// A record that is not a valid fact is left out and reported (with its position in
    /// `records`), so one bad record never costs the others.
    ///
    /// ```
    /// use fact_store::Snapshot;
    ///
    /// let json = r#"{"version": 1, "records": [{"batch": 1, "fact": {"subject": "a"}}]}"#;
    /// let (snapshot, skipped) = Snapshot::from_json(json)?;
    /// assert!(snapshot.records.is_empty());
    /// assert_eq!(skipped[0].index, 0);
    /// assert!(Snapshot::from_json("[]").is_err());
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::SnapshotJson`] when the text is not a snapshot document at all,
    /// [`StoreError::SnapshotVersion`] for a version other than [`SNAPSHOT_VERSION`].
    pub fn from_json(json: &str) -> StoreResult<(Snapshot, Vec<ImportDiagnostic>)> {
        // Fast path: a document whose every record is valid (any snapshot this crate
        // wrote) parses straight into facts. Only when that fails is the document parsed
        // again record by record into JSON values, to skip and report the bad ones: the
        // value tree costs twice the typed parse.
        if let Some((version, records)) = parse_typed(json) {
            check_version(version)?;
            return Ok((Snapshot { version, records }, Vec::new()));
        }
        #[derive(Deserialize)]
        struct Document {
            version: u64,
            records: Vec<serde_json::Value>,
        }
        let document: Document =
            serde_json::from_str(json).map_err(|e| StoreError::SnapshotJson(Arc::new(e)))?;
        check_version(document.version)?;
        let mut records = Vec::with_capacity(document.records.len());
        let mut skipped = Vec::new();
        for (index, value) in document.records.into_iter().enumerate() {
            match serde_json::from_value::<SnapshotRecord>(value) {
                Ok(record) => records.push(record),
                Err(e) => skipped.push(ImportDiagnostic {
                    index,
                    message: format!("invalid record: {e}"),
                }),
            }
        }
        let snapshot = Snapshot {
            version: document.version,
            records,
        };
        Ok((snapshot, skipped))
    }

    /// Checks that a store can import this snapshot's version.
    ///
    /// # Errors
    ///
    /// [`StoreError::SnapshotVersion`] for a version other than [`SNAPSHOT_VERSION`].
    pub fn check_version(&self) -> StoreResult<()> {
        check_version(self.version)
    }

    /// The snapshot as pretty-printed JSON.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Written into a buffer sized for the whole document up front: growing a buffer of
        // tens of megabytes by doubling copies it again and again.
        let mut buffer = Vec::with_capacity(self.json_size_estimate());
        // Serializing plain data with string keys cannot fail, and serde_json writes
        // UTF-8; fall back to an empty document rather than panic if either ever failed.
        match serde_json::to_writer_pretty(&mut buffer, self) {
            Ok(()) => String::from_utf8(buffer).unwrap_or_else(|_| String::from("{}")),
            Err(_) => String::from("{}"),
        }
    }

    /// At least the length of [`to_json`](Self::to_json)'s text when no text needs
    /// escapes: each record's keys, punctuation, indentation and fixed-width values, room
    /// for the longest numbers, its optional fields and its texts. Capacity beyond what is
    /// written costs address space, not memory: the pages are never touched.
    fn json_size_estimate(&self) -> usize {
        /// A record with one tag, `valid_to: null` and no optional field, with room for a
        /// 20-digit batch and a 24-character confidence.
        const RECORD: usize = 440;
        /// Each tag after the first: a line of indentation, quotes and the longest name.
        const TAG: usize = 32;
        /// A `valid_to` timestamp instead of `null`.
        const VALID_TO: usize = 32;
        /// The `superseded_by` line.
        const SUPERSEDED_BY: usize = 48;
        /// The `statement` line, without its text.
        const STATEMENT: usize = 32;
        self.records.iter().fold(64usize, |sum, record| {
            let fact = &record.fact;
            let mut size = RECORD
                + fact.subject().len()
                + fact.relation().len()
                + fact.object().len()
                + fact.source_task_id().len()
                + TAG * fact.tags().as_slice().len().saturating_sub(1);
            if fact.valid_to().is_some() {
                size += VALID_TO;
            }
            if fact.superseded_by().is_some() {
                size += SUPERSEDED_BY;
            }
            if let Some(statement) = fact.statement() {
                size += STATEMENT + statement.len();
            }
            sum.saturating_add(size)
        })
    }
}

/// Parses a document whose every record is valid straight into records, or `None` when
/// anything in it is not (the caller then parses again to report why).
fn parse_typed(json: &str) -> Option<(u64, Vec<SnapshotRecord>)> {
    /// Bytes of snapshot text per record, a little under what [`Snapshot::to_json`]
    /// writes for a typical fact, so the records fit the first allocation.
    const BYTES_PER_RECORD: usize = 400;
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let seed = TypedDocument {
        capacity: json.len() / BYTES_PER_RECORD,
    };
    let parsed = seed.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(parsed)
}

/// The snapshot document read in one typed pass: `version` and `records` (each once, other
/// keys ignored, as a derived `Deserialize` reads them), the records into a vector of
/// `capacity` to start with.
struct TypedDocument {
    capacity: usize,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum DocumentKey {
    Version,
    Records,
    #[serde(other)]
    Other,
}

impl<'de> DeserializeSeed<'de> for TypedDocument {
    type Value = (u64, Vec<SnapshotRecord>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_struct("Snapshot", &["version", "records"], self)
    }
}

impl<'de> Visitor<'de> for TypedDocument {
    type Value = (u64, Vec<SnapshotRecord>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a snapshot document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut version = None;
        let mut records = None;
        while let Some(key) = map.next_key::<DocumentKey>()? {
            match key {
                DocumentKey::Version if version.is_some() => {
                    return Err(de::Error::duplicate_field("version"));
                }
                DocumentKey::Version => version = Some(map.next_value::<u64>()?),
                DocumentKey::Records if records.is_some() => {
                    return Err(de::Error::duplicate_field("records"));
                }
                DocumentKey::Records => {
                    records = Some(map.next_value_seed(TypedRecords {
                        capacity: self.capacity,
                    })?);
                }
                DocumentKey::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let version = version.ok_or_else(|| de::Error::missing_field("version"))?;
        let records = records.ok_or_else(|| de::Error::missing_field("records"))?;
        Ok((version, records))
    }
}

/// The `records` list, read into a vector of `capacity` to start with.
struct TypedRecords {
    capacity: usize,
}

impl<'de> DeserializeSeed<'de> for TypedRecords {
    type Value = Vec<SnapshotRecord>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TypedRecords {
    type Value = Vec<SnapshotRecord>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut records = Vec::with_capacity(self.capacity);
        while let Some(record) = seq.next_element::<SnapshotRecord>()? {
            records.push(record);
        }
        Ok(records)
    }
}

fn check_version(found: u64) -> StoreResult<()> {
    if found == SNAPSHOT_VERSION {
        Ok(())
    } else {
        Err(StoreError::SnapshotVersion {
            found,
            supported: SNAPSHOT_VERSION,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use fact_model::{SourceRole, Tag, Timestamp};

    use super::*;

    fn snapshot() -> Snapshot {
        let fact = |s: &str, at: i64| {
            SessionFact::builder(s, "says \"hi\"\n", "é\u{1}")
                .tags([Tag::Test, Tag::Goal])
                .source("1", SourceRole::Reviewer)
                .valid_from(Timestamp::from_unix_micros(at).unwrap())
                .confidence(0.1 + 0.2)
                .statement("a statement")
                .build()
                .unwrap()
        };
        Snapshot {
            version: SNAPSHOT_VERSION,
            records: vec![
                SnapshotRecord {
                    batch: 1,
                    fact: fact("a", 1),
                },
                SnapshotRecord {
                    batch: 2,
                    fact: fact("b", 1_000),
                },
            ],
        }
    }

    #[test]
    fn the_size_estimate_covers_the_longest_records() {
        let fact = SessionFact::builder("s", "r", "o")
            .tags([Tag::Relationship, Tag::Observation, Tag::Preference])
            .source("1", SourceRole::Implementer)
            .valid_from(Timestamp::from_unix_micros(123_456).unwrap())
            .valid_to(Timestamp::MAX)
            .superseded_by(fact_model::FactId::for_triple("a", "b", "c"))
            .confidence(2.225_073_858_507_201_4e-308)
            .statement("x")
            .build()
            .unwrap();
        let record = SnapshotRecord {
            batch: u64::MAX,
            fact,
        };
        let snapshot = Snapshot {
            version: SNAPSHOT_VERSION,
            records: vec![record.clone(), record],
        };
        assert!(snapshot.json_size_estimate() >= snapshot.to_json().len());
        let snapshot = self::snapshot();
        assert!(snapshot.json_size_estimate() >= snapshot.to_json().len());
    }

    #[test]
    fn to_json_is_the_pretty_serde_form() {
        let snapshot = snapshot();
        assert_eq!(
            snapshot.to_json(),
            serde_json::to_string_pretty(&snapshot).unwrap()
        );
        let empty = Snapshot {
            version: SNAPSHOT_VERSION,
            records: Vec::new(),
        };
        assert_eq!(
            empty.to_json(),
            serde_json::to_string_pretty(&empty).unwrap()
        );
    }

    #[test]
    fn the_typed_pass_reads_what_a_derived_document_reads() {
        let snapshot = snapshot();
        let json = serde_json::to_string(&snapshot).unwrap();
        assert_eq!(
            Snapshot::from_json(&json).unwrap(),
            (snapshot.clone(), Vec::new())
        );
        let records = serde_json::to_string(&snapshot.records).unwrap();
        let reordered =
            format!(r#"{{"extra": [1, {{"x": null}}], "records": {records}, "version": 1}}"#);
        assert_eq!(
            Snapshot::from_json(&reordered).unwrap(),
            (snapshot, Vec::new())
        );
        for bad in [
            r#"{"version": 1, "version": 1, "records": []}"#,
            r#"{"version": 1, "records": [], "records": []}"#,
            r#"{"version": 1}"#,
            r#"{"records": []}"#,
            r#"{"version": 1, "records": []} x"#,
            r#"{"version": 1, "records": {}}"#,
        ] {
            assert!(parse_typed(bad).is_none(), "{bad}");
            assert!(Snapshot::from_json(bad).is_err(), "{bad}");
        }
    }
}

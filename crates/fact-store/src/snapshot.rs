//! [`Snapshot`]: the JSON form of a store's full history.

use std::sync::Arc;

use fact_model::SessionFact;
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
        #[derive(Deserialize)]
        struct Typed {
            version: u64,
            records: Vec<SnapshotRecord>,
        }
        if let Ok(Typed { version, records }) = serde_json::from_str::<Typed>(json) {
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
        // Serializing plain data with string keys cannot fail; fall back to an empty
        // document rather than panic if it ever did.
        serde_json::to_string_pretty(self).unwrap_or_else(|_| String::from("{}"))
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

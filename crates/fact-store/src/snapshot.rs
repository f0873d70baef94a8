//! [`Snapshot`]: the JSON form of a store's full history.

use fact_model::SessionFact;
use serde::{Deserialize, Serialize};

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
    /// The snapshot as pretty-printed JSON.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail; fall back to an empty
        // document rather than panic if it ever did.
        serde_json::to_string_pretty(self).unwrap_or_else(|_| String::from("{}"))
    }
}

//! Reading the shared fact columns ([`fact_store_sql::codec`]) from a SQLite row.

use fact_model::SessionFact;
use rusqlite::Row;

use crate::error::DbResult;
use fact_store_sql::codec::{FactRow, metadata_from_text};

/// Reads the fact in columns `at..at + FACT_COLUMN_COUNT` (see
/// [`FACT_COLUMNS`](fact_store_sql::codec::FACT_COLUMNS)).
pub(super) fn read_fact(row: &Row<'_>, at: usize) -> DbResult<SessionFact> {
    FactRow {
        subject: row.get(at)?,
        relation: row.get(at + 1)?,
        object: row.get(at + 2)?,
        tags: row.get(at + 3)?,
        valid_from: row.get(at + 4)?,
        valid_to: row.get(at + 5)?,
        source_task_id: row.get(at + 6)?,
        source_role: row.get(at + 7)?,
        confidence: row.get(at + 8)?,
        statement: row.get(at + 9)?,
        superseded_by: row.get(at + 10)?,
        recorded_at: row.get(at + 11)?,
        metadata: metadata_from_text(row.get::<_, Option<String>>(at + 12)?.as_deref())?,
    }
    .into_fact()
}

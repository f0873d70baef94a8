//! Reading the shared fact columns ([`fact_store_sql::codec`]) from a PostgreSQL row.

use fact_model::SessionFact;
use postgres::Row;

use crate::error::DbResult;
use fact_store_sql::codec::{FactRow, metadata_from_json};

/// Reads the fact in columns `at..at + FACT_COLUMN_COUNT` (see
/// [`FACT_COLUMNS`](fact_store_sql::codec::FACT_COLUMNS)).
pub(super) fn read_fact(row: &Row, at: usize) -> DbResult<SessionFact> {
    FactRow {
        subject: row.try_get(at)?,
        relation: row.try_get(at + 1)?,
        object: row.try_get(at + 2)?,
        tags: row.try_get(at + 3)?,
        valid_from: row.try_get(at + 4)?,
        valid_to: row.try_get(at + 5)?,
        source_task_id: row.try_get(at + 6)?,
        source_role: row.try_get(at + 7)?,
        confidence: row.try_get(at + 8)?,
        statement: row.try_get(at + 9)?,
        superseded_by: row.try_get(at + 10)?,
        recorded_at: row.try_get(at + 11)?,
        metadata: metadata_from_json(row.try_get(at + 12)?)?,
    }
    .into_fact()
}

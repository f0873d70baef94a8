//! The conformance suite against `SqliteFactStore` without its search cache: every
//! search is answered by FTS5 and the stored term documents.

use fact_store_sqlite::SqliteOptions;

use crate::sqlite::Sqlite;

fact_store::conformance_suite!(Sqlite(SqliteOptions::default().with_search_cache(false)));

//! [`FactVectors`](fact_store::FactVectors) for [`Sqlite`] (what a [`SqliteFactStore`](crate::SqliteFactStore)'s `vectors` gives): the `embeddings` table (schema version 2)
//! and the store object's in-process index of it ([`fact_store_sql::vectors`] says how the
//! index follows the table), and the `token_vectors` table (schema version 6).

use fact_model::{FactId, SessionFact};
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

use super::codec::read_fact;
use crate::driver::{Sqlite, query_facts};
use crate::error::{DbError, DbResult};
use fact_store::{
    FactVectors, ScoredFact, StoreResult, TokenVectorStats, TokenVectors, VectorQuery,
};
use fact_store_sql::codec::FACT_COLUMNS;
use fact_store_sql::vectors::{EachRow, Prepared, TokenRows, VectorReads, count};

/// A limit as SQLite binds it.
fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The reads of a vector search, in one read transaction of one scope.
struct Reads<'t, 'c> {
    tx: &'t Transaction<'c>,
    scope: i64,
}

impl VectorReads<rusqlite::Error> for Reads<'_, '_> {
    fn embeddings_after(
        &mut self,
        model: &str,
        after: i64,
        each: &mut EachRow<'_, rusqlite::Error>,
    ) -> DbResult<()> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT seq, fact, vector FROM embeddings \
             WHERE scope = ?1 AND model = ?2 AND seq > ?3 ORDER BY seq",
        )?;
        let mut rows = stmt.query(params![self.scope, model, after])?;
        while let Some(row) = rows.next()? {
            let vector = row
                .get_ref(2)?
                .as_blob()
                .map_err(|e| DbError::Corrupt(format!("stored embedding: {e}")))?;
            each(row.get(0)?, row.get(1)?, vector)?;
        }
        Ok(())
    }

    fn candidates(
        &mut self,
        model: &str,
        ids: &[i64],
    ) -> DbResult<Vec<(i64, Option<SessionFact>)>> {
        // The ids as one JSON array: one statement whatever their number.
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let mut stmt = self.tx.prepare_cached(&format!(
            "SELECT e.fact, f.seq IS NOT NULL, {FACT_COLUMNS} FROM embeddings AS e \
             LEFT JOIN facts AS f ON f.scope = e.scope AND f.id = e.fact AND f.valid_to IS NULL \
             WHERE e.scope = ?1 AND e.model = ?2 \
             AND e.fact IN (SELECT value FROM json_each(?3))"
        ))?;
        let mut rows = stmt.query(params![self.scope, model, format!("[{list}]")])?;
        let mut out = Vec::with_capacity(ids.len());
        while let Some(row) = rows.next()? {
            let valid: bool = row.get(1)?;
            let fact = if valid {
                Some(read_fact(row, 2)?)
            } else {
                None
            };
            out.push((row.get(0)?, fact));
        }
        Ok(out)
    }
}

impl FactVectors for Sqlite {
    /// Stores the embeddings in one `BEGIN IMMEDIATE` transaction (see
    /// [`FactVectors::put_embeddings`](fact_store::FactVectors::put_embeddings)); a busy or failing database maps to
    /// [`StoreError`](fact_store::StoreError) codes as every write of this store does.
    fn put_embeddings(
        &self,
        model: &str,
        embeddings: Vec<(FactId, Vec<f32>)>,
    ) -> StoreResult<usize> {
        let prepared = Prepared::new(model, embeddings)?;
        let scope = self.scope_id;
        let run = |conn: &mut rusqlite::Connection, _| -> DbResult<usize> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Read under the write lock: the dimension cannot change before the commit.
            let stored: Option<i64> = tx
                .prepare_cached(
                    "SELECT dimension FROM embeddings WHERE scope = ?1 AND model = ?2 LIMIT 1",
                )?
                .query_row(params![scope, model], |row| row.get(0))
                .optional()?;
            prepared
                .check_dimension(model, stored.map(count))
                .map_err(DbError::Store)?;
            let mut written = 0;
            {
                let mut held =
                    tx.prepare_cached("SELECT 1 FROM facts WHERE scope = ?1 AND id = ?2")?;
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO embeddings (scope, model, fact, dimension, vector) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                let dimension = prepared.dimension_sql();
                for (id, vector) in &prepared.rows {
                    if held.exists(params![scope, id])? {
                        insert.execute(params![scope, model, id, dimension, vector])?;
                        written += 1;
                    }
                }
            }
            tx.commit()?;
            Ok(written)
        };
        self.with_conn(run)
    }

    fn unembedded(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ?1 AND f.valid_to IS NULL \
             AND NOT EXISTS (SELECT 1 FROM embeddings AS e \
             WHERE e.scope = ?1 AND e.fact = f.id AND e.model = ?2) \
             ORDER BY f.valid_from, f.id < 0, f.id LIMIT ?3"
        );
        self.with_conn(|conn, scope| {
            query_facts(conn, &sql, params![scope, model, sql_limit(limit)])
        })
    }

    fn embedded_count(&self, model: &str) -> StoreResult<usize> {
        self.with_conn(|conn, scope| {
            let n: i64 = conn
                .prepare_cached("SELECT count(*) FROM embeddings WHERE scope = ?1 AND model = ?2")?
                .query_row(params![scope, model], |row| row.get(0))?;
            Ok(count(n))
        })
    }

    fn nearest(&self, query: &VectorQuery<'_>) -> StoreResult<Vec<ScoredFact>> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        let pinned = self.vector_cache.pin();
        self.with_conn(|conn, scope| {
            let mut vectors = pinned.lock();
            // One read transaction: the new rows and the candidates' facts come from one
            // snapshot of the database.
            let tx = conn.transaction()?;
            let found = vectors.nearest(&mut Reads { tx: &tx, scope }, query)?;
            tx.commit()?;
            Ok(found)
        })
    }

    /// Stores the token vectors in one `BEGIN IMMEDIATE` transaction (see
    /// [`FactVectors::put_token_vectors`](fact_store::FactVectors::put_token_vectors)), as [`put_embeddings`](Self::put_embeddings)
    /// stores embeddings.
    fn put_token_vectors(
        &self,
        model: &str,
        tokens: Vec<(FactId, TokenVectors)>,
    ) -> StoreResult<usize> {
        let prepared = TokenRows::new(model, tokens)?;
        if prepared.rows.is_empty() {
            return Ok(0);
        }
        let scope = self.scope_id;
        self.with_conn(|conn, _| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut written = 0;
            {
                let mut held =
                    tx.prepare_cached("SELECT 1 FROM facts WHERE scope = ?1 AND id = ?2")?;
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO token_vectors (scope, model, fact, tokens) \
                     VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (id, bytes) in &prepared.rows {
                    if held.exists(params![scope, id])? {
                        insert.execute(params![scope, model, id, bytes])?;
                        written += 1;
                    }
                }
            }
            tx.commit()?;
            Ok(written)
        })
    }

    fn token_vectors(
        &self,
        model: &str,
        ids: &[FactId],
    ) -> StoreResult<Vec<(FactId, TokenVectors)>> {
        let wanted = TokenRows::wanted(ids);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        // The ids as one JSON array: one statement whatever their number.
        let list = wanted
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        self.with_read_conn(|conn, scope| {
            let mut stmt = conn.prepare_cached(
                "SELECT fact, tokens FROM token_vectors WHERE scope = ?1 AND model = ?2 \
                 AND fact IN (SELECT value FROM json_each(?3))",
            )?;
            let mut rows = stmt.query(params![scope, model, format!("[{list}]")])?;
            let mut read = Vec::with_capacity(wanted.len());
            while let Some(row) = rows.next()? {
                let bytes = row
                    .get_ref(1)?
                    .as_blob()
                    .map_err(|e| DbError::Corrupt(format!("stored token vectors: {e}")))?;
                read.push((row.get(0)?, bytes.to_vec()));
            }
            TokenRows::in_order(&wanted, read)
        })
    }

    fn untokenized(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ?1 AND f.valid_to IS NULL \
             AND NOT EXISTS (SELECT 1 FROM token_vectors AS t \
             WHERE t.scope = ?1 AND t.fact = f.id AND t.model = ?2) \
             ORDER BY f.valid_from, f.id < 0, f.id LIMIT ?3"
        );
        self.facts(&sql, params![self.scope_id, model, sql_limit(limit)])
    }

    fn token_vector_stats(&self, model: &str) -> StoreResult<TokenVectorStats> {
        self.with_read_conn(|conn, scope| {
            let (facts, bytes): (i64, i64) = conn
                .prepare_cached(
                    "SELECT count(*), coalesce(sum(length(tokens)), 0) FROM token_vectors \
                     WHERE scope = ?1 AND model = ?2",
                )?
                .query_row(params![scope, model], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(TokenRows::stats(facts, bytes))
        })
    }
}

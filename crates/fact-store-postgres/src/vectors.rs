//! [`FactVectors`](fact_store::FactVectors) for [`Postgres`] (what a [`PgFactStore`](crate::PgFactStore)'s `vectors` gives): the `embeddings` table (schema version 2) and the
//! store object's in-process index of it ([`fact_store_sql::vectors`] says how the index
//! follows the table), locked only for work in memory: rows travel with the lock
//! released; and the `token_vectors` table (schema version 5).

use fact_model::{FactId, SessionFact};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, Statement};

use crate::client::{backoff, query};
use crate::codec::read_fact;
use crate::driver::Postgres;
use crate::error::{DbError, DbResult};
use crate::pool::Connection;
use crate::statements::{Statements, prepared};
use fact_store::{
    FactVectors, ScoredFact, StoreResult, TokenVectorStats, TokenVectors, VectorQuery,
};
use fact_store_sql::Driver;
use fact_store_sql::codec::FACT_COLUMNS;
use fact_store_sql::vectors::{
    EachRow, Prepared, TokenRows, VectorCache, VectorReads, count, rounds,
};

/// The reads of a vector search of one scope: two statements, each its own snapshot
/// and round trip.
///
/// No transaction around them (its `BEGIN` and `COMMIT` would double the round trips):
/// the rows loaded are a prefix in `seq` order whatever commits meanwhile (writes of a
/// scope's embeddings take turns on its row lock), and the candidates' check is at least
/// as new as the load, so a row deleted in between is dropped then, and a fact's
/// validity is the newest the server has.
struct Reads<'c> {
    client: &'c mut Client,
    statements: &'c mut Statements,
    scope: i64,
}

impl Reads<'_> {
    /// `sql` prepared once per connection.
    fn statement(&mut self, sql: &str) -> DbResult<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

impl Reads<'_> {
    /// Whether the server holds every embedding row of the scope up to `seq`: it has one
    /// at or past it. Rows of a scope take their `seq` in commit order (their writes take
    /// turns on the scope's row), so such a server (a replica) has replayed every commit
    /// that wrote a row the index holds, and a row it lacks was deleted, not yet to come.
    /// A replica behind the index (which a read on the primary brought further) keeps the
    /// index whole: its missing rows are left out of this search's answer only.
    fn holds(&mut self, seq: i64) -> DbResult<bool> {
        let statement = self
            .statement("SELECT EXISTS (SELECT 1 FROM embeddings WHERE scope = $1 AND seq >= $2)")?;
        let row = self.client.query_one(&statement, &[&self.scope, &seq])?;
        Ok(row.try_get(0)?)
    }
}

impl VectorReads<postgres::Error> for Reads<'_> {
    fn embeddings_after(
        &mut self,
        model: &str,
        after: i64,
        each: &mut EachRow<'_, postgres::Error>,
    ) -> DbResult<()> {
        let statement = self.statement(
            "SELECT seq, fact, vector FROM embeddings \
             WHERE scope = $1 AND model = $2 AND seq > $3 ORDER BY seq",
        )?;
        let params: [&(dyn ToSql + Sync); 3] = [&self.scope, &model, &after];
        // Streamed: a first load of many vectors never holds every row at once.
        let mut rows = self.client.query_raw(&statement, params)?;
        while let Some(row) = rows.next()? {
            let vector: &[u8] = row.try_get(2)?;
            each(row.try_get(0)?, row.try_get(1)?, vector)?;
        }
        Ok(())
    }

    fn candidates(
        &mut self,
        model: &str,
        ids: &[i64],
    ) -> DbResult<Vec<(i64, Option<SessionFact>)>> {
        let sql = format!(
            "SELECT e.fact, f.seq IS NOT NULL, {FACT_COLUMNS} FROM embeddings AS e \
             LEFT JOIN facts AS f ON f.scope = e.scope AND f.id = e.fact AND f.valid_to IS NULL \
             WHERE e.scope = $1 AND e.model = $2 AND e.fact = ANY($3)"
        );
        let statement = self.statement(&sql)?;
        let rows = self
            .client
            .query(&statement, &[&self.scope, &model, &ids])?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let valid: bool = row.try_get(1)?;
            let fact = if valid {
                Some(read_fact(row, 2)?)
            } else {
                None
            };
            out.push((row.try_get(0)?, fact));
        }
        Ok(out)
    }
}

impl Postgres {
    /// Writes prepared embeddings in one transaction: locks the scope's row (so that
    /// `seq` grows in commit order within the scope, and the stored dimension cannot
    /// change before the commit), checks the dimension, and inserts or replaces the rows
    /// of ids the scope holds; returns how many.
    fn store_embeddings(
        conn: &mut Connection,
        scope: i64,
        model: &str,
        embeddings: &Prepared,
    ) -> DbResult<usize> {
        let Connection {
            client, statements, ..
        } = conn;
        let mut tx = client.transaction()?;
        let statement = prepared(
            &mut tx,
            statements,
            "SELECT id FROM scopes WHERE id = $1 FOR UPDATE",
        )?;
        tx.query_one(&statement, &[&scope])?;
        let statement = prepared(
            &mut tx,
            statements,
            "SELECT dimension FROM embeddings WHERE scope = $1 AND model = $2 LIMIT 1",
        )?;
        let stored: Option<i32> = tx
            .query_opt(&statement, &[&scope, &model])?
            .map(|row| row.try_get(0))
            .transpose()?;
        embeddings
            .check_dimension(model, stored.map(|d| count(i64::from(d))))
            .map_err(DbError::Store)?;
        let (ids, vectors): (Vec<i64>, Vec<&[u8]>) = embeddings
            .rows
            .iter()
            .map(|(id, vector)| (*id, vector.as_slice()))
            .unzip();
        let dimension = i32::try_from(embeddings.dimension).unwrap_or(i32::MAX);
        // One statement for the call; a replaced row takes a new `seq` (the identity's
        // default in the proposed row).
        let statement = prepared(
            &mut tx,
            statements,
            "INSERT INTO embeddings (scope, fact, model, dimension, vector) \
             SELECT $1, u.fact, $2, $3, u.vector \
             FROM unnest($4::BIGINT[], $5::BYTEA[]) AS u(fact, vector) \
             WHERE EXISTS (SELECT 1 FROM facts AS f WHERE f.scope = $1 AND f.id = u.fact) \
             ON CONFLICT (scope, fact, model) DO UPDATE SET dimension = EXCLUDED.dimension, \
             vector = EXCLUDED.vector, seq = EXCLUDED.seq",
        )?;
        let written = tx.execute(&statement, &[&scope, &model, &dimension, &ids, &vectors])?;
        tx.commit()?;
        Ok(usize::try_from(written).unwrap_or(usize::MAX))
    }

    /// Writes token vectors in one transaction: locks the scope's row (a write that
    /// deletes a fact holds it too, so no row outlives its fact), then inserts or replaces
    /// the rows of ids the scope holds; returns how many.
    fn store_token_vectors(
        conn: &mut Connection,
        scope: i64,
        model: &str,
        tokens: &TokenRows,
    ) -> DbResult<usize> {
        let Connection {
            client, statements, ..
        } = conn;
        let mut tx = client.transaction()?;
        let statement = prepared(
            &mut tx,
            statements,
            "SELECT id FROM scopes WHERE id = $1 FOR UPDATE",
        )?;
        tx.query_one(&statement, &[&scope])?;
        let (ids, bytes): (Vec<i64>, Vec<&[u8]>) = tokens
            .rows
            .iter()
            .map(|(id, bytes)| (*id, bytes.as_slice()))
            .unzip();
        let statement = prepared(
            &mut tx,
            statements,
            "INSERT INTO token_vectors (scope, fact, model, tokens) \
             SELECT $1, u.fact, $2, u.tokens \
             FROM unnest($3::BIGINT[], $4::BYTEA[]) AS u(fact, tokens) \
             WHERE EXISTS (SELECT 1 FROM facts AS f WHERE f.scope = $1 AND f.id = u.fact) \
             ON CONFLICT (scope, fact, model) DO UPDATE SET tokens = EXCLUDED.tokens",
        )?;
        let written = tx.execute(&statement, &[&scope, &model, &ids, &bytes])?;
        tx.commit()?;
        Ok(usize::try_from(written).unwrap_or(usize::MAX))
    }

    /// Runs the vector write `store` on the primary, tried again on conflicts as every
    /// write of this store is; server failures map to [`StoreError`](fact_store::StoreError)
    /// codes as theirs do.
    fn vector_write(
        &self,
        what: &str,
        store: impl Fn(&mut Connection) -> DbResult<usize>,
    ) -> StoreResult<usize> {
        let mut attempt = 0;
        loop {
            // A connection per attempt: none is held while waiting for the next one.
            let written = {
                let mut pooled = self.connection()?;
                let conn = self.held(&mut pooled)?;
                let written = store(conn);
                if written.is_ok() {
                    self.committed(conn);
                }
                written
            };
            match written {
                Ok(written) => return Ok(written),
                Err(error) => {
                    attempt += 1;
                    if error.is_conflict::<Postgres>() && attempt < self.options().attempts {
                        tracing::debug!(scope = %self.scope, attempt, ?error, "{what} write conflict; trying again");
                        std::thread::sleep(backoff(attempt));
                        continue;
                    }
                    return Err(error.into_store::<Postgres>(self.location()));
                }
            }
        }
    }
}

impl FactVectors for Postgres {
    /// Stores the embeddings in one transaction (see [`FactVectors::put_embeddings`](fact_store::FactVectors::put_embeddings)),
    /// tried again on conflicts as every write of this store is; server failures map to
    /// [`StoreError`](fact_store::StoreError) codes as theirs do.
    fn put_embeddings(
        &self,
        model: &str,
        embeddings: Vec<(FactId, Vec<f32>)>,
    ) -> StoreResult<usize> {
        let prepared = Prepared::new(model, embeddings)?;
        self.vector_write("embedding", |conn| {
            Self::store_embeddings(conn, self.scope_id, model, &prepared)
        })
    }

    fn unembedded(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = $1 AND f.valid_to IS NULL \
             AND NOT EXISTS (SELECT 1 FROM embeddings AS e \
             WHERE e.scope = $1 AND e.fact = f.id AND e.model = $2) \
             ORDER BY f.valid_from, f.id < 0, f.id LIMIT $3"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.facts(&sql, &[&self.scope_id, &model, &limit])
    }

    fn embedded_count(&self, model: &str) -> StoreResult<usize> {
        self.with_conn(|conn, scope| {
            let rows = query(
                conn,
                "SELECT count(*) FROM embeddings WHERE scope = $1 AND model = $2",
                &[&scope, &model],
            )?;
            let n: i64 = match rows.first() {
                Some(row) => row.try_get(0)?,
                None => 0,
            };
            Ok(count(n))
        })
    }

    fn nearest(&self, query: &VectorQuery<'_>) -> StoreResult<Vec<ScoredFact>> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        self.with_conn(|conn, scope| {
            let Connection {
                client,
                statements,
                replica,
            } = conn;
            let replica = *replica;
            let mut reads = Reads {
                client,
                statements,
                scope,
            };
            // The rows since the newest the index holds, fetched with the index unlocked
            // and applied under its lock; each round ranks under the lock and checks its
            // candidates with it released.
            // Pinned for the whole search: the budget never evicts the indexes between
            // two of these looks.
            let vectors = self.vectors.pin();
            let after = vectors.lock().seen(query.model);
            let fetched = VectorCache::fetch(&mut reads, query.model, after)?;
            vectors.lock().merge(query.model, fetched);
            let (found, gone) = rounds(
                query,
                &mut |wanted| vectors.lock().rank(query, wanted),
                &mut reads,
            )?;
            if !gone.is_empty() {
                let seen = vectors.lock().seen(query.model);
                if !replica || reads.holds(seen)? {
                    vectors.lock().forget(query.model, &gone);
                }
            }
            Ok(found)
        })
    }

    /// Stores the token vectors in one transaction (see
    /// [`FactVectors::put_token_vectors`](fact_store::FactVectors::put_token_vectors)), tried again on conflicts as
    /// [`put_embeddings`](Self::put_embeddings) is.
    fn put_token_vectors(
        &self,
        model: &str,
        tokens: Vec<(FactId, TokenVectors)>,
    ) -> StoreResult<usize> {
        let prepared = TokenRows::new(model, tokens)?;
        if prepared.rows.is_empty() {
            return Ok(0);
        }
        self.vector_write("token vector", |conn| {
            Self::store_token_vectors(conn, self.scope_id, model, &prepared)
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
        self.with_conn(|conn, scope| {
            let rows = query(
                conn,
                "SELECT fact, tokens FROM token_vectors \
                 WHERE scope = $1 AND model = $2 AND fact = ANY($3)",
                &[&scope, &model, &wanted],
            )?;
            let read = rows
                .iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<DbResult<Vec<(i64, Vec<u8>)>>>()?;
            TokenRows::in_order(&wanted, read)
        })
    }

    fn untokenized(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = $1 AND f.valid_to IS NULL \
             AND NOT EXISTS (SELECT 1 FROM token_vectors AS t \
             WHERE t.scope = $1 AND t.fact = f.id AND t.model = $2) \
             ORDER BY f.valid_from, f.id < 0, f.id LIMIT $3"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.facts(&sql, &[&self.scope_id, &model, &limit])
    }

    fn token_vector_stats(&self, model: &str) -> StoreResult<TokenVectorStats> {
        self.with_conn(|conn, scope| {
            let rows = query(
                conn,
                "SELECT count(*), coalesce(sum(octet_length(tokens)), 0)::BIGINT \
                 FROM token_vectors WHERE scope = $1 AND model = $2",
                &[&scope, &model],
            )?;
            let (facts, bytes): (i64, i64) = match rows.first() {
                Some(row) => (row.try_get(0)?, row.try_get(1)?),
                None => (0, 0),
            };
            Ok(TokenRows::stats(facts, bytes))
        })
    }
}

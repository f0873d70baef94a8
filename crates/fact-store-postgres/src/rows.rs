//! [`PgRows`]: the [`Rows`] of one PostgreSQL write transaction, for the shared temporal
//! rules ([`Writer`](fact_store_sql::rules::Writer)).
//!
//! The transaction first locks the scope's row (`SELECT … FOR UPDATE`): writers of one
//! scope take turns, on one machine or many, while writers of other scopes go on. The
//! full-text index needs no bookkeeping here: `terms_tsv` is generated from the row's
//! term document, and its GIN index follows every update.

use std::collections::HashMap;

use fact_model::{FactId, SessionFact, Timestamp};
use postgres::types::ToSql;
use postgres::{Row, Transaction};

use crate::codec::read_fact;
use crate::error::DbResult;
use crate::statements::{Db, Statements, prepared};
use fact_store::EraseReport;
use fact_store_sql::codec::{
    FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, batch_to_sql, id_from_sql, id_to_sql,
    tags_to_sql, time_from_sql,
};
use fact_store_sql::rules::{Document, KeyVersion, Link, RankRow, Rows, ScopeState};

/// The tables with a `scope` column, in the order an erasure deletes from them (`messages`
/// before the `episodes` they reference). The tests check it names every table of the
/// schema with a `scope` column but `scopes`.
pub(super) const ERASED_TABLES: &[&str] = &[
    "facts",
    "terms",
    "embeddings",
    "token_vectors",
    "messages",
    "message_terms",
    "episodes",
    "aliases",
    "profile",
    "applied",
];

/// What [`Rows::prefetch`] fetched for a batch: answers to `latest` and `valid_for_key`
/// until a write touches them (each write drops the entries of its row's id and key, or
/// everything when it cannot tell which they are).
#[derive(Debug, Default)]
struct Prefetched {
    latest: HashMap<FactId, Option<(i64, bool)>>,
    keys: HashMap<(String, String), Vec<KeyVersion>>,
    /// Seq → id and key, for every version the two maps mention.
    rows: HashMap<i64, (FactId, (String, String))>,
    /// The valid versions of the keys, whole (the rules read a version before ending it).
    versions: HashMap<i64, (SessionFact, u64, Document)>,
}

impl Prefetched {
    fn forget(&mut self, id: FactId, key: &(String, String)) {
        self.latest.remove(&id);
        self.keys.remove(key);
    }
}

/// The rows of one write transaction of one scope: what the shared rules
/// ([`Writer`](fact_store_sql::rules::Writer)) read and write, through
/// [`Rows`](fact_store_sql::rules::Rows) and [`MemoryRows`](fact_store_sql::long_term::MemoryRows).
pub struct PgRows<'a> {
    tx: Transaction<'a>,
    statements: &'a mut Statements,
    scope: i64,
    /// The generation this transaction commits (read with the scope's row), stamped on
    /// every row it inserts or changes.
    generation: i64,
    /// Whether it deleted rows (a search cache cannot follow deletions row by row).
    deleted: bool,
    /// The ids of the versions it deleted: their embeddings and token vectors go at
    /// commit when no version of the id is left.
    deleted_ids: Vec<i64>,
    prefetched: Option<Prefetched>,
}

impl<'a> PgRows<'a> {
    pub(super) fn new(tx: Transaction<'a>, statements: &'a mut Statements, scope: i64) -> Self {
        PgRows {
            tx,
            statements,
            scope,
            generation: 0,
            deleted: false,
            deleted_ids: Vec::new(),
            prefetched: None,
        }
    }

    /// A write is about to change the version in `seq`: what was prefetched about its id
    /// and key no longer holds.
    fn touch(&mut self, seq: i64) {
        let Some(prefetched) = self.prefetched.as_mut() else {
            return;
        };
        prefetched.versions.remove(&seq);
        match prefetched.rows.get(&seq).cloned() {
            Some((id, key)) => prefetched.forget(id, &key),
            None => self.prefetched = None,
        }
    }

    /// The transaction's statements, and the scope, for the rows of long-term memory
    /// (`long_term.rs`).
    pub(super) fn db(&mut self) -> (Db<'_, 'a>, i64) {
        (Db::new(&mut self.tx, self.statements), self.scope)
    }

    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> DbResult<Vec<Row>> {
        let statement = prepared(&mut self.tx, self.statements, sql)?;
        Ok(self.tx.query(&statement, params)?)
    }

    fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> DbResult<Option<Row>> {
        let statement = prepared(&mut self.tx, self.statements, sql)?;
        Ok(self.tx.query_opt(&statement, params)?)
    }

    fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> DbResult<u64> {
        let statement = prepared(&mut self.tx, self.statements, sql)?;
        Ok(self.tx.execute(&statement, params)?)
    }

    /// Deletes every row of the scope but its `scopes` row
    /// ([`MemoryRows::erase_scope`](fact_store_sql::long_term::MemoryRows::erase_scope)),
    /// from every table with a `scope` column ([`ERASED_TABLES`]; the GIN indexes follow
    /// their rows), and zeroes the message statistics.
    pub(super) fn erase_scope(&mut self) -> DbResult<EraseReport> {
        let scope = self.scope;
        let mut report = EraseReport::default();
        for table in ERASED_TABLES {
            let n = self.execute(&format!("DELETE FROM {table} WHERE scope = $1"), &[&scope])?;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            match *table {
                "facts" => report.versions = n,
                "embeddings" => report.embeddings = n,
                "token_vectors" => report.token_vectors = n,
                "episodes" => report.episodes = n,
                "messages" => report.messages = n,
                "aliases" => report.aliases = n,
                "profile" => report.profile_versions = n,
                "applied" => report.keys = n,
                _ => {}
            }
        }
        self.execute(
            "UPDATE scopes SET message_count = 0, message_len = 0 WHERE id = $1",
            &[&scope],
        )?;
        self.deleted = true;
        self.deleted_ids.clear();
        self.prefetched = None;
        Ok(report)
    }

    fn seqs(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> DbResult<Vec<i64>> {
        self.query(sql, params)?
            .iter()
            .map(|row| Ok(row.try_get(0)?))
            .collect()
    }
}

impl Rows for PgRows<'_> {
    type Error = postgres::Error;

    const BATCHED_LOOKUPS: bool = true;

    fn prefetch(&mut self, batch: &[SessionFact]) -> DbResult<()> {
        let scope = self.scope;
        let mut prefetched = Prefetched::default();
        let ids: Vec<i64> = batch.iter().map(|fact| id_to_sql(fact.id())).collect();
        for fact in batch {
            prefetched.latest.insert(fact.id(), None);
            let key = (fact.subject().to_owned(), fact.relation().to_owned());
            prefetched.keys.insert(key, Vec::new());
        }
        let rows = self.query(
            "SELECT DISTINCT ON (id) id, seq, valid_to IS NULL, subject, relation FROM facts \
             WHERE scope = $1 AND id = ANY($2) ORDER BY id, valid_to IS NULL DESC, seq DESC",
            &[&scope, &ids],
        )?;
        for row in &rows {
            let id = id_from_sql(row.try_get(0)?)?;
            let seq: i64 = row.try_get(1)?;
            prefetched.latest.insert(id, Some((seq, row.try_get(2)?)));
            prefetched
                .rows
                .insert(seq, (id, (row.try_get(3)?, row.try_get(4)?)));
        }
        let (subjects, relations): (Vec<&str>, Vec<&str>) = prefetched
            .keys
            .keys()
            .map(|(subject, relation)| (subject.as_str(), relation.as_str()))
            .unzip();
        let columns = FACT_COLUMNS
            .split(", ")
            .map(|column| format!("f.{column}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT f.seq, f.batch, f.doc_len, f.terms, {columns} \
             FROM unnest($2::TEXT[], $3::TEXT[]) AS k(subject, relation) \
             JOIN facts AS f ON f.scope = $1 \
             AND f.key_hash = hashtextextended(k.relation, hashtextextended(k.subject, 0)) \
             AND f.subject = k.subject AND f.relation = k.relation \
             WHERE f.key_order IS NOT NULL AND f.valid_to IS NULL ORDER BY f.key_order"
        );
        let rows = self.query(&sql, &[&scope, &subjects, &relations])?;
        for row in &rows {
            let seq: i64 = row.try_get(0)?;
            let batch = batch_from_sql(row.try_get(1)?);
            let document: Document = (row.try_get(2)?, row.try_get(3)?);
            let fact = read_fact(row, 4)?;
            let key = (fact.subject().to_owned(), fact.relation().to_owned());
            let version = (seq, batch, fact.id(), fact.valid_from());
            prefetched.rows.insert(seq, (fact.id(), key.clone()));
            prefetched.keys.entry(key).or_default().push(version);
            prefetched.versions.insert(seq, (fact, batch, document));
        }
        self.prefetched = Some(prefetched);
        Ok(())
    }

    fn scope_state(&mut self) -> DbResult<Option<ScopeState>> {
        let scope = self.scope;
        let Some(row) = self.query_opt(
            "SELECT last_batch, newest_input_batch, valid_count, stored_count, total_len, \
             next_key_order, generation, vocabulary FROM scopes WHERE id = $1 FOR UPDATE",
            &[&scope],
        )?
        else {
            return Ok(None);
        };
        let generation: i64 = row.try_get(6)?;
        // What `Writer::commit` writes when anything changed (a transaction that changes
        // nothing stamps nothing).
        self.generation = generation.wrapping_add(1);
        Ok(Some(ScopeState {
            last_batch: batch_from_sql(row.try_get(0)?),
            newest_input_batch: batch_from_sql(row.try_get(1)?),
            valid: row.try_get(2)?,
            stored: row.try_get(3)?,
            total_len: row.try_get(4)?,
            next_key_order: row.try_get(5)?,
            generation: row.try_get(6)?,
            vocabulary: row.try_get(7)?,
        }))
    }

    fn write_scope_state(&mut self, state: &ScopeState) -> DbResult<()> {
        let scope = self.scope;
        let deleted = self.deleted;
        self.execute(
            "UPDATE scopes SET last_batch = $2, newest_input_batch = $3, valid_count = $4, \
             stored_count = $5, total_len = $6, next_key_order = $7, generation = $8, \
             deleted_generation = CASE WHEN $9 THEN $8 ELSE deleted_generation END, \
             vocabulary = $10 WHERE id = $1",
            &[
                &scope,
                &batch_to_sql(state.last_batch),
                &batch_to_sql(state.newest_input_batch),
                &state.valid,
                &state.stored,
                &state.total_len,
                &state.next_key_order,
                &state.generation,
                &deleted,
                &state.vocabulary,
            ],
        )?;
        Ok(())
    }

    fn add_df(&mut self, changes: &[(i64, i64)]) -> DbResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        // One statement for the whole batch: a round trip per term was most of an `add`.
        let (ids, deltas): (Vec<i64>, Vec<i64>) = changes.iter().copied().unzip();
        let scope = self.scope;
        self.execute(
            "UPDATE terms SET df = terms.df + c.delta \
             FROM unnest($2::BIGINT[], $3::BIGINT[]) AS c(id, delta) \
             WHERE terms.scope = $1 AND terms.id = c.id",
            &[&scope, &ids, &deltas],
        )?;
        Ok(())
    }

    fn latest(&mut self, id: FactId) -> DbResult<Option<(i64, bool)>> {
        if let Some(found) = self.prefetched.as_ref().and_then(|p| p.latest.get(&id)) {
            return Ok(*found);
        }
        let scope = self.scope;
        self.query_opt(
            "SELECT seq, valid_to IS NULL FROM facts WHERE scope = $1 AND id = $2 \
             ORDER BY valid_to IS NULL DESC, seq DESC LIMIT 1",
            &[&scope, &id_to_sql(id)],
        )?
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .transpose()
    }

    fn version(&mut self, seq: i64) -> DbResult<Option<(SessionFact, u64, Document)>> {
        if let Some(found) = self.prefetched.as_ref().and_then(|p| p.versions.get(&seq)) {
            return Ok(Some(found.clone()));
        }
        let scope = self.scope;
        let sql = format!(
            "SELECT {FACT_COLUMNS}, batch, doc_len, terms FROM facts WHERE scope = $1 AND seq = $2"
        );
        let Some(row) = self.query_opt(&sql, &[&scope, &seq])? else {
            return Ok(None);
        };
        let fact = read_fact(&row, 0)?;
        let batch: i64 = row.try_get(FACT_COLUMN_COUNT)?;
        let document = (
            row.try_get(FACT_COLUMN_COUNT + 1)?,
            row.try_get(FACT_COLUMN_COUNT + 2)?,
        );
        Ok(Some((fact, batch_from_sql(batch), document)))
    }

    fn document(&mut self, seq: i64) -> DbResult<Document> {
        let scope = self.scope;
        let row = self.query_opt(
            "SELECT doc_len, terms FROM facts WHERE scope = $1 AND seq = $2",
            &[&scope, &seq],
        )?;
        match row {
            Some(row) => Ok((row.try_get(0)?, row.try_get(1)?)),
            None => Ok((None, None)),
        }
    }

    fn validity(&mut self, seq: i64) -> DbResult<Option<bool>> {
        let scope = self.scope;
        self.query_opt(
            "SELECT valid_to IS NULL FROM facts WHERE scope = $1 AND seq = $2",
            &[&scope, &seq],
        )?
        .map(|row| Ok(row.try_get(0)?))
        .transpose()
    }

    fn valid_for_key(&mut self, subject: &str, relation: &str) -> DbResult<Vec<KeyVersion>> {
        if let Some(prefetched) = self.prefetched.as_ref()
            && let Some(found) = prefetched
                .keys
                .get(&(subject.to_owned(), relation.to_owned()))
        {
            return Ok(found.clone());
        }
        let scope = self.scope;
        let rows = self.query(
            "SELECT seq, batch, id, valid_from FROM facts \
             WHERE scope = $1 AND key_hash = hashtextextended($3, hashtextextended($2, 0)) \
             AND subject = $2 AND relation = $3 AND key_order IS NOT NULL \
             AND valid_to IS NULL ORDER BY key_order",
            &[&scope, &subject, &relation],
        )?;
        rows.iter()
            .map(|row| {
                let (seq, batch, id, from): (i64, i64, i64, i64) = (
                    row.try_get(0)?,
                    row.try_get(1)?,
                    row.try_get(2)?,
                    row.try_get(3)?,
                );
                Ok((
                    seq,
                    batch_from_sql(batch),
                    id_from_sql(id)?,
                    time_from_sql(from)?,
                ))
            })
            .collect()
    }

    fn valid_with_statement(&mut self, folded: &str) -> DbResult<Vec<FactId>> {
        let scope = self.scope;
        let rows = self.query(
            "SELECT id FROM facts WHERE scope = $1 AND hashtextextended(folded, 0) = \
             hashtextextended($2, 0) AND folded = $2 AND valid_to IS NULL ORDER BY key_order",
            &[&scope, &folded],
        )?;
        rows.iter()
            .map(|row| id_from_sql(row.try_get(0)?))
            .collect()
    }

    fn valid_with_relation(&mut self, relation: &str) -> DbResult<Vec<i64>> {
        let scope = self.scope;
        self.seqs(
            "SELECT seq FROM facts WHERE scope = $1 AND valid_to IS NULL AND relation = $2 \
             ORDER BY seq",
            &[&scope, &relation],
        )
    }

    fn valid_in_key_order(&mut self) -> DbResult<Vec<i64>> {
        let scope = self.scope;
        self.seqs(
            "SELECT seq FROM facts WHERE scope = $1 AND valid_to IS NULL ORDER BY key_order",
            &[&scope],
        )
    }

    fn valid_subjects(&mut self) -> DbResult<Vec<(i64, String, u64)>> {
        let scope = self.scope;
        let rows = self.query(
            "SELECT seq, subject, batch FROM facts WHERE scope = $1 AND valid_to IS NULL \
             ORDER BY seq",
            &[&scope],
        )?;
        rows.iter()
            .map(|row| {
                let batch: i64 = row.try_get(2)?;
                Ok((row.try_get(0)?, row.try_get(1)?, batch_from_sql(batch)))
            })
            .collect()
    }

    fn valid_ranks(&mut self) -> DbResult<Vec<RankRow>> {
        let scope = self.scope;
        let rows = self.query(
            "SELECT seq, id, confidence, valid_from FROM facts \
             WHERE scope = $1 AND valid_to IS NULL ORDER BY seq",
            &[&scope],
        )?;
        rows.iter()
            .map(|row| {
                Ok((
                    row.try_get(0)?,
                    id_from_sql(row.try_get(1)?)?,
                    row.try_get(2)?,
                    time_from_sql(row.try_get(3)?)?,
                ))
            })
            .collect()
    }

    fn oldest_history(&mut self, limit: usize) -> DbResult<Vec<i64>> {
        let scope = self.scope;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.seqs(
            "SELECT seq FROM facts WHERE scope = $1 AND valid_to IS NOT NULL \
             ORDER BY seq LIMIT $2",
            &[&scope, &limit],
        )
    }

    fn versions_of(&mut self, id: FactId) -> DbResult<Vec<i64>> {
        let scope = self.scope;
        self.seqs(
            "SELECT seq FROM facts WHERE scope = $1 AND id = $2 ORDER BY seq",
            &[&scope, &id_to_sql(id)],
        )
    }

    fn term_id(&mut self, term: &str) -> DbResult<i64> {
        let scope = self.scope;
        if let Some(row) = self.query_opt(
            "SELECT id FROM terms WHERE scope = $1 AND hashtextextended(term, 0) = \
             hashtextextended($2, 0) AND term = $2",
            &[&scope, &term],
        )? {
            return Ok(row.try_get(0)?);
        }
        let row = self.query(
            "INSERT INTO terms (scope, term) VALUES ($1, $2) RETURNING id",
            &[&scope, &term],
        )?;
        match row.first() {
            Some(row) => Ok(row.try_get(0)?),
            None => Err(crate::error::DbError::Corrupt(
                "INSERT … RETURNING gave no term id".into(),
            )),
        }
    }

    fn term_ids(&mut self, terms: &[String]) -> DbResult<Vec<i64>> {
        let scope = self.scope;
        let mut ids: HashMap<String, i64> = HashMap::with_capacity(terms.len());
        let known = self.query(
            "SELECT t.term, terms.id FROM unnest($2::TEXT[]) AS t(term) JOIN terms \
             ON terms.scope = $1 AND hashtextextended(terms.term, 0) = hashtextextended(t.term, 0) \
             AND terms.term = t.term",
            &[&scope, &terms],
        )?;
        for row in &known {
            ids.insert(row.try_get(0)?, row.try_get(1)?);
        }
        let missing: Vec<&str> = terms
            .iter()
            .filter(|term| !ids.contains_key(term.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let created = self.query(
                "INSERT INTO terms (scope, term) SELECT $1, t FROM unnest($2::TEXT[]) AS t \
                 RETURNING term, id",
                &[&scope, &missing],
            )?;
            for row in &created {
                ids.insert(row.try_get(0)?, row.try_get(1)?);
            }
        }
        terms
            .iter()
            .map(|term| {
                ids.get(term).copied().ok_or_else(|| {
                    crate::error::DbError::Corrupt(format!("no id for term {term:?}"))
                })
            })
            .collect()
    }

    fn insert(
        &mut self,
        fact: &SessionFact,
        folded: Option<&str>,
        batch: u64,
        link: Option<&Link>,
    ) -> DbResult<i64> {
        if let Some(prefetched) = self.prefetched.as_mut() {
            let key = (fact.subject().to_owned(), fact.relation().to_owned());
            prefetched.forget(fact.id(), &key);
        }
        let (scope, generation) = (self.scope, self.generation);
        let tags = tags_to_sql(fact.tags().as_slice());
        let rows = self.query(
            "INSERT INTO facts (scope, id, subject, relation, object, tags, valid_from, \
             valid_to, source_task_id, source_role, confidence, statement, folded, \
             superseded_by, batch, key_order, doc_len, terms, changed_generation, recorded_at, \
             metadata) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18, $19, $20, $21) RETURNING seq",
            &[
                &scope,
                &id_to_sql(fact.id()),
                &fact.subject(),
                &fact.relation(),
                &fact.object(),
                &tags,
                &fact.valid_from().unix_micros(),
                &fact.valid_to().map(Timestamp::unix_micros),
                &fact.source_task_id(),
                &fact.source_role().as_str(),
                &fact.confidence(),
                &fact.statement(),
                &folded,
                &fact.superseded_by().map(id_to_sql),
                &batch_to_sql(batch),
                &link.map(|l| l.key_order),
                &link.map(|l| l.doc_len),
                &link.map(|l| l.document.as_str()),
                &generation,
                &fact.recorded_at().map(Timestamp::unix_micros),
                &metadata_json(fact.metadata()),
            ],
        )?;
        match rows.first() {
            Some(row) => Ok(row.try_get(0)?),
            None => Err(crate::error::DbError::Corrupt(
                "INSERT … RETURNING gave no seq".into(),
            )),
        }
    }

    fn set_batch(&mut self, seq: i64, batch: u64) -> DbResult<()> {
        self.touch(seq);
        let scope = self.scope;
        self.execute(
            "UPDATE facts SET batch = $3 WHERE scope = $1 AND seq = $2",
            &[&scope, &seq, &batch_to_sql(batch)],
        )?;
        Ok(())
    }

    fn unlink(&mut self, seq: i64, end: Option<(i64, Option<i64>)>) -> DbResult<()> {
        self.touch(seq);
        let (scope, generation) = (self.scope, self.generation);
        match end {
            None => self.execute(
                "UPDATE facts SET key_order = NULL, doc_len = NULL, terms = NULL, \
                 changed_generation = $3 WHERE scope = $1 AND seq = $2",
                &[&scope, &seq, &generation],
            )?,
            Some((valid_to, superseded_by)) => self.execute(
                "UPDATE facts SET key_order = NULL, doc_len = NULL, terms = NULL, \
                 valid_to = $3, superseded_by = $4, changed_generation = $5 \
                 WHERE scope = $1 AND seq = $2",
                &[&scope, &seq, &valid_to, &superseded_by, &generation],
            )?,
        };
        Ok(())
    }

    fn relink(&mut self, seq: i64, link: &Link) -> DbResult<()> {
        self.touch(seq);
        let (scope, generation) = (self.scope, self.generation);
        self.execute(
            "UPDATE facts SET key_order = $3, doc_len = $4, terms = $5, changed_generation = $6 \
             WHERE scope = $1 AND seq = $2",
            &[
                &scope,
                &seq,
                &link.key_order,
                &link.doc_len,
                &link.document.as_str(),
                &generation,
            ],
        )?;
        Ok(())
    }

    fn update(
        &mut self,
        seq: i64,
        fact: &SessionFact,
        folded: Option<&str>,
        link: Option<&Link>,
    ) -> DbResult<()> {
        self.touch(seq);
        let (scope, generation) = (self.scope, self.generation);
        let tags = tags_to_sql(fact.tags().as_slice());
        self.execute(
            "UPDATE facts SET tags = $3, confidence = $4, statement = $5, folded = $6, \
             key_order = $7, doc_len = $8, terms = $9, changed_generation = $10, \
             metadata = $11 WHERE scope = $1 AND seq = $2",
            &[
                &scope,
                &seq,
                &tags,
                &fact.confidence(),
                &fact.statement(),
                &folded,
                &link.map(|l| l.key_order),
                &link.map(|l| l.doc_len),
                &link.map(|l| l.document.as_str()),
                &generation,
                &metadata_json(fact.metadata()),
            ],
        )?;
        Ok(())
    }

    fn delete(&mut self, seq: i64) -> DbResult<()> {
        self.deleted = true;
        self.prefetched = None;
        let scope = self.scope;
        for row in self.query(
            "DELETE FROM facts WHERE scope = $1 AND seq = $2 RETURNING id",
            &[&scope, &seq],
        )? {
            self.deleted_ids.push(row.try_get(0)?);
        }
        Ok(())
    }

    fn set_analyzer(&mut self, tag: &str) -> DbResult<()> {
        let scope = self.scope;
        self.execute(
            "UPDATE scopes SET analyzer = $2 WHERE id = $1",
            &[&scope, &tag],
        )?;
        Ok(())
    }

    fn applied(&mut self, key: &[u8; 16]) -> DbResult<bool> {
        let scope = self.scope;
        let key: &[u8] = key;
        let rows = self.query(
            "SELECT 1 FROM applied WHERE scope = $1 AND key = $2",
            &[&scope, &key],
        )?;
        Ok(!rows.is_empty())
    }

    fn record_applied(&mut self, key: &[u8; 16]) -> DbResult<()> {
        let scope = self.scope;
        let key: &[u8] = key;
        self.execute(
            "INSERT INTO applied (scope, key) VALUES ($1, $2)",
            &[&scope, &key],
        )?;
        Ok(())
    }

    fn commit(mut self) -> DbResult<()> {
        if !self.deleted_ids.is_empty() {
            // The embeddings and token vectors of the facts whose last version this
            // transaction deleted.
            let (scope, ids) = (self.scope, std::mem::take(&mut self.deleted_ids));
            self.execute(
                "DELETE FROM embeddings AS e WHERE e.scope = $1 AND e.fact = ANY($2) \
                 AND NOT EXISTS (SELECT 1 FROM facts AS f WHERE f.scope = $1 AND f.id = e.fact)",
                &[&scope, &ids],
            )?;
            self.execute(
                "DELETE FROM token_vectors AS t WHERE t.scope = $1 AND t.fact = ANY($2) \
                 AND NOT EXISTS (SELECT 1 FROM facts AS f WHERE f.scope = $1 AND f.id = t.fact)",
                &[&scope, &ids],
            )?;
        }
        self.tx.commit()?;
        Ok(())
    }
}

/// Metadata as the `jsonb` column holds it, `NULL` for none.
fn metadata_json(metadata: &fact_model::Metadata) -> Option<serde_json::Value> {
    (!metadata.is_empty()).then(|| metadata.to_json())
}

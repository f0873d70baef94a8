//! [`SqliteRows`]: the [`Rows`] of one SQLite write transaction, for the shared temporal
//! rules ([`Writer`](fact_store_sql::rules::Writer)).
//!
//! Besides the rows, it keeps the full-text index: FTS5 is a table of its own here
//! (`fact_fts`, `rowid = seq`), and its changes are buffered by seq and written at commit,
//! every delete before every insert. FTS5 flushes its pending inserts before every delete,
//! so deletes interleaved with inserts wrote one index segment per delete (a sixth of the
//! time of an `add`).
//!
//! Every row it inserts or changes is stamped with the generation the transaction commits
//! (`changed_generation`), and a deletion that a search cache could miss moves
//! `scopes.deleted_generation` on (schema version 5): so a cache of another connection
//! follows the write row by row ([`search`](super::search)).

use std::collections::BTreeMap;

use fact_model::{FactId, SessionFact, Timestamp};
use rusqlite::{OptionalExtension, Transaction, params};

use super::codec::read_fact;
use super::schema::write_fact_meta;
use crate::error::DbResult;
use fact_store::EraseReport;
use fact_store_sql::codec::{
    FACT_COLUMN_COUNT, batch_from_sql, batch_to_sql, id_from_sql, id_to_sql, metadata_to_text,
    tags_to_sql, time_from_sql,
};
use fact_store_sql::rules::{Document, KeyVersion, Link, RankRow, Rows, ScopeState};

/// The tables with a `scope` column, in the order an erasure deletes from them (the full-text
/// tables, keyed by the rowids of `facts`, `messages` and `episodes`, go before them).
/// `tests.rs` checks it names every table of the schema with a `scope` column but `scopes`.
pub(super) const ERASED_TABLES: &[&str] = &[
    "fact_meta",
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

/// A version, its batch and its term document, by seq (within the scope).
const SELECT_FACT: &str = "SELECT subject, relation, object, tags, valid_from, valid_to, \
     source_task_id, source_role, confidence, statement, superseded_by, recorded_at, metadata, \
     batch, doc_len, terms FROM facts WHERE seq = ?1 AND scope = ?2";

/// A change of the full-text index, applied when the transaction commits.
#[derive(Debug)]
enum FtsChange {
    /// The version was not in the index when the transaction began: insert it.
    Insert(String),
    /// It was: delete it.
    Delete,
    /// It was, with another document: delete it, then insert this one.
    Replace(String),
}

/// The rows of one `BEGIN IMMEDIATE` transaction of one scope: what the shared rules
/// ([`Writer`](fact_store_sql::rules::Writer)) read and write, through
/// [`Rows`](fact_store_sql::rules::Rows) and [`MemoryRows`](fact_store_sql::long_term::MemoryRows).
pub struct SqliteRows<'a> {
    tx: Transaction<'a>,
    scope: i64,
    fts: BTreeMap<i64, FtsChange>,
    /// The generation this transaction commits (read with the scope's row), stamped on
    /// every row it inserts or changes.
    generation: i64,
    /// The scope's `deleted_generation`, moved on by what this transaction deletes.
    deleted_generation: i64,
    /// Whether this transaction deletes versions, episodes or aliases: its commit then
    /// also drops the terms no stored text holds any more ([`SqliteRows::erasing`]).
    erasing: bool,
    /// Whether it deletes episodes: its commit then also drops their words from the
    /// message terms and from `episode_fts`.
    episodes_erased: bool,
    /// Whether it erases the whole scope: its commit then also drops the tombstones of
    /// `fact_fts` and `message_fts`.
    erased_scope: bool,
}

impl<'a> SqliteRows<'a> {
    /// The rows of `scope` in `tx` (which should be `BEGIN IMMEDIATE`).
    pub(super) fn new(tx: Transaction<'a>, scope: i64) -> Self {
        SqliteRows {
            tx,
            scope,
            fts: BTreeMap::new(),
            generation: 0,
            deleted_generation: 0,
            erasing: false,
            episodes_erased: false,
            erased_scope: false,
        }
    }

    /// Whether this transaction deletes stored text (versions, episodes): after it
    /// commits, the store checkpoints the WAL so that nothing of it stays in the files.
    pub(super) fn erasing(&self) -> bool {
        self.erasing
    }

    /// Marks this transaction as one that deletes stored text; `episodes` when that text
    /// is episodes'.
    pub(super) fn mark_erasing(&mut self, episodes: bool) {
        self.erasing = true;
        self.episodes_erased |= episodes;
    }

    /// The open transaction, for the rows of long-term memory (`long_term.rs`).
    pub(super) fn conn(&self) -> &rusqlite::Connection {
        &self.tx
    }

    /// The scope written.
    pub(super) fn scope(&self) -> i64 {
        self.scope
    }

    /// Deletes every row of the scope but its `scopes` row ([`MemoryRows::erase_scope`]):
    /// the full-text entries first (found by the rows that give them their rowids), then
    /// the rows of every table with a `scope` column; zeroes the message statistics, and
    /// marks the transaction as deleting text (so its commit drops the tombstones of the
    /// full-text indexes and the store checkpoints the WAL after it).
    ///
    /// [`MemoryRows::erase_scope`]: fact_store_sql::long_term::MemoryRows::erase_scope
    pub(super) fn erase_scope(&mut self) -> DbResult<EraseReport> {
        let scope = self.scope;
        let count = |table: &str| -> DbResult<usize> {
            let sql = format!("SELECT count(*) FROM {table} WHERE scope = ?1");
            let n: i64 = self
                .tx
                .prepare_cached(&sql)?
                .query_row([scope], |row| row.get(0))?;
            Ok(usize::try_from(n).unwrap_or(0))
        };
        let mut report = EraseReport::default();
        report.versions = count("facts")?;
        report.embeddings = count("embeddings")?;
        report.token_vectors = count("token_vectors")?;
        report.episodes = count("episodes")?;
        report.messages = count("messages")?;
        report.aliases = count("aliases")?;
        report.profile_versions = count("profile")?;
        report.keys = count("applied")?;
        // Erasure runs alone in its transaction: nothing indexed in it is left to write.
        self.fts.clear();
        self.tx.execute_batch(&format!(
            "DELETE FROM fact_fts WHERE rowid IN (SELECT seq FROM facts WHERE scope = {scope} \
                 AND valid_to IS NULL AND terms IS NOT NULL);
             DELETE FROM message_fts WHERE rowid IN (SELECT id FROM messages WHERE scope = {scope});
             DELETE FROM episode_fts WHERE rowid IN (SELECT n FROM episodes WHERE scope = {scope});"
        ))?;
        for table in ERASED_TABLES {
            self.tx
                .prepare_cached(&format!("DELETE FROM {table} WHERE scope = ?1"))?
                .execute([scope])?;
        }
        self.tx
            .prepare_cached("UPDATE scopes SET message_count = 0, message_len = 0 WHERE id = ?1")?
            .execute([scope])?;
        // Every cache of the scope, in any process, loads it again.
        self.deleted_generation = self.generation;
        self.erased_scope = true;
        self.mark_erasing(true);
        Ok(report)
    }

    fn seqs(&self, sql: &str, params: impl rusqlite::Params) -> DbResult<Vec<i64>> {
        Ok(self
            .tx
            .prepare_cached(sql)?
            .query_map(params, |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?)
    }
}

impl Rows for SqliteRows<'_> {
    type Error = rusqlite::Error;

    fn scope_state(&mut self) -> DbResult<Option<ScopeState>> {
        let found = self
            .tx
            .prepare_cached(
                "SELECT last_batch, newest_input_batch, valid_count, stored_count, total_len, \
                 next_key_order, generation, deleted_generation, stamped_generation, \
                 vocabulary FROM scopes WHERE id = ?1",
            )?
            .query_row([self.scope], |row| {
                let state = ScopeState {
                    last_batch: batch_from_sql(row.get(0)?),
                    newest_input_batch: batch_from_sql(row.get(1)?),
                    valid: row.get(2)?,
                    stored: row.get(3)?,
                    total_len: row.get(4)?,
                    next_key_order: row.get(5)?,
                    generation: row.get(6)?,
                    vocabulary: row.get(9)?,
                };
                Ok((state, row.get::<_, i64>(7)?, row.get::<_, i64>(8)?))
            })
            .optional()?;
        let Some((state, deleted, stamped)) = found else {
            return Ok(None);
        };
        // What `Writer::commit` writes when anything changed (a transaction that changes
        // nothing stamps nothing).
        self.generation = state.generation.wrapping_add(1);
        self.deleted_generation = if stamped == state.generation {
            deleted
        } else {
            // A build of an older schema wrote last, without stamping its rows: a cache
            // before its generation cannot follow the rows (one at it or after loaded it).
            deleted.max(state.generation)
        };
        Ok(Some(state))
    }

    fn write_scope_state(&mut self, state: &ScopeState) -> DbResult<()> {
        self.tx
            .prepare_cached(
                "UPDATE scopes SET last_batch = ?2, newest_input_batch = ?3, valid_count = ?4, \
                 stored_count = ?5, total_len = ?6, next_key_order = ?7, generation = ?8, \
                 stamped_generation = ?8, deleted_generation = ?9, vocabulary = ?10 \
                 WHERE id = ?1",
            )?
            .execute(params![
                self.scope,
                batch_to_sql(state.last_batch),
                batch_to_sql(state.newest_input_batch),
                state.valid,
                state.stored,
                state.total_len,
                state.next_key_order,
                state.generation,
                self.deleted_generation,
                state.vocabulary,
            ])?;
        Ok(())
    }

    fn add_df(&mut self, changes: &[(i64, i64)]) -> DbResult<()> {
        let mut update = self
            .tx
            .prepare_cached("UPDATE terms SET df = df + ?2 WHERE id = ?1")?;
        for (term, delta) in changes {
            update.execute([term, delta])?;
        }
        Ok(())
    }

    fn latest(&mut self, id: FactId) -> DbResult<Option<(i64, bool)>> {
        Ok(self
            .tx
            .prepare_cached(
                "SELECT seq, valid_to IS NULL FROM facts WHERE scope = ?1 AND id = ?2 \
                 ORDER BY valid_to IS NULL DESC, seq DESC LIMIT 1",
            )?
            .query_row(params![self.scope, id_to_sql(id)], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?)
    }

    fn version(&mut self, seq: i64) -> DbResult<Option<(SessionFact, u64, Document)>> {
        let mut stmt = self.tx.prepare_cached(SELECT_FACT)?;
        let mut rows = stmt.query(params![seq, self.scope])?;
        match rows.next()? {
            Some(row) => {
                let fact = read_fact(row, 0)?;
                let batch: i64 = row.get(FACT_COLUMN_COUNT)?;
                let document = (
                    row.get(FACT_COLUMN_COUNT + 1)?,
                    row.get(FACT_COLUMN_COUNT + 2)?,
                );
                Ok(Some((fact, batch_from_sql(batch), document)))
            }
            None => Ok(None),
        }
    }

    fn document(&mut self, seq: i64) -> DbResult<Document> {
        Ok(self
            .tx
            .prepare_cached("SELECT doc_len, terms FROM facts WHERE seq = ?1")?
            .query_row([seq], |row| Ok((row.get(0)?, row.get(1)?)))?)
    }

    fn validity(&mut self, seq: i64) -> DbResult<Option<bool>> {
        Ok(self
            .tx
            .prepare_cached("SELECT valid_to IS NULL FROM facts WHERE seq = ?1 AND scope = ?2")?
            .query_row(params![seq, self.scope], |row| row.get(0))
            .optional()?)
    }

    fn valid_for_key(&mut self, subject: &str, relation: &str) -> DbResult<Vec<KeyVersion>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT seq, batch, id, valid_from FROM facts \
             WHERE scope = ?1 AND subject = ?2 AND relation = ?3 AND key_order IS NOT NULL \
             AND valid_to IS NULL ORDER BY key_order",
        )?;
        let mut rows = stmt.query(params![self.scope, subject, relation])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let (seq, batch, id, from): (i64, i64, i64, i64) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            out.push((
                seq,
                batch_from_sql(batch),
                id_from_sql(id)?,
                time_from_sql(from)?,
            ));
        }
        Ok(out)
    }

    fn valid_with_statement(&mut self, folded: &str) -> DbResult<Vec<FactId>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT id FROM facts WHERE scope = ?1 AND folded = ?2 AND valid_to IS NULL \
             ORDER BY key_order",
        )?;
        let mut rows = stmt.query(params![self.scope, folded])?;
        let mut ids = Vec::new();
        while let Some(row) = rows.next()? {
            ids.push(id_from_sql(row.get(0)?)?);
        }
        Ok(ids)
    }

    fn valid_with_relation(&mut self, relation: &str) -> DbResult<Vec<i64>> {
        self.seqs(
            "SELECT seq FROM facts INDEXED BY facts_valid \
             WHERE scope = ?1 AND valid_to IS NULL AND relation = ?2 ORDER BY seq",
            params![self.scope, relation],
        )
    }

    fn valid_in_key_order(&mut self) -> DbResult<Vec<i64>> {
        self.seqs(
            "SELECT seq FROM facts WHERE scope = ?1 AND valid_to IS NULL ORDER BY key_order",
            [self.scope],
        )
    }

    fn valid_subjects(&mut self) -> DbResult<Vec<(i64, String, u64)>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT seq, subject, batch FROM facts WHERE scope = ?1 AND valid_to IS NULL \
             ORDER BY seq",
        )?;
        let mut rows = stmt.query([self.scope])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let batch: i64 = row.get(2)?;
            out.push((row.get(0)?, row.get(1)?, batch_from_sql(batch)));
        }
        Ok(out)
    }

    fn valid_ranks(&mut self) -> DbResult<Vec<RankRow>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT seq, id, confidence, valid_from FROM facts \
             WHERE scope = ?1 AND valid_to IS NULL ORDER BY seq",
        )?;
        let mut rows = stmt.query([self.scope])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let (seq, id, confidence, from): (i64, i64, f64, i64) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            out.push((seq, id_from_sql(id)?, confidence, time_from_sql(from)?));
        }
        Ok(out)
    }

    fn oldest_history(&mut self, limit: usize) -> DbResult<Vec<i64>> {
        self.seqs(
            "SELECT seq FROM facts WHERE scope = ?1 AND valid_to IS NOT NULL \
             ORDER BY seq LIMIT ?2",
            params![self.scope, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    fn versions_of(&mut self, id: FactId) -> DbResult<Vec<i64>> {
        self.seqs(
            "SELECT seq FROM facts WHERE scope = ?1 AND id = ?2 ORDER BY seq",
            params![self.scope, id_to_sql(id)],
        )
    }

    fn term_id(&mut self, term: &str) -> DbResult<i64> {
        let existing: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM terms WHERE scope = ?1 AND term = ?2")?
            .query_row(params![self.scope, term], |row| row.get(0))
            .optional()?;
        match existing {
            Some(id) => Ok(id),
            None => {
                self.tx
                    .prepare_cached("INSERT INTO terms (scope, term) VALUES (?1, ?2)")?
                    .execute(params![self.scope, term])?;
                Ok(self.tx.last_insert_rowid())
            }
        }
    }

    fn insert(
        &mut self,
        fact: &SessionFact,
        folded: Option<&str>,
        batch: u64,
        link: Option<&Link>,
    ) -> DbResult<i64> {
        self.tx
            .prepare_cached(
                "INSERT INTO facts (scope, id, subject, relation, object, tags, valid_from, \
                 valid_to, source_task_id, source_role, confidence, statement, folded, \
                 superseded_by, batch, key_order, doc_len, terms, recorded_at, \
                 changed_generation, metadata) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18, ?19, ?20, ?21)",
            )?
            .execute(params![
                self.scope,
                id_to_sql(fact.id()),
                fact.subject(),
                fact.relation(),
                fact.object(),
                tags_to_sql(fact.tags().as_slice()),
                fact.valid_from().unix_micros(),
                fact.valid_to().map(Timestamp::unix_micros),
                fact.source_task_id(),
                fact.source_role().as_str(),
                fact.confidence(),
                fact.statement(),
                folded,
                fact.superseded_by().map(id_to_sql),
                batch_to_sql(batch),
                link.map(|l| l.key_order),
                link.map(|l| l.doc_len),
                link.map(|l| l.document.as_str()),
                fact.recorded_at().map(Timestamp::unix_micros),
                self.generation,
                metadata_to_text(fact.metadata()),
            ])?;
        let seq = self.tx.last_insert_rowid();
        write_fact_meta(&self.tx, seq, self.scope, fact.metadata())?;
        Ok(seq)
    }

    fn set_batch(&mut self, seq: i64, batch: u64) -> DbResult<()> {
        self.tx
            .prepare_cached("UPDATE facts SET batch = ?2 WHERE seq = ?1")?
            .execute(params![seq, batch_to_sql(batch)])?;
        Ok(())
    }

    fn unlink(&mut self, seq: i64, end: Option<(i64, Option<i64>)>) -> DbResult<()> {
        match end {
            None => self
                .tx
                .prepare_cached(
                    "UPDATE facts SET key_order = NULL, doc_len = NULL, terms = NULL, \
                     changed_generation = ?2 WHERE seq = ?1",
                )?
                .execute([seq, self.generation])?,
            // One row update instead of two: every index over the row changes once.
            Some((valid_to, superseded_by)) => self
                .tx
                .prepare_cached(
                    "UPDATE facts SET key_order = NULL, doc_len = NULL, terms = NULL, \
                     valid_to = ?2, superseded_by = ?3, changed_generation = ?4 WHERE seq = ?1",
                )?
                .execute(params![seq, valid_to, superseded_by, self.generation])?,
        };
        Ok(())
    }

    fn relink(&mut self, seq: i64, link: &Link) -> DbResult<()> {
        self.tx
            .prepare_cached(
                "UPDATE facts SET key_order = ?2, doc_len = ?3, terms = ?4, \
                 changed_generation = ?5 WHERE seq = ?1",
            )?
            .execute(params![
                seq,
                link.key_order,
                link.doc_len,
                link.document,
                self.generation
            ])?;
        Ok(())
    }

    fn update(
        &mut self,
        seq: i64,
        fact: &SessionFact,
        folded: Option<&str>,
        link: Option<&Link>,
    ) -> DbResult<()> {
        self.tx
            .prepare_cached(
                "UPDATE facts SET tags = ?2, confidence = ?3, statement = ?4, folded = ?5, \
                 key_order = ?6, doc_len = ?7, terms = ?8, changed_generation = ?9, \
                 metadata = ?10 WHERE seq = ?1",
            )?
            .execute(params![
                seq,
                tags_to_sql(fact.tags().as_slice()),
                fact.confidence(),
                fact.statement(),
                folded,
                link.map(|l| l.key_order),
                link.map(|l| l.doc_len),
                link.map(|l| l.document.as_str()),
                self.generation,
                metadata_to_text(fact.metadata()),
            ])?;
        self.tx
            .prepare_cached("DELETE FROM fact_meta WHERE seq = ?1")?
            .execute([seq])?;
        write_fact_meta(&self.tx, seq, self.scope, fact.metadata())?;
        Ok(())
    }

    fn delete(&mut self, seq: i64) -> DbResult<()> {
        let deleted: Option<(i64, bool, i64)> = self
            .tx
            .prepare_cached(
                "DELETE FROM facts WHERE seq = ?1 RETURNING id, valid_to IS NULL, \
                 changed_generation",
            )?
            .query_row([seq], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .optional()?;
        if let Some((id, valid, changed)) = deleted {
            self.erasing = true;
            // A cache at a generation before the row's last change (or holding it, when
            // it is still valid) cannot see this deletion in the rows: it must reload. A
            // version that ended at or before a cache's generation was never in it.
            let unseen = if valid { self.generation } else { changed };
            self.deleted_generation = self.deleted_generation.max(unseen);
            // When that was the fact's last version, its embeddings and token vectors go
            // too.
            for sql in [
                "DELETE FROM embeddings WHERE scope = ?1 AND fact = ?2 \
                 AND NOT EXISTS (SELECT 1 FROM facts WHERE scope = ?1 AND id = ?2)",
                "DELETE FROM token_vectors WHERE scope = ?1 AND fact = ?2 \
                 AND NOT EXISTS (SELECT 1 FROM facts WHERE scope = ?1 AND id = ?2)",
            ] {
                self.tx
                    .prepare_cached(sql)?
                    .execute(params![self.scope, id])?;
            }
        }
        Ok(())
    }

    fn set_analyzer(&mut self, tag: &str) -> DbResult<()> {
        self.tx
            .prepare_cached("UPDATE scopes SET analyzer = ?2 WHERE id = ?1")?
            .execute(params![self.scope, tag])?;
        Ok(())
    }

    fn applied(&mut self, key: &[u8; 16]) -> DbResult<bool> {
        Ok(self
            .tx
            .prepare_cached("SELECT 1 FROM applied WHERE scope = ?1 AND key = ?2")?
            .exists(params![self.scope, &key[..]])?)
    }

    fn record_applied(&mut self, key: &[u8; 16]) -> DbResult<()> {
        self.tx
            .prepare_cached("INSERT INTO applied (scope, key) VALUES (?1, ?2)")?
            .execute(params![self.scope, &key[..]])?;
        Ok(())
    }

    fn indexed(&mut self, seq: i64, document: &str) {
        let change = match self.fts.remove(&seq) {
            Some(FtsChange::Delete | FtsChange::Replace(_)) => {
                FtsChange::Replace(document.to_owned())
            }
            Some(FtsChange::Insert(_)) | None => FtsChange::Insert(document.to_owned()),
        };
        self.fts.insert(seq, change);
    }

    fn unindexed(&mut self, seq: i64) {
        match self.fts.remove(&seq) {
            // Indexed by this transaction only: nothing to undo in the database.
            Some(FtsChange::Insert(_)) => {}
            Some(FtsChange::Delete | FtsChange::Replace(_)) | None => {
                self.fts.insert(seq, FtsChange::Delete);
            }
        }
    }

    fn commit(self) -> DbResult<()> {
        let SqliteRows {
            tx,
            fts,
            scope,
            erasing,
            episodes_erased,
            erased_scope,
            ..
        } = self;
        if !fts.is_empty() {
            // Every delete first, then every insert: one flush of FTS5's pending terms.
            let mut delete = tx.prepare_cached("DELETE FROM fact_fts WHERE rowid = ?1")?;
            for (seq, change) in &fts {
                if matches!(change, FtsChange::Delete | FtsChange::Replace(_)) {
                    delete.execute([seq])?;
                }
            }
            let mut insert =
                tx.prepare_cached("INSERT INTO fact_fts (rowid, terms) VALUES (?1, ?2)")?;
            for (seq, change) in &fts {
                if let FtsChange::Insert(document) | FtsChange::Replace(document) = change {
                    insert.execute(params![seq, document])?;
                }
            }
            drop((delete, insert));
        }
        if erasing {
            forget_unused_words(&tx, scope, episodes_erased)?;
        }
        if erased_scope {
            // The ids of the erased documents, kept as tombstones until a merge: gone too.
            tx.execute_batch(
                "INSERT INTO fact_fts (fact_fts) VALUES ('optimize');
                 INSERT INTO message_fts (message_fts) VALUES ('optimize');",
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// Drops what still names the words of deleted text, in a transaction that deleted
/// stored text (after the document frequencies are written): the scope's terms that no
/// stored document holds (an invalid version's document is empty, so a term at `df` 0 is
/// in none); and when episodes went, the message terms at `df` 0 and the tombstoned
/// entries of `episode_fts`, whose index holds the words of titles and summaries (an
/// `optimize` rewrites it without them). Terms are dropped only here and by an erasure of
/// the scope (`erase_scope`), and `scopes.vocabulary` moves on when any is: a store's
/// cached word → term id map is right only at the vocabulary it was filled at
/// (`fact_store_sql::rules::TermIds`).
fn forget_unused_words(tx: &rusqlite::Connection, scope: i64, episodes: bool) -> DbResult<()> {
    let dropped = tx
        .prepare_cached("DELETE FROM terms WHERE scope = ?1 AND df <= 0")?
        .execute([scope])?;
    if dropped > 0 {
        tx.prepare_cached("UPDATE scopes SET vocabulary = vocabulary + 1 WHERE id = ?1")?
            .execute([scope])?;
    }
    if episodes {
        tx.prepare_cached("DELETE FROM message_terms WHERE scope = ?1 AND df <= 0")?
            .execute([scope])?;
        tx.execute_batch("INSERT INTO episode_fts (episode_fts) VALUES ('optimize');")?;
    }
    Ok(())
}

/// The `SELECT` of a fact row by seq, for readers outside this module.
pub(super) fn select_fact_sql() -> String {
    format!(
        "SELECT {} FROM facts WHERE seq = ?1 AND scope = ?2",
        fact_store_sql::codec::FACT_COLUMNS
    )
}

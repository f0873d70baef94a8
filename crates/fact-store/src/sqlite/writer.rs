//! [`Writer`]: one write transaction of one scope, and the temporal rules over it.
//!
//! The methods mirror `State` in `memory.rs` step for step (`add_batch`, `import`,
//! `end_validity`, `compact`, `merge_subjects`, `drop_valid`, `update`, the explicit
//! invalidation), with SQL lookups where the in-memory store reads its hash indexes, so
//! both stores answer alike: the conformance suite and the differential property test
//! hold them to it. Orders that the in-memory store takes from its indexes are columns
//! here: `seq` (insertion order) and `key_order` (the order in which valid facts joined
//! their `(subject, relation)` key, which an update changes).
//!
//! The scope's counters are read when the transaction begins and written back when it
//! commits; a writer dropped without [`Writer::commit`] rolls everything back.

use std::collections::{BTreeMap, HashMap};

use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Timestamp, fold_statement};
use indexmap::IndexMap;
use rusqlite::{OptionalExtension, Transaction, params};

use super::codec::{
    FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, batch_to_sql, id_from_sql, id_to_sql,
    read_fact, tags_to_sql,
};
use super::error::{DbError, DbResult};
use crate::compaction::summarize;
use crate::{
    AddReport, Analyzer, CompactionPolicy, CompactionReport, ImportDiagnostic, ImportReport,
    SkipReason, Skipped, SnapshotRecord, StoreConfig, StoreError,
};

/// A change to the set of valid facts, replayed on a search cache after the commit.
#[derive(Debug)]
pub(super) enum IndexEvent {
    /// The version in `seq` became valid (or changed while valid) with this content.
    Insert(i64, SessionFact),
    /// The version in `seq` stopped being valid or was removed.
    Remove(i64),
}

/// What a committed transaction changed.
#[derive(Debug)]
pub(super) struct Outcome {
    /// The scope's generation when the transaction began.
    pub(super) from_generation: i64,
    /// Its generation after the commit (the same when nothing changed).
    pub(super) to_generation: i64,
    /// The changes to the valid facts, when they were recorded.
    pub(super) events: Option<Vec<IndexEvent>>,
}

/// The scope's row of `scopes`, as read when the transaction began.
#[derive(Debug, Clone, Copy)]
struct ScopeState {
    last_batch: u64,
    newest_input_batch: u64,
    valid: i64,
    stored: i64,
    total_len: i64,
    next_key_order: i64,
    generation: i64,
}

/// What indexing a valid fact writes into its row.
struct Link {
    key_order: i64,
    doc_len: i64,
    document: String,
    distinct: Vec<i64>,
}

/// One write transaction of one scope.
pub(super) struct Writer<'a> {
    tx: Transaction<'a>,
    scope: i64,
    state: ScopeState,
    analyzer: &'a Analyzer,
    /// Lowercased word → term id of this scope (ids are never deleted, so entries stay
    /// right as long as the transaction that created them commits; the store clears the
    /// map when a transaction fails).
    words: &'a mut HashMap<String, i64>,
    /// Document-frequency changes, written at commit.
    df: HashMap<i64, i64>,
    /// Full-text index changes by seq, written at commit: FTS5 flushes its pending
    /// inserts before every delete, so deletes interleaved with inserts wrote one index
    /// segment per delete (a sixth of the time of an `add`).
    fts: BTreeMap<i64, FtsChange>,
    events: Option<Vec<IndexEvent>>,
    dirty: bool,
}

/// A version, its batch and its term document, by seq (within the scope).
const SELECT_FACT: &str = "SELECT subject, relation, object, tags, valid_from, valid_to, \
     source_task_id, source_role, confidence, statement, superseded_by, batch, doc_len, terms \
     FROM facts WHERE seq = ?1 AND scope = ?2";

/// The term document of a valid version: its length and text.
type Document = (Option<i64>, Option<String>);

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

impl<'a> Writer<'a> {
    /// Begins writing `scope` in `tx` (which should be `BEGIN IMMEDIATE`). With
    /// `record_since` set to the generation a cache holds, changes are recorded as
    /// [`IndexEvent`]s when the scope is still at that generation.
    pub(super) fn begin(
        tx: Transaction<'a>,
        scope: i64,
        analyzer: &'a Analyzer,
        words: &'a mut HashMap<String, i64>,
        record_since: Option<i64>,
    ) -> DbResult<Self> {
        let state = tx
            .prepare_cached(
                "SELECT last_batch, newest_input_batch, valid_count, stored_count, total_len, \
                 next_key_order, generation FROM scopes WHERE id = ?1",
            )?
            .query_row([scope], |row| {
                Ok(ScopeState {
                    last_batch: batch_from_sql(row.get(0)?),
                    newest_input_batch: batch_from_sql(row.get(1)?),
                    valid: row.get(2)?,
                    stored: row.get(3)?,
                    total_len: row.get(4)?,
                    next_key_order: row.get(5)?,
                    generation: row.get(6)?,
                })
            })
            .optional()?
            .ok_or_else(|| DbError::Corrupt(format!("scope {scope} has no row in `scopes`")))?;
        let events = (record_since == Some(state.generation)).then(Vec::new);
        Ok(Writer {
            tx,
            scope,
            state,
            analyzer,
            words,
            df: HashMap::new(),
            fts: BTreeMap::new(),
            events,
            dirty: false,
        })
    }

    /// Writes the scope's counters and the document frequencies, and commits.
    pub(super) fn commit(self) -> DbResult<Outcome> {
        let Writer {
            tx,
            scope,
            state,
            df,
            fts,
            events,
            dirty,
            ..
        } = self;
        let from_generation = state.generation;
        let mut to_generation = from_generation;
        if dirty {
            to_generation = from_generation.wrapping_add(1);
            tx.prepare_cached(
                "UPDATE scopes SET last_batch = ?2, newest_input_batch = ?3, valid_count = ?4, \
                 stored_count = ?5, total_len = ?6, next_key_order = ?7, generation = ?8 \
                 WHERE id = ?1",
            )?
            .execute(params![
                scope,
                batch_to_sql(state.last_batch),
                batch_to_sql(state.newest_input_batch),
                state.valid,
                state.stored,
                state.total_len,
                state.next_key_order,
                to_generation,
            ])?;
            let mut changes: Vec<(i64, i64)> = df.into_iter().filter(|(_, d)| *d != 0).collect();
            changes.sort_unstable();
            let mut update = tx.prepare_cached("UPDATE terms SET df = df + ?2 WHERE id = ?1")?;
            for (term, delta) in changes {
                update.execute([term, delta])?;
            }
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
        }
        tx.commit()?;
        Ok(Outcome {
            from_generation,
            to_generation,
            events,
        })
    }

    fn valid(&self) -> usize {
        usize::try_from(self.state.valid).unwrap_or(0)
    }

    fn history_len(&self) -> usize {
        usize::try_from(self.state.stored - self.state.valid).unwrap_or(0)
    }

    fn record(&mut self, event: impl FnOnce() -> IndexEvent) {
        if let Some(events) = &mut self.events {
            events.push(event());
        }
    }

    // --- lookups (the in-memory store's indexes) ---------------------------------------

    /// The latest version of `id`: its seq and whether it is valid.
    fn latest(&self, id: FactId) -> DbResult<Option<(i64, bool)>> {
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

    fn valid_version(&self, id: FactId) -> DbResult<Option<i64>> {
        Ok(self
            .latest(id)?
            .filter(|(_, valid)| *valid)
            .map(|(seq, _)| seq))
    }

    /// The version in `seq` and its batch.
    fn fact(&self, seq: i64) -> DbResult<Option<(SessionFact, u64)>> {
        Ok(self.version(seq)?.map(|(fact, batch, _)| (fact, batch)))
    }

    /// The version in `seq`, its batch and its term document.
    fn version(&self, seq: i64) -> DbResult<Option<(SessionFact, u64, Document)>> {
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

    /// The valid versions of a key, in the order they joined it: `(seq, batch, id,
    /// valid_from)`.
    fn valid_for_key(
        &self,
        subject: &str,
        relation: &str,
    ) -> DbResult<Vec<(i64, u64, FactId, Timestamp)>> {
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
                super::codec::time_from_sql(from)?,
            ));
        }
        Ok(out)
    }

    /// The valid fact whose folded statement is `folded`, other than `except`.
    fn find_statement(&self, folded: &str, except: Option<FactId>) -> DbResult<Option<FactId>> {
        let mut stmt = self.tx.prepare_cached(
            "SELECT id FROM facts WHERE scope = ?1 AND folded = ?2 AND valid_to IS NULL \
             ORDER BY key_order",
        )?;
        let mut rows = stmt.query(params![self.scope, folded])?;
        while let Some(row) = rows.next()? {
            let id = id_from_sql(row.get(0)?)?;
            if Some(id) != except {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    // --- the term index -----------------------------------------------------------------

    /// The id of the term of an analyzed `word`, created on first sight.
    fn term_id(&mut self, word: &str) -> DbResult<i64> {
        if let Some(id) = self.words.get(word) {
            return Ok(*id);
        }
        let term = self.analyzer.term_of(word);
        let existing: Option<i64> = self
            .tx
            .prepare_cached("SELECT id FROM terms WHERE scope = ?1 AND term = ?2")?
            .query_row(params![self.scope, term], |row| row.get(0))
            .optional()?;
        let id = match existing {
            Some(id) => id,
            None => {
                self.tx
                    .prepare_cached("INSERT INTO terms (scope, term) VALUES (?1, ?2)")?
                    .execute(params![self.scope, term])?;
                self.tx.last_insert_rowid()
            }
        };
        self.words.insert(word.to_owned(), id);
        Ok(id)
    }

    /// The term document of a fact (what `Analyzer::analyze_fact` gives, as term ids).
    fn link_for(&mut self, fact: &SessionFact) -> DbResult<Link> {
        let mut words: Vec<String> = Vec::new();
        let fields = [fact.subject(), fact.relation(), fact.object()];
        for field in fields.into_iter().chain(fact.statement()) {
            self.analyzer
                .for_each_word(field, |word| words.push(word.to_owned()));
        }
        let mut document = String::with_capacity(words.len() * 6);
        let mut distinct: Vec<i64> = Vec::with_capacity(words.len());
        for word in &words {
            let id = self.term_id(word)?;
            if !document.is_empty() {
                document.push(' ');
            }
            document.push('t');
            document.push_str(&id.to_string());
            if !distinct.contains(&id) {
                distinct.push(id);
            }
        }
        let key_order = self.state.next_key_order;
        self.state.next_key_order += 1;
        Ok(Link {
            key_order,
            doc_len: i64::try_from(words.len()).unwrap_or(i64::MAX),
            document,
            distinct,
        })
    }

    /// Adds a valid version's document to the full-text index and the counters.
    fn index(&mut self, seq: i64, fact: &SessionFact, link: Link) -> DbResult<()> {
        let change = match self.fts.remove(&seq) {
            Some(FtsChange::Delete | FtsChange::Replace(_)) => FtsChange::Replace(link.document),
            Some(FtsChange::Insert(_)) | None => FtsChange::Insert(link.document),
        };
        self.fts.insert(seq, change);
        for term in link.distinct {
            *self.df.entry(term).or_default() += 1;
        }
        self.state.valid += 1;
        self.state.total_len += link.doc_len;
        self.record(|| IndexEvent::Insert(seq, fact.clone()));
        Ok(())
    }

    /// Takes a valid version out of the term index and the key and statement indexes.
    fn unlink(&mut self, seq: i64) -> DbResult<()> {
        let document: Document = self
            .tx
            .prepare_cached("SELECT doc_len, terms FROM facts WHERE seq = ?1")?
            .query_row([seq], |row| Ok((row.get(0)?, row.get(1)?)))?;
        self.unlink_ending(seq, document, None)
    }

    /// [`unlink`](Self::unlink) of a version whose term `document` the caller read, and
    /// when `end` is given (`valid_to`, `superseded_by`), the end of the version's
    /// validity written in the same row update.
    fn unlink_ending(
        &mut self,
        seq: i64,
        (doc_len, document): Document,
        end: Option<(i64, Option<i64>)>,
    ) -> DbResult<()> {
        let mut seen: Vec<i64> = Vec::new();
        for token in document
            .as_deref()
            .unwrap_or_default()
            .split_ascii_whitespace()
        {
            let id = parse_term(token)?;
            if !seen.contains(&id) {
                seen.push(id);
                *self.df.entry(id).or_default() -= 1;
            }
        }
        match self.fts.remove(&seq) {
            // Indexed by this transaction only: nothing to undo in the database.
            Some(FtsChange::Insert(_)) => {}
            Some(FtsChange::Delete | FtsChange::Replace(_)) | None => {
                self.fts.insert(seq, FtsChange::Delete);
            }
        }
        match end {
            None => self
                .tx
                .prepare_cached(
                    "UPDATE facts SET key_order = NULL, doc_len = NULL, terms = NULL \
                     WHERE seq = ?1",
                )?
                .execute([seq])?,
            // One row update instead of two: every index over the row changes once.
            Some((valid_to, superseded_by)) => self
                .tx
                .prepare_cached(
                    "UPDATE facts SET key_order = NULL, doc_len = NULL, terms = NULL, \
                     valid_to = ?2, superseded_by = ?3 WHERE seq = ?1",
                )?
                .execute(params![seq, valid_to, superseded_by])?,
        };
        self.state.valid -= 1;
        self.state.total_len -= doc_len.unwrap_or(0);
        self.record(|| IndexEvent::Remove(seq));
        Ok(())
    }

    // --- versions -------------------------------------------------------------------------

    /// Stores a new version (and indexes it when valid); returns its seq.
    fn insert(&mut self, fact: SessionFact, batch: u64) -> DbResult<i64> {
        self.dirty = true;
        let link = if fact.is_valid() {
            Some(self.link_for(&fact)?)
        } else {
            None
        };
        let folded = fact.statement().map(fold_statement);
        self.tx
            .prepare_cached(
                "INSERT INTO facts (scope, id, subject, relation, object, tags, valid_from, \
                 valid_to, source_task_id, source_role, confidence, statement, folded, \
                 superseded_by, batch, key_order, doc_len, terms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18)",
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
                link.as_ref().map(|l| l.key_order),
                link.as_ref().map(|l| l.doc_len),
                link.as_ref().map(|l| l.document.as_str()),
            ])?;
        let seq = self.tx.last_insert_rowid();
        self.state.stored += 1;
        if let Some(link) = link {
            self.index(seq, &fact, link)?;
        }
        Ok(seq)
    }

    /// Ends the validity of a valid version at `at`, or at its `valid_from` if `at` is
    /// earlier; `by` is the fact that superseded it, if one did.
    fn end_validity(
        &mut self,
        seq: i64,
        at: Timestamp,
        by: Option<FactId>,
    ) -> DbResult<Option<FactId>> {
        let Some((fact, _, document)) = self.version(seq)? else {
            return Ok(None);
        };
        let at = at.max(fact.valid_from());
        let ended = match by {
            Some(by) => fact.superseded_at(at, by),
            None => fact.invalidated_at(at),
        };
        let Ok(ended) = ended else {
            return Ok(None);
        };
        self.dirty = true;
        let valid_to = ended.valid_to().unwrap_or(at).unix_micros();
        let superseded_by = ended.superseded_by().map(id_to_sql);
        self.unlink_ending(seq, document, Some((valid_to, superseded_by)))?;
        Ok(Some(fact.id()))
    }

    /// Removes versions.
    fn remove(&mut self, seqs: &[i64]) -> DbResult<()> {
        for &seq in seqs {
            let valid: Option<bool> = self
                .tx
                .prepare_cached("SELECT valid_to IS NULL FROM facts WHERE seq = ?1 AND scope = ?2")?
                .query_row(params![seq, self.scope], |row| row.get(0))
                .optional()?;
            let Some(valid) = valid else {
                continue;
            };
            self.dirty = true;
            if valid {
                self.unlink(seq)?;
            }
            self.tx
                .prepare_cached("DELETE FROM facts WHERE seq = ?1")?
                .execute([seq])?;
            self.state.stored -= 1;
        }
        Ok(())
    }

    // --- operations -----------------------------------------------------------------------

    /// `add`: one batch, then automatic compaction.
    pub(super) fn add(
        &mut self,
        batch: Vec<SessionFact>,
        config: &StoreConfig,
    ) -> DbResult<AddReport> {
        let mut report = self.add_batch(batch)?;
        self.state.newest_input_batch = self.state.last_batch;
        report.compaction = self.compact_if_needed(config)?;
        Ok(report)
    }

    fn add_batch(&mut self, batch: Vec<SessionFact>) -> DbResult<AddReport> {
        self.dirty = true;
        self.state.last_batch += 1;
        let this_batch = self.state.last_batch;
        let incoming: Vec<FactId> = batch
            .iter()
            .filter(|fact| fact.is_valid())
            .map(SessionFact::id)
            .collect();
        let mut seen: Vec<FactId> = Vec::with_capacity(batch.len());
        let mut report = AddReport::default();
        for (index, fact) in batch.into_iter().enumerate() {
            let id = fact.id();
            let skip = |reason| Skipped { index, id, reason };
            if !fact.is_valid() {
                report.skipped.push(skip(SkipReason::ArrivedInvalidated));
                continue;
            }
            if seen.contains(&id) {
                report.skipped.push(skip(SkipReason::DuplicateInBatch));
                continue;
            }
            seen.push(id);
            // Only the latest version of an id counts (as in memory): an import can store an
            // invalidated version after a valid one, which then is not refreshed.
            let refresh = self.valid_version(id)?;
            let key_versions = self.valid_for_key(fact.subject(), fact.relation())?;
            if refresh.is_none()
                && let Some(statement) = fact.statement()
                && let Some(existing) = self.find_statement(&fold_statement(statement), None)?
            {
                report
                    .skipped
                    .push(skip(SkipReason::DuplicateStatement { existing }));
                continue;
            }
            // The facts of earlier batches with this key, except those this batch re-adds.
            let earlier: Vec<(i64, FactId, Timestamp)> = key_versions
                .into_iter()
                .filter(|(_, batch, id, _)| *batch != this_batch && !incoming.contains(id))
                .map(|(seq, _, id, from)| (seq, id, from))
                .collect();
            // Out of order: a fact older than the current truth of its key arrives already
            // superseded by the newest of them, and ends nothing.
            if refresh.is_none()
                && let Some(&(_, newest, newest_from)) =
                    earlier.iter().max_by_key(|(seq, _, from)| (*from, *seq))
                && newest_from > fact.valid_from()
            {
                if let Ok(stale) = fact.superseded_at(newest_from, newest) {
                    self.insert(stale, this_batch)?;
                    report.arrived_superseded.push(id);
                }
                continue;
            }
            for (seq, _, _) in earlier {
                if let Some(ended) = self.end_validity(seq, fact.valid_from(), Some(id))? {
                    report.invalidated.push(ended);
                }
            }
            match refresh {
                Some(seq) => {
                    self.tx
                        .prepare_cached("UPDATE facts SET batch = ?2 WHERE seq = ?1")?
                        .execute(params![seq, batch_to_sql(this_batch)])?;
                    report.refreshed.push(id);
                }
                None => {
                    self.insert(fact, this_batch)?;
                    report.added.push(id);
                }
            }
        }
        Ok(report)
    }

    /// `import`: the records of a snapshot, then automatic compaction.
    pub(super) fn import(
        &mut self,
        records: Vec<SnapshotRecord>,
        config: &StoreConfig,
    ) -> DbResult<ImportReport> {
        let mut report = self.import_records(records)?;
        self.state.newest_input_batch = self.state.last_batch;
        self.dirty = true;
        if let Some(compaction) = self.compact_if_needed(config)? {
            report.invalidated.extend(compaction.dropped_valid);
        }
        Ok(report)
    }

    fn import_records(&mut self, records: Vec<SnapshotRecord>) -> DbResult<ImportReport> {
        let base = self.state.last_batch;
        let mut report = ImportReport::default();
        for (index, record) in records.into_iter().enumerate() {
            let mut skipped = None;
            let batch = base.saturating_add(record.batch);
            self.state.last_batch = self.state.last_batch.max(batch);
            let fact = record.fact;
            if !fact.is_valid() {
                self.insert(fact, batch)?;
                report.imported += 1;
                continue;
            }
            if self.valid_version(fact.id())?.is_some() {
                skipped = Some(format!("fact {} is already valid in the store", fact.id()));
            } else if let Some(statement) = fact.statement()
                && let Some(existing) = self.find_statement(&fold_statement(statement), None)?
            {
                skipped = Some(format!(
                    "fact {} repeats the statement of valid fact {existing}",
                    fact.id()
                ));
            }
            if let Some(message) = skipped {
                report.skipped.push(ImportDiagnostic { index, message });
                continue;
            }
            // The latest batch wins a key, as in `add`.
            let mut superseded = None;
            for (seq, existing_batch, existing_id, existing_from) in
                self.valid_for_key(fact.subject(), fact.relation())?
            {
                if existing_batch < batch {
                    let ended = self.end_validity(seq, fact.valid_from(), Some(fact.id()))?;
                    report.invalidated.extend(ended);
                } else if existing_batch > batch {
                    superseded = Some((existing_from, existing_id));
                }
            }
            let fact = match superseded {
                Some((at, by)) => match fact.superseded_at(at.max(fact.valid_from()), by) {
                    Ok(ended) => ended,
                    Err(e) => {
                        report.skipped.push(ImportDiagnostic {
                            index,
                            message: format!("fact {} cannot be ordered: {e}", fact.id()),
                        });
                        continue;
                    }
                },
                None => fact,
            };
            self.insert(fact, batch)?;
            report.imported += 1;
        }
        Ok(report)
    }

    /// `invalidate_matching`: ends the valid facts `selector` picks at `now`, then
    /// automatic compaction.
    pub(super) fn invalidate(
        &mut self,
        selector: &FactSelector,
        now: Timestamp,
        config: &StoreConfig,
    ) -> DbResult<Vec<FactId>> {
        let candidates: Vec<i64> = match &selector.subject {
            Some(subject) => self
                .valid_for_key(subject, &selector.relation)?
                .into_iter()
                .map(|(seq, ..)| seq)
                .collect(),
            None => {
                let mut stmt = self.tx.prepare_cached(
                    "SELECT seq FROM facts INDEXED BY facts_valid \
                     WHERE scope = ?1 AND valid_to IS NULL AND relation = ?2 ORDER BY seq",
                )?;
                stmt.query_map(params![self.scope, selector.relation], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()?
            }
        };
        let mut picked = Vec::new();
        for seq in candidates {
            if let Some((fact, _)) = self.fact(seq)?
                && selector.matches(&fact)
            {
                picked.push(seq);
            }
        }
        let mut ended = Vec::new();
        for seq in picked {
            ended.extend(self.end_validity(seq, now, None)?);
        }
        // Invalidation grows history, which has a limit too.
        self.compact_if_needed(config)?;
        Ok(ended)
    }

    /// `update`: changes the latest version of `id`.
    pub(super) fn update(&mut self, id: FactId, update: &FactUpdate) -> DbResult<SessionFact> {
        let not_found = || DbError::Store(StoreError::NotFound { id });
        let (seq, _) = self.latest(id)?.ok_or_else(not_found)?;
        let (old, _) = self.fact(seq)?.ok_or_else(not_found)?;
        let new = old
            .updated(update)
            .map_err(|source| StoreError::InvalidUpdate { id, source })?;
        if old.is_valid()
            && let Some(statement) = new.statement()
            && let Some(existing) = self.find_statement(&fold_statement(statement), Some(id))?
        {
            return Err(StoreError::DuplicateStatement { id, existing }.into());
        }
        self.dirty = true;
        let link = if old.is_valid() {
            self.unlink(seq)?;
            Some(self.link_for(&new)?)
        } else {
            None
        };
        self.tx
            .prepare_cached(
                "UPDATE facts SET tags = ?2, confidence = ?3, statement = ?4, folded = ?5, \
                 key_order = ?6, doc_len = ?7, terms = ?8 WHERE seq = ?1",
            )?
            .execute(params![
                seq,
                tags_to_sql(new.tags().as_slice()),
                new.confidence(),
                new.statement(),
                new.statement().map(fold_statement),
                link.as_ref().map(|l| l.key_order),
                link.as_ref().map(|l| l.doc_len),
                link.as_ref().map(|l| l.document.as_str()),
            ])?;
        if let Some(link) = link {
            self.index(seq, &new, link)?;
        }
        Ok(new)
    }

    /// `delete`: removes every version of `id`; returns how many.
    pub(super) fn delete(&mut self, id: FactId) -> DbResult<usize> {
        let seqs = self
            .tx
            .prepare_cached("SELECT seq FROM facts WHERE scope = ?1 AND id = ?2 ORDER BY seq")?
            .query_map(params![self.scope, id_to_sql(id)], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        if seqs.is_empty() {
            return Err(StoreError::NotFound { id }.into());
        }
        self.remove(&seqs)?;
        Ok(seqs.len())
    }

    // --- compaction -------------------------------------------------------------------------

    fn compact_if_needed(&mut self, config: &StoreConfig) -> DbResult<Option<CompactionReport>> {
        let over = self.valid() > config.capacity || self.history_len() > config.history_limit;
        if config.auto_compact && over {
            self.compact(config.capacity, config).map(Some)
        } else {
            Ok(None)
        }
    }

    /// `compact`: until at most `max_valid` facts are valid, then history beyond its limit.
    pub(super) fn compact(
        &mut self,
        max_valid: usize,
        config: &StoreConfig,
    ) -> DbResult<CompactionReport> {
        let mut report = CompactionReport::default();
        if self.valid() > max_valid {
            match config.policy {
                CompactionPolicy::MergeBySubject => {
                    self.merge_subjects(max_valid, &mut report)?;
                    self.drop_valid(max_valid, false, &mut report)?;
                }
                CompactionPolicy::LowestConfidenceFirst => {
                    self.drop_valid(max_valid, true, &mut report)?;
                }
            }
        }
        // Last, because a summary may invalidate an older summary of its subject.
        let excess_history = self.history_len().saturating_sub(config.history_limit);
        if excess_history > 0 {
            let oldest = self
                .tx
                .prepare_cached(
                    "SELECT seq FROM facts WHERE scope = ?1 AND valid_to IS NOT NULL \
                     ORDER BY seq LIMIT ?2",
                )?
                .query_map(
                    params![
                        self.scope,
                        i64::try_from(excess_history).unwrap_or(i64::MAX)
                    ],
                    |row| row.get(0),
                )?
                .collect::<rusqlite::Result<Vec<i64>>>()?;
            report.dropped_history = oldest.len();
            self.remove(&oldest)?;
        }
        Ok(report)
    }

    /// Merges subjects, least recently touched first, until `max_valid` is met.
    fn merge_subjects(&mut self, max_valid: usize, report: &mut CompactionReport) -> DbResult<()> {
        let protected = self.state.newest_input_batch;
        let mut groups: IndexMap<String, Vec<i64>> = IndexMap::new();
        {
            let mut stmt = self.tx.prepare_cached(
                "SELECT seq, subject, batch FROM facts WHERE scope = ?1 AND valid_to IS NULL \
                 ORDER BY seq",
            )?;
            let mut rows = stmt.query([self.scope])?;
            while let Some(row) = rows.next()? {
                let (seq, subject, batch): (i64, String, i64) =
                    (row.get(0)?, row.get(1)?, row.get(2)?);
                if batch_from_sql(batch) != protected {
                    groups.entry(subject).or_default().push(seq);
                }
            }
        }
        let mut groups: Vec<Vec<i64>> =
            groups.into_values().filter(|seqs| seqs.len() > 1).collect();
        groups.sort_by_key(|seqs| seqs.last().copied());
        for seqs in groups {
            if self.valid() <= max_valid {
                break;
            }
            let mut facts = Vec::with_capacity(seqs.len());
            for &seq in &seqs {
                if let Some((fact, _)) = self.fact(seq)? {
                    facts.push(fact);
                }
            }
            let refs: Vec<&SessionFact> = facts.iter().collect();
            let Some(summary) = summarize(&refs) else {
                continue;
            };
            report.merged += seqs.len();
            self.remove(&seqs)?;
            report.summaries.push(summary.id());
            self.add_batch(vec![summary])?;
        }
        Ok(())
    }

    /// Drops valid facts in ascending order (confidence when `by_confidence`, then
    /// `valid_from`, then insertion) until `max_valid` is met.
    fn drop_valid(
        &mut self,
        max_valid: usize,
        by_confidence: bool,
        report: &mut CompactionReport,
    ) -> DbResult<()> {
        let excess = self.valid().saturating_sub(max_valid);
        if excess == 0 {
            return Ok(());
        }
        let mut candidates: Vec<((f64, Timestamp, i64), FactId)> = Vec::new();
        {
            let mut stmt = self.tx.prepare_cached(
                "SELECT seq, id, confidence, valid_from FROM facts \
                 WHERE scope = ?1 AND valid_to IS NULL ORDER BY seq",
            )?;
            let mut rows = stmt.query([self.scope])?;
            while let Some(row) = rows.next()? {
                let (seq, id, confidence, from): (i64, i64, f64, i64) =
                    (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
                let rank = if by_confidence { confidence } else { 0.0 };
                candidates.push((
                    (rank, super::codec::time_from_sql(from)?, seq),
                    id_from_sql(id)?,
                ));
            }
        }
        candidates.sort_by(|(a, _), (b, _)| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        candidates.truncate(excess);
        let seqs: Vec<i64> = candidates.iter().map(|((_, _, seq), _)| *seq).collect();
        self.remove(&seqs)?;
        report
            .dropped_valid
            .extend(candidates.into_iter().map(|(_, id)| id));
        Ok(())
    }

    // --- maintenance ------------------------------------------------------------------------

    /// Rebuilds the term documents of the scope's valid facts with this writer's
    /// analyzer (after the store was opened with another analyzer configuration), and
    /// records `tag` as the scope's analyzer.
    pub(super) fn reindex(&mut self, tag: &str) -> DbResult<()> {
        self.dirty = true;
        // The valid facts stay valid: unlink and index them again, in their key order.
        let seqs = self
            .tx
            .prepare_cached(
                "SELECT seq FROM facts WHERE scope = ?1 AND valid_to IS NULL ORDER BY key_order",
            )?
            .query_map([self.scope], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        for &seq in &seqs {
            self.unlink(seq)?;
        }
        for &seq in &seqs {
            let Some((fact, _)) = self.fact(seq)? else {
                continue;
            };
            let link = self.link_for(&fact)?;
            self.tx
                .prepare_cached(
                    "UPDATE facts SET key_order = ?2, doc_len = ?3, terms = ?4 WHERE seq = ?1",
                )?
                .execute(params![seq, link.key_order, link.doc_len, link.document])?;
            self.index(seq, &fact, link)?;
        }
        self.tx
            .prepare_cached("UPDATE scopes SET analyzer = ?2 WHERE id = ?1")?
            .execute(params![self.scope, tag])?;
        Ok(())
    }
}

/// The id of a term-document token (`t12`).
pub(super) fn parse_term(token: &str) -> DbResult<i64> {
    token
        .strip_prefix('t')
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| DbError::Corrupt(format!("term document token {token:?}")))
}

/// The `SELECT` of a fact row by seq, for readers outside this module.
pub(super) fn select_fact_sql() -> String {
    format!("SELECT {FACT_COLUMNS} FROM facts WHERE seq = ?1 AND scope = ?2")
}

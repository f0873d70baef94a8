//! [`Writer`]: one write transaction of one scope, and the temporal rules over it, for
//! every SQL store.
//!
//! The methods mirror `State` in `memory.rs` step for step (`add_batch`, `import`,
//! `end_validity`, `compact`, `merge_subjects`, `drop_valid`, `update`, the explicit
//! invalidation), with lookups through [`Rows`] where the in-memory store reads its hash
//! indexes, so every store answers alike: the conformance suite and the differential
//! property test hold them to it. Orders that the in-memory store takes from its indexes
//! are columns here: `seq` (insertion order) and `key_order` (the order in which valid
//! facts joined their `(subject, relation)` key, which an update changes).
//!
//! A backend (SQLite, PostgreSQL) implements [`Rows`]: the row reads and writes of one
//! open transaction, a few SQL statements each. The rules never see SQL.
//!
//! The scope's counters are read when the transaction begins and written back when it
//! commits; a writer dropped without [`Writer::commit`] rolls everything back.

use std::collections::HashMap;

use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Timestamp, fold_statement};
use indexmap::IndexMap;

use super::codec::parse_term;
use super::error::{DbError, DbResult};
use fact_store::backend::summarize;
use fact_store::{
    AddReport, Analyzer, CompactionPolicy, CompactionReport, ImportDiagnostic, ImportReport,
    NotEndedReason, SkipReason, Skipped, SnapshotRecord, Step, StepReport, StoreConfig, StoreError,
    Transaction, TransactionReport,
};

/// A change to the set of valid facts, replayed on a search cache after the commit.
#[derive(Debug)]
pub enum IndexEvent {
    /// The version in `seq` became valid (or changed while valid) with this content.
    Insert(i64, SessionFact),
    /// The version in `seq` stopped being valid or was removed.
    Remove(i64),
}

/// What a committed transaction changed.
#[derive(Debug)]
pub struct Outcome {
    /// The scope's generation when the transaction began.
    pub from_generation: i64,
    /// Its generation after the commit (the same when nothing changed).
    pub to_generation: i64,
    /// The changes to the valid facts, when they were recorded.
    pub events: Option<Vec<IndexEvent>>,
}

/// The scope's row of `scopes`, as read when the transaction began.
#[derive(Debug, Clone, Copy)]
pub struct ScopeState {
    /// The number of the last batch written.
    pub last_batch: u64,
    /// The newest batch that added facts (not a compaction's).
    pub newest_input_batch: u64,
    /// How many versions are valid.
    pub valid: i64,
    /// How many versions are stored.
    pub stored: i64,
    /// The total length in terms of the valid term documents.
    pub total_len: i64,
    /// The next key order to give.
    pub next_key_order: i64,
    /// Bumped by every commit that changes the valid facts.
    pub generation: i64,
    /// Moved on whenever terms of the scope are deleted: word → term id maps read before
    /// may name terms that are gone ([`TermIds`]).
    pub vocabulary: i64,
}

/// One import of versions, perhaps in several calls of [`Writer::import_records`]: the
/// batch its batches count from, and the first version it stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportRun {
    base: u64,
    first: Option<i64>,
}

/// Lowercased word → term id of a scope, as a store keeps it between its writes, and the
/// scope's vocabulary ([`ScopeState::vocabulary`]) the ids were read at. A transaction
/// that deletes terms (an erasure, or SQLite's deletion of words no text holds any more)
/// moves the vocabulary on: [`Writer::begin`] then starts from an empty map.
#[derive(Debug, Default)]
pub struct TermIds {
    vocabulary: Option<i64>,
    ids: HashMap<String, i64>,
}

impl TermIds {
    /// The ids, emptied first unless they were read at `vocabulary`.
    fn at(&mut self, vocabulary: i64) -> &mut HashMap<String, i64> {
        if self.vocabulary != Some(vocabulary) {
            self.ids.clear();
            self.vocabulary = Some(vocabulary);
        }
        &mut self.ids
    }

    /// Forgets every id (after a rolled-back transaction, whose new terms do not exist).
    pub fn clear(&mut self) {
        self.ids.clear();
        self.vocabulary = None;
    }

    /// How many words it holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no word.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Adds the ids of `other`, read by a write that committed (a term's id never changes
    /// within a vocabulary); the ids of an older vocabulary give way to a newer one's.
    pub fn merge(&mut self, mut other: TermIds) {
        if self.vocabulary != other.vocabulary {
            if other.vocabulary.unwrap_or(i64::MIN) > self.vocabulary.unwrap_or(i64::MIN) {
                *self = other;
            }
            return;
        }
        if self.ids.len() < other.ids.len() {
            std::mem::swap(&mut self.ids, &mut other.ids);
        }
        self.ids.extend(other.ids);
    }
}

/// What indexing a valid fact writes into its row.
#[derive(Debug)]
pub struct Link {
    /// The order in which the fact joined its key.
    pub key_order: i64,
    /// The term document's length in terms.
    pub doc_len: i64,
    /// The term document: the analyzer's terms as term ids, `t12 t7 t12`.
    pub document: String,
    distinct: Vec<i64>,
}

/// The term document of a valid version: its length and text (`None` once invalid).
pub type Document = (Option<i64>, Option<String>);

/// A valid version of a key: `(seq, batch, id, valid_from)`.
pub type KeyVersion = (i64, u64, FactId, Timestamp);

/// A valid version's rank data: `(seq, id, confidence, valid_from)`.
pub type RankRow = (i64, FactId, f64, Timestamp);

/// The row operations of one open write transaction of one scope: what a backend
/// implements so that [`Writer`] can apply the temporal rules. Every method is a few
/// statements of the scope's own rows; none decides anything.
pub trait Rows {
    /// The driver's error: what the row operations fail with.
    type Error;
    /// Whether each lookup costs a round trip to a server, so that the rules should look
    /// up a batch's words at once ([`term_ids`](Self::term_ids)) before they index it. An
    /// embedded database answers one by one faster than the extra pass over the batch.
    const BATCHED_LOOKUPS: bool = false;
    /// A hint before a batch: its facts' ids and keys are about to be looked up one by one
    /// ([`latest`](Self::latest), [`valid_for_key`](Self::valid_for_key)). A backend for
    /// which every lookup is a network round trip fetches them all at once here; the
    /// default does nothing.
    fn prefetch(&mut self, _batch: &[SessionFact]) -> DbResult<(), Self::Error> {
        Ok(())
    }
    /// The scope's counters (`None`: the scope has no row). A backend that lets several
    /// writers in at once locks the row here, so writers of one scope take turns.
    fn scope_state(&mut self) -> DbResult<Option<ScopeState>, Self::Error>;
    /// Writes the scope's counters back.
    fn write_scope_state(&mut self, state: &ScopeState) -> DbResult<(), Self::Error>;
    /// Adds `delta` to each term's document frequency, in term order.
    fn add_df(&mut self, changes: &[(i64, i64)]) -> DbResult<(), Self::Error>;
    /// The latest version of `id`: its seq and whether it is valid.
    fn latest(&mut self, id: FactId) -> DbResult<Option<(i64, bool)>, Self::Error>;
    /// The version in `seq`, its batch and its term document.
    fn version(&mut self, seq: i64) -> DbResult<Option<(SessionFact, u64, Document)>, Self::Error>;
    /// The term document of the version in `seq`.
    fn document(&mut self, seq: i64) -> DbResult<Document, Self::Error>;
    /// Whether the version in `seq` is valid (`None`: no such version).
    fn validity(&mut self, seq: i64) -> DbResult<Option<bool>, Self::Error>;
    /// The valid versions of a key, in key order.
    fn valid_for_key(
        &mut self,
        subject: &str,
        relation: &str,
    ) -> DbResult<Vec<KeyVersion>, Self::Error>;
    /// The ids of the valid versions whose folded statement is `folded`, in key order.
    fn valid_with_statement(&mut self, folded: &str) -> DbResult<Vec<FactId>, Self::Error>;
    /// The seqs of the valid versions with this relation, in insertion order.
    fn valid_with_relation(&mut self, relation: &str) -> DbResult<Vec<i64>, Self::Error>;
    /// The seqs of the valid versions in key order.
    fn valid_in_key_order(&mut self) -> DbResult<Vec<i64>, Self::Error>;
    /// `(seq, subject, batch)` of the valid versions, in insertion order.
    fn valid_subjects(&mut self) -> DbResult<Vec<(i64, String, u64)>, Self::Error>;
    /// `(seq, id, confidence, valid_from)` of the valid versions, in insertion order.
    fn valid_ranks(&mut self) -> DbResult<Vec<RankRow>, Self::Error>;
    /// The seqs of the oldest `limit` invalid versions.
    fn oldest_history(&mut self, limit: usize) -> DbResult<Vec<i64>, Self::Error>;
    /// The seqs of every version of `id`, in insertion order.
    fn versions_of(&mut self, id: FactId) -> DbResult<Vec<i64>, Self::Error>;
    /// The id of the scope's `term`, created when new.
    fn term_id(&mut self, term: &str) -> DbResult<i64, Self::Error>;
    /// The ids of the scope's `terms` (distinct), created when new, in their order. The
    /// default asks [`term_id`](Self::term_id) for each.
    fn term_ids(&mut self, terms: &[String]) -> DbResult<Vec<i64>, Self::Error> {
        terms.iter().map(|term| self.term_id(term)).collect()
    }
    /// Stores a new version; returns its seq.
    fn insert(
        &mut self,
        fact: &SessionFact,
        folded: Option<&str>,
        batch: u64,
        link: Option<&Link>,
    ) -> DbResult<i64, Self::Error>;
    /// Moves a version to another batch (a refresh).
    fn set_batch(&mut self, seq: i64, batch: u64) -> DbResult<(), Self::Error>;
    /// Clears a version's index columns and, with `end` (`valid_to`, `superseded_by`),
    /// ends its validity in the same row update.
    fn unlink(&mut self, seq: i64, end: Option<(i64, Option<i64>)>) -> DbResult<(), Self::Error>;
    /// Sets a valid version's index columns anew (a reindex).
    fn relink(&mut self, seq: i64, link: &Link) -> DbResult<(), Self::Error>;
    /// Writes an updated version's tags, confidence, statement, metadata and index
    /// columns.
    fn update(
        &mut self,
        seq: i64,
        fact: &SessionFact,
        folded: Option<&str>,
        link: Option<&Link>,
    ) -> DbResult<(), Self::Error>;
    /// Removes a version.
    fn delete(&mut self, seq: i64) -> DbResult<(), Self::Error>;
    /// Records the analyzer the scope's term documents are made with.
    fn set_analyzer(&mut self, tag: &str) -> DbResult<(), Self::Error>;
    /// Whether a transaction with this key digest was committed in the scope.
    fn applied(&mut self, key: &[u8; 16]) -> DbResult<bool, Self::Error>;
    /// Records that the transaction with this key digest commits with this one.
    fn record_applied(&mut self, key: &[u8; 16]) -> DbResult<(), Self::Error>;
    /// The version in `seq` entered the full-text index with `document` (for a backend
    /// whose index is a table of its own; the default does nothing).
    fn indexed(&mut self, _seq: i64, _document: &str) {}
    /// The version in `seq` left the full-text index.
    fn unindexed(&mut self, _seq: i64) {}
    /// Writes what the backend buffered and commits the transaction.
    fn commit(self) -> DbResult<(), Self::Error>;
}

/// One write transaction of one scope.
pub struct Writer<'a, R: Rows> {
    rows: R,
    state: ScopeState,
    analyzer: &'a Analyzer,
    /// Lowercased word → term id of this scope, at the vocabulary the transaction began
    /// at (entries stay right as long as the transaction that created them commits; the
    /// store clears the map when a transaction fails).
    words: &'a mut HashMap<String, i64>,
    /// Document-frequency changes, written at commit.
    df: HashMap<i64, i64>,
    events: Option<Vec<IndexEvent>>,
    dirty: bool,
}

impl<'a, R: Rows> Writer<'a, R> {
    /// Begins writing the scope of `rows`. With `record_since` set to the generation a
    /// cache holds, changes are recorded as [`IndexEvent`]s when the scope is still at
    /// that generation.
    pub fn begin(
        mut rows: R,
        analyzer: &'a Analyzer,
        words: &'a mut TermIds,
        record_since: Option<i64>,
    ) -> DbResult<Self, R::Error> {
        let state = rows
            .scope_state()?
            .ok_or_else(|| DbError::Corrupt("the store's scope has no row in `scopes`".into()))?;
        let words = words.at(state.vocabulary);
        let events = (record_since == Some(state.generation)).then(Vec::new);
        Ok(Writer {
            rows,
            state,
            analyzer,
            words,
            df: HashMap::new(),
            events,
            dirty: false,
        })
    }

    /// Writes the scope's counters and the document frequencies, and commits.
    pub fn commit(self) -> DbResult<Outcome, R::Error> {
        let Writer {
            mut rows,
            mut state,
            df,
            events,
            dirty,
            ..
        } = self;
        let from_generation = state.generation;
        if dirty {
            state.generation = from_generation.wrapping_add(1);
            rows.write_scope_state(&state)?;
            let mut changes: Vec<(i64, i64)> = df.into_iter().filter(|(_, d)| *d != 0).collect();
            changes.sort_unstable();
            rows.add_df(&changes)?;
        }
        rows.commit()?;
        Ok(Outcome {
            from_generation,
            to_generation: state.generation,
            events,
        })
    }

    /// Starts the scope again, empty, after its rows were all deleted in this transaction
    /// (`long_term::erase`): the counters are a new scope's, the generation moves on (a
    /// search cache reloads rather than follow), and the vocabulary too (the terms are
    /// gone).
    pub fn restart(&mut self) {
        self.state = ScopeState {
            last_batch: 0,
            newest_input_batch: 0,
            valid: 0,
            stored: 0,
            total_len: 0,
            next_key_order: 0,
            generation: self.state.generation,
            vocabulary: self.state.vocabulary.wrapping_add(1),
        };
        self.words.clear();
        self.df.clear();
        self.events = None;
        self.dirty = true;
    }

    /// The transaction's rows, for what the rules do not cover (long-term memory's
    /// aliases, profile and episodes: `sql::long_term`).
    pub fn rows_mut(&mut self) -> &mut R {
        &mut self.rows
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

    fn valid_version(&mut self, id: FactId) -> DbResult<Option<i64>, R::Error> {
        Ok(self
            .rows
            .latest(id)?
            .filter(|(_, valid)| *valid)
            .map(|(seq, _)| seq))
    }

    /// The version in `seq` and its batch.
    fn fact(&mut self, seq: i64) -> DbResult<Option<(SessionFact, u64)>, R::Error> {
        Ok(self
            .rows
            .version(seq)?
            .map(|(fact, batch, _)| (fact, batch)))
    }

    fn valid_for_key(
        &mut self,
        subject: &str,
        relation: &str,
    ) -> DbResult<Vec<KeyVersion>, R::Error> {
        self.rows.valid_for_key(subject, relation)
    }

    /// The valid fact whose folded statement is `folded`, other than `except`.
    fn find_statement(
        &mut self,
        folded: &str,
        except: Option<FactId>,
    ) -> DbResult<Option<FactId>, R::Error> {
        Ok(self
            .rows
            .valid_with_statement(folded)?
            .into_iter()
            .find(|id| Some(*id) != except))
    }

    // --- the term index -----------------------------------------------------------------

    /// The id of the term of an analyzed `word`, created on first sight.
    fn term_id(&mut self, word: &str) -> DbResult<i64, R::Error> {
        if let Some(id) = self.words.get(word) {
            return Ok(*id);
        }
        let id = self.rows.term_id(&self.analyzer.term_of(word))?;
        self.words.insert(word.to_owned(), id);
        Ok(id)
    }

    /// Looks up (or creates) at once the terms of the batch's words not known yet, so that
    /// indexing its facts asks the backend nothing more.
    fn learn_words(&mut self, batch: &[SessionFact]) -> DbResult<(), R::Error> {
        // Word → index of its term in `terms`.
        let mut words: HashMap<String, usize> = HashMap::new();
        let mut terms: Vec<String> = Vec::new();
        let mut term_at: HashMap<String, usize> = HashMap::new();
        for fact in batch.iter().filter(|fact| fact.is_valid()) {
            let fields = [fact.subject(), fact.relation(), fact.object()];
            for field in fields.into_iter().chain(fact.statement()) {
                self.analyzer.for_each_word(field, |word| {
                    if self.words.contains_key(word) || words.contains_key(word) {
                        return;
                    }
                    let term = self.analyzer.term_of(word);
                    let at = *term_at.entry(term.clone()).or_insert_with(|| {
                        terms.push(term);
                        terms.len() - 1
                    });
                    words.insert(word.to_owned(), at);
                });
            }
        }
        if terms.is_empty() {
            return Ok(());
        }
        let ids = self.rows.term_ids(&terms)?;
        for (word, at) in words {
            if let Some(id) = ids.get(at) {
                self.words.insert(word, *id);
            }
        }
        Ok(())
    }

    /// The term document of a fact (what `Analyzer::analyze_fact` gives, as term ids).
    fn link_for(&mut self, fact: &SessionFact) -> DbResult<Link, R::Error> {
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
    fn index(&mut self, seq: i64, fact: &SessionFact, link: &Link) {
        self.rows.indexed(seq, &link.document);
        for term in &link.distinct {
            *self.df.entry(*term).or_default() += 1;
        }
        self.state.valid += 1;
        self.state.total_len += link.doc_len;
        self.record(|| IndexEvent::Insert(seq, fact.clone()));
    }

    /// Takes a valid version out of the term index and the key and statement indexes.
    fn unlink(&mut self, seq: i64) -> DbResult<(), R::Error> {
        let document = self.rows.document(seq)?;
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
    ) -> DbResult<(), R::Error> {
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
        self.rows.unindexed(seq);
        self.rows.unlink(seq, end)?;
        self.state.valid -= 1;
        self.state.total_len -= doc_len.unwrap_or(0);
        self.record(|| IndexEvent::Remove(seq));
        Ok(())
    }

    // --- versions -------------------------------------------------------------------------

    /// Stores a new version (and indexes it when valid); returns its seq.
    fn insert(&mut self, fact: SessionFact, batch: u64) -> DbResult<i64, R::Error> {
        self.dirty = true;
        let link = if fact.is_valid() {
            Some(self.link_for(&fact)?)
        } else {
            None
        };
        let folded = fact.statement().map(fold_statement);
        let seq = self
            .rows
            .insert(&fact, folded.as_deref(), batch, link.as_ref())?;
        self.state.stored += 1;
        if let Some(link) = link {
            self.index(seq, &fact, &link);
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
    ) -> DbResult<Option<FactId>, R::Error> {
        let Some((fact, _, document)) = self.rows.version(seq)? else {
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
        let superseded_by = ended.superseded_by().map(super::codec::id_to_sql);
        self.unlink_ending(seq, document, Some((valid_to, superseded_by)))?;
        Ok(Some(fact.id()))
    }

    /// Removes versions.
    fn remove(&mut self, seqs: &[i64]) -> DbResult<(), R::Error> {
        for &seq in seqs {
            let Some(valid) = self.rows.validity(seq)? else {
                continue;
            };
            self.dirty = true;
            if valid {
                self.unlink(seq)?;
            }
            self.rows.delete(seq)?;
            self.state.stored -= 1;
        }
        Ok(())
    }

    // --- operations -----------------------------------------------------------------------

    /// `add`: one batch, then automatic compaction.
    pub fn add(
        &mut self,
        batch: Vec<SessionFact>,
        config: &StoreConfig,
    ) -> DbResult<AddReport, R::Error> {
        let mut report = self.add_batch(batch)?;
        self.state.newest_input_batch = self.state.last_batch;
        report.compaction = self.compact_if_needed(config)?;
        Ok(report)
    }

    fn add_batch(&mut self, batch: Vec<SessionFact>) -> DbResult<AddReport, R::Error> {
        self.dirty = true;
        self.state.last_batch += 1;
        let this_batch = self.state.last_batch;
        let incoming: Vec<FactId> = batch
            .iter()
            .filter(|fact| fact.is_valid())
            .map(SessionFact::id)
            .collect();
        self.rows.prefetch(&batch)?;
        if R::BATCHED_LOOKUPS {
            self.learn_words(&batch)?;
        }
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
                    self.rows.set_batch(seq, this_batch)?;
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

    /// `apply`: the steps of a transaction in order, then automatic compaction, once.
    pub fn apply(
        &mut self,
        transaction: Transaction,
        now: Timestamp,
        config: &StoreConfig,
    ) -> DbResult<TransactionReport, R::Error> {
        if let Some(key) = transaction.key_digest() {
            if self.rows.applied(&key)? {
                return Ok(TransactionReport::of_replay());
            }
            self.rows.record_applied(&key)?;
        }
        let mut report = TransactionReport::default();
        let mut added = false;
        for step in transaction.steps {
            report.steps.push(match step {
                Step::Add(batch) => {
                    added = true;
                    StepReport::Added(self.add_batch(batch)?)
                }
                Step::EndMatching(selector) => StepReport::Ended {
                    ids: self.end_selected(&selector, now)?,
                },
                Step::End { id, at, by } => self.end_one(id, at, by)?,
                Step::Delete(id) => {
                    let seqs = self.rows.versions_of(id)?;
                    self.remove(&seqs)?;
                    StepReport::Deleted {
                        id,
                        versions: seqs.len(),
                    }
                }
                // `Step` is non-exhaustive: a step of a newer fact-store is refused.
                _ => return Err(crate::error::newer("transaction step")),
            });
        }
        if added {
            self.state.newest_input_batch = self.state.last_batch;
        }
        report.compaction = self.compact_if_needed(config)?;
        Ok(report)
    }

    /// [`Step::End`]: ends the valid version of `id` at `at`, naming `by`, unless a rule
    /// of the step says otherwise (as `State::end_one` in memory).
    fn end_one(
        &mut self,
        id: FactId,
        at: Timestamp,
        by: Option<FactId>,
    ) -> DbResult<StepReport, R::Error> {
        let not_ended = |reason| Ok(StepReport::NotEnded { id, reason });
        let Some(seq) = self.valid_version(id)? else {
            return not_ended(NotEndedReason::NotValid);
        };
        if let Some(by) = by
            && self.valid_version(by)?.is_none()
        {
            return not_ended(NotEndedReason::SuccessorNotValid);
        }
        if self
            .fact(seq)?
            .is_some_and(|(fact, _)| fact.valid_from() > at)
        {
            return not_ended(NotEndedReason::NewerThanEnd);
        }
        Ok(StepReport::Ended {
            ids: self.end_validity(seq, at, by)?.into_iter().collect(),
        })
    }

    /// `import`: the records of a snapshot, then automatic compaction.
    pub fn import(
        &mut self,
        records: Vec<SnapshotRecord>,
        config: &StoreConfig,
    ) -> DbResult<ImportReport, R::Error> {
        let mut run = self.import_run();
        self.import_records(records.into_iter().enumerate(), &mut run, config)
    }

    /// An import that starts now: its batches count from the newest batch stored.
    pub fn import_run(&self) -> ImportRun {
        ImportRun {
            base: self.state.last_batch,
            first: None,
        }
    }

    /// Imports `records` (each with the index its diagnostics name) as part of `run`,
    /// then compacts when `config` says so. A version stored before the run (the same
    /// fact valid over the same interval) is left as it is.
    pub fn import_records(
        &mut self,
        records: impl IntoIterator<Item = (usize, SnapshotRecord)>,
        run: &mut ImportRun,
        config: &StoreConfig,
    ) -> DbResult<ImportReport, R::Error> {
        let mut report = self.import_each(records, run)?;
        self.state.newest_input_batch = self.state.last_batch;
        self.dirty = true;
        if let Some(compaction) = self.compact_if_needed(config)? {
            report.invalidated.extend(compaction.dropped_valid);
        }
        Ok(report)
    }

    /// Whether a version of `fact`'s id valid over the same interval was stored before
    /// `run` (a store may hold two equal versions, which an import into an empty scope
    /// keeps).
    fn stored(&mut self, fact: &SessionFact, run: &ImportRun) -> DbResult<bool, R::Error> {
        for seq in self.rows.versions_of(fact.id())? {
            if run.first.is_some_and(|first| seq >= first) {
                continue;
            }
            if let Some((stored, _)) = self.fact(seq)?
                && stored.valid_from() == fact.valid_from()
                && stored.valid_to() == fact.valid_to()
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Stores `fact` as a version of `run`.
    fn insert_imported(
        &mut self,
        fact: SessionFact,
        batch: u64,
        run: &mut ImportRun,
    ) -> DbResult<(), R::Error> {
        let seq = self.insert(fact, batch)?;
        run.first.get_or_insert(seq);
        Ok(())
    }

    fn import_each(
        &mut self,
        records: impl IntoIterator<Item = (usize, SnapshotRecord)>,
        run: &mut ImportRun,
    ) -> DbResult<ImportReport, R::Error> {
        let base = run.base;
        let mut report = ImportReport::default();
        for (index, record) in records {
            let mut skipped = None;
            let batch = base.saturating_add(record.batch);
            let fact = record.fact;
            if self.stored(&fact, run)? {
                report.unchanged += 1;
                continue;
            }
            self.state.last_batch = self.state.last_batch.max(batch);
            if !fact.is_valid() {
                self.insert_imported(fact, batch, run)?;
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
            self.insert_imported(fact, batch, run)?;
            report.imported += 1;
        }
        Ok(report)
    }

    /// `invalidate_matching`: ends the valid facts `selector` picks at `now`, then
    /// automatic compaction.
    pub fn invalidate(
        &mut self,
        selector: &FactSelector,
        now: Timestamp,
        config: &StoreConfig,
    ) -> DbResult<Vec<FactId>, R::Error> {
        let ended = self.end_selected(selector, now)?;
        // Invalidation grows history, which has a limit too.
        self.compact_if_needed(config)?;
        Ok(ended)
    }

    /// Ends the valid facts `selector` picks at `now`.
    fn end_selected(
        &mut self,
        selector: &FactSelector,
        now: Timestamp,
    ) -> DbResult<Vec<FactId>, R::Error> {
        let candidates: Vec<i64> = match &selector.subject {
            Some(subject) => self
                .valid_for_key(subject, &selector.relation)?
                .into_iter()
                .map(|(seq, ..)| seq)
                .collect(),
            None => self.rows.valid_with_relation(&selector.relation)?,
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
        Ok(ended)
    }

    /// `update`: changes the latest version of `id`.
    pub fn update(&mut self, id: FactId, update: &FactUpdate) -> DbResult<SessionFact, R::Error> {
        let not_found = || DbError::Store(StoreError::NotFound { id });
        let (seq, _) = self.rows.latest(id)?.ok_or_else(not_found)?;
        let (old, _) = self.fact(seq)?.ok_or_else(not_found)?;
        let new = old
            .updated(update)
            .map_err(|source| DbError::Store(StoreError::InvalidUpdate { id, source }))?;
        if old.is_valid()
            && let Some(statement) = new.statement()
            && let Some(existing) = self.find_statement(&fold_statement(statement), Some(id))?
        {
            return Err(DbError::Store(StoreError::DuplicateStatement {
                id,
                existing,
            }));
        }
        self.dirty = true;
        let link = if old.is_valid() {
            self.unlink(seq)?;
            Some(self.link_for(&new)?)
        } else {
            None
        };
        let folded = new.statement().map(fold_statement);
        self.rows
            .update(seq, &new, folded.as_deref(), link.as_ref())?;
        if let Some(link) = link {
            self.index(seq, &new, &link);
        }
        Ok(new)
    }

    /// `delete`: removes every version of `id`; returns how many.
    pub fn delete(&mut self, id: FactId) -> DbResult<usize, R::Error> {
        let seqs = self.rows.versions_of(id)?;
        if seqs.is_empty() {
            return Err(DbError::Store(StoreError::NotFound { id }));
        }
        self.remove(&seqs)?;
        Ok(seqs.len())
    }

    // --- compaction -------------------------------------------------------------------------

    fn compact_if_needed(
        &mut self,
        config: &StoreConfig,
    ) -> DbResult<Option<CompactionReport>, R::Error> {
        let over = self.valid() > config.capacity || self.history_len() > config.history_limit;
        if config.auto_compact && over {
            self.compact(config.capacity, config).map(Some)
        } else {
            Ok(None)
        }
    }

    /// `compact`: until at most `max_valid` facts are valid, then history beyond its limit.
    pub fn compact(
        &mut self,
        max_valid: usize,
        config: &StoreConfig,
    ) -> DbResult<CompactionReport, R::Error> {
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
                // `CompactionPolicy` is non-exhaustive: a policy of a newer fact-store is
                // refused here until these rules learn it.
                _ => return Err(crate::error::newer("compaction policy")),
            }
        }
        // Last, because a summary may invalidate an older summary of its subject.
        let excess_history = self.history_len().saturating_sub(config.history_limit);
        if excess_history > 0 {
            let oldest = self.rows.oldest_history(excess_history)?;
            report.dropped_history = oldest.len();
            self.remove(&oldest)?;
        }
        Ok(report)
    }

    /// Merges subjects, least recently touched first, until `max_valid` is met.
    fn merge_subjects(
        &mut self,
        max_valid: usize,
        report: &mut CompactionReport,
    ) -> DbResult<(), R::Error> {
        let protected = self.state.newest_input_batch;
        let mut groups: IndexMap<String, Vec<i64>> = IndexMap::new();
        for (seq, subject, batch) in self.rows.valid_subjects()? {
            if batch != protected {
                groups.entry(subject).or_default().push(seq);
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
    ) -> DbResult<(), R::Error> {
        let excess = self.valid().saturating_sub(max_valid);
        if excess == 0 {
            return Ok(());
        }
        let mut candidates: Vec<((f64, Timestamp, i64), FactId)> = self
            .rows
            .valid_ranks()?
            .into_iter()
            .map(|(seq, id, confidence, from)| {
                let rank = if by_confidence { confidence } else { 0.0 };
                ((rank, from, seq), id)
            })
            .collect();
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
    pub fn reindex(&mut self, tag: &str) -> DbResult<(), R::Error> {
        self.dirty = true;
        // The valid facts stay valid: unlink and index them again, in their key order.
        let seqs = self.rows.valid_in_key_order()?;
        for &seq in &seqs {
            self.unlink(seq)?;
        }
        for &seq in &seqs {
            let Some((fact, _)) = self.fact(seq)? else {
                continue;
            };
            let link = self.link_for(&fact)?;
            self.rows.relink(seq, &link)?;
            self.index(seq, &fact, &link);
        }
        self.rows.set_analyzer(tag)
    }
}

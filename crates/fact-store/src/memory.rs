//! [`InMemorySessionFactStore`]: the session-scoped store, every version in a compact,
//! private representation (issue 12: about 240 bytes of heap per stored fact, indexes
//! included, where a `SessionFact` per version plus map-of-vector indexes took 750 to
//! 970).
//!
//! No `SessionFact` is kept. A version is an 80-byte record in a chunked array, by record
//! number (insertion order); its texts are `u32` symbols of one per-store arena, where
//! subjects, relations, task ids and short objects are interned (a repeated path costs 4
//! bytes) and sentences are appended. A fact id's versions, a subject's history and a
//! key's valid facts are chains of record numbers inside the records; small
//! open-addressing tables (8 bytes an entry) find the head of each chain, the symbol of a
//! text, the valid fact of a statement. The term index keeps 4-byte postings keyed by
//! record number and re-analyzes a fact's text when it leaves the index. A `SessionFact`
//! is built (through the `SessionFact` builder, so through its one validation path) only
//! when one is returned.
//!
//! The layout is documented where it lives:
//!
//! - `memory/state.rs`: `State`, the indexes and the primitives over them;
//! - `memory/records.rs`: the record and its chunked array;
//! - `memory/symbols.rs`: the arena and its interner;
//! - `memory/table.rs`: the hash table and the seeded hashes;
//! - `memory/terms.rs`: the inverted index;
//! - `memory/ops.rs`: the operations (the temporal rule, import, compaction, search);
//! - `memory/vectors.rs`: the embeddings ([`FactVectors`]).
//!
//! Hash tables store record numbers or symbols, and every lookup compares the real key, so
//! a hash collision costs a comparison, never a wrong answer.

mod ops;
mod records;
mod state;
mod symbols;
pub(crate) mod table;
mod terms;
mod vectors;
mod view;

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use fact_model::{
    Clock, FactId, FactSelector, FactUpdate, Filter, SessionFact, SystemClock, Tag, Timestamp,
};

use self::state::State;
use crate::{
    AddReport, Analyzer, CompactionReport, EdgeQuery, FactVectors, ImportReport, SNAPSHOT_VERSION,
    ScoredFact, SessionFactStore, Snapshot, SnapshotRecord, Step, StepReport, StoreConfig,
    StoreError, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
};

/// An in-memory [`SessionFactStore`], safe to share between threads.
///
/// `add` costs O(batch size) hash operations whatever the store size; `valid_facts`,
/// `valid_at` and `export_snapshot` scan every version; `delete` and compaction are
/// O(store size). Internally a `RwLock`: reads run in parallel, writes one at a time.
///
/// Versions are kept in a compact private form (about 240 bytes each, indexes included,
/// for typical dispatch facts); every `SessionFact` the store returns is built when it is
/// returned, so reading many facts (`valid_facts`, `valid_at`, `export_snapshot`) costs a
/// fact construction each, and holding the result costs what the facts cost.
///
/// # Embeddings
///
/// [`vectors`](SessionFactStore::vectors) gives the store's [`FactVectors`]: embeddings
/// by model, kept under the same lock as the facts (4 bytes a dimension plus 1 bit a
/// dimension of binary code per fact and model), searched exactly up to
/// [`EXACT_SEARCH_LIMIT`](crate::EXACT_SEARCH_LIMIT) vectors and by binary codes and exact
/// re-scoring above. Deleting a fact, and compaction removing the last version of a fact
/// id, removes its embeddings. Snapshots do not carry embeddings: a store imported from
/// one has none, and `unembedded` lists what to embed again.
///
/// # Compaction
///
/// With `auto_compact` on, an `add`, `invalidate` or `import_snapshot` that leaves more
/// than `capacity` valid facts or more than `history_limit` invalidated versions compacts
/// before it returns:
///
/// 1. while more than `capacity` facts are valid, the [`CompactionPolicy`](crate::CompactionPolicy) applies;
/// 2. invalidated versions beyond `history_limit` are dropped, oldest first.
///
/// The newest facts survive verbatim: facts are merged or dropped oldest first (by
/// `valid_from`, then insertion), and the batch of the latest `add` is never merged.
///
/// ```
/// use std::sync::Arc;
/// use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
/// use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
///
/// let config = StoreConfig::default().with_capacity(4);
/// let store = InMemorySessionFactStore::new(config, Arc::new(ManualClock::default()));
/// for task in 1..=3 {
///     let at = Timestamp::from_unix_secs(task)?;
///     let fact = |relation: &str, object: &str| {
///         SessionFact::builder(format!("task:{task}"), relation, object)
///             .tag(Tag::Decision)
///             .source(task.to_string(), SourceRole::Implementer)
///             .valid_from(at)
///             .build()
///     };
///     store.add(vec![fact("completed_with", "completed")?, fact("summary", "did things")?])?;
/// }
/// // Six facts over a capacity of four: task 1's two facts became one summary, then task
/// // 2's did too.
/// assert_eq!(store.valid_count()?, 4);
/// let summary = &store.history("task:1")?[0];
/// assert_eq!(summary.relation(), "compacted");
/// assert_eq!(summary.object(), "completed_with completed; summary did things");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InMemorySessionFactStore {
    config: StoreConfig,
    analyzer: Analyzer,
    clock: Arc<dyn Clock>,
    state: RwLock<State>,
}

impl Default for InMemorySessionFactStore {
    /// The default configuration and the system clock.
    fn default() -> Self {
        InMemorySessionFactStore::new(StoreConfig::default(), Arc::new(SystemClock))
    }
}

impl fmt::Debug for InMemorySessionFactStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        f.debug_struct("InMemorySessionFactStore")
            .field("config", &self.config)
            .field("valid", &state.valid)
            .field("versions", &state.live_count())
            .field("last_batch", &state.last_batch)
            .finish_non_exhaustive()
    }
}

impl InMemorySessionFactStore {
    /// The newest batch stored: an import's batches count from it.
    pub(crate) fn last_batch(&self) -> u64 {
        self.read().last_batch
    }

    /// Imports `records` (each with the index its diagnostics name), their batches
    /// counted from `base`, then compacts when the configuration says so.
    pub(crate) fn import_records(
        &self,
        records: impl IntoIterator<Item = (usize, SnapshotRecord)>,
        base: u64,
    ) -> ImportReport {
        let mut state = self.write();
        let mut report = state.import(records, base);
        state.newest_input_batch = state.last_batch;
        if let Some(compaction) = self.compact_if_needed(&mut state) {
            report.invalidated.extend(compaction.dropped_valid);
        }
        state.maintain();
        report
    }

    /// An empty store; `clock` dates explicit invalidations.
    #[must_use]
    pub fn new(config: StoreConfig, clock: Arc<dyn Clock>) -> Self {
        let state = State::new(Analyzer::new(config.analyzer));
        InMemorySessionFactStore {
            analyzer: state.analyzer.clone(),
            config,
            clock,
            state: RwLock::new(state),
        }
    }

    /// The configuration the store was built with.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// A store holding the versions of a JSON snapshot, with the diagnostics of the
    /// records it skipped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fact_model::SystemClock;
    /// use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
    ///
    /// let json = r#"{"version": 1, "records": []}"#;
    /// let (store, report) =
    ///     InMemorySessionFactStore::from_snapshot_json(json, StoreConfig::default(), Arc::new(SystemClock))?;
    /// assert_eq!((store.valid_count()?, report.imported), (0, 0));
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`SessionFactStore::import_snapshot`].
    pub fn from_snapshot_json(
        json: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<(Self, ImportReport)> {
        let store = InMemorySessionFactStore::new(config, clock);
        let report = store.import_snapshot(json)?;
        Ok((store, report))
    }

    /// Whether a transaction with this key digest was applied.
    pub(crate) fn applied(&self, key: &[u8; 16]) -> bool {
        self.read().applied.contains(key)
    }

    /// The valid facts about `subject`, newest first, at most `limit`.
    pub(crate) fn valid_about(&self, subject: &str, limit: usize) -> Vec<SessionFact> {
        let state = self.read();
        state
            .valid_about(subject, limit)
            .into_iter()
            .filter_map(|rid| state.fact(rid))
            .collect()
    }

    /// The distinct relations of the valid facts about `subject`, at most `limit`.
    pub(crate) fn relations_of(&self, subject: &str, limit: usize) -> Vec<String> {
        self.read().relations_of(subject, limit)
    }

    /// The ids of the facts with a version from `source`, in first-stored order.
    pub(crate) fn ids_from_source(&self, source: &str) -> Vec<FactId> {
        let state = self.read();
        let Some(task) = state.symbols.lookup(source) else {
            return Vec::new();
        };
        let mut ids: Vec<FactId> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (_, r) in state.live() {
            if r.task == task && seen.insert(r.id) {
                ids.push(r.id);
            }
        }
        ids
    }

    // A panic while holding the lock cannot leave `State` half-updated in a way that
    // breaks memory safety, and no code here panics; recover the guard rather than
    // propagate poison to every later caller.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Erases everything the store holds (`LongTermStore::erase`): its state is replaced
    /// by a new one, so no map of it keeps an entry. What it held, in the report's fact
    /// parts.
    pub(crate) fn erase(&self) -> crate::EraseReport {
        let fresh = State::new(self.analyzer.clone());
        let erased = std::mem::replace(&mut *self.write(), fresh);
        let (embeddings, token_vectors) = erased.vectors.counts();
        crate::EraseReport {
            versions: erased.live_count(),
            embeddings,
            token_vectors,
            keys: erased.applied.len(),
            ..crate::EraseReport::default()
        }
    }

    /// Ends the validity of the valid facts `selector` picks, now; the one path of every
    /// explicit invalidation. A key selector reads the key's chain; a selector without a
    /// subject scans the valid facts.
    fn invalidate_selected(&self, selector: &FactSelector) -> Vec<FactId> {
        let now = self.clock.now();
        let mut state = self.write();
        let ended = state.invalidate_selected(selector, now);
        // Invalidation grows history, which has a limit too.
        self.compact_if_needed(&mut state);
        state.maintain();
        ended
    }

    fn compact_if_needed(&self, state: &mut State) -> Option<CompactionReport> {
        let over =
            state.valid > self.config.capacity || state.history_len() > self.config.history_limit;
        (self.config.auto_compact && over)
            .then(|| state.compact(self.config.capacity, &self.config))
    }
}

impl SessionFactStore for InMemorySessionFactStore {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        let mut state = self.write();
        let mut report = state.add_batch(batch);
        state.newest_input_batch = state.last_batch;
        report.compaction = self.compact_if_needed(&mut state);
        state.maintain();
        Ok(report)
    }

    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        Ok(self.invalidate_selected(selector))
    }

    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        let now = self.clock.now();
        let mut state = self.write();
        let key = transaction.key_digest();
        if let Some(key) = key {
            if state.applied.contains(&key) {
                return Ok(TransactionReport::of_replay());
            }
            state.applied.insert(key);
        }
        let mut report = TransactionReport::default();
        let mut added = false;
        for step in transaction.steps {
            report.steps.push(match step {
                Step::Add(batch) => {
                    added = true;
                    StepReport::Added(state.add_batch(batch))
                }
                Step::EndMatching(selector) => StepReport::Ended {
                    ids: state.invalidate_selected(&selector, now),
                },
                Step::End { id, at, by } => state.end_one(id, at, by),
                Step::Delete(id) => {
                    let rids = state.versions_of(id);
                    state.remove(&rids);
                    StepReport::Deleted {
                        id,
                        versions: rids.len(),
                    }
                }
            });
        }
        if added {
            state.newest_input_batch = state.last_batch;
        }
        report.compaction = self.compact_if_needed(&mut state);
        state.maintain();
        Ok(report)
    }

    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        Ok(self.read().facts_where(|r| r.is_valid()))
    }

    fn valid_facts_by_tags(&self, tags: &[Tag]) -> StoreResult<Vec<SessionFact>> {
        Ok(self
            .read()
            .facts_where(|r| r.is_valid() && r.has_any_tag(tags)))
    }

    fn select(&self, filter: &Filter, as_of: Option<Timestamp>) -> StoreResult<Vec<SessionFact>> {
        let state = self.read();
        Ok(match as_of {
            Some(at) => state.select(filter, |r| r.is_valid_at(at)),
            None => state.select(filter, |r| r.is_valid()),
        })
    }

    fn touching(&self, query: &EdgeQuery<'_>) -> StoreResult<Vec<SessionFact>> {
        let state = self.read();
        Ok(match query.as_of {
            Some(at) => state.touching(query, |r| r.is_valid_at(at)),
            None => state.touching(query, |r| r.is_valid()),
        })
    }

    fn valid_count(&self) -> StoreResult<usize> {
        Ok(self.read().valid)
    }

    fn stored_count(&self) -> StoreResult<usize> {
        Ok(self.read().live_count())
    }

    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        let mut state = self.write();
        let report = state.compact(max_valid, &self.config);
        state.maintain();
        Ok(report)
    }

    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        let state = self.read();
        Ok(state.latest_version(id).and_then(|rid| state.fact(rid)))
    }

    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.write().update(id, update)
    }

    fn delete(&self, id: FactId) -> StoreResult<usize> {
        let mut state = self.write();
        let rids = state.versions_of(id);
        if rids.is_empty() {
            return Err(StoreError::NotFound { id });
        }
        state.remove(&rids);
        state.maintain();
        Ok(rids.len())
    }

    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        let state = self.read();
        Ok(state
            .history(subject)
            .into_iter()
            .filter_map(|rid| state.fact(rid))
            .collect())
    }

    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        Ok(self.read().facts_where(|r| r.is_valid_at(at)))
    }

    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        let state = self.read();
        Ok(Snapshot {
            version: SNAPSHOT_VERSION,
            records: state
                .live()
                .filter_map(|(rid, r)| {
                    Some(SnapshotRecord {
                        batch: state.batch_of(rid),
                        fact: state.fact_at(rid, r)?,
                    })
                })
                .collect(),
        })
    }

    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        snapshot.check_version()?;
        let base = self.read().last_batch;
        Ok(self.import_records(snapshot.records.into_iter().enumerate(), base))
    }

    fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        Ok(self.read().search(query, weighting))
    }

    fn vectors(&self) -> Option<&dyn FactVectors> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;

//! [`InMemorySessionFactStore`]: the session-scoped store, an `IndexMap` of versions plus
//! indexes.
//!
//! Every version ever added lives in `records`, keyed by a private, increasing sequence
//! number, so iteration order is insertion order (oldest first). Three hash indexes keep
//! `add` independent of the store size:
//!
//! - `versions`: fact id → its versions (only the last one can be valid);
//! - `by_subject`: subject hash → every version about that subject (for `history`);
//! - `valid_by_key`: `(subject, relation)` hash → the valid versions with that key (for
//!   invalidation), and `statements`: folded statement hash → valid versions (for dedup).
//!
//! Hash-keyed indexes store sequence numbers, and every lookup compares the real strings,
//! so a hash collision costs a comparison, never a wrong answer.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use fact_model::{
    Clock, FactId, FactSelector, FactUpdate, SessionFact, SystemClock, Tag, Timestamp,
    fold_statement,
};
use indexmap::IndexMap;

use crate::compaction::summarize;
use crate::index::{TermIndex, TopK, scan_scores};
use crate::{
    AddReport, Analyzer, AnalyzerConfig, CompactionReport, ImportDiagnostic, ImportReport,
    SNAPSHOT_VERSION, ScoredFact, SessionFactStore, SkipReason, Skipped, Snapshot, SnapshotRecord,
    StoreError, StoreResult, TermQuery, TermWeighting,
};

/// The relation of the summary fact that [`CompactionPolicy::MergeBySubject`] writes.
pub const COMPACTED_RELATION: &str = "compacted";

/// How a store over capacity chooses what to give up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionPolicy {
    /// Seed 000, requirement 2.3: merge the valid facts of the least recently touched
    /// subjects into one summary fact per subject (the newest batch is never merged); only
    /// when nothing is left to merge, drop the oldest valid facts.
    ///
    /// A summary keeps the subject, has the relation `compacted`, and as object the merged
    /// `relation object` pairs, oldest first, joined by `; ` and clipped to 200 characters.
    /// It takes the first three distinct tags, the newest `valid_from` and source, and the
    /// lowest confidence of the facts it replaces; those facts are removed.
    #[default]
    MergeBySubject,
    /// Seed 002: drop the lowest-confidence valid facts first (the oldest among equals).
    LowestConfidenceFirst,
}

/// How an [`InMemorySessionFactStore`] bounds itself.
///
/// ```
/// use fact_store::{CompactionPolicy, StoreConfig};
///
/// let config = StoreConfig { capacity: 1_000, ..StoreConfig::default() };
/// assert_eq!(config.history_limit, 500);
/// assert_eq!(config.policy, CompactionPolicy::MergeBySubject);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// The most valid facts the store keeps when compacting automatically (default 500).
    pub capacity: usize,
    /// The most invalidated versions kept as history (default 500); compaction drops the
    /// oldest beyond it.
    pub history_limit: usize,
    /// What compaction gives up first.
    pub policy: CompactionPolicy,
    /// Whether `add`, `invalidate` and `import_snapshot` compact when the store goes over
    /// `capacity` or `history_limit` (default true). Without it, only `compact` calls do.
    pub auto_compact: bool,
    /// How the term index analyzes fact text (and queries must be analyzed).
    pub analyzer: AnalyzerConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            capacity: 500,
            history_limit: 500,
            policy: CompactionPolicy::MergeBySubject,
            auto_compact: true,
            analyzer: AnalyzerConfig::default(),
        }
    }
}

/// An in-memory [`SessionFactStore`], safe to share between threads.
///
/// `add` costs O(batch size) hash operations whatever the store size; `valid_facts`,
/// `valid_at` and `export_snapshot` scan every version; `delete` and compaction are
/// O(store size). Internally a `RwLock`: reads run in parallel, writes one at a time.
///
/// # Compaction
///
/// With `auto_compact` on, an `add`, `invalidate` or `import_snapshot` that leaves more
/// than `capacity` valid facts or more than `history_limit` invalidated versions compacts
/// before it returns:
///
/// 1. while more than `capacity` facts are valid, the [`CompactionPolicy`] applies;
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
/// let config = StoreConfig { capacity: 4, ..StoreConfig::default() };
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
/// assert_eq!(store.valid_count(), 4);
/// let summary = &store.history("task:1")[0];
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
            .field("versions", &state.records.len())
            .field("last_batch", &state.last_batch)
            .finish_non_exhaustive()
    }
}

impl InMemorySessionFactStore {
    /// An empty store; `clock` dates explicit invalidations.
    #[must_use]
    pub fn new(config: StoreConfig, clock: Arc<dyn Clock>) -> Self {
        let state = State {
            analyzer: Analyzer::new(config.analyzer),
            ..State::default()
        };
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
    /// assert_eq!((store.valid_count(), report.imported), (0, 0));
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

    // A panic while holding the lock cannot leave `State` half-updated in a way that
    // breaks memory safety, and no code here panics; recover the guard rather than
    // propagate poison to every later caller.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the validity of the valid facts `selector` picks, now; the one path of every
    /// explicit invalidation. A key selector reads the key index; a selector without a
    /// subject scans the valid facts.
    fn invalidate_selected(&self, selector: &FactSelector) -> Vec<FactId> {
        let now = self.clock.now();
        let mut state = self.write();
        let candidates: Vec<u64> = match &selector.subject {
            Some(subject) => state.valid_seqs_for_key(subject, &selector.relation),
            None => state
                .records
                .iter()
                .filter(|(_, record)| record.fact.is_valid())
                .map(|(seq, _)| *seq)
                .collect(),
        };
        let picked: Vec<u64> = candidates
            .into_iter()
            .filter(|seq| {
                state
                    .records
                    .get(seq)
                    .is_some_and(|r| selector.matches(&r.fact))
            })
            .collect();
        let ended = picked
            .into_iter()
            .filter_map(|seq| state.end_validity(seq, now, None))
            .collect();
        // Invalidation grows history, which has a limit too.
        self.compact_if_needed(&mut state);
        state.maintain_index();
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
        state.maintain_index();
        Ok(report)
    }

    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        Ok(self.invalidate_selected(selector))
    }

    fn valid_facts(&self) -> Vec<SessionFact> {
        self.read().facts_where(SessionFact::is_valid)
    }

    fn valid_facts_by_tags(&self, tags: &[Tag]) -> Vec<SessionFact> {
        self.read()
            .facts_where(|fact| fact.is_valid() && fact.tags().contains_any(tags))
    }

    fn valid_count(&self) -> usize {
        self.read().valid
    }

    fn stored_count(&self) -> usize {
        self.read().records.len()
    }

    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        let mut state = self.write();
        let report = state.compact(max_valid, &self.config);
        state.maintain_index();
        Ok(report)
    }

    fn get(&self, id: FactId) -> Option<SessionFact> {
        let state = self.read();
        let seq = state.latest_version(id)?;
        state.records.get(&seq).map(|record| record.fact.clone())
    }

    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.write().update(id, update)
    }

    fn delete(&self, id: FactId) -> StoreResult<usize> {
        let mut state = self.write();
        let seqs: IntSet<u64> = state
            .versions
            .get(&id)
            .map(|seqs| seqs.iter().copied().collect())
            .unwrap_or_default();
        if seqs.is_empty() {
            return Err(StoreError::NotFound { id });
        }
        state.remove(&seqs);
        state.maintain_index();
        Ok(seqs.len())
    }

    fn history(&self, subject: &str) -> Vec<SessionFact> {
        let state = self.read();
        let key = state.hasher.hash_one(subject);
        state
            .by_subject
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(|seq| state.records.get(seq))
            .filter(|record| record.fact.subject() == subject)
            .map(|record| record.fact.clone())
            .collect()
    }

    fn valid_at(&self, at: Timestamp) -> Vec<SessionFact> {
        self.read().facts_where(|fact| fact.is_valid_at(at))
    }

    fn export_snapshot(&self) -> Snapshot {
        let state = self.read();
        Snapshot {
            version: SNAPSHOT_VERSION,
            records: state
                .records
                .values()
                .map(|record| SnapshotRecord {
                    batch: record.batch,
                    fact: record.fact.clone(),
                })
                .collect(),
        }
    }

    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        snapshot.check_version()?;
        let mut state = self.write();
        let mut report = state.import(snapshot.records);
        state.newest_input_batch = state.last_batch;
        if let Some(compaction) = self.compact_if_needed(&mut state) {
            report.invalidated.extend(compaction.dropped_valid);
        }
        state.maintain_index();
        Ok(report)
    }

    fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    fn search(&self, query: &TermQuery<'_>, weighting: &dyn TermWeighting) -> Vec<ScoredFact> {
        self.read().search(query, weighting)
    }
}

/// Hashes integer keys (sequence numbers, fact ids, string hashes) with one multiply per
/// word, FxHash style. Every key it sees is either internal (sequence numbers) or already a
/// uniform hash (fact ids, and string hashes from the keyed `RandomState`), so SipHash's
/// protection against chosen keys would buy nothing here and cost a third of `add`.
#[derive(Debug, Default, Clone, Copy)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;
type IntSet<K> = HashSet<K, BuildHasherDefault<IntHasher>>;

/// One version of a fact.
#[derive(Debug)]
struct Record {
    fact: SessionFact,
    /// The batch that added it or last refreshed it.
    batch: u64,
    /// Its slot in the term index, while it is valid.
    slot: Option<u32>,
}

#[derive(Debug, Default)]
struct State {
    next_seq: u64,
    last_batch: u64,
    /// The batch of the latest `add` (summaries written by compaction do not count), which
    /// compaction never merges.
    newest_input_batch: u64,
    records: IndexMap<u64, Record, BuildHasherDefault<IntHasher>>,
    valid: usize,
    versions: IntMap<FactId, Vec<u64>>,
    by_subject: IntMap<u64, Vec<u64>>,
    valid_by_key: IntMap<u64, Vec<u64>>,
    statements: IntMap<u64, Vec<u64>>,
    hasher: RandomState,
    analyzer: Analyzer,
    index: TermIndex,
}

fn link(index: &mut IntMap<u64, Vec<u64>>, key: u64, seq: u64) {
    index.entry(key).or_default().push(seq);
}

fn unlink(index: &mut IntMap<u64, Vec<u64>>, key: u64, seq: u64) {
    if let Some(seqs) = index.get_mut(&key) {
        seqs.retain(|s| *s != seq);
        if seqs.is_empty() {
            index.remove(&key);
        }
    }
}

impl State {
    fn history_len(&self) -> usize {
        self.records.len().saturating_sub(self.valid)
    }

    fn key_hash(&self, subject: &str, relation: &str) -> u64 {
        self.hasher.hash_one((subject, relation))
    }

    fn facts_where(&self, keep: impl Fn(&SessionFact) -> bool) -> Vec<SessionFact> {
        self.records
            .values()
            .filter(|record| keep(&record.fact))
            .map(|record| record.fact.clone())
            .collect()
    }

    /// The latest version of `id`: its valid version if it has one, else the newest. (An
    /// ended version imported while the id is valid is newer, but only history.)
    fn latest_version(&self, id: FactId) -> Option<u64> {
        self.valid_version(id)
            .or_else(|| self.versions.get(&id)?.last().copied())
    }

    /// The valid version of `id`, if any (at most one version of an id is valid).
    fn valid_version(&self, id: FactId) -> Option<u64> {
        self.versions.get(&id)?.iter().rev().copied().find(|seq| {
            self.records
                .get(seq)
                .is_some_and(|record| record.fact.is_valid())
        })
    }

    fn valid_seqs_for_key(&self, subject: &str, relation: &str) -> Vec<u64> {
        let key = self.key_hash(subject, relation);
        self.valid_by_key
            .get(&key)
            .into_iter()
            .flatten()
            .copied()
            .filter(|seq| {
                self.records.get(seq).is_some_and(|record| {
                    record.fact.subject() == subject && record.fact.relation() == relation
                })
            })
            .collect()
    }

    /// The valid fact whose folded statement is `folded`, other than `except`.
    fn find_statement(&self, folded: &str, except: Option<FactId>) -> Option<FactId> {
        let key = self.hasher.hash_one(folded);
        self.statements
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(|seq| self.records.get(seq))
            .map(|record| &record.fact)
            .find(|fact| {
                Some(fact.id()) != except
                    && fact
                        .statement()
                        .is_some_and(|s| fold_statement(s) == folded)
            })
            .map(SessionFact::id)
    }

    /// Indexes a valid version; returns its term-index slot.
    fn link_valid(&mut self, seq: u64, fact: &SessionFact) -> u32 {
        let key = self.key_hash(fact.subject(), fact.relation());
        link(&mut self.valid_by_key, key, seq);
        if let Some(statement) = fact.statement() {
            let key = self.hasher.hash_one(fold_statement(statement));
            link(&mut self.statements, key, seq);
        }
        self.valid += 1;
        self.index.insert(seq, fact, &self.analyzer)
    }

    fn unlink_valid(&mut self, seq: u64, fact: &SessionFact, slot: Option<u32>) {
        let key = self.key_hash(fact.subject(), fact.relation());
        unlink(&mut self.valid_by_key, key, seq);
        if let Some(statement) = fact.statement() {
            let key = self.hasher.hash_one(fold_statement(statement));
            unlink(&mut self.statements, key, seq);
        }
        self.valid = self.valid.saturating_sub(1);
        if let Some(slot) = slot {
            self.index.remove(slot);
        }
    }

    /// Rebuilds the term index when dead postings outnumber live ones.
    fn maintain_index(&mut self) {
        if self.index.wants_rebuild() {
            for (seq, slot) in self.index.rebuild() {
                if let Some(record) = self.records.get_mut(&seq) {
                    record.slot = Some(slot);
                }
            }
        }
    }

    /// Stores a new version and indexes it.
    fn insert(&mut self, fact: SessionFact, batch: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.versions.entry(fact.id()).or_default().push(seq);
        let subject_key = self.hasher.hash_one(fact.subject());
        link(&mut self.by_subject, subject_key, seq);
        let slot = fact.is_valid().then(|| self.link_valid(seq, &fact));
        self.records.insert(seq, Record { fact, batch, slot });
    }

    /// Ends the validity of a valid version at `at`, or at its `valid_from` if `at` is
    /// earlier (input out of time order), so `valid_to` is never before `valid_from`;
    /// `by` is the fact that superseded it, if one did.
    fn end_validity(&mut self, seq: u64, at: Timestamp, by: Option<FactId>) -> Option<FactId> {
        let record = self.records.get(&seq)?;
        let (fact, slot) = (record.fact.clone(), record.slot);
        let at = at.max(fact.valid_from());
        let ended = match by {
            Some(by) => fact.superseded_at(at, by),
            None => fact.invalidated_at(at),
        }
        .ok()?;
        self.unlink_valid(seq, &fact, slot);
        let record = self.records.get_mut(&seq)?;
        record.fact = ended;
        record.slot = None;
        Some(fact.id())
    }

    /// Removes versions and every index entry pointing at them.
    fn remove(&mut self, seqs: &IntSet<u64>) {
        for &seq in seqs {
            let Some(record) = self.records.get(&seq) else {
                continue;
            };
            let (fact, slot) = (record.fact.clone(), record.slot);
            if fact.is_valid() {
                self.unlink_valid(seq, &fact, slot);
            }
            let subject_key = self.hasher.hash_one(fact.subject());
            unlink(&mut self.by_subject, subject_key, seq);
            if let Some(versions) = self.versions.get_mut(&fact.id()) {
                versions.retain(|s| *s != seq);
                if versions.is_empty() {
                    self.versions.remove(&fact.id());
                }
            }
        }
        self.records.retain(|seq, _| !seqs.contains(seq));
    }

    fn add_batch(&mut self, batch: Vec<SessionFact>) -> AddReport {
        self.last_batch += 1;
        let this_batch = self.last_batch;
        let incoming: IntSet<FactId> = batch
            .iter()
            .filter(|fact| fact.is_valid())
            .map(SessionFact::id)
            .collect();
        let mut seen = IntSet::default();
        let mut report = AddReport::default();
        for (index, fact) in batch.into_iter().enumerate() {
            let id = fact.id();
            let skip = |reason| Skipped { index, id, reason };
            if !fact.is_valid() {
                report.skipped.push(skip(SkipReason::ArrivedInvalidated));
                continue;
            }
            if !seen.insert(id) {
                report.skipped.push(skip(SkipReason::DuplicateInBatch));
                continue;
            }
            let refresh = self.valid_version(id);
            if refresh.is_none()
                && let Some(statement) = fact.statement()
                && let Some(existing) = self.find_statement(&fold_statement(statement), None)
            {
                report
                    .skipped
                    .push(skip(SkipReason::DuplicateStatement { existing }));
                continue;
            }
            // The facts of earlier batches with this key, except those this batch re-adds:
            // they are refreshed when their turn comes, whatever the order.
            let earlier: Vec<(u64, FactId, Timestamp)> = self
                .valid_seqs_for_key(fact.subject(), fact.relation())
                .into_iter()
                .filter_map(|seq| {
                    let record = self.records.get(&seq)?;
                    let replaceable =
                        record.batch != this_batch && !incoming.contains(&record.fact.id());
                    replaceable.then(|| (seq, record.fact.id(), record.fact.valid_from()))
                })
                .collect();
            // Out of order: a fact older than the current truth of its key arrives
            // already superseded by the newest of them, and ends nothing.
            if refresh.is_none()
                && let Some(&(_, newest, newest_from)) =
                    earlier.iter().max_by_key(|(seq, _, from)| (*from, *seq))
                && newest_from > fact.valid_from()
            {
                if let Ok(stale) = fact.superseded_at(newest_from, newest) {
                    self.insert(stale, this_batch);
                    report.arrived_superseded.push(id);
                }
                continue;
            }
            for (seq, _, _) in earlier {
                if let Some(ended) = self.end_validity(seq, fact.valid_from(), Some(id)) {
                    report.invalidated.push(ended);
                }
            }
            match refresh.and_then(|seq| self.records.get_mut(&seq)) {
                Some(record) => {
                    record.batch = this_batch;
                    report.refreshed.push(id);
                }
                None => {
                    self.insert(fact, this_batch);
                    report.added.push(id);
                }
            }
        }
        report
    }

    fn import(&mut self, records: Vec<SnapshotRecord>) -> ImportReport {
        let base = self.last_batch;
        let mut report = ImportReport::default();
        for (index, record) in records.into_iter().enumerate() {
            let mut skip =
                |message: String| report.skipped.push(ImportDiagnostic { index, message });
            let batch = base.saturating_add(record.batch);
            self.last_batch = self.last_batch.max(batch);
            let fact = record.fact;
            if !fact.is_valid() {
                self.insert(fact, batch);
                report.imported += 1;
                continue;
            }
            if self.valid_version(fact.id()).is_some() {
                skip(format!("fact {} is already valid in the store", fact.id()));
                continue;
            }
            if let Some(statement) = fact.statement()
                && let Some(existing) = self.find_statement(&fold_statement(statement), None)
            {
                skip(format!(
                    "fact {} repeats the statement of valid fact {existing}",
                    fact.id()
                ));
                continue;
            }
            // The latest batch wins a key, as in `add`.
            let mut superseded = None;
            for seq in self.valid_seqs_for_key(fact.subject(), fact.relation()) {
                let Some(existing) = self.records.get(&seq) else {
                    continue;
                };
                if existing.batch < batch {
                    let ended = self.end_validity(seq, fact.valid_from(), Some(fact.id()));
                    report.invalidated.extend(ended);
                } else if existing.batch > batch {
                    superseded = Some((existing.fact.valid_from(), existing.fact.id()));
                }
            }
            let fact = match superseded {
                Some((at, by)) => match fact.superseded_at(at.max(fact.valid_from()), by) {
                    Ok(ended) => ended,
                    Err(e) => {
                        skip(format!("fact {} cannot be ordered: {e}", fact.id()));
                        continue;
                    }
                },
                None => fact,
            };
            self.insert(fact, batch);
            report.imported += 1;
        }
        report
    }

    fn search(&self, query: &TermQuery<'_>, weighting: &dyn TermWeighting) -> Vec<ScoredFact> {
        if query.limit == 0 {
            return Vec::new();
        }
        let tags_match =
            |tags: &fact_model::Tags| query.tags.is_none_or(|wanted| tags.contains_any(wanted));
        let excluded =
            |fact: &SessionFact| query.exclude_source_task == Some(fact.source_task_id());
        let mut top = TopK::new(query.limit);
        match query.as_of {
            None => {
                for (slot, score) in self.index.score(query.text, &self.analyzer, weighting) {
                    // Most candidates lose on score alone, without touching their slot.
                    if !top.may_admit(score) {
                        continue;
                    }
                    let Some(entry) = self.index.entry(slot) else {
                        continue;
                    };
                    if !tags_match(&entry.tags) || !top.admits(score, entry.valid_from, entry.id) {
                        continue;
                    }
                    // Only facts that would enter the top k are looked up.
                    if let Some(record) = self.records.get(&entry.seq)
                        && !excluded(&record.fact)
                    {
                        top.push(score, entry.valid_from, entry.id, entry.seq);
                    }
                }
            }
            Some(at) => {
                let facts = self.records.iter().filter(|(_, r)| r.fact.is_valid_at(at));
                let seqs: IntMap<FactId, u64> =
                    facts.clone().map(|(seq, r)| (r.fact.id(), *seq)).collect();
                let facts = facts.map(|(_, r)| &r.fact);
                for (fact, score) in scan_scores(&self.analyzer, facts, query.text, weighting) {
                    if tags_match(fact.tags())
                        && !excluded(fact)
                        && let Some(seq) = seqs.get(&fact.id())
                    {
                        top.push(score, fact.valid_from(), fact.id(), *seq);
                    }
                }
            }
        }
        top.into_sorted()
            .into_iter()
            .filter_map(|(score, seq)| {
                let fact = self.records.get(&seq)?.fact.clone();
                Some(ScoredFact { fact, score })
            })
            .collect()
    }

    fn update(&mut self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        let seq = self.latest_version(id).ok_or(StoreError::NotFound { id })?;
        let old = self
            .records
            .get(&seq)
            .map(|record| record.fact.clone())
            .ok_or(StoreError::NotFound { id })?;
        let new = old
            .updated(update)
            .map_err(|source| StoreError::InvalidUpdate { id, source })?;
        if old.is_valid()
            && let Some(statement) = new.statement()
            && let Some(existing) = self.find_statement(&fold_statement(statement), Some(id))
        {
            return Err(StoreError::DuplicateStatement { id, existing });
        }
        let mut slot = None;
        if old.is_valid() {
            let old_slot = self.records.get(&seq).and_then(|record| record.slot);
            self.unlink_valid(seq, &old, old_slot);
            slot = Some(self.link_valid(seq, &new));
        }
        if let Some(record) = self.records.get_mut(&seq) {
            record.fact = new.clone();
            record.slot = slot;
        }
        Ok(new)
    }

    fn compact(&mut self, max_valid: usize, config: &StoreConfig) -> CompactionReport {
        let mut report = CompactionReport::default();
        if self.valid > max_valid {
            match config.policy {
                CompactionPolicy::MergeBySubject => {
                    self.merge_subjects(max_valid, &mut report);
                    self.drop_valid(
                        max_valid,
                        |fact, seq| (0.0, fact.valid_from(), seq),
                        &mut report,
                    );
                }
                CompactionPolicy::LowestConfidenceFirst => {
                    self.drop_valid(
                        max_valid,
                        |fact, seq| (fact.confidence(), fact.valid_from(), seq),
                        &mut report,
                    );
                }
            }
        }
        // Last, because a summary may invalidate an older summary of its subject.
        let excess_history = self.history_len().saturating_sub(config.history_limit);
        if excess_history > 0 {
            let oldest: IntSet<u64> = self
                .records
                .iter()
                .filter(|(_, record)| !record.fact.is_valid())
                .map(|(seq, _)| *seq)
                .take(excess_history)
                .collect();
            report.dropped_history = oldest.len();
            self.remove(&oldest);
        }
        report
    }

    /// Merges subjects, least recently touched first, until `max_valid` is met.
    fn merge_subjects(&mut self, max_valid: usize, report: &mut CompactionReport) {
        let protected = self.newest_input_batch;
        let mut groups: IndexMap<&str, Vec<u64>> = IndexMap::new();
        for (seq, record) in &self.records {
            if record.fact.is_valid() && record.batch != protected {
                groups.entry(record.fact.subject()).or_default().push(*seq);
            }
        }
        let mut groups: Vec<Vec<u64>> =
            groups.into_values().filter(|seqs| seqs.len() > 1).collect();
        groups.sort_by_key(|seqs| seqs.last().copied());
        for seqs in groups {
            if self.valid <= max_valid {
                break;
            }
            let facts: Vec<&SessionFact> = seqs
                .iter()
                .filter_map(|seq| self.records.get(seq))
                .map(|record| &record.fact)
                .collect();
            let Some(summary) = summarize(&facts) else {
                continue;
            };
            report.merged += seqs.len();
            self.remove(&seqs.into_iter().collect());
            report.summaries.push(summary.id());
            self.add_batch(vec![summary]);
        }
    }

    /// Drops valid facts in ascending `order` (a rank, then age) until `max_valid` is met.
    fn drop_valid(
        &mut self,
        max_valid: usize,
        order: impl Fn(&SessionFact, u64) -> (f64, Timestamp, u64),
        report: &mut CompactionReport,
    ) {
        let excess = self.valid.saturating_sub(max_valid);
        if excess == 0 {
            return;
        }
        let mut candidates: Vec<((f64, Timestamp, u64), FactId)> = self
            .records
            .iter()
            .filter(|(_, record)| record.fact.is_valid())
            .map(|(seq, record)| (order(&record.fact, *seq), record.fact.id()))
            .collect();
        candidates.sort_by(|(a, _), (b, _)| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        candidates.truncate(excess);
        let seqs = candidates.iter().map(|((_, _, seq), _)| *seq).collect();
        self.remove(&seqs);
        report
            .dropped_valid
            .extend(candidates.into_iter().map(|(_, id)| id));
    }
}

#[cfg(test)]
mod tests;

//! The conformance suite against `SqliteFactStore` with its defaults (search cache on),
//! each store on a fresh temporary file; `only` holds the tests of what only a durable
//! store has (reopening, scopes, files, episodes, several connections, migrations).

use std::sync::Arc;

use fact_model::{Clock, FactId, FactSelector, FactUpdate, SessionFact, Timestamp};
use fact_store::conformance::Fixture;
use fact_store::{
    AddReport, Alias, Analyzer, CompactionReport, Episode, EpisodeStore, EraseReport,
    ExportOptions, ExportRecord, ExportSource, FactVectors, ImportReport, LongTermStore,
    MemoryImportReport, MemoryReport, MemoryWrite, MessageHit, MessageQuery, ProfileEntry,
    ScoredFact, SessionFactStore, Snapshot, StoreConfig, StoreResult, TermQuery, TermWeighting,
    Transaction, TransactionReport,
};
use fact_store_sqlite::{SqliteFactStore, SqliteOptions};

pub(crate) use crate::{fact, t};

mod only;

/// A store on a file in a temporary directory, which is removed with the store; it
/// forwards every trait of the store (`SessionFactStore`, `EpisodeStore`,
/// `LongTermStore`), so it stands for it in every conformance test.
#[derive(Debug)]
pub(crate) struct OnDisk {
    // Dropped first: the connection closes before the directory goes.
    pub(crate) store: SqliteFactStore,
    _dir: tempfile::TempDir,
}

impl OnDisk {
    pub(crate) fn open(
        config: StoreConfig,
        options: SqliteOptions,
        clock: Arc<dyn Clock>,
    ) -> OnDisk {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteFactStore::open_with(
            dir.path().join("facts.db"),
            "spec:test",
            config,
            options,
            clock,
        )
        .unwrap();
        OnDisk { store, _dir: dir }
    }
}

impl SessionFactStore for OnDisk {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        self.store.add(batch)
    }
    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        self.store.apply(transaction)
    }
    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        self.store.invalidate_matching(selector)
    }
    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        self.store.compact(max_valid)
    }
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.store.update(id, update)
    }
    fn delete(&self, id: FactId) -> StoreResult<usize> {
        self.store.delete(id)
    }
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        self.store.import(snapshot)
    }
    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        self.store.valid_facts()
    }
    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        self.store.valid_at(at)
    }
    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        self.store.history(subject)
    }
    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        self.store.get(id)
    }
    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        self.store.export_snapshot()
    }
    fn analyzer(&self) -> &Analyzer {
        self.store.analyzer()
    }
    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        self.store.search(query, weighting)
    }
    fn valid_count(&self) -> StoreResult<usize> {
        self.store.valid_count()
    }
    fn stored_count(&self) -> StoreResult<usize> {
        self.store.stored_count()
    }
    fn vectors(&self) -> Option<&dyn FactVectors> {
        self.store.vectors()
    }
}

impl EpisodeStore for OnDisk {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        self.store.put_episode(episode)
    }
    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.store.episode(id)
    }
    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.store.episodes()
    }
    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        self.store.search_episodes(query, limit)
    }
    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>> {
        self.store.search_messages(query, weighting)
    }
    fn delete_episode(&self, id: &str) -> StoreResult<bool> {
        self.store.delete_episode(id)
    }
    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        self.store.mark_extracted(id, at)
    }
    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        self.store.pending_extraction()
    }
}

impl LongTermStore for OnDisk {
    fn erase(&self) -> StoreResult<EraseReport> {
        self.store.erase()
    }
    fn commit(&self, write: MemoryWrite) -> StoreResult<MemoryReport> {
        self.store.commit(write)
    }
    fn export_to(
        &self,
        options: &ExportOptions,
        sink: &mut dyn FnMut(ExportRecord) -> StoreResult<()>,
    ) -> StoreResult<()> {
        self.store.export_to(options, sink)
    }
    fn import_from(&self, source: &dyn ExportSource) -> StoreResult<MemoryImportReport> {
        self.store.import_from(source)
    }
    fn aliases(&self) -> StoreResult<Vec<Alias>> {
        self.store.aliases()
    }
    fn profile(&self) -> StoreResult<Vec<ProfileEntry>> {
        self.store.profile()
    }
    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>> {
        self.store.profile_history()
    }
    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>> {
        self.store.fact_ids_from_source(source)
    }
}

/// The suite's stores, each an [`OnDisk`] on a fresh file, opened with these options.
pub(crate) struct Sqlite(pub(crate) SqliteOptions);

impl Fixture for Sqlite {
    fn store(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn SessionFactStore>> {
        Some(Arc::new(OnDisk::open(config, self.0.clone(), clock)))
    }

    fn long_term(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn LongTermStore>> {
        Some(Arc::new(OnDisk::open(config, self.0.clone(), clock)))
    }
}

fact_store::conformance_suite!(Sqlite(SqliteOptions::default()));

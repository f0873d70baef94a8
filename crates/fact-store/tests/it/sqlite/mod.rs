//! The conformance suite against `SqliteFactStore` with its defaults (search cache on),
//! each store on a fresh temporary file; `only` holds the tests of what only a durable
//! store has (reopening, scopes, files, episodes, several connections).

use std::sync::Arc;

use fact_model::{Clock, FactId, FactSelector, FactUpdate, ManualClock, SessionFact, Timestamp};
use fact_store::{
    AddReport, Analyzer, CompactionReport, FactVectors, ImportReport, ScoredFact, SessionFactStore,
    Snapshot, SqliteFactStore, SqliteOptions, StoreConfig, StoreResult, TermQuery, TermWeighting,
};

pub(crate) use crate::{fact, memory, store_from, t, valid_lines};

mod only;

/// A store on a file in a temporary directory, which is removed with the store.
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
    fn valid_facts(&self) -> Vec<SessionFact> {
        self.store.valid_facts()
    }
    fn valid_at(&self, at: Timestamp) -> Vec<SessionFact> {
        self.store.valid_at(at)
    }
    fn history(&self, subject: &str) -> Vec<SessionFact> {
        self.store.history(subject)
    }
    fn get(&self, id: FactId) -> Option<SessionFact> {
        self.store.get(id)
    }
    fn export_snapshot(&self) -> Snapshot {
        self.store.export_snapshot()
    }
    fn analyzer(&self) -> &Analyzer {
        self.store.analyzer()
    }
    fn search(&self, query: &TermQuery<'_>, weighting: &dyn TermWeighting) -> Vec<ScoredFact> {
        self.store.search(query, weighting)
    }
    fn valid_count(&self) -> usize {
        self.store.valid_count()
    }
    fn stored_count(&self) -> usize {
        self.store.stored_count()
    }
    fn vectors(&self) -> Option<&dyn FactVectors> {
        self.store.vectors()
    }
}

pub(crate) fn store_with(
    config: StoreConfig,
) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    Some(store_from(|clock| {
        Arc::new(OnDisk::open(config, SqliteOptions::default(), clock))
    }))
}

pub(crate) fn store() -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    store_with(StoreConfig::default())
}

conformance_suite!();

//! The differential property test (the conformance kit's
//! `fact_store::conformance::properties`) on SQLite: a store on a file, two connections
//! whose caches follow each other's writes, and FTS5 search, each against the in-memory
//! store on random operation sequences.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fact_model::{Clock, FactId, FactSelector, FactUpdate, SessionFact, SystemClock, Timestamp};
use fact_store::{
    AddReport, Analyzer, CompactionReport, ImportReport, ScoredFact, SessionFactStore, Snapshot,
    StoreConfig, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
};
use fact_store_sqlite::{SqliteFactStore, SqliteOptions};

use fact_store::conformance::properties::{
    config, differential, op, turns, turns_supersede_in_order,
};
use proptest::prelude::*;

use crate::sqlite::OnDisk;

/// Two stores of one scope on one file (two connections, as two processes would be),
/// both with the search cache: each write goes to the one `route` names next, so each
/// cache follows its own writes and the other's, interleaved at random. Every search
/// asks both, and a store opened after the last write (whose cache is loaded whole):
/// the three must agree.
#[derive(Debug)]
struct Interleaved {
    stores: [SqliteFactStore; 2],
    route: Vec<bool>,
    next: AtomicUsize,
    /// A store opened since the last write, and what opens one.
    fresh: Mutex<Option<SqliteFactStore>>,
    path: PathBuf,
    config: StoreConfig,
    clock: Arc<dyn Clock>,
    _dir: tempfile::TempDir,
}

impl Interleaved {
    fn open(config: StoreConfig, clock: Arc<dyn Clock>, route: Vec<bool>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("facts.db");
        let open = || SqliteFactStore::open(&path, "s", config, clock.clone()).unwrap();
        Interleaved {
            stores: [open(), open()],
            route,
            next: AtomicUsize::new(0),
            fresh: Mutex::new(None),
            path,
            config,
            clock,
            _dir: dir,
        }
    }

    /// The store the next write goes to.
    fn writer(&self) -> &SqliteFactStore {
        *self.fresh.lock().unwrap() = None;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let second = self.route.get(n % self.route.len().max(1)) == Some(&true);
        &self.stores[usize::from(second)]
    }
}

impl SessionFactStore for Interleaved {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        self.writer().add(batch)
    }
    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        self.writer().apply(transaction)
    }
    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        self.writer().invalidate_matching(selector)
    }
    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        self.writer().compact(max_valid)
    }
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.writer().update(id, update)
    }
    fn delete(&self, id: FactId) -> StoreResult<usize> {
        self.writer().delete(id)
    }
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        self.writer().import(snapshot)
    }
    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        self.stores[0].valid_facts()
    }
    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        self.stores[0].valid_at(at)
    }
    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        self.stores[0].history(subject)
    }
    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        self.stores[0].get(id)
    }
    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        self.stores[0].export_snapshot()
    }
    fn analyzer(&self) -> &Analyzer {
        self.stores[0].analyzer()
    }
    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        let mut fresh = self.fresh.lock().unwrap();
        let fresh = fresh.get_or_insert_with(|| {
            SqliteFactStore::open(&self.path, "s", self.config, self.clock.clone()).unwrap()
        });
        let loaded = fresh.search(query, weighting)?;
        for store in &self.stores {
            assert_eq!(
                store.search(query, weighting)?,
                loaded,
                "a cache that followed the writes answers as one loaded after them"
            );
        }
        Ok(loaded)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On a file, with the search cache (the default).
    #[test]
    fn sqlite_file_agrees_with_in_memory(
        config in config(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        differential(config, &ops, &|config, clock| {
            Box::new(OnDisk::open(config, SqliteOptions::default(), clock))
        })?;
    }

    #[test]
    fn turns_of_one_transaction_supersede_in_order_on_sqlite(turns in turns()) {
        let store = OnDisk::open(StoreConfig::default(), SqliteOptions::default(), Arc::new(SystemClock));
        turns_supersede_in_order(&store, &turns)?;
    }

    /// Two connections of one file writing in turns at random, each with its search
    /// cache following the other's writes row by row (or reloading after deletions).
    #[test]
    fn sqlite_caches_of_two_connections_agree_with_a_fresh_load(
        config in config(),
        ops in proptest::collection::vec(op(), 1..40),
        route in proptest::collection::vec(any::<bool>(), 1..8),
    ) {
        differential(config, &ops, &|config, clock| {
            Box::new(Interleaved::open(config, clock, route.clone()))
        })?;
    }

    /// In memory, every search answered by FTS5 and the stored term documents.
    #[test]
    fn sqlite_fts_search_agrees_with_in_memory(
        config in config(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let options = SqliteOptions::default().with_search_cache(false);
        differential(config, &ops, &|config, clock| {
            Box::new(SqliteFactStore::open_with(":memory:", "p", config, options.clone(), clock).unwrap())
        })?;
    }
}

//! A store for tests that need one call of a real store to wait or fail: [`Hooked`] forwards
//! every call to an in-memory store, after asking its hook with the call's name.

use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Timestamp};
use fact_store::{
    AddReport, Analyzer, CompactionReport, ImportReport, InMemorySessionFactStore, ScoredFact,
    SessionFactStore, Snapshot, StoreResult, TermQuery, TermWeighting, Transaction,
    TransactionReport,
};

/// What the hook is asked before each call: the call's name (`"add"`, `"apply"`,
/// `"valid_count"`, … as the trait names them). An error is the call's answer; the store
/// is not called then.
pub(crate) type Hook = Box<dyn Fn(&str) -> StoreResult<()> + Send + Sync>;

/// An in-memory store behind a [`Hook`].
pub(crate) struct Hooked {
    pub(crate) store: InMemorySessionFactStore,
    pub(crate) hook: Hook,
}

impl std::fmt::Debug for Hooked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooked")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl SessionFactStore for Hooked {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        (self.hook)("add")?;
        self.store.add(batch)
    }
    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        (self.hook)("apply")?;
        self.store.apply(transaction)
    }
    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        (self.hook)("invalidate_matching")?;
        self.store.invalidate_matching(selector)
    }
    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        (self.hook)("compact")?;
        self.store.compact(max_valid)
    }
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        (self.hook)("update")?;
        self.store.update(id, update)
    }
    fn delete(&self, id: FactId) -> StoreResult<usize> {
        (self.hook)("delete")?;
        self.store.delete(id)
    }
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        (self.hook)("import")?;
        self.store.import(snapshot)
    }
    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        (self.hook)("valid_facts")?;
        self.store.valid_facts()
    }
    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        (self.hook)("valid_at")?;
        self.store.valid_at(at)
    }
    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        (self.hook)("history")?;
        self.store.history(subject)
    }
    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        (self.hook)("get")?;
        self.store.get(id)
    }
    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        (self.hook)("export_snapshot")?;
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
        (self.hook)("search")?;
        self.store.search(query, weighting)
    }
    fn valid_count(&self) -> StoreResult<usize> {
        (self.hook)("valid_count")?;
        self.store.valid_count()
    }
    fn stored_count(&self) -> StoreResult<usize> {
        (self.hook)("stored_count")?;
        self.store.stored_count()
    }
}

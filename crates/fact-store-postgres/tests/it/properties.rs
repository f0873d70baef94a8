//! The differential property test (the conformance kit's
//! `fact_store::conformance::properties`) on PostgreSQL: a store, a reader whose cache
//! follows another store's writes, and GIN search, each against the in-memory store on
//! random operation sequences (no server outside CI: the tests return at once).

use std::sync::Arc;

use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Timestamp};
use fact_store::{
    AddReport, Analyzer, CompactionReport, ImportReport, ScoredFact, SessionFactStore, Snapshot,
    StoreConfig, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
};
use fact_store_postgres::PgFactStore;

use fact_store::conformance::properties::{
    config, differential, op, turns, turns_supersede_in_order,
};
use proptest::prelude::*;

use crate::postgres::{fresh_scope, open, options, server};

/// Two stores of one scope: every write goes to one, every read to the other, whose
/// search cache follows the writer's commits row by row (or reloads after deletions).
#[derive(Debug)]
struct Split {
    writer: PgFactStore,
    reader: PgFactStore,
}

impl SessionFactStore for Split {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        self.writer.add(batch)
    }
    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        self.writer.apply(transaction)
    }
    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        self.writer.invalidate_matching(selector)
    }
    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        self.writer.compact(max_valid)
    }
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.writer.update(id, update)
    }
    fn delete(&self, id: FactId) -> StoreResult<usize> {
        self.writer.delete(id)
    }
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        self.writer.import(snapshot)
    }
    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        self.reader.valid_facts()
    }
    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        self.reader.valid_at(at)
    }
    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        self.reader.history(subject)
    }
    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        self.reader.get(id)
    }
    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        self.reader.export_snapshot()
    }
    fn analyzer(&self) -> &Analyzer {
        self.reader.analyzer()
    }
    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        self.reader.search(query, weighting)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On the test server, with the search cache (the default).
    #[test]
    fn postgres_agrees_with_in_memory(
        config in config(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let Some(url) = server() else { return Ok(()) };
        differential(config, &ops, &|config, clock| {
            Box::new(open(&url, config, options(), clock))
        })?;
    }

    #[test]
    fn turns_of_one_transaction_supersede_in_order_on_postgres(turns in turns()) {
        let Some(url) = server() else { return Ok(()) };
        let store = open(&url, StoreConfig::default(), options(), Arc::new(fact_model::SystemClock));
        turns_supersede_in_order(&store, &turns)?;
    }

    /// Every search answered by the GIN index and the stored term documents.
    #[test]
    fn postgres_gin_search_agrees_with_in_memory(
        config in config(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let Some(url) = server() else { return Ok(()) };
        let options = options().with_search_cache(false);
        differential(config, &ops, &|config, clock| {
            Box::new(open(&url, config, options.clone(), clock))
        })?;
    }
}

proptest! {
    // Two connections per case and a cache refresh per read: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Writes through one store, reads and searches through another of the same scope.
    #[test]
    fn postgres_reader_of_another_writer_agrees_with_in_memory(
        config in config(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let Some(url) = server() else { return Ok(()) };
        differential(config, &ops, &|config, clock| {
            let scope = fresh_scope("split");
            let connect = |clock| {
                PgFactStore::open_with(&url, &scope, config, options(), clock).unwrap()
            };
            Box::new(Split { writer: connect(clock.clone()), reader: connect(clock) })
        })?;
    }
}

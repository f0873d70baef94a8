//! The conformance suite against `InMemorySessionFactStore` and `InMemoryLongTermStore`.

use std::sync::Arc;

use fact_model::Clock;
use fact_store::conformance::Fixture;
use fact_store::{
    InMemoryLongTermStore, InMemorySessionFactStore, LongTermStore, SessionFactStore, StoreConfig,
};

/// The in-memory stores, which own no temporary state.
struct InMemory;

impl Fixture for InMemory {
    fn store(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn SessionFactStore>> {
        Some(Arc::new(InMemorySessionFactStore::new(config, clock)))
    }

    fn long_term(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn LongTermStore>> {
        Some(Arc::new(InMemoryLongTermStore::new(config, clock)))
    }
}

fact_store::conformance_suite!(InMemory);

//! The conformance suite against `InMemorySessionFactStore`.

use std::sync::Arc;

use fact_model::ManualClock;
use fact_store::{
    InMemoryLongTermStore, InMemorySessionFactStore, LongTermStore, SessionFactStore, StoreConfig,
};

pub(crate) use crate::{fact, memory, store_from, t, valid_lines};

pub(crate) fn store_with(
    config: StoreConfig,
) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    Some(store_from(|clock| {
        Arc::new(InMemorySessionFactStore::new(config, clock))
    }))
}

pub(crate) fn store() -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    store_with(StoreConfig::default())
}

pub(crate) fn long_term() -> Option<(Arc<dyn LongTermStore>, Arc<ManualClock>)> {
    let clock = Arc::new(ManualClock::new(t(0)));
    let store = InMemoryLongTermStore::new(StoreConfig::default(), clock.clone());
    Some((Arc::new(store), clock))
}

conformance_suite!();

//! The conformance suite against `SqliteFactStore` without its search cache: every
//! search is answered by FTS5 and the stored term documents.

use std::sync::Arc;

use fact_model::ManualClock;
use fact_store::{LongTermStore, SessionFactStore, SqliteOptions, StoreConfig};

pub(crate) use crate::{fact, memory, store_from, t, valid_lines};

pub(crate) fn store_with(
    config: StoreConfig,
) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    let options = SqliteOptions::default().with_search_cache(false);
    Some(store_from(|clock| {
        Arc::new(crate::sqlite::OnDisk::open(config, options, clock))
    }))
}

pub(crate) fn store() -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    store_with(StoreConfig::default())
}

pub(crate) fn long_term() -> Option<(Arc<dyn LongTermStore>, Arc<ManualClock>)> {
    crate::sqlite::long_term_with(SqliteOptions::default().with_search_cache(false))
}

conformance_suite!();

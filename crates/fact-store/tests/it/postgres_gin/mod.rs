//! The conformance suite against `PgFactStore` without its search cache: every search is
//! answered by the GIN index over the valid facts' `tsvector`s and their stored term
//! documents.

use std::sync::Arc;

use fact_model::ManualClock;
use fact_store::{LongTermStore, SessionFactStore, StoreConfig};

pub(crate) use crate::{fact, memory, store_from, t, valid_lines};

pub(crate) fn store_with(
    config: StoreConfig,
) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    let url = crate::postgres::server()?;
    let options = crate::postgres::options().with_search_cache(false);
    Some(store_from(|clock| {
        Arc::new(crate::postgres::open(&url, config, options, clock))
    }))
}

pub(crate) fn store() -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    store_with(StoreConfig::default())
}

pub(crate) fn long_term() -> Option<(Arc<dyn LongTermStore>, Arc<ManualClock>)> {
    crate::postgres::long_term_with(crate::postgres::options().with_search_cache(false))
}

conformance_suite!();

//! Durable composition (feature `sqlite`): the runtime's per-spec stores and the memory
//! service on one SQLite database, each under its own scope.
//!
//! A spec's facts live under scope `spec:NAME`, a user's memory under the scope the caller
//! names (`default`, `user:alice`); one file serves them all and no query crosses scopes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fact_model::Clock;
use fact_store::{SessionFactStore, SqliteFactStore, StoreConfig, StoreResult};

use crate::{MemoryService, StoreFactory};

/// The scope of a spec's facts: `spec:` and the spec's name.
///
/// ```
/// assert_eq!(dispatch_runtime::durable::spec_scope("todo-api"), "spec:todo-api");
/// ```
#[must_use]
pub fn spec_scope(spec_name: &str) -> String {
    format!("spec:{spec_name}")
}

/// A [`StoreFactory`] that opens each spec's store in the database at `path`, under scope
/// [`spec_scope`], with `config`: give it to
/// [`RuntimeBuilder::stores`](crate::RuntimeBuilder::stores) and a restarted runtime
/// serves the facts of every earlier run.
#[must_use]
pub fn sqlite_stores(path: impl Into<PathBuf>, config: StoreConfig) -> StoreFactory {
    let path = path.into();
    Box::new(move |spec_name, clock| {
        let store = SqliteFactStore::open(&path, &spec_scope(spec_name), config, clock)?;
        Ok(Arc::new(store) as Arc<dyn SessionFactStore>)
    })
}

/// The memory of `scope` in the database at `path`: facts and episodes in one SQLite store,
/// without capacity limits (long-term memory is not compacted behind the user's back).
///
/// # Errors
///
/// The store's error when the database cannot be opened (not a database, a newer schema,
/// no permission).
pub fn open_memory(path: &Path, scope: &str, clock: Arc<dyn Clock>) -> StoreResult<MemoryService> {
    let config = StoreConfig {
        capacity: usize::MAX,
        history_limit: usize::MAX,
        auto_compact: false,
        ..StoreConfig::default()
    };
    let store = Arc::new(SqliteFactStore::open(path, scope, config, clock.clone())?);
    Ok(MemoryService::new(store.clone(), store, clock))
}

//! The kit's lock stress loop (`fact_store::conformance::stress`) on SQLite: the store's
//! `Mutex` around its connection and search cache, and between connections to one file
//! the `BEGIN IMMEDIATE` transactions and the cache following the other connection's
//! writes (the threads of a round share two connections, and a third one checks).

use std::sync::Arc;

use fact_store::SessionFactStore;
use fact_store::conformance::stress::{Views, clock, config, stress};
use fact_store_sqlite::SqliteFactStore;

#[test]
fn sqlite_connections_on_one_file_survive_racing_rounds() {
    // Two connections the threads share (threads 0 and 2 on one, 1 and 3 on the other)
    // and a third that checks, on one file; a new scope every 25 rounds keeps snapshots
    // short.
    const ROUNDS: usize = 400;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stress.db");
    let epoch: std::sync::Mutex<Option<(usize, Views)>> = std::sync::Mutex::new(None);
    let stores = |round: usize| {
        let mut epoch = epoch.lock().unwrap();
        let scope = round / 25;
        if epoch.as_ref().is_none_or(|(s, _)| *s != scope) {
            let open = || -> Arc<dyn SessionFactStore> {
                Arc::new(
                    SqliteFactStore::open(&path, &format!("stress:{scope}"), config(), clock())
                        .unwrap(),
                )
            };
            *epoch = Some((scope, (open(), vec![open(), open()])));
        }
        let (_, views) = epoch.as_ref().unwrap();
        views.clone()
    };
    let (checked, reordered) = stress(ROUNDS, &stores);
    assert_eq!(checked, ROUNDS);
    eprintln!("sqlite: {checked} rounds, {reordered} out-of-order arrivals");
}

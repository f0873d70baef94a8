//! The kit's lock stress loop (`fact_store::conformance::stress`) on the in-memory store:
//! its `RwLock<State>` (reads in parallel, writes one at a time, the term index and the
//! version chains under the same lock). The durable stores run it from their own crates.

use std::sync::Arc;

use fact_store::conformance::stress::{check_snapshot, clock, config, stress};
use fact_store::{InMemorySessionFactStore, SessionFactStore};

/// Rounds on the in-memory store: each one is a new set of interleavings.
const MEMORY_ROUNDS: usize = 10_000;

#[test]
fn in_memory_store_survives_ten_thousand_racing_rounds() {
    // A new store per round: the interleavings are what is stressed, not the size.
    let stores = |_round: usize| {
        let store: Arc<dyn SessionFactStore> =
            Arc::new(InMemorySessionFactStore::new(config(), clock()));
        (store.clone(), vec![store])
    };
    let (checked, reordered) = stress(MEMORY_ROUNDS, &stores);
    assert_eq!(checked, MEMORY_ROUNDS);
    // Threads started in changing orders: in some rounds an older shared fact came last.
    assert!(reordered > 0, "no round ran its threads out of order");
    eprintln!("in-memory: {checked} rounds, {reordered} out-of-order arrivals");
}

#[test]
fn in_memory_store_shared_across_rounds_keeps_every_write() {
    // One store for every round: the checks are per round, the counts cumulative.
    let store: Arc<dyn SessionFactStore> =
        Arc::new(InMemorySessionFactStore::new(config(), clock()));
    let stores = |_round: usize| (store.clone(), vec![store.clone()]);
    assert_eq!(stress(150, &stores).0, 150);
    check_snapshot(&store.export_snapshot().unwrap(), usize::MAX);
}

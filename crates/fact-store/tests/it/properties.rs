//! Differential property test (the conformance kit's `fact_store::conformance::properties`):
//! random operation sequences applied to an `InMemorySessionFactStore` and to the backend
//! under test must give identical reports, errors, valid facts, histories, `valid_at`
//! answers, snapshots and search results after every operation.
//!
//! The in-memory store is compared with a second in-memory store too: its hash indexes
//! are keyed with a random hasher per store, so this checks that nothing it answers
//! depends on hash order.

use fact_store::InMemorySessionFactStore;
use fact_store::conformance::properties::{
    config, differential, op, turns, turns_supersede_in_order,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn turns_of_one_transaction_supersede_in_order_in_memory(turns in turns()) {
        let store = InMemorySessionFactStore::default();
        turns_supersede_in_order(&store, &turns)?;
    }

    #[test]
    fn two_in_memory_stores_agree(config in config(), ops in proptest::collection::vec(op(), 1..40)) {
        differential(config, &ops, &|config, clock| {
            Box::new(InMemorySessionFactStore::new(config, clock))
        })?;
    }
}

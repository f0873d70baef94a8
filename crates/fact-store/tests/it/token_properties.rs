//! The kit's token-vector property test (`fact_store::conformance::token_properties`) on
//! the in-memory store; the SQLite store runs it from its own crate.

use std::sync::Arc;

use fact_model::ManualClock;
use fact_store::conformance::t;
use fact_store::conformance::token_properties::{token_op, token_vectors_follow_their_facts};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn token_vectors_follow_their_facts_in_memory(ops in prop::collection::vec(token_op(), 1..40)) {
        let clock = Arc::new(ManualClock::new(t(0)));
        let store: Box<dyn SessionFactStore> =
            Box::new(InMemorySessionFactStore::new(StoreConfig::default(), clock));
        token_vectors_follow_their_facts(&[store], ops)?;
    }
}

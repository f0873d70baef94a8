//! The kit's token-vector property test (`fact_store::conformance::token_properties`) on
//! a SQLite store in a private in-memory database.

use std::sync::Arc;

use fact_model::ManualClock;
use fact_store::conformance::t;
use fact_store::conformance::token_properties::{token_op, token_vectors_follow_their_facts};
use fact_store::{SessionFactStore, StoreConfig};
use fact_store_sqlite::SqliteDatabase;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn token_vectors_follow_their_facts_on_sqlite(ops in prop::collection::vec(token_op(), 1..40)) {
        let clock = Arc::new(ManualClock::new(t(0)));
        let store: Box<dyn SessionFactStore> = Box::new(
            SqliteDatabase::in_memory().unwrap().open("s", StoreConfig::default(), clock).unwrap(),
        );
        token_vectors_follow_their_facts(&[store], ops)?;
    }
}

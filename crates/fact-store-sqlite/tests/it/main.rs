//! Integration tests of `fact-store-sqlite`: the conformance kit of `fact-store`
//! (`fact_store::conformance`) against the SQLite store, with its search cache (`sqlite`)
//! and without (`sqlite_fts`), the kit's differential property test, lock stress and
//! token-vector property test, the durable store's own tests (`sqlite::only`), the cache
//! budget, and crashes of writer processes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// `[fact.clone()]` reads better in an assertion than `std::slice::from_ref(&fact)`.
#![allow(clippy::cloned_ref_to_slice_refs)]

mod cache_budget;
mod crash;
mod lock_stress;
mod properties;
mod sqlite;
mod sqlite_fts;
mod token_properties;

// The kit's helpers, shared by the tests.
pub(crate) use fact_store::conformance::{Overlap, durable, fact, search, t};

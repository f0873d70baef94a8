//! Integration tests of `fact-store-postgres`: the conformance kit of `fact-store`
//! (`fact_store::conformance`) against the PostgreSQL store, with its search cache
//! (`postgres`), answering from the GIN index (`postgres_gin`) and reading from a streaming
//! replica (`postgres_replica`), the kit's differential property test and lock stress, the
//! durable store's own tests (`postgres::only`, connections, a lost commit, a proxy), and
//! the cache budget. Without `FACTMEM_PG_URL` every test returns at once, and under
//! `CI=true` the missing server fails them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// `[fact.clone()]` reads better in an assertion than `std::slice::from_ref(&fact)`.
#![allow(clippy::cloned_ref_to_slice_refs)]

mod cache_budget;
mod lock_stress;
mod postgres;
mod postgres_gin;
mod postgres_replica;
mod properties;

// The kit's helpers, shared by the tests.
pub(crate) use fact_store::conformance::{Overlap, durable, fact, search, t};

//! Integration tests of `fact-store`, through `dyn SessionFactStore` as callers use it:
//! the in-memory store against the conformance kit. The durable stores run the same kit
//! from their own crates (`fact-store-sqlite`, `fact-store-postgres`).
//!
//! The conformance suite is the crate's conformance kit (`fact_store::conformance`, feature
//! `conformance`, which the crate's dev-dependency on itself turns on for these tests):
//! each backend module below implements the kit's `Fixture` and expands
//! `fact_store::conformance_suite!`, so a new backend passes the same tests by adding one
//! module. A fixture gives `None` when the backend cannot run here (no PostgreSQL server
//! outside CI), and each test then returns at once. `properties` runs the kit's random
//! operation sequences against every backend and the in-memory store side by side.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
// `[fact.clone()]` reads better in an assertion than `std::slice::from_ref(&fact)`.
#![allow(clippy::cloned_ref_to_slice_refs)]

mod workload_port;

mod in_memory;
mod lock_stress;
mod properties;
mod token_properties;
mod vector_properties;

// The kit's helpers, shared by the backends' own tests.
pub(crate) use fact_store::conformance::t;

//! Integration tests of `dispatch-runtime`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
// Helpers shared by tests that need a backend feature are unused in builds without it.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres")),
    allow(dead_code, unused_imports, unused_mut)
)]

mod concurrency;
#[cfg(feature = "postgres")]
mod connections;
mod contract;
mod export;
mod filtered_reads;
mod hooked;
mod hostile;
mod locking;
mod maintenance;
mod memory;
mod prompt;
mod protocol;
#[cfg(feature = "sqlite")]
mod reads;
#[cfg(feature = "postgres")]
mod replicas;
mod requests;
mod runs;
mod runtime;
mod settle;

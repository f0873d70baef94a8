//! Integration tests of `dispatch-runtime`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod concurrency;
#[cfg(feature = "postgres")]
mod connections;
mod contract;
mod hostile;
mod locking;
mod maintenance;
mod memory;
mod prompt;
mod protocol;
#[cfg(feature = "sqlite")]
mod reads;
mod requests;
mod runs;
mod runtime;
mod settle;

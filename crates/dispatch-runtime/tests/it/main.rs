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
mod maintenance;
mod memory;
mod prompt;
mod protocol;
#[cfg(feature = "sqlite")]
mod reads;
mod requests;
mod runtime;
mod settle;

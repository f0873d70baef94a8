//! Integration tests of `ledger`: parsing, the real corpus, progress ledgers and their
//! cache, task statuses and their edits in tasks.md, the task ledger, and stall detection.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod cache;
mod corpus;
mod hostile;
mod parse;
mod progress;
mod set_status;
mod stall;
mod status;
mod task_ledger;

/// A fresh, empty directory for one test, removed when dropped.
pub(crate) fn temp_dir() -> tempfile::TempDir {
    tempfile::TempDir::new().unwrap()
}

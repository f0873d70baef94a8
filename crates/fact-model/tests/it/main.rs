//! Integration tests of `fact-model`: one binary, one module per area.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod contract;
mod fact;
mod hostile;

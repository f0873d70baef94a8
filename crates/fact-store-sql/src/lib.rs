//! What the SQL stores of factmem share, written once over a driver.
//!
//! `fact-store` holds the store traits, the values and the in-memory engine; this crate
//! holds what every SQL backend (`fact-store-sqlite`, `fact-store-postgres`) does the same
//! way, and names no driver:
//!
//! - [`rules`]: the temporal rules over one write transaction's rows. A backend implements
//!   [`Rows`](rules::Rows) (a few statements per method, none deciding anything) and gets
//!   [`Writer`](rules::Writer), which applies every rule of the in-memory store step for
//!   step.
//! - [`long_term`]: a long-term memory commit over [`MemoryRows`](long_term::MemoryRows).
//! - [`error`]: [`DbError`](error::DbError), generic over the driver's error, and the
//!   [`Driver`] trait by which a backend says how its errors read as
//!   [`StoreError`](fact_store::StoreError)s and which of them are conflicts to retry.
//! - [`codec`]: the column encoding of facts, ids, times and tags.
//! - [`search`]: the scope's term index in process and the scoring of the database path.
//! - [`vectors`]: the embeddings' encoding and their in-process index.
//! - [`SqlStore`] ([`store`]): the store traits implemented once over a [`Driver`], the
//!   write path, reads and errors of one database.
//! - [`CacheBudget`] ([`cache`]): one byte budget for the in-process caches of many stores.
//!
//! This is a crate for backend authors: applications use a backend crate (through
//! `dispatch-runtime`), which re-exports what they need ([`CacheBudget`] among it).

#![forbid(unsafe_code)]

pub mod cache;
pub mod codec;
pub mod error;
pub mod filter;
pub mod long_term;
pub mod rules;
pub mod search;
pub mod store;
pub mod vectors;

pub use crate::cache::CacheBudget;
pub use crate::store::{
    Count, Driver, EpisodeReads, FactRead, MemoryReads, SqlStore, analyzer_tag,
};

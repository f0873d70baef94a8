//! factmem's temporal fact store on SQLite: facts and episodes of many scopes in one
//! file, shared by threads and processes.
//!
//! [`SqliteFactStore`] is [`SqlStore`]`<`[`Sqlite`]`>`: the store traits of `fact-store`
//! (`SessionFactStore`, `EpisodeStore`, `LongTermStore`, `FactVectors`) implemented once
//! in `fact-store-sql` over this crate's [`Driver`](fact_store_sql::Driver). This crate
//! holds what is SQLite's own:
//!
//! - `driver.rs`: [`Sqlite`], the driver: its write path (a `BEGIN IMMEDIATE`
//!   transaction under the store's lock), its reads and its search cache, which follows
//!   the writes of other connections row by row.
//! - `database.rs` and `options.rs`: [`SqliteDatabase`], the file's connections that the
//!   stores of many scopes share, and [`SqliteOptions`].
//! - `schema.rs`: the tables, `PRAGMA user_version` and the forward migrations.
//! - `rows.rs`: [`SqliteRows`], the rows of one write transaction, for the temporal rules
//!   every SQL store shares ([`fact_store_sql::rules`]).
//! - `search.rs`: term search over the database's FTS5 index, with the shared in-process
//!   cache.
//! - `episodes.rs` and `messages.rs`: the episodes' reads, their messages, their index and
//!   message search.
//! - `long_term.rs`: the rows and reads of long-term memory (aliases, the profile).
//! - `vectors.rs`: [`FactVectors`](fact_store::FactVectors) (embeddings and token vectors
//!   as BLOBs).
//! - `codec.rs` and `error.rs`: rows → facts, SQLite errors →
//!   [`StoreError`](fact_store::StoreError).
//!
//! ```
//! use std::sync::Arc;
//! use fact_model::SystemClock;
//! use fact_store::{SessionFactStore, StoreConfig};
//! use fact_store_sqlite::SqliteFactStore;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("memory.db");
//! let alice = SqliteFactStore::open(&path, "user:alice", StoreConfig::default(), Arc::new(SystemClock))?;
//! let bob = SqliteFactStore::open(&path, "user:bob", StoreConfig::default(), Arc::new(SystemClock))?;
//! assert_eq!((alice.valid_count()?, bob.valid_count()?), (0, 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod codec;
mod database;
mod driver;
mod episodes;
mod error;
mod long_term;
mod messages;
mod options;
mod rows;
mod schema;
mod search;
#[cfg(test)]
mod tests;
mod vectors;

/// Re-exported from `fact-store-sql`: the byte budget this backend's caches are charged to.
pub use fact_store_sql::CacheBudget;
/// Re-exported from `fact-store-sql`: the store every SQL backend is.
pub use fact_store_sql::SqlStore;

pub use crate::database::SqliteDatabase;
pub use crate::driver::{Sqlite, SqliteFactStore};
pub use crate::options::SqliteOptions;
pub use crate::rows::SqliteRows;

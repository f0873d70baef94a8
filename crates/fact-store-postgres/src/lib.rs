//! factmem's temporal fact store on PostgreSQL: facts and episodes of many scopes on a
//! server, shared by processes on many machines, with read replicas.
//!
//! [`PgFactStore`] is [`SqlStore`]`<`[`Postgres`]`>`: the store traits of `fact-store`
//! implemented once in `fact-store-sql` over this crate's
//! [`Driver`](fact_store_sql::Driver). This crate holds what is PostgreSQL's own:
//!
//! - `driver.rs`: [`Postgres`], the driver: its write path (the scope's row lock, retries
//!   on conflicts, the primary's position for the replicas), its reads and its search
//!   cache.
//! - `database.rs` and `options.rs`: [`PgDatabase`], the database the stores of many
//!   scopes share (one pool, one schema check), and [`PgOptions`].
//! - `replicas.rs`: read replicas (hot standbys): where reads go, how a store reads its own
//!   writes there, and what a lagging or failing replica costs ([`ReplicaStats`]).
//! - `schema.rs`: the tables, constraints and indexes, and the forward migrations.
//! - `rows.rs`: [`PgRows`], the rows of one write transaction, for the temporal rules
//!   every SQL store shares ([`fact_store_sql::rules`]).
//! - `search.rs`: term search over the GIN index, with the shared in-process cache.
//! - `episodes.rs` and `long_term.rs`: the episodes' reads (kept as their messages,
//!   message search) and the rows and reads of long-term memory.
//! - `vectors.rs`: [`FactVectors`](fact_store::FactVectors) (embeddings and token vectors
//!   as `bytea`).
//! - `pool.rs`, `statements.rs`, `client.rs`, `codec.rs` and `error.rs`: the connection
//!   pool, prepared statements, small helpers, rows → facts, server errors →
//!   [`StoreError`](fact_store::StoreError).
//!
//! # Features
//!
//! | feature | adds |
//! |---|---|
//! | `tls` | TLS to the server (rustls, Mozilla's roots): `sslmode=require` works |
//!
//! This crate declares Rust 1.95: its pool (r2d2) needs it. The rest of the workspace's
//! core builds with 1.89.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod codec;
mod database;
mod driver;
mod episodes;
mod error;
mod long_term;
mod messages;
mod options;
mod pool;
mod replicas;
mod rows;
mod schema;
mod search;
mod statements;
mod vectors;

/// Re-exported from `fact-store-sql`: the byte budget this backend's caches are charged to.
pub use fact_store_sql::CacheBudget;
/// Re-exported from `fact-store-sql`: the store every SQL backend is.
pub use fact_store_sql::SqlStore;

pub use crate::database::PgDatabase;
pub use crate::driver::{PgFactStore, Postgres};
pub use crate::options::PgOptions;
pub use crate::replicas::ReplicaStats;
pub use crate::rows::PgRows;

//! What the SQL stores (SQLite, PostgreSQL) share: the temporal rules over a transaction's
//! rows ([`rules`]), the column encoding ([`codec`]), the error mapping ([`error`]) and
//! the search cache and scoring ([`search`]), and the embeddings' encoding and in-process
//! index ([`vectors`]). Each backend implements
//! [`Rows`](rules::Rows) and its own reads; neither repeats a rule.

pub(crate) mod codec;
pub(crate) mod error;
pub(crate) mod long_term;
pub(crate) mod rules;
pub(crate) mod search;
pub(crate) mod vectors;

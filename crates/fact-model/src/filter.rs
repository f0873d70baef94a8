//! One filter language for every front end: conditions on a fact's fields and metadata,
//! combined with `and`, `or` and `not`.
//!
//! A [`Filter`] is read from one JSON shape ([`Filter::from_json`]) or from a readable
//! form ([`Filter::parse_where`]), checked once (fields, operators, types), and then
//! evaluated against a fact ([`Filter::matches`]) or translated by a store into its own
//! index queries. Both forms are documented in `docs/protocol.md`.
//!
//! ```
//! use fact_model::Filter;
//! use serde_json::json;
//!
//! let from_json = Filter::from_json(&json!({"and": [
//!     {"metadata.project": "rlm"},
//!     {"category": {"in": ["preference", "decision"]}},
//! ]}))?;
//! let from_where =
//!     Filter::parse_where(r#"metadata.project = "rlm" and category in (preference, decision)"#)?;
//! assert_eq!(from_json, from_where);
//!
//! let err = Filter::from_json(&json!({"and": [{"colour": "red"}]})).unwrap_err();
//! assert_eq!(err.code(), "invalid_filter");
//! assert_eq!(err.path(), "/and/0/colour");
//! # Ok::<(), fact_model::FilterError>(())
//! ```

mod ast;
mod check;
mod json;
mod where_syntax;

pub use self::ast::{
    Condition, FieldKind, Filter, FilterError, FilterField, FilterTarget, MAX_FILTER_DEPTH,
    MAX_FILTER_ITEMS, Operand, Operator,
};

#[cfg(test)]
mod tests;

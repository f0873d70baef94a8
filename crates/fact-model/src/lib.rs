//! Value objects of the fact memory.
//!
//! This crate is the vocabulary every other crate of the workspace speaks, and it depends on
//! none of them:
//!
//! - [`SessionFact`]: a validated, temporal `subject relation object` triple with
//!   [`Tags`], a source and a confidence. Invalid facts cannot be constructed or
//!   deserialized.
//! - [`FactText`]: the text of a fact's fields, static, shared between facts or owned.
//! - [`FactId`]: the content address of a triple, from a documented, length-prefixed
//!   BLAKE3 encoding.
//! - [`Tag`] and [`SourceRole`]: closed vocabularies, snake_case on the wire.
//! - [`Timestamp`] and [`Clock`]: time as a value, and the only way to learn it
//!   ([`SystemClock`], or [`ManualClock`] in tests).
//! - [`FactSelector`]: which valid facts an invalidation ends.
//! - [`clip`]: shortening text on `char` boundaries, used by every crate.
//! - The dispatch contract: [`ImplementerResult`] and [`ReviewerResult`].
//! - Conversations and what memory keeps beside facts: [`Message`], [`UserContext`],
//!   [`MemoryHistory`], and [`normalize_entity`], one spelling per subject.
//!
//! ```
//! use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag};
//!
//! let clock = ManualClock::default();
//! let fact = SessionFact::builder("task:3", "reviewed_as", "approved")
//!     .tag(Tag::Decision)
//!     .source("3", SourceRole::Reviewer)
//!     .valid_from(clock.now())
//!     .build()?;
//! assert_eq!(fact.id(), fact_model::FactId::for_triple("task:3", "reviewed_as", "approved"));
//! # Ok::<(), fact_model::FactError>(())
//! ```
//!
//! # Features
//!
//! None: the vocabulary is the same for every user, and its only dependencies are `serde`,
//! `blake3` and `thiserror`.

#![forbid(unsafe_code)]

mod clip;
mod clock;
mod contract;
mod conversation;
mod entity;
mod fact;
mod filter;
mod id;
mod metadata;
mod profile;
mod selector;
mod tag;
mod text;
mod time;
mod token;

pub use crate::clip::{ELLIPSIS, char_len, clip};
pub use crate::clock::{Clock, ManualClock, SystemClock};
pub use crate::contract::{
    Assessment, DispatchResult, ImplementerResult, ImplementerStatus, ReviewIssue, ReviewerResult,
    Severity, TestRun,
};
pub use crate::conversation::{Message, MessageRole};
pub use crate::entity::{USER_ENTITY, normalize_entity};
pub use crate::fact::{
    FactBuilder, FactError, FactUpdate, Field, MAX_OBJECT_CHARS, MAX_RELATION_CHARS,
    MAX_SOURCE_TASK_ID_CHARS, MAX_STATEMENT_CHARS, MAX_SUBJECT_CHARS, MAX_TAGS, SessionFact, Tags,
    fold_statement,
};
pub use crate::filter::{
    Condition, FieldKind, Filter, FilterError, FilterField, FilterTarget, MAX_FILTER_DEPTH,
    MAX_FILTER_ITEMS, Operand, Operator,
};
pub use crate::id::{FactId, ParseFactIdError};
pub use crate::metadata::{
    MAX_METADATA_KEY_BYTES, MAX_METADATA_KEYS, MAX_METADATA_STRING_BYTES, MAX_SAFE_INTEGER,
    MetaValue, Metadata, MetadataError, is_metadata_key,
};
pub use crate::profile::{MemoryHistory, ProfileField, UserContext};
pub use crate::selector::FactSelector;
pub use crate::tag::{ParseSourceRoleError, ParseTagError, SourceRole, Tag};
pub use crate::text::FactText;
pub use crate::time::{Timestamp, TimestampError, parse_duration};
pub use crate::token::{CharsPerToken, TokenCounter};

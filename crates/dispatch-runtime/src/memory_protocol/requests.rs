//! The arguments of every memory tool, as [`handle`](super::handle) reads them from JSON:
//! one type per tool (or per shape of arguments), which the JSON Schemas of `schema.rs`
//! are derived from.

use fact_model::{Tag, Timestamp};
use serde::Deserialize;
use serde_json::Value;

/// Declares one request type: deserialized strictly (unknown fields refused), described by
/// a JSON Schema with feature `schema`, and readable, fields included, by the rest of
/// `memory_protocol`.
macro_rules! request {
    (
        $(#[$meta:meta])*
        struct $name:ident { $($(#[$field_meta:meta])* $field:ident: $type:ty),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub(super) struct $name { $($(#[$field_meta])* pub(super) $field: $type),* }
    };
}

request! {
    /// `memory_add`: a fact to remember.
    struct Add {
        /// What the fact is about: `user`, `project:rlm` (normalized; an alias is stored
        /// under its entity).
        subject: String,
        /// A specific predicate, such as `prefers_test_framework`: a newer fact with the
        /// same subject and relation supersedes the older one.
        relation: String,
        /// The value: `pytest`.
        object: String,
        /// One sentence stating the fact: `User prefers pytest over unittest`.
        #[serde(default)]
        statement: Option<String>,
        /// The category (default `knowledge`).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "category"))]
        category: Option<Tag>,
        /// How sure, from 0 to 1 (default 1).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
        confidence: Option<f64>,
        /// Since when it is true, RFC 3339 (default now).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        valid_from: Option<Timestamp>,
        /// Metadata: an object of at most 32 keys (`[A-Za-z0-9_.-]`, at most 64 bytes) to
        /// strings (at most 1 KiB), numbers or booleans.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "metadata"))]
        metadata: Option<Value>,
    }
}

request! {
    /// `memory_get` and `memory_delete`: a fact by its id.
    struct ById {
        /// The fact's id: 16 hex digits.
        id: String,
    }
}

request! {
    /// `memory_list`: the current facts.
    struct List {
        /// The facts valid at this instant (RFC 3339) instead of now.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the facts this filter holds for: the filter language's JSON shape
        /// (`{"metadata.project": "rlm"}`, `{"and": [...]}`) or its readable form as a
        /// string (`metadata.project = "rlm" and category in (preference, decision)`);
        /// see docs/protocol.md.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
    }
}

request! {
    /// `memory_update`: a change of a fact.
    struct Update {
        /// The fact's id: 16 hex digits.
        id: String,
        /// A new statement.
        #[serde(default)]
        statement: Option<String>,
        /// A new object: a new fact supersedes this one.
        #[serde(default)]
        object: Option<String>,
        /// A new category.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "category"))]
        category: Option<Tag>,
        /// A new confidence, from 0 to 1.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 0.0, max = 1.0)))]
        confidence: Option<f64>,
        /// New metadata, replacing the old whole (`{}` clears it): an object of at most 32 keys (`[A-Za-z0-9_.-]`, at most 64 bytes) to
        /// strings (at most 1 KiB), numbers or booleans.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "metadata"))]
        metadata: Option<Value>,
    }
}

request! {
    /// `memory_search`: words to search the facts for.
    struct Search {
        /// The words to search for.
        query: String,
        /// At most this many facts (default 10, at most 1000).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
        limit: Option<usize>,
        /// Search the facts valid at this instant (RFC 3339) instead of now.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the facts this filter holds for: the filter language's JSON shape
        /// (`{"metadata.project": "rlm"}`, `{"and": [...]}`) or its readable form as a
        /// string (`metadata.project = "rlm" and category in (preference, decision)`);
        /// see docs/protocol.md.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
        /// Opt-in recency: rank by scores that halve with every half-life of a fact's age
        /// (`30d`, `12h`, `2w`; seconds without a unit).
        #[serde(default)]
        recency_half_life: Option<String>,
        /// The instant ages are measured to (RFC 3339; default `as_of`, else now).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        reference_date: Option<Timestamp>,
    }
}

request! {
    /// `memory_add_many`: facts to remember in one transaction.
    struct AddMany {
        /// The facts, each as `memory_add` takes one (at most 1000): all are stored, or,
        /// when one is invalid, none.
        #[cfg_attr(feature = "schema", schemars(length(max = 1000)))]
        facts: Vec<Add>,
    }
}

request! {
    /// `memory_search_many`: many searches answered in one call.
    struct SearchMany {
        /// The searches' words, one string each (at most 1000).
        #[cfg_attr(feature = "schema", schemars(length(max = 1000)))]
        queries: Vec<String>,
        /// At most this many facts per search (default 10, at most 1000).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
        limit: Option<usize>,
        /// Search the facts valid at this instant (RFC 3339) instead of now.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the facts this filter holds for, as for `memory_search`.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
        /// Opt-in recency, as for `memory_search` (`30d`).
        #[serde(default)]
        recency_half_life: Option<String>,
        /// The instant ages are measured to (RFC 3339; default `as_of`, else now).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        reference_date: Option<Timestamp>,
    }
}

request! {
    /// `memory_recall`: a question to recall facts and conversations for.
    struct RecallArgs {
        /// The question or topic.
        query: String,
        /// The most tokens the recalled text may cost (default 2000).
        #[serde(default)]
        max_tokens: Option<usize>,
        /// At most this many facts, and this many messages (default 10, at most 1000).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
        limit: Option<usize>,
        /// Recall what was true, and said, at this instant (RFC 3339).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the facts this filter holds for (and no conversation): the filter language's JSON shape
        /// (`{"metadata.project": "rlm"}`, `{"and": [...]}`) or its readable form as a
        /// string (`metadata.project = "rlm" and category in (preference, decision)`);
        /// see docs/protocol.md.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
        /// Opt-in recency: rank by scores that halve with every half-life of a fact's age
        /// (`30d`, `12h`, `2w`; seconds without a unit).
        #[serde(default)]
        recency_half_life: Option<String>,
        /// The instant ages are measured to (RFC 3339; default `as_of`, else now).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        reference_date: Option<Timestamp>,
        /// 1: also recall the one-hop neighbours of the best facts (the facts that share a
        /// subject or object with one of them), within the same budget; 0 (the default):
        /// none.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 1)))]
        expand: Option<usize>,
    }
}

request! {
    /// `memory_history`: a subject whose facts to trace.
    struct History {
        /// The subject: `user` (normalized; its aliases' facts included).
        subject: String,
        /// Only the versions that had begun by this instant (RFC 3339).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the versions this filter holds for: the filter language's JSON shape
        /// (`{"metadata.project": "rlm"}`, `{"and": [...]}`) or its readable form as a
        /// string (`metadata.project = "rlm" and category in (preference, decision)`);
        /// see docs/protocol.md.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
    }
}

request! {
    /// `memory_neighbours`: the facts around an entity.
    struct NeighboursArgs {
        /// The entity: `user`, `project:rlm` (normalized; its aliases included).
        entity: String,
        /// 1: the facts whose subject or object is the entity; 2: also the facts about the
        /// entities those lead to (default 1).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 2)))]
        depth: Option<usize>,
        /// At most this many facts, depth 1 first (default 100, at most 1000).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
        limit: Option<usize>,
        /// The facts valid at this instant (RFC 3339) instead of now.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the facts this filter holds for, on every hop: the filter language's JSON
        /// shape or its readable form as a string; see docs/protocol.md.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
    }
}

request! {
    /// `memory_format`: the memory as prompt text.
    struct Format {
        /// The most tokens the text may cost (default 2000).
        #[serde(default)]
        max_tokens: Option<usize>,
        /// The memory as it was at this instant (RFC 3339).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
        /// Only the facts this filter holds for: the filter language's JSON shape
        /// (`{"metadata.project": "rlm"}`, `{"and": [...]}`) or its readable form as a
        /// string (`metadata.project = "rlm" and category in (preference, decision)`);
        /// see docs/protocol.md.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "filter"))]
        filter: Option<Value>,
    }
}

request! {
    /// `memory_archive`: a conversation to archive.
    struct Archive {
        /// The conversation: JSON Lines of `{"role": "user"|"assistant"|"system"|"tool",
        /// "content": "...", "timestamp": "RFC 3339" (optional; also `time`,
        /// `created_at`)}`, at most 8 MiB.
        transcript: String,
        /// The episode's title (default: the first user message).
        #[serde(default)]
        title: Option<String>,
        /// When the conversation took place (RFC 3339), for messages without a time.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        session_time: Option<Timestamp>,
        /// Metadata of the conversation, kept on the episode and on every fact extracted
        /// from it: an object of at most 32 keys (`[A-Za-z0-9_.-]`, at most 64 bytes) to
        /// strings (at most 1 KiB), numbers or booleans.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "metadata"))]
        metadata: Option<Value>,
        /// A shell command line that answers an extraction prompt on stdin with JSON on
        /// stdout; accepted only when the server was started with `--allow-llm-cmd`.
        /// Without it (and without a server-side model), the conversation is archived
        /// without facts (`memory_backfill` extracts them later).
        #[serde(default)]
        llm_cmd: Option<String>,
        /// How long the command may take per call, in seconds (default 120).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
        timeout_secs: Option<u64>,
    }
}

request! {
    /// `memory_backfill`: extract the facts of conversations archived without them.
    struct Backfill {
        /// The model command (see `memory_archive`); needs `--allow-llm-cmd`.
        llm_cmd: String,
        /// How long the command may take per call, in seconds (default 120).
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
        timeout_secs: Option<u64>,
    }
}

request! {
    /// A tool without arguments.
    struct NoArgs {}
}

request! {
    /// `memory_set_context`: fields of the user context and history to set.
    struct SetContext {
        /// Work: role, team, projects.
        #[serde(default)]
        work: Option<String>,
        /// Personal: family, place, interests.
        #[serde(default)]
        personal: Option<String>,
        /// What is on the user's mind now.
        #[serde(default)]
        top_of_mind: Option<String>,
        /// The recent months.
        #[serde(default)]
        recent_months: Option<String>,
        /// Earlier context.
        #[serde(default)]
        earlier_context: Option<String>,
        /// Long-term background.
        #[serde(default)]
        long_term_background: Option<String>,
    }
}

request! {
    /// `memory_alias`: another name of an entity.
    struct SetAlias {
        /// The other name: `Mel`.
        alias: String,
        /// The entity it names: `Melanie`.
        entity: String,
    }
}

request! {
    /// `memory_unalias`: an alias to remove.
    struct Unalias {
        /// The alias.
        alias: String,
    }
}

request! {
    /// `memory_export`: a page of the scope's export (docs/export-format.md): lines
    /// `offset` to `offset + limit` of the file.
    struct Export {
        /// The first line of the page, from 0 (the header); default 0.
        #[serde(default)]
        offset: Option<u64>,
        /// At most this many lines (default and most: 10000).
        #[serde(default)]
        limit: Option<u64>,
        /// The memory as it was at this instant (RFC 3339) instead of now.
        #[serde(default)]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time"))]
        as_of: Option<Timestamp>,
    }
}

request! {
    /// `memory_erase_scope`: the scope to erase, named again as a confirmation: it must be
    /// the scope the connection holds.
    struct EraseScope {
        /// The scope, as the server holds it (`user:alice`).
        scope: String,
    }
}

request! {
    /// `memory_forget`: what to delete for good, with everything derived from it.
    struct Forget {
        /// An episode: it, its messages, and every fact extracted from it.
        #[serde(default)]
        episode: Option<String>,
        /// A subject: every version of every fact about it and its aliases, and the aliases.
        #[serde(default)]
        subject: Option<String>,
    }
}

/// A category, as the closed tag vocabulary.
#[cfg(feature = "schema")]
fn category(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = Tag::ALL.iter().map(|t| t.as_str()).collect();
    schemars::json_schema!({"type": ["string", "null"], "enum": names.into_iter().map(Value::from).chain([Value::Null]).collect::<Vec<_>>()})
}

/// An optional RFC 3339 instant.
#[cfg(feature = "schema")]
fn time(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["string", "null"],
        "description": "An RFC 3339 instant, such as 2026-03-01T09:00:00Z."
    })
}

/// A filter: the JSON shape or the readable form.
#[cfg(feature = "schema")]
fn filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["object", "string", "null"],
        "description": "A filter in the filter language: the JSON shape \
            ({\"metadata.project\": \"rlm\"}, {\"and\": [...]}, {\"not\": ...}, \
            {\"confidence\": {\"gte\": 0.8}}) or the readable form as a string \
            (metadata.project = \"rlm\" and category in (preference, decision)). Fields: \
            subject, relation, object, category, source, confidence, valid_from, valid_to, \
            recorded_at, metadata.KEY; operators eq ne in nin gt gte lt lte contains exists."
    })
}

/// Metadata: a flat object of JSON scalars.
#[cfg(feature = "schema")]
fn metadata(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["object", "null"],
        "maxProperties": 32,
        "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,64}$"},
        "additionalProperties": {"type": ["string", "number", "boolean"]}
    })
}

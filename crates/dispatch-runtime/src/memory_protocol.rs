//! The memory tools' wire format: one JSON request in, one JSON answer out, for every front
//! end of long-term memory (`facts mcp`'s memory tools; `facts mem --json` answers with the
//! same shapes). The binaries keep no knowledge of it: they hand [`handle`] a tool name and
//! its arguments, and ([`tools`], feature `schema`) list the tools with their schemas.
//!
//! A success is `{"ok": true, …fields}`, a failure `{"ok": false, "error": {"code",
//! "message"}}` with the code of [`MemoryError::code`], `invalid_request` for arguments
//! that do not fit, or `llm_cmd_not_allowed`. Times are RFC 3339 strings; `as_of` asks
//! about valid time (what was true then). The reference for people is `docs/protocol.md`.

use std::sync::Arc;
use std::time::Duration;

use fact_extract::{
    CommandLlm, ConversationExtractor, LlmClient, LlmExtractorConfig, LlmFactExtractor,
};
use fact_model::{Clock, FactId, Filter, Metadata, ProfileField, SessionFact, Tag, Timestamp};
use fact_retrieve::Recall;
use fact_store::{Alias, ScoredFact, SkipReason};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use self::requests::{
    Add, AddMany, Archive, Backfill, ById, EraseScope, Export, Forget, Format, History, List,
    NeighboursArgs, NoArgs, RecallArgs, Search, SearchMany, SetAlias, SetContext, Unalias, Update,
};
use crate::protocol::{self, code};
use crate::{
    AddOutcome, ArchiveRequest, MemoryChange, MemoryError, MemoryService, NewMemory, ReadOptions,
};

/// The default token budget of `memory_recall` and `memory_format` (seed 002).
pub const DEFAULT_MAX_TOKENS: usize = 2000;
/// The default number of facts of `memory_search`, and of facts and messages of
/// `memory_recall`.
pub const DEFAULT_LIMIT: usize = 10;
/// The default number of facts of `memory_neighbours`.
pub const DEFAULT_NEIGHBOURS: usize = 100;
/// The default time a model command may take per call, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The largest `transcript` a `memory_archive` call takes, in bytes (the transcript's own
/// limit, [`fact_extract::MAX_TRANSCRIPT_BYTES`]).
pub const MAX_TRANSCRIPT_BYTES: usize = fact_extract::MAX_TRANSCRIPT_BYTES;
/// The most facts (and episodes, and messages) a search answers: a `limit` of
/// `memory_search` and `memory_recall` above it is taken as it, and `facts mem search` and
/// `recall` refuse one ([`fact_store::MAX_SEARCH_LIMIT`]).
pub const MAX_SEARCH_LIMIT: usize = fact_store::MAX_SEARCH_LIMIT;
/// The most facts a `memory_add_many` call stores, and searches a `memory_search_many`
/// call answers.
pub const MAX_BATCH: usize = 1000;
/// The code of a call that names a model command a server does not run.
pub const LLM_CMD_NOT_ALLOWED: &str = "llm_cmd_not_allowed";
/// The code of a `memory_erase_scope` call that names a scope other than the one it is
/// served (or a front end that serves no named scope).
pub const WRONG_SCOPE: &str = "wrong_scope";

/// What a front end allows its callers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// Whether a call may name a model command (`llm_cmd`) the server runs.
    pub allow_llm_cmd: bool,
    /// The source recorded on facts added through these tools (`mcp`, `cli`).
    pub source: &'static str,
    /// The scope the service holds, the only one `memory_erase_scope` erases (and only
    /// when the call names it); `None`: no call erases anything.
    pub scope: Option<String>,
}

impl Policy {
    /// Facts added are attributed to `source`; no command a caller names is run.
    #[must_use]
    pub fn new(source: &'static str) -> Self {
        Policy {
            allow_llm_cmd: false,
            source,
            scope: None,
        }
    }

    /// The scope the service holds: `memory_erase_scope` erases it when a call names it.
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Runs the model commands callers name (`true`).
    #[must_use]
    pub fn with_allow_llm_cmd(mut self, allow: bool) -> Self {
        self.allow_llm_cmd = allow;
        self
    }
}

/// The extractor of a model command: `cmd` run by `sh -c`, reading the prompt on stdin and
/// answering on stdout, killed after `timeout`; facts dated by `clock`, with the default
/// extraction settings.
#[must_use]
pub fn command_extractor(
    cmd: String,
    timeout: Duration,
    clock: Arc<dyn Clock>,
) -> LlmFactExtractor {
    LlmFactExtractor::new(
        Arc::new(CommandLlm::new(cmd, timeout)),
        clock,
        LlmExtractorConfig::default(),
    )
}

/// The extractor of any language model `client` (a front end's own: the Python package
/// wraps a Python callable), with the default extraction settings and facts dated by
/// `clock`: what [`command_extractor`] is for a model command, so a front end names no
/// extractor implementation.
#[must_use]
pub fn client_extractor(
    client: Arc<dyn LlmClient>,
    clock: Arc<dyn Clock>,
) -> Arc<dyn ConversationExtractor> {
    Arc::new(LlmFactExtractor::new(
        client,
        clock,
        LlmExtractorConfig::default(),
    ))
}

/// Answers a memory tool call on `service`; `None` when `tool` is not a memory tool.
///
/// ```
/// use std::sync::Arc;
/// use dispatch_runtime::MemoryService;
/// use dispatch_runtime::memory_protocol::{Policy, handle};
/// use fact_model::ManualClock;
/// use fact_store::InMemoryLongTermStore;
/// use serde_json::json;
///
/// let memory = MemoryService::new(Arc::new(InMemoryLongTermStore::default()), Arc::new(ManualClock::default()));
/// let policy = Policy::new("mcp");
/// let added = handle(&memory, &policy, "memory_add",
///     json!({"subject": "User", "relation": "lives_in", "object": "Berlin"})).unwrap();
/// assert_eq!((added["ok"].clone(), added["status"].clone()), (json!(true), json!("added")));
/// assert_eq!(added["fact"]["subject"], "user");
/// let bad = handle(&memory, &policy, "memory_get", json!({"id": "nope"})).unwrap();
/// assert_eq!(bad["error"]["code"], "invalid_id");
/// assert!(handle(&memory, &policy, "init_run", json!({})).is_none());
/// ```
#[must_use]
pub fn handle(
    service: &MemoryService,
    policy: &Policy,
    tool: &str,
    arguments: Value,
) -> Option<Value> {
    let answer = match tool {
        "memory_add" => parse(arguments).and_then(|a| add(service, policy, a)),
        "memory_add_many" => parse(arguments).and_then(|a| add_many(service, policy, a)),
        "memory_get" => parse(arguments).and_then(|a: ById| {
            let fact = service.get(&a.id).map_err(failed)?;
            Ok(json!({"fact": fact}))
        }),
        "memory_list" => parse(arguments).and_then(|a: List| {
            let read = read_options(a.as_of, a.filter)?;
            let facts = service.list(&read).map_err(failed)?;
            Ok(json!({"count": facts.len(), "facts": facts}))
        }),
        "memory_update" => parse(arguments).and_then(|a| update(service, a)),
        "memory_delete" => parse(arguments).and_then(|a: ById| {
            let versions = service.delete(&a.id).map_err(failed)?;
            Ok(json!({"deleted": a.id.trim(), "versions": versions}))
        }),
        "memory_search" => parse(arguments).and_then(|a: Search| {
            let limit = clamp_limit(a.limit);
            let read = read_options(a.as_of, a.filter)?
                .with_recency(half_life(a.recency_half_life)?, a.reference_date);
            let found = service.search(&a.query, limit, &read).map_err(failed)?;
            Ok(json!({"query": a.query, "results": scored(&found)}))
        }),
        "memory_search_many" => parse(arguments).and_then(|a: SearchMany| {
            if a.queries.len() > MAX_BATCH {
                return Err(too_many("queries", a.queries.len()));
            }
            let limit = clamp_limit(a.limit);
            let read = read_options(a.as_of, a.filter)?
                .with_recency(half_life(a.recency_half_life)?, a.reference_date);
            let found = service
                .search_many(&a.queries, limit, &read)
                .map_err(failed)?;
            let results: Vec<Value> = a
                .queries
                .iter()
                .zip(&found)
                .map(|(query, found)| json!({"query": query, "results": scored(found)}))
                .collect();
            Ok(json!({"results": results}))
        }),
        "memory_recall" => parse(arguments).and_then(|a: RecallArgs| {
            let read = read_options(a.as_of, a.filter)?
                .with_recency(half_life(a.recency_half_life)?, a.reference_date)
                .with_expand(a.expand.unwrap_or(0));
            let found = service
                .recall(
                    &a.query,
                    clamp_limit(a.limit),
                    a.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
                    &read,
                )
                .map_err(failed)?;
            Ok(recall_answer(&a.query, &found))
        }),
        "memory_history" => parse(arguments).and_then(|a: History| {
            let read = read_options(a.as_of, a.filter)?;
            let versions = service.history(&a.subject, &read).map_err(failed)?;
            Ok(history_answer(&a.subject, &versions))
        }),
        "memory_neighbours" => parse(arguments).and_then(|a: NeighboursArgs| {
            let read = read_options(a.as_of, a.filter)?;
            let limit = a
                .limit
                .unwrap_or(DEFAULT_NEIGHBOURS)
                .clamp(1, MAX_SEARCH_LIMIT);
            let found = service
                .neighbours(&a.entity, a.depth.unwrap_or(1), limit, &read)
                .map_err(failed)?;
            Ok(json!({"entity": a.entity, "neighbours": found}))
        }),
        "memory_format" => parse(arguments).and_then(|a: Format| {
            let read = read_options(a.as_of, a.filter)?;
            let text = service
                .format(a.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS), &read)
                .map_err(failed)?;
            Ok(json!({"text": text}))
        }),
        "memory_archive" => parse(arguments).and_then(|a| archive(service, policy, a)),
        "memory_backfill" => parse(arguments).and_then(|a| backfill(service, policy, a)),
        "memory_context" => parse(arguments).and_then(|_: NoArgs| {
            let context = service.context().map_err(failed)?;
            Ok(json!(context))
        }),
        "memory_set_context" => parse(arguments).and_then(|a| set_context(service, a)),
        "memory_aliases" => parse(arguments).and_then(|_: NoArgs| {
            let aliases = service.aliases().map_err(failed)?;
            Ok(aliases_answer(&aliases))
        }),
        "memory_alias" => parse(arguments).and_then(|a: SetAlias| {
            let outcome = service.set_alias(&a.alias, &a.entity).map_err(failed)?;
            Ok(json!(outcome))
        }),
        "memory_unalias" => parse(arguments).and_then(|a: Unalias| {
            let removed = service.remove_alias(&a.alias).map_err(failed)?;
            if !removed {
                return Err(failed(MemoryError::NotFound {
                    id: fact_model::clip(&a.alias, 64).into_owned(),
                }));
            }
            Ok(json!({"removed": fact_model::normalize_entity(&a.alias)}))
        }),
        "memory_forget" => parse(arguments).and_then(|a| forget(service, a)),
        "memory_erase_scope" => parse(arguments).and_then(|a| erase_scope(service, policy, a)),
        "memory_export" => parse(arguments).and_then(|a| export(service, policy, a)),
        _ => return None,
    };
    Some(match answer {
        Ok(body) => ok(body),
        Err(error) => error,
    })
}

/// The names of the memory tools, in the order [`tools`] lists them.
pub const TOOL_NAMES: &[&str] = &[
    "memory_add",
    "memory_add_many",
    "memory_get",
    "memory_list",
    "memory_update",
    "memory_delete",
    "memory_search",
    "memory_search_many",
    "memory_recall",
    "memory_history",
    "memory_neighbours",
    "memory_format",
    "memory_archive",
    "memory_backfill",
    "memory_context",
    "memory_set_context",
    "memory_aliases",
    "memory_alias",
    "memory_unalias",
    "memory_forget",
    "memory_erase_scope",
    "memory_export",
];

/// Every error code a memory tool answers besides the store's own, which it answers as
/// they are ([`fact_store::StoreError::code`]: `io`, `busy`, `corrupt`, …).
pub const ERROR_CODES: &[&str] = &[
    code::INVALID_REQUEST,
    LLM_CMD_NOT_ALLOWED,
    WRONG_SCOPE,
    "not_found",
    "invalid_id",
    "invalid_fact",
    "invalid_filter",
    "invalid_metadata",
    "invalid_depth",
    "invalid_expand",
    "no_extractor",
    "extraction_failed",
    "empty_transcript",
    "transcript_too_large",
    "invalid_timestamp",
    "future_timestamp",
    "alias_cycle",
    "invalid_alias",
    "duplicate_statement",
    "invalid_update",
];

/// A filter argument: the JSON shape, or the readable form as a string.
///
/// # Errors
///
/// [`MemoryError::InvalidFilter`], naming where in the filter.
pub fn filter_of(value: &Value) -> Result<Filter, MemoryError> {
    Ok(match value {
        Value::String(text) => Filter::parse_where(text)?,
        other => Filter::from_json(other)?,
    })
}

/// The read options of `as_of` and a `filter` argument, or the `invalid_filter` failure.
fn read_options(as_of: Option<Timestamp>, filter: Option<Value>) -> Result<ReadOptions, Value> {
    let filter = filter.as_ref().map(filter_of).transpose().map_err(failed)?;
    Ok(ReadOptions::as_of(as_of).with_filter(filter))
}

/// A `recency_half_life` argument (`30d`), or the `invalid_request` failure.
fn half_life(text: Option<String>) -> Result<Option<Duration>, Value> {
    text.map(|text| {
        fact_model::parse_duration(&text)
            .map_err(|e| protocol::error(code::INVALID_REQUEST, format!("recency_half_life: {e}")))
    })
    .transpose()
}

/// A metadata argument, or the `invalid_metadata` failure.
fn metadata_of(value: &Value) -> Result<Metadata, Value> {
    Metadata::from_json(value).map_err(|e| failed(MemoryError::InvalidMetadata(e)))
}

fn clamp_limit(limit: Option<usize>) -> usize {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_SEARCH_LIMIT)
}

fn add(service: &MemoryService, policy: &Policy, add: Add) -> Result<Value, Value> {
    let new = new_memory(policy, add)?;
    service.add(new).map(|o| add_answer(&o)).map_err(failed)
}

/// The fact a `memory_add` (or one of a `memory_add_many`) describes.
fn new_memory(policy: &Policy, add: Add) -> Result<NewMemory, Value> {
    let mut new = NewMemory::new(add.subject, add.relation, add.object)
        .with_category(add.category.unwrap_or(Tag::Knowledge))
        .with_confidence(add.confidence.unwrap_or(1.0))
        .with_source(policy.source);
    new.statement = add.statement;
    new.valid_from = add.valid_from;
    if let Some(metadata) = add.metadata {
        new.metadata = metadata_of(&metadata)?;
    }
    Ok(new)
}

fn add_many(service: &MemoryService, policy: &Policy, batch: AddMany) -> Result<Value, Value> {
    if batch.facts.len() > MAX_BATCH {
        return Err(too_many("facts", batch.facts.len()));
    }
    let news = batch
        .facts
        .into_iter()
        .map(|add| new_memory(policy, add))
        .collect::<Result<Vec<_>, _>>()?;
    let outcomes = service.add_many(news).map_err(failed)?;
    let results: Vec<Value> = outcomes.iter().map(add_answer).collect();
    Ok(json!({"results": results}))
}

/// The `invalid_request` of a batch over [`MAX_BATCH`].
fn too_many(field: &str, count: usize) -> Value {
    protocol::error(
        code::INVALID_REQUEST,
        format!("{field}: {count} items, more than the {MAX_BATCH} one call takes"),
    )
}

fn update(service: &MemoryService, update: Update) -> Result<Value, Value> {
    let before = service.get(&update.id).map_err(failed)?;
    let change = MemoryChange {
        statement: update.statement,
        object: update.object,
        category: update.category,
        confidence: update.confidence,
        metadata: update.metadata.as_ref().map(metadata_of).transpose()?,
    };
    let fact = service.update(&update.id, change).map_err(failed)?;
    let superseded = (fact.id() != before.id()).then(|| before.id());
    Ok(json!({"fact": fact, "superseded": superseded}))
}

/// The extractor a call names, when the policy allows it.
fn named_extractor(
    service: &MemoryService,
    policy: &Policy,
    cmd: Option<String>,
    timeout_secs: Option<u64>,
) -> Result<Option<LlmFactExtractor>, Value> {
    match cmd {
        None => Ok(None),
        Some(_) if !policy.allow_llm_cmd => Err(protocol::error(
            LLM_CMD_NOT_ALLOWED,
            "this server runs no command a client names: start it with --allow-llm-cmd to \
             accept llm_cmd, or archive without llm_cmd and extract later with `facts mem \
             backfill --llm-cmd CMD`",
        )),
        Some(cmd) => Ok(Some(command_extractor(
            cmd,
            Duration::from_secs(timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1)),
            service.clock().clone(),
        ))),
    }
}

fn archive(service: &MemoryService, policy: &Policy, archive: Archive) -> Result<Value, Value> {
    let extractor = named_extractor(service, policy, archive.llm_cmd, archive.timeout_secs)?;
    let mut request = ArchiveRequest::new(&archive.transcript)
        .with_session_time(archive.session_time)
        .with_extractor(extractor.as_ref().map(|e| e as _));
    if let Some(metadata) = &archive.metadata {
        request = request.with_metadata(metadata_of(metadata)?);
    }
    if let Some(title) = archive.title.as_deref() {
        request = request.with_title(title);
    }
    let report = service.archive(request).map_err(failed)?;
    Ok(json!(report))
}

fn backfill(service: &MemoryService, policy: &Policy, backfill: Backfill) -> Result<Value, Value> {
    let Some(extractor) = named_extractor(
        service,
        policy,
        Some(backfill.llm_cmd),
        backfill.timeout_secs,
    )?
    else {
        return Err(failed(MemoryError::NoExtractor));
    };
    let reports = service
        .backfill(&extractor, &mut |_, _| {})
        .map_err(failed)?;
    Ok(json!({"episodes": reports}))
}

fn set_context(service: &MemoryService, set: SetContext) -> Result<Value, Value> {
    let fields: Vec<(ProfileField, String)> = [
        (ProfileField::Work, set.work),
        (ProfileField::Personal, set.personal),
        (ProfileField::TopOfMind, set.top_of_mind),
        (ProfileField::RecentMonths, set.recent_months),
        (ProfileField::EarlierContext, set.earlier_context),
        (ProfileField::LongTermBackground, set.long_term_background),
    ]
    .into_iter()
    .filter_map(|(field, text)| text.map(|text| (field, text)))
    .collect();
    if fields.is_empty() {
        return Err(protocol::error(
            code::INVALID_REQUEST,
            "memory_set_context needs at least one field to set",
        ));
    }
    let changed = service.set_context(fields).map_err(failed)?;
    Ok(json!({"changed": changed}))
}

/// `memory_erase_scope`: the call must name the scope the service holds, so that no
/// caller erases a memory by mistake or another tenant's.
fn erase_scope(
    service: &MemoryService,
    policy: &Policy,
    erase: EraseScope,
) -> Result<Value, Value> {
    let Some(scope) = &policy.scope else {
        return Err(protocol::error(
            WRONG_SCOPE,
            "this server names no scope, so memory_erase_scope erases nothing here",
        ));
    };
    if erase.scope != *scope {
        return Err(protocol::error(
            WRONG_SCOPE,
            format!(
                "memory_erase_scope erases only the scope this connection holds, {scope:?}; \
                 {:?} is not it",
                fact_model::clip(&erase.scope, 200)
            ),
        ));
    }
    let erased = service.erase().map_err(failed)?;
    Ok(json!({"scope": scope, "erased": erased}))
}

/// `memory_export`: lines `offset..offset + limit` of the scope's export. Each page is
/// read from a fresh export, so a client that joins the pages gets a file whose end record
/// checks it: a memory that changed between two pages makes a file every import refuses
/// (the client exports again), never a wrong one.
fn export(service: &MemoryService, policy: &Policy, request: Export) -> Result<Value, Value> {
    let offset = request.offset.unwrap_or(0);
    let limit = request.limit.unwrap_or(MAX_EXPORT_PAGE);
    if limit == 0 || limit > MAX_EXPORT_PAGE {
        return Err(protocol::error(
            code::INVALID_REQUEST,
            format!("limit: {limit} lines is not within 1 to {MAX_EXPORT_PAGE}"),
        ));
    }
    let mut page = Page {
        from: offset,
        to: offset.saturating_add(limit),
        line: 0,
        text: Vec::new(),
    };
    let mut options = fact_store::ExportOptions::default();
    options.as_of = request.as_of;
    let scope = policy.scope.as_deref().unwrap_or("default");
    let end = service.export(scope, &options, &mut page).map_err(failed)?;
    let total = end.records + 2;
    let text = String::from_utf8(page.text).map_err(|e| {
        failed(MemoryError::Store(fact_store::StoreError::Backend {
            message: format!("an export that is not UTF-8: {e}"),
        }))
    })?;
    let next = (page.to < total).then_some(page.to);
    Ok(json!({
        "lines": text,
        "offset": offset,
        "next_offset": next,
        "total_lines": total,
    }))
}

/// The most lines one `memory_export` page holds.
pub const MAX_EXPORT_PAGE: u64 = 10_000;

/// Keeps the lines `from..to` of what is written to it (an export, whose writer writes one
/// whole line at a time).
struct Page {
    from: u64,
    to: u64,
    /// The number of the line the next byte belongs to, from 0.
    line: u64,
    text: Vec<u8>,
}

impl std::io::Write for Page {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        for chunk in bytes.split_inclusive(|&b| b == b'\n') {
            if (self.from..self.to).contains(&self.line) {
                self.text.extend_from_slice(chunk);
            }
            if chunk.ends_with(b"\n") {
                self.line += 1;
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn forget(service: &MemoryService, forget: Forget) -> Result<Value, Value> {
    let report = match (forget.episode, forget.subject) {
        (Some(episode), None) => service.forget_episode(&episode),
        (None, Some(subject)) => service.forget_subject(&subject),
        _ => {
            return Err(protocol::error(
                code::INVALID_REQUEST,
                "memory_forget needs exactly one of `episode` and `subject`",
            ));
        }
    }
    .map_err(failed)?;
    Ok(json!(report))
}

/// What happened to the one fact of an `add`: `added`, `already_current`,
/// `arrived_superseded`, `duplicate` (with the current fact that holds the statement) or
/// `skipped`.
#[must_use]
pub fn add_status(outcome: &AddOutcome) -> (&'static str, Option<FactId>) {
    let id = outcome.fact.id();
    let report = &outcome.report;
    if report.added.contains(&id) {
        ("added", None)
    } else if report.refreshed.contains(&id) {
        ("already_current", None)
    } else if report.arrived_superseded.contains(&id) {
        ("arrived_superseded", None)
    } else {
        match report
            .skipped
            .iter()
            .find(|s| s.id == id)
            .map(|s| &s.reason)
        {
            Some(SkipReason::DuplicateStatement { existing }) => ("duplicate", Some(*existing)),
            _ => ("skipped", None),
        }
    }
}

/// An `add`: `{"status", "id", "existing_id", "superseded", "fact"}`.
#[must_use]
pub fn add_answer(outcome: &AddOutcome) -> Value {
    let (status, existing) = add_status(outcome);
    json!({
        "status": status,
        "id": outcome.fact.id(),
        "existing_id": existing,
        "superseded": outcome.report.invalidated,
        "fact": outcome.fact,
    })
}

/// Facts with their search scores, best first: `[{"score", "fact"}]`.
#[must_use]
pub fn scored(found: &[ScoredFact]) -> Value {
    found
        .iter()
        .map(|s| json!({"score": s.score, "fact": s.fact}))
        .collect()
}

/// A recall: `{"query", "text", "tokens", "facts", "expanded", "episodes"}`; `expanded`
/// the neighbours an `expand` added (`{"score", "via", "fact"}`), each episode with the
/// messages that answered (`{"turn", "role", "content", "timestamp", "score"}`).
#[must_use]
pub fn recall_answer(query: &str, recall: &Recall) -> Value {
    let episodes: Vec<Value> = recall
        .episodes
        .iter()
        .map(|e| {
            let messages: Vec<Value> = e
                .messages
                .iter()
                .map(|hit| {
                    json!({
                        "turn": hit.turn,
                        "role": hit.message.role,
                        "content": hit.message.content,
                        "timestamp": hit.message.timestamp,
                        "score": hit.score,
                    })
                })
                .collect();
            json!({
                "id": e.id,
                "title": e.title,
                "at": e.at,
                "summary": e.summary,
                "messages": messages,
            })
        })
        .collect();
    json!({
        "query": query,
        "text": recall.text,
        "tokens": recall.tokens,
        "facts": scored(&recall.facts),
        "expanded": recall.expanded,
        "episodes": episodes,
    })
}

/// Every version of a subject's facts: `{"subject", "versions"}`.
#[must_use]
pub fn history_answer(subject: &str, versions: &[SessionFact]) -> Value {
    json!({"subject": subject, "versions": versions})
}

/// The alias table: `{"aliases": [{"alias", "entity", "at"}]}`.
#[must_use]
pub fn aliases_answer(aliases: &[Alias]) -> Value {
    json!({"aliases": aliases})
}

/// The arguments of a call, or an `invalid_request` answer.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, Value> {
    let arguments = match arguments {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    serde_json::from_value(arguments)
        .map_err(|e| protocol::error(code::INVALID_REQUEST, e.to_string()))
}

/// `{"ok": true}` merged with `body`'s fields.
fn ok(body: Value) -> Value {
    let mut object = Map::new();
    object.insert("ok".into(), Value::Bool(true));
    if let Value::Object(fields) = body {
        object.extend(fields);
    }
    Value::Object(object)
}

/// A memory error as a failure carrying its code.
fn failed(error: MemoryError) -> Value {
    protocol::error(error.code(), error.to_string())
}

#[cfg(feature = "schema")]
pub use self::schema::{MemoryTool, tools};

mod requests;
#[cfg(feature = "schema")]
mod schema;

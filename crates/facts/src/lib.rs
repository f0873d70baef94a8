//! `facts`: the command line on top of the dispatch runtime. `main.rs` only calls `run`;
//! the code is here, in the package's library, so that the fuzz target (`fuzz/`) can reach
//! the MCP server's handler (`serve_mcp_io`). This library is not an API: nothing in it is
//! stable, and other crates should depend on `dispatch-runtime` instead.
//!
//! - `facts demo` runs a built-in session and shows what the memory did (`demo.rs`);
//! - `facts replay SCRIPT.jsonl` (or `-`, stdin) answers the runtime's JSON protocol, one
//!   response line per request line (`replay.rs`);
//! - `facts mcp` serves the same protocol to MCP clients over stdio, one tool per action
//!   (with `--db` or `$FACTMEM_DATABASE_URL`, on durable stores, plus the memory tools);
//! - `facts mem` is long-term memory: facts, search, recall, archived conversations;
//! - `facts ledger PATH` shows the progress ledger of a tasks.md (`ledger.rs`);
//! - `facts schema [ACTION]` prints the protocol's JSON Schemas (`schema.rs`);
//! - `facts completions SHELL` and `facts man --out DIR` generate shell completions and
//!   man pages (`generate.rs`).
//!
//! Every subcommand shares one table of exit codes (`EXIT_CODES`: 0 ok, 1 a request or
//! operation failed, 2 usage or unreadable input, 3 not found) and the global
//! `--log-level` option (`logging.rs`); logs go to stderr, never to stdout.
//!
//! `--db` of `facts mem` and `facts mcp` names the database: the path of a SQLite file, or
//! a `postgres://` (`postgresql://`) URL of a PostgreSQL server that many processes share
//! ([`durable::Database`]); `$FACTMEM_DATABASE_URL` stands in for a missing `--db`. The
//! commands and tools work the same on either.
//!
//! `--embedder DIR` of `facts mem` and `facts mcp` (else `$FACTMEM_EMBEDDER`) names a local
//! sentence-embedding model that makes recall semantic (feature `onnx`, on by default; see
//! `mem.rs`). `facts mcp` loads it once at start, and only with a database: the memory
//! tools are what it serves.

mod demo;
mod generate;
mod ledger;
mod logging;
mod mcp;
mod mem;
mod replay;
mod schema;

#[doc(hidden)]
pub use mcp::serve_io as serve_mcp_io;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use dispatch_runtime::durable::Database;
use dispatch_runtime::reexports::{CharsPerToken, Clock, StoreConfig, SystemClock, TokenCounter};
use dispatch_runtime::{DispatchRuntimeManager, MemoryError, durable};

/// The environment variable that names the database when `--db` is not given: a SQLite
/// path or a PostgreSQL URL (for `facts mem`, before `$FACTMEM_DB`).
pub(crate) const DATABASE_URL_ENV: &str = "FACTMEM_DATABASE_URL";

/// The environment variable that names the sentence-embedding model directory when
/// `--embedder` is not given.
pub(crate) const EMBEDDER_ENV: &str = "FACTMEM_EMBEDDER";

/// The parser of `--db`: a `postgres://` or `postgresql://` URL, else a SQLite path (kept
/// as given, UTF-8 or not).
pub(crate) fn database_parser() -> impl TypedValueParser<Value = Database> {
    OsStringValueParser::new().try_map(|value: OsString| Database::parse_os(&value))
}

/// The exit codes of every subcommand, for the top-level `--help`.
const EXIT_CODES: &str = "\
Exit codes, the same for every subcommand:
  0  success
  1  a request or operation failed (replay: a request; mem, mcp: the store or model)
  2  usage error or unreadable input (arguments, a script, a tasks.md, --project)
  3  not found (mem: a fact id; schema: an action name)

Logs go to stderr, never stdout: --log-level, else RUST_LOG, else warnings only.";

/// What `facts mcp --help` adds after the options (set in [`command`], so the variant's own
/// definition stays as it is).
const MCP_AFTER_HELP: &str = "\
The protocol the tools speak (actions, fields, error codes): docs/protocol.md; `facts schema`
prints every tool's JSON Schemas. The tasks.md format `init_run` reads: docs/spec-format.md.

A database is a SQLite file (created, with its directory, if needed) or a PostgreSQL server
named by a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE), which any number of
servers on any machines may share; messages never show the password.

With --db and --embedder DIR (or $FACTMEM_EMBEDDER), memory_recall finds facts by meaning as
well as by words: the model is loaded once at start, the facts stored without it are embedded
then, and memory_add and memory_archive embed the facts they store. DIR holds model.onnx,
tokenizer.json and the ONNX Runtime library; `.ci/models DIR` in the factmem repository
assembles it. A model that cannot be loaded stops the server: recall never falls back to words
alone without saying so.

Exit codes:
  0  the server stopped normally (over stdio: the client disconnected)
  1  the server failed, the database could not be opened (unreachable, refused), or the
     embedding model could not be loaded
  2  usage error, a --project that is not a directory, a tokenizer this build lacks, an
     --embedder directory (or a file in it) that is missing, --embedder without --db";

/// What `facts mem --help` adds after the options.
const MEM_AFTER_HELP: &str = "\
The database: --db, else $FACTMEM_DATABASE_URL, else $FACTMEM_DB, else
$XDG_DATA_HOME/factmem/memory.db, else ~/.local/share/factmem/memory.db. Each is a SQLite
file (its directory is created) or a PostgreSQL server named by a postgres:// URL
(postgres://USER:PASSWORD@HOST:PORT/DATABASE); messages never show the password.

Semantic recall: --embedder DIR (or $FACTMEM_EMBEDDER) names a local sentence-embedding model.
With it, add, update, and archive and backfill with --llm-cmd embed the facts they store, and
`recall --hybrid` ranks by meaning as well as by words (facts stored without the model are
embedded first). DIR holds model.onnx, tokenizer.json and the ONNX Runtime library; `.ci/models
DIR` in the factmem repository assembles it. Other subcommands do not load the model.

Exit codes:
  0  success
  1  a store or model failure (the message names its code: `store error (busy): …`,
     `embedding error (inference): …`), or a database that cannot be opened (`store error
     (io): …` for an unreachable server)
  2  usage error or invalid input (bad arguments, an unreadable, oversized or wrongly dated
     transcript, an alias cycle, no database path, --hybrid without --embedder, an
     --embedder directory that is missing)
  3  an unknown fact id, episode, subject or alias";

/// A temporal fact memory for agent orchestrators.
#[derive(Debug, Parser)]
#[command(name = "facts", version, about, after_help = EXIT_CODES)]
struct Cli {
    /// How much to log on stderr (wins over RUST_LOG; default: warnings only).
    #[arg(long, global = true, value_enum, value_name = "LEVEL")]
    log_level: Option<logging::LogLevel>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a built-in dispatch session and show what each prompt received.
    Demo,
    /// Answer the runtime's JSON protocol: one response line per request line.
    Replay(replay::ReplayArgs),
    /// Serve the runtime's protocol to MCP clients over stdio (or streamable HTTP with
    /// --http), one tool per action.
    Mcp {
        /// The project root for `init_run` calls that name none.
        #[arg(long)]
        project: Option<PathBuf>,
        /// How tokens are counted.
        #[arg(long, value_enum, default_value_t = Tokenizer::Chars4)]
        tokenizer: Tokenizer,
        /// Keep every spec's facts in this database, a SQLite path or a postgres:// URL (so
        /// a restarted server, or any server on the same PostgreSQL database, serves them)
        /// and serve the memory tools over it. Without it, facts live as long as the server.
        #[arg(long, value_name = "PATH|URL", env = DATABASE_URL_ENV, hide_env_values = true,
              value_parser = database_parser())]
        db: Option<Database>,
        /// The scope of the memory tools.
        #[arg(long, requires = "db", default_value = "default")]
        scope: String,
        /// Let `memory_archive` run the model command a client names in `llm_cmd`.
        #[arg(long, requires = "db")]
        allow_llm_cmd: bool,
        /// With --db: a local sentence-embedding model (a directory with model.onnx,
        /// tokenizer.json and the ONNX Runtime library), loaded once at start, so
        /// memory_recall finds facts by meaning as well as by words. From the environment
        /// alone, ignored without a database.
        #[arg(long, value_name = "DIR", env = EMBEDDER_ENV, hide_env_values = true)]
        embedder: Option<PathBuf>,
        /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio, for any
        /// number of clients sharing one runtime: IP:PORT, localhost:PORT or PORT (port 0
        /// picks a free one). The URL is printed on stderr at start.
        #[arg(long, value_name = "ADDR", value_parser = mcp::parse_address)]
        http: Option<std::net::SocketAddr>,
        /// Let --http listen on an address that is not loopback (the server has no
        /// authentication: whoever reaches it reads and changes its facts).
        #[arg(long, requires = "http", conflicts_with = "allow_llm_cmd")]
        allow_remote: bool,
    },
    /// Long-term memory: remember, search and recall facts, archive conversations.
    Mem(mem::MemArgs),
    /// Show the progress ledger of a tasks.md.
    Ledger(ledger::LedgerArgs),
    /// Print the JSON Schemas of the protocol's actions (requests and responses).
    #[command(after_help = schema::AFTER_HELP)]
    Schema {
        /// Only this action (`init_run`, `compile_prompt`, …).
        action: Option<String>,
    },
    /// Print a shell completion script: `facts completions bash > /etc/bash_completion.d/facts`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages, one per command (`facts.1`, `facts-replay.1`, …).
    Man {
        /// The directory to write them to (created if needed).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// Token counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Tokenizer {
    /// Four characters per token.
    Chars4,
    /// The o200k_base BPE (needs the `tiktoken` feature).
    O200k,
    /// The cl100k_base BPE (needs the `tiktoken` feature).
    Cl100k,
}

fn counter(tokenizer: Tokenizer) -> Result<Arc<dyn TokenCounter>, String> {
    match tokenizer {
        Tokenizer::Chars4 => Ok(Arc::new(CharsPerToken::default())),
        #[cfg(feature = "tiktoken")]
        Tokenizer::O200k => dispatch_runtime::reexports::BpeTokenCounter::o200k_base()
            .map(|c| Arc::new(c) as Arc<dyn TokenCounter>)
            .map_err(|e| e.to_string()),
        #[cfg(feature = "tiktoken")]
        Tokenizer::Cl100k => dispatch_runtime::reexports::BpeTokenCounter::cl100k_base()
            .map(|c| Arc::new(c) as Arc<dyn TokenCounter>)
            .map_err(|e| e.to_string()),
        #[cfg(not(feature = "tiktoken"))]
        Tokenizer::O200k | Tokenizer::Cl100k => Err(
            "BPE tokenizers need the `tiktoken` feature; install a build with it: \
             cargo install --path crates/facts --features tiktoken"
                .to_owned(),
        ),
    }
}

/// The command line as clap sees it: the derived definition plus what is added here.
pub(crate) fn command() -> clap::Command {
    Cli::command()
        .mut_subcommand("mcp", |mcp| mcp.after_help(MCP_AFTER_HELP))
        .mut_subcommand("mem", |mem| mem.after_help(MEM_AFTER_HELP))
}

/// Runs the `facts` command line (`std::env::args`) to its exit code: `main` of the binary.
#[doc(hidden)]
pub fn run() -> ExitCode {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Whether `facts mcp --embedder` was typed, not only set in the environment.
    let embedder_typed = matches
        .subcommand_matches("mcp")
        .and_then(|mcp| mcp.value_source("embedder"))
        == Some(ValueSource::CommandLine);
    logging::init(cli.log_level);
    let result = match cli.command {
        Command::Demo => demo::run().map_err(Failure::failed),
        Command::Replay(args) => replay::run(args),
        Command::Mcp {
            project,
            tokenizer,
            db,
            scope,
            allow_llm_cmd,
            embedder,
            http,
            allow_remote,
        } => serve_mcp(
            project,
            tokenizer,
            McpMemory {
                db: db.as_ref(),
                scope: &scope,
                allow_llm_cmd,
                embedder: embedder.map(|dir| (dir, embedder_typed)),
            },
            (http, allow_remote),
        ),
        Command::Mem(args) => mem::run(args, Arc::new(SystemClock)),
        Command::Ledger(args) => ledger::run(&args),
        Command::Schema { action } => schema::run(action.as_deref()),
        Command::Completions { shell } => generate::completions(shell),
        Command::Man { out } => generate::man(&out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("facts: {}", failure.message);
            ExitCode::from(failure.exit)
        }
    }
}

/// Why a command failed: the message for stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    message: String,
    exit: u8,
}

/// The exit code of a failed request or operation.
pub(crate) const EXIT_FAILED: u8 = 1;
/// The exit code of a usage error or unreadable input.
pub(crate) const EXIT_USAGE: u8 = 2;
/// The exit code of something looked up by name or id that does not exist.
pub(crate) const EXIT_NOT_FOUND: u8 = 3;

impl Failure {
    /// A request or operation failed: exit code 1.
    pub(crate) fn failed(message: String) -> Failure {
        Failure {
            message,
            exit: EXIT_FAILED,
        }
    }

    /// A usage error or unreadable input: exit code 2.
    pub(crate) fn usage(message: String) -> Failure {
        Failure {
            message,
            exit: EXIT_USAGE,
        }
    }

    /// Not found: exit code 3.
    pub(crate) fn not_found(message: String) -> Failure {
        Failure {
            message,
            exit: EXIT_NOT_FOUND,
        }
    }
}

/// A failure of a command that knows only usage errors: exit code 2.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::usage(message)
    }
}

/// Checks a `--project` at start: it must exist and be a directory (a usage error, exit
/// code 2, otherwise), so a typo fails before the first request rather than at `init_run`.
pub(crate) fn check_project(project: &Path) -> Result<(), Failure> {
    match std::fs::metadata(project) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(Failure::usage(format!(
            "--project {}: not a directory",
            project.display()
        ))),
        Err(e) => Err(Failure::usage(format!(
            "--project {}: {e}",
            project.display()
        ))),
    }
}

/// The options of `facts mcp` about the memory tools.
#[derive(Debug)]
struct McpMemory<'a> {
    /// `--db`: the database, when the memory tools are served.
    db: Option<&'a Database>,
    /// `--scope`.
    scope: &'a str,
    /// `--allow-llm-cmd`.
    allow_llm_cmd: bool,
    /// `--embedder`, and whether it was typed (rather than set in the environment).
    embedder: Option<(PathBuf, bool)>,
}

/// `facts mcp`: without a database, the runtime in memory; with one, the spec stores and
/// the memory tools on it, semantic with an embedding model. `http` is `--http` and
/// `--allow-remote`: without an address, stdio.
fn serve_mcp(
    project: Option<PathBuf>,
    tokenizer: Tokenizer,
    options: McpMemory<'_>,
    http: (Option<std::net::SocketAddr>, bool),
) -> Result<(), Failure> {
    let McpMemory {
        db,
        scope,
        allow_llm_cmd,
        embedder,
    } = options;
    let embedder = match (embedder, db) {
        (Some((dir, true)), None) => {
            return Err(Failure::usage(format!(
                "--embedder {} needs --db: the model serves the memory tools, which keep \
                 their facts in a database (give --db PATH|URL or set {DATABASE_URL_ENV})",
                dir.display()
            )));
        }
        // From the environment alone, without a database: nothing to embed into.
        (Some((dir, false)), None) => {
            tracing::debug!(
                "{EMBEDDER_ENV}={} ignored: no database, so no memory tools",
                dir.display()
            );
            None
        }
        (embedder, _) => embedder.map(|(dir, _)| dir),
    };
    let transport = match http {
        (Some(address), allow_remote) => {
            mcp::check_address(address, allow_remote)?;
            mcp::Transport::Http(address)
        }
        (None, _) => mcp::Transport::Stdio,
    };
    let counter = counter(tokenizer)?;
    let mut builder = DispatchRuntimeManager::builder().token_counter(counter.clone());
    if let Some(project) = project {
        check_project(&project)?;
        builder = builder.project_root(project);
    }
    let Some(database) = db else {
        return Ok(mcp::serve(builder.build(), None, transport)?);
    };
    create_parent(database).map_err(Failure::failed)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let memory = durable::open_memory_on(database, scope, clock.clone()).map_err(|e| {
        let error = MemoryError::Store(e);
        Failure {
            message: format!("store error ({}): {error}", error.code()),
            exit: 1,
        }
    })?;
    let runtime = builder
        .clock(clock.clone())
        .stores(durable::stores(database, StoreConfig::default()))
        .build();
    let mut memory = memory.with_counter(counter);
    if let Some(dir) = embedder {
        // Once, at start: a model that cannot be loaded stops the server.
        memory = mem::with_embedder(memory, &dir)?;
    }
    let memory = mcp::Memory::new(memory, allow_llm_cmd);
    Ok(mcp::serve(runtime, Some(memory), transport)?)
}

/// Creates the directory of a SQLite database if needed (a server needs nothing); the
/// message says what could not be created.
pub(crate) fn create_parent(database: &Database) -> Result<(), String> {
    if let Database::Sqlite(path) = database
        && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    Ok(())
}

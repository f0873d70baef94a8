//! `facts`: the command line on top of the dispatch runtime.
//!
//! - `facts demo` runs a built-in session and shows what the memory did;
//! - `facts replay SCRIPT.jsonl` answers the runtime's JSON protocol, one line per line;
//! - `facts mcp` serves the same protocol to MCP clients over stdio, one tool per action
//!   (with `--db`, on SQLite stores, plus the memory tools);
//! - `facts mem` is long-term memory: facts, search, recall, archived conversations;
//! - `facts ledger PATH` shows the progress ledger of a tasks.md.

mod demo;
mod mcp;
mod mem;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use dispatch_runtime::reexports::{
    CharsPerToken, Clock, ManualClock, ProgressLedger, StoreConfig, SystemClock, TokenCounter,
};
use dispatch_runtime::{DispatchRuntimeManager, MemoryError, durable, protocol};
use serde_json::Value;

/// A temporal fact memory for agent orchestrators.
#[derive(Debug, Parser)]
#[command(name = "facts", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a built-in dispatch session and show what each prompt received.
    Demo,
    /// Answer the runtime's JSON protocol: one response line per request line.
    Replay {
        /// The script: one JSON request per line (`{"action": "init_run", …}`).
        script: PathBuf,
        /// The project root for `init_run` requests that name none.
        #[arg(long)]
        project: Option<PathBuf>,
        /// Start the clock at 2026-01-01T00:00:00Z and advance it one second per request,
        /// so the output is byte-reproducible.
        #[arg(long)]
        deterministic: bool,
        /// How tokens are counted.
        #[arg(long, value_enum, default_value_t = Tokenizer::Chars4)]
        tokenizer: Tokenizer,
    },
    /// Serve the runtime's protocol over stdio to an MCP client, one tool per action.
    Mcp {
        /// The project root for `init_run` calls that name none.
        #[arg(long)]
        project: Option<PathBuf>,
        /// How tokens are counted.
        #[arg(long, value_enum, default_value_t = Tokenizer::Chars4)]
        tokenizer: Tokenizer,
        /// Keep every spec's facts in this SQLite database (so a restarted server serves
        /// them) and serve the memory tools over it. Without it, facts live as long as
        /// the server.
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// The scope of the memory tools.
        #[arg(long, requires = "db", default_value = "default")]
        scope: String,
        /// Let `memory_archive` run the model command a client names in `llm_cmd`.
        #[arg(long, requires = "db")]
        allow_llm_cmd: bool,
    },
    /// Long-term memory: remember, search and recall facts, archive conversations.
    Mem(mem::MemArgs),
    /// Show the progress ledger of a tasks.md.
    Ledger {
        /// The tasks.md file.
        path: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
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
            "BPE tokenizers need the `tiktoken` feature: cargo install --features tiktoken"
                .to_owned(),
        ),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo => demo::run().map_err(Failure::from),
        Command::Replay {
            script,
            project,
            deterministic,
            tokenizer,
        } => replay(&script, project, deterministic, tokenizer).map_err(Failure::from),
        Command::Mcp {
            project,
            tokenizer,
            db,
            scope,
            allow_llm_cmd,
        } => serve_mcp(project, tokenizer, db.as_deref(), &scope, allow_llm_cmd),
        Command::Mem(args) => mem::run(args, Arc::new(SystemClock)),
        Command::Ledger { path, json } => ledger(&path, json).map_err(Failure::from),
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

/// A failure of a command that knows only usage errors: exit code 2.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure { message, exit: 2 }
    }
}

/// `facts mcp`: without a database, the runtime in memory; with one, the spec stores and
/// the memory tools on it.
fn serve_mcp(
    project: Option<PathBuf>,
    tokenizer: Tokenizer,
    db: Option<&Path>,
    scope: &str,
    allow_llm_cmd: bool,
) -> Result<(), Failure> {
    let counter = counter(tokenizer)?;
    let builder = DispatchRuntimeManager::builder().token_counter(counter.clone());
    let Some(path) = db else {
        return Ok(mcp::serve(builder.build(), project, None)?);
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Failure {
            message: format!("cannot create {}: {e}", parent.display()),
            exit: 1,
        })?;
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let memory = durable::open_memory(path, scope, clock.clone()).map_err(|e| {
        let error = MemoryError::Store(e);
        Failure {
            message: format!("store error ({}): {error}", error.code()),
            exit: 1,
        }
    })?;
    let runtime = builder
        .clock(clock.clone())
        .stores(durable::sqlite_stores(path, StoreConfig::default()))
        .build();
    let memory = mcp::Memory::new(memory.with_counter(counter), clock, allow_llm_cmd);
    Ok(mcp::serve(runtime, project, Some(memory))?)
}

/// The fixed instant a deterministic replay starts at.
const DETERMINISTIC_START: &str = "2026-01-01T00:00:00Z";

fn replay(
    script: &Path,
    project: Option<PathBuf>,
    deterministic: bool,
    tokenizer: Tokenizer,
) -> Result<(), String> {
    let file = std::fs::File::open(script)
        .map_err(|e| format!("cannot read {}: {e}", script.display()))?;
    let manual = deterministic
        .then(|| {
            DETERMINISTIC_START
                .parse()
                .map(|start| Arc::new(ManualClock::new(start)))
        })
        .transpose()
        .map_err(|e| format!("{e}"))?;
    let clock: Arc<dyn Clock> = match &manual {
        Some(manual) => manual.clone(),
        None => Arc::new(SystemClock),
    };
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock)
        .token_counter(counter(tokenizer)?)
        .build();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (index, line) in std::io::BufReader::new(file).split(b'\n').enumerate() {
        let line = line.map_err(|e| format!("cannot read {}: {e}", script.display()))?;
        if line.trim_ascii().is_empty() {
            continue;
        }
        if let Some(manual) = &manual {
            manual.advance(Duration::from_secs(1));
        }
        // JSON is UTF-8: a line that is not is an invalid request, not the end of the script.
        let parsed = std::str::from_utf8(&line)
            .map_err(|e| format!("not UTF-8: {e}"))
            .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| e.to_string()));
        let answer = match parsed {
            Ok(mut request) => {
                if let (Some(project), Some(object)) = (&project, request.as_object_mut())
                    && object.get("action").and_then(Value::as_str) == Some("init_run")
                    && !object.contains_key("project_path")
                {
                    object.insert(
                        "project_path".into(),
                        Value::String(project.display().to_string()),
                    );
                }
                let mut answer = protocol::handle(&runtime, &request);
                name_the_line(&mut answer, index + 1);
                answer
            }
            Err(e) => protocol::error("invalid_json", format!("line {}: {e}", index + 1)),
        };
        writeln!(out, "{answer}").map_err(|e| format!("cannot write: {e}"))?;
    }
    Ok(())
}

/// Prefixes `line N: ` to the message of an error that is about the request line itself (an
/// unknown action, missing or mistyped fields), so a script's author can find it.
fn name_the_line(answer: &mut Value, line: usize) {
    let error = answer.get_mut("error");
    let Some(error) = error.and_then(Value::as_object_mut) else {
        return;
    };
    let about_the_line = matches!(
        error.get("code").and_then(Value::as_str),
        Some("unknown_action" | "invalid_request")
    );
    if let (true, Some(Value::String(message))) = (about_the_line, error.get_mut("message")) {
        *message = format!("line {line}: {message}");
    }
}

fn ledger(path: &Path, json: bool) -> Result<(), String> {
    let spec = path
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "spec".to_owned());
    let ledger = ProgressLedger::load(spec, path).map_err(|e| e.to_string())?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let write = |out: &mut std::io::StdoutLock<'_>, text: String| {
        writeln!(out, "{text}").map_err(|e| format!("cannot write: {e}"))
    };
    if json {
        return write(
            &mut out,
            serde_json::to_string_pretty(&ledger).map_err(|e| e.to_string())?,
        );
    }
    let totals = ledger.totals();
    write(
        &mut out,
        format!(
            "{} ({})",
            ledger.spec_name(),
            ledger.source_path().display()
        ),
    )?;
    write(
        &mut out,
        format!(
            "{} tasks: {} completed, {} in progress, {} pending",
            totals.total, totals.completed, totals.in_progress, totals.pending
        ),
    )?;
    for task in ledger.tasks() {
        let mark = match task.status().as_str() {
            "completed" => "x",
            "in_progress" => "-",
            _ => " ",
        };
        let active = if ledger.active_task().is_some_and(|a| a.id() == task.id()) {
            "  <- active"
        } else {
            ""
        };
        write(
            &mut out,
            format!(
                "{}[{mark}] {} {}{active}",
                "  ".repeat(task.depth()),
                task.id(),
                task.title()
            ),
        )?;
    }
    for diagnostic in ledger.diagnostics() {
        write(
            &mut out,
            format!("line {}: {}", diagnostic.line, diagnostic.message),
        )?;
    }
    Ok(())
}

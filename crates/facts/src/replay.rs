//! `facts replay`: the runtime's JSON protocol over JSON lines, one response line per request
//! line, answered and flushed as each line arrives (so an orchestrator can keep
//! `facts replay -` running as a coprocess on a pipe).
//!
//! Conventions: blank lines and `#` comments get no response (`protocol::handle_line`); a
//! request's `id` is echoed; every failed request's `error` object carries `line`, the
//! 1-based script line. Exit codes: 0 when every request succeeded, 1 when any failed, 2
//! for a usage error or an unreadable script.
//!
//! A line is at most `--max-request-bytes` long (16 MiB by default, the newline not
//! counted): a longer one is answered with `line_too_long` and skipped as it is read
//! (`bounds::read_line`), so a line of any length costs at most the limit in memory.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use dispatch_runtime::reexports::{Clock, ManualClock, SystemClock};
use dispatch_runtime::{DispatchRuntimeManager, protocol};
use serde_json::Value;

use crate::bounds::{self, Line};
use crate::failure::Failure;
use crate::options::{Tokenizer, check_project, counter};

/// What `facts replay --help` adds after the options.
pub(crate) const AFTER_HELP: &str = "\
Conventions:
  - one JSON request per line ({\"action\": NAME, ...fields}), one response line per request,
    in order; each response is written and flushed as soon as its line is read;
  - blank lines and lines starting with `#` are skipped and get no response;
  - a request's optional \"id\" (any JSON value) is echoed in its response;
  - a failed request answers {\"ok\": false, \"error\": {\"code\", \"message\", \"line\"}},
    where \"line\" is the 1-based line of the script;
  - a line longer than --max-request-bytes (16 MiB by default, the newline not counted) is
    answered with the code \"line_too_long\" (and its \"id\", when one is found in it) and
    skipped without being held in memory; the next line is read as usual;
  - SCRIPT `-`, or no SCRIPT when stdin is not a terminal, reads stdin line by line, so an
    orchestrator can keep `facts replay -` running as a coprocess on a pipe.

The protocol (actions, fields, error codes): docs/protocol.md; `facts schema` prints every
action's JSON Schemas. The tasks.md format `init_run` reads: docs/spec-format.md.

Exit codes:
  0  every request succeeded
  1  at least one request failed (its response says why; stderr lists the lines)
  2  usage error, an unreadable script, or a --project that is not a directory";

/// Options of `facts replay`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct ReplayArgs {
    /// The script: one JSON request per line (`{"action": "init_run", …}`); `-` reads
    /// stdin, as does no SCRIPT when stdin is not a terminal.
    script: Option<PathBuf>,
    /// The project root for `init_run` requests that name none (or `null`); checked at
    /// start: it must be a directory.
    #[arg(long)]
    project: Option<PathBuf>,
    /// Byte-reproducible output: the first request sees the clock at 2026-01-01T00:00:01Z,
    /// each next request one second later.
    #[arg(long)]
    deterministic: bool,
    /// How tokens are counted.
    #[arg(long, value_enum, default_value_t = Tokenizer::Chars4)]
    tokenizer: Tokenizer,
    /// The longest line read, the newline not counted: bytes, or a number with KiB, MiB or
    /// GiB (at least 1 KiB). A longer line is answered with `line_too_long` and skipped
    /// without being held in memory.
    #[arg(long, value_name = "BYTES", default_value = bounds::DEFAULT_MAX_REQUEST,
          value_parser = bounds::parse_size)]
    max_request_bytes: usize,
}

/// The instant the first request of a deterministic replay sees.
const DETERMINISTIC_FIRST: &str = "2026-01-01T00:00:01Z";

/// How many failed lines the closing message lists.
const LISTED_FAILURES: usize = 10;

/// Where the requests come from.
enum Script {
    Stdin,
    File(PathBuf),
}

impl Script {
    /// `-` or, without a script, stdin when it is not a terminal; a usage error otherwise.
    fn choose(script: Option<PathBuf>, stdin_is_terminal: bool) -> Result<Script, Failure> {
        match script {
            Some(path) if path.as_os_str() == "-" => Ok(Script::Stdin),
            Some(path) => Ok(Script::File(path)),
            None if !stdin_is_terminal => Ok(Script::Stdin),
            None => Err(Failure::usage(
                "no script: give SCRIPT.jsonl, or `-` (or a pipe) to read requests from stdin; \
                 see `facts replay --help`"
                    .to_owned(),
            )),
        }
    }

    fn name(&self) -> String {
        match self {
            Script::Stdin => "stdin".to_owned(),
            Script::File(path) => path.display().to_string(),
        }
    }

    fn open(&self) -> Result<Box<dyn BufRead>, Failure> {
        match self {
            Script::Stdin => Ok(Box::new(std::io::stdin().lock())),
            Script::File(path) => std::fs::File::open(path)
                .map(|file| Box::new(std::io::BufReader::new(file)) as Box<dyn BufRead>)
                .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display()))),
        }
    }
}

/// Runs `facts replay`.
pub(crate) fn run(args: ReplayArgs) -> Result<(), Failure> {
    if let Some(project) = &args.project {
        check_project(project)?;
    }
    let script = Script::choose(args.script, std::io::stdin().is_terminal())?;
    let counter = counter(args.tokenizer)?;
    let manual = args
        .deterministic
        .then(|| {
            DETERMINISTIC_FIRST
                .parse()
                .map(|first| Arc::new(ManualClock::new(first)))
        })
        .transpose()
        .map_err(|e| Failure::usage(format!("{e}")))?;
    let clock: Arc<dyn Clock> = match &manual {
        Some(manual) => manual.clone(),
        None => Arc::new(SystemClock),
    };
    let mut builder = DispatchRuntimeManager::builder()
        .clock(clock)
        .token_counter(counter);
    if let Some(project) = &args.project {
        builder = builder.project_root(project);
    }
    let runtime = builder.build();
    tracing::info!(
        script = %script.name(),
        project = ?args.project.as_deref().map(Path::display),
        deterministic = args.deterministic,
        max_request_bytes = args.max_request_bytes,
        "replay started"
    );
    let input = script.open()?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let summary = answer_lines(&runtime, input, args.max_request_bytes, &mut out, || {
        if let Some(manual) = &manual {
            manual.advance(Duration::from_secs(1));
        }
    })
    .map_err(|error| match error {
        LoopError::Read(e) => Failure::usage(format!("cannot read {}: {e}", script.name())),
        LoopError::Write(e) => Failure::failed(format!("cannot write: {e}")),
    })?;
    tracing::info!(
        requests = summary.answered,
        failed = summary.failed_lines.len(),
        "replay finished"
    );
    if summary.failed_lines.is_empty() {
        return Ok(());
    }
    let mut listed: Vec<String> = summary
        .failed_lines
        .iter()
        .take(LISTED_FAILURES)
        .map(usize::to_string)
        .collect();
    if summary.failed_lines.len() > LISTED_FAILURES {
        listed.push("…".to_owned());
    }
    Err(Failure::failed(format!(
        "{} of {} requests failed (line {})",
        summary.failed_lines.len(),
        summary.answered,
        listed.join(", ")
    )))
}

/// What a replay did.
struct Summary {
    /// Requests answered.
    answered: usize,
    /// The script lines of the failed requests.
    failed_lines: Vec<usize>,
}

/// Why the loop stopped early.
enum LoopError {
    Read(std::io::Error),
    Write(std::io::Error),
}

/// Answers every line of `input` as it arrives (never reading ahead), writing and flushing
/// each response; `answered` runs after each response, to move a deterministic clock. A
/// line longer than `limit` is answered with `line_too_long`, never held whole.
fn answer_lines(
    runtime: &DispatchRuntimeManager,
    mut input: impl BufRead,
    limit: usize,
    out: &mut impl Write,
    mut answered: impl FnMut(),
) -> Result<Summary, LoopError> {
    let mut summary = Summary {
        answered: 0,
        failed_lines: Vec::new(),
    };
    let mut line = Vec::new();
    for number in 1.. {
        let read = bounds::read_line(&mut input, &mut line, limit).map_err(LoopError::Read)?;
        let answer = match read {
            Line::End => break,
            Line::Whole | Line::Partial => protocol::handle_line(runtime, &line),
            Line::TooLong { bytes, id, .. } => Some(too_long(number, bytes, id, limit)),
        };
        let Some(mut answer) = answer else {
            continue;
        };
        answered();
        summary.answered += 1;
        let ok = protocol::is_success(&answer);
        if !ok {
            summary.failed_lines.push(number);
            name_the_line(&mut answer, number);
        }
        tracing::debug!(line = number, ok, "answered");
        writeln!(out, "{answer}").map_err(LoopError::Write)?;
        out.flush().map_err(LoopError::Write)?;
    }
    Ok(summary)
}

/// The answer to line `number`, `bytes` long, past the limit: `line_too_long`, with the
/// request's `id` when it was found while the line was skipped.
fn too_long(number: usize, bytes: u64, id: Option<Value>, limit: usize) -> Value {
    tracing::info!("line {number} ({bytes} bytes) is over the limit of {limit} bytes: skipped");
    let mut answer = protocol::error(
        protocol::code::LINE_TOO_LONG,
        format!(
            "line {number} is {bytes} bytes long, over the limit of {}; it was skipped \
             without being read into memory (--max-request-bytes sets the limit)",
            bounds::describe(limit)
        ),
    );
    if let (Some(id), Some(fields)) = (id, answer.as_object_mut()) {
        fields.insert("id".into(), id);
    }
    answer
}

/// Adds `"line": N` to a failure's `error` object, so a script's author can find the line.
fn name_the_line(answer: &mut Value, line: usize) {
    if let Some(error) = answer.get_mut("error").and_then(Value::as_object_mut) {
        error.insert("line".into(), Value::from(line));
    }
}

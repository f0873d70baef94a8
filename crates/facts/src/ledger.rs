//! `facts ledger PATH`: the progress ledger of a tasks.md, as a table or as the ledger's
//! JSON form. The spec's name is the folder the file is in (after resolving the path, so
//! `facts ledger tasks.md` inside a spec folder names the spec); the checkbox of each task
//! is its status's own marker.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use dispatch_runtime::reexports::ProgressLedger;
use serde_json::json;

use crate::failure::Failure;

/// What `facts ledger --help` adds after the options.
const AFTER_HELP: &str = "\
The tasks.md format: docs/spec-format.md. With --json, the answer is the ledger's JSON form
({spec_name, source_path, fingerprint, active_task_id, totals, tasks, diagnostics}), and a
failure is {\"ok\": false, \"error\": {\"code\", \"message\"}} on stdout, with code
missing_tasks_file, not_utf8, no_tasks or io.

Exit codes:
  0  the ledger was shown
  2  usage error, or a tasks.md that is missing, unreadable, not UTF-8 or has no task line";

/// Options of `facts ledger`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct LedgerArgs {
    /// The tasks.md file.
    path: PathBuf,
    /// Print the ledger's JSON form instead of a table (and failures as JSON too).
    #[arg(long)]
    json: bool,
}

/// Runs `facts ledger`.
pub(crate) fn run(args: &LedgerArgs) -> Result<(), Failure> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match ProgressLedger::load(spec_name(&args.path), &args.path) {
        Ok(ledger) if args.json => serde_json::to_string_pretty(&ledger)
            .map_err(|e| Failure::failed(format!("cannot serialize the ledger: {e}")))
            .and_then(|text| writeln!(out, "{text}").map_err(cannot_write)),
        Ok(ledger) => write_table(&mut out, &ledger).map_err(cannot_write),
        Err(error) => {
            let message = error.to_string();
            if args.json {
                let document =
                    json!({"ok": false, "error": {"code": error.code(), "message": message}});
                writeln!(out, "{document:#}").map_err(cannot_write)?;
            }
            Err(Failure::usage(message))
        }
    }
}

fn cannot_write(e: std::io::Error) -> Failure {
    Failure::failed(format!("cannot write: {e}"))
}

/// The name of the folder that holds the file, after resolving `.`, `..` and links; `spec`
/// when there is none (or the file cannot be resolved, in which case loading it fails).
fn spec_name(path: &Path) -> String {
    std::fs::canonicalize(path)
        .ok()
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map_or_else(
            || "spec".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        )
}

/// `1 task`, `2 tasks`.
fn tasks(n: usize) -> String {
    if n == 1 {
        "1 task".to_owned()
    } else {
        format!("{n} tasks")
    }
}

fn write_table(out: &mut impl Write, ledger: &ProgressLedger) -> std::io::Result<()> {
    let totals = ledger.totals();
    writeln!(
        out,
        "{} ({})",
        ledger.spec_name(),
        ledger.source_path().display()
    )?;
    writeln!(
        out,
        "{}: {} completed, {} in progress, {} pending",
        tasks(totals.total),
        totals.completed,
        totals.in_progress,
        totals.pending
    )?;
    if totals.total > 0 && totals.completed == totals.total {
        writeln!(out, "all tasks are done")?;
    }
    let active = ledger.active_task().map(|task| task.id());
    for task in ledger.tasks() {
        let arrow = if active == Some(task.id()) {
            "  <- active"
        } else {
            ""
        };
        let line = format!(
            "{}[{}] {} {}",
            "  ".repeat(task.depth()),
            task.status().marker(),
            task.id(),
            task.title()
        );
        // A task with an empty title leaves no blank at the end of its line.
        writeln!(out, "{}{arrow}", line.trim_end())?;
    }
    for diagnostic in ledger.diagnostics() {
        writeln!(out, "line {}: {}", diagnostic.line, diagnostic.message)?;
    }
    Ok(())
}

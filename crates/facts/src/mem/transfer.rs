//! `facts mem export` and `facts mem import`: a scope's memory to a JSON Lines file and
//! back (docs/export-format.md), and Mem0's `get_all` answer in.
//!
//! Each function answers the JSON document and the text of its subcommand, or the
//! [`MemoryError`] whose code the CLI reports.

use std::io::{BufWriter, Write};
use std::path::Path;

use dispatch_runtime::reexports::{
    ExportFile, ExportOptions, ExportSource, ExportText, MemoryImportReport, StoreError, Timestamp,
};
use dispatch_runtime::{MemoryError, MemoryService, mem0_export, write_whole};
use serde_json::{Value, json};

/// What an import reads: this project's export, or Mem0's `get_all` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ImportFormat {
    /// An export of `facts mem export` (docs/export-format.md).
    Factmem,
    /// What Mem0's `Memory.get_all` returns, as JSON: `{"results": [...]}` or the list.
    Mem0,
}

fn io(message: String) -> MemoryError {
    MemoryError::Store(StoreError::Io { message })
}

/// Writes the export of each of `memories` (a scope and its memory), one after another,
/// to `output` or to stdout: a file is written beside its place and renamed into it once
/// whole, so an export that fails leaves no file behind that looks like one.
pub(crate) fn export(
    memories: &[(String, MemoryService)],
    as_of: Option<Timestamp>,
    output: Option<&Path>,
) -> Result<(Value, String), MemoryError> {
    let mut options = ExportOptions::default();
    options.as_of = as_of;
    let write_all = |out: &mut dyn Write| -> Result<Vec<(String, u64, String)>, MemoryError> {
        let mut ends = Vec::new();
        for (scope, memory) in memories {
            let end = memory.export(scope, &options, &mut *out)?;
            ends.push((scope.clone(), end.records, end.digest));
        }
        out.flush()
            .map_err(|e| io(format!("writing the export: {e}")))?;
        Ok(ends)
    };
    let ends = match output {
        None => {
            let stdout = std::io::stdout();
            write_all(&mut BufWriter::new(stdout.lock()))?
        }
        Some(path) => write_whole(path, write_all)?,
    };
    let to = output.map_or_else(|| "stdout".to_owned(), |p| p.display().to_string());
    let lines: Vec<String> = ends
        .iter()
        .map(|(scope, records, _)| format!("exported {records} records of {scope:?} to {to}"))
        .collect();
    let text = if lines.is_empty() {
        "the database holds no scope: nothing exported".to_owned()
    } else {
        lines.join("\n")
    };
    let json = match ends.as_slice() {
        [(scope, records, digest)] => json!({
            "scope": scope,
            "records": records,
            "digest": digest,
            "output": output.map(|p| p.display().to_string()),
        }),
        _ => json!({
            "scopes": ends
                .iter()
                .map(|(scope, records, digest)| {
                    json!({"scope": scope, "records": records, "digest": digest})
                })
                .collect::<Vec<_>>(),
            "output": output.map(|p| p.display().to_string()),
        }),
    };
    Ok((json, text))
}

/// Imports `file` into `memory` (scope `scope`), as `format`.
pub(crate) fn import(
    memory: &MemoryService,
    scope: &str,
    file: &Path,
    format: ImportFormat,
    now: Timestamp,
) -> Result<(Value, String), MemoryError> {
    let (report, mem0) = match format {
        ImportFormat::Factmem => (memory.import(&ExportFile::new(file))?, None),
        ImportFormat::Mem0 => {
            let json = std::fs::read_to_string(file)
                .map_err(|e| io(format!("reading {}: {e}", file.display())))?;
            let (bytes, conversion) = mem0_export(&json, scope, now)?;
            (memory.import(&ExportText::new(bytes))?, Some(conversion))
        }
    };
    let mut text = summary(&report, scope);
    if let Some(conversion) = &mem0 {
        if !conversion.skipped.is_empty() {
            text.push_str(&format!(
                "\n{} Mem0 memories left out:",
                conversion.skipped.len()
            ));
            for skipped in &conversion.skipped {
                text.push_str(&format!("\n  #{}: {}", skipped.index, skipped.reason));
            }
        }
        if conversion.metadata_dropped > 0 {
            text.push_str(&format!(
                "\n{} metadata values left out (nested, or more than a fact holds)",
                conversion.metadata_dropped
            ));
        }
    }
    let json = json!({ "scope": scope, "report": report, "mem0": mem0 });
    Ok((json, text))
}

/// Imports each export of `file` (a file of several, `export --all-scopes`) into the
/// scope its header names, which `open` opens. Every export is read and checked whole
/// before the first is imported; each is then one import of its own, so a store that
/// fails half way leaves the scopes before it imported (importing the file again changes
/// nothing in them).
pub(crate) fn import_all(
    file: &Path,
    open: impl Fn(&str) -> Result<MemoryService, MemoryError>,
) -> Result<(Value, String), MemoryError> {
    let whole = ExportFile::new(file);
    let sections = whole.sections()?;
    for section in &sections {
        for record in whole.section(section).open()? {
            record.map_err(|e| at_section(MemoryError::Store(e), section.start, file))?;
        }
    }
    let mut reports = Vec::new();
    let mut texts = Vec::new();
    for section in &sections {
        let memory = open(&section.scope)?;
        let report = memory.import(&whole.section(section))?;
        texts.push(summary(&report, &section.scope));
        reports.push(json!({"scope": section.scope, "report": report}));
    }
    let text = if texts.is_empty() {
        "the file holds no export: nothing imported".to_owned()
    } else {
        texts.join("\n")
    };
    Ok((json!({ "scopes": reports }), text))
}

/// `error`, of the export that starts at byte `start` of `file`: a line number counts
/// from that export's header.
fn at_section(error: MemoryError, start: u64, file: &Path) -> MemoryError {
    match error {
        MemoryError::Store(StoreError::Export { line, message }) => {
            MemoryError::Store(StoreError::Export {
                line,
                message: format!(
                    "{message} (in the export at byte {start} of {}; lines count from its header)",
                    file.display()
                ),
            })
        }
        other => other,
    }
}

/// The text of an import's report.
fn summary(report: &MemoryImportReport, scope: &str) -> String {
    let facts = &report.facts;
    let mut text = format!(
        "imported into {scope:?}: {} fact versions, {} episodes, {} aliases, {} user \
         context versions; {} records were there already",
        facts.imported, report.episodes, report.aliases, report.profile_versions, report.unchanged
    );
    if !facts.invalidated.is_empty() {
        text.push_str(&format!(
            "; {} facts of the scope were superseded by the file's",
            facts.invalidated.len()
        ));
    }
    for skipped in &facts.skipped {
        text.push_str(&format!("\n  line {}: {}", skipped.index, skipped.message));
    }
    text
}

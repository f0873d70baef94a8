//! Leaving with the data, and coming back: [`MemoryService::export`] writes the scope's
//! memory as a versioned JSON Lines file (`docs/export-format.md`),
//! [`MemoryService::import`] reads one back, whole or not at all, and [`mem0_export`]
//! turns what Mem0's `get_all` returns into such a file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use fact_model::{MetaValue, Metadata, SessionFact, SourceRole, Tag, Timestamp};
use fact_store::{
    ExportEnd, ExportHeader, ExportOptions, ExportRecord, ExportSource, ExportWriter,
    MemoryImportReport, SnapshotRecord, StoreError,
};
use serde::Serialize;
use serde_json::Value;

use super::{MemoryError, MemoryService};

/// The JSON Schema (draft 2020-12) of one line of an export: what `facts schema export`
/// prints, and `docs/export-format.md` explains.
pub const EXPORT_SCHEMA: &str = include_str!("export.schema.json");

/// The relation of a memory imported from Mem0.
pub const MEM0_RELATION: &str = "remembers";

/// The source task of the facts imported from Mem0.
pub const MEM0_SOURCE: &str = "mem0";

impl MemoryService {
    /// Writes the memory to `out` as an export of `scope` (the header's name for it),
    /// streaming: one record at a time, read in one transaction of the store. With
    /// [`as_of`](ExportOptions::as_of), the memory as it was then.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dispatch_runtime::{MemoryService, NewMemory};
    /// use dispatch_runtime::reexports::{InMemoryLongTermStore, SystemClock};
    /// use fact_store::{ExportOptions, ExportText};
    ///
    /// let memory = MemoryService::new(
    ///     Arc::new(InMemoryLongTermStore::default()),
    ///     Arc::new(SystemClock),
    /// );
    /// memory.add(NewMemory::new("user", "prefers", "pytest"))?;
    /// let mut file = Vec::new();
    /// let end = memory.export("default", &ExportOptions::default(), &mut file)?;
    /// assert_eq!(end.records, 1);
    ///
    /// let copy = MemoryService::new(
    ///     Arc::new(InMemoryLongTermStore::default()),
    ///     Arc::new(SystemClock),
    /// );
    /// assert_eq!(copy.import(&ExportText::new(file))?.facts.imported, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The store's read error, or [`StoreError::Io`] when `out` cannot be written; what was
    /// written then lacks its end record, so no import accepts it.
    pub fn export(
        &self,
        scope: &str,
        options: &ExportOptions,
        out: impl Write,
    ) -> Result<ExportEnd, MemoryError> {
        let io = |e: std::io::Error| StoreError::Io {
            message: format!("writing the export: {e}"),
        };
        let _span = tracing::info_span!("store", operation = "export").entered();
        let header = ExportHeader::new(scope, options.as_of);
        let mut writer = ExportWriter::new(out, &header).map_err(io)?;
        self.store()
            .export_to(options, &mut |record| writer.write_record(&record))?;
        let (_, end) = writer.finish().map_err(io)?;
        Ok(end)
    }

    /// Imports an export into the memory, whole or not at all (see
    /// [`LongTermStore::import_from`](fact_store::LongTermStore::import_from)): exact into
    /// an empty scope, merged into one that holds memory; a file imported twice changes
    /// nothing. The imported facts have no embeddings: with an embedder,
    /// [`backfill`](Self::backfill) embeds them.
    ///
    /// # Errors
    ///
    /// [`StoreError::Export`] (code `invalid_export`) naming the line of a file that is not
    /// an export, is cut short or was changed; [`StoreError::ExportVersion`] for a newer
    /// format; the store's error. Nothing is imported then.
    pub fn import(&self, source: &dyn ExportSource) -> Result<MemoryImportReport, MemoryError> {
        let _span = tracing::info_span!("store", operation = "import").entered();
        Ok(self.store().import_from(source)?)
    }
}

/// Runs `write` on a new file beside `path` (its name and `.partial`), flushes it, and
/// renames it to `path`; on any failure the partial file is removed. So an export that
/// fails half way leaves no file at `path` that looks whole.
///
/// # Errors
///
/// The error of `write`, or [`StoreError::Io`] when the file cannot be created, written
/// or renamed.
pub fn write_whole<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T, MemoryError>,
) -> Result<T, MemoryError> {
    let io = |what: &str, at: &Path, e: std::io::Error| {
        MemoryError::Store(StoreError::Io {
            message: format!("{what} {}: {e}", at.display()),
        })
    };
    let mut name = path.file_name().map(ToOwned::to_owned).unwrap_or_default();
    name.push(".partial");
    let partial = path.with_file_name(name);
    let file = File::create(&partial).map_err(|e| io("creating", &partial, e))?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let written = write(&mut out)
        .and_then(|value| {
            out.flush().map_err(|e| io("writing", &partial, e))?;
            Ok(value)
        })
        .and_then(|value| {
            std::fs::rename(&partial, path).map_err(|e| io("renaming to", path, e))?;
            Ok(value)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// What [`mem0_export`] made of a Mem0 dump.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Mem0Conversion {
    /// Memories that became facts.
    pub facts: usize,
    /// Memories left out, with the reason (`index` is the memory's place in the dump).
    pub skipped: Vec<Mem0Skipped>,
    /// Metadata values left out: Mem0 allows nested objects and lists, a fact's metadata
    /// holds strings, numbers and booleans only.
    pub metadata_dropped: usize,
}

/// A memory of a Mem0 dump that did not become a fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mem0Skipped {
    /// Its place in the dump.
    pub index: usize,
    /// Why.
    pub reason: String,
}

/// Turns what Mem0's `get_all` returns (`{"results": [...]}`, or the list alone) into an
/// export of `scope`, to [`MemoryService::import`]. Each memory becomes one fact, all in
/// one batch (so none supersedes another):
///
/// | Mem0 | fact |
/// |---|---|
/// | `user_id`, else `agent_id`, else `run_id`, else `user` | subject |
/// | (always) `remembers` | relation |
/// | `memory` (its first 200 characters) | object |
/// | `memory` (its first 500 characters) | statement |
/// | `created_at` (else `updated_at`, else `now`) | `valid_from` |
/// | `updated_at` (else `created_at`, else `now`) | `recorded_at` |
/// | `metadata` (its strings, numbers and booleans), `id` as `mem0_id`, `hash` as `mem0_hash`, `categories` joined by commas | metadata |
///
/// The source is the task `mem0` in the role of the extractor, the category `knowledge`
/// and the confidence 1. A memory without text, or whose fact is invalid, is skipped and
/// reported.
///
/// # Errors
///
/// [`StoreError::Export`] (line 1) when `json` is not a Mem0 dump at all.
pub fn mem0_export(
    json: &str,
    scope: &str,
    now: Timestamp,
) -> Result<(Vec<u8>, Mem0Conversion), MemoryError> {
    let not_mem0 = |why: String| {
        MemoryError::Store(StoreError::Export {
            line: 1,
            message: format!("not a Mem0 get_all answer: {why}"),
        })
    };
    let document: Value = serde_json::from_str(json).map_err(|e| not_mem0(e.to_string()))?;
    let memories = match &document {
        Value::Array(memories) => memories,
        Value::Object(object) => match object.get("results") {
            Some(Value::Array(memories)) => memories,
            _ => return Err(not_mem0("an object without a \"results\" list".into())),
        },
        _ => {
            return Err(not_mem0(
                "neither a list nor an object with \"results\"".into(),
            ));
        }
    };
    let header = ExportHeader::new(scope, None);
    let io = |e: std::io::Error| StoreError::Io {
        message: format!("writing the export: {e}"),
    };
    let mut writer = ExportWriter::new(Vec::new(), &header).map_err(io)?;
    let mut conversion = Mem0Conversion::default();
    for (index, memory) in memories.iter().enumerate() {
        match mem0_fact(memory, now, &mut conversion.metadata_dropped) {
            Ok(fact) => {
                writer.write_record(&ExportRecord::Fact(SnapshotRecord { batch: 1, fact }))?;
                conversion.facts += 1;
            }
            Err(reason) => conversion.skipped.push(Mem0Skipped { index, reason }),
        }
    }
    let (bytes, _) = writer.finish().map_err(io)?;
    Ok((bytes, conversion))
}

/// The metadata of a Mem0 memory: its provenance (`mem0_id`, `mem0_hash`, `categories`),
/// then the strings, numbers and booleans of its `metadata`, as many as a fact holds; what
/// is left out is counted in `dropped`.
fn mem0_metadata<'a>(
    memory: &'a Value,
    text: &dyn Fn(&str) -> Option<&'a str>,
    dropped: &mut usize,
) -> Metadata {
    let categories = memory
        .get("categories")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        });
    let mut pairs: Vec<(String, MetaValue)> = [
        ("mem0_id", text("id").map(str::to_owned)),
        ("mem0_hash", text("hash").map(str::to_owned)),
        ("categories", categories.filter(|c| !c.is_empty())),
    ]
    .into_iter()
    .filter_map(|(key, value)| Some((key.to_owned(), MetaValue::String(value?))))
    .collect();
    if let Some(Value::Object(given)) = memory.get("metadata") {
        for (key, value) in given {
            match MetaValue::from_json(key, value) {
                Ok(value) if !pairs.iter().any(|(k, _)| k == key) => {
                    pairs.push((key.clone(), value));
                }
                _ => *dropped += 1,
            }
        }
    }
    // Each pair alone, so one a fact cannot hold (a key too long, a string too large, one
    // key too many) costs only itself.
    let mut kept: Vec<(String, MetaValue)> = Vec::new();
    for pair in pairs {
        let mut candidate = kept.clone();
        candidate.push(pair);
        if Metadata::from_pairs(candidate.iter().cloned()).is_ok() {
            kept = candidate;
        } else {
            *dropped += 1;
        }
    }
    Metadata::from_pairs(kept).unwrap_or_default()
}

/// The fact of one Mem0 memory, or why there is none.
fn mem0_fact(memory: &Value, now: Timestamp, dropped: &mut usize) -> Result<SessionFact, String> {
    let text = |key: &str| {
        memory
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let time = |key: &str| -> Result<Option<Timestamp>, String> {
        text(key)
            .map(|value| {
                value
                    .parse::<Timestamp>()
                    .map_err(|e| format!("{key} {value:?} is not a time: {e}"))
            })
            .transpose()
    };
    if !memory.is_object() {
        return Err("not an object".into());
    }
    let content = text("memory").ok_or("no \"memory\" text")?;
    let subject = text("user_id")
        .or_else(|| text("agent_id"))
        .or_else(|| text("run_id"))
        .unwrap_or("user");
    let created = time("created_at")?;
    let updated = time("updated_at")?;
    let valid_from = created.or(updated).unwrap_or(now);
    let recorded_at = updated.or(created).unwrap_or(now);
    let metadata = mem0_metadata(memory, &text, dropped);
    SessionFact::builder(
        subject,
        MEM0_RELATION,
        fact_model::clip(content, fact_model::MAX_OBJECT_CHARS),
    )
    .tag(Tag::Knowledge)
    .source(MEM0_SOURCE, SourceRole::Extractor)
    .statement(fact_model::clip(content, fact_model::MAX_STATEMENT_CHARS))
    .valid_from(valid_from)
    .recorded_at(recorded_at)
    .metadata(metadata)
    .build()
    .map_err(|e| format!("not a valid fact: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use fact_model::SystemClock;
    use fact_store::{ExportText, InMemoryLongTermStore};

    use super::*;
    use crate::ReadOptions;

    #[test]
    fn a_mem0_dump_becomes_one_fact_per_memory_with_its_times_and_metadata() {
        let dump = r#"{"results": [
            {"id": "m1", "memory": "Prefers pytest over unittest", "hash": "h1",
             "user_id": "alice", "metadata": {"source": "chat", "n": 3, "nested": {"a": 1}},
             "categories": ["preferences", "tools"],
             "created_at": "2024-07-26T10:29:36.630547-07:00",
             "updated_at": "2024-07-27T10:00:00Z"},
            {"id": "m2", "memory": "Lives in Lisbon", "agent_id": "helper"},
            {"id": "m3", "memory": "   "},
            {"id": "m4", "memory": "x", "created_at": "yesterday"},
            7
        ]}"#;
        let now: Timestamp = "2026-11-28T00:00:00Z".parse().unwrap();
        let (bytes, conversion) = mem0_export(dump, "alice", now).unwrap();
        assert_eq!(conversion.facts, 2);
        assert_eq!(
            conversion
                .skipped
                .iter()
                .map(|s| s.index)
                .collect::<Vec<_>>(),
            [2, 3, 4]
        );
        assert_eq!(conversion.metadata_dropped, 1);
        let memory = MemoryService::new(
            Arc::new(InMemoryLongTermStore::default()),
            Arc::new(SystemClock),
        );
        let report = memory.import(&ExportText::new(bytes.clone())).unwrap();
        assert_eq!(report.facts.imported, 2);
        let facts = memory.list(&ReadOptions::default()).unwrap();
        let alice = facts.iter().find(|f| f.subject() == "alice").unwrap();
        assert_eq!(alice.relation(), MEM0_RELATION);
        assert_eq!(alice.statement(), Some("Prefers pytest over unittest"));
        assert_eq!(
            alice.valid_from(),
            "2024-07-26T17:29:36.630547Z".parse().unwrap()
        );
        assert_eq!(
            alice.recorded_at(),
            Some("2024-07-27T10:00:00Z".parse().unwrap())
        );
        let meta = alice.metadata();
        let string = |s: &str| Some(MetaValue::String(s.to_owned()));
        assert_eq!(meta.get("source").cloned(), string("chat"));
        assert_eq!(meta.get("n").cloned(), Some(MetaValue::Number(3.0)));
        assert_eq!(meta.get("mem0_id").cloned(), string("m1"));
        assert_eq!(meta.get("categories").cloned(), string("preferences,tools"));
        let helper = facts.iter().find(|f| f.subject() == "helper").unwrap();
        assert_eq!(helper.valid_from(), now);
        // The same dump again changes nothing.
        let again = memory.import(&ExportText::new(bytes)).unwrap();
        assert_eq!((again.facts.imported, again.unchanged), (0, 2));
    }

    /// Whether `value` holds to `schema` (`root` resolves `$ref`s): the keywords the
    /// export schema uses for shape (`type`, `const`, `enum`, `required`, `properties`,
    /// `additionalProperties`, `items`, `oneOf`, `$ref`), not its bounds and patterns.
    fn holds(value: &Value, schema: &Value, root: &Value) -> Result<(), String> {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.trim_start_matches("#/$defs/");
            return holds(value, &root["$defs"][name], root);
        }
        if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
            let matching = options
                .iter()
                .filter(|o| holds(value, o, root).is_ok())
                .count();
            return (matching == 1)
                .then_some(())
                .ok_or(format!("{value} matches {matching} of oneOf"));
        }
        if let Some(constant) = schema.get("const") {
            return (value == constant)
                .then_some(())
                .ok_or(format!("{value} ≠ {constant}"));
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array) {
            return options
                .contains(value)
                .then_some(())
                .ok_or(format!("{value} not in {options:?}"));
        }
        let kinds: Vec<&str> = match schema.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let allowed = kinds.is_empty()
            || kinds.contains(&kind)
            || (kind == "integer" && kinds.contains(&"number"));
        if !allowed {
            return Err(format!("{value} is not {kinds:?}"));
        }
        if let Value::Object(object) = value {
            for required in schema["required"].as_array().into_iter().flatten() {
                let key = required.as_str().unwrap();
                if !object.contains_key(key) {
                    return Err(format!("{value} lacks {key}"));
                }
            }
            for (key, field) in object {
                match schema["properties"].get(key) {
                    Some(property) => holds(field, property, root)?,
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => return Err(format!("{key} is not allowed")),
                        Some(extra @ Value::Object(_)) => holds(field, extra, root)?,
                        _ => {}
                    },
                }
            }
        }
        if let (Value::Array(items), Some(item)) = (value, schema.get("items")) {
            for value in items {
                holds(value, item, root)?;
            }
        }
        Ok(())
    }

    #[test]
    fn every_line_of_an_export_holds_to_the_published_schema() {
        use fact_model::{Clock, ManualClock};
        use fact_store::conformance::memories::{Change, apply};

        let clock = Arc::new(ManualClock::new(Timestamp::UNIX_EPOCH));
        let memory = MemoryService::new(Arc::new(InMemoryLongTermStore::default()), clock.clone());
        apply(
            &[
                Change::Add(vec![(0, 0, 1, false), (1, 1, 3, true)]),
                Change::Episode(3),
                Change::Add(vec![(0, 0, 0, false)]),
                Change::Invalidate(1, 1),
                Change::Alias(0, 1),
                Change::Profile(2, 4),
            ],
            memory.store().as_ref(),
            &clock,
        );
        let mut file = Vec::new();
        let options = ExportOptions::default().with_as_of(clock.now());
        memory.export("s", &options, &mut file).unwrap();
        let schema: Value = serde_json::from_str(EXPORT_SCHEMA).unwrap();
        let mut kinds = std::collections::BTreeSet::new();
        for line in String::from_utf8(file).unwrap().lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            if let Err(why) = holds(&value, &schema, &schema) {
                panic!("{line}\n{why}");
            }
            kinds.insert(value["type"].as_str().unwrap().to_owned());
        }
        assert_eq!(kinds.len(), 6, "{kinds:?}");
        // The validator refuses what the schema does not allow.
        for bad in [
            r#"{"type":"alias","alias":"a","entity":"b"}"#,
            r#"{"type":"alias","alias":"a","entity":"b","at":"2026-01-01T00:00:00Z","x":1}"#,
            r#"{"type":"profile","field":"hobby","text":"","at":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"nothing"}"#,
        ] {
            let value: Value = serde_json::from_str(bad).unwrap();
            assert!(holds(&value, &schema, &schema).is_err(), "{bad}");
        }
    }

    #[test]
    fn what_is_not_a_mem0_dump_is_refused() {
        let now = Timestamp::UNIX_EPOCH;
        for bad in ["", "{}", "3", r#"{"results": 3}"#, "[1,"] {
            let error = mem0_export(bad, "s", now).unwrap_err();
            assert_eq!(error.code(), "invalid_export", "{bad}");
        }
        assert_eq!(mem0_export("[]", "s", now).unwrap().1.facts, 0);
    }
}

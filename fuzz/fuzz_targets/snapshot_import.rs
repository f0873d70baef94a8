//! `snapshot_import`: `Snapshot::from_json` and `import_snapshot` into an
//! `InMemorySessionFactStore`, on snapshot JSON built from arbitrary records (hostile
//! strings, floats such as `NaN`, `1e309` and `-0`, timestamps at and past the years'
//! limits, given ids right, wrong and malformed, repeated keys) or on raw text.
//!
//! Checks: no panic; an accepted snapshot writes JSON that reads back as the same
//! snapshot; a store's export, imported into a new store, exports the same history.

#![no_main]

use std::sync::Arc;

use arbitrary::Arbitrary;
use dispatch_runtime::reexports::{Clock, ManualClock, Timestamp};
use fact_model::FactId;
use fact_store::{InMemorySessionFactStore, SessionFactStore, Snapshot, StoreConfig};
use factmem_fuzz::{Json, Key, Num, Str, Vocab, push_string, render_object};
use libfuzzer_sys::fuzz_target;

const VOCAB: Vocab = Vocab {
    keys: &[
        "id",
        "subject",
        "relation",
        "object",
        "tags",
        "valid_from",
        "valid_to",
        "source_task_id",
        "source_role",
        "confidence",
        "statement",
        "superseded_by",
        "batch",
        "fact",
        "version",
        "records",
    ],
    strings: &[
        "file_change",
        "convention",
        "decision",
        "error",
        "dependency",
        "test",
        "preference",
        "knowledge",
        "context",
        "behavior",
        "goal",
        "correction",
        "relationship",
        "technical",
        "observation",
        "implementer",
        "reviewer",
        "user",
        "assistant",
        "system",
        "extractor",
        "task:1",
        "1",
        "src/a.rs",
        "modified",
        "uses",
        "",
        " ",
        "File_Change",
        "2025-01-01T00:00:00Z",
    ],
    text: &[
        "a", " ", "src/", ".rs", "\n", "task:", "1", "\u{301}", "\0", "\"", "\\",
    ],
};

/// Timestamps at the limits and past them.
const TIMES: &[&str] = &[
    "2025-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "10000-01-01T00:00:00Z",
    "-0001-01-01T00:00:00Z",
    "2025-02-30T00:00:00Z",
    "2024-02-29T12:00:00+14:00",
    "2025-01-01T00:00:00-23:59",
    "2025-01-01T00:00:60Z",
    "2025-01-01t00:00:00z",
    "2025-01-01 00:00:00Z",
    "2025-01-01T00:00:00.1234567891Z",
    "2025-01-01T00:00:00",
    "2025-01-01",
    "",
    "0000-01-01T00:00:00+00:01",
    "9999-12-31T23:59:59-00:01",
];

#[derive(Arbitrary, Debug)]
enum Time {
    Known(u8),
    /// Fields, each possibly out of range.
    Fields {
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        micros: u32,
    },
    Other(Json),
}

#[derive(Arbitrary, Debug)]
enum Id {
    /// The id of the record's own (subject, relation, object).
    Own,
    /// Sixteen hex digits.
    Hex(u64),
    /// Anything else.
    Other(Json),
}

#[derive(Arbitrary, Debug)]
struct Fact {
    id: Option<Id>,
    subject: Option<Str>,
    relation: Option<Str>,
    object: Option<Str>,
    tags: Option<Vec<Str>>,
    valid_from: Option<Time>,
    valid_to: Option<Option<Time>>,
    source_task_id: Option<Str>,
    source_role: Option<Str>,
    confidence: Option<Num>,
    statement: Option<Option<Str>>,
    superseded_by: Option<Id>,
    /// More fields, unknown or repeated.
    extra: Vec<(Key, Json)>,
}

#[derive(Arbitrary, Debug)]
enum Record {
    Typed { batch: Num, fact: Fact },
    Other(Json),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(String),
    Built {
        version: Num,
        records: Vec<Record>,
        extra: Vec<(Key, Json)>,
    },
}

fn render_time(time: &Time, out: &mut String) {
    match time {
        Time::Known(i) => push_string(out, TIMES[usize::from(*i) % TIMES.len()]),
        Time::Fields {
            year,
            month,
            day,
            hour,
            minute,
            second,
            micros,
        } => push_string(
            out,
            &format!(
                "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{micros:06}Z"
            ),
        ),
        Time::Other(json) => json.render_into(&VOCAB, out),
    }
}

fn render_id(id: &Id, triple: [&str; 3], out: &mut String) {
    match id {
        Id::Own => push_string(
            out,
            &FactId::for_triple(triple[0], triple[1], triple[2]).to_string(),
        ),
        Id::Hex(n) => push_string(out, &format!("{n:016x}")),
        Id::Other(json) => json.render_into(&VOCAB, out),
    }
}

fn render_fact(fact: &Fact, out: &mut String) {
    let text = |s: &Option<Str>| s.as_ref().map(|s| s.text(&VOCAB));
    let (subject, relation, object) = (
        text(&fact.subject),
        text(&fact.relation),
        text(&fact.object),
    );
    let triple = [
        subject.as_deref().unwrap_or(""),
        relation.as_deref().unwrap_or(""),
        object.as_deref().unwrap_or(""),
    ];
    out.push('{');
    let mut first = true;
    let mut key = |out: &mut String, name: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        push_string(out, name);
        out.push(':');
    };
    if let Some(id) = &fact.id {
        key(out, "id");
        render_id(id, triple, out);
    }
    for (name, value) in [
        ("subject", &subject),
        ("relation", &relation),
        ("object", &object),
    ] {
        if let Some(value) = value {
            key(out, name);
            push_string(out, value);
        }
    }
    if let Some(tags) = &fact.tags {
        key(out, "tags");
        out.push('[');
        for (i, tag) in tags.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_string(out, &tag.text(&VOCAB));
        }
        out.push(']');
    }
    if let Some(time) = &fact.valid_from {
        key(out, "valid_from");
        render_time(time, out);
    }
    if let Some(time) = &fact.valid_to {
        key(out, "valid_to");
        match time {
            Some(time) => render_time(time, out),
            None => out.push_str("null"),
        }
    }
    for (name, value) in [
        ("source_task_id", &fact.source_task_id),
        ("source_role", &fact.source_role),
    ] {
        if let Some(value) = value {
            key(out, name);
            push_string(out, &value.text(&VOCAB));
        }
    }
    if let Some(confidence) = &fact.confidence {
        key(out, "confidence");
        out.push_str(&Json::Num(confidence.clone()).render(&VOCAB));
    }
    if let Some(statement) = &fact.statement {
        key(out, "statement");
        match statement {
            Some(s) => push_string(out, &s.text(&VOCAB)),
            None => out.push_str("null"),
        }
    }
    if let Some(id) = &fact.superseded_by {
        key(out, "superseded_by");
        render_id(id, triple, out);
    }
    for (name, value) in &fact.extra {
        key(out, &name.text(&VOCAB));
        value.render_into(&VOCAB, out);
    }
    out.push('}');
}

fn render(version: &Num, records: &[Record], extra: &[(Key, Json)]) -> String {
    let mut out = String::from("{\"version\":");
    out.push_str(&Json::Num(version.clone()).render(&VOCAB));
    out.push_str(",\"records\":[");
    for (i, record) in records.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match record {
            Record::Typed { batch, fact } => {
                out.push_str("{\"batch\":");
                out.push_str(&Json::Num(batch.clone()).render(&VOCAB));
                out.push_str(",\"fact\":");
                render_fact(fact, &mut out);
                out.push('}');
            }
            Record::Other(json) => json.render_into(&VOCAB, &mut out),
        }
    }
    out.push(']');
    if !extra.is_empty() {
        out.push(',');
        let mut rest = String::new();
        render_object(extra, &VOCAB, &mut rest);
        out.push_str(rest.trim_start_matches('{'));
    } else {
        out.push('}');
    }
    out
}

fn store() -> InMemorySessionFactStore {
    let start: Timestamp = "2025-06-01T00:00:00Z".parse().expect("a timestamp");
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(start));
    InMemorySessionFactStore::new(StoreConfig::default(), clock)
}

fn check(json: &str) {
    if let Ok((snapshot, _skipped)) = Snapshot::from_json(json) {
        let again = Snapshot::from_json(&snapshot.to_json());
        match again {
            Ok((again, skipped)) => {
                assert!(
                    skipped.is_empty(),
                    "a written snapshot has bad records: {skipped:?}"
                );
                assert_eq!(again, snapshot, "a snapshot changed through its JSON");
            }
            Err(e) => panic!("a written snapshot does not read back: {e}"),
        }
    }
    let first = store();
    if first.import_snapshot(json).is_ok() {
        let exported = first
            .export_snapshot()
            .expect("the in-memory store reads");
        let second = store();
        let report = second.import_snapshot(&exported.to_json());
        assert!(
            report.is_ok(),
            "an exported snapshot does not import: {report:?}"
        );
        assert_eq!(
            second
                .export_snapshot()
                .expect("the in-memory store reads"),
            exported,
            "export, import, export differs"
        );
    }
}

fuzz_target!(|input: Input| match input {
    Input::Raw(text) => check(&text),
    Input::Built {
        version,
        records,
        extra,
    } => check(&render(&version, &records, &extra)),
});

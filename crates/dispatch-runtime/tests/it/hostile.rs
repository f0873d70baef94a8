//! Hostile input through the library's public API (issue 15): empty and 50 MB outputs,
//! JSON nested 100,000 deep, NUL bytes, a tasks.md of 100,000 tasks and one of a single
//! 10 MB line, a subject of 10,000 combining characters, confidences NaN, Infinity, -0
//! and 1e308, and fact ids with whitespace or of the wrong length.
//!
//! Each case checks a typed error or diagnostic (its stable code), no panic, and that
//! what was accepted before the bad input is still there afterwards: the spec's facts,
//! the run's task ledger, the memory's facts. Durations of the large cases are printed
//! (`--nocapture`), never asserted.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use dispatch_runtime::ReadOptions;
use dispatch_runtime::{
    CompilePromptRequest, ContractError, DispatchRuntimeManager, IngestOutputRequest, IngestStatus,
    InitRunRequest, MemoryChange, MemoryService, NewMemory, NextAction, parse_output, protocol,
};
use fact_extract::{
    ConversationExtractor, KnownMemory, LlmClient, LlmError, LlmExtractorConfig, LlmFactExtractor,
    Message, MessageRole, ReplyError, parse_reply,
};
use fact_model::{
    CharsPerToken, MAX_SUBJECT_CHARS, ManualClock, SessionFact, SourceRole, Tag, Timestamp,
};
use fact_retrieve::FactQuery;
use fact_store::{
    InMemoryLongTermStore, InMemorySessionFactStore, SessionFactStore, Snapshot, StoreConfig,
};
use serde_json::{Value, json};
use tempfile::TempDir;

const FIFTY_MB: usize = 50 * 1024 * 1024;
const TEN_MB: usize = 10 * 1024 * 1024;
const DEPTH: usize = 100_000;

/// `[[[…]]]`, 100,000 deep.
fn nested_arrays() -> String {
    format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH))
}

/// `{"a":{"a":…0…}}`, 100,000 deep.
fn nested_objects() -> String {
    format!("{}0{}", "{\"a\":".repeat(DEPTH), "}".repeat(DEPTH))
}

/// `e` and 9,999 combining acute accents: 10,000 chars, one grapheme.
fn combining() -> String {
    let mut text = String::from("e");
    text.extend(std::iter::repeat_n('\u{301}', 9_999));
    text
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new("2026-11-25T09:00:00Z".parse().unwrap()))
}

/// A project whose spec `demo` has `tasks_md` as its tasks.md.
fn project(tasks_md: &[u8]) -> TempDir {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("tasks.md"), tasks_md).unwrap();
    dir
}

fn runtime() -> DispatchRuntimeManager {
    DispatchRuntimeManager::builder().clock(clock()).build()
}

fn init(runtime: &DispatchRuntimeManager, dir: &Path, task: &str) -> String {
    runtime
        .init_run(InitRunRequest::new("demo", task).with_project_path(dir.to_owned()))
        .unwrap()
        .run_id
}

fn block(result: &Value) -> String {
    format!("Done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

fn ingest(
    runtime: &DispatchRuntimeManager,
    run: &str,
    role: SourceRole,
    task: &str,
    output: String,
) -> dispatch_runtime::IngestOutputResponse {
    runtime
        .ingest_output(IngestOutputRequest::new(run, role, task, output))
        .unwrap()
}

fn implementer(task: &str, files: &[&str]) -> Value {
    json!({"task_id": task, "status": "completed", "summary": "parser added",
           "files_changed": files})
}

fn compile(
    runtime: &DispatchRuntimeManager,
    run: &str,
    task: &str,
) -> dispatch_runtime::CompilePromptResponse {
    runtime
        .compile_prompt(CompilePromptRequest::new(
            run,
            SourceRole::Implementer,
            task,
        ))
        .unwrap()
}

/// What a spec and a run hold, to compare before and after bad input.
fn state(runtime: &DispatchRuntimeManager, run: &str) -> (Vec<SessionFact>, Value) {
    let facts = runtime.fact_history("demo", "src/parse.rs").unwrap();
    let snapshot = runtime.get_snapshot(run).unwrap();
    (
        facts,
        json!({"revision": snapshot.revision, "facts": snapshot.facts, "history": snapshot.history}),
    )
}

fn contract_code(output: &str) -> &'static str {
    parse_output(
        SourceRole::Implementer,
        output,
        "1",
        1200,
        &CharsPerToken::default(),
    )
    .unwrap_err()
    .code()
}

#[test]
fn empty_and_50_mb_outputs_are_contract_errors() {
    assert_eq!(contract_code(""), "marker_missing");
    assert_eq!(contract_code("\0"), "marker_missing");
    // 50 MB of prose without a block.
    let prose = "lorem ipsum ".repeat(FIFTY_MB / 12);
    let started = Instant::now();
    assert_eq!(contract_code(&prose), "marker_missing");
    eprintln!(
        "parse_output, 50 MB without a block: {:?}",
        started.elapsed()
    );
    // A 50 MB block: valid JSON, over any budget.
    let summary = "x".repeat(FIFTY_MB);
    let output = block(&json!({"task_id": "1", "status": "completed", "summary": summary}));
    let started = Instant::now();
    let err = parse_output(
        SourceRole::Implementer,
        &output,
        "1",
        1200,
        &CharsPerToken::default(),
    )
    .unwrap_err();
    eprintln!("parse_output, a 50 MB block: {:?}", started.elapsed());
    assert!(
        matches!(err, ContractError::OutputTokenBudgetExceeded { budget: 1200, tokens } if tokens > 10_000_000),
        "{err:?}"
    );
    // A 50 MB block that is not JSON, and one never closed.
    let broken =
        format!("BEGIN_DISPATCH_RESULT\n{{\"summary\": \"{summary}\nEND_DISPATCH_RESULT\n");
    assert_eq!(contract_code(&broken), "json_parse_failed");
    let open = format!("BEGIN_DISPATCH_RESULT\n{{\"summary\": \"{summary}\"");
    assert_eq!(contract_code(&open), "marker_missing");
}

#[test]
fn ingesting_empty_and_50_mb_outputs_fails_the_dispatch_and_keeps_what_was_recorded() {
    let dir = project(b"- [ ] 1. Parse\n- [ ] 2. Lex\n");
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "1");
    let first = ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        block(&implementer("1", &["src/parse.rs"])),
    );
    assert_eq!(first.status, IngestStatus::Recorded);
    let before = state(&runtime, &run);
    assert_eq!(before.0.len(), 1);
    let huge_summary = "y".repeat(FIFTY_MB);
    for (output, code) in [
        (String::new(), "marker_missing"),
        ("z".repeat(FIFTY_MB), "marker_missing"),
        (
            block(&json!({"task_id": "1", "status": "completed", "summary": huge_summary})),
            "output_token_budget_exceeded",
        ),
    ] {
        let size = output.len();
        let started = Instant::now();
        let answer = ingest(&runtime, &run, SourceRole::Implementer, "1", output);
        eprintln!("ingest_output of {size} bytes: {:?}", started.elapsed());
        assert_eq!(answer.status, IngestStatus::Failed);
        assert_eq!(answer.next_action, NextAction::HaltSchemaInvalidTerminal);
        assert_eq!(answer.error.as_ref().unwrap().code, code);
        // The message names the problem, not the output.
        assert!(answer.error.unwrap().message.len() < 1_000);
        assert_eq!(
            state(&runtime, &run),
            before,
            "{code}: something recorded was lost"
        );
    }
    // The run goes on: the next valid output is recorded.
    let next = ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        block(&implementer("1", &["src/parse.rs", "src/lex.rs"])),
    );
    assert_eq!(next.status, IngestStatus::Recorded);
    assert_eq!(
        runtime.telemetry().unwrap().schema_error_counts["marker_missing"],
        2
    );
}

#[test]
fn json_nested_100_000_deep_is_refused_by_every_parser() {
    for nested in [nested_arrays(), nested_objects()] {
        // In the marked block.
        let output = format!("BEGIN_DISPATCH_RESULT\n{nested}\nEND_DISPATCH_RESULT");
        let err = parse_output(
            SourceRole::Implementer,
            &output,
            "1",
            usize::MAX,
            &CharsPerToken::default(),
        )
        .unwrap_err();
        assert_eq!(err.code(), "json_parse_failed", "{err}");
        assert!(
            err.to_string().contains("recursion limit exceeded"),
            "{err}"
        );
        // As a field of the block's object.
        let output = format!(
            "BEGIN_DISPATCH_RESULT\n{{\"task_id\": \"1\", \"status\": \"completed\", \"summary\": \"s\", \"files_changed\": {nested}}}\nEND_DISPATCH_RESULT"
        );
        let err = parse_output(
            SourceRole::Implementer,
            &output,
            "1",
            usize::MAX,
            &CharsPerToken::default(),
        )
        .unwrap_err();
        assert_eq!(err.code(), "json_parse_failed", "{err}");
        // A protocol line, whole or in a field.
        let runtime = runtime();
        for line in [
            nested.clone(),
            format!("{{\"action\": \"get_telemetry\", \"id\": {nested}}}"),
        ] {
            let answer = protocol::handle_line(&runtime, line.as_bytes()).unwrap();
            assert_eq!(answer["error"]["code"], "invalid_json", "{answer}");
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("recursion limit")
            );
        }
        // A snapshot: the whole document, and one record of a good document.
        let store = InMemorySessionFactStore::new(StoreConfig::default(), clock());
        store.add(vec![kept_fact()]).unwrap();
        let err = store.import_snapshot(&nested).unwrap_err();
        assert_eq!(err.code(), "snapshot_json", "{err}");
        let good = json!({"batch": 1, "fact": memory_fact("imported", 0.8)}).to_string();
        let document = format!(
            "{{\"version\": 1, \"records\": [{good}, {{\"batch\": 2, \"fact\": {nested}}}]}}"
        );
        // The record-by-record pass reads records as JSON values, which have the same
        // depth limit: the document is refused whole, nothing of it imported.
        let err = store.import_snapshot(&document).unwrap_err();
        assert_eq!(err.code(), "snapshot_json", "{err}");
        assert_eq!(store.stored_count().unwrap(), 1);
        assert!(
            store
                .valid_facts()
                .unwrap()
                .iter()
                .any(|f| f.object() == "kept")
        );
        // An LLM reply: the nested value is no JSON object with facts, whatever surrounds it.
        for reply in [
            nested.clone(),
            format!("Here: {{\"facts\": {nested}}}"),
            format!("```json\n{nested}\n```"),
        ] {
            let started = Instant::now();
            let err = parse_reply(&reply).unwrap_err();
            assert!(started.elapsed().as_secs() < 60);
            assert!(
                matches!(
                    err,
                    ReplyError::Invalid(_) | ReplyError::NoSections | ReplyError::NoJson
                ),
                "{err:?}"
            );
        }
        let extraction = llm_extract(&format!("{{\"facts\": {nested}}}"));
        assert!(extraction.facts.is_empty());
        assert!(!extraction.diagnostics.is_empty());
    }
}

#[test]
fn nul_bytes_in_outputs_subjects_and_tasks_md_are_text() {
    // A NUL in a task title and prompt; a NUL-prefixed line is not a task.
    let dir = project(b"- [ ] 1. Parse\0it\n  - _Prompt: Read \0 bytes_\n\0- [ ] 2. Ghost\n");
    let database = dir.path().join("facts.db");
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock())
        .stores(sqlite_or_memory(&database))
        .build();
    let started = runtime
        .init_run(InitRunRequest::new("demo", "1").with_project_path(dir.path().to_owned()))
        .unwrap();
    assert_eq!(started.totals.total, 1);
    let run = started.run_id;
    // NULs in the prose around the block, and escaped in the JSON: a subject with a NUL.
    let output = format!(
        "\0prose\0\n{}\0",
        block(&implementer("1", &["src/a\u{0}b.rs", "src/parse.rs"]))
    );
    let answer = ingest(&runtime, &run, SourceRole::Implementer, "1", output);
    assert_eq!(answer.status, IngestStatus::Recorded, "{:?}", answer.error);
    let history = runtime.fact_history("demo", "src/a\0b.rs").unwrap();
    assert_eq!(history.len(), 1, "the durable store keeps the NUL");
    assert_eq!(history[0].subject(), "src/a\0b.rs");
    assert!(runtime.fact_history("demo", "src/a").unwrap().is_empty());
    let prompt = compile(&runtime, &run, "1");
    assert!(prompt.prompt.contains("Parse\0it"));
    // A raw NUL inside a JSON string is a control character: not JSON.
    let raw = "BEGIN_DISPATCH_RESULT\n{\"task_id\": \"1\", \"status\": \"completed\", \"summary\": \"a\0b\"}\nEND_DISPATCH_RESULT";
    let answer = ingest(&runtime, &run, SourceRole::Implementer, "1", raw.to_owned());
    assert_eq!(answer.error.unwrap().code, "json_parse_failed");
    assert_eq!(
        runtime.fact_history("demo", "src/a\0b.rs").unwrap(),
        history
    );
    // A NUL in a spec name is refused before any path is built; in a protocol line it is
    // not JSON.
    let err = runtime
        .init_run(InitRunRequest::new("de\0mo", "1").with_project_path(dir.path().to_owned()))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec_name");
    let answer = protocol::handle_line(&runtime, b"{\"action\": \0 \"get_telemetry\"}").unwrap();
    assert_eq!(answer["error"]["code"], "invalid_json");
}

/// The spec stores: SQLite when the feature is on (NULs must survive a real database),
/// else in memory.
fn sqlite_or_memory(path: &Path) -> dispatch_runtime::StoreFactory {
    #[cfg(feature = "sqlite")]
    {
        dispatch_runtime::durable::sqlite_stores(path, StoreConfig::default())
    }
    #[cfg(not(feature = "sqlite"))]
    {
        let _ = path;
        Box::new(|_, clock| {
            Ok(Arc::new(InMemorySessionFactStore::new(
                StoreConfig::default(),
                clock,
            )))
        })
    }
}

#[test]
fn a_tasks_md_of_100_000_tasks_runs_through_init_and_compile() {
    let mut text = String::new();
    for n in 1..=100_000 {
        text.push_str(&format!("- [ ] {n}. Task {n}\n  - _Prompt: Do task {n}_\n"));
    }
    let dir = project(text.as_bytes());
    let runtime = runtime();
    let started = Instant::now();
    let answer = runtime
        .init_run(InitRunRequest::new("demo", "99999").with_project_path(dir.path().to_owned()))
        .unwrap();
    eprintln!("init_run over 100,000 tasks: {:?}", started.elapsed());
    assert_eq!(answer.totals.total, 100_000);
    assert_eq!(answer.active_task_id.as_deref(), Some("1"));
    assert!(answer.warnings.is_empty());
    let started = Instant::now();
    let prompt = compile(&runtime, &answer.run_id, "99999");
    eprintln!("compile_prompt over 100,000 tasks: {:?}", started.elapsed());
    assert!(prompt.prompt.contains("Do task 99999"));
    assert!(prompt.prompt_tokens <= prompt.prompt_token_budget);
    // A task that is not there is a typed error, the file's size notwithstanding.
    let err = runtime
        .init_run(InitRunRequest::new("demo", "100001").with_project_path(dir.path().to_owned()))
        .unwrap_err();
    assert_eq!(err.code(), "task_not_found");
}

#[test]
fn a_tasks_md_of_one_10_mb_line_runs_through_init_and_compile() {
    // A task whose title is the 10 MB line.
    let text = format!("- [ ] 1. {}", "w".repeat(TEN_MB));
    let dir = project(text.as_bytes());
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "1");
    let started = Instant::now();
    let prompt = compile(&runtime, &run, "1");
    eprintln!(
        "compile_prompt of a 10 MB task line: {:?}",
        started.elapsed()
    );
    assert!(
        prompt.prompt_tokens <= prompt.prompt_token_budget,
        "{}",
        prompt.prompt_tokens
    );
    assert_ne!(
        serde_json::to_value(prompt.compaction_stage).unwrap(),
        "none",
        "a 10 MB task cannot fit uncompacted"
    );
    // A 10 MB line that is no task: init_run says so, with a short message.
    for line in ["v".repeat(TEN_MB), format!("- [ ] {}", "v".repeat(TEN_MB))] {
        let dir = project(line.as_bytes());
        let err = runtime
            .init_run(
                InitRunRequest::new("demo", "1")
                    .with_project_path(dir.path().to_owned())
                    .with_run_id("other")
                    .with_rebind(true),
            )
            .unwrap_err();
        assert_eq!(err.code(), "progress_ledger_invalid");
        assert!(
            err.to_string().len() < 2_000,
            "{} bytes",
            err.to_string().len()
        );
    }
    // Not UTF-8: a typed error naming the offset.
    let dir = project(b"- [ ] 1. ok\n\xff");
    let err = runtime
        .init_run(
            InitRunRequest::new("demo", "1")
                .with_project_path(dir.path().to_owned())
                .with_run_id("bytes")
                .with_rebind(true),
        )
        .unwrap_err();
    assert_eq!(err.code(), "progress_ledger_invalid");
    assert!(err.to_string().contains("not UTF-8"), "{err}");
}

#[test]
fn a_subject_of_10_000_combining_characters_is_clipped_stored_and_retrieved() {
    let subject = combining();
    let dir = project(b"- [ ] 1. Parse\n- [ ] 2. Lex\n");
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "1");
    // 20 KB of accents cost more than the default output budget: give it room.
    let answer = runtime
        .ingest_output(
            IngestOutputRequest::new(
                run.clone(),
                SourceRole::Implementer,
                "1",
                block(&implementer("1", &[&subject, "src/parse.rs"])),
            )
            .with_max_output_tokens(100_000),
        )
        .unwrap();
    assert_eq!(answer.status, IngestStatus::Recorded, "{:?}", answer.error);
    // The extractor clips the path to the subject limit, on a char boundary.
    let clipped = fact_model::clip(&subject, MAX_SUBJECT_CHARS).into_owned();
    let history = runtime.fact_history("demo", &clipped).unwrap();
    assert_eq!(history.len(), 1, "{:?}", answer.facts_extracted);
    assert_eq!(history[0].subject().chars().count(), MAX_SUBJECT_CHARS);
    // Asking with the unclipped subject is no error, just no fact.
    assert!(runtime.fact_history("demo", &subject).unwrap().is_empty());
    // Another task's prompt retrieves it, its line clipped too.
    let run2 = init(&runtime, dir.path(), "2");
    let prompt = runtime
        .compile_prompt(
            CompilePromptRequest::new(run2, SourceRole::Implementer, "2")
                .with_task_prompt(format!("Lex what {clipped} and src/parse.rs hold")),
        )
        .unwrap();
    assert!(prompt.prompt_tokens <= prompt.prompt_token_budget);
    assert!(
        prompt
            .session_fact_ids
            .contains(&history[0].id().to_string()),
        "{}",
        prompt.session_context
    );
    for line in prompt.session_context.lines() {
        assert!(line.chars().count() <= 120, "{line:?}");
    }
    let found = runtime
        .query_facts("demo", &FactQuery::new("2", subject.clone()))
        .unwrap();
    assert!(
        found
            .facts
            .iter()
            .all(|f| f.fact.subject().chars().count() <= MAX_SUBJECT_CHARS)
    );
    // The memory service does not clip: the fact is refused, naming the field.
    let memory = memory_service();
    memory
        .add(NewMemory::new("user", "prefers", "tabs"))
        .unwrap();
    let err = memory
        .add(NewMemory::new(subject.clone(), "prefers", "spaces"))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_fact");
    assert!(
        err.to_string()
            .contains("`subject` is 10000 characters long; the limit is 200")
    );
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 1);
    assert!(
        memory
            .history(&subject, &ReadOptions::default())
            .unwrap()
            .is_empty()
    );
}

fn memory_service() -> MemoryService {
    MemoryService::new(
        Arc::new(InMemoryLongTermStore::new(StoreConfig::default(), clock())),
        clock(),
    )
}

/// A fact of another key than [`memory_fact`]'s, so imports do not supersede it.
fn kept_fact() -> SessionFact {
    SessionFact::builder("team", "prefers", "kept")
        .tag(Tag::Preference)
        .source("chat-0", SourceRole::Extractor)
        .valid_from(Timestamp::UNIX_EPOCH)
        .build()
        .unwrap()
}

fn memory_fact(object: &str, confidence: f64) -> SessionFact {
    SessionFact::builder("user", "prefers", object)
        .tag(Tag::Preference)
        .source("chat-1", SourceRole::Extractor)
        .valid_from(Timestamp::UNIX_EPOCH)
        .confidence(confidence)
        .build()
        .unwrap()
}

#[test]
fn confidences_nan_infinity_and_1e308_are_refused_and_minus_zero_is_zero() {
    let memory = memory_service();
    let kept = memory
        .add(NewMemory::new("user", "prefers", "tabs"))
        .unwrap();
    for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e308] {
        let err = memory
            .add(NewMemory::new("user", "likes", "rust").with_confidence(value))
            .unwrap_err();
        assert_eq!(err.code(), "invalid_fact", "{value}");
        assert!(
            err.to_string()
                .contains("`confidence` must be a finite number in 0..=1")
        );
        let err = memory
            .update(
                &kept.fact.id().to_string(),
                MemoryChange {
                    confidence: Some(value),
                    ..MemoryChange::default()
                },
            )
            .unwrap_err();
        assert_eq!(err.code(), "invalid_fact", "update to {value}");
    }
    assert_eq!(
        memory.list(&ReadOptions::default()).unwrap(),
        std::slice::from_ref(&kept.fact),
        "nothing accepted before was changed"
    );
    let zero = memory
        .add(NewMemory::new("user", "likes", "go").with_confidence(-0.0))
        .unwrap();
    assert_eq!(zero.fact.confidence(), 0.0);
    assert_eq!(memory.list(&ReadOptions::default()).unwrap().len(), 2);

    // A snapshot: the bad records are skipped and named, the good ones imported.
    let store = InMemorySessionFactStore::new(StoreConfig::default(), clock());
    store.add(vec![kept_fact()]).unwrap();
    let record = |object: &str, confidence: &str| {
        let fact = serde_json::to_string(&memory_fact(object, 0.5)).unwrap();
        format!(
            "{{\"batch\": 1, \"fact\": {}}}",
            fact.replace(
                "\"confidence\":0.5",
                &format!("\"confidence\":{confidence}")
            )
        )
    };
    let document = format!(
        "{{\"version\": 1, \"records\": [{}, {}, {}, {}, {}]}}",
        record("huge", "1e308"),
        record("negative-zero", "-0.0"),
        record("nan-string", "\"NaN\""),
        record("tiny", "5e-324"),
        record("too-big", "1e999"),
    );
    // `1e999` is no number serde_json reads: the document is refused whole.
    let err = store.import_snapshot(&document).unwrap_err();
    assert_eq!(err.code(), "snapshot_json", "{err}");
    assert!(err.to_string().contains("number out of range"), "{err}");
    assert_eq!(store.stored_count().unwrap(), 1);
    assert!(
        store
            .valid_facts()
            .unwrap()
            .iter()
            .any(|f| f.object() == "kept")
    );
    let document = document.replace("1e999", "1.0");
    let report = store.import_snapshot(&document).unwrap();
    let skipped: Vec<usize> = report.skipped.iter().map(|s| s.index).collect();
    assert_eq!(skipped, [0, 2], "{:?}", report.skipped);
    assert!(
        report.skipped[0].message.contains("`confidence`"),
        "{}",
        report.skipped[0].message
    );
    let objects: Vec<String> = store
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect();
    assert!(
        objects.contains(&"kept".to_owned()) && objects.contains(&"negative-zero".to_owned()),
        "{objects:?}"
    );

    // An LLM reply: out-of-range confidences are skipped with a diagnostic each.
    let reply = json!({"facts": [
        {"subject": "user", "predicate": "prefers", "object": "a", "category": "preference", "confidence": "NaN"},
        {"subject": "user", "predicate": "likes", "object": "b", "category": "preference", "confidence": "Infinity"},
        {"subject": "user", "predicate": "uses", "object": "c", "category": "preference", "confidence": 1e308},
        {"subject": "user", "predicate": "wants", "object": "d", "category": "preference", "confidence": -0.0},
        {"subject": "user", "predicate": "needs", "object": "e", "category": "preference", "confidence": 0.9},
    ]})
    .to_string();
    let parsed = parse_reply(&reply).unwrap();
    assert_eq!(parsed.facts.len(), 5);
    assert!(parsed.facts[0].confidence.unwrap().is_nan());
    let extraction = llm_extract(&reply);
    let objects: Vec<&str> = extraction.facts.iter().map(|f| f.fact.object()).collect();
    assert_eq!(objects, ["e"], "{:?}", extraction.diagnostics);
    assert_eq!(
        extraction.diagnostics.len(),
        4,
        "{:?}",
        extraction.diagnostics
    );
}

/// An LLM that answers every prompt with one reply.
#[derive(Debug)]
struct Canned(String);

impl LlmClient for Canned {
    fn complete(&self, _prompt: &str) -> Result<String, LlmError> {
        Ok(self.0.clone())
    }
}

fn llm_extract(reply: &str) -> fact_extract::ConversationExtraction {
    let extractor = LlmFactExtractor::new(
        Arc::new(Canned(reply.to_owned())),
        clock(),
        LlmExtractorConfig::default(),
    );
    extractor
        .extract_conversation(
            &[Message::new(MessageRole::User, "Use tabs.")],
            "chat-1",
            &KnownMemory::default(),
        )
        .unwrap()
}

#[test]
fn fact_ids_with_whitespace_or_of_the_wrong_length_are_invalid_ids() {
    let memory = memory_service();
    let kept = memory
        .add(NewMemory::new("user", "prefers", "tabs"))
        .unwrap()
        .fact;
    let id = kept.id().to_string();
    let (head, tail) = id.split_at_checked(8).unwrap();
    let inner = format!("{head} {tail}");
    let long = "a".repeat(10_000);
    for bad in [
        String::new(),
        "   ".to_owned(),
        inner,
        format!("{id}\0"),
        id.chars().take(15).collect::<String>(),
        format!("{id}0"),
        id.to_uppercase(),
        long.clone(),
    ] {
        let err = memory.get(&bad).unwrap_err();
        assert_eq!(err.code(), "invalid_id", "{bad:?}");
        assert_eq!(memory.delete(&bad).unwrap_err().code(), "invalid_id");
        assert_eq!(
            memory
                .update(&bad, MemoryChange::default())
                .unwrap_err()
                .code(),
            "invalid_id"
        );
    }
    // Whitespace around an id is trimmed: it names the fact.
    assert_eq!(memory.get(&format!("  {id}\n")).unwrap(), kept);
    // A well-formed id of no fact is not found, not invalid.
    assert_eq!(
        memory.get("0000000000000000").unwrap_err().code(),
        "not_found"
    );
    assert_eq!(
        memory.list(&ReadOptions::default()).unwrap(),
        std::slice::from_ref(&kept),
        "nothing was deleted"
    );
    // In a snapshot, such an id makes its record skipped, named by position.
    let store = InMemorySessionFactStore::new(StoreConfig::default(), clock());
    let good = serde_json::to_value(memory_fact("imported", 0.8)).unwrap();
    let mut spaced = serde_json::to_value(memory_fact("spaced", 0.8)).unwrap();
    spaced["id"] = json!(format!(" {}", spaced["id"].as_str().unwrap()));
    let mut short = serde_json::to_value(memory_fact("short", 0.8)).unwrap();
    short["id"] = json!("abc");
    let document = json!({"version": 1, "records": [
        {"batch": 1, "fact": spaced}, {"batch": 1, "fact": good}, {"batch": 1, "fact": short}
    ]})
    .to_string();
    let report = store.import_snapshot(&document).unwrap();
    let skipped: Vec<usize> = report.skipped.iter().map(|s| s.index).collect();
    assert_eq!(skipped, [0, 2], "{:?}", report.skipped);
    assert!(
        report.skipped[0].message.contains("invalid fact id"),
        "{}",
        report.skipped[0].message
    );
    assert_eq!(report.imported, 1);
    // Snapshot::from_json alone says the same.
    let (snapshot, unparsed) = Snapshot::from_json(&document).unwrap();
    assert_eq!((snapshot.records.len(), unparsed.len()), (1, 2));
}

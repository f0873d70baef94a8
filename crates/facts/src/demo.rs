//! `facts demo`: a built-in eight-task session through the runtime, shown as it happens:
//! for each dispatch, the prompt's cost, its `Delta context` and `[Session Context]`, and
//! what the result added to and invalidated in the store; then a summary and what to try
//! next.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dispatch_runtime::reexports::{Clock, SessionFact, SourceRole, SystemClock, TaskStatus};
use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest, NextAction,
};
use serde_json::{Value, json};

const TASKS: &str = "# Tasks: Fact memory\n\n\
- [ ] 1. Parse tasks.md into tasks\n  - File: src/parser.rs\n  - _Requirements: 1.1_\n  - _Prompt: Role: Rust Developer | Task: Parse tasks.md task lines and metadata into tasks in src/parser.rs | Success: every task line parses_\n\
- [ ] 2. Store facts with temporal invalidation\n  - File: src/store.rs\n  - _Requirements: 2.1_\n  - _Prompt: Role: Rust Developer | Task: Store facts so a newer fact invalidates the old one | Success: history is kept_\n\
- [ ] 3. Extract facts from dispatch results\n  - _Prompt: Role: Rust Developer | Task: Extract facts from implementer and reviewer results with rules, using the store from task 2 | Success: one rule per field_\n\
- [ ] 4. Retrieve relevant facts within a token budget\n  - _Prompt: Role: Rust Developer | Task: Rank stored facts against a task description and fit them in a token budget | Success: no fact over budget_\n\
- [ ] 5. Rewrite the parser for multi-paragraph prompts\n  - _Prompt: Role: Rust Developer | Task: Rewrite the tasks.md parser in src/parser.rs so prompts keep their blank lines | Success: the corpus parses whole_\n\
- [ ] 6. Compile ledger-first prompts\n  - _Prompt: Role: Rust Developer | Task: Compile prompts from the ledger entry of a task, with the store's session context | Success: prompts shrink_\n\
- [ ] 7. Detect stalled tasks\n  - _Prompt: Role: Rust Developer | Task: Count non-progress outcomes per task and hint a replan | Success: stalls are flagged_\n\
- [ ] 8. Document the facts command\n  - _Prompt: Role: Technical Writer | Task: Document the facts command and its replay protocol | Success: every flag is described_\n";

const REQUIREMENTS: &str = "# Requirements\n\n### Requirement 1: Parsing\n\n#### Acceptance Criteria\n\n\
1. WHEN a tasks.md is read THEN every task line SHALL become a task with its metadata.\n\n\
### Requirement 2: Storage\n\n#### Acceptance Criteria\n\n\
1. WHEN a fact with the same subject and relation arrives THEN the old fact SHALL be invalidated, not overwritten.\n";

/// Results per task, in dispatch order: (role, result JSON).
fn script() -> Vec<(&'static str, SourceRole, Value)> {
    let implementer = |task: &str, summary: &str, files: &[&str], follow_ups: &[&str]| {
        json!({"task_id": task, "status": "completed", "summary": summary, "files_changed": files,
               "tests": [{"command": "cargo test", "passed": true}], "follow_up_actions": follow_ups})
    };
    let approved = |task: &str| json!({"task_id": task, "assessment": "approved", "strengths": ["tests first"]});
    vec![
        (
            "1",
            SourceRole::Implementer,
            implementer(
                "1",
                "Parser for task lines and metadata in src/parser.rs",
                &["src/parser.rs", "tests/parser.rs"],
                &["Handle prompts that span paragraphs"],
            ),
        ),
        ("1", SourceRole::Reviewer, approved("1")),
        (
            "2",
            SourceRole::Implementer,
            implementer(
                "2",
                "Store with temporal invalidation in src/store.rs",
                &["src/store.rs"],
                &[],
            ),
        ),
        (
            "2",
            SourceRole::Reviewer,
            json!({"task_id": "2", "assessment": "needs_changes",
            "issues": [{"severity": "important", "file": "src/store.rs", "message": "Method names use camelCase; the naming convention is snake_case", "fix": "Rename addFact to add_fact"}],
            "required_fixes": ["Rename store methods to snake_case"]}),
        ),
        (
            "2",
            SourceRole::Implementer,
            implementer(
                "2",
                "Renamed store methods to snake_case",
                &["src/store.rs"],
                &[],
            ),
        ),
        ("2", SourceRole::Reviewer, approved("2")),
        (
            "3",
            SourceRole::Implementer,
            implementer(
                "3",
                "Rule extractor over dispatch results in src/extract.rs",
                &["src/extract.rs"],
                &[],
            ),
        ),
        ("3", SourceRole::Reviewer, approved("3")),
        (
            "4",
            SourceRole::Implementer,
            implementer(
                "4",
                "BM25 retrieval with a token budget in src/retrieve.rs",
                &["src/retrieve.rs"],
                &[],
            ),
        ),
        ("4", SourceRole::Reviewer, approved("4")),
        (
            "5",
            SourceRole::Implementer,
            implementer(
                "5",
                "Rewrote the parser so prompts keep blank lines",
                &["src/parser.rs"],
                &[],
            ),
        ),
        ("5", SourceRole::Reviewer, approved("5")),
        (
            "6",
            SourceRole::Implementer,
            implementer(
                "6",
                "Ledger-first prompt compiler in src/prompt.rs",
                &["src/prompt.rs"],
                &[],
            ),
        ),
        ("6", SourceRole::Reviewer, approved("6")),
        (
            "7",
            SourceRole::Implementer,
            implementer(
                "7",
                "Stall detector in src/stall.rs",
                &["src/stall.rs"],
                &[],
            ),
        ),
        ("7", SourceRole::Reviewer, approved("7")),
        (
            "8",
            SourceRole::Implementer,
            implementer(
                "8",
                "Documented the facts command in docs/facts.md",
                &["docs/facts.md"],
                &[],
            ),
        ),
        ("8", SourceRole::Reviewer, approved("8")),
    ]
}

fn write_spec() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("facts-demo-{}", std::process::id()));
    let spec = dir.join(".spec-context/specs/fact-memory");
    std::fs::create_dir_all(&spec).map_err(|e| e.to_string())?;
    for (name, text) in [
        ("tasks.md", TASKS),
        ("requirements.md", REQUIREMENTS),
        ("design.md", &"The design, at length. ".repeat(400)),
    ] {
        std::fs::write(spec.join(name), text).map_err(|e| e.to_string())?;
    }
    Ok(dir)
}

/// How the protocol spells a value (`dispatch_reviewer`), as the JSON answers show it.
fn wire_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::from("?"),
    }
}

/// `1 fact`, `2 facts`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The spec the demo runs.
const SPEC: &str = "fact-memory";

/// What the demo's words mean, printed before the session.
const LEGEND: &str = "\
A built-in eight-task spec, dispatched through the runtime one implementer and reviewer at a time,
ticking tasks.md's checkboxes as an orchestrator does.
  full replay       what the prompt would cost carrying the whole spec (tasks.md, requirements.md, design.md) instead of its ledger entry
  guide full        the role's working guide, sent in full on a run's first prompt for that role; compact: by reference after that
  delta             the task's ledger state the prompt carries as `Delta context` (a reviewer's fixes reach the implementer here)
  [Session Context] facts earlier tasks established that matter to this one (a task's own facts come through the delta)
  + a fact the result added, - a fact it invalidated (kept in history, no longer served)
";

/// What to try after the demo.
const NEXT: &str = "\
== try next
   Replay the protocol script the tests use (one JSON request per line, one answer per line):
     cargo run --bin facts -- replay crates/facts/tests/fixtures/replay.jsonl --project crates/facts/tests/fixtures/project
   Drive it yourself: `facts replay -` answers each stdin line as it arrives (a coprocess for an orchestrator).
   Connect an MCP client (one tool per action, over stdio):
     cargo install --path crates/facts
     facts mcp --project PATH
   for example in a client's config:
     {\"mcpServers\": {\"facts\": {\"command\": \"facts\", \"args\": [\"mcp\", \"--project\", \"/path/to/project\"]}}}
   The protocol's actions and JSON Schemas: facts schema; the reference: docs/protocol.md.
";

/// How wide a rendered delta value may be before it is clipped.
const DELTA_WIDTH: usize = 100;
/// Delta values at most this wide share the `delta:` line.
const DELTA_SHORT: usize = 12;

/// The `Delta context` compactly: short values on the `delta:` line (`key=value`), the
/// others one per line; values as compact JSON with strings bare, on one line, clipped.
fn write_delta(report: &mut String, delta: &Value) {
    let Some(entries) = delta.as_object().filter(|entries| !entries.is_empty()) else {
        let _ = writeln!(report, "   delta: (empty)");
        return;
    };
    let rendered: Vec<(&String, String)> = entries
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(text) => text.split_whitespace().collect::<Vec<_>>().join(" "),
                other => other.to_string(),
            };
            let text = if text.chars().count() > DELTA_WIDTH {
                let head: String = text.chars().take(DELTA_WIDTH - 3).collect();
                format!("{head}...")
            } else {
                text
            };
            (key, text)
        })
        .collect();
    let (short, long): (Vec<_>, Vec<_>) = rendered
        .into_iter()
        .partition(|(_, text)| text.chars().count() <= DELTA_SHORT);
    let head: Vec<String> = short
        .iter()
        .map(|(key, text)| format!("{key}={text}"))
        .collect();
    let _ = writeln!(report, "   delta: {}", head.join(", "));
    for (key, text) in long {
        let _ = writeln!(report, "     {key}: {text}");
    }
}

/// Sets a task's checkbox in the demo's tasks.md, as an orchestrator does: in progress
/// when its implementer is first dispatched, completed when its reviewer approves.
fn mark_task(dir: &Path, task: &str, status: TaskStatus) -> Result<(), String> {
    let path = dir.join(".spec-context/specs").join(SPEC).join("tasks.md");
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let line = |status: TaskStatus| format!("- [{}] {task}. ", status.marker());
    let marked = TaskStatus::ALL.into_iter().fold(text, |text, from| {
        text.replacen(&line(from), &line(status), 1)
    });
    std::fs::write(&path, marked).map_err(|e| e.to_string())
}

/// The store's valid facts as far as the demo can see them: those of the subjects it has
/// learned, by id, as `subject relation object` lines.
fn valid_facts(
    runtime: &DispatchRuntimeManager,
    subjects: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut valid = BTreeMap::new();
    for subject in subjects {
        let history = runtime
            .fact_history(SPEC, subject)
            .map_err(|e| e.to_string())?;
        for fact in history.iter().filter(|fact| fact.is_valid()) {
            valid.insert(fact.id().to_string(), line_of(fact));
        }
    }
    Ok(valid)
}

fn line_of(fact: &SessionFact) -> String {
    format!("{} {} {}", fact.subject(), fact.relation(), fact.object())
}

/// Learns the subject of an extracted `subject relation object` line: the shortest prefix
/// of whole words that has a fact with exactly that line (subjects may hold spaces).
fn learn_subject(
    runtime: &DispatchRuntimeManager,
    subjects: &mut BTreeSet<String>,
    extracted: &str,
) -> Result<(), String> {
    let ends = extracted.match_indices(' ').map(|(at, _)| at);
    for end in ends {
        let Some(prefix) = extracted.get(..end) else {
            continue;
        };
        if subjects.contains(prefix) {
            return Ok(());
        }
        let history = runtime
            .fact_history(SPEC, prefix)
            .map_err(|e| e.to_string())?;
        if history.iter().any(|fact| line_of(fact) == extracted) {
            subjects.insert(prefix.to_owned());
            return Ok(());
        }
    }
    Ok(())
}

/// Runs the demo session and prints it.
pub(crate) fn run() -> Result<(), String> {
    let dir = write_spec()?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock.clone())
        .build();
    let mut report = String::from(LEGEND);
    let mut subjects = BTreeSet::new();
    let mut runs = std::collections::HashMap::new();
    let (mut prompt_tokens, mut baseline_tokens, mut compile_us) = (0usize, 0usize, Vec::new());
    for (task, role, result) in script() {
        if role == SourceRole::Implementer && !runs.contains_key(task) {
            mark_task(&dir, task, TaskStatus::InProgress)?;
        }
        let run = match runs.get(task) {
            Some(run) => Clone::clone(run),
            None => {
                let request = InitRunRequest::new(SPEC, task).with_project_path(dir.clone());
                let run = runtime.init_run(request).map_err(|e| e.to_string())?.run_id;
                runs.insert(task, run.clone());
                run
            }
        };
        let start = clock.now();
        let compiled = runtime
            .compile_prompt(CompilePromptRequest::new(run.clone(), role, task))
            .map_err(|e| e.to_string())?;
        compile_us.push(clock.now().unix_micros() - start.unix_micros());
        prompt_tokens += compiled.prompt_tokens;
        baseline_tokens += compiled.baseline_prompt_tokens;
        let role_name = if role == SourceRole::Implementer {
            "implementer"
        } else {
            "reviewer"
        };
        let _ = writeln!(
            report,
            "\n== task {task} {role_name}: prompt {} tokens (full replay {}), guide {}",
            compiled.prompt_tokens,
            compiled.baseline_prompt_tokens,
            wire_name(&compiled.guide_mode)
        );
        write_delta(&mut report, &compiled.delta_packet);
        if compiled.session_context.is_empty() {
            let _ = writeln!(
                report,
                "   no [Session Context]: no fact of an earlier task is relevant yet"
            );
        } else {
            for line in compiled.session_context.lines() {
                let _ = writeln!(report, "   {line}");
            }
        }
        let output = format!("Work done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT");
        let valid_before = valid_facts(&runtime, &subjects)?;
        let ingested = runtime
            .ingest_output(IngestOutputRequest::new(run, role, task, output))
            .map_err(|e| e.to_string())?;
        let _ = writeln!(
            report,
            "   result: {} extracted, {} new, {} invalidated -> next: {}",
            count(ingested.facts_extracted.len(), "fact"),
            ingested.facts_added,
            ingested.facts_invalidated,
            wire_name(&ingested.next_action)
        );
        if ingested.next_action == NextAction::AdvanceToNextTask {
            mark_task(&dir, task, TaskStatus::Completed)?;
        }
        for fact in &ingested.facts_extracted {
            let _ = writeln!(report, "     + {fact}");
            learn_subject(&runtime, &mut subjects, fact)?;
        }
        let valid_after = valid_facts(&runtime, &subjects)?;
        let invalidated: Vec<&String> = valid_before
            .iter()
            .filter(|(id, _)| !valid_after.contains_key(*id))
            .map(|(_, line)| line)
            .collect();
        for fact in &invalidated {
            let _ = writeln!(report, "     - {fact}");
        }
        let unseen = ingested.facts_invalidated.saturating_sub(invalidated.len());
        if unseen > 0 {
            let _ = writeln!(report, "     - and {}", count(unseen, "more fact"));
        }
    }
    let telemetry = runtime.telemetry().map_err(|e| e.to_string())?;
    compile_us.sort_unstable();
    let median = compile_us
        .get(compile_us.len() / 2)
        .copied()
        .unwrap_or_default();
    let saved = 100.0 * (1.0 - prompt_tokens as f64 / baseline_tokens.max(1) as f64);
    let _ = writeln!(report, "\n== summary");
    let _ = writeln!(
        report,
        "   prompt tokens, ledger-first : {prompt_tokens:>7}"
    );
    let _ = writeln!(
        report,
        "   prompt tokens, full replay  : {baseline_tokens:>7}  ({saved:.0}% saved)"
    );
    let _ = writeln!(
        report,
        "   facts stored / valid / invalidated: {} / {} / {}",
        telemetry.facts_stored, telemetry.facts_valid, telemetry.facts_invalidated
    );
    let _ = writeln!(
        report,
        "   [Session Context] tokens injected: {} of {} observed ({:.1}%)",
        telemetry.session_context_tokens_injected,
        telemetry.observation_tokens_ingested,
        100.0 * telemetry.injected_to_observed_ratio
    );
    let _ = writeln!(report, "   compile_prompt median latency: {median} us");
    let _ = write!(report, "\n{NEXT}");
    let _ = std::fs::remove_dir_all(&dir);
    std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .map_err(|e| format!("cannot write: {e}"))
}

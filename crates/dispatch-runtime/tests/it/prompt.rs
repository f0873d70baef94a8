//! compile_prompt: prefix stability, tail order, guide modes, ledger-first task prompts,
//! session context, failure evidence and the input budget.

use std::sync::Arc;
use tempfile::TempDir;

use dispatch_runtime::{
    CompactionStage, CompilePromptRequest, CompilePromptResponse, DispatchRuntimeManager,
    GuideMode, IngestOutputRequest, InitRunRequest, LedgerMode, PromptConfig,
};
use fact_model::ManualClock;
use fact_model::SourceRole;
use serde_json::json;

const TASKS: &str = "# Tasks\n\n\
- [x] 1. Add the tasks.md parser\n  - _Requirements: 1.1_\n  - _Prompt: Role: Rust Developer | Task: Parse tasks.md into tasks | Success: all forms parse_\n\
- [ ] 2. Cache compiled ledgers\n  - Key the cache by path\n  - Purpose: avoid reparsing\n\
- [ ] 3. Detect stalls in the parser loop\n  - _Prompt: Role: Rust Developer | Task: Count non-progress outcomes of the parser loop_\n";

const REQUIREMENTS: &str = "# Requirements\n\n### Requirement 1: Parsing\n\n#### Acceptance Criteria\n\n\
1. WHEN a tasks.md is read THEN every task line SHALL become a task.\n2. WHEN a prompt spans paragraphs THEN it SHALL be kept whole.\n";

/// A project with spec `demo` (tasks, requirements, a long design), removed when dropped.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    let spec = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&spec).unwrap();
    std::fs::write(spec.join("tasks.md"), TASKS).unwrap();
    std::fs::write(spec.join("requirements.md"), REQUIREMENTS).unwrap();
    std::fs::write(
        spec.join("design.md"),
        "# Design\n\n".to_owned() + &"The design explains everything at length. ".repeat(200),
    )
    .unwrap();
    dir
}

fn runtime(prompts: PromptConfig) -> DispatchRuntimeManager {
    DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::new(
            "2026-11-22T09:00:00Z".parse().unwrap(),
        )))
        .prompts(prompts)
        .build()
}

fn init(runtime: &DispatchRuntimeManager, dir: &std::path::Path, task: &str) -> String {
    let request = InitRunRequest::new("demo", task).with_project_path(dir.to_owned());
    runtime.init_run(request).unwrap().run_id
}

fn compile_with(
    runtime: &DispatchRuntimeManager,
    run: &str,
    role: SourceRole,
    task: &str,
    task_prompt: Option<&str>,
) -> Result<CompilePromptResponse, dispatch_runtime::RuntimeError> {
    let mut request = CompilePromptRequest::new(run, role, task);
    request.task_prompt = task_prompt.map(str::to_owned);
    runtime.compile_prompt(request)
}

fn compile(
    runtime: &DispatchRuntimeManager,
    run: &str,
    role: SourceRole,
    task: &str,
) -> CompilePromptResponse {
    compile_with(runtime, run, role, task, None).unwrap()
}

fn ingest(
    runtime: &DispatchRuntimeManager,
    run: &str,
    role: SourceRole,
    task: &str,
    result: serde_json::Value,
) {
    let output = format!("BEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT");
    let request = IngestOutputRequest::new(run, role, task, output);
    let response = runtime.ingest_output(request).unwrap();
    assert!(response.error.is_none(), "{:?}", response.error);
}

#[test]
fn the_tail_comes_in_its_fixed_order_after_a_stable_prefix() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let run1 = init(&runtime, dir.path(), "1");
    ingest(
        &runtime,
        &run1,
        SourceRole::Implementer,
        "1",
        json!({"task_id": "1", "status": "completed",
        "summary": "Parser for tasks.md added", "files_changed": ["src/parser.rs"]}),
    );
    let run3 = init(&runtime, dir.path(), "3");
    let compiled = compile(&runtime, &run3, SourceRole::Implementer, "3");
    let prompt = &compiled.prompt;
    let order = [
        "BEGIN_DISPATCH_RESULT",
        "Task ID: 3",
        "Max output tokens: 1200",
        "Delta context: {",
        "Guide cache key: implementer:demo:3",
        "Guide (full)",
        "[Session Context]",
        "Task prompt:",
        "Count non-progress outcomes",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|needle| {
            prompt
                .find(needle)
                .unwrap_or_else(|| panic!("{needle} missing:\n{prompt}"))
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "{positions:?}\n{prompt}"
    );
    // Facts of task 1 reach task 3.
    assert!(
        compiled
            .session_context
            .contains("src/parser.rs modified_by task:1"),
        "{}",
        compiled.session_context
    );
    assert!(!compiled.session_fact_ids.is_empty());
}

#[test]
fn the_prefix_hash_changes_with_the_role_only_and_the_guide_turns_compact() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let (run2, run3) = (
        init(&runtime, dir.path(), "2"),
        init(&runtime, dir.path(), "3"),
    );
    let first = compile(&runtime, &run2, SourceRole::Implementer, "2");
    let again = compile(&runtime, &run2, SourceRole::Implementer, "2");
    let other_task = compile(&runtime, &run3, SourceRole::Implementer, "3");
    let reviewer = compile(&runtime, &run2, SourceRole::Reviewer, "2");
    assert_eq!(first.stable_prefix_hash, other_task.stable_prefix_hash);
    assert_ne!(first.stable_prefix_hash, reviewer.stable_prefix_hash);
    assert_ne!(first.full_prompt_hash, other_task.full_prompt_hash);
    assert_eq!(
        (first.guide_mode, again.guide_mode, reviewer.guide_mode),
        (GuideMode::Full, GuideMode::Compact, GuideMode::Full)
    );
    assert_eq!(first.guide_cache_key, "implementer:demo:2");
    assert!(again.prompt_tokens < first.prompt_tokens);
}

#[test]
fn the_first_task_and_unrelated_tasks_get_no_session_context() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let run = init(&runtime, dir.path(), "2");
    let compiled = compile(&runtime, &run, SourceRole::Implementer, "2");
    assert!(compiled.session_context.is_empty());
    assert!(!compiled.prompt.contains("[Session Context]"));
}

#[test]
fn ledger_first_adds_only_the_missing_pieces() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    // Task 1 names requirement 1.1: exactly that criterion is added.
    let one = compile(
        &runtime,
        &init(&runtime, dir.path(), "1"),
        SourceRole::Implementer,
        "1",
    );
    assert_eq!(
        (one.ledger_mode, one.fallback_reason.as_deref()),
        (
            LedgerMode::LedgerPlusFallback,
            Some("requirements_referenced")
        )
    );
    assert!(one.prompt.contains("- 1.1: WHEN a tasks.md is read"));
    assert!(!one.prompt.contains("1.2: WHEN a prompt spans"));
    assert!(!one.prompt.contains("The design explains"));
    // Task 2 has no prompt: its details stand in.
    let two = compile(
        &runtime,
        &init(&runtime, dir.path(), "2"),
        SourceRole::Implementer,
        "2",
    );
    assert_eq!(
        (two.ledger_mode, two.fallback_reason.as_deref()),
        (LedgerMode::LedgerPlusFallback, Some("prompt_missing"))
    );
    assert!(two.prompt.contains("- Key the cache by path"));
    // Task 3 has a prompt and no requirements: the ledger alone.
    let three = compile(
        &runtime,
        &init(&runtime, dir.path(), "3"),
        SourceRole::Implementer,
        "3",
    );
    assert_eq!(
        (three.ledger_mode, three.fallback_reason),
        (LedgerMode::LedgerOnly, None)
    );
    assert!(
        three.baseline_prompt_tokens > 3 * three.prompt_tokens,
        "{} vs {}",
        three.baseline_prompt_tokens,
        three.prompt_tokens
    );
    // The legacy mode embeds the documents, and says so.
    let legacy = runtime_with_legacy();
    let compiled = compile(
        &legacy,
        &init(&legacy, dir.path(), "3"),
        SourceRole::Implementer,
        "3",
    );
    assert_eq!(
        (compiled.ledger_mode, compiled.fallback_reason.as_deref()),
        (LedgerMode::Legacy, Some("legacy_mode"))
    );
    assert!(compiled.prompt.contains("The design explains"));
    let telemetry = runtime.telemetry().unwrap();
    assert_eq!(
        telemetry.ledger_mode_usage.get("ledger_plus_fallback"),
        Some(&2)
    );
    assert!(telemetry.prompt_token_delta > 0);
}

fn runtime_with_legacy() -> DispatchRuntimeManager {
    runtime(
        PromptConfig::default()
            .with_legacy(true)
            .with_implementer_budget(100_000),
    )
}

#[test]
fn a_retry_after_rejection_carries_the_failure_evidence() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let run = init(&runtime, dir.path(), "3");
    ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "3",
        json!({"task_id": "3", "assessment": "needs_changes",
        "issues": [{"severity": "critical", "file": "src/stall.rs", "message": "Count resets too early", "fix": "Reset on progress only"}],
        "required_fixes": ["Reset the count on progress only"]}),
    );
    let compiled = compile(&runtime, &run, SourceRole::Implementer, "3");
    let evidence = compiled.delta_packet["failure_evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("Rejection reasons:\n[critical] src/stall.rs: Count resets too early")
    );
    assert_eq!(
        compiled.delta_packet["required_fixes"],
        json!(["Reset the count on progress only"])
    );
    let reviewer = compile(&runtime, &run, SourceRole::Reviewer, "3");
    assert!(reviewer.delta_packet.get("failure_evidence").is_none());
}

#[test]
fn over_budget_prompts_are_compacted_or_terminal() {
    let dir = project();
    let strict = runtime(
        PromptConfig::default()
            .with_implementer_budget(200)
            .with_auto_compaction(false),
    );
    let run = init(&strict, dir.path(), "1");
    assert_eq!(
        compile_with(&strict, &run, SourceRole::Implementer, "1", None)
            .unwrap_err()
            .code(),
        "dispatch_prompt_overflow_terminal"
    );

    // A budget just under the full prompt: compaction brings it within.
    let roomy = runtime(PromptConfig::default());
    let full = compile(
        &roomy,
        &init(&roomy, dir.path(), "1"),
        SourceRole::Implementer,
        "1",
    )
    .prompt_tokens;
    let budget = full - 20;
    let compacting = runtime(PromptConfig::default().with_implementer_budget(budget));
    let run = init(&compacting, dir.path(), "1");
    let compiled = compile(&compacting, &run, SourceRole::Implementer, "1");
    assert_ne!(compiled.compaction_stage, CompactionStage::None);
    assert!(
        compiled.prompt_tokens <= budget,
        "{} > {budget}",
        compiled.prompt_tokens
    );
    assert!(
        compiled.prompt.contains("BEGIN_DISPATCH_RESULT") && compiled.prompt.contains("Task ID: 1")
    );

    let impossible = runtime(PromptConfig::default().with_implementer_budget(10));
    let run = init(&impossible, dir.path(), "1");
    assert_eq!(
        compile_with(&impossible, &run, SourceRole::Implementer, "1", None)
            .unwrap_err()
            .code(),
        "dispatch_prompt_overflow_terminal"
    );
}

#[test]
fn unknown_runs_and_other_tasks_are_rejected() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let run = init(&runtime, dir.path(), "1");
    let request =
        |run_id: &str, task: &str| CompilePromptRequest::new(run_id, SourceRole::Reviewer, task);
    assert_eq!(
        runtime
            .compile_prompt(request("nope", "1"))
            .unwrap_err()
            .code(),
        "run_not_initialized"
    );
    assert_eq!(
        runtime
            .compile_prompt(request(&run, "2"))
            .unwrap_err()
            .code(),
        "run_task_mismatch"
    );
    let given = request(&run, "1").with_task_prompt("Do exactly this");
    let compiled = runtime.compile_prompt(given).unwrap();
    assert!(compiled.prompt.ends_with("Task prompt:\nDo exactly this"));
    assert_eq!(compiled.ledger_mode, LedgerMode::LedgerOnly);
}

/// A runtime with `budget` for implementers whose task 3 run holds about 900 tokens of
/// required fixes: within the output budget, far over small input budgets.
fn run_with_long_fixes(dir: &TempDir, budget: usize) -> (DispatchRuntimeManager, String) {
    let runtime = runtime(PromptConfig::default().with_implementer_budget(budget));
    let run = init(&runtime, dir.path(), "3");
    let fixes: Vec<String> = (0..12)
        .map(|i| format!("fix {i} {}", "x".repeat(290)))
        .collect();
    ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "3",
        json!({"task_id": "3", "assessment": "needs_changes", "required_fixes": fixes}),
    );
    (runtime, run)
}

#[test]
fn pruning_cuts_long_lists_and_texts_of_the_delta() {
    let dir = project();
    let (runtime, run) = run_with_long_fixes(&dir, 700);
    let compiled = compile(&runtime, &run, SourceRole::Implementer, "3");
    assert_eq!(compiled.compaction_stage, CompactionStage::DeltaPruned);
    assert!(compiled.prompt_tokens <= 700, "{}", compiled.prompt_tokens);
    let fixes = compiled.delta_packet["required_fixes"].as_array().unwrap();
    assert_eq!(fixes.len(), 5);
    assert!(
        fixes
            .iter()
            .all(|f| f.as_str().unwrap().chars().count() <= 200)
    );
    assert!(
        compiled
            .prompt
            .contains("Count non-progress outcomes of the parser loop")
    );
}

#[test]
fn the_emergency_form_keeps_the_task_prompt_and_says_what_it_left_out() {
    let dir = project();
    let (runtime, run) = run_with_long_fixes(&dir, 400);
    let compiled = compile(&runtime, &run, SourceRole::Implementer, "3");
    assert_eq!(compiled.compaction_stage, CompactionStage::Emergency);
    assert!(compiled.prompt_tokens <= 400, "{}", compiled.prompt_tokens);
    assert!(
        compiled
            .prompt
            .contains("Count non-progress outcomes of the parser loop"),
        "{}",
        compiled.prompt
    );
    assert_eq!(compiled.delta_packet, json!({}));
    assert_eq!(compiled.guide_mode, GuideMode::Omitted);
    assert!(compiled.session_context.is_empty());
    // The guide was never given: the next compile with room (the fixes settled) gives it
    // in full.
    ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "3",
        json!({"task_id": "3", "assessment": "approved"}),
    );
    let roomy = compile_with(&runtime, &run, SourceRole::Implementer, "3", Some("short")).unwrap();
    assert_eq!(roomy.compaction_stage, CompactionStage::None);
    assert_eq!(roomy.guide_mode, GuideMode::Full);
}

#[test]
fn a_failed_compile_does_not_use_up_the_full_guide() {
    let dir = project();
    let strict = runtime(
        PromptConfig::default()
            .with_implementer_budget(400)
            .with_auto_compaction(false),
    );
    let run = init(&strict, dir.path(), "3");
    let long = "word ".repeat(2000);
    assert_eq!(
        compile_with(&strict, &run, SourceRole::Implementer, "3", Some(&long))
            .unwrap_err()
            .code(),
        "dispatch_prompt_overflow_terminal"
    );
    let short = compile_with(&strict, &run, SourceRole::Implementer, "3", Some("short")).unwrap();
    assert_eq!(short.guide_mode, GuideMode::Full);
}

#[test]
fn a_blank_task_prompt_falls_back_to_the_ledger_and_legacy_keeps_a_given_one() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let run = init(&runtime, dir.path(), "3");
    let blank = compile_with(&runtime, &run, SourceRole::Implementer, "3", Some("  \n")).unwrap();
    assert!(
        blank
            .prompt
            .contains("Count non-progress outcomes of the parser loop")
    );

    let legacy = runtime_with_legacy();
    let run = init(&legacy, dir.path(), "3");
    let given = compile_with(
        &legacy,
        &run,
        SourceRole::Implementer,
        "3",
        Some("MY OWN PROMPT"),
    )
    .unwrap();
    assert!(given.prompt.contains("MY OWN PROMPT"));
    assert!(given.prompt.contains("The design explains"));
}

#[test]
fn every_fallback_reason_is_reported_and_counted() {
    let dir = project();
    let spec = dir.path().join(".spec-context/specs/demo");
    // No prompt, one known and one unknown requirement.
    std::fs::write(
        spec.join("tasks.md"),
        "- [ ] 1. Cache ledgers\n  - Key by path\n  - _Requirements: 1.2, 9.9_\n",
    )
    .unwrap();
    let runtime = runtime(PromptConfig::default());
    let compiled = compile(
        &runtime,
        &init(&runtime, dir.path(), "1"),
        SourceRole::Implementer,
        "1",
    );
    assert_eq!(
        compiled.fallback_reason.as_deref(),
        Some("requirements_referenced,requirements_not_found,prompt_missing")
    );
    assert!(compiled.prompt.contains("- 1.2: WHEN a prompt spans"));
    assert!(
        compiled
            .prompt
            .contains("Not found in requirements.md: 9.9")
    );
    let telemetry = runtime.telemetry().unwrap();
    for reason in [
        "requirements_referenced",
        "requirements_not_found",
        "prompt_missing",
    ] {
        assert_eq!(telemetry.fallback_reasons.get(reason), Some(&1), "{reason}");
    }
}

#[test]
fn an_edited_tasks_md_reaches_the_next_prompt() {
    let dir = project();
    let runtime = runtime(PromptConfig::default());
    let run = init(&runtime, dir.path(), "3");
    let before = compile(&runtime, &run, SourceRole::Implementer, "3");
    assert!(before.prompt.contains("Detect stalls in the parser loop"));
    let edited = TASKS.replace(
        "Detect stalls in the parser loop",
        "Detect stalls and review loops",
    );
    std::fs::write(dir.path().join(".spec-context/specs/demo/tasks.md"), edited).unwrap();
    let after = compile(&runtime, &run, SourceRole::Implementer, "3");
    assert!(
        after.prompt.contains("Detect stalls and review loops"),
        "{}",
        after.prompt
    );
    assert!(runtime.telemetry().unwrap().ledger_rebuild_count >= 2);
}

#[test]
fn telemetry_lists_every_ledger_mode_from_the_start() {
    let runtime = runtime(PromptConfig::default());
    let usage = runtime.telemetry().unwrap().ledger_mode_usage;
    assert_eq!(
        usage.into_iter().collect::<Vec<_>>(),
        [
            ("ledger_only".to_owned(), 0),
            ("ledger_plus_fallback".to_owned(), 0),
            ("legacy".to_owned(), 0)
        ]
    );
}

/// A requirements.md whose requirement 3 holds `criteria` lines under its heading, after a
/// requirement 2 written as a numbered list.
fn requirements_with(criteria: &[&str]) -> String {
    let mut md = String::from(
        "# Requirements\n\n### Requirement 2: Listing\n\n**User Story:** As a user, I want lists.\n\n\
         #### Acceptance Criteria\n\n1. WHEN GET /todos is called THEN the server SHALL list them.\n\n\
         ### Requirement 3: Creation\n\n**User Story:** As a user, I want to add todos.\n\n\
         #### Acceptance Criteria\n\n",
    );
    for line in criteria {
        md.push_str(line);
        md.push('\n');
    }
    md.push_str(
        "\n## Non-Functional Requirements\n\n1. Not a criterion.\n- 3.9 Not a criterion either.\n",
    );
    md
}

const EMPTY_TITLE: &str =
    "WHEN POST /todos is called with an empty title THEN the server SHALL answer 400";

#[test]
fn explicit_criterion_ids_are_found_in_every_form() {
    use dispatch_runtime::prompt::acceptance_criteria;
    let expected = format!("- 3.3: {EMPTY_TITLE}");
    for form in [
        "3.3 {}",
        "- 3.3 {}",
        "* 3.3 {}",
        "**3.3** {}",
        "- **3.3** {}",
        "3.3. {}",
        "3.3: {}",
        "- 3.3: {}",
        "**3.3:** {}",
        "**3.3**: {}",
        "- **3.3.** {}",
        "  - 3.3  {}",
        "1. 3.3 {}",
    ] {
        let line = form.replace("{}", EMPTY_TITLE);
        let md = requirements_with(&[&line]);
        let (lines, missing) = acceptance_criteria(&md, &["3.3"]);
        assert_eq!(lines, [expected.as_str()], "{line:?}");
        assert!(missing.is_empty(), "{line:?}: {missing:?}");
        // The requirement's id names it too.
        let (lines, missing) = acceptance_criteria(&md, &["3"]);
        assert_eq!(lines, [expected.as_str()], "{line:?}");
        assert!(missing.is_empty(), "{line:?}");
    }
}

#[test]
fn numbered_lists_and_explicit_ids_mix_and_an_explicit_id_wins() {
    use dispatch_runtime::prompt::acceptance_criteria;
    let md = requirements_with(&[
        "1. WHEN POST /todos is called THEN the server SHALL create a todo",
        "2. WHEN the list position says 3.2 THEN this line loses to the explicit 3.2",
        "- **3.2** WHEN a todo is created THEN it SHALL get an id",
        "3.3 WHEN POST /todos is called with an empty title THEN the server SHALL answer 400",
        "3.4.1 WHEN a sub-criterion is written THEN it SHALL have its own id",
    ]);
    let (lines, missing) = acceptance_criteria(&md, &["2.1", "3.1", "3.2", "3.3", "3.4.1"]);
    assert_eq!(
        lines,
        [
            "- 2.1: WHEN GET /todos is called THEN the server SHALL list them.",
            "- 3.1: WHEN POST /todos is called THEN the server SHALL create a todo",
            "- 3.2: WHEN a todo is created THEN it SHALL get an id",
            "- 3.3: WHEN POST /todos is called with an empty title THEN the server SHALL answer 400",
            "- 3.4.1: WHEN a sub-criterion is written THEN it SHALL have its own id",
        ]
    );
    assert!(missing.is_empty(), "{missing:?}");
    // The whole requirement, in file order, each id once.
    let (lines, _) = acceptance_criteria(&md, &["3"]);
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_start_matches("- ").split(':').next().unwrap())
        .collect();
    assert_eq!(ids, ["3.1", "3.2", "3.3", "3.4.1"]);
    // `3.4` names its sub-criterion.
    assert_eq!(acceptance_criteria(&md, &["3.4"]).0.len(), 1);
}

#[test]
fn a_criterion_that_is_not_there_is_still_missing() {
    use dispatch_runtime::prompt::acceptance_criteria;
    let md = requirements_with(&[
        "1. WHEN POST /todos is called THEN the server SHALL create a todo",
        "- 3.3 WHEN POST /todos is called with an empty title THEN the server SHALL answer 400",
    ]);
    // 3.9 exists only outside a requirement section; 3.33 is not 3.3; 3.2 has no line.
    let (lines, missing) = acceptance_criteria(&md, &["3.2", "3.3", "3.33", "3.9", "4", "3.3.1"]);
    assert_eq!(
        lines,
        ["- 3.3: WHEN POST /todos is called with an empty title THEN the server SHALL answer 400"]
    );
    assert_eq!(missing, ["3.2", "3.33", "3.9", "4", "3.3.1"]);
    // Lines that only look like ids are not criteria.
    let md = requirements_with(&[
        "3.3WHEN glued to its id",
        "**3.3 WHEN the bold is not closed",
        "- 3.x WHEN the id is not numeric",
        "3.3",
        "- 2.5 seconds is the longest a request may take",
        "4.1 WHEN an id belongs to another requirement THEN it is not one of this one",
    ]);
    let (lines, missing) = acceptance_criteria(&md, &["3.3", "2.5", "4.1", "3"]);
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!(missing, ["3.3", "2.5", "4.1", "3"]);
}

#[test]
fn a_task_naming_an_explicit_criterion_id_gets_its_text() {
    let dir = project();
    let spec = dir.path().join(".spec-context/specs/demo");
    std::fs::write(
        spec.join("tasks.md"),
        "# Tasks\n\n- [ ] 1. Validate titles\n  - _Requirements: 3.3, 2.1_\n  - _Prompt: Role: Dev | Task: Reject empty titles_\n",
    )
    .unwrap();
    std::fs::write(
        spec.join("requirements.md"),
        requirements_with(&[&format!("- **3.3** {EMPTY_TITLE}")]),
    )
    .unwrap();
    let runtime = runtime(PromptConfig::default());
    let compiled = compile(
        &runtime,
        &init(&runtime, dir.path(), "1"),
        SourceRole::Implementer,
        "1",
    );
    assert!(
        compiled.prompt.contains(&format!("- 3.3: {EMPTY_TITLE}")),
        "{}",
        compiled.prompt
    );
    assert!(compiled.prompt.contains("- 2.1: WHEN GET /todos"));
    assert!(
        !compiled.prompt.contains("Not found in requirements.md"),
        "{}",
        compiled.prompt
    );
    assert_eq!(
        compiled.fallback_reason.as_deref(),
        Some("requirements_referenced")
    );
}

/// Every numeric requirement id that a task of the real corpus names is found in its
/// spec's requirements.md, written there as numbered lists (one task says
/// `_Requirements: All_`, which names no id). Skipped without the corpus, except under
/// `CI=true`.
#[test]
fn every_requirement_of_the_corpus_tasks_is_found() {
    use dispatch_runtime::prompt::acceptance_criteria;
    let root = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus/spec-context-specs"
    ));
    if !root.is_dir() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no corpus at {} under CI=true",
            root.display()
        );
        eprintln!("skipped: no corpus at {}", root.display());
        return;
    }
    let mut specs = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let spec = entry.unwrap().path();
        let (Ok(tasks), Ok(requirements)) = (
            std::fs::read_to_string(spec.join("tasks.md")),
            std::fs::read_to_string(spec.join("requirements.md")),
        ) else {
            continue;
        };
        specs += 1;
        for task in ledger::parse_tasks(&tasks).0 {
            let ids: Vec<&str> = task
                .requirements()
                .into_iter()
                .filter(|id| id.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
                .collect();
            let (lines, missing) = acceptance_criteria(&requirements, &ids);
            assert!(
                missing.is_empty(),
                "{} task {}: {missing:?}",
                spec.display(),
                task.id()
            );
            assert_eq!(lines.is_empty(), ids.is_empty(), "{}", task.id());
        }
    }
    assert!(specs >= 8, "{specs}");
}

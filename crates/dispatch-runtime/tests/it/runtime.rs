//! The runtime manager through its public API: runs, routing, facts across tasks and
//! specs, contract failures, stalls and telemetry.

use std::sync::Arc;
use tempfile::TempDir;

use dispatch_runtime::{
    DispatchRuntimeManager, IngestOutputRequest, IngestOutputResponse, IngestStatus,
    InitRunRequest, NextAction,
};
use fact_model::ManualClock;
use fact_model::SourceRole;
use fact_retrieve::FactQuery;
use fact_store::{InMemorySessionFactStore, SessionFactStore};
use serde_json::{Value, json};

/// A project with specs `demo` (5 tasks) and `other` (1 task), removed when dropped.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    for (spec, tasks) in [("demo", 5), ("other", 1)] {
        let folder = dir.path().join(".spec-context/specs").join(spec);
        std::fs::create_dir_all(&folder).unwrap();
        let text: String = (1..=tasks)
            .map(|n| format!("- [ ] {n}. Task {n}\n  - _Prompt: Do task {n}_\n"))
            .collect();
        std::fs::write(folder.join("tasks.md"), text).unwrap();
    }
    dir
}

fn runtime() -> DispatchRuntimeManager {
    DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::new(
            "2026-11-22T09:00:00Z".parse().unwrap(),
        )))
        .build()
}

fn init(runtime: &DispatchRuntimeManager, dir: &std::path::Path, spec: &str, task: &str) -> String {
    runtime
        .init_run(InitRunRequest::new(spec, task).with_project_path(dir.to_owned()))
        .unwrap()
        .run_id
}

fn ingest(
    runtime: &DispatchRuntimeManager,
    run: &str,
    role: SourceRole,
    task: &str,
    result: &Value,
) -> IngestOutputResponse {
    let output = format!("Work done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n");
    runtime
        .ingest_output(IngestOutputRequest::new(run, role, task, output))
        .unwrap()
}

fn implementer(task: &str, status: &str, files: &[&str]) -> Value {
    json!({"task_id": task, "status": status, "summary": format!("task {task} went {status}"),
           "files_changed": files, "follow_up_actions": [format!("follow up on task {task}")]})
}

fn reviewer(task: &str, assessment: &str, fixes: &[&str]) -> Value {
    json!({"task_id": task, "assessment": assessment, "required_fixes": fixes,
           "issues": [{"severity": "important", "message": "Fix the naming convention", "fix": "Use snake_case"}]})
}

fn subjects(runtime: &DispatchRuntimeManager, spec: &str, task: &str, text: &str) -> Vec<String> {
    runtime
        .query_facts(spec, &FactQuery::new(task, text))
        .unwrap()
        .facts
        .into_iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f.fact.subject(),
                f.fact.relation(),
                f.fact.object()
            )
        })
        .collect()
}

#[test]
fn init_run_errors_are_typed() {
    let dir = project();
    let runtime = runtime();
    let err = runtime
        .init_run(InitRunRequest::new("missing", "1").with_project_path(dir.path().to_owned()))
        .unwrap_err();
    assert_eq!(err.code(), "progress_ledger_missing_tasks");
    let err = runtime
        .ingest_output(IngestOutputRequest::new(
            "nope",
            SourceRole::Implementer,
            "1",
            String::new(),
        ))
        .unwrap_err();
    assert_eq!(err.code(), "run_not_initialized");
}

#[test]
fn a_run_is_bound_to_its_task() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "2");
    assert_eq!(run, "demo:2");
    let err = runtime
        .ingest_output(IngestOutputRequest::new(
            run,
            SourceRole::Implementer,
            "3",
            String::new(),
        ))
        .unwrap_err();
    assert_eq!(err.code(), "run_task_mismatch");
}

#[test]
fn outcomes_route_to_the_next_action() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    let cases = [
        (
            SourceRole::Implementer,
            implementer("1", "completed", &[]),
            NextAction::DispatchReviewer,
        ),
        (
            SourceRole::Implementer,
            implementer("1", "blocked", &[]),
            NextAction::RetryImplementerWithConstraints,
        ),
        (
            SourceRole::Implementer,
            implementer("1", "failed", &[]),
            NextAction::RetryImplementer,
        ),
        (
            SourceRole::Reviewer,
            reviewer("1", "approved", &[]),
            NextAction::AdvanceToNextTask,
        ),
        (
            SourceRole::Reviewer,
            reviewer("1", "needs_changes", &["a"]),
            NextAction::DispatchImplementerFixes,
        ),
        (
            SourceRole::Reviewer,
            reviewer("1", "blocked", &["b"]),
            NextAction::HaltAndEscalate,
        ),
    ];
    for (role, result, expect) in cases {
        assert_eq!(
            ingest(&runtime, &run, role, "1", &result).next_action,
            expect,
            "{result}"
        );
    }
}

#[test]
fn a_contract_error_ends_the_dispatch_not_the_run() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    let bad = ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &json!({"task_id": "1", "status": "done", "summary": ""}),
    );
    assert_eq!(
        (bad.status, bad.next_action),
        (IngestStatus::Failed, NextAction::HaltSchemaInvalidTerminal)
    );
    assert_eq!(bad.error.as_ref().unwrap().code, "schema_invalid");
    let good = ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "completed", &[]),
    );
    assert_eq!(good.status, IngestStatus::Recorded);
    let telemetry = runtime.telemetry().unwrap();
    assert_eq!(
        telemetry.schema_error_counts.get("schema_invalid"),
        Some(&1)
    );
    assert_eq!(telemetry.dispatch_count, 2);
    assert!(telemetry.observation_tokens_ingested > telemetry.total_output_tokens);
}

#[test]
fn facts_of_task_1_reach_task_3_and_invalidated_ones_do_not_reach_task_5() {
    let dir = project();
    let runtime = runtime();
    let run1 = init(&runtime, dir.path(), "demo", "1");
    ingest(
        &runtime,
        &run1,
        SourceRole::Implementer,
        "1",
        &implementer("1", "completed", &["src/parser.rs"]),
    );
    let seen = subjects(&runtime, "demo", "3", "extend the parser");
    assert!(
        seen.contains(&"src/parser.rs modified_by task:1".to_owned()),
        "{seen:?}"
    );
    // Task 1 asking for itself gets nothing of its own.
    assert!(subjects(&runtime, "demo", "1", "extend the parser").is_empty());

    let run4 = init(&runtime, dir.path(), "demo", "4");
    ingest(
        &runtime,
        &run4,
        SourceRole::Implementer,
        "4",
        &implementer("4", "completed", &["src/parser.rs"]),
    );
    let seen = subjects(&runtime, "demo", "5", "extend the parser");
    assert!(
        seen.contains(&"src/parser.rs modified_by task:4".to_owned()),
        "{seen:?}"
    );
    assert!(
        !seen.contains(&"src/parser.rs modified_by task:1".to_owned()),
        "{seen:?}"
    );
    assert_eq!(
        runtime.fact_history("demo", "src/parser.rs").unwrap().len(),
        2
    );
    // A task with nothing in common with the facts gets none.
    assert!(subjects(&runtime, "demo", "5", "write the changelog").is_empty());
}

/// The seed's integration cases on compiled prompts, not just on queries: task 1's file in
/// task 3's `[Session Context]`, the version task 4 invalidated absent from task 5's, and
/// no section for the first task or a task with nothing in common with the facts.
#[test]
fn compiled_prompts_carry_earlier_facts_and_never_invalidated_ones() {
    let dir = TempDir::new().unwrap();
    let spec = dir.path().join(".spec-context/specs/parser");
    std::fs::create_dir_all(&spec).unwrap();
    std::fs::write(
        spec.join("tasks.md"),
        "- [ ] 1. Add the tasks parser\n  - _Prompt: Task: Parse task lines_\n\
         - [ ] 2. Write the changelog\n  - _Prompt: Task: Summarize releases for users_\n\
         - [ ] 3. Extend the parser with prompts\n  - _Prompt: Task: Teach src/parser.rs prompts_\n\
         - [ ] 4. Rewrite the parser for blank lines\n  - _Prompt: Task: Keep blank lines_\n\
         - [ ] 5. Document the parser\n  - _Prompt: Task: Describe src/parser.rs_\n",
    )
    .unwrap();
    let runtime = runtime();
    let context = |task: &str| {
        let run = init(&runtime, dir.path(), "parser", task);
        let compiled = runtime
            .compile_prompt(dispatch_runtime::CompilePromptRequest::new(
                run.clone(),
                SourceRole::Implementer,
                task,
            ))
            .unwrap();
        if compiled.session_context.is_empty() {
            assert!(!compiled.prompt.contains("[Session Context]"));
        } else {
            assert!(compiled.prompt.contains(&compiled.session_context));
        }
        (run, compiled.session_context)
    };
    let (run1, first) = context("1");
    assert_eq!(first, "", "the first task gets no section");
    ingest(
        &runtime,
        &run1,
        SourceRole::Implementer,
        "1",
        &implementer("1", "completed", &["src/parser.rs"]),
    );

    let (_, unrelated) = context("2");
    assert_eq!(unrelated, "", "no overlap, no section");
    let (_, third) = context("3");
    assert!(
        third.contains("- src/parser.rs modified_by task:1 [task:1]"),
        "{third}"
    );

    let (run4, _) = context("4");
    ingest(
        &runtime,
        &run4,
        SourceRole::Implementer,
        "4",
        &implementer("4", "completed", &["src/parser.rs"]),
    );
    let (_, fifth) = context("5");
    assert!(
        fifth.contains("- src/parser.rs modified_by task:4 [task:4]"),
        "{fifth}"
    );
    assert!(!fifth.contains("modified_by task:1"), "{fifth}");
}

#[test]
fn initializing_a_run_again_keeps_its_ledger_and_a_new_binding_starts_afresh() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "blocked", &[]),
    );
    ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "blocked", &[]),
    );
    let before = runtime.get_snapshot(&run).unwrap();
    let stalled = |snapshot: &dispatch_runtime::Snapshot| {
        snapshot
            .facts
            .iter()
            .find(|f| f.k == "ledger.task.stalled_count")
            .map(|f| f.v.clone())
    };
    assert_eq!(stalled(&before).as_deref(), Some("2"));

    // Same run, same task: an orchestrator restarting its loop keeps the stall count.
    assert_eq!(init(&runtime, dir.path(), "demo", "1"), run);
    let again = runtime.get_snapshot(&run).unwrap();
    assert_eq!(stalled(&again).as_deref(), Some("2"));
    assert!(again.revision >= before.revision);

    // The same run id bound to another task starts a new ledger, when asked explicitly.
    let rebind = |rebind| {
        runtime.init_run(
            InitRunRequest::new("demo", "2")
                .with_project_path(dir.path().to_owned())
                .with_run_id(run.clone())
                .with_rebind(rebind),
        )
    };
    assert_eq!(rebind(false).unwrap_err().code(), "run_rebind");
    let rebound = rebind(true).unwrap();
    let fresh = runtime.get_snapshot(&rebound.run_id).unwrap();
    assert_ne!(stalled(&fresh).as_deref(), Some("2"));
}

#[test]
fn facts_never_leak_between_specs() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "completed", &["src/parser.rs"]),
    );
    assert!(!subjects(&runtime, "demo", "2", "parser").is_empty());
    assert!(subjects(&runtime, "other", "2", "parser").is_empty());
}

#[test]
fn approval_settles_earlier_fixes_and_blockers() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "1",
        &reviewer("1", "needs_changes", &["rename the parser module"]),
    );
    assert!(
        subjects(&runtime, "demo", "2", "rename parser module")
            .iter()
            .any(|s| s.contains("must_fix"))
    );
    let approved = ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "1",
        &reviewer("1", "approved", &[]),
    );
    assert!(approved.facts_invalidated >= 1);
    assert!(
        !subjects(&runtime, "demo", "2", "rename parser module")
            .iter()
            .any(|s| s.contains("must_fix"))
    );
}

#[test]
fn approval_settles_the_issues_of_its_own_task_only() {
    let dir = project();
    let runtime = runtime();
    let (run2, run3) = (
        init(&runtime, dir.path(), "demo", "2"),
        init(&runtime, dir.path(), "demo", "3"),
    );
    let review = |task: &str, assessment: &str, issues: Value| json!({"task_id": task, "assessment": assessment, "issues": issues});
    let issue = |file: &str, message: &str| json!({"severity": "important", "message": message, "file": file});
    let valid_issues = |subject: &str| -> Vec<String> {
        runtime
            .fact_history("demo", subject)
            .unwrap()
            .into_iter()
            .filter(|f| f.is_valid() && f.relation() == "issue")
            .map(|f| format!("{} from task {}", f.object(), f.source_task_id()))
            .collect()
    };
    let raised = json!([
        issue("src/store.rs", "Store leaks handles"),
        issue("src/shared.rs", "Methods use camelCase")
    ]);
    ingest(
        &runtime,
        &run2,
        SourceRole::Reviewer,
        "2",
        &review("2", "needs_changes", raised),
    );
    // Task 3's review raises the newer issue about the shared file.
    let raised = json!([issue("src/shared.rs", "No tests for the parser")]);
    ingest(
        &runtime,
        &run3,
        SourceRole::Reviewer,
        "3",
        &review("3", "needs_changes", raised),
    );

    let note = json!([issue("src/notes.rs", "Consider a doc example")]);
    let approved = ingest(
        &runtime,
        &run2,
        SourceRole::Reviewer,
        "2",
        &review("2", "approved", note),
    );
    assert_eq!(approved.next_action, NextAction::AdvanceToNextTask);
    assert!(
        valid_issues("src/store.rs").is_empty(),
        "task 2's issue is settled"
    );
    assert_eq!(
        valid_issues("src/shared.rs"),
        ["[important] No tests for the parser from task 3"],
        "task 3's issue about the same file stays"
    );
    assert_eq!(
        valid_issues("src/notes.rs"),
        ["[important] Consider a doc example from task 2"],
        "the approving review's own notes stay"
    );
    // Every version is still in the history.
    assert_eq!(
        runtime.fact_history("demo", "src/store.rs").unwrap().len(),
        1
    );
}

#[test]
fn blocked_blocked_completed_stalls_then_recovers() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    assert!(
        !ingest(
            &runtime,
            &run,
            SourceRole::Implementer,
            "1",
            &implementer("1", "blocked", &[])
        )
        .replan_required
    );
    let second = ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "blocked", &[]),
    );
    assert!(second.replan_required);
    assert!(second.replan_hint.unwrap().contains("stalled"));
    assert!(
        !ingest(
            &runtime,
            &run,
            SourceRole::Implementer,
            "1",
            &implementer("1", "completed", &[])
        )
        .replan_required
    );
}

#[test]
fn the_same_change_request_twice_is_a_review_loop() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "1",
        &reviewer("1", "needs_changes", &["a", "b"]),
    );
    ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "completed", &[]),
    );
    let again = ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "1",
        &reviewer("1", "needs_changes", &["b", "a"]),
    );
    assert!(again.replan_required);
    assert_eq!(runtime.telemetry().unwrap().approval_loops, 1);
}

#[test]
fn the_snapshot_shows_the_task_ledger_and_its_history() {
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "2");
    ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "2",
        &implementer("2", "completed", &[]),
    );
    let snapshot = runtime.get_snapshot(&run).unwrap();
    assert_eq!(snapshot.status, Some(IngestStatus::Recorded));
    let get = |k: &str| {
        snapshot
            .facts
            .iter()
            .find(|f| f.k == k)
            .map(|f| f.v.clone())
    };
    assert_eq!(
        get("ledger.task.summary").as_deref(),
        Some("task 2 went completed")
    );
    assert_eq!(get("ledger.progress.spec_name").as_deref(), Some("demo"));
    assert_eq!(get("ledger.progress.active_task_id").as_deref(), Some("1"));
    assert_eq!(snapshot.revision, snapshot.history.len() as u64);
    assert!(runtime.get_snapshot("nope").is_err());
}

#[test]
fn six_hundred_results_compact_to_five_hundred_keeping_the_newest() {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/big");
    std::fs::create_dir_all(&folder).unwrap();
    let tasks: String = (1..=600)
        .map(|n| format!("- [ ] {n}. Task {n}\n"))
        .collect();
    std::fs::write(folder.join("tasks.md"), tasks).unwrap();
    let runtime = runtime();
    for n in 1..=600 {
        let task = n.to_string();
        let run = init(&runtime, dir.path(), "big", &task);
        let result = json!({"task_id": task, "status": "completed", "summary": format!("implemented module {n}"),
                            "files_changed": [format!("src/module_{n}.rs")]});
        ingest(&runtime, &run, SourceRole::Implementer, &task, &result);
    }
    let telemetry = runtime.telemetry().unwrap();
    assert!(telemetry.facts_valid <= 500, "{}", telemetry.facts_valid);
    let newest = runtime.fact_history("big", "src/module_600.rs").unwrap();
    assert_eq!(newest.len(), 1);
    assert!(
        newest[0].is_valid(),
        "the newest task's facts survive verbatim"
    );
    let oldest = runtime.fact_history("big", "task:1").unwrap();
    assert!(
        oldest
            .iter()
            .all(|f| !f.is_valid() || f.relation() == "compacted"),
        "{oldest:?}"
    );
}

/// A runtime whose every spec store is the one `open` makes (a durable store reopened).
fn runtime_on(
    open: impl Fn() -> Arc<dyn SessionFactStore> + Send + Sync + 'static,
) -> DispatchRuntimeManager {
    DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::new(
            "2026-11-22T09:00:00Z".parse().unwrap(),
        )))
        .stores(Box::new(move |_, _| Ok(open())))
        .build()
}

/// A review raises issues, the process restarts, the approval arrives: what the review
/// opened is settled from the store alone, with nothing carried in process memory.
pub(crate) fn approval_after_a_restart_settles_what_the_review_opened(
    open: impl Fn() -> Arc<dyn SessionFactStore> + Clone + Send + Sync + 'static,
) {
    let dir = project();
    let issue =
        json!({"severity": "important", "message": "Store leaks handles", "file": "src/store.rs"});
    let review = |assessment: &str, issues: Value, fixes: Value| json!({"task_id": "2", "assessment": assessment, "issues": issues, "required_fixes": fixes});
    {
        let before = runtime_on(open.clone());
        let run = init(&before, dir.path(), "demo", "2");
        ingest(
            &before,
            &run,
            SourceRole::Reviewer,
            "2",
            &review("needs_changes", json!([issue]), json!(["close handles"])),
        );
    }
    let after = runtime_on(open.clone());
    let run = init(&after, dir.path(), "demo", "2");
    let approved = ingest(
        &after,
        &run,
        SourceRole::Reviewer,
        "2",
        &review("approved", json!([]), json!([])),
    );
    assert_eq!(approved.next_action, NextAction::AdvanceToNextTask);
    let store = open();
    let open_items: Vec<String> = store
        .valid_facts()
        .unwrap()
        .iter()
        .filter(|f| matches!(f.relation(), "issue" | "must_fix"))
        .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
        .collect();
    assert!(
        open_items.is_empty(),
        "still open after the approval: {open_items:?}"
    );
    assert!(approved.facts_invalidated >= 2, "{approved:?}");
}

#[test]
fn approval_after_a_restart_settles_what_the_review_opened_in_memory() {
    let shared: Arc<dyn SessionFactStore> = Arc::new(InMemorySessionFactStore::default());
    approval_after_a_restart_settles_what_the_review_opened(move || shared.clone());
}

#[test]
fn a_finished_spec_session_is_archived_as_facts_and_an_episode() {
    use fact_store::{EpisodeStore, InMemoryEpisodeStore};
    let dir = project();
    let runtime = runtime();
    let run = init(&runtime, dir.path(), "demo", "1");
    ingest(
        &runtime,
        &run,
        SourceRole::Implementer,
        "1",
        &implementer("1", "completed", &["src/parser.rs"]),
    );
    ingest(
        &runtime,
        &run,
        SourceRole::Reviewer,
        "1",
        &reviewer("1", "approved", &[]),
    );
    let facts = InMemorySessionFactStore::default();
    let episodes = InMemoryEpisodeStore::default();
    let archive = runtime.archive_spec("demo", &facts, &episodes).unwrap();
    let valid = runtime
        .query_facts("demo", &FactQuery::new("9", "parser"))
        .unwrap();
    assert!(!valid.facts.is_empty());
    assert_eq!(facts.valid_count().unwrap(), archive.facts.added.len());
    assert!(
        archive.summary.contains("1 tasks completed (task:1)"),
        "{}",
        archive.summary
    );
    assert!(
        archive.summary.contains("1 files changed (src/parser.rs)"),
        "{}",
        archive.summary
    );
    let episode = episodes.episode(&archive.episode_id).unwrap().unwrap();
    assert_eq!(episode.title, "spec demo: dispatch session");
    assert!(episode.extracted_at.is_some());
    // Archiving again repeats nothing: the facts are refreshed.
    let again = runtime.archive_spec("demo", &facts, &episodes).unwrap();
    assert!(again.facts.added.is_empty());
}

#[cfg(feature = "sqlite")]
#[test]
fn approval_after_a_restart_settles_what_the_review_opened_on_sqlite() {
    use fact_store::StoreConfig;
    use fact_store_sqlite::SqliteFactStore;
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("facts.db");
    // Every open is a new connection: nothing survives but the file.
    approval_after_a_restart_settles_what_the_review_opened(move || {
        let clock = Arc::new(ManualClock::new("2026-11-22T09:00:00Z".parse().unwrap()));
        Arc::new(
            SqliteFactStore::open(
                &db,
                &dispatch_runtime::durable::spec_scope("demo"),
                StoreConfig::default(),
                clock,
            )
            .unwrap(),
        )
    });
}

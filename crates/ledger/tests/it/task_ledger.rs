//! The task ledger: last write wins, revisions, history, outcomes and failure evidence.

use fact_model::{DispatchResult, ImplementerResult, ReviewerResult, Timestamp};
use ledger::{Fingerprint, ProgressLedger, StallConfig, StateSnapshotFact, TaskLedger, keys};
use serde_json::json;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(secs).unwrap()
}

fn implementer(status: &str, follow_ups: &[&str]) -> DispatchResult {
    let result: ImplementerResult = serde_json::from_value(json!({"task_id": "2", "status": status, "summary": format!("went {status}"), "follow_up_actions": follow_ups})).unwrap();
    result.into()
}

fn reviewer(assessment: &str, fixes: &[&str]) -> DispatchResult {
    let result: ReviewerResult = serde_json::from_value(json!({"task_id": "2", "assessment": assessment,
        "issues": [{"severity": "critical", "file": "src/api.ts", "message": "Missing validation", "fix": "Validate"},
                   {"severity": "minor", "message": "Typo", "fix": "Fix it"}],
        "required_fixes": fixes})).unwrap();
    result.into()
}

#[test]
fn merge_is_last_write_wins_keeping_first_positions_and_history() {
    let mut ledger = TaskLedger::new("2", StallConfig::default());
    ledger.merge(
        [
            StateSnapshotFact::new("a", "1"),
            StateSnapshotFact::new("b", "1"),
        ],
        t(1),
    );
    assert_eq!(ledger.merge([StateSnapshotFact::new("a", "2")], t(2)), 1);
    assert_eq!(
        ledger.merge([StateSnapshotFact::new("a", "2")], t(3)),
        0,
        "no change, no revision"
    );
    let keys: Vec<String> = ledger
        .snapshot()
        .into_iter()
        .map(|f| format!("{}={}", f.k, f.v))
        .collect();
    assert_eq!(keys, ["a=2", "b=1"]);
    assert_eq!(ledger.revision(), 3);
    let changes: Vec<_> = ledger
        .history_of("a")
        .map(|c| (c.revision, c.old.clone(), c.new.clone(), c.at))
        .collect();
    assert_eq!(
        changes,
        [
            (1, None, "1".to_owned(), t(1)),
            (3, Some("1".to_owned()), "2".to_owned(), t(2))
        ]
    );
}

#[test]
fn implementer_outcomes_set_the_summary_and_blockers() {
    let mut ledger = TaskLedger::new("2", StallConfig::default());
    ledger.apply(&implementer("blocked", &["Decide the schema"]), t(1));
    ledger.apply(
        &implementer("failed", &["Fix the build", "Decide the schema"]),
        t(2),
    );
    assert_eq!(
        ledger.get(keys::TASK_BLOCKERS),
        Some(r#"["Decide the schema","Fix the build"]"#)
    );
    assert_eq!(ledger.get(keys::TASK_SUMMARY), Some("went failed"));
    assert_eq!(ledger.get(keys::TASK_STALLED_FLAGGED), Some("true"));
    assert!(
        ledger
            .get(keys::TASK_REPLAN_HINT)
            .unwrap()
            .contains("2 non-progress outcomes in a row (threshold 2)")
    );
    ledger.apply(&implementer("completed", &[]), t(3));
    assert_eq!(ledger.get(keys::TASK_BLOCKERS), Some("[]"));
    assert_eq!(ledger.get(keys::TASK_STALLED_COUNT), Some("0"));
    assert_eq!(ledger.get(keys::TASK_REPLAN_HINT), Some(""));
    assert_eq!(ledger.get(keys::TASK_PLAN_VERSION), Some("3"));
    // Every earlier summary stays inspectable.
    assert_eq!(ledger.history_of(keys::TASK_SUMMARY).count(), 3);
}

#[test]
fn a_failed_attempt_leaves_its_failed_tests_as_evidence_until_one_completes() {
    let mut ledger = TaskLedger::new("2", StallConfig::default());
    let attempt = |status: &str| -> DispatchResult {
        let result: ImplementerResult =
        serde_json::from_value(serde_json::json!({
            "task_id": "2", "status": status, "summary": "tried",
            "tests": [
                {"command": "cargo test", "passed": false, "failures": ["parser::blank panicked", " "]},
                {"command": "cargo clippy", "passed": false},
                {"command": "cargo fmt", "passed": true, "failures": ["ignored"]}
            ]
        }))
        .unwrap();
        result.into()
    };
    ledger.apply(&attempt("failed"), t(1));
    assert_eq!(
        ledger.failure_evidence().unwrap(),
        "Failed tests:\n- cargo test: parser::blank panicked\n- cargo clippy: failed"
    );
    // After a rejection too, both parts, the rejection first.
    ledger.apply(&reviewer("needs_changes", &["Validate the body"]), t(2));
    ledger.apply(&attempt("blocked"), t(3));
    let evidence = ledger.failure_evidence().unwrap();
    assert!(evidence.starts_with("Rejection reasons:"), "{evidence}");
    assert!(
        evidence.ends_with(
            "Failed tests:\n- cargo test: parser::blank panicked\n- cargo clippy: failed"
        )
    );
    ledger.apply(&attempt("completed"), t(4));
    assert_eq!(ledger.get(keys::TASK_TEST_FAILURES), Some("[]"));
    assert!(!ledger.failure_evidence().unwrap().contains("Failed tests"));
}

#[test]
fn reviewer_outcomes_set_assessment_issues_fixes_and_evidence() {
    let mut ledger = TaskLedger::new("2", StallConfig::default());
    ledger.apply(&reviewer("needs_changes", &["Validate the body"]), t(1));
    assert_eq!(
        ledger.get(keys::TASK_REVIEWER_ASSESSMENT),
        Some("needs_changes")
    );
    assert_eq!(
        ledger.get(keys::TASK_REQUIRED_FIXES),
        Some(r#"["Validate the body"]"#)
    );
    assert_eq!(
        ledger.failure_evidence().unwrap(),
        "Rejection reasons:\n[critical] src/api.ts: Missing validation\n[minor] Typo\nRequired fixes:\n- Validate the body"
    );
    ledger.apply(&reviewer("blocked", &["Ask for credentials"]), t(2));
    assert_eq!(
        ledger.get(keys::TASK_BLOCKERS),
        Some(r#"["Ask for credentials"]"#)
    );
    ledger.apply(&reviewer("approved", &[]), t(3));
    assert_eq!(
        (
            ledger.get(keys::TASK_BLOCKERS),
            ledger.get(keys::TASK_REQUIRED_FIXES)
        ),
        (Some("[]"), Some("[]"))
    );
    assert_eq!(ledger.failure_evidence(), None);
    let issues: serde_json::Value =
        serde_json::from_str(ledger.get(keys::TASK_REVIEWER_ISSUES).unwrap()).unwrap();
    assert_eq!(issues[0]["file"], "src/api.ts");
}

#[test]
fn a_repeated_review_flags_a_loop_with_a_replan_hint() {
    let mut ledger = TaskLedger::new("2", StallConfig::default());
    ledger.apply(&reviewer("needs_changes", &["a", "b"]), t(1));
    ledger.apply(&implementer("completed", &[]), t(2));
    ledger.apply(&reviewer("needs_changes", &["b", "a"]), t(3));
    assert!(ledger.stall().review_loop);
    assert!(
        ledger
            .get(keys::TASK_REPLAN_HINT)
            .unwrap()
            .contains("review loop")
    );
}

#[test]
fn progress_keys_come_from_the_progress_ledger() {
    let text = "- [x] 1. Parse\n- [-] 2. Index the facts\n";
    let progress = ProgressLedger::from_text(
        "demo",
        "specs/demo/tasks.md",
        text,
        Fingerprint::of(text.as_bytes(), None),
    )
    .unwrap();
    let mut ledger = TaskLedger::new("2", StallConfig::default());
    ledger.apply_progress(&progress, t(1));
    assert_eq!(ledger.get(keys::PROGRESS_SPEC_NAME), Some("demo"));
    assert_eq!(ledger.get(keys::PROGRESS_ACTIVE_TASK_ID), Some("2"));
    assert_eq!(
        ledger.get(keys::PROGRESS_CURRENT_TASK),
        Some("2 Index the facts")
    );
    assert_eq!(
        ledger.get(keys::PROGRESS_TOTALS),
        Some(r#"{"total":2,"completed":1,"in_progress":1,"pending":0}"#)
    );
    assert_eq!(
        ledger.get(keys::PROGRESS_SOURCE_FINGERPRINT),
        Some(progress.fingerprint().hash.as_str())
    );
    assert_eq!(ledger.get(keys::PROGRESS_TASK_ID), Some("2"));
}

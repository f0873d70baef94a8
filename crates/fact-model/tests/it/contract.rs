//! The dispatch contract types: lenient where extraction needs it, strict on enums.

use fact_model::{Assessment, ImplementerResult, ImplementerStatus, ReviewerResult, Severity};
use serde_json::json;

#[test]
fn implementer_result_accepts_both_file_list_names_and_nulls() {
    let full: ImplementerResult = serde_json::from_value(json!({
        "task_id": "1", "status": "blocked", "summary": "Stuck on the schema",
        "files_changed": ["a.rs", "b.rs"],
        "tests": [{"command": "cargo test", "passed": false, "failures": ["x failed"]}],
        "follow_up_actions": ["Ask for the schema"]
    }))
    .unwrap();
    assert_eq!(full.status, ImplementerStatus::Blocked);
    assert_eq!(full.files_changed, ["a.rs", "b.rs"]);
    assert_eq!(full.tests[0].failures, ["x failed"]);

    let sparse: ImplementerResult = serde_json::from_value(json!({
        "task_id": "1", "status": "failed", "summary": null,
        "files_modified": null, "follow_up_actions": null
    }))
    .unwrap();
    assert_eq!(sparse.summary, "");
    assert!(sparse.files_changed.is_empty() && sparse.tests.is_empty());
    assert!(sparse.follow_up_actions.is_empty());
}

#[test]
fn enums_are_strict() {
    let err =
        serde_json::from_value::<ImplementerResult>(json!({"task_id": "1", "status": "done"}))
            .unwrap_err();
    assert!(err.to_string().contains("unknown variant `done`"), "{err}");
    let err = serde_json::from_value::<ReviewerResult>(json!({"task_id": "1", "assessment": "ok"}))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("expected one of `approved`, `needs_changes`, `blocked`"),
        "{err}"
    );
}

#[test]
fn reviewer_result_roundtrips() {
    let review: ReviewerResult = serde_json::from_value(json!({
        "task_id": "4", "assessment": "needs_changes", "strengths": ["clear"],
        "issues": [
            {"severity": "important", "file": "src/a.rs", "message": "Use snake_case", "fix": "Rename"},
            {"severity": "minor", "message": "Typo", "fix": null}
        ],
        "required_fixes": ["Rename fooBar"]
    }))
    .unwrap();
    assert_eq!(review.assessment, Assessment::NeedsChanges);
    assert_eq!(review.issues[1].file, None);
    assert_eq!(review.issues[1].fix, "");
    assert_eq!(
        review.issues[0].severity.as_str(),
        Severity::Important.as_str()
    );
    let back: ReviewerResult =
        serde_json::from_value(serde_json::to_value(&review).unwrap()).unwrap();
    assert_eq!(back, review);
}

//! Every default rule, on realistic and on sparse results.

use fact_model::{DispatchResult, SourceRole};
use serde_json::json;

use fact_extract::{Extraction, FactExtractor};

use super::{at, check_implementer, check_reviewer, extractor};

#[test]
fn implementer_result_with_two_files_and_two_follow_ups() {
    let extraction = check_implementer(
        json!({
            "task_id": "7", "status": "completed",
            "summary": "Added the retry loop to src/dispatch/retry.rs and documented it in docs/retry.md.",
            "files_changed": ["src/dispatch/retry.rs", "src/dispatch/mod.rs"],
            "tests": [{"command": "cargo test -p dispatch", "passed": true}],
            "follow_up_actions": ["Wire the retry loop into the runtime", "Add a benchmark"]
        }),
        &[
            "task:7 | completed_with | completed | decision",
            "task:7 | summary | Added the retry loop to src/dispatch/retry.rs and documented it in docs/retry.md. | decision",
            "src/dispatch/retry.rs | modified_by | task:7 | file_change",
            "src/dispatch/mod.rs | modified_by | task:7 | file_change",
            "docs/retry.md | mentioned_by | task:7 | file_change",
            "task:7 | requires | Wire the retry loop into the runtime | dependency",
            "task:7 | requires | Add a benchmark | dependency",
            "cargo test -p dispatch | passed_in | task:7 | test",
        ],
    );
    assert!(extraction.diagnostics.is_empty());
    for fact in &extraction.facts {
        assert_eq!(
            (
                fact.source_task_id(),
                fact.source_role(),
                fact.confidence(),
                fact.valid_from()
            ),
            ("7", SourceRole::Implementer, 1.0, at()),
            "{fact:?}"
        );
    }
}

#[test]
fn blocked_and_failed_results_record_blockers_and_failures() {
    check_implementer(
        json!({
            "task_id": "7", "status": "blocked", "summary": "Cannot continue",
            "files_modified": [],
            "tests": [{"command": "cargo test", "passed": false,
                       "failures": ["parser::tests::empty panicked", "  "]}],
            "follow_up_actions": ["Decide the AST schema"]
        }),
        &[
            "task:7 | completed_with | blocked | decision",
            "task:7 | summary | Cannot continue | decision",
            "task:7 | requires | Decide the AST schema | dependency",
            "task:7 | blocked_by | Decide the AST schema | error",
            "cargo test | failed_in | task:7 | test",
            "cargo test | failure | parser::tests::empty panicked | test,error",
        ],
    );
    check_implementer(
        json!({"task_id": "7", "status": "failed", "follow_up_actions": ["Retry"]}),
        &[
            "task:7 | completed_with | failed | decision",
            "task:7 | requires | Retry | dependency",
            "task:7 | blocked_by | Retry | error",
        ],
    );
}

#[test]
fn empty_and_missing_fields_yield_what_they_can() {
    let extraction = check_implementer(
        json!({"task_id": "7", "status": "completed", "summary": "", "files_changed": null,
               "tests": null, "follow_up_actions": ["", "   "]}),
        &["task:7 | completed_with | completed | decision"],
    );
    assert!(extraction.diagnostics.is_empty());
    let extraction = check_reviewer(
        json!({"task_id": "7", "assessment": "approved", "issues": [], "required_fixes": null}),
        &["task:7 | reviewed_as | approved | decision"],
    );
    assert!(extraction.diagnostics.is_empty());
    check_reviewer(
        json!({"task_id": "7", "assessment": "blocked",
               "issues": [{"severity": "minor", "file": "  ", "message": " ", "fix": ""}],
               "required_fixes": [""]}),
        &["task:7 | reviewed_as | blocked | decision"],
    );
}

#[test]
fn reviewer_result_with_two_issues_and_one_required_fix() {
    let extraction = check_reviewer(
        json!({
            "task_id": "7", "assessment": "needs_changes", "strengths": ["Clear tests"],
            "issues": [
                {"severity": "important", "file": "src/api/handler.rs",
                 "message": "Function names break the snake_case naming convention",
                 "fix": "Rename getUser to get_user"},
                {"severity": "critical", "message": "Missing input validation",
                 "fix": "Validate the request body"}
            ],
            "required_fixes": ["Validate the request body before parsing"]
        }),
        &[
            "task:7 | reviewed_as | needs_changes | decision",
            "src/api/handler.rs | issue | [important] Function names break the snake_case naming convention | error",
            "task:7 | issue | [critical] Missing input validation | error",
            "task:7 | must_fix | Validate the request body before parsing | convention",
            "src/api/handler.rs | convention | Function names break the snake_case naming convention | convention",
        ],
    );
    assert!(
        extraction
            .facts
            .iter()
            .all(|f| f.source_role() == SourceRole::Reviewer)
    );
}

#[test]
fn a_convention_named_only_in_the_fix_counts() {
    check_reviewer(
        json!({"task_id": "7", "assessment": "needs_changes",
               "issues": [{"severity": "minor", "message": "Inconsistent names", "fix": "Use PascalCase for types"}]}),
        &[
            "task:7 | reviewed_as | needs_changes | decision",
            "task:7 | issue | [minor] Inconsistent names | error",
            "task:7 | convention | Inconsistent names | convention",
        ],
    );
}

#[test]
fn long_texts_are_clipped_on_char_boundaries() {
    let summary = "é".repeat(300);
    let path = format!("src/{}.rs", "a".repeat(300));
    let extraction = check_implementer(
        json!({"task_id": "7", "status": "completed", "summary": summary, "files_changed": [path]}),
        &[
            "task:7 | completed_with | completed | decision",
            &format!("task:7 | summary | {}... | decision", "é".repeat(117)),
            &format!(
                "src/{}... | modified_by | task:7 | file_change",
                "a".repeat(193)
            ),
        ],
    );
    assert_eq!(extraction.facts[1].object().chars().count(), 120);
    assert_eq!(extraction.facts[2].subject().chars().count(), 200);
}

#[test]
fn repeated_entries_become_one_fact() {
    check_implementer(
        json!({"task_id": "7", "status": "completed",
               "files_changed": ["src/a.rs", "src/a.rs"], "follow_up_actions": ["x", "x"]}),
        &[
            "task:7 | completed_with | completed | decision",
            "src/a.rs | modified_by | task:7 | file_change",
            "task:7 | requires | x | dependency",
        ],
    );
}

#[test]
fn every_rule_alone() {
    use std::sync::Arc;

    use fact_extract::{ExtractionRule, FactExtractor, RuleBasedFactExtractor, rules};
    use fact_model::{ImplementerResult, ManualClock, ReviewerResult};

    let implementer: ImplementerResult = serde_json::from_value(json!({
        "task_id": "7", "status": "failed",
        "summary": "Touched src/a.rs and\nsrc/b.rs",
        "files_changed": ["src/a.rs"],
        "tests": [{"command": "cargo test", "passed": false, "failures": ["t1 failed"]}],
        "follow_up_actions": ["Fix t1"]
    }))
    .unwrap();
    let reviewer: ReviewerResult = serde_json::from_value(json!({
        "task_id": "7", "assessment": "needs_changes",
        "issues": [{"severity": "minor", "file": "src/a.rs", "message": "Wrong naming style", "fix": "Rename"}],
        "required_fixes": ["Rename things"]
    }))
    .unwrap();
    type Case<R> = (Box<dyn ExtractionRule<R>>, &'static [&'static str]);
    let alone = || RuleBasedFactExtractor::empty(Arc::new(ManualClock::new(at())));
    let implementer_cases: Vec<Case<ImplementerResult>> = vec![
        (
            Box::new(rules::STATUS),
            &["task:7 | completed_with | failed | decision"],
        ),
        (
            Box::new(rules::SUMMARY),
            &["task:7 | summary | Touched src/a.rs and src/b.rs | decision"],
        ),
        (
            Box::new(rules::FILES_CHANGED),
            &["src/a.rs | modified_by | task:7 | file_change"],
        ),
        (
            Box::new(rules::MENTIONED_PATHS),
            &["src/b.rs | mentioned_by | task:7 | file_change"],
        ),
        (
            Box::new(rules::FOLLOW_UPS),
            &["task:7 | requires | Fix t1 | dependency"],
        ),
        (
            Box::new(rules::BLOCKERS),
            &["task:7 | blocked_by | Fix t1 | error"],
        ),
        (
            Box::new(rules::TEST_RUNS),
            &["cargo test | failed_in | task:7 | test"],
        ),
        (
            Box::new(rules::TEST_FAILURES),
            &["cargo test | failure | t1 failed | test,error"],
        ),
    ];
    for (rule, expect) in implementer_cases {
        let name = rule.name().to_owned();
        let extraction = alone()
            .with_implementer_rule(rule)
            .extract(&DispatchResult::Implementer(implementer.clone()), "7");
        assert_eq!(super::lines(&extraction), expect, "{name}");
    }
    let reviewer_cases: Vec<Case<ReviewerResult>> = vec![
        (
            Box::new(rules::ASSESSMENT),
            &["task:7 | reviewed_as | needs_changes | decision"],
        ),
        (
            Box::new(rules::ISSUES),
            &["src/a.rs | issue | [minor] Wrong naming style | error"],
        ),
        (
            Box::new(rules::REQUIRED_FIXES),
            &["task:7 | must_fix | Rename things | convention"],
        ),
        (
            Box::new(rules::CONVENTIONS),
            &["src/a.rs | convention | Wrong naming style | convention"],
        ),
    ];
    for (rule, expect) in reviewer_cases {
        let name = rule.name().to_owned();
        let extraction = alone()
            .with_reviewer_rule(rule)
            .extract(&DispatchResult::Reviewer(reviewer.clone()), "7");
        assert_eq!(super::lines(&extraction), expect, "{name}");
    }
}

/// What a result settles, as `subject? relation from task?` lines.
fn settles(extraction: &Extraction) -> Vec<String> {
    extraction
        .settles
        .iter()
        .map(|s| {
            format!(
                "{} {} from {}",
                s.subject.as_deref().unwrap_or("*"),
                s.relation,
                s.source_task_id.as_deref().unwrap_or("*")
            )
        })
        .collect()
}

#[test]
fn what_results_settle_is_decided_beside_the_rules() {
    let approval = check_reviewer(
        json!({"task_id": "7", "assessment": "approved"}),
        &["task:7 | reviewed_as | approved | decision"],
    );
    assert_eq!(
        settles(&approval),
        [
            "* issue from 7",
            "task:7 must_fix from *",
            "task:7 blocked_by from *"
        ]
    );
    let changes = json!({"task_id": "7", "assessment": "needs_changes",
        "issues": [{"severity": "important", "message": "no tests", "file": "src/a.rs"}]});
    let result: fact_model::ReviewerResult = serde_json::from_value(changes).unwrap();
    assert!(
        extractor()
            .extract(&DispatchResult::Reviewer(result.clone()), "7")
            .settles
            .is_empty()
    );

    let done: fact_model::ImplementerResult =
        serde_json::from_value(json!({"task_id": "7", "status": "completed"})).unwrap();
    let extraction = extractor().extract(&DispatchResult::Implementer(done.clone()), "7");
    assert_eq!(settles(&extraction), ["task:7 blocked_by from *"]);
    let blocked: fact_model::ImplementerResult = serde_json::from_value(
        json!({"task_id": "7", "status": "blocked", "blockers": ["no schema"]}),
    )
    .unwrap();
    assert!(
        extractor()
            .extract(&DispatchResult::Implementer(blocked.clone()), "7")
            .settles
            .is_empty()
    );
}

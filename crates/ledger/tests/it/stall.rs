//! Stall detection: data-driven sequences and a property test.

use fact_model::{Assessment, ImplementerStatus, ReviewerResult};
use ledger::{IssueFingerprint, Outcome, StallConfig, StallDetector};
use proptest::prelude::*;
use serde_json::json;

fn review(assessment: Assessment, fixes: &[&str]) -> Outcome {
    let result: ReviewerResult = serde_json::from_value(json!({
        "task_id": "1", "assessment": assessment, "required_fixes": fixes
    }))
    .unwrap();
    Outcome::review(&result)
}

/// Runs outcomes through a detector (threshold 2); returns the count after each.
fn counts(outcomes: &[Outcome]) -> Vec<u32> {
    let mut stall = StallDetector::new(StallConfig::default());
    outcomes.iter().map(|o| stall.record(o).count).collect()
}

#[test]
fn progress_resets_non_progress_counts_and_needs_changes_is_neutral() {
    use ImplementerStatus::{Blocked, Completed, Failed};
    let imp = Outcome::Implementer;
    assert_eq!(
        counts(&[imp(Blocked), imp(Failed), imp(Completed)]),
        [1, 2, 0]
    );
    assert_eq!(
        counts(&[
            imp(Failed),
            review(Assessment::NeedsChanges, &["x"]),
            imp(Failed)
        ]),
        [1, 1, 2]
    );
    let (blocked, approved) = (Assessment::Blocked, Assessment::Approved);
    assert_eq!(
        counts(&[
            review(blocked, &[]),
            review(approved, &[]),
            review(blocked, &[])
        ]),
        [1, 0, 1]
    );
}

#[test]
fn the_review_fingerprint_ignores_order() {
    let a: ReviewerResult = serde_json::from_value(
        json!({"task_id": "1", "assessment": "needs_changes", "required_fixes": ["x", "y"]}),
    )
    .unwrap();
    let b: ReviewerResult = serde_json::from_value(
        json!({"task_id": "1", "assessment": "needs_changes", "required_fixes": ["y", "x"]}),
    )
    .unwrap();
    let c: ReviewerResult = serde_json::from_value(
        json!({"task_id": "1", "assessment": "needs_changes", "required_fixes": ["x"]}),
    )
    .unwrap();
    assert_eq!(IssueFingerprint::of(&a), IssueFingerprint::of(&b));
    assert_ne!(IssueFingerprint::of(&a), IssueFingerprint::of(&c));
}

#[test]
fn only_two_consecutive_identical_change_requests_are_a_loop() {
    let mut stall = StallDetector::new(StallConfig::default());
    assert!(
        !stall
            .record(&review(Assessment::NeedsChanges, &["x"]))
            .review_loop
    );
    assert!(
        !stall
            .record(&Outcome::Implementer(ImplementerStatus::Completed))
            .review_loop
    );
    assert!(
        stall
            .record(&review(Assessment::NeedsChanges, &["x"]))
            .review_loop
    );
    assert!(
        !stall
            .record(&review(Assessment::NeedsChanges, &["y"]))
            .review_loop
    );
    assert!(!stall.record(&review(Assessment::Approved, &[])).review_loop);
    assert_eq!(stall.replan_hint("1"), None);
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        prop_oneof![
            Just(ImplementerStatus::Completed),
            Just(ImplementerStatus::Blocked),
            Just(ImplementerStatus::Failed)
        ]
        .prop_map(Outcome::Implementer),
        (
            prop_oneof![
                Just(Assessment::Approved),
                Just(Assessment::NeedsChanges),
                Just(Assessment::Blocked)
            ],
            0usize..3
        )
            .prop_map(|(a, fix)| review(a, &[["a", "b", "c"][fix]])),
    ]
}

fn is_progress(o: &Outcome) -> bool {
    matches!(
        o,
        Outcome::Implementer(ImplementerStatus::Completed)
            | Outcome::Reviewer {
                assessment: Assessment::Approved,
                ..
            }
    )
}

fn is_non_progress(o: &Outcome) -> bool {
    matches!(
        o,
        Outcome::Implementer(ImplementerStatus::Blocked | ImplementerStatus::Failed)
            | Outcome::Reviewer {
                assessment: Assessment::Blocked,
                ..
            }
    )
}

proptest! {
    #[test]
    fn the_count_follows_its_rules(outcomes in proptest::collection::vec(outcome(), 0..40), threshold in 0u32..5) {
        let mut stall = StallDetector::new(StallConfig::default().with_threshold(threshold));
        let threshold = threshold.max(1);
        let mut model = 0u32;
        for o in &outcomes {
            let state = stall.record(o);
            if is_progress(o) { model = 0 } else if is_non_progress(o) { model += 1 }
            prop_assert_eq!(state.count, model);
            if is_progress(o) { prop_assert_eq!(state.count, 0); }
            prop_assert_eq!(state.stalled, state.count >= threshold);
            prop_assert_eq!(stall.replan_hint("t").is_some(), state.stalled || state.review_loop);
        }
    }
}

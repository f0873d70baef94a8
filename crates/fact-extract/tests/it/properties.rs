//! For arbitrary results, extraction never panics and every fact is valid and clipped.

use fact_extract::{FactExtractor, MAX_TEXT_CHARS};
use fact_model::{
    Assessment, DispatchResult, ImplementerResult, ImplementerStatus, MAX_SUBJECT_CHARS,
    ReviewIssue, ReviewerResult, SessionFact, Severity, TestRun,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        1 => "[a-z/._ ]{0,40}",
        1 => (any::<char>(), 0usize..600).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
        1 => Just(String::new()),
    ]
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(text(), 0..6)
}

fn implementer() -> impl Strategy<Value = ImplementerResult> {
    (
        prop_oneof![
            Just(ImplementerStatus::Completed),
            Just(ImplementerStatus::Blocked),
            Just(ImplementerStatus::Failed)
        ],
        text(),
        texts(),
        proptest::collection::vec((text(), any::<bool>(), texts()), 0..4),
        texts(),
    )
        .prop_map(
            |(status, summary, files_changed, tests, follow_up_actions)| ImplementerResult {
                task_id: "1".into(),
                status,
                summary,
                files_changed,
                tests: tests
                    .into_iter()
                    .map(|(command, passed, failures)| TestRun {
                        command,
                        passed,
                        failures,
                    })
                    .collect(),
                follow_up_actions,
            },
        )
}

fn reviewer() -> impl Strategy<Value = ReviewerResult> {
    let issue = (
        prop_oneof![
            Just(Severity::Critical),
            Just(Severity::Important),
            Just(Severity::Minor)
        ],
        proptest::option::of(text()),
        text(),
        text(),
    )
        .prop_map(|(severity, file, message, fix)| ReviewIssue {
            severity,
            file,
            message,
            fix,
        });
    (
        prop_oneof![
            Just(Assessment::Approved),
            Just(Assessment::NeedsChanges),
            Just(Assessment::Blocked)
        ],
        texts(),
        proptest::collection::vec(issue, 0..5),
        texts(),
    )
        .prop_map(
            |(assessment, strengths, issues, required_fixes)| ReviewerResult {
                task_id: "1".into(),
                assessment,
                strengths,
                issues,
                required_fixes,
            },
        )
}

fn check_facts(facts: &[SessionFact]) -> Result<(), TestCaseError> {
    for fact in facts {
        // Each fact survives the model's own validation again.
        let json = serde_json::to_value(fact).unwrap();
        prop_assert_eq!(&serde_json::from_value::<SessionFact>(json).unwrap(), fact);
        prop_assert!(fact.subject().chars().count() <= MAX_SUBJECT_CHARS);
        prop_assert!(fact.object().chars().count() <= MAX_TEXT_CHARS);
        prop_assert!(!fact.subject().trim().is_empty() && !fact.object().trim().is_empty());
    }
    Ok(())
}

proptest! {
    #[test]
    fn implementer_extraction_never_panics_and_stays_within_limits(result in implementer(), task in "[0-9]{1,3}") {
        let extraction = super::extractor().extract(&DispatchResult::Implementer(result.clone()), &task);
        prop_assert!(extraction.diagnostics.is_empty(), "{:?}", extraction.diagnostics);
        check_facts(&extraction.facts)?;
    }

    #[test]
    fn reviewer_extraction_never_panics_and_stays_within_limits(result in reviewer(), task in "[0-9]{1,3}") {
        let extraction = super::extractor().extract(&DispatchResult::Reviewer(result.clone()), &task);
        prop_assert!(extraction.diagnostics.is_empty(), "{:?}", extraction.diagnostics);
        check_facts(&extraction.facts)?;
    }

    #[test]
    fn path_detection_never_panics_and_returns_substrings(text in any::<String>()) {
        for path in fact_extract::paths_in(&text) {
            prop_assert!(text.contains(path));
            prop_assert!(!path.is_empty());
        }
    }
}

//! A rule that fails or panics is isolated; every other rule still runs.

use std::sync::Arc;

use fact_extract::{
    ExtractionRule, FactExtractor, RuleBasedFactExtractor, RuleContext, RuleError, RuleOutput,
};
use fact_model::{DispatchResult, ImplementerResult, ManualClock, ReviewerResult, Tag};
use serde_json::json;

use super::{at, lines};

#[derive(Debug)]
struct Panics;

impl ExtractionRule<ImplementerResult> for Panics {
    fn name(&self) -> &str {
        "test.panics"
    }

    fn extract(&self, _: &ImplementerResult, _: &RuleContext<'_>) -> Result<RuleOutput, RuleError> {
        panic!("boom")
    }
}

#[derive(Debug)]
struct Fails;

impl ExtractionRule<ReviewerResult> for Fails {
    fn name(&self) -> &str {
        "test.fails"
    }

    fn extract(&self, _: &ReviewerResult, ctx: &RuleContext<'_>) -> Result<RuleOutput, RuleError> {
        // A relation over the 50-character limit: the rule's fact is invalid.
        let mut out = RuleOutput::default();
        out.push(ctx.fact("x", &"r".repeat(51), "y", &[Tag::Error])?);
        Ok(out)
    }
}

fn implementer() -> ImplementerResult {
    serde_json::from_value(
        json!({"task_id": "1", "status": "completed", "files_changed": ["a.rs"]}),
    )
    .unwrap()
}

#[test]
fn a_panicking_rule_among_the_defaults_becomes_a_diagnostic() {
    let clock = Arc::new(ManualClock::new(at()));
    let extractor =
        RuleBasedFactExtractor::with_defaults(clock).with_implementer_rule(Box::new(Panics));
    let extraction = extractor.extract(&DispatchResult::Implementer(implementer().clone()), "1");
    assert_eq!(
        lines(&extraction),
        [
            "task:1 | completed_with | completed | decision",
            "a.rs | modified_by | task:1 | file_change"
        ]
    );
    assert_eq!(extraction.diagnostics.len(), 1);
    assert_eq!(extraction.diagnostics[0].rule, "test.panics");
    assert_eq!(extraction.diagnostics[0].message, "rule panicked: boom");
}

#[test]
fn a_failing_rule_becomes_a_diagnostic_naming_the_field() {
    let clock = Arc::new(ManualClock::new(at()));
    let extractor =
        RuleBasedFactExtractor::with_defaults(clock).with_reviewer_rule(Box::new(Fails));
    let review: ReviewerResult =
        serde_json::from_value(json!({"task_id": "1", "assessment": "approved"})).unwrap();
    let extraction = extractor.extract(&DispatchResult::Reviewer(review.clone()), "1");
    assert_eq!(
        lines(&extraction),
        ["task:1 | reviewed_as | approved | decision"]
    );
    assert_eq!(
        extraction.diagnostics[0].message,
        "rule failed: `relation` is 51 characters long; the limit is 50"
    );
}

#[test]
fn a_blank_task_id_fails_every_rule_that_makes_a_fact_and_panics_none() {
    let extraction =
        super::extractor().extract(&DispatchResult::Implementer(implementer().clone()), " ");
    assert!(extraction.facts.is_empty());
    assert!(
        extraction
            .diagnostics
            .iter()
            .all(|d| d.message.contains("`source_task_id` must not be empty"))
    );
    assert_eq!(
        extraction.diagnostics.len(),
        2,
        "{:?}",
        extraction.diagnostics
    );
}

#[test]
fn the_extractor_is_usable_as_a_trait_object() {
    let extractor: Box<dyn FactExtractor> = Box::new(super::extractor());
    assert_eq!(
        extractor
            .extract(&DispatchResult::Implementer(implementer().clone()), "1")
            .facts
            .len(),
        2
    );
    let debug = format!("{extractor:?}");
    assert!(debug.contains("implementer.mentioned_paths"), "{debug}");
}

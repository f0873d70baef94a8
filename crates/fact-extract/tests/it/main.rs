//! Integration tests of `fact-extract`: data-driven checks of every rule, isolation of
//! failing rules, a property test over arbitrary results, conversation extraction by an
//! LLM (`llm`), and the extraction contract's page (`docs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod docs;
mod isolation;
mod llm;
mod properties;
mod rules;

use std::sync::Arc;

use fact_extract::{Extraction, FactExtractor, RuleBasedFactExtractor};
use fact_model::{DispatchResult, ImplementerResult, ManualClock, ReviewerResult, Timestamp};

pub(crate) fn at() -> Timestamp {
    "2026-11-22T10:00:00Z".parse().unwrap()
}

pub(crate) fn extractor() -> RuleBasedFactExtractor {
    RuleBasedFactExtractor::with_defaults(Arc::new(ManualClock::new(at())))
}

/// The facts as `subject | relation | object | tags` lines.
pub(crate) fn lines(extraction: &Extraction) -> Vec<String> {
    extraction
        .facts
        .iter()
        .map(|f| {
            let tags: Vec<&str> = f.tags().as_slice().iter().map(|t| t.as_str()).collect();
            format!(
                "{} | {} | {} | {}",
                f.subject(),
                f.relation(),
                f.object(),
                tags.join(",")
            )
        })
        .collect()
}

/// Extracts from an implementer result given as JSON and compares the fact lines.
pub(crate) fn check_implementer(json: serde_json::Value, expect: &[&str]) -> Extraction {
    let result: ImplementerResult = serde_json::from_value(json).unwrap();
    let extraction = extractor().extract(&DispatchResult::Implementer(result.clone()), "7");
    assert_eq!(lines(&extraction), expect);
    extraction
}

/// Extracts from a reviewer result given as JSON and compares the fact lines.
pub(crate) fn check_reviewer(json: serde_json::Value, expect: &[&str]) -> Extraction {
    let result: ReviewerResult = serde_json::from_value(json).unwrap();
    let extraction = extractor().extract(&DispatchResult::Reviewer(result.clone()), "7");
    assert_eq!(lines(&extraction), expect);
    extraction
}

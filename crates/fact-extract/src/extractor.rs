//! [`RuleBasedFactExtractor`]: runs registered rules in order, isolating each.

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use fact_model::{Clock, ImplementerResult, ReviewerResult, SourceRole};

use crate::{Diagnostic, Extraction, ExtractionRule, FactExtractor, RuleContext, rules};

/// A [`FactExtractor`] made of rules, one list per kind of result.
///
/// [`with_defaults`](Self::with_defaults) registers the default rule table; more rules are
/// appended with [`with_implementer_rule`](Self::with_implementer_rule) and
/// [`with_reviewer_rule`](Self::with_reviewer_rule). Each extraction reads the clock once,
/// so all facts of a result share one `valid_from`.
pub struct RuleBasedFactExtractor {
    clock: Arc<dyn Clock>,
    implementer: Vec<Box<dyn ExtractionRule<ImplementerResult>>>,
    reviewer: Vec<Box<dyn ExtractionRule<ReviewerResult>>>,
}

impl fmt::Debug for RuleBasedFactExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let implementer: Vec<&str> = self.implementer_rules().collect();
        let reviewer: Vec<&str> = self.reviewer_rules().collect();
        f.debug_struct("RuleBasedFactExtractor")
            .field("implementer", &implementer)
            .field("reviewer", &reviewer)
            .finish_non_exhaustive()
    }
}

impl RuleBasedFactExtractor {
    /// An extractor with no rules, dated by `clock`.
    #[must_use]
    pub fn empty(clock: Arc<dyn Clock>) -> Self {
        RuleBasedFactExtractor {
            clock,
            implementer: Vec::new(),
            reviewer: Vec::new(),
        }
    }

    /// An extractor with the default rules of [`rules`], dated by `clock`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use fact_extract::RuleBasedFactExtractor;
    /// let extractor = RuleBasedFactExtractor::with_defaults(Arc::new(fact_model::SystemClock));
    /// assert_eq!(extractor.implementer_rules().count(), 8);
    /// assert_eq!(extractor.reviewer_rules().count(), 4);
    /// ```
    #[must_use]
    pub fn with_defaults(clock: Arc<dyn Clock>) -> Self {
        let mut extractor = Self::empty(clock);
        extractor.implementer = rules::implementer_defaults();
        extractor.reviewer = rules::reviewer_defaults();
        extractor
    }

    /// Appends a rule for implementer results.
    #[must_use]
    pub fn with_implementer_rule(
        mut self,
        rule: Box<dyn ExtractionRule<ImplementerResult>>,
    ) -> Self {
        self.implementer.push(rule);
        self
    }

    /// Appends a rule for reviewer results.
    #[must_use]
    pub fn with_reviewer_rule(mut self, rule: Box<dyn ExtractionRule<ReviewerResult>>) -> Self {
        self.reviewer.push(rule);
        self
    }

    /// The names of the implementer rules, in the order they run.
    pub fn implementer_rules(&self) -> impl Iterator<Item = &str> {
        self.implementer.iter().map(|rule| rule.name())
    }

    /// The names of the reviewer rules, in the order they run.
    pub fn reviewer_rules(&self) -> impl Iterator<Item = &str> {
        self.reviewer.iter().map(|rule| rule.name())
    }
}

/// Runs `rules` over `result`, isolating each rule's errors and panics.
fn run<R>(rules: &[Box<dyn ExtractionRule<R>>], result: &R, ctx: &RuleContext<'_>) -> Extraction {
    let mut extraction = Extraction::default();
    let mut seen = HashSet::new();
    for rule in rules {
        let outcome = catch_unwind(AssertUnwindSafe(|| rule.extract(result, ctx)));
        let failure = match outcome {
            Ok(Ok(output)) => {
                for note in output.notes {
                    extraction.diagnostics.push(Diagnostic {
                        rule: rule.name().to_owned(),
                        message: note,
                    });
                }
                for fact in output.facts {
                    if seen.insert(fact.id()) {
                        extraction.facts.push(fact);
                    }
                }
                for selector in output.settles {
                    if !extraction.settles.contains(&selector) {
                        extraction.settles.push(selector);
                    }
                }
                continue;
            }
            Ok(Err(error)) => format!("rule failed: {error}"),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_owned());
                format!("rule panicked: {message}")
            }
        };
        tracing::warn!(rule = rule.name(), task_id = ctx.task_id(), "{failure}");
        extraction.diagnostics.push(Diagnostic {
            rule: rule.name().to_owned(),
            message: failure,
        });
    }
    extraction
}

impl FactExtractor for RuleBasedFactExtractor {
    fn extract_from_implementer(&self, result: &ImplementerResult, task_id: &str) -> Extraction {
        let ctx = RuleContext::now(task_id, SourceRole::Implementer, &*self.clock);
        run(&self.implementer, result, &ctx)
    }

    fn extract_from_reviewer(&self, result: &ReviewerResult, task_id: &str) -> Extraction {
        let ctx = RuleContext::now(task_id, SourceRole::Reviewer, &*self.clock);
        run(&self.reviewer, result, &ctx)
    }
}

//! [`RuleBasedFactExtractor`]: runs registered rules in order, isolating each.

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use fact_model::{
    Clock, DispatchResult, FactId, FactSelector, ImplementerResult, ReviewerResult, SessionFact,
};

use crate::extraction::{Diagnostic, Extraction, FactExtractor};
use crate::rule::{ExtractionRule, RuleContext, RuleOutput};
use crate::rules;

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
///
/// The rules write into one shared output; what a failing rule wrote is cut off again, and
/// a fact whose triple an earlier fact already has is dropped.
fn run<R>(rules: &[Box<dyn ExtractionRule<R>>], result: &R, ctx: &RuleContext<'_>) -> Extraction {
    let mut out = RuleOutput {
        facts: Vec::with_capacity(16),
        settles: Vec::new(),
        notes: Vec::new(),
    };
    let mut diagnostics = Vec::new();
    let mut seen = SeenIds::default();
    for rule in rules {
        let marks = (out.facts.len(), out.settles.len());
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            rule.extract_into(result, ctx, &mut out)
        }));
        let failure = match outcome {
            Ok(Ok(())) => {
                for note in out.notes.drain(..) {
                    diagnostics.push(Diagnostic {
                        rule: rule.name().to_owned(),
                        message: note,
                    });
                }
                seen.keep_new(&mut out.facts, marks.0);
                keep_new_selectors(&mut out.settles, marks.1);
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
        out.facts.truncate(marks.0);
        out.settles.truncate(marks.1);
        out.notes.clear();
        tracing::warn!(rule = rule.name(), task_id = ctx.task_id(), "{failure}");
        diagnostics.push(Diagnostic {
            rule: rule.name().to_owned(),
            message: failure,
        });
    }
    Extraction {
        facts: out.facts,
        settles: out.settles,
        diagnostics,
    }
}

/// Drops the selectors from `start` on that an earlier one repeats.
fn keep_new_selectors(settles: &mut Vec<FactSelector>, start: usize) {
    let mut kept = start;
    for at in start..settles.len() {
        let (earlier, rest) = settles.split_at(kept);
        let repeated = rest
            .get(at - kept)
            .is_none_or(|selector| earlier.contains(selector));
        if !repeated {
            if kept != at {
                settles.swap(kept, at);
            }
            kept += 1;
        }
    }
    settles.truncate(kept);
}

/// Under this many facts, a repeated triple is found by scanning the facts kept so far;
/// above it, through a hash set.
const SCAN_LIMIT: usize = 32;

/// The ids of the facts kept so far: a result makes about ten facts, so a scan of the
/// kept facts beats hashing; a rule that makes hundreds switches to a set.
#[derive(Default)]
struct SeenIds {
    set: Option<HashSet<FactId>>,
}

impl SeenIds {
    /// Drops the facts from `start` on whose triple a kept fact (one before them) has.
    fn keep_new(&mut self, facts: &mut Vec<SessionFact>, start: usize) {
        let mut kept = start;
        for at in start..facts.len() {
            let (earlier, rest) = facts.split_at(kept);
            let Some(id) = rest.get(at - kept).map(SessionFact::id) else {
                break;
            };
            if self.insert(id, earlier) {
                if kept != at {
                    facts.swap(kept, at);
                }
                kept += 1;
            }
        }
        facts.truncate(kept);
    }

    /// Whether `id` is new among `kept` (the facts kept so far, whose ids this tracks).
    fn insert(&mut self, id: FactId, kept: &[SessionFact]) -> bool {
        if let Some(set) = &mut self.set {
            return set.insert(id);
        }
        if kept.iter().any(|fact| fact.id() == id) {
            return false;
        }
        if kept.len() >= SCAN_LIMIT {
            let mut set: HashSet<FactId> = kept.iter().map(SessionFact::id).collect();
            set.insert(id);
            self.set = Some(set);
        }
        true
    }
}

impl FactExtractor for RuleBasedFactExtractor {
    fn extract(&self, result: &DispatchResult, task_id: &str) -> Extraction {
        let ctx = RuleContext::now(task_id, result.role(), &*self.clock);
        match result {
            DispatchResult::Implementer(result) => run(&self.implementer, result, &ctx),
            DispatchResult::Reviewer(result) => run(&self.reviewer, result, &ctx),
        }
    }
}

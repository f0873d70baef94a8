//! The contract the runtime holds for dispatch results: [`FactExtractor`], and the
//! [`Extraction`] it returns with its [`Diagnostic`]s.

use std::fmt::Debug;

use fact_model::{DispatchResult, FactSelector, SessionFact};
use serde::Serialize;

/// Turns dispatch results into facts. Never fails, never panics.
pub trait FactExtractor: Send + Sync + Debug {
    /// The facts of `result`, an implementer's or a reviewer's, for task `task_id`, as one
    /// batch.
    fn extract(&self, result: &DispatchResult, task_id: &str) -> Extraction;
}

impl<E: FactExtractor + ?Sized> FactExtractor for Box<E> {
    fn extract(&self, result: &DispatchResult, task_id: &str) -> Extraction {
        (**self).extract(result, task_id)
    }
}

impl<E: FactExtractor + ?Sized> FactExtractor for std::sync::Arc<E> {
    fn extract(&self, result: &DispatchResult, task_id: &str) -> Extraction {
        (**self).extract(result, task_id)
    }
}

/// What an extraction produced: one batch of facts, what the result settles, and what
/// went wrong on the way.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extraction {
    /// The facts, in rule order, without repeated triples; all share one `valid_from`.
    pub facts: Vec<SessionFact>,
    /// The valid facts the result settles, to invalidate before `facts` are added (so
    /// the result's own facts stay valid), in rule order, without repeats: an approval
    /// settles the issues its task's reviews raised and the task's `must_fix` and
    /// `blocked_by`; a completed implementation settles the task's `blocked_by`. Decided
    /// here, beside the rules that write those relations, and applied by the store, so
    /// nothing about them lives in the memory of one process.
    pub settles: Vec<FactSelector>,
    /// One entry per rule that failed or reported a problem.
    pub diagnostics: Vec<Diagnostic>,
}

/// A problem a rule reported or caused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The rule's name.
    pub rule: String,
    /// What happened.
    pub message: String,
}

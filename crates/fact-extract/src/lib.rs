//! Pluggable extraction of temporal facts: rules for dispatch results, an LLM for
//! conversations.
//!
//! **Dispatch results**, rule-based, no LLM, no I/O:
//!
//! - [`FactExtractor`] is the object-safe contract the runtime holds
//!   (`Box<dyn FactExtractor>`); it never fails and never panics: it returns an
//!   [`Extraction`], the facts it could make plus [`Diagnostic`]s for what went wrong.
//! - [`ExtractionRule`] is one rule, for one kind of result. New rules are *registered*
//!   ([`RuleBasedFactExtractor::with_implementer_rule`]), never added by editing others.
//! - [`RuleBasedFactExtractor`] runs its rules in order, isolating each: a rule that
//!   returns an error or panics becomes a diagnostic and a `tracing` warning, and the
//!   other rules still run.
//!
//! The default rules ([`rules`]) implement the rule table of seed 001 and issue 3.
//!
//! **Conversations**, by a language model (seeds 002 and 004):
//!
//! - [`ConversationExtractor`] is the object-safe contract; [`LlmFactExtractor`] implements
//!   it by prompting an [`LlmClient`] ([`extraction_prompt`]) chunk by chunk
//!   ([`chunk_transcript`]), reading replies leniently ([`parse_reply`]) and checking every
//!   fact's category and confidence; what it skips becomes a [`Diagnostic`].
//! - Clients: [`CommandLlm`] runs a shell command; `OpenAiCompatibleLlm` (feature
//!   `openai`) calls a chat-completions endpoint. Failures are [`LlmError`]s.
//! - [`parse_transcript`] reads a conversation from JSON Lines into [`Message`]s.
//!
//! ```
//! use std::sync::Arc;
//! use fact_extract::{FactExtractor, RuleBasedFactExtractor};
//! use fact_model::{ImplementerResult, ManualClock};
//!
//! let extractor = RuleBasedFactExtractor::with_defaults(Arc::new(ManualClock::default()));
//! let result: ImplementerResult = serde_json::from_str(r#"{
//!     "task_id": "3", "status": "completed",
//!     "summary": "Added the lexer in src/lexer.rs",
//!     "files_changed": ["src/lexer.rs", "src/lib.rs"]
//! }"#)?;
//! let extraction = extractor.extract_from_implementer(&result, "3");
//! let lines: Vec<String> = extraction.facts.iter()
//!     .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
//!     .collect();
//! assert_eq!(lines, [
//!     "task:3 completed_with completed",
//!     "task:3 summary Added the lexer in src/lexer.rs",
//!     "src/lexer.rs modified_by task:3",
//!     "src/lib.rs modified_by task:3",
//! ]);
//! assert!(extraction.diagnostics.is_empty());
//! # Ok::<(), serde_json::Error>(())
//! ```

#![forbid(unsafe_code)]

mod extractor;
mod llm;
mod paths;
pub mod relation;
pub mod rules;

use std::fmt::Debug;

use fact_model::{
    Clock, FactError, FactSelector, ImplementerResult, MAX_SUBJECT_CHARS, ReviewerResult,
    SessionFact, SourceRole, Tag, Timestamp, clip,
};
use serde::Serialize;

pub use crate::extractor::RuleBasedFactExtractor;
pub use crate::llm::{
    CommandLlm, ConversationExtraction, ConversationExtractor, DEFAULT_CATEGORIES,
    ERROR_TAIL_CHARS, EXTRACTION_GUIDE, EXTRACTION_REPLY_SHAPE, LlmClient, LlmError,
    LlmExtractorConfig, LlmFactExtractor, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS, MIN_CHUNK_CHARS,
    Message, MessageRole, ParsedReply, ReplyError, ReplyFact, chunk_transcript, extraction_prompt,
    parse_reply, parse_transcript, render_transcript,
};
#[cfg(feature = "openai")]
pub use crate::llm::{OpenAiCompatibleLlm, OpenAiConfig};
pub use crate::paths::paths_in;

/// Longest object text a default rule writes, in characters (seed 001: "clipped 120 chars").
pub const MAX_TEXT_CHARS: usize = 120;

/// Turns dispatch results into facts. Never fails, never panics.
pub trait FactExtractor: Send + Sync + Debug {
    /// The facts of an implementer's result for task `task_id`, as one batch.
    fn extract_from_implementer(&self, result: &ImplementerResult, task_id: &str) -> Extraction;

    /// The facts of a reviewer's result for task `task_id`, as one batch.
    fn extract_from_reviewer(&self, result: &ReviewerResult, task_id: &str) -> Extraction;
}

impl<E: FactExtractor + ?Sized> FactExtractor for Box<E> {
    fn extract_from_implementer(&self, result: &ImplementerResult, task_id: &str) -> Extraction {
        (**self).extract_from_implementer(result, task_id)
    }

    fn extract_from_reviewer(&self, result: &ReviewerResult, task_id: &str) -> Extraction {
        (**self).extract_from_reviewer(result, task_id)
    }
}

impl<E: FactExtractor + ?Sized> FactExtractor for std::sync::Arc<E> {
    fn extract_from_implementer(&self, result: &ImplementerResult, task_id: &str) -> Extraction {
        (**self).extract_from_implementer(result, task_id)
    }

    fn extract_from_reviewer(&self, result: &ReviewerResult, task_id: &str) -> Extraction {
        (**self).extract_from_reviewer(result, task_id)
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

/// Why a rule gave up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// A fact the rule built was invalid.
    #[error(transparent)]
    Fact(#[from] FactError),
    /// Any other failure, in the rule's words.
    #[error("{0}")]
    Other(String),
}

/// What a rule returns: facts, what the result settles, and notes on input it passed over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleOutput {
    /// The facts, in order.
    pub facts: Vec<SessionFact>,
    /// Valid facts the result settles (see [`Extraction::settles`]).
    pub settles: Vec<FactSelector>,
    /// Problems worth reporting that did not stop the rule.
    pub notes: Vec<String>,
}

impl RuleOutput {
    /// Adds a fact when there is one (see [`RuleContext::fact`]).
    pub fn push(&mut self, fact: Option<SessionFact>) {
        self.facts.extend(fact);
    }
}

/// One extraction rule for results of type `R` (`ImplementerResult` or `ReviewerResult`).
///
/// Object safe: the extractor stores `Box<dyn ExtractionRule<R>>`. A rule reads the
/// result and builds facts through [`RuleContext::fact`], which applies the source,
/// timestamp, clipping and blank-skipping every rule shares. A rule without state is
/// easiest written as a function wrapped in an [`FnRule`]; implement the trait for rules
/// that carry configuration.
///
/// ```
/// use std::sync::Arc;
/// use fact_extract::{ExtractionRule, FactExtractor, RuleBasedFactExtractor, RuleContext, RuleError, RuleOutput};
/// use fact_model::{ImplementerResult, ManualClock, Tag};
///
/// /// Records how many files a task touched.
/// #[derive(Debug)]
/// struct FileCount;
///
/// impl ExtractionRule<ImplementerResult> for FileCount {
///     fn name(&self) -> &str {
///         "implementer.file_count"
///     }
///
///     fn extract(&self, result: &ImplementerResult, ctx: &RuleContext<'_>) -> Result<RuleOutput, RuleError> {
///         let mut out = RuleOutput::default();
///         let count = result.files_changed.len().to_string();
///         out.push(ctx.fact(ctx.task_subject(), "changed_files", &count, &[Tag::FileChange])?);
///         Ok(out)
///     }
/// }
///
/// let extractor = RuleBasedFactExtractor::empty(Arc::new(ManualClock::default()))
///     .with_implementer_rule(Box::new(FileCount));
/// let result: ImplementerResult = serde_json::from_str(
///     r#"{"task_id": "1", "status": "completed", "files_changed": ["a.rs", "b.rs"]}"#,
/// )?;
/// let facts = extractor.extract_from_implementer(&result, "1").facts;
/// assert_eq!(facts[0].object(), "2");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub trait ExtractionRule<R>: Send + Sync + Debug {
    /// A stable name, used in diagnostics, e.g. `implementer.status`.
    fn name(&self) -> &str;

    /// The facts this rule finds in `result`.
    ///
    /// # Errors
    ///
    /// Any [`RuleError`]; the extractor turns it into a diagnostic and discards this
    /// rule's output, keeping every other rule's.
    fn extract(&self, result: &R, ctx: &RuleContext<'_>) -> Result<RuleOutput, RuleError>;
}

/// The signature of a rule written as a plain function: read `result`, push facts and
/// notes into `out`.
pub type RuleFn<R> = fn(&R, &RuleContext<'_>, &mut RuleOutput) -> Result<(), RuleError>;

/// A rule made of a name and a function: the simplest way to write one.
///
/// Every default rule is an `FnRule` constant in [`rules`].
///
/// ```
/// use fact_extract::{FnRule, RuleContext, RuleError, RuleOutput};
/// use fact_model::{ImplementerResult, Tag};
///
/// fn file_count(result: &ImplementerResult, ctx: &RuleContext<'_>, out: &mut RuleOutput) -> Result<(), RuleError> {
///     let count = result.files_changed.len().to_string();
///     out.push(ctx.fact(ctx.task_subject(), "changed_files", &count, &[Tag::FileChange])?);
///     Ok(())
/// }
///
/// const FILE_COUNT: FnRule<ImplementerResult> = FnRule::new("implementer.file_count", file_count);
/// ```
pub struct FnRule<R> {
    name: &'static str,
    extract: RuleFn<R>,
}

impl<R> FnRule<R> {
    /// A rule called `name` that runs `extract`.
    pub const fn new(name: &'static str, extract: RuleFn<R>) -> Self {
        FnRule { name, extract }
    }
}

impl<R> Clone for FnRule<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for FnRule<R> {}

impl<R> Debug for FnRule<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FnRule").field(&self.name).finish()
    }
}

impl<R> ExtractionRule<R> for FnRule<R> {
    fn name(&self) -> &str {
        self.name
    }

    fn extract(&self, result: &R, ctx: &RuleContext<'_>) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        (self.extract)(result, ctx, &mut out)?;
        Ok(out)
    }
}

/// What every rule of one extraction shares: the task, the role and the instant.
#[derive(Debug, Clone)]
pub struct RuleContext<'a> {
    task_id: &'a str,
    task_subject: String,
    role: SourceRole,
    at: Timestamp,
}

impl<'a> RuleContext<'a> {
    /// A context for facts of task `task_id` by `role`, valid from `at`.
    #[must_use]
    pub fn new(task_id: &'a str, role: SourceRole, at: Timestamp) -> Self {
        RuleContext {
            task_id,
            task_subject: format!("task:{task_id}"),
            role,
            at,
        }
    }

    /// A context dated by `clock`.
    #[must_use]
    pub fn now(task_id: &'a str, role: SourceRole, clock: &dyn Clock) -> Self {
        Self::new(task_id, role, clock.now())
    }

    /// The task the facts come from.
    #[must_use]
    pub fn task_id(&self) -> &str {
        self.task_id
    }

    /// `task:{task_id}`, the subject of facts about the task itself.
    #[must_use]
    pub fn task_subject(&self) -> &str {
        &self.task_subject
    }

    /// The role that produced the result.
    #[must_use]
    pub fn role(&self) -> SourceRole {
        self.role
    }

    /// The instant every fact of the extraction is valid from.
    #[must_use]
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// A fact from this task: `subject` clipped to 200 characters; `object` on one line
    /// (runs of whitespace, newlines included, become one space) and clipped to
    /// [`MAX_TEXT_CHARS`]; confidence 1.0. `None` when the subject or object is blank:
    /// empty strings never become facts.
    ///
    /// # Errors
    ///
    /// The [`FactError`] of an invalid field (a relation over 50 characters, a blank task
    /// id, no tags).
    pub fn fact(
        &self,
        subject: &str,
        relation: &str,
        object: &str,
        tags: &[Tag],
    ) -> Result<Option<SessionFact>, FactError> {
        if subject.trim().is_empty() || object.trim().is_empty() {
            return Ok(None);
        }
        let object = one_line(object);
        SessionFact::builder(
            clip(subject, MAX_SUBJECT_CHARS),
            relation,
            clip(&object, MAX_TEXT_CHARS),
        )
        .tags(tags.iter().copied())
        .source(self.task_id, self.role)
        .valid_from(self.at)
        .build()
        .map(Some)
    }
}

/// `text` with leading and trailing whitespace removed and every inner run of whitespace
/// replaced by one space; borrowed when it already is so.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = text.trim();
    // ASCII fast path: no whitespace but single spaces.
    let normal = if trimmed.is_ascii() {
        let bytes = trimmed.as_bytes();
        !bytes.iter().any(|b| b.is_ascii_whitespace() && *b != b' ')
            && !bytes.windows(2).any(|pair| pair == b"  ")
    } else {
        let mut previous_space = false;
        trimmed.chars().all(|c| {
            let ok = c == ' ' && !previous_space || !c.is_whitespace();
            previous_space = c == ' ';
            ok
        })
    };
    if normal {
        std::borrow::Cow::Borrowed(trimmed)
    } else {
        std::borrow::Cow::Owned(trimmed.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_line_folds_whitespace_and_borrows_when_it_can() {
        for (text, expect) in [
            ("plain text", "plain text"),
            ("  padded  ", "padded"),
            (
                "two  spaces\tand\ttabs\nand lines",
                "two spaces and tabs and lines",
            ),
            ("é  ü\u{3000}日本", "é ü 日本"),
            ("", ""),
        ] {
            assert_eq!(one_line(text), expect, "{text:?}");
        }
        assert!(matches!(
            one_line("already fine"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

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
//!   ([`chunk_transcript`]), with the facts memory already holds ([`KnownMemory`]) listed
//!   by short id, reading replies leniently ([`parse_reply`]) and checking every fact's
//!   category, confidence and turn and every id it names; what it skips becomes a
//!   [`Diagnostic`]. Besides new facts, a conversation yields the known facts it
//!   supersedes or removes, aliases and profile texts ([`ConversationExtraction`]);
//!   `docs/extraction-contract.md` is the contract with the model in full.
//! - Clients: [`CommandLlm`] runs a shell command; `OpenAiCompatibleLlm` (feature
//!   `openai`) calls a chat-completions endpoint. Failures are [`LlmError`]s.
//! - [`read_transcript`] reads a conversation from JSON Lines into dated [`Message`]s,
//!   refusing bad input with a [`TranscriptError`]; [`parse_transcript`] is its lenient
//!   sibling.
//!
//! ```
//! use std::sync::Arc;
//! use fact_extract::{FactExtractor, RuleBasedFactExtractor};
//! use fact_model::{DispatchResult, ImplementerResult, ManualClock};
//!
//! let extractor = RuleBasedFactExtractor::with_defaults(Arc::new(ManualClock::default()));
//! let result: ImplementerResult = serde_json::from_str(r#"{
//!     "task_id": "3", "status": "completed",
//!     "summary": "Added the lexer in src/lexer.rs",
//!     "files_changed": ["src/lexer.rs", "src/lib.rs"]
//! }"#)?;
//! let extraction = extractor.extract(&DispatchResult::Implementer(result), "3");
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
//!
//! # Features
//!
//! | feature | adds |
//! |---|---|
//! | `openai` | `OpenAiCompatibleLlm`: an [`LlmClient`] for OpenAI-compatible chat-completions endpoints (ureq, rustls) |

#![forbid(unsafe_code)]

mod extractor;
mod llm;
mod paths;
pub mod relation;
pub mod rules;

use std::borrow::Cow;
use std::fmt::Debug;

use fact_model::{
    Clock, DispatchResult, FactError, FactSelector, FactText, MAX_SUBJECT_CHARS, SessionFact,
    SourceRole, Tag, Timestamp, clip,
};
use serde::Serialize;

pub use crate::extractor::RuleBasedFactExtractor;
pub use crate::llm::{
    CommandLlm, ConversationExtraction, ConversationExtractor, DEFAULT_CATEGORIES,
    ERROR_TAIL_CHARS, EXTRACTION_GUIDE, EXTRACTION_REPLY_SHAPE, ExtractedAlias, ExtractedFact,
    KnownMemory, LlmClient, LlmError, LlmExtractorConfig, LlmFactExtractor, MAX_PROFILE_CHARS,
    MAX_SUMMARY_CHARS, MAX_TITLE_CHARS, MAX_TRANSCRIPT_BYTES, MIN_CHUNK_CHARS, MIN_SHORT_ID_CHARS,
    ParsedReply, REPLY_SECTIONS, ReplyError, ReplyFact, Transcript, TranscriptChunk,
    TranscriptError, TranscriptOptions, chunk_transcript, extraction_prompt, parse_reply,
    parse_transcript, read_transcript, render_transcript,
};
#[cfg(feature = "openai")]
pub use crate::llm::{OpenAiCompatibleLlm, OpenAiConfig};
pub use crate::paths::paths_in;
pub use fact_model::{Message, MessageRole};

/// Longest object text a default rule writes, in characters (seed 001: "clipped 120 chars").
pub const MAX_TEXT_CHARS: usize = 120;

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
/// let facts = extractor.extract(&result.into(), "1").facts;
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

    /// Appends what [`extract`](Self::extract) finds to `out`, the output every rule of
    /// one extraction shares, so a rule need not allocate its own. The extractor calls
    /// this; the default calls `extract` and appends. Whatever a failing call appended is
    /// discarded.
    ///
    /// # Errors
    ///
    /// As [`extract`](Self::extract).
    fn extract_into(
        &self,
        result: &R,
        ctx: &RuleContext<'_>,
        out: &mut RuleOutput,
    ) -> Result<(), RuleError> {
        let output = self.extract(result, ctx)?;
        out.facts.extend(output.facts);
        out.settles.extend(output.settles);
        out.notes.extend(output.notes);
        Ok(())
    }
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

    fn extract_into(
        &self,
        result: &R,
        ctx: &RuleContext<'_>,
        out: &mut RuleOutput,
    ) -> Result<(), RuleError> {
        (self.extract)(result, ctx, out)
    }
}

/// What every rule of one extraction shares: the task, the role and the instant.
///
/// The task id and `task:{id}` are allocated once per extraction and shared by every fact
/// that carries them.
#[derive(Debug, Clone)]
pub struct RuleContext<'a> {
    task_id: &'a str,
    /// `task_id`, shared by the facts as their source.
    source: FactText,
    /// `task:{task_id}`, shared by the facts it is the subject or object of.
    task_subject: FactText,
    role: SourceRole,
    at: Timestamp,
}

impl<'a> RuleContext<'a> {
    /// A context for facts of task `task_id` by `role`, valid from `at`.
    #[must_use]
    pub fn new(task_id: &'a str, role: SourceRole, at: Timestamp) -> Self {
        RuleContext {
            task_id,
            source: FactText::shared(task_id),
            task_subject: task_subject(task_id),
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
        self.task_subject.as_str()
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
        let relation = match relation::known(relation) {
            Some(known) => FactText::from_static(known),
            None => FactText::from(relation),
        };
        self.fact_from(
            Cow::Borrowed(subject),
            relation,
            Cow::Borrowed(object),
            tags,
        )
    }

    /// Adds a fact to `out` as [`fact`](Self::fact) makes it, with one of the
    /// [`relation`] constants; nothing when the subject or object is blank.
    pub(crate) fn add(
        &self,
        out: &mut RuleOutput,
        subject: &str,
        relation: &'static str,
        object: &str,
        tags: &[Tag],
    ) -> Result<(), FactError> {
        self.add_from(
            out,
            Cow::Borrowed(subject),
            FactText::from_static(relation),
            Cow::Borrowed(object),
            tags,
        )
    }

    /// [`add`](Self::add) from text the rule may own (kept without a copy when it needs
    /// no folding or clipping) and any relation.
    pub(crate) fn add_from(
        &self,
        out: &mut RuleOutput,
        subject: Cow<'_, str>,
        relation: FactText,
        object: Cow<'_, str>,
        tags: &[Tag],
    ) -> Result<(), FactError> {
        if let Some((subject, object)) = self.texts(subject, object) {
            out.facts.push(self.make(subject, relation, object, tags)?);
        }
        Ok(())
    }

    /// Adds a fact about the task itself whose object is a static word already on one
    /// line and within every limit (a status, an assessment): nothing to fold, clip or
    /// copy.
    pub(crate) fn add_task_word(
        &self,
        out: &mut RuleOutput,
        relation: &'static str,
        word: &'static str,
        tags: &[Tag],
    ) -> Result<(), FactError> {
        let fact = self.make(
            self.task_subject.clone(),
            FactText::from_static(relation),
            FactText::from_static(word),
            tags,
        )?;
        out.facts.push(fact);
        Ok(())
    }

    /// [`fact`](Self::fact) from text the rule may own.
    fn fact_from(
        &self,
        subject: Cow<'_, str>,
        relation: FactText,
        object: Cow<'_, str>,
        tags: &[Tag],
    ) -> Result<Option<SessionFact>, FactError> {
        match self.texts(subject, object) {
            Some((subject, object)) => self.make(subject, relation, object, tags).map(Some),
            None => Ok(None),
        }
    }

    /// The subject and object of a fact: clipped, the object on one line, `task:{id}`
    /// shared; `None` when either is blank.
    #[inline]
    fn texts(&self, subject: Cow<'_, str>, object: Cow<'_, str>) -> Option<(FactText, FactText)> {
        if is_blank(&subject) || is_blank(&object) {
            return None;
        }
        Some((
            self.text(clip_owned(subject, MAX_SUBJECT_CHARS)),
            self.text(clip_owned(one_line_owned(object), MAX_TEXT_CHARS)),
        ))
    }

    #[inline]
    fn make(
        &self,
        subject: FactText,
        relation: FactText,
        object: FactText,
        tags: &[Tag],
    ) -> Result<SessionFact, FactError> {
        SessionFact::new(
            subject,
            relation,
            object,
            tags.iter().copied(),
            self.source.clone(),
            self.role,
            self.at,
        )
    }

    /// `text` as a fact's field: `task:{id}` shares the context's copy.
    #[inline]
    fn text(&self, text: Cow<'_, str>) -> FactText {
        if *text == *self.task_subject.as_str() {
            self.task_subject.clone()
        } else {
            FactText::from(text)
        }
    }
}

/// `text.trim()`, with a shortcut for text that starts and ends with visible ASCII, as
/// nearly all text of a result does.
#[inline]
pub(crate) fn trim(text: &str) -> &str {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => text,
        _ => text.trim(),
    }
}

/// Whether `text` is empty or only whitespace.
#[inline]
fn is_blank(text: &str) -> bool {
    // Text that starts with a visible ASCII character is not blank: no trimming needed.
    match text.as_bytes().first() {
        Some(b) if b.is_ascii_graphic() => false,
        _ => text.trim().is_empty(),
    }
}

/// The prefix of a task's subject, `task:{id}`.
const TASK_PREFIX: &str = "task:";

/// `task:{task_id}`, shared; written on the stack first when it is short, so the shared
/// copy is the only allocation.
fn task_subject(task_id: &str) -> FactText {
    let mut buffer = [0u8; 64];
    let len = TASK_PREFIX.len() + task_id.len();
    if let Some((prefix, id)) = buffer
        .get_mut(..len)
        .map(|subject| subject.split_at_mut(TASK_PREFIX.len()))
    {
        prefix.copy_from_slice(TASK_PREFIX.as_bytes());
        id.copy_from_slice(task_id.as_bytes());
        if let Some(Ok(subject)) = buffer.get(..len).map(std::str::from_utf8) {
            return FactText::shared(subject);
        }
    }
    FactText::shared(&format!("{TASK_PREFIX}{task_id}"))
}

/// [`clip`] that keeps owned text that fits instead of copying it.
fn clip_owned(text: Cow<'_, str>, max_chars: usize) -> Cow<'_, str> {
    match text {
        Cow::Borrowed(text) => clip(text, max_chars),
        Cow::Owned(text) => {
            let clipped = match clip(&text, max_chars) {
                Cow::Borrowed(_) => None,
                Cow::Owned(clipped) => Some(clipped),
            };
            Cow::Owned(clipped.unwrap_or(text))
        }
    }
}

/// [`one_line`] that keeps owned text that needs no folding instead of copying it.
fn one_line_owned(text: Cow<'_, str>) -> Cow<'_, str> {
    match text {
        Cow::Borrowed(text) => one_line(text),
        Cow::Owned(text) => {
            let folded = match one_line(&text) {
                Cow::Borrowed(folded) if folded.len() == text.len() => None,
                folded => Some(folded.into_owned()),
            };
            Cow::Owned(folded.unwrap_or(text))
        }
    }
}

/// `text` with leading and trailing whitespace removed and every inner run of whitespace
/// replaced by one space; borrowed when it already is so.
fn one_line(text: &str) -> Cow<'_, str> {
    let trimmed = trim(text);
    let normal = !needs_char_check(trimmed.as_bytes()) || {
        // Any char: no whitespace but single spaces.
        let mut previous_space = false;
        trimmed.chars().all(|c| {
            let ok = c == ' ' && !previous_space || !c.is_whitespace();
            previous_space = c == ' ';
            ok
        })
    };
    if normal {
        Cow::Borrowed(trimmed)
    } else {
        let mut out = String::with_capacity(trimmed.len());
        for word in trimmed.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
        Cow::Owned(out)
    }
}

/// Whether `bytes` hold anything but ASCII without control characters and single spaces:
/// a non-ASCII or control byte (tabs and newlines among them), or two spaces in a row.
/// Eight bytes at a time, as `u64` words.
fn needs_char_check(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const SPACES: u64 = ONES * 0x20;
    let mut chunks = bytes.chunks_exact(8);
    let mut previous_space = false;
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            return true;
        };
        let word = u64::from_le_bytes(word);
        // A high bit is a non-ASCII byte; among ASCII bytes, this borrow test finds one
        // below 0x20.
        if (word | (word.wrapping_sub(SPACES) & !word)) & HIGH != 0 {
            return true;
        }
        // The high bit of every byte that is a space (exact: no carries between bytes).
        let other = word ^ SPACES;
        let spaces = !(((other & LOW) + LOW) | other) & HIGH;
        if spaces & (spaces >> 8) != 0 || previous_space && spaces & 0x80 != 0 {
            return true;
        }
        previous_space = spaces >> 63 != 0;
    }
    for &b in chunks.remainder() {
        let space = b == b' ';
        if !(0x20..0x80).contains(&b) || space && previous_space {
            return true;
        }
        previous_space = space;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{needs_char_check, one_line};

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
            ("a\u{b}b", "a b"),
            ("a\u{85}b", "a b"),
            ("ü\u{b}b", "ü b"),
            ("", ""),
        ] {
            assert_eq!(one_line(text), expect, "{text:?}");
        }
        assert!(matches!(
            one_line("already fine"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(one_line("é ü"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn the_word_check_agrees_with_a_byte_check() {
        let byte_check = |bytes: &[u8]| {
            bytes.iter().any(|b| !(0x20..0x80).contains(b))
                || bytes.windows(2).any(|pair| pair == b"  ")
        };
        let alphabet = [b'a', b' ', b'\t', b'\n', 0x1f, 0x7f, 0x80, 0xc3, b'~'];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..40 {
            for _ in 0..300 {
                let text: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        // Mostly letters and spaces, so that double spaces are rare.
                        let pick = (state % 24) as usize;
                        alphabet
                            .get(pick)
                            .copied()
                            .unwrap_or(if pick.is_multiple_of(2) { b'a' } else { b' ' })
                    })
                    .collect();
                assert_eq!(needs_char_check(&text), byte_check(&text), "{text:?}");
            }
        }
    }
}

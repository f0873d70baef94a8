//! One extraction rule: the [`ExtractionRule`] contract, [`FnRule`] for rules written as
//! functions, the [`RuleContext`] every rule of one extraction shares and the
//! [`RuleOutput`] it fills.

use std::borrow::Cow;
use std::fmt::Debug;

use fact_model::{
    Clock, FactError, FactSelector, FactText, MAX_SUBJECT_CHARS, SessionFact, SourceRole, Tag,
    Timestamp,
};

use crate::relation;
use crate::text::{clip_owned, is_blank, one_line_owned};

/// Longest object text a default rule writes, in characters (seed 001: "clipped 120 chars").
pub const MAX_TEXT_CHARS: usize = 120;

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
    /// Valid facts the result settles (see
    /// [`Extraction::settles`](crate::Extraction::settles)).
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
/// Every default rule is an `FnRule` constant in [`rules`](crate::rules).
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

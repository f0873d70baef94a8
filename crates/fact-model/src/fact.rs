//! [`SessionFact`]: the validated, temporal fact every other crate stores and moves.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{FactId, FactText, SourceRole, Tag, Timestamp, char_len};

/// Longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;
/// Longest relation, in characters.
pub const MAX_RELATION_CHARS: usize = 50;
/// Longest object, in characters.
pub const MAX_OBJECT_CHARS: usize = 200;
/// Longest natural-language statement, in characters.
pub const MAX_STATEMENT_CHARS: usize = 500;
/// Longest source task id, in characters.
pub const MAX_SOURCE_TASK_ID_CHARS: usize = 200;
/// Most tags a fact carries (and it carries at least one).
pub const MAX_TAGS: usize = 3;

/// A field of [`SessionFact`], named in errors exactly as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// `id`
    Id,
    /// `subject`
    Subject,
    /// `relation`
    Relation,
    /// `object`
    Object,
    /// `tags`
    Tags,
    /// `valid_from`
    ValidFrom,
    /// `valid_to`
    ValidTo,
    /// `source_task_id`
    SourceTaskId,
    /// `source_role`
    SourceRole,
    /// `confidence`
    Confidence,
    /// `statement`
    Statement,
    /// `superseded_by`
    SupersededBy,
}

impl Field {
    /// The wire name of the field.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Id => "id",
            Field::Subject => "subject",
            Field::Relation => "relation",
            Field::Object => "object",
            Field::Tags => "tags",
            Field::ValidFrom => "valid_from",
            Field::ValidTo => "valid_to",
            Field::SourceTaskId => "source_task_id",
            Field::SourceRole => "source_role",
            Field::Confidence => "confidence",
            Field::Statement => "statement",
            Field::SupersededBy => "superseded_by",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a [`SessionFact`] could not be built. Every variant names the offending field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FactError {
    /// A required field was not given.
    #[error("`{field}` is required")]
    Missing {
        /// The missing field.
        field: Field,
    },
    /// A text field is empty or only whitespace.
    #[error("`{field}` must not be empty or blank")]
    Blank {
        /// The blank field.
        field: Field,
    },
    /// A text field is longer than its limit.
    #[error("`{field}` is {actual} characters long; the limit is {max}")]
    TooLong {
        /// The field over its limit.
        field: Field,
        /// The limit, in characters.
        max: usize,
        /// The actual length, in characters.
        actual: usize,
    },
    /// The confidence is not a finite number in `0..=1`.
    #[error("`confidence` must be a finite number in 0..=1, got {value}")]
    Confidence {
        /// The rejected value.
        value: f64,
    },
    /// A fact needs between 1 and 3 tags.
    #[error("`tags` must hold 1 to {MAX_TAGS} tags, got {count}")]
    TagCount {
        /// How many tags were given.
        count: usize,
    },
    /// The same tag was given twice.
    #[error("`tags` lists `{tag}` more than once")]
    DuplicateTag {
        /// The repeated tag.
        tag: Tag,
    },
    /// `valid_to` lies before `valid_from`.
    #[error("`valid_to` ({valid_to}) is before `valid_from` ({valid_from})")]
    ValidityRange {
        /// When the fact became valid.
        valid_from: Timestamp,
        /// The rejected end of validity.
        valid_to: Timestamp,
    },
    /// A given `id` is not the id of the fact's triple.
    #[error("`id` {given} does not match the triple, whose id is {computed}")]
    IdMismatch {
        /// The id that came with the fact.
        given: FactId,
        /// The id computed from subject, relation and object.
        computed: FactId,
    },
    /// `superseded_by` is set on a fact that is still valid: only an ended fact can have
    /// been superseded.
    #[error("`superseded_by` is set but `valid_to` is not: only an ended fact is superseded")]
    SupersededWhileValid,
    /// The fact was already invalidated; `valid_to` is set at most once.
    #[error("`valid_to` is already set to {valid_to}")]
    AlreadyInvalidated {
        /// The existing end of validity.
        valid_to: Timestamp,
    },
}

/// The 1 to 3 distinct tags of a fact, in the order given.
///
/// ```
/// use fact_model::{Tag, Tags};
///
/// let tags = Tags::new([Tag::Test, Tag::Error])?;
/// assert_eq!(tags.as_slice(), &[Tag::Test, Tag::Error]);
/// assert!(tags.contains(Tag::Error));
/// assert!(Tags::new([]).is_err());
/// assert!(Tags::new([Tag::Test, Tag::Test]).is_err());
/// # Ok::<(), fact_model::FactError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<Tag>", into = "Vec<Tag>")]
pub struct Tags {
    items: [Tag; MAX_TAGS],
    len: u8,
}

impl Tags {
    /// Validates 1 to 3 distinct tags.
    ///
    /// # Errors
    ///
    /// [`FactError::TagCount`] or [`FactError::DuplicateTag`].
    pub fn new(tags: impl IntoIterator<Item = Tag>) -> Result<Tags, FactError> {
        let mut items = [Tag::Decision; MAX_TAGS];
        let mut len = 0usize;
        for tag in tags {
            if items.iter().take(len).any(|t| *t == tag) {
                return Err(FactError::DuplicateTag { tag });
            }
            match items.get_mut(len) {
                Some(slot) => *slot = tag,
                None => return Err(FactError::TagCount { count: len + 1 }),
            }
            len += 1;
        }
        if len == 0 {
            return Err(FactError::TagCount { count: 0 });
        }
        Ok(Tags {
            items,
            len: len as u8,
        })
    }

    /// A single tag.
    #[must_use]
    pub fn one(tag: Tag) -> Tags {
        Tags {
            items: [tag; MAX_TAGS],
            len: 1,
        }
    }

    /// The tags, in the order given.
    #[must_use]
    pub fn as_slice(&self) -> &[Tag] {
        self.items.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Whether `tag` is among them.
    #[must_use]
    pub fn contains(&self, tag: Tag) -> bool {
        self.as_slice().contains(&tag)
    }

    /// Whether any of `tags` is among them.
    #[must_use]
    pub fn contains_any(&self, tags: &[Tag]) -> bool {
        self.as_slice().iter().any(|t| tags.contains(t))
    }
}

impl fmt::Debug for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl TryFrom<Vec<Tag>> for Tags {
    type Error = FactError;

    fn try_from(tags: Vec<Tag>) -> Result<Self, Self::Error> {
        Tags::new(tags)
    }
}

impl From<Tags> for Vec<Tag> {
    fn from(tags: Tags) -> Self {
        tags.as_slice().to_vec()
    }
}

/// A structured, temporal fact: `subject relation object`, valid from one instant until,
/// perhaps, another.
///
/// Fields are private and every constructor validates them, so an invalid fact cannot
/// exist in memory; deserialization goes through the same checks. A fact is immutable:
/// [`invalidated_at`](SessionFact::invalidated_at) and [`updated`](SessionFact::updated)
/// return new values.
///
/// | field | rule |
/// |---|---|
/// | `subject` | 1..=200 characters, not blank |
/// | `relation` | 1..=50 characters, not blank |
/// | `object` | 1..=200 characters, not blank |
/// | `tags` | 1 to 3 distinct [`Tag`]s |
/// | `valid_from` | required |
/// | `valid_to` | optional, never before `valid_from` |
/// | `source_task_id` | 1..=200 characters, not blank |
/// | `source_role` | a [`SourceRole`] |
/// | `confidence` | finite, in `0..=1` (default 1.0) |
/// | `statement` | optional, 1..=500 characters, not blank |
/// | `superseded_by` | optional, the id of the fact that replaced this one; only with `valid_to` |
/// | `id` | derived: [`FactId::for_triple`]; on the wire it may be omitted, and must match when given |
///
/// # Examples
///
/// ```
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
///
/// let fact = SessionFact::builder("src/lib.rs", "modified_by", "task:1")
///     .tag(Tag::FileChange)
///     .source("1", SourceRole::Implementer)
///     .valid_from("2026-11-22T03:00:00Z".parse()?)
///     .build()?;
/// assert_eq!(fact.subject(), "src/lib.rs");
/// assert!(fact.is_valid());
///
/// // Deserialization validates too.
/// let json = serde_json::to_string(&fact)?;
/// assert_eq!(serde_json::from_str::<SessionFact>(&json)?, fact);
/// let bad = json.replace("\"modified_by\"", "\"\"");
/// let err = serde_json::from_str::<SessionFact>(&bad).unwrap_err();
/// assert!(err.to_string().contains("`relation` must not be empty"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Deserialize)]
#[serde(try_from = "WireFact")]
pub struct SessionFact {
    id: FactId,
    subject: FactText,
    relation: FactText,
    object: FactText,
    tags: Tags,
    valid_from: Timestamp,
    valid_to: Option<Timestamp>,
    source_task_id: FactText,
    source_role: SourceRole,
    confidence: f64,
    statement: Option<String>,
    superseded_by: Option<FactId>,
}

impl fmt::Debug for SessionFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("SessionFact");
        s.field("id", &self.id)
            .field("triple", &(&self.subject, &self.relation, &self.object))
            .field("tags", &self.tags)
            .field("valid", &(self.valid_from, self.valid_to))
            .field("source", &(&self.source_task_id, self.source_role))
            .field("confidence", &self.confidence);
        if let Some(statement) = &self.statement {
            s.field("statement", statement);
        }
        if let Some(by) = &self.superseded_by {
            s.field("superseded_by", by);
        }
        s.finish()
    }
}

/// Whether `value` is empty or only whitespace.
#[inline]
fn is_blank(value: &str) -> bool {
    // Text that starts with a visible ASCII character is not blank: no trimming needed.
    match value.as_bytes().first() {
        Some(b) if b.is_ascii_graphic() => false,
        _ => value.trim().is_empty(),
    }
}

/// Checks a required text field: not blank, at most `max` characters.
fn check_text(field: Field, value: &str, max: usize) -> Result<(), FactError> {
    if is_blank(value) {
        return Err(FactError::Blank { field });
    }
    // A char is at least one byte: only count chars when the bytes could exceed the limit.
    if value.len() <= max {
        return Ok(());
    }
    let actual = char_len(value);
    if actual > max {
        return Err(FactError::TooLong { field, max, actual });
    }
    Ok(())
}

fn check_confidence(value: f64) -> Result<(), FactError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(FactError::Confidence { value })
    }
}

fn check_range(valid_from: Timestamp, valid_to: Option<Timestamp>) -> Result<(), FactError> {
    match valid_to {
        Some(valid_to) if valid_to < valid_from => Err(FactError::ValidityRange {
            valid_from,
            valid_to,
        }),
        _ => Ok(()),
    }
}

/// Folds a statement for duplicate detection: lowercase, runs of whitespace to one space,
/// no leading or trailing whitespace.
///
/// Two memory facts whose folded statements are equal are the same fact.
///
/// ```
/// assert_eq!(fact_model::fold_statement("  Prefers\tDARK   mode "), "prefers dark mode");
/// ```
#[must_use]
pub fn fold_statement(statement: &str) -> String {
    let mut out = String::with_capacity(statement.len());
    for word in statement.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

impl SessionFact {
    /// Starts building a fact for the triple `subject relation object`.
    ///
    /// Tags, `valid_from` and the source are required before [`build`](FactBuilder::build);
    /// confidence defaults to 1.0.
    ///
    /// [`FactBuilder::new`] does the same with [`FactText`]s, which can be shared.
    pub fn builder(
        subject: impl Into<String>,
        relation: impl Into<String>,
        object: impl Into<String>,
    ) -> FactBuilder {
        FactBuilder::new(subject.into(), relation.into(), object.into())
    }

    /// A fact of the triple `subject relation object` with `tags`, produced by task
    /// `source_task_id` in `source_role` and valid from `valid_from`, with confidence 1.0:
    /// what [`FactBuilder`] builds from these fields, without the builder, for code that
    /// makes many facts. Text may be static or shared ([`FactText`]).
    ///
    /// # Errors
    ///
    /// The [`FactError`] of the first invalid field, checked in wire order.
    ///
    /// ```
    /// use fact_model::{FactText, SessionFact, SourceRole, Tag, Timestamp};
    ///
    /// let task = FactText::shared("task:1");
    /// let fact = SessionFact::new(
    ///     "src/lib.rs",
    ///     FactText::from_static("modified_by"),
    ///     task.clone(),
    ///     [Tag::FileChange],
    ///     FactText::shared("1"),
    ///     SourceRole::Implementer,
    ///     Timestamp::UNIX_EPOCH,
    /// )?;
    /// let built = SessionFact::builder("src/lib.rs", "modified_by", "task:1")
    ///     .tag(Tag::FileChange)
    ///     .source("1", SourceRole::Implementer)
    ///     .valid_from(Timestamp::UNIX_EPOCH)
    ///     .build()?;
    /// assert_eq!(fact, built);
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    #[inline]
    pub fn new(
        subject: impl Into<FactText>,
        relation: impl Into<FactText>,
        object: impl Into<FactText>,
        tags: impl IntoIterator<Item = Tag>,
        source_task_id: impl Into<FactText>,
        source_role: SourceRole,
        valid_from: Timestamp,
    ) -> Result<SessionFact, FactError> {
        SessionFact::validated(WireFact {
            id: None,
            subject: subject.into(),
            relation: relation.into(),
            object: object.into(),
            tags,
            valid_from,
            valid_to: None,
            source_task_id: source_task_id.into(),
            source_role,
            confidence: 1.0,
            statement: None,
            superseded_by: None,
        })
    }

    /// The deterministic id of the triple.
    #[must_use]
    #[inline]
    pub fn id(&self) -> FactId {
        self.id
    }

    /// What the fact is about, e.g. `src/lib.rs` or `task:3`.
    #[must_use]
    #[inline]
    pub fn subject(&self) -> &str {
        self.subject.as_str()
    }

    /// How the subject relates to the object, e.g. `modified_by`.
    #[must_use]
    #[inline]
    pub fn relation(&self) -> &str {
        self.relation.as_str()
    }

    /// The value, e.g. `task:3`.
    #[must_use]
    #[inline]
    pub fn object(&self) -> &str {
        self.object.as_str()
    }

    /// The subject as a [`FactText`], to share it (a clone of static or shared text
    /// copies nothing).
    #[must_use]
    #[inline]
    pub fn subject_text(&self) -> &FactText {
        &self.subject
    }

    /// The relation as a [`FactText`].
    #[must_use]
    #[inline]
    pub fn relation_text(&self) -> &FactText {
        &self.relation
    }

    /// The object as a [`FactText`].
    #[must_use]
    #[inline]
    pub fn object_text(&self) -> &FactText {
        &self.object
    }

    /// The source task id as a [`FactText`].
    #[must_use]
    #[inline]
    pub fn source_task_text(&self) -> &FactText {
        &self.source_task_id
    }

    /// The 1 to 3 tags.
    #[must_use]
    pub fn tags(&self) -> &Tags {
        &self.tags
    }

    /// When the fact became valid.
    #[must_use]
    pub fn valid_from(&self) -> Timestamp {
        self.valid_from
    }

    /// When a newer fact invalidated it, if one did.
    #[must_use]
    pub fn valid_to(&self) -> Option<Timestamp> {
        self.valid_to
    }

    /// The task whose result produced the fact.
    #[must_use]
    #[inline]
    pub fn source_task_id(&self) -> &str {
        self.source_task_id.as_str()
    }

    /// Who produced the fact.
    #[must_use]
    pub fn source_role(&self) -> SourceRole {
        self.source_role
    }

    /// How sure the producer was, in `0..=1`.
    #[must_use]
    pub fn confidence(&self) -> f64 {
        self.confidence
    }

    /// The natural-language statement of a conversational memory fact.
    #[must_use]
    pub fn statement(&self) -> Option<&str> {
        self.statement.as_deref()
    }

    /// The fact that replaced this one, when a newer fact of the same `(subject, relation)`
    /// ended it (seed 004's supersession); `None` while valid and after an explicit
    /// invalidation, which names no successor.
    #[must_use]
    pub fn superseded_by(&self) -> Option<FactId> {
        self.superseded_by
    }

    /// Whether the fact is still valid (not invalidated).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.valid_to.is_none()
    }

    /// Whether the fact was valid at `at`: `valid_from <= at < valid_to`.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # let t = |s: i64| Timestamp::from_unix_secs(s).unwrap();
    /// let fact = SessionFact::builder("a", "b", "c").tag(Tag::Decision)
    ///     .source("1", SourceRole::Implementer).valid_from(t(10)).build()?
    ///     .invalidated_at(t(20))?;
    /// assert!(!fact.is_valid_at(t(9)));
    /// assert!(fact.is_valid_at(t(10)));
    /// assert!(!fact.is_valid_at(t(20)));
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    #[must_use]
    pub fn is_valid_at(&self, at: Timestamp) -> bool {
        self.valid_from <= at && self.valid_to.is_none_or(|end| at < end)
    }

    /// The same fact, invalidated at `at`.
    ///
    /// # Errors
    ///
    /// [`FactError::AlreadyInvalidated`] when `valid_to` is already set (it is set at most
    /// once), [`FactError::ValidityRange`] when `at` is before `valid_from`.
    pub fn invalidated_at(&self, at: Timestamp) -> Result<SessionFact, FactError> {
        if let Some(valid_to) = self.valid_to {
            return Err(FactError::AlreadyInvalidated { valid_to });
        }
        check_range(self.valid_from, Some(at))?;
        Ok(SessionFact {
            valid_to: Some(at),
            ..self.clone()
        })
    }

    /// The same fact, ended at `at` because the fact `by` replaced it.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # let t = |s: i64| Timestamp::from_unix_secs(s).unwrap();
    /// # let fact = |o: &str, s| SessionFact::builder("user", "prefers_test_framework", o)
    /// #     .tag(Tag::Preference).source("ep1", SourceRole::Extractor).valid_from(t(s)).build();
    /// let old = fact("unittest", 0)?;
    /// let new = fact("pytest", 10)?;
    /// let ended = old.superseded_at(new.valid_from(), new.id())?;
    /// assert_eq!((ended.valid_to(), ended.superseded_by()), (Some(t(10)), Some(new.id())));
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`invalidated_at`](Self::invalidated_at).
    pub fn superseded_at(&self, at: Timestamp, by: FactId) -> Result<SessionFact, FactError> {
        let mut ended = self.invalidated_at(at)?;
        ended.superseded_by = Some(by);
        Ok(ended)
    }

    /// The same fact with the fields of `update` that are set replaced.
    ///
    /// Identity (`subject`, `relation`, `object`, so the id), `valid_from`, `valid_to` and
    /// the source never change through an update.
    ///
    /// # Errors
    ///
    /// The [`FactError`] of the first invalid new value.
    ///
    /// ```
    /// # use fact_model::{FactUpdate, SessionFact, SourceRole, Tag, Timestamp};
    /// let fact = SessionFact::builder("user", "prefers", "dark mode").tag(Tag::Preference)
    ///     .source("chat-1", SourceRole::Extractor).valid_from(Timestamp::UNIX_EPOCH)
    ///     .confidence(0.6).build()?;
    /// let update = FactUpdate { confidence: Some(0.9), ..FactUpdate::default() };
    /// let updated = fact.updated(&update)?;
    /// assert_eq!(updated.confidence(), 0.9);
    /// assert_eq!(updated.valid_from(), fact.valid_from());
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    pub fn updated(&self, update: &FactUpdate) -> Result<SessionFact, FactError> {
        let mut next = self.clone();
        if let Some(statement) = &update.statement {
            check_text(Field::Statement, statement, MAX_STATEMENT_CHARS)?;
            next.statement = Some(statement.clone());
        }
        if let Some(tags) = &update.tags {
            next.tags = Tags::new(tags.iter().copied())?;
        }
        if let Some(confidence) = update.confidence {
            check_confidence(confidence)?;
            next.confidence = confidence;
        }
        Ok(next)
    }
}

/// The fields a store update may change; `None` leaves a field as it is.
///
/// ```
/// use fact_model::FactUpdate;
/// let update: FactUpdate = serde_json::from_str(r#"{"confidence": 0.8}"#)?;
/// assert_eq!(update.confidence, Some(0.8));
/// assert!(update.statement.is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactUpdate {
    /// A new statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// New tags (1 to 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<Tag>>,
    /// A new confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// Builds a validated [`SessionFact`]; see [`SessionFact::builder`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct FactBuilder {
    subject: FactText,
    relation: FactText,
    object: FactText,
    tags: TagList,
    valid_from: Option<Timestamp>,
    valid_to: Option<Timestamp>,
    source: Option<(FactText, SourceRole)>,
    confidence: f64,
    statement: Option<String>,
    superseded_by: Option<FactId>,
}

/// The tags given to a builder, kept inline: the first four decide every outcome of
/// [`Tags::new`] (a fourth tag is already one too many), and later ones are only counted.
#[derive(Clone, Copy)]
struct TagList {
    items: [Tag; MAX_TAGS + 1],
    given: usize,
}

impl TagList {
    const EMPTY: TagList = TagList {
        items: [Tag::Decision; MAX_TAGS + 1],
        given: 0,
    };

    fn push(&mut self, tag: Tag) {
        if let Some(slot) = self.items.get_mut(self.given) {
            *slot = tag;
        }
        self.given = self.given.saturating_add(1);
    }

    fn kept(&self) -> &[Tag] {
        self.items.get(..self.given).unwrap_or(&self.items)
    }
}

impl fmt::Debug for TagList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.kept()).finish()
    }
}

impl FactBuilder {
    /// Starts building a fact for the triple `subject relation object`, like
    /// [`SessionFact::builder`], from text that may be static or shared: facts built from
    /// clones of one [`FactText::shared`] share its allocation.
    ///
    /// ```
    /// use fact_model::{FactBuilder, FactText, SourceRole, Tag, Timestamp};
    ///
    /// let task = FactText::shared("task:1");
    /// let fact = FactBuilder::new("src/lib.rs", FactText::from_static("modified_by"), task.clone())
    ///     .tag(Tag::FileChange)
    ///     .source_text(FactText::shared("1"), SourceRole::Implementer)
    ///     .valid_from(Timestamp::UNIX_EPOCH)
    ///     .build()?;
    /// assert_eq!(fact.object(), "task:1");
    /// assert_eq!(fact.id(), fact_model::FactId::for_triple("src/lib.rs", "modified_by", "task:1"));
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    #[inline]
    pub fn new(
        subject: impl Into<FactText>,
        relation: impl Into<FactText>,
        object: impl Into<FactText>,
    ) -> FactBuilder {
        FactBuilder {
            subject: subject.into(),
            relation: relation.into(),
            object: object.into(),
            tags: TagList::EMPTY,
            valid_from: None,
            valid_to: None,
            source: None,
            confidence: 1.0,
            statement: None,
            superseded_by: None,
        }
    }

    /// Adds a tag.
    #[inline]
    pub fn tag(mut self, tag: Tag) -> Self {
        self.tags.push(tag);
        self
    }

    /// Adds several tags.
    #[inline]
    pub fn tags(mut self, tags: impl IntoIterator<Item = Tag>) -> Self {
        for tag in tags {
            self.tags.push(tag);
        }
        self
    }

    /// Sets when the fact became valid (required).
    #[inline]
    pub fn valid_from(mut self, at: Timestamp) -> Self {
        self.valid_from = Some(at);
        self
    }

    /// Sets when the fact stopped being valid, for facts restored from history.
    #[inline]
    pub fn valid_to(mut self, at: Timestamp) -> Self {
        self.valid_to = Some(at);
        self
    }

    /// Sets the task and role that produced the fact (required).
    #[inline]
    pub fn source(self, task_id: impl Into<String>, role: SourceRole) -> Self {
        self.source_text(task_id.into(), role)
    }

    /// Sets the task and role that produced the fact, like [`source`](Self::source), from
    /// text that may be shared by every fact of the task.
    #[inline]
    pub fn source_text(mut self, task_id: impl Into<FactText>, role: SourceRole) -> Self {
        self.source = Some((task_id.into(), role));
        self
    }

    /// Sets the confidence (default 1.0).
    #[inline]
    pub fn confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// Sets the natural-language statement of a memory fact.
    #[inline]
    pub fn statement(mut self, statement: impl Into<String>) -> Self {
        self.statement = Some(statement.into());
        self
    }

    /// Sets the fact that replaced this one, for facts restored from history (requires
    /// [`valid_to`](Self::valid_to)).
    #[inline]
    pub fn superseded_by(mut self, id: FactId) -> Self {
        self.superseded_by = Some(id);
        self
    }

    /// Validates every field and builds the fact.
    ///
    /// # Errors
    ///
    /// The [`FactError`] of the first invalid field, checked in wire order.
    pub fn build(self) -> Result<SessionFact, FactError> {
        let (source_task_id, source_role) = self.source.ok_or(FactError::Missing {
            field: Field::SourceTaskId,
        })?;
        let tags = self.tags;
        SessionFact::validated(WireFact {
            id: None,
            subject: self.subject,
            relation: self.relation,
            object: self.object,
            tags: tags.kept().iter().copied(),
            valid_from: self.valid_from.ok_or(FactError::Missing {
                field: Field::ValidFrom,
            })?,
            valid_to: self.valid_to,
            source_task_id,
            source_role,
            confidence: self.confidence,
            statement: self.statement,
            superseded_by: self.superseded_by,
        })
    }
}

/// A fact before validation: the wire form as read (tags as a list), or what a builder
/// holds (tags as an iterator over its inline list).
#[derive(Deserialize)]
struct WireFact<T = Vec<Tag>> {
    #[serde(default)]
    id: Option<FactId>,
    subject: FactText,
    relation: FactText,
    object: FactText,
    tags: T,
    valid_from: Timestamp,
    /// Absent is read as `null`.
    #[serde(default)]
    valid_to: Option<Timestamp>,
    source_task_id: FactText,
    source_role: SourceRole,
    #[serde(default = "default_confidence")]
    confidence: f64,
    #[serde(default)]
    statement: Option<String>,
    #[serde(default)]
    superseded_by: Option<FactId>,
}

/// The wire form of a fact as written, borrowed from it: no copy of the fact to
/// serialize it. Field order and names are those of [`WireFact`].
#[derive(Serialize)]
#[serde(rename = "WireFact")]
struct WireFactRef<'a> {
    id: FactId,
    subject: &'a str,
    relation: &'a str,
    object: &'a str,
    tags: &'a [Tag],
    valid_from: Timestamp,
    /// Always written (`null` while valid), so a reader sees the field the wire form
    /// promises.
    valid_to: Option<Timestamp>,
    source_task_id: &'a str,
    source_role: SourceRole,
    confidence: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    statement: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    superseded_by: Option<FactId>,
}

impl Serialize for SessionFact {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireFactRef {
            id: self.id,
            subject: self.subject(),
            relation: self.relation(),
            object: self.object(),
            tags: self.tags.as_slice(),
            valid_from: self.valid_from,
            valid_to: self.valid_to,
            source_task_id: self.source_task_id(),
            source_role: self.source_role,
            confidence: self.confidence,
            statement: self.statement(),
            superseded_by: self.superseded_by,
        }
        .serialize(serializer)
    }
}

fn default_confidence() -> f64 {
    1.0
}

impl SessionFact {
    /// The single place every fact is validated, whether built or deserialized.
    fn validated<T: IntoIterator<Item = Tag>>(wire: WireFact<T>) -> Result<SessionFact, FactError> {
        check_text(Field::Subject, &wire.subject, MAX_SUBJECT_CHARS)?;
        check_text(Field::Relation, &wire.relation, MAX_RELATION_CHARS)?;
        check_text(Field::Object, &wire.object, MAX_OBJECT_CHARS)?;
        let computed = FactId::for_triple(&wire.subject, &wire.relation, &wire.object);
        if let Some(given) = wire.id
            && given != computed
        {
            return Err(FactError::IdMismatch { given, computed });
        }
        let tags = Tags::new(wire.tags)?;
        check_range(wire.valid_from, wire.valid_to)?;
        check_text(
            Field::SourceTaskId,
            &wire.source_task_id,
            MAX_SOURCE_TASK_ID_CHARS,
        )?;
        check_confidence(wire.confidence)?;
        if let Some(statement) = &wire.statement {
            check_text(Field::Statement, statement, MAX_STATEMENT_CHARS)?;
        }
        if wire.superseded_by.is_some() && wire.valid_to.is_none() {
            return Err(FactError::SupersededWhileValid);
        }
        Ok(SessionFact {
            id: computed,
            subject: wire.subject,
            relation: wire.relation,
            object: wire.object,
            tags,
            valid_from: wire.valid_from,
            valid_to: wire.valid_to,
            source_task_id: wire.source_task_id,
            source_role: wire.source_role,
            confidence: wire.confidence,
            statement: wire.statement,
            superseded_by: wire.superseded_by,
        })
    }
}

impl TryFrom<WireFact> for SessionFact {
    type Error = FactError;

    fn try_from(wire: WireFact) -> Result<Self, Self::Error> {
        SessionFact::validated(wire)
    }
}

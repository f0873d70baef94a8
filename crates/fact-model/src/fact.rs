//! [`SessionFact`]: the validated, temporal fact every other crate stores and moves.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{FactId, FactText, Metadata, SourceRole, Tag, Timestamp, char_len};

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
    // Debug, not Display: 1e308 reads as `1e308`, not as 309 digits.
    #[error("`confidence` must be a finite number in 0..=1, got {value:?}")]
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
/// | `recorded_at` | optional, when a store recorded this version (transaction time); never `valid_from` |
/// | `metadata` | optional [`Metadata`]: at most 32 keys of `[A-Za-z0-9_.-]`, scalar values; omitted on the wire when empty |
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
    recorded_at: Option<Timestamp>,
    metadata: Metadata,
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
        if let Some(at) = &self.recorded_at {
            s.field("recorded_at", at);
        }
        if !self.metadata.is_empty() {
            s.field("metadata", &self.metadata);
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
            recorded_at: None,
            metadata: Metadata::new(),
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

    /// When the version was recorded: the transaction time, as distinct from
    /// [`valid_from`](Self::valid_from), the time the fact became true. A fact said in a
    /// March conversation archived in November is valid from March and recorded in
    /// November. `None` when whoever built the fact did not say (a store keeps what the
    /// fact carries).
    #[must_use]
    pub fn recorded_at(&self) -> Option<Timestamp> {
        self.recorded_at
    }

    /// The same fact, recorded at `at` (see [`recorded_at`](Self::recorded_at)).
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # let t = |s: i64| Timestamp::from_unix_secs(s).unwrap();
    /// let said = SessionFact::builder("user", "lives_in", "Berlin").tag(Tag::Context)
    ///     .source("ep_1", SourceRole::Extractor).valid_from(t(10)).build()?;
    /// let stored = said.clone().recorded(t(99));
    /// assert_eq!((stored.valid_from(), stored.recorded_at()), (t(10), Some(t(99))));
    /// assert_eq!(stored.id(), said.id());
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    #[must_use]
    pub fn recorded(self, at: Timestamp) -> SessionFact {
        SessionFact {
            recorded_at: Some(at),
            ..self
        }
    }

    /// The fact's metadata (empty unless given).
    #[must_use]
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The same fact with `metadata` instead of its own (the id does not change:
    /// metadata is not part of the triple).
    ///
    /// ```
    /// # use fact_model::{Metadata, SessionFact, SourceRole, Tag, Timestamp};
    /// let fact = SessionFact::builder("user", "works_on", "rlm").tag(Tag::Context)
    ///     .source("ep_1", SourceRole::User).valid_from(Timestamp::UNIX_EPOCH).build()?;
    /// let tagged = fact.clone().with_metadata(Metadata::from_assignments(["project=rlm"])?);
    /// assert_eq!(tagged.id(), fact.id());
    /// assert_eq!(tagged.metadata().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_metadata(self, metadata: Metadata) -> SessionFact {
        SessionFact { metadata, ..self }
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

    /// The version as a memory held it at `at`: `None` when it was not yet valid then
    /// (`valid_from` after `at`) or not yet recorded (`recorded_at` after `at`); itself
    /// when it had already ended by then; and when it ended after `at`, the same version
    /// still valid (its end and successor are later knowledge). What an export
    /// `--as-of` writes.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// # let t = |s: i64| Timestamp::from_unix_secs(s).unwrap();
    /// let fact = SessionFact::builder("a", "b", "c").tag(Tag::Decision)
    ///     .source("1", SourceRole::Implementer).valid_from(t(10)).build()?
    ///     .invalidated_at(t(20))?;
    /// assert!(fact.known_at(t(9)).is_none());
    /// assert!(fact.known_at(t(15)).is_some_and(|f| f.is_valid()));
    /// assert_eq!(fact.known_at(t(20)), Some(fact.clone()));
    /// # Ok::<(), fact_model::FactError>(())
    /// ```
    #[must_use]
    pub fn known_at(&self, at: Timestamp) -> Option<SessionFact> {
        if self.valid_from > at || self.recorded_at.is_some_and(|recorded| recorded > at) {
            return None;
        }
        match self.valid_to {
            Some(end) if end > at => Some(SessionFact {
                valid_to: None,
                superseded_by: None,
                ..self.clone()
            }),
            _ => Some(self.clone()),
        }
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
        if let Some(metadata) = &update.metadata {
            next.metadata = metadata.clone();
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
    /// New metadata, replacing the old whole (empty metadata clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
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
    recorded_at: Option<Timestamp>,
    metadata: Metadata,
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

/// The tags as given, the first four kept (see [`TagList`]): what [`Tags::new`] decides on.
impl IntoIterator for TagList {
    type Item = Tag;
    type IntoIter = std::iter::Take<std::array::IntoIter<Tag, { MAX_TAGS + 1 }>>;

    #[inline]
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.given)
    }
}

/// Reads a JSON list of tags inline, without a `Vec`: every element is still read (and an
/// unknown tag rejected by serde), and [`SessionFact::validated`] judges the list exactly
/// as it judges a `Vec<Tag>`, since [`Tags::new`] stops at the fourth tag either way.
impl<'de> Deserialize<'de> for TagList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = TagList;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<TagList, A::Error> {
                let mut list = TagList::EMPTY;
                while let Some(tag) = seq.next_element::<Tag>()? {
                    list.push(tag);
                }
                Ok(list)
            }
        }

        deserializer.deserialize_seq(Visitor)
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
            recorded_at: None,
            metadata: Metadata::new(),
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

    /// Sets when a store recorded the fact (see [`SessionFact::recorded_at`]).
    #[inline]
    pub fn recorded_at(mut self, at: Timestamp) -> Self {
        self.recorded_at = Some(at);
        self
    }

    /// Sets the fact's metadata.
    #[inline]
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
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
            recorded_at: self.recorded_at,
            metadata: self.metadata,
        })
    }
}

/// A fact before validation: the wire form as read (tags as an inline [`TagList`]), or
/// what a builder holds (tags as an iterator over its inline list).
#[derive(Deserialize)]
struct WireFact<T = TagList> {
    #[serde(default, deserialize_with = "parsed_option::<_, GivenId>")]
    id: Option<GivenId>,
    subject: FactText,
    relation: FactText,
    object: FactText,
    tags: T,
    #[serde(deserialize_with = "parsed::<_, WireTime>")]
    valid_from: Timestamp,
    /// Absent is read as `null`.
    #[serde(default, deserialize_with = "parsed_option::<_, WireTime>")]
    valid_to: Option<Timestamp>,
    source_task_id: FactText,
    source_role: SourceRole,
    #[serde(default = "default_confidence")]
    confidence: f64,
    #[serde(default)]
    statement: Option<String>,
    #[serde(default, deserialize_with = "parsed_option::<_, FactId>")]
    superseded_by: Option<FactId>,
    /// Absent is read as `null`.
    #[serde(default, deserialize_with = "parsed_option::<_, WireTime>")]
    recorded_at: Option<Timestamp>,
    /// Absent is read as empty.
    #[serde(default)]
    metadata: Metadata,
}

/// A value read from a JSON string through its `FromStr`, exactly as the `Deserialize` of
/// [`Timestamp`] and [`FactId`] read it (same errors), but from the borrowed text: no
/// `String` is allocated for it.
struct Parsed<T>(T);

impl<'de, T: std::str::FromStr> Deserialize<'de> for Parsed<T>
where
    T::Err: fmt::Display,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<T>(std::marker::PhantomData<T>);

        impl<T: std::str::FromStr> serde::de::Visitor<'_> for Visitor<T>
        where
            T::Err: fmt::Display,
        {
            type Value = Parsed<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Parsed<T>, E> {
                text.parse().map(Parsed).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

fn parsed<'de, D, T>(deserializer: D) -> Result<T::Target, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr + WireValue,
    T::Err: fmt::Display,
{
    Parsed::<T>::deserialize(deserializer).map(|parsed| parsed.0.value())
}

fn parsed_option<'de, D, T>(deserializer: D) -> Result<Option<T::Target>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: std::str::FromStr + WireValue,
    T::Err: fmt::Display,
{
    Option::<Parsed<T>>::deserialize(deserializer).map(|parsed| parsed.map(|p| p.0.value()))
}

/// What a text parsed for the wire stands for.
trait WireValue {
    type Target;

    fn value(self) -> Self::Target;
}

impl WireValue for FactId {
    type Target = FactId;

    fn value(self) -> FactId {
        self
    }
}

impl WireValue for GivenId {
    type Target = GivenId;

    fn value(self) -> GivenId {
        self
    }
}

/// A [`Timestamp`] read from the wire: the canonical form [`Rfc3339`] writes
/// (`YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z`) decoded directly, anything else (offsets, other
/// fraction lengths, errors) by `Timestamp`'s own parser, so values and errors are its.
struct WireTime(Timestamp);

impl WireValue for WireTime {
    type Target = Timestamp;

    fn value(self) -> Timestamp {
        self.0
    }
}

impl std::str::FromStr for WireTime {
    type Err = crate::TimestampError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match canonical_time(text.as_bytes()) {
            Some(at) => Ok(WireTime(at)),
            None => text.parse().map(WireTime),
        }
    }
}

/// The instant of canonical RFC 3339 text, or `None` for any other text (which the full
/// parser then reads or rejects).
fn canonical_time(text: &[u8]) -> Option<Timestamp> {
    let number = |from: usize, len: usize| -> Option<i64> {
        text.get(from..from + len)?.iter().try_fold(0i64, |n, &b| {
            b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0'))
        })
    };
    let at = |i: usize| text.get(i).copied();
    if at(4)? != b'-' || at(7)? != b'-' || at(10)? != b'T' || at(13)? != b':' || at(16)? != b':' {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    let frac = match text.len() {
        20 => 0,
        24 if at(19)? == b'.' => number(20, 3)? * 1000,
        27 if at(19)? == b'.' => number(20, 6)?,
        _ => return None,
    };
    if text.last().copied()? != b'Z'
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Timestamp::from_unix_micros(secs * 1_000_000 + frac).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`, as `Timestamp`'s parser computes it).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The wire form of a fact as written, borrowed from it: no copy of the fact to
/// serialize it. Field order and names are those of [`WireFact`].
#[derive(Serialize)]
#[serde(rename = "WireFact")]
struct WireFactRef<'a> {
    id: HexId,
    subject: &'a str,
    relation: &'a str,
    object: &'a str,
    tags: &'a [Tag],
    valid_from: Rfc3339,
    /// Always written (`null` while valid), so a reader sees the field the wire form
    /// promises.
    valid_to: Option<Rfc3339>,
    source_task_id: &'a str,
    source_role: SourceRole,
    confidence: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    statement: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    superseded_by: Option<HexId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded_at: Option<Rfc3339>,
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    metadata: &'a Metadata,
}

/// The 16 lowercase hex characters of `id`, as its `Display` writes them.
#[inline]
fn hex(id: FactId) -> [u8; 16] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (pair, byte) in out.chunks_exact_mut(2).zip(id.as_bytes()) {
        if let [hi, lo] = pair {
            *hi = DIGITS.get(usize::from(byte >> 4)).copied().unwrap_or(b'0');
            *lo = DIGITS.get(usize::from(byte & 0xf)).copied().unwrap_or(b'0');
        }
    }
    out
}

/// A [`FactId`] written as its 16 hex characters from a stack buffer: the same string as
/// its `Serialize`, without a formatter call per byte.
#[derive(Clone, Copy)]
struct HexId(FactId);

impl Serialize for HexId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let out = hex(self.0);
        let text = std::str::from_utf8(&out).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(text)
    }
}

/// The `id` a wire fact came with: text that [`FactId`]'s `FromStr` accepts (16 lowercase
/// hex characters; anything else is rejected when read, with that parser's error), kept as
/// text. [`SessionFact::validated`] compares it with the hex of the computed id, and parses
/// it only to report a mismatch.
#[derive(Clone, Copy)]
struct GivenId([u8; 16]);

impl GivenId {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl std::str::FromStr for GivenId {
    type Err = crate::ParseFactIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 16];
        if text.len() == out.len() && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            out.copy_from_slice(text.as_bytes());
            return Ok(GivenId(out));
        }
        // Anything else is what `FactId` rejects, with its own error.
        text.parse::<FactId>().map(|id| GivenId(hex(id)))
    }
}

/// A [`Timestamp`] written as its RFC 3339 `Display` form, formatted into a stack buffer
/// without the formatter, so a serializer sees one string rather than a fragment per field.
#[derive(Clone, Copy)]
struct Rfc3339(Timestamp);

impl Serialize for Rfc3339 {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = rfc3339(self.0);
        match text.as_str() {
            Some(text) => serializer.serialize_str(text),
            None => serializer.collect_str(&self.0),
        }
    }
}

/// `at` as its `Display` writes it (`YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z`), with digits
/// written directly rather than through the formatter.
fn rfc3339(at: Timestamp) -> StackText<32> {
    const MICROS: i64 = 1_000_000;
    let micros = at.unix_micros();
    let secs = micros.div_euclid(MICROS);
    let frac = micros.rem_euclid(MICROS);
    let (year, month, day) = crate::time::civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let mut text = StackText::<32>::new();
    text.digits(year, 4);
    text.byte(b'-');
    text.digits(month, 2);
    text.byte(b'-');
    text.digits(day, 2);
    text.byte(b'T');
    text.digits(sod / 3600, 2);
    text.byte(b':');
    text.digits(sod % 3600 / 60, 2);
    text.byte(b':');
    text.digits(sod % 60, 2);
    if frac != 0 {
        text.byte(b'.');
        if frac % 1000 == 0 {
            text.digits(frac / 1000, 3);
        } else {
            text.digits(frac, 6);
        }
    }
    text.byte(b'Z');
    text
}

/// A small text buffer on the stack; a write that does not fit marks it overflowed.
struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            bytes: [0; N],
            len: 0,
            overflowed: false,
        }
    }

    /// The text, or `None` when a write did not fit.
    fn as_str(&self) -> Option<&str> {
        if self.overflowed {
            return None;
        }
        self.bytes
            .get(..self.len)
            .and_then(|b| std::str::from_utf8(b).ok())
    }

    fn byte(&mut self, byte: u8) {
        match self.bytes.get_mut(self.len) {
            Some(slot) => {
                *slot = byte;
                self.len += 1;
            }
            None => self.overflowed = true,
        }
    }

    /// `value` in exactly `width` decimal digits (values in range never need more).
    fn digits(&mut self, value: i64, width: u32) {
        if !(0..10_i64.pow(width)).contains(&value) {
            self.overflowed = true;
            return;
        }
        for place in (0..width).rev() {
            let digit = value / 10_i64.pow(place) % 10;
            self.byte(b'0' + digit as u8);
        }
    }
}

impl Serialize for SessionFact {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireFactRef {
            id: HexId(self.id),
            subject: self.subject(),
            relation: self.relation(),
            object: self.object(),
            tags: self.tags.as_slice(),
            valid_from: Rfc3339(self.valid_from),
            valid_to: self.valid_to.map(Rfc3339),
            source_task_id: self.source_task_id(),
            source_role: self.source_role,
            confidence: self.confidence,
            statement: self.statement(),
            superseded_by: self.superseded_by.map(HexId),
            recorded_at: self.recorded_at.map(Rfc3339),
            metadata: &self.metadata,
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
            && given.0 != hex(computed)
        {
            // The text was checked when read, so it parses; were it ever not to, the
            // mismatch is still reported, naming the computed id.
            let given = given.as_str().parse().unwrap_or(computed);
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
            recorded_at: wire.recorded_at,
            metadata: wire.metadata,
        })
    }
}

impl TryFrom<WireFact> for SessionFact {
    type Error = FactError;

    fn try_from(wire: WireFact) -> Result<Self, Self::Error> {
        SessionFact::validated(wire)
    }
}

#[cfg(test)]
mod wire_tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use serde_json::json;

    fn wire() -> serde_json::Value {
        json!({
            "subject": "src/lib.rs", "relation": "modified_by", "object": "task:1",
            "tags": ["file_change"], "valid_from": "2026-11-22T03:00:00Z",
            "source_task_id": "1", "source_role": "implementer"
        })
    }

    fn rejected(field: &str, value: serde_json::Value) -> String {
        let mut fact = wire();
        fact[field] = value;
        let text = serde_json::to_string(&fact).unwrap();
        let from_str = serde_json::from_str::<SessionFact>(&text).unwrap_err();
        let from_value = serde_json::from_value::<SessionFact>(fact).unwrap_err();
        assert_eq!(
            from_str.to_string().split(" at line").next(),
            Some(&*from_value.to_string())
        );
        from_value.to_string()
    }

    /// The inline tag list judges a list exactly as `Tags::new` judges the whole `Vec`.
    #[test]
    fn inline_tags_are_judged_as_a_vec() {
        let lists: [&[&str]; 7] = [
            &[],
            &["test"],
            &["test", "error", "goal"],
            &["test", "error", "goal", "context"],
            &["test", "error", "goal", "context", "behavior"],
            &["test", "error", "goal", "test"],
            &["test", "error", "goal", "context", "test"],
        ];
        for list in lists {
            let tags: Vec<Tag> = list.iter().map(|t| t.parse().unwrap()).collect();
            let mut fact = wire();
            fact["tags"] = json!(list);
            let read = serde_json::from_value::<SessionFact>(fact).map(|f| f.tags);
            let judged = Tags::new(tags);
            match (read, judged) {
                (Ok(read), Ok(judged)) => assert_eq!(read, judged),
                (Err(read), Err(judged)) => assert_eq!(read.to_string(), judged.to_string()),
                (read, judged) => panic!("{list:?}: {read:?} vs {judged:?}"),
            }
        }
        assert_eq!(
            rejected("tags", json!("test")),
            "invalid type: string \"test\", expected a sequence"
        );
        assert!(rejected("tags", json!(["tests"])).starts_with("unknown variant `tests`"));
    }

    #[test]
    fn given_ids_are_checked_as_parsed_ids() {
        let id = FactId::for_triple("src/lib.rs", "modified_by", "task:1");
        let mut fact = wire();
        fact["id"] = json!(id.to_string());
        assert_eq!(
            serde_json::from_value::<SessionFact>(fact).unwrap().id(),
            id
        );
        let other = FactId::for_triple("a", "b", "c");
        assert_eq!(
            rejected("id", json!(other.to_string())),
            FactError::IdMismatch {
                given: other,
                computed: id
            }
            .to_string()
        );
        for bad in [
            "zz",
            "",
            "052738CA51D2CFDB",
            "052738ca51d2cfdb0",
            "052738ca51d2cfdé",
        ] {
            let expect = bad.parse::<FactId>().unwrap_err().to_string();
            assert_eq!(rejected("id", json!(bad)), expect);
        }
        assert_eq!(
            rejected("id", json!(12)),
            "invalid type: integer `12`, expected a string"
        );
    }

    /// Timestamps and ids read from borrowed text fail as their own `Deserialize` does.
    #[test]
    fn parsed_fields_fail_as_their_types_do() {
        let own = |value: serde_json::Value, id: bool| {
            if id {
                serde_json::from_value::<Option<FactId>>(value)
                    .unwrap_err()
                    .to_string()
            } else {
                serde_json::from_value::<Option<Timestamp>>(value)
                    .unwrap_err()
                    .to_string()
            }
        };
        for value in [
            json!("yesterday"),
            json!(12),
            json!([]),
            json!("2026-13-01T00:00:00Z"),
        ] {
            assert_eq!(
                rejected("valid_from", value.clone()),
                own(value.clone(), false)
            );
            assert_eq!(rejected("valid_to", value.clone()), own(value, false));
        }
        let mut fact = wire();
        fact["valid_to"] = json!("2026-11-22T04:00:00Z");
        fact["superseded_by"] = json!("zz");
        let err = serde_json::from_value::<SessionFact>(fact.clone()).unwrap_err();
        assert_eq!(err.to_string(), own(json!("zz"), true));
        fact["superseded_by"] = json!(null);
        fact["valid_to"] = json!(null);
        assert!(
            serde_json::from_value::<SessionFact>(fact)
                .unwrap()
                .is_valid()
        );
    }

    proptest::proptest! {
        #[test]
        fn rfc3339_is_the_display(
            micros in Timestamp::MIN.unix_micros()..=Timestamp::MAX.unix_micros(),
            whole in 0..3u8,
        ) {
            let micros = match whole { 0 => micros, 1 => micros / 1000 * 1000, _ => micros / 1_000_000 * 1_000_000 };
            let at = Timestamp::from_unix_micros(micros).unwrap();
            let text = rfc3339(at);
            proptest::prop_assert_eq!(text.as_str(), Some(&*at.to_string()));
            let display = at.to_string();
            proptest::prop_assert_eq!(canonical_time(display.as_bytes()), Some(at));
        }

        /// Whatever the fast path reads, it reads as `Timestamp`'s parser does.
        #[test]
        fn canonical_time_agrees_with_the_parser(
            text in "[0-9]{4}-[0-1][0-9]-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](\\.[0-9]{1,7})?[Zz+]"
        ) {
            if let Some(at) = canonical_time(text.as_bytes()) {
                proptest::prop_assert_eq!(text.parse::<Timestamp>().ok(), Some(at));
            }
            let wire = text.parse::<WireTime>().map(|t| t.0).map_err(|e| e.to_string());
            proptest::prop_assert_eq!(wire, text.parse::<Timestamp>().map_err(|e| e.to_string()));
        }
    }

    #[test]
    fn rfc3339_edges_are_the_display() {
        for at in [Timestamp::MIN, Timestamp::MAX, Timestamp::UNIX_EPOCH] {
            assert_eq!(rfc3339(at).as_str(), Some(&*at.to_string()));
        }
    }

    #[test]
    fn written_ids_and_times_are_their_display() {
        let fact = SessionFact::builder("s", "r", "o")
            .tag(Tag::Test)
            .source("1", SourceRole::Implementer)
            .valid_from(Timestamp::from_unix_micros(-1_500).unwrap())
            .valid_to(Timestamp::MAX)
            .superseded_by(FactId::for_triple("x", "y", "z"))
            .build()
            .unwrap();
        let value = serde_json::to_value(&fact).unwrap();
        assert_eq!(value["id"], json!(fact.id().to_string()));
        assert_eq!(
            value["superseded_by"],
            json!(FactId::for_triple("x", "y", "z").to_string())
        );
        assert_eq!(value["valid_from"], json!(fact.valid_from().to_string()));
        assert_eq!(value["valid_to"], json!(Timestamp::MAX.to_string()));
        assert_eq!(serde_json::from_value::<SessionFact>(value).unwrap(), fact);
    }
}

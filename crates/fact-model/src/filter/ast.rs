//! The filter's values: fields, operators, operands, conditions and their combinations,
//! what a filter reads of a fact ([`FilterTarget`]), how it holds, and its errors.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::metadata::number_json;
use crate::{MetaValue, SessionFact, Tag, Timestamp, is_metadata_key};

/// The deepest nesting of `and`, `or` and `not` a filter may have.
pub const MAX_FILTER_DEPTH: usize = 16;
/// The most conditions and list values one filter may hold in all.
pub const MAX_FILTER_ITEMS: usize = 1024;

/// A fact's field a filter can test.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FilterField {
    /// The subject (text).
    Subject,
    /// The relation (text).
    Relation,
    /// The object (text).
    Object,
    /// The fact's tags: `eq` holds when the fact carries the tag.
    Category,
    /// The source: the episode or task id the fact came from (text).
    Source,
    /// The confidence (number).
    Confidence,
    /// When the fact became true (time).
    ValidFrom,
    /// When it stopped being true (time; absent while it is true).
    ValidTo,
    /// When the store recorded this version (time; absent before a store did).
    RecordedAt,
    /// The value under a metadata key (`metadata.KEY`).
    Metadata(String),
}

/// What a field's values are, which decides the operators and operand types allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Strings: every operator, with string operands.
    Text,
    /// Tag names: `eq ne in nin exists`.
    Tag,
    /// Numbers: every operator but `contains`.
    Number,
    /// RFC 3339 times: every operator but `contains`.
    Time,
    /// Strings, numbers or booleans; ordering on numbers and strings.
    Meta,
}

impl FilterField {
    /// Every named field (the metadata fields are `metadata.KEY`).
    pub const NAMED: [FilterField; 9] = [
        FilterField::Subject,
        FilterField::Relation,
        FilterField::Object,
        FilterField::Category,
        FilterField::Source,
        FilterField::Confidence,
        FilterField::ValidFrom,
        FilterField::ValidTo,
        FilterField::RecordedAt,
    ];

    /// The field's name in a filter: `subject`, …, `metadata.KEY`.
    #[must_use]
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        let name = match self {
            FilterField::Subject => "subject",
            FilterField::Relation => "relation",
            FilterField::Object => "object",
            FilterField::Category => "category",
            FilterField::Source => "source",
            FilterField::Confidence => "confidence",
            FilterField::ValidFrom => "valid_from",
            FilterField::ValidTo => "valid_to",
            FilterField::RecordedAt => "recorded_at",
            FilterField::Metadata(key) => return format!("metadata.{key}").into(),
        };
        name.into()
    }

    /// The field a filter names, or `None`.
    #[must_use]
    pub fn parse(name: &str) -> Option<FilterField> {
        if let Some(key) = name.strip_prefix("metadata.") {
            return is_metadata_key(key).then(|| FilterField::Metadata(key.to_owned()));
        }
        FilterField::NAMED.into_iter().find(|f| f.name() == name)
    }

    /// What the field's values are.
    #[must_use]
    pub fn kind(&self) -> FieldKind {
        match self {
            FilterField::Subject
            | FilterField::Relation
            | FilterField::Object
            | FilterField::Source => FieldKind::Text,
            FilterField::Category => FieldKind::Tag,
            FilterField::Confidence => FieldKind::Number,
            FilterField::ValidFrom | FilterField::ValidTo | FilterField::RecordedAt => {
                FieldKind::Time
            }
            FilterField::Metadata(_) => FieldKind::Meta,
        }
    }
}

/// A filter operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// Equal.
    Eq,
    /// Not equal (also true when the field is absent).
    Ne,
    /// Equal to one of a list.
    In,
    /// Equal to none of a list (also true when the field is absent).
    Nin,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
    /// A string that holds the operand (case-sensitive).
    Contains,
    /// The field is present (`true`) or absent (`false`).
    Exists,
}

impl Operator {
    /// Every operator.
    pub const ALL: [Operator; 10] = [
        Operator::Eq,
        Operator::Ne,
        Operator::In,
        Operator::Nin,
        Operator::Gt,
        Operator::Gte,
        Operator::Lt,
        Operator::Lte,
        Operator::Contains,
        Operator::Exists,
    ];

    /// The operator's name: `eq`, `ne`, …
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Operator::Eq => "eq",
            Operator::Ne => "ne",
            Operator::In => "in",
            Operator::Nin => "nin",
            Operator::Gt => "gt",
            Operator::Gte => "gte",
            Operator::Lt => "lt",
            Operator::Lte => "lte",
            Operator::Contains => "contains",
            Operator::Exists => "exists",
        }
    }

    /// The operator of this name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|op| op.name() == name)
    }

    pub(super) fn is_ordering(self) -> bool {
        matches!(
            self,
            Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte
        )
    }
}

/// A value a condition compares with, typed by its field.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A string (text fields, `contains`, string metadata).
    Text(String),
    /// A number (confidence, number metadata).
    Number(f64),
    /// A boolean (boolean metadata).
    Bool(bool),
    /// A time (`valid_from`, `valid_to`, `recorded_at`).
    Time(Timestamp),
    /// A tag (`category`).
    Tag(Tag),
}

impl Operand {
    /// The operand as JSON (times as RFC 3339 text, tags by name).
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Operand::Text(text) => Value::String(text.clone()),
            Operand::Number(number) => number_json(*number),
            Operand::Bool(flag) => Value::Bool(*flag),
            Operand::Time(at) => Value::String(at.to_string()),
            Operand::Tag(tag) => Value::String(tag.as_str().to_owned()),
        }
    }
}

/// One checked test of a field: `field op operand`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub(super) field: FilterField,
    pub(super) op: Operator,
    /// One value for most operators, the list for `in`/`nin`, empty for `exists`.
    pub(super) operands: Vec<Operand>,
    /// `exists`' flag.
    pub(super) exists: bool,
}

impl Condition {
    /// The field tested.
    #[must_use]
    pub fn field(&self) -> &FilterField {
        &self.field
    }

    /// The operator.
    #[must_use]
    pub fn op(&self) -> Operator {
        self.op
    }

    /// The operand of a one-value operator; `None` for `in`, `nin` and `exists`.
    #[must_use]
    pub fn operand(&self) -> Option<&Operand> {
        match self.op {
            Operator::In | Operator::Nin | Operator::Exists => None,
            _ => self.operands.first(),
        }
    }

    /// The list of `in` and `nin` (the one value of other operators).
    #[must_use]
    pub fn operands(&self) -> &[Operand] {
        &self.operands
    }

    /// `exists`' flag (`true` for the other operators).
    #[must_use]
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// The condition's JSON value (`{"op": operand}`).
    fn value_json(&self) -> Value {
        let value = match self.op {
            Operator::Exists => Value::Bool(self.exists),
            Operator::In | Operator::Nin => {
                Value::Array(self.operands.iter().map(Operand::to_json).collect())
            }
            _ => self.operands.first().map_or(Value::Null, Operand::to_json),
        };
        let mut map = Map::new();
        map.insert(self.op.name().to_owned(), value);
        Value::Object(map)
    }

    fn matches(&self, fact: &dyn FilterTarget) -> bool {
        let seen = match &self.field {
            FilterField::Category => return self.matches_tags(fact.tags()),
            FilterField::Subject => Some(Seen::Text(fact.subject())),
            FilterField::Relation => Some(Seen::Text(fact.relation())),
            FilterField::Object => Some(Seen::Text(fact.object())),
            FilterField::Source => Some(Seen::Text(fact.source())),
            FilterField::Confidence => Some(Seen::Number(fact.confidence())),
            FilterField::ValidFrom => Some(Seen::Time(fact.valid_from())),
            FilterField::ValidTo => fact.valid_to().map(Seen::Time),
            FilterField::RecordedAt => fact.recorded_at().map(Seen::Time),
            FilterField::Metadata(key) => fact.meta(key).map(|value| match value {
                MetaValue::String(text) => Seen::Text(text),
                MetaValue::Number(number) => Seen::Number(*number),
                MetaValue::Bool(flag) => Seen::Bool(*flag),
            }),
        };
        self.test(seen)
    }

    fn matches_tags(&self, tags: &[Tag]) -> bool {
        let has = |operand: &Operand| matches!(operand, Operand::Tag(tag) if tags.contains(tag));
        match self.op {
            Operator::Eq | Operator::In => self.operands.iter().any(has),
            Operator::Ne | Operator::Nin => !self.operands.iter().any(has),
            Operator::Exists => self.exists,
            _ => false,
        }
    }

    /// The test of a value that may be absent; `ne` and `nin` are `not eq` and `not in`.
    fn test(&self, seen: Option<Seen<'_>>) -> bool {
        let compare = |operand: &Operand| seen.and_then(|seen| seen.compare(operand));
        let equal = |operand: &Operand| compare(operand) == Some(Ordering::Equal);
        let order = || self.operands.first().and_then(compare);
        match self.op {
            Operator::Eq | Operator::In => self.operands.iter().any(equal),
            Operator::Ne | Operator::Nin => !self.operands.iter().any(equal),
            Operator::Gt => order() == Some(Ordering::Greater),
            Operator::Gte => order().is_some_and(Ordering::is_ge),
            Operator::Lt => order() == Some(Ordering::Less),
            Operator::Lte => order().is_some_and(Ordering::is_le),
            Operator::Contains => match (seen, self.operands.first()) {
                (Some(Seen::Text(text)), Some(Operand::Text(part))) => text.contains(part.as_str()),
                _ => false,
            },
            Operator::Exists => seen.is_some() == self.exists,
        }
    }
}

/// A fact's value as a condition sees it, borrowed.
#[derive(Clone, Copy)]
enum Seen<'a> {
    Text(&'a str),
    Number(f64),
    Bool(bool),
    Time(Timestamp),
}

impl Seen<'_> {
    /// Compares with an operand of the same type (strings by their bytes); `None` across
    /// types.
    fn compare(self, operand: &Operand) -> Option<Ordering> {
        match (self, operand) {
            (Seen::Text(a), Operand::Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            (Seen::Number(a), Operand::Number(b)) => a.partial_cmp(b),
            (Seen::Bool(a), Operand::Bool(b)) => Some(a.cmp(b)),
            (Seen::Time(a), Operand::Time(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// A checked filter over facts: conditions combined with `and`, `or` and `not`.
///
/// Semantics, the same on every backend:
/// - `ne` is `not eq` and `nin` is `not in`: both hold for a fact without the field (an
///   absent metadata key, a `valid_to` of a fact still true);
/// - every other operator is false on an absent field and on a value of another type
///   than its operand (a metadata string against a number);
/// - strings compare by their UTF-8 bytes, `contains` is case-sensitive;
/// - `category` tests the fact's tags: `eq t` and `in` hold when it carries one of them.
///
/// An empty `and` holds for every fact, an empty `or` for none.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// Every one holds.
    And(Vec<Filter>),
    /// At least one holds.
    Or(Vec<Filter>),
    /// It does not hold.
    Not(Box<Filter>),
    /// One condition.
    Condition(Condition),
}

/// What a filter reads of a fact. Implemented for [`SessionFact`]; a store implements it
/// for its own rows to filter without building facts.
pub trait FilterTarget {
    /// The subject.
    fn subject(&self) -> &str;
    /// The relation.
    fn relation(&self) -> &str;
    /// The object.
    fn object(&self) -> &str;
    /// The tags.
    fn tags(&self) -> &[Tag];
    /// The source task or episode id.
    fn source(&self) -> &str;
    /// The confidence.
    fn confidence(&self) -> f64;
    /// When the fact became true.
    fn valid_from(&self) -> Timestamp;
    /// When it stopped being true.
    fn valid_to(&self) -> Option<Timestamp>;
    /// When a store recorded it.
    fn recorded_at(&self) -> Option<Timestamp>;
    /// The metadata value under `key`.
    fn meta(&self, key: &str) -> Option<&MetaValue>;
}

impl FilterTarget for SessionFact {
    fn subject(&self) -> &str {
        SessionFact::subject(self)
    }
    fn relation(&self) -> &str {
        SessionFact::relation(self)
    }
    fn object(&self) -> &str {
        SessionFact::object(self)
    }
    fn tags(&self) -> &[Tag] {
        SessionFact::tags(self).as_slice()
    }
    fn source(&self) -> &str {
        self.source_task_id()
    }
    fn confidence(&self) -> f64 {
        SessionFact::confidence(self)
    }
    fn valid_from(&self) -> Timestamp {
        SessionFact::valid_from(self)
    }
    fn valid_to(&self) -> Option<Timestamp> {
        SessionFact::valid_to(self)
    }
    fn recorded_at(&self) -> Option<Timestamp> {
        SessionFact::recorded_at(self)
    }
    fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.metadata().get(key)
    }
}

impl Filter {
    /// The filter that holds for every fact (an empty `and`).
    #[must_use]
    pub fn all() -> Filter {
        Filter::And(Vec::new())
    }

    /// Whether the filter holds for `fact`.
    #[must_use]
    pub fn matches(&self, fact: &dyn FilterTarget) -> bool {
        match self {
            Filter::And(all) => all.iter().all(|f| f.matches(fact)),
            Filter::Or(any) => any.iter().any(|f| f.matches(fact)),
            Filter::Not(inner) => !inner.matches(fact),
            Filter::Condition(condition) => condition.matches(fact),
        }
    }

    /// Whether this is the empty `and`, which holds for every fact.
    #[must_use]
    pub fn is_all(&self) -> bool {
        matches!(self, Filter::And(all) if all.is_empty())
    }

    /// Every condition, in order.
    pub fn conditions(&self) -> Vec<&Condition> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    /// The conditions that must hold for the filter to hold: the filter's own condition,
    /// or those of its `and` (and of the `and`s inside it). An index may look the facts
    /// satisfying one of them up, then test the whole filter on those alone.
    ///
    /// ```
    /// use fact_model::Filter;
    ///
    /// let filter = Filter::parse_where(
    ///     r#"metadata.project = "rlm" and (category = decision or confidence > 0.5)"#,
    /// ).unwrap();
    /// let fields: Vec<_> = filter.conjuncts().iter().map(|c| c.field().name()).collect();
    /// assert_eq!(fields, ["metadata.project"]);
    /// ```
    pub fn conjuncts(&self) -> Vec<&Condition> {
        let mut out = Vec::new();
        self.collect_conjuncts(&mut out);
        out
    }

    fn collect_conjuncts<'a>(&'a self, out: &mut Vec<&'a Condition>) {
        match self {
            Filter::And(list) => list.iter().for_each(|f| f.collect_conjuncts(out)),
            Filter::Condition(condition) => out.push(condition),
            Filter::Or(_) | Filter::Not(_) => {}
        }
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a Condition>) {
        match self {
            Filter::And(list) | Filter::Or(list) => list.iter().for_each(|f| f.collect(out)),
            Filter::Not(inner) => inner.collect(out),
            Filter::Condition(condition) => out.push(condition),
        }
    }

    /// The filter in its canonical JSON shape: `{"and": [...]}`, `{"or": [...]}`,
    /// `{"not": ...}` and `{"field": {"op": value}}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        match self {
            Filter::And(list) => {
                map.insert("and".into(), list.iter().map(Filter::to_json).collect());
            }
            Filter::Or(list) => {
                map.insert("or".into(), list.iter().map(Filter::to_json).collect());
            }
            Filter::Not(inner) => {
                map.insert("not".into(), inner.to_json());
            }
            Filter::Condition(condition) => {
                map.insert(condition.field.name().into_owned(), condition.value_json());
            }
        }
        Value::Object(map)
    }
}

/// Why a filter was refused, and where in it. Its [`code`](Self::code) is
/// `invalid_filter`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid filter at `{path}`: {reason}")]
pub struct FilterError {
    path: String,
    reason: String,
}

impl FilterError {
    pub(super) fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        FilterError {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The error's stable code: `invalid_filter`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        "invalid_filter"
    }

    /// Where in the filter: a JSON Pointer (`/and/0/metadata.project/gt`, `` for the
    /// whole filter) for the JSON shape, `column N` for the readable form.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong there.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

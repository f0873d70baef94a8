//! The differential property test, for each backend's own `proptest!`: random operation
//! sequences (batches with colliding keys and statements and out-of-order times,
//! invalidations with and without a subject, compaction, updates, deletes, re-imports,
//! clock ticks) applied to an [`InMemorySessionFactStore`] and to the backend under test
//! must give identical reports, errors, valid facts, histories, `valid_at` answers,
//! snapshots and search results after every operation ([`differential`]); and the
//! turns of one transaction must supersede in order ([`turns_supersede_in_order`]).
//!
//! ```
//! use fact_store::InMemorySessionFactStore;
//! use fact_store::conformance::properties::{config, differential, op};
//! use proptest::prelude::*;
//!
//! proptest! {
//!     # #![proptest_config(ProptestConfig::with_cases(4))]
//!     // With `#[test]`, in a test module.
//!     fn two_in_memory_stores_agree(
//!         config in config(),
//!         ops in proptest::collection::vec(op(), 1..40),
//!     ) {
//!         differential(config, &ops, &|config, clock| {
//!             Box::new(InMemorySessionFactStore::new(config, clock))
//!         })?;
//!     }
//! }
//! # two_in_memory_stores_agree();
//! ```
//!
//! A backend's store goes in place of the second in-memory store (wrapped, as a
//! [`Fixture`](super::Fixture)'s store is, with the temporary state it owns); comparing
//! two in-memory stores checks that nothing the in-memory store answers depends on the
//! order of its hash indexes, which are keyed with a random hasher per store.

use std::sync::Arc;
use std::time::Duration;

use fact_model::{
    Clock, FactId, FactSelector, FactUpdate, Filter, ManualClock, SessionFact, SourceRole, Tag,
    Timestamp,
};
use proptest::prelude::*;

use super::Overlap;
use crate::{
    AnalyzerConfig, CompactionPolicy, InMemorySessionFactStore, SessionFactStore, Step,
    StoreConfig, StoreResult, TermQuery, TermWeighting, Transaction,
};

/// The subjects of generated facts (few, so keys collide); [`Spec`] and [`Op`] index them.
const SUBJECTS: &[&str] = &["task:1", "task:2", "src/a.rs", "user"];
/// The relations of generated facts, `compacted` among them (the summaries' relation).
const RELATIONS: &[&str] = &["requires", "summary", "compacted"];
/// The objects of generated facts.
const OBJECTS: &[&str] = &["alpha", "beta", "gamma parsers", "delta"];
/// The statements of generated facts: the first two equal once folded, so dedup fires.
const STATEMENTS: &[&str] = &["Prefers tabs", "prefers  TABS", "Uses vim", "parsing gamma"];
/// The source tasks of generated facts.
const TASKS: &[&str] = &["1", "2"];
/// The metadata of generated facts (JSON objects), when they have some.
const METADATA: &[&str] = &[
    r#"{"project": "rlm"}"#,
    r#"{"project": "factmem", "n": 3}"#,
    r#"{"n": -1.5, "ok": true, "note": "naïve"}"#,
];
/// The filters every comparison selects with (and searches with, the first and the
/// fourth), in the readable form.
const FILTERS: &[&str] = &[
    r#"metadata.project = "rlm""#,
    "metadata.n in (3, -1.5) or metadata.ok = true",
    r#"not metadata.project exists and category = decision"#,
    "confidence > 0.5 and valid_to not exists",
];
/// The texts every comparison searches for.
const QUERIES: &[&str] = &[
    "alpha task 1",
    "requires summary beta",
    "gamma parser tabs vim src",
    "task:2 user",
    "nothing here",
];

/// BM25 with the usual constants, to exercise both factors of a weighting; its term
/// frequency weight is bounded, so the database paths prune candidates.
#[derive(Debug)]
pub struct Bm25;

impl TermWeighting for Bm25 {
    fn term_weight(&self, df: usize, docs: usize, _: usize) -> f64 {
        (1.0 + (docs as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln()
    }

    fn tf_weight(&self, tf: u32, doc_len: u32, avg: f64) -> f64 {
        let tf = f64::from(tf);
        tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * f64::from(doc_len) / avg))
    }

    /// Bounded, so the database paths prune candidates (`Overlap` is not: both kinds run).
    fn max_tf_weight(&self) -> Option<f64> {
        Some(2.2)
    }
}

/// A generated fact: indexes into the suite's short lists of subjects, relations,
/// objects, statements, tasks and tags (out-of-range indexes name `x`), so keys and
/// statements collide often.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The source task.
    task: usize,
    /// The subject.
    subject: usize,
    /// The relation.
    relation: usize,
    /// The object.
    object: usize,
    /// Seconds relative to the clock; negative values model out-of-order input.
    offset: i64,
    /// The statement, if any.
    statement: Option<usize>,
    /// The confidence, in 0..=1.
    confidence: f64,
    /// The metadata (an index into [`METADATA`]), if any.
    metadata: Option<usize>,
    /// The tag.
    tag: usize,
}

/// One operation of a generated sequence, applied to both stores by [`differential`].
/// Indexes name the suite's subjects, relations, objects, tasks and statements, in that
/// order where several appear.
#[derive(Debug, Clone)]
pub enum Op {
    /// Add one batch of facts.
    Add(Vec<Spec>),
    /// Invalidate a `(subject, relation)`.
    Invalidate(usize, usize),
    /// Invalidate a `(subject, relation)` from one task.
    InvalidateFromTask(usize, usize, usize),
    /// A selector without a subject: a relation, maybe narrowed to a task.
    InvalidateRelation(usize, Option<usize>),
    /// Compact to at most this many valid facts.
    Compact(usize),
    /// Delete the fact `(subject, relation, object)`.
    Delete(usize, usize, usize),
    /// Update the fact `(subject, relation, object)`: its confidence, and its statement
    /// when given.
    Update(usize, usize, usize, f64, Option<usize>),
    /// Update the `n`-th valid fact (modulo their number), so updates mostly hit.
    UpdateValid(usize, f64, Option<usize>),
    /// Delete the fact of the `n`-th stored version (modulo their number).
    DeleteStored(usize),
    /// Advance the clock by this many seconds.
    Tick(u64),
    /// Import the store's own snapshot (everything valid is skipped, history doubles).
    Reimport,
    /// A transaction of several steps.
    Apply(Vec<TxStep>),
}

/// One step of an [`Op::Apply`].
#[derive(Debug, Clone)]
pub enum TxStep {
    /// Add one batch of facts.
    Add(Vec<Spec>),
    /// End `(s, r, o)` at the clock plus the offset, replaced by the fact `(s, r, o)` when
    /// given.
    End((usize, usize, usize), i64, Option<(usize, usize, usize)>),
    /// End the valid facts of a relation, maybe narrowed to a task.
    EndMatching(usize, Option<usize>),
    /// Delete the fact `(s, r, o)`.
    Delete((usize, usize, usize)),
}

/// A `(subject, relation, object)` of indexes.
fn triple() -> impl Strategy<Value = (usize, usize, usize)> {
    (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len())
}

/// One step of a transaction, adds the most likely.
fn tx_step() -> impl Strategy<Value = TxStep> {
    prop_oneof![
        4 => proptest::collection::vec(spec(), 0..5).prop_map(TxStep::Add),
        2 => (triple(), -5i64..10, proptest::option::of(triple()))
            .prop_map(|(t, offset, by)| TxStep::End(t, offset, by)),
        1 => (0..RELATIONS.len(), proptest::option::of(0..TASKS.len()))
            .prop_map(|(r, t)| TxStep::EndMatching(r, t)),
        1 => triple().prop_map(TxStep::Delete),
    ]
}

/// The id of the fact `(subject, relation, object)`.
fn id_of((s, r, o): (usize, usize, usize)) -> FactId {
    FactId::for_triple(pick(SUBJECTS, s), pick(RELATIONS, r), pick(OBJECTS, o))
}

/// The transaction of `steps`, its times relative to `now`.
fn transaction(steps: &[TxStep], now: Timestamp) -> Transaction {
    let mut transaction = Transaction::new();
    for step in steps {
        transaction.push(match step {
            TxStep::Add(specs) => Step::Add(specs.iter().map(|s| build(s, now)).collect()),
            TxStep::End(t, offset, by) => Step::End {
                id: id_of(*t),
                at: Timestamp::from_unix_micros(now.unix_micros() + offset * 1_000_000).unwrap(),
                by: by.map(id_of),
            },
            TxStep::EndMatching(r, t) => Step::EndMatching(FactSelector {
                subject: None,
                relation: pick(RELATIONS, *r).to_owned(),
                source_task_id: t.map(|t| pick(TASKS, t).to_owned()),
            }),
            TxStep::Delete(t) => Step::Delete(id_of(*t)),
        });
    }
    transaction
}

/// A generated fact.
fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            0..TASKS.len(),
            0..SUBJECTS.len(),
            0..RELATIONS.len(),
            0..OBJECTS.len(),
        ),
        -5i64..10,
        proptest::option::weighted(0.3, 0..STATEMENTS.len()),
        0.0f64..=1.0,
        0usize..3,
        proptest::option::weighted(0.3, 0..METADATA.len()),
    )
        .prop_map(
            |((task, subject, relation, object), offset, statement, confidence, tag, metadata)| {
                Spec {
                    task,
                    subject,
                    relation,
                    object,
                    offset,
                    statement,
                    confidence,
                    tag,
                    metadata,
                }
            },
        )
}

/// An operation, adds and transactions the most likely.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => proptest::collection::vec(spec(), 0..6).prop_map(Op::Add),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len()).prop_map(|(s, r)| Op::Invalidate(s, r)),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..TASKS.len())
            .prop_map(|(s, r, t)| Op::InvalidateFromTask(s, r, t)),
        1 => (0..RELATIONS.len(), proptest::option::of(0..TASKS.len()))
            .prop_map(|(r, t)| Op::InvalidateRelation(r, t)),
        1 => (0usize..8).prop_map(Op::Compact),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len())
            .prop_map(|(s, r, o)| Op::Delete(s, r, o)),
        1 => (
            (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len()),
            0.0f64..=1.0,
            proptest::option::weighted(0.3, 0..STATEMENTS.len()),
        )
            .prop_map(|((s, r, o), c, st)| Op::Update(s, r, o, c, st)),
        2 => (0usize..64, 0.0f64..=1.0, proptest::option::weighted(0.3, 0..STATEMENTS.len()))
            .prop_map(|(n, c, st)| Op::UpdateValid(n, c, st)),
        1 => (0usize..64).prop_map(Op::DeleteStored),
        2 => (0u64..20).prop_map(Op::Tick),
        1 => Just(Op::Reimport),
        3 => proptest::collection::vec(tx_step(), 1..5).prop_map(Op::Apply),
    ]
}

/// A store configuration: small capacities and history limits (so compaction and history
/// eviction run often), either policy, with and without auto-compaction and stemming.
pub fn config() -> impl Strategy<Value = StoreConfig> {
    (
        1usize..12,
        0usize..12,
        prop_oneof![
            Just(CompactionPolicy::MergeBySubject),
            Just(CompactionPolicy::LowestConfidenceFirst)
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(capacity, history_limit, policy, auto_compact, stemming)| {
                StoreConfig::default()
                    .with_capacity(capacity)
                    .with_history_limit(history_limit)
                    .with_policy(policy)
                    .with_auto_compact(auto_compact)
                    .with_analyzer(AnalyzerConfig::default().with_stemming(stemming))
            },
        )
}

/// The `i`-th name of `list`, or `x` past its end.
fn pick(list: &[&'static str], i: usize) -> &'static str {
    list.get(i).copied().unwrap_or("x")
}

/// The tags of generated facts.
const TAGS: &[Tag] = &[Tag::Decision, Tag::Error, Tag::Preference];

/// The fact `spec` describes, valid from `now` plus its offset.
fn build(spec: &Spec, now: Timestamp) -> SessionFact {
    let at = Timestamp::from_unix_micros(now.unix_micros() + spec.offset * 1_000_000).unwrap();
    let mut builder = SessionFact::builder(
        pick(SUBJECTS, spec.subject),
        pick(RELATIONS, spec.relation),
        pick(OBJECTS, spec.object),
    )
    .tag(TAGS[spec.tag])
    .source(pick(TASKS, spec.task), SourceRole::Implementer)
    .valid_from(at)
    .confidence(spec.confidence);
    if let Some(i) = spec.statement {
        builder = builder.statement(pick(STATEMENTS, i));
    }
    if let Some(text) = spec.metadata.and_then(|i| METADATA.get(i)) {
        let value = serde_json::from_str(text).unwrap();
        builder = builder.metadata(fact_model::Metadata::from_json(&value).unwrap());
    }
    builder.build().unwrap()
}

/// A result compared by value, errors by code and message (`StoreError` is not `PartialEq`).
fn outcome<T: std::fmt::Debug>(result: StoreResult<T>) -> Result<String, String> {
    result
        .map(|value| format!("{value:?}"))
        .map_err(|e| format!("{}: {e}", e.code()))
}

/// Everything observable about a store, compared between the two.
///
/// # Panics
///
/// When either store fails to read.
fn same(
    expected: &dyn SessionFactStore,
    actual: &dyn SessionFactStore,
    now: Timestamp,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        expected.valid_facts().unwrap(),
        actual.valid_facts().unwrap()
    );
    prop_assert_eq!(
        expected.export_snapshot().unwrap(),
        actual.export_snapshot().unwrap()
    );
    prop_assert_eq!(
        expected.valid_count().unwrap(),
        actual.valid_count().unwrap()
    );
    prop_assert_eq!(
        expected.stored_count().unwrap(),
        actual.stored_count().unwrap()
    );
    for subject in SUBJECTS {
        prop_assert_eq!(
            expected.history(subject).unwrap(),
            actual.history(subject).unwrap(),
            "history of {}",
            subject
        );
    }
    for back in [-6i64, -1, 0, 3] {
        let at = Timestamp::from_unix_micros(now.unix_micros() + back * 1_000_000).unwrap();
        prop_assert_eq!(
            expected.valid_at(at).unwrap(),
            actual.valid_at(at).unwrap(),
            "valid_at {:?}",
            at
        );
    }
    for subject in SUBJECTS {
        for object in OBJECTS {
            let id = FactId::for_triple(subject, "summary", object);
            prop_assert_eq!(expected.get(id).unwrap(), actual.get(id).unwrap());
        }
    }
    let filters: Vec<Filter> = FILTERS
        .iter()
        .map(|text| Filter::parse_where(text).unwrap())
        .collect();
    let valid = actual.valid_facts().unwrap();
    for filter in &filters {
        let brute: Vec<SessionFact> = valid
            .iter()
            .filter(|f| filter.matches(*f))
            .cloned()
            .collect();
        prop_assert_eq!(
            &actual.select(filter, None).unwrap(),
            &brute,
            "select {:?}",
            filter
        );
        prop_assert_eq!(
            expected.select(filter, None).unwrap(),
            brute,
            "select {:?}",
            filter
        );
        let at = Timestamp::from_unix_micros(now.unix_micros() - 1_000_000).unwrap();
        prop_assert_eq!(
            expected.select(filter, Some(at)).unwrap(),
            actual.select(filter, Some(at)).unwrap(),
            "select {:?} at {:?}",
            filter,
            at
        );
    }
    let weightings: [&dyn TermWeighting; 2] = [&Bm25, &Overlap];
    for text in QUERIES {
        for weighting in weightings {
            for limit in [1, 3, 100] {
                let plain = TermQuery::new(text, limit);
                let variants = [
                    plain.clone(),
                    plain.clone().with_tags(&[Tag::Error, Tag::Preference]),
                    plain.clone().with_exclude_source_task("1"),
                    plain.clone().with_as_of(now),
                    plain.clone().with_as_of(Timestamp::MAX),
                    plain.clone().with_filter(&filters[0]),
                    plain.clone().with_filter(&filters[3]).with_as_of(now),
                ];
                for query in variants {
                    prop_assert_eq!(
                        expected.search(&query, weighting).unwrap(),
                        actual.search(&query, weighting).unwrap(),
                        "{:?} with {:?}",
                        query,
                        weighting
                    );
                }
            }
        }
    }
    Ok(())
}

/// Applies `ops` to an in-memory store and to the store `open` makes (with the same
/// configuration and clock), comparing them: each operation's outcome (its report, or its
/// error's code and message), then everything observable about the stores.
///
/// # Errors
///
/// A [`TestCaseError`] naming the first difference, for proptest to shrink.
///
/// # Panics
///
/// When a store fails to read.
pub fn differential(
    config: StoreConfig,
    ops: &[Op],
    open: &dyn Fn(StoreConfig, Arc<dyn Clock>) -> Box<dyn SessionFactStore>,
) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_secs(1_000).unwrap()));
    let expected = InMemorySessionFactStore::new(config, clock.clone());
    let actual = open(config, clock.clone());
    let stores: [&dyn SessionFactStore; 2] = [&expected, &*actual];
    for (step, op) in ops.iter().enumerate() {
        let results: Vec<Result<String, String>> = stores
            .iter()
            .map(|store| match op {
                Op::Add(specs) => {
                    outcome(store.add(specs.iter().map(|s| build(s, clock.now())).collect()))
                }
                Op::Invalidate(s, r) => {
                    outcome(store.invalidate(pick(SUBJECTS, *s), pick(RELATIONS, *r)))
                }
                Op::InvalidateFromTask(s, r, t) => outcome(store.invalidate_from_task(
                    pick(SUBJECTS, *s),
                    pick(RELATIONS, *r),
                    pick(TASKS, *t),
                )),
                Op::InvalidateRelation(r, t) => {
                    let selector = FactSelector {
                        subject: None,
                        relation: pick(RELATIONS, *r).to_owned(),
                        source_task_id: t.map(|t| pick(TASKS, t).to_owned()),
                    };
                    outcome(store.invalidate_matching(&selector))
                }
                Op::Compact(max) => outcome(store.compact(*max)),
                Op::Delete(s, r, o) => outcome(store.delete(FactId::for_triple(
                    pick(SUBJECTS, *s),
                    pick(RELATIONS, *r),
                    pick(OBJECTS, *o),
                ))),
                Op::Update(s, r, o, c, st) => {
                    let id = FactId::for_triple(
                        pick(SUBJECTS, *s),
                        pick(RELATIONS, *r),
                        pick(OBJECTS, *o),
                    );
                    let update = FactUpdate {
                        confidence: Some(*c),
                        statement: st.map(|i| pick(STATEMENTS, i).to_owned()),
                        ..FactUpdate::default()
                    };
                    outcome(store.update(id, &update))
                }
                Op::UpdateValid(n, c, st) => {
                    let valid = store.valid_facts().unwrap();
                    let Some(fact) = valid.get(n % valid.len().max(1)) else {
                        return Ok(String::new());
                    };
                    let update = FactUpdate {
                        confidence: Some(*c),
                        statement: st.map(|i| pick(STATEMENTS, i).to_owned()),
                        ..FactUpdate::default()
                    };
                    outcome(store.update(fact.id(), &update))
                }
                Op::DeleteStored(n) => {
                    let records = store.export_snapshot().unwrap().records;
                    let Some(record) = records.get(n % records.len().max(1)) else {
                        return Ok(String::new());
                    };
                    outcome(store.delete(record.fact.id()))
                }
                Op::Tick(_) => Ok(String::new()),
                Op::Apply(steps) => outcome(store.apply(transaction(steps, clock.now()))),
                Op::Reimport => {
                    if store.stored_count().unwrap() < 100 {
                        outcome(store.import(store.export_snapshot().unwrap()))
                    } else {
                        Ok(String::new())
                    }
                }
            })
            .collect();
        if let Op::Tick(secs) = op {
            clock.advance(Duration::from_secs(*secs));
        }
        prop_assert_eq!(&results[0], &results[1], "step {}: {:?}", step, op);
        same(&expected, &*actual, clock.now())?;
    }
    Ok(())
}

/// A fact `(subject, relation, object)`, as indexes into the suite's subjects, relations
/// and objects.
pub type Triple = (usize, usize, usize);

/// A turn: its time in seconds and the facts it says.
pub type Turn = (i64, Vec<Triple>);

/// The turns of one conversation: each a batch of facts said at the turn's time (turns in
/// order, times non-decreasing from 0 seconds, several turns may share one); up to five
/// turns of one to three facts each.
pub fn turns() -> impl Strategy<Value = Vec<Turn>> {
    proptest::collection::vec((0i64..3, proptest::collection::vec(triple(), 1..4)), 1..6).prop_map(
        |turns| {
            let mut at = 0;
            turns
                .into_iter()
                .map(|(step, facts)| {
                    at += step;
                    (at, facts)
                })
                .collect()
        },
    )
}

/// The store's invariant for the batches of one extraction, one per turn in turn order:
/// for each `(subject, relation)`, the valid facts are exactly the distinct facts of that
/// key in the last turn that named it (facts of one turn with the same key stay together),
/// and every fact of the key an earlier turn stored ends when the next turn that names the
/// key begins, superseded by one of that turn's facts.
///
/// # Errors
///
/// A [`TestCaseError`] naming the first key whose facts break it.
///
/// # Panics
///
/// When the store fails to write or read.
pub fn turns_supersede_in_order(
    store: &dyn SessionFactStore,
    turns: &[Turn],
) -> Result<(), TestCaseError> {
    let base = Timestamp::from_unix_secs(1_000).unwrap();
    let at =
        |secs: i64| Timestamp::from_unix_micros(base.unix_micros() + secs * 1_000_000).unwrap();
    let fact = |(s, r, o): (usize, usize, usize), secs: i64| {
        SessionFact::builder(pick(SUBJECTS, s), pick(RELATIONS, r), pick(OBJECTS, o))
            .tag(Tag::Context)
            .source("ep_1", SourceRole::Extractor)
            .valid_from(at(secs))
            .build()
            .unwrap()
    };
    let mut transaction = Transaction::new();
    for (secs, facts) in turns {
        transaction = transaction.add(facts.iter().map(|t| fact(*t, *secs)).collect());
    }
    store.apply(transaction).unwrap();
    for s in 0..SUBJECTS.len() {
        for r in 0..RELATIONS.len() {
            let named: Vec<(i64, Vec<usize>)> = turns
                .iter()
                .filter_map(|(secs, facts)| {
                    let objects: Vec<usize> = facts
                        .iter()
                        .filter(|(fs, fr, _)| (*fs, *fr) == (s, r))
                        .map(|(_, _, o)| *o)
                        .collect();
                    (!objects.is_empty()).then_some((*secs, objects))
                })
                .collect();
            let mut valid: Vec<String> = store
                .valid_facts()
                .unwrap()
                .into_iter()
                .filter(|f| f.subject() == pick(SUBJECTS, s) && f.relation() == pick(RELATIONS, r))
                .map(|f| f.object().to_owned())
                .collect();
            valid.sort();
            let mut expected: Vec<String> = named
                .last()
                .map(|(_, objects)| {
                    objects
                        .iter()
                        .map(|o| pick(OBJECTS, *o).to_owned())
                        .collect()
                })
                .unwrap_or_default();
            expected.sort();
            expected.dedup();
            prop_assert_eq!(&valid, &expected, "key ({}, {})", s, r);
            // Each earlier turn's facts of the key end when the next turn naming it begins
            // (unless that turn names the same fact again, which refreshes it).
            for pair in named.windows(2) {
                let [(_, earlier), (next_at, later)] = pair else {
                    continue;
                };
                for o in earlier {
                    if later.contains(o) {
                        continue;
                    }
                    let id = id_of((s, r, *o));
                    let version = store
                        .history(pick(SUBJECTS, s))
                        .unwrap()
                        .into_iter()
                        .filter(|v| v.id() == id)
                        .find(|v| v.valid_to() == Some(at(*next_at)));
                    prop_assert!(
                        version.is_some(),
                        "({}, {}, {}) ends at {}",
                        s,
                        r,
                        o,
                        next_at
                    );
                    let by = version.and_then(|v| v.superseded_by());
                    prop_assert!(
                        later.iter().any(|l| Some(id_of((s, r, *l))) == by),
                        "({}, {}, {}) is superseded by the next turn",
                        s,
                        r,
                        o
                    );
                }
            }
        }
    }
    Ok(())
}

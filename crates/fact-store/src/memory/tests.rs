//! Property tests of the store's invariants, checked against its private state after
//! every operation of arbitrary operation sequences.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fact_model::{Clock, FactUpdate, ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use proptest::prelude::*;

use super::{CompactionPolicy, InMemorySessionFactStore, State, StoreConfig};
use crate::{SessionFactStore, TermQuery, TermWeighting};

/// BM25 with the usual constants, to exercise both factors of a weighting.
#[derive(Debug)]
struct Bm25;

impl TermWeighting for Bm25 {
    fn term_weight(&self, df: usize, docs: usize, _: usize) -> f64 {
        (1.0 + (docs as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln()
    }

    fn tf_weight(&self, tf: u32, doc_len: u32, avg: f64) -> f64 {
        let tf = f64::from(tf);
        tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * f64::from(doc_len) / avg))
    }
}

/// The index answers exactly as a brute-force scan (an `as_of` search at the end of time
/// scans the valid facts).
fn check_index(store: &InMemorySessionFactStore) -> Result<(), TestCaseError> {
    for text in [
        "alpha task 1",
        "requires summary beta",
        "gamma delta tabs vim src",
        "nothing",
    ] {
        for limit in [1, 3, 100] {
            let query = TermQuery {
                text,
                limit,
                ..TermQuery::default()
            };
            let indexed = store.search(&query, &Bm25);
            let scanned = store.search(
                &TermQuery {
                    as_of: Some(Timestamp::MAX),
                    ..query.clone()
                },
                &Bm25,
            );
            prop_assert_eq!(&indexed, &scanned, "query {:?} limit {}", text, limit);
        }
    }
    Ok(())
}

const SUBJECTS: &[&str] = &["task:1", "task:2", "src/a.rs", "user"];
const RELATIONS: &[&str] = &["requires", "summary", "compacted"];
const OBJECTS: &[&str] = &["alpha", "beta", "gamma", "delta"];
const STATEMENTS: &[&str] = &["Prefers tabs", "prefers  TABS", "Uses vim"];
const TASKS: &[&str] = &["1", "2"];

#[derive(Debug, Clone)]
struct Spec {
    task: usize,
    subject: usize,
    relation: usize,
    object: usize,
    /// Seconds relative to the clock; negative values model out-of-order input.
    offset: i64,
    statement: Option<usize>,
    confidence: f64,
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<Spec>),
    Invalidate(usize, usize),
    InvalidateFromTask(usize, usize, usize),
    Compact(usize),
    Delete(usize, usize, usize),
    Update(usize, usize, usize, f64),
    Tick(u64),
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..TASKS.len(),
        0..SUBJECTS.len(),
        0..RELATIONS.len(),
        0..OBJECTS.len(),
        -5i64..10,
        proptest::option::weighted(0.3, 0..STATEMENTS.len()),
        0.0f64..=1.0,
    )
        .prop_map(
            |(task, subject, relation, object, offset, statement, confidence)| Spec {
                task,
                subject,
                relation,
                object,
                offset,
                statement,
                confidence,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec(spec(), 0..6).prop_map(Op::Add),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len()).prop_map(|(s, r)| Op::Invalidate(s, r)),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..TASKS.len())
            .prop_map(|(s, r, t)| Op::InvalidateFromTask(s, r, t)),
        1 => (0usize..8).prop_map(Op::Compact),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len())
            .prop_map(|(s, r, o)| Op::Delete(s, r, o)),
        1 => (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len(), 0.0f64..=1.0)
            .prop_map(|(s, r, o, c)| Op::Update(s, r, o, c)),
        1 => (0u64..20).prop_map(Op::Tick),
    ]
}

fn config() -> impl Strategy<Value = StoreConfig> {
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
            |(capacity, history_limit, policy, auto_compact, stemming)| StoreConfig {
                capacity,
                history_limit,
                policy,
                auto_compact,
                analyzer: crate::AnalyzerConfig { stemming },
            },
        )
}

fn pick(list: &[&'static str], i: usize) -> &'static str {
    list.get(i).copied().unwrap_or("x")
}

fn build(spec: &Spec, now: Timestamp) -> SessionFact {
    let at = Timestamp::from_unix_micros(now.unix_micros() + spec.offset * 1_000_000).unwrap();
    let mut builder = SessionFact::builder(
        pick(SUBJECTS, spec.subject),
        pick(RELATIONS, spec.relation),
        pick(OBJECTS, spec.object),
    )
    .tag(Tag::Decision)
    .source(pick(TASKS, spec.task), SourceRole::Implementer)
    .valid_from(at)
    .confidence(spec.confidence);
    if let Some(i) = spec.statement {
        builder = builder.statement(pick(STATEMENTS, i));
    }
    builder.build().unwrap()
}

/// What each version looked like: its triple and validity.
type Versions = HashMap<u64, (fact_model::FactId, Timestamp, Option<Timestamp>)>;

fn versions(state: &State) -> Versions {
    state
        .records
        .iter()
        .map(|(seq, r)| (*seq, (r.fact.id(), r.fact.valid_from(), r.fact.valid_to())))
        .collect()
}

/// Every structural invariant of `State`.
fn check_state(state: &State) -> Result<(), TestCaseError> {
    // For every (subject, relation), all valid facts come from one batch.
    let mut keys: HashMap<(&str, &str), Option<u64>> = HashMap::new();
    for record in state.records.values() {
        let key = (record.fact.subject(), record.fact.relation());
        let valid_batch = keys.entry(key).or_insert(None);
        if record.fact.is_valid() {
            match valid_batch {
                Some(b) => prop_assert_eq!(
                    *b,
                    record.batch,
                    "key {:?} has valid facts of two batches",
                    key
                ),
                None => *valid_batch = Some(record.batch),
            }
        }
    }
    // Versions of a later batch than the key's valid facts arrived out of order: they
    // were stored already superseded.
    for record in state.records.values() {
        let key = (record.fact.subject(), record.fact.relation());
        if let Some(Some(valid_batch)) = keys.get(&key)
            && record.batch > *valid_batch
        {
            prop_assert!(
                record.fact.superseded_by().is_some(),
                "a version of {:?} newer than its valid facts was not superseded",
                key
            );
        }
    }
    // A successor is a fact of the same key.
    for record in state.records.values() {
        if let Some(by) = record.fact.superseded_by()
            && let Some(seq) = state.versions.get(&by).and_then(|seqs| seqs.first())
            && let Some(successor) = state.records.get(seq)
        {
            prop_assert_eq!(
                (successor.fact.subject(), successor.fact.relation()),
                (record.fact.subject(), record.fact.relation())
            );
        }
    }
    // Counters and indexes agree with the records.
    let valid: Vec<u64> = state
        .records
        .iter()
        .filter(|(_, r)| r.fact.is_valid())
        .map(|(s, _)| *s)
        .collect();
    prop_assert_eq!(state.valid, valid.len());
    let mut indexed: Vec<u64> = state.valid_by_key.values().flatten().copied().collect();
    indexed.sort_unstable();
    prop_assert_eq!(&indexed, &valid);
    for (id, seqs) in &state.versions {
        prop_assert!(!seqs.is_empty());
        let mut valid_versions = 0;
        for seq in seqs {
            let record = state
                .records
                .get(seq)
                .ok_or_else(|| TestCaseError::fail("dangling version"))?;
            prop_assert_eq!(record.fact.id(), *id);
            valid_versions += usize::from(record.fact.is_valid());
        }
        prop_assert!(
            valid_versions <= 1,
            "{} has {} valid versions",
            id,
            valid_versions
        );
    }
    let version_count: usize = state.versions.values().map(Vec::len).sum();
    prop_assert_eq!(version_count, state.records.len());
    let subject_count: usize = state.by_subject.values().map(Vec::len).sum();
    prop_assert_eq!(subject_count, state.records.len());
    Ok(())
}

/// History is append-only: versions keep their triple and `valid_from`, and `valid_to`
/// is set at most once, never before `valid_from`.
fn check_append_only(before: &Versions, after: &Versions) -> Result<(), TestCaseError> {
    for (seq, (id, from, to)) in after {
        if let Some(to) = to {
            prop_assert!(to >= from, "valid_to before valid_from");
        }
        if let Some((old_id, old_from, old_to)) = before.get(seq) {
            prop_assert_eq!(old_id, id);
            prop_assert_eq!(old_from, from, "valid_from changed");
            if old_to.is_some() {
                prop_assert_eq!(old_to, to, "valid_to changed after it was set");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn invariants_hold_after_every_operation(config in config(), ops in proptest::collection::vec(op(), 1..40)) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_secs(1_000).unwrap()));
        let store = InMemorySessionFactStore::new(config, clock.clone());
        for op in &ops {
            let before = versions(&store.read());
            match op {
                Op::Add(specs) => {
                    let batch = specs.iter().map(|s| build(s, clock.now())).collect();
                    let report = store.add(batch).unwrap();
                    prop_assert_eq!(
                        report.added.len() + report.refreshed.len() + report.skipped.len()
                            + report.arrived_superseded.len(),
                        specs.len()
                    );
                    if config.auto_compact {
                        prop_assert!(store.valid_count() <= config.capacity);
                        prop_assert!(store.read().history_len() <= config.history_limit);
                    }
                }
                Op::Invalidate(s, r) => {
                    store.invalidate(pick(SUBJECTS, *s), pick(RELATIONS, *r)).unwrap();
                }
                Op::InvalidateFromTask(s, r, t) => {
                    let (subject, relation, task) = (pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(TASKS, *t));
                    let of_key = |store: &InMemorySessionFactStore| -> Vec<SessionFact> {
                        store.valid_facts().into_iter()
                            .filter(|f| f.subject() == subject && f.relation() == relation)
                            .collect()
                    };
                    let before = of_key(&store);
                    let ended = store.invalidate_from_task(subject, relation, task).unwrap();
                    let after = of_key(&store);
                    // Exactly the task's facts of the key end; the other tasks' stay valid.
                    prop_assert!(after.iter().all(|f| f.source_task_id() != task));
                    let others: Vec<_> = before.iter().filter(|f| f.source_task_id() != task).cloned().collect();
                    prop_assert_eq!(after, others);
                    prop_assert_eq!(ended.len(), before.len() - before.iter().filter(|f| f.source_task_id() != task).count());
                }
                Op::Compact(max) => {
                    store.compact(*max).unwrap();
                    prop_assert!(store.valid_count() <= *max);
                }
                Op::Delete(s, r, o) => {
                    let id = fact_model::FactId::for_triple(pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(OBJECTS, *o));
                    let existed = store.get(id).is_some();
                    prop_assert_eq!(store.delete(id).is_ok(), existed);
                    prop_assert!(store.get(id).is_none());
                }
                Op::Update(s, r, o, c) => {
                    let id = fact_model::FactId::for_triple(pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(OBJECTS, *o));
                    let update = FactUpdate { confidence: Some(*c), ..FactUpdate::default() };
                    prop_assert_eq!(store.update(id, &update).is_ok(), store.get(id).is_some());
                }
                Op::Tick(secs) => clock.advance(Duration::from_secs(*secs)),
            }
            let state = store.read();
            check_state(&state)?;
            check_append_only(&before, &versions(&state))?;
            drop(state);
            check_index(&store)?;
            prop_assert_eq!(store.stored_count(), store.export_snapshot().records.len());
        }

        // Snapshot export then import yields an equal store.
        let snapshot = store.export_snapshot();
        let (copy, report) = InMemorySessionFactStore::from_snapshot_json(
            &snapshot.to_json(),
            config,
            clock.clone(),
        ).unwrap();
        prop_assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        prop_assert_eq!(copy.export_snapshot(), snapshot);
        prop_assert_eq!(copy.valid_facts(), store.valid_facts());
        check_state(&copy.read())?;
    }
}

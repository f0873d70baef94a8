//! Property tests of the store's invariants, checked against its private state after
//! every operation of arbitrary operation sequences.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fact_model::{Clock, FactUpdate, ManualClock, SessionFact, SourceRole, Tag, Timestamp};
use proptest::prelude::*;

use super::{InMemorySessionFactStore, State};
use crate::config::{CompactionPolicy, StoreConfig};
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
            let indexed = store.search(&query, &Bm25).unwrap();
            let scanned = store
                .search(
                    &TermQuery {
                        as_of: Some(Timestamp::MAX),
                        ..query.clone()
                    },
                    &Bm25,
                )
                .unwrap();
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

/// What each version looked like: its triple and validity, by record number (stable
/// between two operations unless the store rebuilt itself, which `generation` tells).
type Versions = (
    u64,
    HashMap<u32, (fact_model::FactId, Timestamp, Option<Timestamp>)>,
);

fn versions(state: &State) -> Versions {
    let records = state
        .live()
        .map(|(rid, r)| (rid, (r.id, r.valid_from, r.valid_to())))
        .collect();
    (state.generation, records)
}

/// Every structural invariant of `State`.
fn check_state(state: &State) -> Result<(), TestCaseError> {
    let records: Vec<(u32, SessionFact, u64)> = state
        .live()
        .map(|(rid, r)| (rid, state.fact_at(rid, r).unwrap(), state.batch_of(rid)))
        .collect();
    // For every (subject, relation), all valid facts come from one batch.
    let mut keys: HashMap<(&str, &str), Option<u64>> = HashMap::new();
    for (_, fact, batch) in &records {
        let key = (fact.subject(), fact.relation());
        let valid_batch = keys.entry(key).or_insert(None);
        if fact.is_valid() {
            match valid_batch {
                Some(b) => {
                    prop_assert_eq!(*b, *batch, "key {:?} has valid facts of two batches", key)
                }
                None => *valid_batch = Some(*batch),
            }
        }
    }
    // Versions of a later batch than the key's valid facts arrived out of order: they
    // were stored already superseded.
    for (_, fact, batch) in &records {
        let key = (fact.subject(), fact.relation());
        if let Some(Some(valid_batch)) = keys.get(&key)
            && batch > valid_batch
        {
            prop_assert!(
                fact.superseded_by().is_some(),
                "a version of {:?} newer than its valid facts was not superseded",
                key
            );
        }
    }
    // A successor is a fact of the same key.
    for (_, fact, _) in &records {
        if let Some(by) = fact.superseded_by()
            && let Some(&rid) = state.versions_of(by).last()
            && let Some(successor) = state.fact(rid)
        {
            prop_assert_eq!(
                (successor.subject(), successor.relation()),
                (fact.subject(), fact.relation())
            );
        }
    }
    // Counters and indexes agree with the records.
    let valid: Vec<u32> = records
        .iter()
        .filter(|(_, fact, _)| fact.is_valid())
        .map(|(rid, _, _)| *rid)
        .collect();
    prop_assert_eq!(state.valid, valid.len());
    prop_assert_eq!(state.live_count(), records.len());
    // The key chains hold exactly the valid records, each under its own key.
    let mut indexed: Vec<u32> = Vec::new();
    for head in state.keys.values() {
        let members = state.key_members(head);
        let key = |rid: u32| state.record(rid).map(|r| (r.subject, r.relation));
        prop_assert!(members.iter().all(|rid| key(*rid) == key(head)));
        indexed.extend(members);
    }
    indexed.sort_unstable();
    prop_assert_eq!(&indexed, &valid);
    // The version chains hold exactly the versions of their id, newest first, at most
    // one of them valid.
    let mut ids: Vec<fact_model::FactId> = records.iter().map(|(_, f, _)| f.id()).collect();
    ids.sort_unstable();
    ids.dedup();
    prop_assert_eq!(state.versions.len(), ids.len());
    for id in ids {
        let mut expected: Vec<u32> = records
            .iter()
            .filter(|(_, f, _)| f.id() == id)
            .map(|(rid, _, _)| *rid)
            .collect();
        expected.reverse();
        let chain = state.versions_of(id);
        prop_assert_eq!(&chain, &expected);
        let valid_versions = chain
            .iter()
            .filter(|rid| state.record(**rid).is_some_and(|r| r.is_valid()))
            .count();
        prop_assert!(
            valid_versions <= 1,
            "{} has {} valid versions",
            id,
            valid_versions
        );
    }
    // The subject chains hold exactly the versions about their subject, in order.
    let mut subjects: Vec<&str> = records.iter().map(|(_, f, _)| f.subject()).collect();
    subjects.sort_unstable();
    subjects.dedup();
    for subject in subjects {
        let expected: Vec<u32> = records
            .iter()
            .filter(|(_, f, _)| f.subject() == subject)
            .map(|(rid, _, _)| *rid)
            .collect();
        prop_assert_eq!(state.history(subject), expected);
    }
    // The statement table holds the valid facts with a statement.
    let with_statement = records
        .iter()
        .filter(|(_, f, _)| f.is_valid() && f.statement().is_some())
        .count();
    prop_assert_eq!(state.statements.len(), with_statement);
    // The term index holds the valid facts, with their document frequencies.
    prop_assert_eq!(state.terms.docs(), valid.len());
    for (rid, fact, _) in &records {
        prop_assert_eq!(state.terms.is_indexed(*rid), fact.is_valid());
    }
    let mut df: HashMap<String, u32> = HashMap::new();
    for (_, fact, _) in records.iter().filter(|(_, f, _)| f.is_valid()) {
        let mut terms = state.analyzer.analyze_fact(fact);
        terms.sort_unstable();
        terms.dedup();
        for term in terms {
            *df.entry(term).or_default() += 1;
        }
    }
    for (term, count) in df {
        prop_assert_eq!(state.terms.df(&term), count, "df of {}", term);
    }
    Ok(())
}

/// History is append-only: versions keep their triple and `valid_from`, and `valid_to`
/// is set at most once, never before `valid_from`.
fn check_append_only(before: &Versions, after: &Versions) -> Result<(), TestCaseError> {
    let ((generation_before, before), (generation_after, after)) = (before, after);
    if generation_before != generation_after {
        // Rebuilt: record numbers changed (`rebuild_changes_no_answer` checks rebuilds).
        return Ok(());
    }
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
                        prop_assert!(store.valid_count().unwrap() <= config.capacity);
                        prop_assert!(store.read().history_len() <= config.history_limit);
                    }
                }
                Op::Invalidate(s, r) => {
                    store.invalidate(pick(SUBJECTS, *s), pick(RELATIONS, *r)).unwrap();
                }
                Op::InvalidateFromTask(s, r, t) => {
                    let (subject, relation, task) = (pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(TASKS, *t));
                    let of_key = |store: &InMemorySessionFactStore| -> Vec<SessionFact> {
                        store.valid_facts().unwrap().into_iter()
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
                    prop_assert!(store.valid_count().unwrap() <= *max);
                }
                Op::Delete(s, r, o) => {
                    let id = fact_model::FactId::for_triple(pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(OBJECTS, *o));
                    let existed = store.get(id).unwrap().is_some();
                    prop_assert_eq!(store.delete(id).is_ok(), existed);
                    prop_assert!(store.get(id).unwrap().is_none());
                }
                Op::Update(s, r, o, c) => {
                    let id = fact_model::FactId::for_triple(pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(OBJECTS, *o));
                    let update = FactUpdate { confidence: Some(*c), ..FactUpdate::default() };
                    prop_assert_eq!(store.update(id, &update).is_ok(), store.get(id).unwrap().is_some());
                }
                Op::Tick(secs) => clock.advance(Duration::from_secs(*secs)),
            }
            let state = store.read();
            check_state(&state)?;
            check_append_only(&before, &versions(&state))?;
            drop(state);
            check_index(&store)?;
            prop_assert_eq!(store.stored_count().unwrap(), store.export_snapshot().unwrap().records.len());
        }

        // Snapshot export then import yields an equal store.
        let snapshot = store.export_snapshot().unwrap();
        let (copy, report) = InMemorySessionFactStore::from_snapshot_json(
            &snapshot.to_json(),
            config,
            clock.clone(),
        ).unwrap();
        prop_assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        prop_assert_eq!(copy.export_snapshot().unwrap(), snapshot);
        prop_assert_eq!(copy.valid_facts().unwrap(), store.valid_facts().unwrap());
        check_state(&copy.read())?;
    }
}

/// Applies one operation; returns what it answered.
fn apply(store: &InMemorySessionFactStore, clock: &ManualClock, op: &Op) -> String {
    let key = |s: &usize, r: &usize, o: &usize| {
        fact_model::FactId::for_triple(pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(OBJECTS, *o))
    };
    match op {
        Op::Add(specs) => format!(
            "{:?}",
            store.add(specs.iter().map(|s| build(s, clock.now())).collect())
        ),
        Op::Invalidate(s, r) => format!(
            "{:?}",
            store.invalidate(pick(SUBJECTS, *s), pick(RELATIONS, *r))
        ),
        Op::InvalidateFromTask(s, r, t) => format!(
            "{:?}",
            store.invalidate_from_task(pick(SUBJECTS, *s), pick(RELATIONS, *r), pick(TASKS, *t))
        ),
        Op::Compact(max) => format!("{:?}", store.compact(*max)),
        Op::Delete(s, r, o) => format!("{:?}", store.delete(key(s, r, o))),
        Op::Update(s, r, o, c) => {
            let update = FactUpdate {
                confidence: Some(*c),
                statement: (*c > 0.5).then(|| pick(STATEMENTS, *s).to_owned()),
                ..FactUpdate::default()
            };
            format!("{:?}", store.update(key(s, r, o), &update))
        }
        Op::Tick(secs) => {
            clock.advance(Duration::from_secs(*secs));
            String::new()
        }
    }
}

/// Everything a store answers, with scores bit for bit (`Debug` of an `f64` round-trips).
fn answers(store: &InMemorySessionFactStore, now: Timestamp) -> String {
    let mut out = format!(
        "{:?}\n{:?}\n{}\n",
        store.valid_facts().unwrap(),
        store.export_snapshot().unwrap(),
        store.stored_count().unwrap()
    );
    for subject in SUBJECTS {
        out += &format!("{:?}\n", store.history(subject).unwrap());
    }
    for back in [-6i64, 0, 3] {
        let at = Timestamp::from_unix_micros(now.unix_micros() + back * 1_000_000).unwrap();
        out += &format!("{:?}\n", store.valid_at(at).unwrap());
    }
    for text in [
        "alpha task 1",
        "requires summary beta",
        "gamma tabs vim src",
        "nothing",
    ] {
        for as_of in [None, Some(now)] {
            let query = TermQuery {
                text,
                limit: 100,
                as_of,
                ..TermQuery::default()
            };
            out += &format!("{:?}\n", store.search(&query, &Bm25).unwrap());
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A store rebuilt after every operation (as `maintain` rebuilds one whose removed
    /// versions outnumber the live ones) answers exactly as one never rebuilt.
    #[test]
    fn rebuild_changes_no_answer(config in config(), ops in proptest::collection::vec(op(), 1..40)) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_secs(1_000).unwrap()));
        let plain = InMemorySessionFactStore::new(config, clock.clone());
        let rebuilt = InMemorySessionFactStore::new(config, clock.clone());
        for op in &ops {
            let expected = apply(&plain, &clock, op);
            if let Op::Tick(secs) = op {
                // `apply` advanced the clock once already.
                let _ = secs;
                prop_assert_eq!(expected, String::new());
            } else {
                prop_assert_eq!(apply(&rebuilt, &clock, op), expected, "{:?}", op);
            }
            rebuilt.write().rebuild();
            check_state(&rebuilt.read())?;
            prop_assert_eq!(answers(&rebuilt, clock.now()), answers(&plain, clock.now()));
        }
    }
}

/// A store that compacts forever (the default capacity and history limits) removes
/// versions all the time: it rebuilds itself, so its records, arena and index stay
/// bounded by what it holds, and it stays consistent.
#[test]
fn a_compacting_store_rebuilds_itself_and_stays_bounded() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_secs(1_000).unwrap()));
    let config = StoreConfig {
        capacity: 40,
        history_limit: 40,
        ..StoreConfig::default()
    };
    let store = InMemorySessionFactStore::new(config, clock.clone());
    for n in 0..6_000 {
        clock.advance(Duration::from_secs(1));
        let fact = |subject: String, object: String| {
            SessionFact::builder(subject, "requires", object)
                .tag(Tag::Decision)
                .source(n.to_string(), SourceRole::Implementer)
                .valid_from(clock.now())
                .statement(format!("Statement number {n} about task {}", n % 7))
                .build()
                .unwrap()
        };
        let batch = vec![
            fact(format!("task:{}", n % 50), format!("object {n}")),
            fact(format!("src/file_{n}.rs"), format!("task:{n}")),
        ];
        store.add(batch).unwrap();
    }
    let state = store.read();
    assert!(state.generation > 0, "never rebuilt");
    assert!(state.valid <= 40 && state.history_len() <= 40);
    let bound = 2 * super::state::MIN_HOLES_BEFORE_REBUILD + 200;
    assert!(
        state.records.len() <= bound,
        "{} records",
        state.records.len()
    );
    assert!(
        state.symbols.len() <= 4 * bound,
        "{} symbols",
        state.symbols.len()
    );
    check_state(&state).unwrap();
}

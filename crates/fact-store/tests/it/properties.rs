//! Differential property test: random operation sequences (batches with colliding keys
//! and statements and out-of-order times, invalidations with and without a subject,
//! compaction, updates, deletes, re-imports, clock ticks) applied to an
//! `InMemorySessionFactStore` and to the backend under test must give identical reports,
//! errors, valid facts, histories, `valid_at` answers, snapshots and search results after
//! every operation.
//!
//! The in-memory store is compared with a second in-memory store too: its hash indexes
//! are keyed with a random hasher per store, so this checks that nothing it answers
//! depends on hash order.

use std::sync::Arc;
use std::time::Duration;

use fact_model::{
    Clock, FactId, FactSelector, FactUpdate, ManualClock, SessionFact, SourceRole, Tag, Timestamp,
};
use fact_store::{
    AnalyzerConfig, CompactionPolicy, InMemorySessionFactStore, SessionFactStore, Step,
    StoreConfig, StoreResult, TermQuery, TermWeighting, Transaction,
};
use proptest::prelude::*;

use crate::Overlap;

const SUBJECTS: &[&str] = &["task:1", "task:2", "src/a.rs", "user"];
const RELATIONS: &[&str] = &["requires", "summary", "compacted"];
const OBJECTS: &[&str] = &["alpha", "beta", "gamma parsers", "delta"];
const STATEMENTS: &[&str] = &["Prefers tabs", "prefers  TABS", "Uses vim", "parsing gamma"];
const TASKS: &[&str] = &["1", "2"];
const QUERIES: &[&str] = &[
    "alpha task 1",
    "requires summary beta",
    "gamma parser tabs vim src",
    "task:2 user",
    "nothing here",
];

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

    /// Bounded, so the database paths prune candidates (`Overlap` is not: both kinds run).
    fn max_tf_weight(&self) -> Option<f64> {
        Some(2.2)
    }
}

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
    tag: usize,
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<Spec>),
    Invalidate(usize, usize),
    InvalidateFromTask(usize, usize, usize),
    /// A selector without a subject: a relation, maybe narrowed to a task.
    InvalidateRelation(usize, Option<usize>),
    Compact(usize),
    Delete(usize, usize, usize),
    Update(usize, usize, usize, f64, Option<usize>),
    /// Update the `n`-th valid fact (modulo their number), so updates mostly hit.
    UpdateValid(usize, f64, Option<usize>),
    /// Delete the fact of the `n`-th stored version (modulo their number).
    DeleteStored(usize),
    Tick(u64),
    /// Import the store's own snapshot (everything valid is skipped, history doubles).
    Reimport,
    /// A transaction of several steps.
    Apply(Vec<TxStep>),
}

/// One step of an [`Op::Apply`].
#[derive(Debug, Clone)]
enum TxStep {
    Add(Vec<Spec>),
    /// End `(s, r, o)` at the clock plus the offset, replaced by the fact `(s, r, o)` when
    /// given.
    End((usize, usize, usize), i64, Option<(usize, usize, usize)>),
    EndMatching(usize, Option<usize>),
    Delete((usize, usize, usize)),
}

fn triple() -> impl Strategy<Value = (usize, usize, usize)> {
    (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len())
}

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

fn id_of((s, r, o): (usize, usize, usize)) -> FactId {
    FactId::for_triple(pick(SUBJECTS, s), pick(RELATIONS, r), pick(OBJECTS, o))
}

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
    )
        .prop_map(
            |((task, subject, relation, object), offset, statement, confidence, tag)| Spec {
                task,
                subject,
                relation,
                object,
                offset,
                statement,
                confidence,
                tag,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
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

fn pick(list: &[&'static str], i: usize) -> &'static str {
    list.get(i).copied().unwrap_or("x")
}

const TAGS: &[Tag] = &[Tag::Decision, Tag::Error, Tag::Preference];

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
    builder.build().unwrap()
}

/// A result compared by value, errors by code and message (`StoreError` is not `PartialEq`).
fn outcome<T: std::fmt::Debug>(result: StoreResult<T>) -> Result<String, String> {
    result
        .map(|value| format!("{value:?}"))
        .map_err(|e| format!("{}: {e}", e.code()))
}

/// Everything observable about a store, compared between the two.
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

/// Applies `ops` to an in-memory store and to the store `open` makes, comparing them.
fn differential(
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

/// The turns of one conversation: each a batch of `(subject, relation, object)` facts, said
/// at the turn's time (turns in order, times non-decreasing, several turns may share one).
/// Indexes into `SUBJECTS`, `RELATIONS` and `OBJECTS`.
type Triple = (usize, usize, usize);

/// A turn: its time in seconds and the facts it says.
type Turn = (i64, Vec<Triple>);

fn turns() -> impl Strategy<Value = Vec<Turn>> {
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
pub(crate) fn turns_supersede_in_order(
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn turns_of_one_transaction_supersede_in_order_in_memory(turns in turns()) {
        let store = InMemorySessionFactStore::default();
        turns_supersede_in_order(&store, &turns)?;
    }

    #[test]
    fn two_in_memory_stores_agree(config in config(), ops in proptest::collection::vec(op(), 1..40)) {
        differential(config, &ops, &|config, clock| {
            Box::new(InMemorySessionFactStore::new(config, clock))
        })?;
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use std::path::PathBuf;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use fact_model::SystemClock;
    use fact_store::{
        AddReport, Analyzer, CompactionReport, ImportReport, ScoredFact, Snapshot, SqliteFactStore,
        SqliteOptions, TransactionReport,
    };

    use super::*;
    use crate::sqlite::OnDisk;

    /// Two stores of one scope on one file (two connections, as two processes would be),
    /// both with the search cache: each write goes to the one `route` names next, so each
    /// cache follows its own writes and the other's, interleaved at random. Every search
    /// asks both, and a store opened after the last write (whose cache is loaded whole):
    /// the three must agree.
    #[derive(Debug)]
    struct Interleaved {
        stores: [SqliteFactStore; 2],
        route: Vec<bool>,
        next: AtomicUsize,
        /// A store opened since the last write, and what opens one.
        fresh: Mutex<Option<SqliteFactStore>>,
        path: PathBuf,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
        _dir: tempfile::TempDir,
    }

    impl Interleaved {
        fn open(config: StoreConfig, clock: Arc<dyn Clock>, route: Vec<bool>) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("facts.db");
            let open = || SqliteFactStore::open(&path, "s", config, clock.clone()).unwrap();
            Interleaved {
                stores: [open(), open()],
                route,
                next: AtomicUsize::new(0),
                fresh: Mutex::new(None),
                path,
                config,
                clock,
                _dir: dir,
            }
        }

        /// The store the next write goes to.
        fn writer(&self) -> &SqliteFactStore {
            *self.fresh.lock().unwrap() = None;
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let second = self.route.get(n % self.route.len().max(1)) == Some(&true);
            &self.stores[usize::from(second)]
        }
    }

    impl SessionFactStore for Interleaved {
        fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
            self.writer().add(batch)
        }
        fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
            self.writer().apply(transaction)
        }
        fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
            self.writer().invalidate_matching(selector)
        }
        fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
            self.writer().compact(max_valid)
        }
        fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
            self.writer().update(id, update)
        }
        fn delete(&self, id: FactId) -> StoreResult<usize> {
            self.writer().delete(id)
        }
        fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
            self.writer().import(snapshot)
        }
        fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
            self.stores[0].valid_facts()
        }
        fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
            self.stores[0].valid_at(at)
        }
        fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
            self.stores[0].history(subject)
        }
        fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
            self.stores[0].get(id)
        }
        fn export_snapshot(&self) -> StoreResult<Snapshot> {
            self.stores[0].export_snapshot()
        }
        fn analyzer(&self) -> &Analyzer {
            self.stores[0].analyzer()
        }
        fn search(
            &self,
            query: &TermQuery<'_>,
            weighting: &dyn TermWeighting,
        ) -> StoreResult<Vec<ScoredFact>> {
            let mut fresh = self.fresh.lock().unwrap();
            let fresh = fresh.get_or_insert_with(|| {
                SqliteFactStore::open(&self.path, "s", self.config, self.clock.clone()).unwrap()
            });
            let loaded = fresh.search(query, weighting)?;
            for store in &self.stores {
                assert_eq!(
                    store.search(query, weighting)?,
                    loaded,
                    "a cache that followed the writes answers as one loaded after them"
                );
            }
            Ok(loaded)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// On a file, with the search cache (the default).
        #[test]
        fn sqlite_file_agrees_with_in_memory(
            config in config(),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            differential(config, &ops, &|config, clock| {
                Box::new(OnDisk::open(config, SqliteOptions::default(), clock))
            })?;
        }

        #[test]
        fn turns_of_one_transaction_supersede_in_order_on_sqlite(turns in turns()) {
            let store = OnDisk::open(StoreConfig::default(), SqliteOptions::default(), Arc::new(SystemClock));
            turns_supersede_in_order(&store, &turns)?;
        }

        /// Two connections of one file writing in turns at random, each with its search
        /// cache following the other's writes row by row (or reloading after deletions).
        #[test]
        fn sqlite_caches_of_two_connections_agree_with_a_fresh_load(
            config in config(),
            ops in proptest::collection::vec(op(), 1..40),
            route in proptest::collection::vec(any::<bool>(), 1..8),
        ) {
            differential(config, &ops, &|config, clock| {
                Box::new(Interleaved::open(config, clock, route.clone()))
            })?;
        }

        /// In memory, every search answered by FTS5 and the stored term documents.
        #[test]
        fn sqlite_fts_search_agrees_with_in_memory(
            config in config(),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let options = SqliteOptions::default().with_search_cache(false);
            differential(config, &ops, &|config, clock| {
                Box::new(SqliteFactStore::open_with(":memory:", "p", config, options.clone(), clock).unwrap())
            })?;
        }
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Timestamp};
    use fact_store::{
        AddReport, Analyzer, CompactionReport, ImportReport, PgFactStore, ScoredFact, Snapshot,
        StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
    };

    use super::*;
    use crate::postgres::{fresh_scope, open, options, server};

    /// Two stores of one scope: every write goes to one, every read to the other, whose
    /// search cache follows the writer's commits row by row (or reloads after deletions).
    #[derive(Debug)]
    struct Split {
        writer: PgFactStore,
        reader: PgFactStore,
    }

    impl SessionFactStore for Split {
        fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
            self.writer.add(batch)
        }
        fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
            self.writer.apply(transaction)
        }
        fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
            self.writer.invalidate_matching(selector)
        }
        fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
            self.writer.compact(max_valid)
        }
        fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
            self.writer.update(id, update)
        }
        fn delete(&self, id: FactId) -> StoreResult<usize> {
            self.writer.delete(id)
        }
        fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
            self.writer.import(snapshot)
        }
        fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
            self.reader.valid_facts()
        }
        fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
            self.reader.valid_at(at)
        }
        fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
            self.reader.history(subject)
        }
        fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
            self.reader.get(id)
        }
        fn export_snapshot(&self) -> StoreResult<Snapshot> {
            self.reader.export_snapshot()
        }
        fn analyzer(&self) -> &Analyzer {
            self.reader.analyzer()
        }
        fn search(
            &self,
            query: &TermQuery<'_>,
            weighting: &dyn TermWeighting,
        ) -> StoreResult<Vec<ScoredFact>> {
            self.reader.search(query, weighting)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// On the test server, with the search cache (the default).
        #[test]
        fn postgres_agrees_with_in_memory(
            config in config(),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let Some(url) = server() else { return Ok(()) };
            differential(config, &ops, &|config, clock| {
                Box::new(open(&url, config, options(), clock))
            })?;
        }

        #[test]
        fn turns_of_one_transaction_supersede_in_order_on_postgres(turns in turns()) {
            let Some(url) = server() else { return Ok(()) };
            let store = open(&url, StoreConfig::default(), options(), Arc::new(fact_model::SystemClock));
            turns_supersede_in_order(&store, &turns)?;
        }

        /// Every search answered by the GIN index and the stored term documents.
        #[test]
        fn postgres_gin_search_agrees_with_in_memory(
            config in config(),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let Some(url) = server() else { return Ok(()) };
            let options = options().with_search_cache(false);
            differential(config, &ops, &|config, clock| {
                Box::new(open(&url, config, options.clone(), clock))
            })?;
        }
    }

    proptest! {
        // Two connections per case and a cache refresh per read: fewer cases.
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Writes through one store, reads and searches through another of the same scope.
        #[test]
        fn postgres_reader_of_another_writer_agrees_with_in_memory(
            config in config(),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let Some(url) = server() else { return Ok(()) };
            differential(config, &ops, &|config, clock| {
                let scope = fresh_scope("split");
                let connect = |clock| {
                    PgFactStore::connect_with(&url, &scope, config, options(), clock).unwrap()
                };
                Box::new(Split { writer: connect(clock.clone()), reader: connect(clock) })
            })?;
        }
    }
}

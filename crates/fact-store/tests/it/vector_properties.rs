//! Property tests of the in-memory store's embeddings: `nearest` agrees with a
//! brute-force cosine scan (best first, ties to the smaller id) for random vectors and
//! filters, and random interleavings of puts, deletes, invalidations and re-adds keep
//! `nearest`, `embedded_count` and `unembedded` consistent with a plain model.
//!
//! Scores are compared with a tolerance (the store computes in `f32`, the model in
//! `f64`): a result is correct when every score matches the model's, the scores are in
//! order, equal scores are in id order, and no fact left out scores better than the last
//! one returned.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fact_model::{FactId, ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{
    FactVectors, InMemorySessionFactStore, SessionFactStore, StoreConfig, StoreError, VectorQuery,
};
use proptest::prelude::*;

use crate::t;

const MODEL: &str = "prop/model";
const TAGS: [Tag; 3] = [Tag::Decision, Tag::Error, Tag::Convention];
const TASKS: [&str; 3] = ["1", "2", "3"];
const TOLERANCE: f64 = 1e-5;

fn store() -> InMemorySessionFactStore {
    InMemorySessionFactStore::new(StoreConfig::default(), Arc::new(ManualClock::new(t(0))))
}

fn vectors(store: &InMemorySessionFactStore) -> &dyn FactVectors {
    store
        .vectors()
        .expect("the in-memory store keeps embeddings")
}

/// Fact `i`: subject `s{i}`, a tag and a source task chosen by `i`.
fn fact(i: usize) -> SessionFact {
    SessionFact::builder(format!("s{i}"), "r", "o")
        .tag(TAGS[i % TAGS.len()])
        .source(TASKS[i / 2 % TASKS.len()], SourceRole::Implementer)
        .valid_from(t(0))
        .build()
        .unwrap()
}

/// A vector of small integers (so duplicates and exact ties occur), never all zeros.
fn vector(dim: usize) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(-3i8..=3, dim).prop_map(|mut v| {
        if v.iter().all(|&x| x == 0) {
            v[0] = 1;
        }
        v.into_iter().map(f32::from).collect()
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// The filter of a query: a tag set (or none) and an excluded task (or none).
#[derive(Debug, Clone)]
struct Filter {
    tags: Option<Vec<Tag>>,
    exclude: Option<&'static str>,
}

impl Filter {
    fn admits(&self, fact: &SessionFact) -> bool {
        self.tags
            .as_ref()
            .is_none_or(|tags| fact.tags().contains_any(tags))
            && self.exclude != Some(fact.source_task_id())
    }
}

fn filter() -> impl Strategy<Value = Filter> {
    (
        prop::option::of(prop::sample::subsequence(TAGS.to_vec(), 1..=2)),
        prop::option::of(prop::sample::select(TASKS.to_vec())),
    )
        .prop_map(|(tags, exclude)| Filter { tags, exclude })
}

/// Checks `found` (id, score) against the model's `candidates` (fact, vector) for
/// `query`, `filter` and `limit`.
fn check(
    found: &[(FactId, f64)],
    candidates: &[(SessionFact, Vec<f32>)],
    query: &[f32],
    filter: &Filter,
    limit: usize,
) -> Result<(), TestCaseError> {
    let expected: BTreeMap<FactId, f64> = candidates
        .iter()
        .filter(|(fact, _)| filter.admits(fact))
        .map(|(fact, v)| (fact.id(), cosine(v, query)))
        .collect();
    prop_assert_eq!(found.len(), limit.min(expected.len()));
    for (id, score) in found {
        let want = expected.get(id);
        prop_assert!(want.is_some(), "{id} is not a candidate");
        prop_assert!((score - want.copied().unwrap_or(f64::NAN)).abs() < TOLERANCE);
    }
    for pair in found.windows(2) {
        let ((a, sa), (b, sb)) = (pair[0], pair[1]);
        prop_assert!(sa > sb || (sa == sb && a < b), "order: {:?}", found);
    }
    let returned: BTreeSet<FactId> = found.iter().map(|(id, _)| *id).collect();
    if let Some((_, last)) = found.last() {
        for (id, score) in &expected {
            if !returned.contains(id) {
                prop_assert!(*score <= last + TOLERANCE, "{id} ({score}) beats {last}");
            }
        }
    }
    Ok(())
}

fn nearest(
    store: &InMemorySessionFactStore,
    query: &[f32],
    filter: &Filter,
    limit: usize,
) -> Vec<(FactId, f64)> {
    let mut query = VectorQuery::new(MODEL, query, limit);
    query.tags = filter.tags.as_deref();
    query.exclude_source_task = filter.exclude;
    vectors(store)
        .nearest(&query)
        .unwrap()
        .into_iter()
        .map(|s| (s.fact.id(), s.score))
        .collect()
}

fn sets() -> impl Strategy<Value = (Vec<Vec<f32>>, Vec<f32>, Filter, usize)> {
    (1usize..=6).prop_flat_map(|dim| {
        (
            prop::collection::vec(vector(dim), 0..300),
            vector(dim),
            filter(),
            0usize..25,
        )
    })
}

#[derive(Debug, Clone)]
enum Op {
    Put(usize, Vec<f32>),
    Delete(usize),
    Invalidate(usize),
    Readd(usize),
    Query(Vec<f32>, Filter, usize),
}

const FACTS: usize = 12;
const DIM: usize = 3;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..FACTS, vector(DIM)).prop_map(|(i, v)| Op::Put(i, v)),
        1 => (0..FACTS).prop_map(Op::Delete),
        1 => (0..FACTS).prop_map(Op::Invalidate),
        1 => (0..FACTS).prop_map(Op::Readd),
        2 => (vector(DIM), filter(), 0usize..8).prop_map(|(v, f, l)| Op::Query(v, f, l)),
    ]
}

/// What the model knows of fact `i`.
#[derive(Debug, Clone, Default)]
struct Entry {
    held: bool,
    valid: bool,
    vector: Option<Vec<f32>>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn nearest_equals_a_brute_force_scan((vs, query, filter, limit) in sets()) {
        let store = store();
        let facts: Vec<SessionFact> = (0..vs.len()).map(fact).collect();
        store.add(facts.clone()).unwrap();
        let stored = vectors(&store)
            .put_embeddings(MODEL, facts.iter().map(SessionFact::id).zip(vs.clone()).collect())
            .unwrap();
        prop_assert_eq!(stored, vs.len());
        let candidates: Vec<(SessionFact, Vec<f32>)> = facts.into_iter().zip(vs).collect();
        let found = nearest(&store, &query, &filter, limit);
        check(&found, &candidates, &query, &filter, limit)?;
    }

    #[test]
    fn interleaved_writes_keep_nearest_consistent(ops in prop::collection::vec(op(), 1..60)) {
        let store = store();
        store.add((0..FACTS).map(fact).collect()).unwrap();
        let mut model = vec![Entry { held: true, valid: true, vector: None }; FACTS];
        for op in ops {
            match op {
                Op::Put(i, v) => {
                    let stored = vectors(&store)
                        .put_embeddings(MODEL, vec![(fact(i).id(), v.clone())])
                        .unwrap();
                    prop_assert_eq!(stored, usize::from(model[i].held));
                    if model[i].held {
                        model[i].vector = Some(v);
                    }
                }
                Op::Delete(i) => {
                    let result = store.delete(fact(i).id());
                    if model[i].held {
                        prop_assert!(result.is_ok());
                        model[i] = Entry::default();
                    } else {
                        let not_found = matches!(result, Err(StoreError::NotFound { .. }));
                        prop_assert!(not_found, "{:?}", result);
                    }
                }
                Op::Invalidate(i) => {
                    store.invalidate(&format!("s{i}"), "r").unwrap();
                    model[i].valid = false;
                }
                Op::Readd(i) => {
                    store.add(vec![fact(i)]).unwrap();
                    model[i].held = true;
                    model[i].valid = true;
                }
                Op::Query(v, filter, limit) => {
                    let candidates: Vec<(SessionFact, Vec<f32>)> = model
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.held && e.valid)
                        .filter_map(|(i, e)| Some((fact(i), e.vector.clone()?)))
                        .collect();
                    let found = nearest(&store, &v, &filter, limit);
                    check(&found, &candidates, &v, &filter, limit)?;
                }
            }
            let embedded = model.iter().filter(|e| e.vector.is_some()).count();
            prop_assert_eq!(vectors(&store).embedded_count(MODEL).unwrap(), embedded);
            let missing: BTreeSet<FactId> = vectors(&store)
                .unembedded(MODEL, FACTS).unwrap()
                .iter()
                .map(SessionFact::id)
                .collect();
            let expected: BTreeSet<FactId> = model
                .iter()
                .enumerate()
                .filter(|(_, e)| e.held && e.valid && e.vector.is_none())
                .map(|(i, _)| fact(i).id())
                .collect();
            prop_assert_eq!(missing, expected);
        }
    }
}

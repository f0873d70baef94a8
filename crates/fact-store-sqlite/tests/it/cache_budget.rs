//! Stores of several scopes sharing one [`CacheBudget`]: random writes, searches and
//! vector searches keep the budget's total within its limit after every operation (but
//! for one cache alone larger than the budget, the one used last), and answer exactly as
//! stores with unbounded caches do.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fact_model::{FactSelector, ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{ScoredFact, SessionFactStore, StoreConfig, TermQuery, VectorQuery};
use fact_store_sqlite::{CacheBudget, SqliteFactStore, SqliteOptions};
use proptest::prelude::*;

use crate::{Overlap, t};

const SCOPES: usize = 4;
const WORDS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];
const MODEL: &str = "test-model";

#[derive(Debug, Clone)]
enum Op {
    /// Adds facts to a scope: each a subject and two words of the vocabulary.
    Add(usize, Vec<(u8, u8, u8)>),
    /// Ends the valid facts of a subject.
    Invalidate(usize, u8),
    /// Searches a scope for two words.
    Search(usize, u8, u8),
    /// Embeds the scope's unembedded facts, then searches its vectors.
    Nearest(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..SCOPES, prop::collection::vec((0..12u8, 0..8u8, 0..8u8), 1..12))
            .prop_map(|(scope, facts)| Op::Add(scope, facts)),
        1 => (0..SCOPES, 0..12u8).prop_map(|(scope, subject)| Op::Invalidate(scope, subject)),
        4 => (0..SCOPES, 0..8u8, 0..8u8).prop_map(|(scope, a, b)| Op::Search(scope, a, b)),
        2 => (0..SCOPES, 0..8u8).prop_map(|(scope, a)| Op::Nearest(scope, a)),
    ]
}

fn word(n: u8) -> &'static str {
    WORDS[usize::from(n) % WORDS.len()]
}

fn fact(subject: u8, a: u8, b: u8, secs: i64) -> SessionFact {
    SessionFact::builder(
        format!("s{subject}"),
        "uses",
        format!("{} {}", word(a), word(b)),
    )
    .tag(Tag::Decision)
    .source(format!("task:{subject}"), SourceRole::Implementer)
    .valid_from(t(secs))
    .build()
    .unwrap()
}

/// A deterministic 4-dimensional vector of a text.
fn embed(text: &str) -> Vec<f32> {
    let mut v = [0.1f32; 4];
    for (n, byte) in text.bytes().enumerate() {
        v[n % 4] += f32::from(byte % 7);
    }
    v.to_vec()
}

fn lines(found: Vec<ScoredFact>) -> Vec<(String, f64)> {
    found
        .into_iter()
        .map(|s| {
            let f = s.fact;
            (
                format!("{} {} {}", f.subject(), f.relation(), f.object()),
                s.score,
            )
        })
        .collect()
}

fn same(a: &[(String, f64)], b: &[(String, f64)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.0 == y.0 && (x.1 - y.1).abs() <= 1e-9 * x.1.abs().max(1.0))
}

/// Waits for the budget's background reloads to end.
fn settle(budget: &CacheBudget) {
    let started = Instant::now();
    while budget.reloading() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a reload never ended"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_shared_budget_bounds_the_caches_and_changes_no_answer(
        limit in 1..25_000usize,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("facts.db");
        let clock = Arc::new(ManualClock::new(t(0)));
        let budget = CacheBudget::new(limit);
        let open = |scope: usize, budget: &CacheBudget| {
            let options = SqliteOptions::default().with_cache_budget(budget.clone());
            SqliteFactStore::open_with(
                &path,
                &format!("scope:{scope}"),
                StoreConfig::default(),
                options,
                clock.clone(),
            )
            .unwrap()
        };
        let bounded: Vec<SqliteFactStore> = (0..SCOPES).map(|n| open(n, &budget)).collect();
        let unbounded = CacheBudget::unbounded();
        let reference: Vec<SqliteFactStore> = (0..SCOPES).map(|n| open(n, &unbounded)).collect();
        for (step, op) in ops.into_iter().enumerate() {
            let secs = i64::try_from(step).unwrap();
            let last = match op {
                Op::Add(scope, facts) => {
                    let batch = facts.iter().map(|&(s, a, b)| fact(s, a, b, secs)).collect();
                    bounded[scope].add(batch).unwrap();
                    scope
                }
                Op::Invalidate(scope, subject) => {
                    let selector = FactSelector::key(format!("s{subject}"), "uses");
                    bounded[scope].invalidate_matching(&selector).unwrap();
                    scope
                }
                Op::Search(scope, a, b) => {
                    let text = format!("{} {}", word(a), word(b));
                    let query = TermQuery::new(&text, 5);
                    let got = lines(bounded[scope].search(&query, &Overlap).unwrap());
                    let want = lines(reference[scope].search(&query, &Overlap).unwrap());
                    prop_assert!(same(&got, &want), "{:?} != {:?}", got, want);
                    scope
                }
                Op::Nearest(scope, a) => {
                    let vectors = bounded[scope].vectors().unwrap();
                    let pending = vectors.unembedded(MODEL, 100).unwrap();
                    let embeddings = pending
                        .iter()
                        .map(|f| (f.id(), embed(f.object())))
                        .collect();
                    vectors.put_embeddings(MODEL, embeddings).unwrap();
                    let query_vector = embed(word(a));
                    let query = VectorQuery::new(MODEL, &query_vector, 5);
                    let got = lines(vectors.nearest(&query).unwrap());
                    let want = lines(reference[scope].vectors().unwrap().nearest(&query).unwrap());
                    prop_assert!(same(&got, &want), "{:?} != {:?}", got, want);
                    scope
                }
            };
            settle(&budget);
            let used = budget.used();
            let held: usize = bounded.iter().map(SqliteFactStore::cache_bytes).sum();
            prop_assert_eq!(used, held);
            // Over the limit, one cache is left: the one used last, or one that reloaded
            // after it in the background.
            let alone = budget.loaded() == 1
                && (bounded[last].cache_bytes() == used || budget.evictions() > 0);
            prop_assert!(
                used <= limit || alone,
                "{} bytes in {} caches over a limit of {}", used, budget.loaded(), limit
            );
        }
    }
}

#[test]
fn an_evicted_scope_loads_again_and_a_dropped_store_frees_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = Arc::new(ManualClock::new(t(0)));
    // Room for about one scope of 200 facts.
    let budget = CacheBudget::new(120_000);
    let open = |scope: &str| {
        let options = SqliteOptions::default().with_cache_budget(budget.clone());
        SqliteFactStore::open_with(&path, scope, StoreConfig::default(), options, clock.clone())
            .unwrap()
    };
    let (a, b) = (open("a"), open("b"));
    for store in [&a, &b] {
        let batch = (0..200)
            .map(|n| fact(n as u8, n as u8, (n / 8) as u8, i64::from(n)))
            .collect();
        store.add(batch).unwrap();
    }
    let query = TermQuery::new("alpha bravo", 5);
    let first = lines(a.search(&query, &Overlap).unwrap());
    assert!(a.cache_bytes() > 50_000, "{}", a.cache_bytes());
    assert_eq!(budget.used(), a.cache_bytes());
    b.search(&query, &Overlap).unwrap();
    assert_eq!((a.cache_bytes(), budget.loaded()), (0, 1), "a was evicted");
    assert_eq!(budget.evictions(), 1);
    // Evicted, `a` answers from FTS5 at once, the same, and reloads in the background.
    assert_eq!(lines(a.search(&query, &Overlap).unwrap()), first);
    settle(&budget);
    assert!(a.cache_bytes() > 50_000, "reloaded");
    assert_eq!((b.cache_bytes(), budget.evictions()), (0, 2));
    assert_eq!(lines(a.search(&query, &Overlap).unwrap()), first);
    drop(a);
    assert_eq!(budget.used(), 0);
}

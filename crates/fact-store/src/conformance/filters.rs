//! Filters inside every store's indexes: `select`, `search` and `nearest` with a filter,
//! and `touching` (the edges at some entities), give exactly what brute force over the
//! store's own list gives, on random facts, filters and times
//! ([`filtered_reads_match_brute_force`]), and a selective filter
//! never leaves a search short of its limit when enough facts match
//! ([`a_selective_filter_still_fills_the_limit`]).

use fact_model::{Filter, MetaValue, Metadata, SessionFact, SourceRole, Tag, Timestamp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use super::properties::Bm25;
use super::{Fixture, Overlap, store, store_with, t};
use crate::backend::scan_scores;
use crate::{
    EdgeQuery, Recency, SessionFactStore, StoreConfig, TermQuery, TermWeighting, VectorQuery,
};

/// Generated cases per backend: each opens a store and runs a few dozen reads.
const CASES: u32 = 24;

const SUBJECTS: &[&str] = &["user", "task:1", "src/a.rs", "Berlin", LONG];
const RELATIONS: &[&str] = &["likes", "requires", "lives_in"];
const OBJECTS: &[&str] = &[
    "tea parsers",
    "alpha",
    "beta tea",
    "naïve café",
    "Zed",
    "user",
    LONG,
];
/// A name longer than the in-memory store interns as an object (32 bytes).
const LONG: &str = "the project whose name is longer than thirty-two bytes";
const SOURCES: &[&str] = &["ep:1", "ep:2", "task:7"];
const TAGS: &[Tag] = &[Tag::Decision, Tag::Preference, Tag::Error];
const KEYS: &[&str] = &["project", "n", "ok", "note", "a.b-c"];
const TEXTS: &[&str] = &["rlm", "factmem", "", "naïve", "Rlm", "r"];
const QUERIES: &[&str] = &[
    "tea",
    "alpha beta user",
    "requires parsers src",
    "café naïve Zed",
];
/// The model of the generated embeddings.
const MODEL: &str = "filter-test";

/// A generated fact: indexes into the lists above, its time and its metadata.
#[derive(Debug, Clone)]
struct Generated {
    subject: usize,
    relation: usize,
    object: usize,
    source: usize,
    tag: usize,
    confidence: f64,
    offset: i64,
    metadata: Vec<(usize, MetaValue)>,
    vector: [f32; 3],
}

/// A metadata value of any type, numbers drawn from `numbers` (shared with the filters,
/// so that equalities on numbers that are not round hit).
fn meta_value(numbers: Vec<f64>) -> impl Strategy<Value = MetaValue> {
    prop_oneof![
        proptest::sample::select(TEXTS).prop_map(|s| MetaValue::String(s.to_owned())),
        proptest::sample::select(numbers).prop_map(MetaValue::Number),
        any::<bool>().prop_map(MetaValue::Bool),
    ]
}

fn generated(numbers: Vec<f64>) -> impl Strategy<Value = Generated> {
    (
        (0..SUBJECTS.len(), 0..RELATIONS.len(), 0..OBJECTS.len()),
        (0..SOURCES.len(), 0..TAGS.len()),
        proptest::sample::select(vec![0.1, 0.5, 0.9, 1.0]),
        0i64..40,
        proptest::collection::vec((0..KEYS.len(), meta_value(numbers)), 0..4),
        [0.1f32..1.0, -1.0f32..1.0, -1.0f32..1.0],
    )
        .prop_map(
            |((subject, relation, object), (source, tag), confidence, offset, metadata, vector)| {
                Generated {
                    subject,
                    relation,
                    object,
                    source,
                    tag,
                    confidence,
                    offset,
                    metadata,
                    vector,
                }
            },
        )
}

impl Generated {
    fn build(&self) -> SessionFact {
        let mut pairs: Vec<(&str, MetaValue)> = Vec::new();
        for (key, value) in &self.metadata {
            let key = KEYS[*key];
            if !pairs.iter().any(|(k, _)| *k == key) {
                pairs.push((key, value.clone()));
            }
        }
        SessionFact::builder(
            SUBJECTS[self.subject],
            RELATIONS[self.relation],
            OBJECTS[self.object],
        )
        .tag(TAGS[self.tag])
        .source(SOURCES[self.source], SourceRole::Implementer)
        .confidence(self.confidence)
        .valid_from(t(self.offset))
        .metadata(Metadata::from_pairs(pairs).unwrap())
        .build()
        .unwrap()
    }
}

/// An RFC 3339 time near the generated facts' (seconds 0 to 40).
fn time_json() -> impl Strategy<Value = Value> {
    (-2i64..45).prop_map(|secs| json!(t(secs).to_string()))
}

/// One condition as JSON, of any field, operator and operand; some are refused by
/// [`Filter::from_json`] (an ordering on a boolean) and skipped by the caller.
fn condition(numbers: Vec<f64>) -> impl Strategy<Value = Value> {
    let text = |list: &'static [&'static str]| {
        let one = proptest::sample::select(list).prop_map(|s| json!(s));
        (
            proptest::sample::select(vec!["eq", "ne", "gt", "gte", "lt", "lte", "contains"]),
            prop_oneof![
                one.clone(),
                proptest::sample::select(TEXTS).prop_map(|s| json!(s))
            ],
        )
            .prop_map(|(op, value)| json!({ op: value }))
            .boxed()
    };
    let text_field = prop_oneof![
        Just("subject").prop_flat_map(move |f| text(SUBJECTS).prop_map(move |c| json!({ f: c }))),
        Just("relation").prop_flat_map(move |f| text(RELATIONS).prop_map(move |c| json!({ f: c }))),
        Just("object").prop_flat_map(move |f| text(OBJECTS).prop_map(move |c| json!({ f: c }))),
        Just("source").prop_flat_map(move |f| text(SOURCES).prop_map(move |c| json!({ f: c }))),
    ];
    let lists = (
        proptest::sample::select(vec!["in", "nin"]),
        proptest::collection::vec(proptest::sample::select(OBJECTS), 0..3),
    )
        .prop_map(|(op, values)| json!({ "object": { op: values } }));
    let tag_name = proptest::sample::select(TAGS).prop_map(|tag| json!(tag.as_str()));
    let category = prop_oneof![
        (proptest::sample::select(vec!["eq", "ne"]), tag_name.clone())
            .prop_map(|(op, tag)| json!({ "category": { op: tag } })),
        (
            proptest::sample::select(vec!["in", "nin"]),
            proptest::collection::vec(tag_name, 0..3)
        )
            .prop_map(|(op, tags)| json!({ "category": { op: tags } })),
    ];
    let ordering = vec!["eq", "ne", "gt", "gte", "lt", "lte"];
    let confidence = (
        proptest::sample::select(ordering.clone()),
        proptest::sample::select(vec![0.1, 0.5, 0.7, 1.0]),
    )
        .prop_map(|(op, value)| json!({ "confidence": { op: value } }));
    let times = (
        proptest::sample::select(vec!["valid_from", "valid_to", "recorded_at"]),
        proptest::sample::select(ordering),
        time_json(),
    )
        .prop_map(|(field, op, value)| json!({ field: { op: value } }));
    let exists = (
        proptest::sample::select(vec![
            "valid_to",
            "recorded_at",
            "metadata.project",
            "metadata.n",
        ]),
        any::<bool>(),
    )
        .prop_map(|(field, flag)| json!({ field: { "exists": flag } }));
    let meta_operand = prop_oneof![
        proptest::sample::select(TEXTS).prop_map(|s| json!(s)),
        proptest::sample::select(numbers).prop_map(|n| json!(n)),
        any::<bool>().prop_map(|b| json!(b)),
    ];
    let metadata = (
        proptest::sample::select(KEYS),
        proptest::sample::select(vec![
            "eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "nin",
        ]),
        proptest::collection::vec(meta_operand, 1..3),
    )
        .prop_map(|(key, op, mut values)| {
            let value = if op == "in" || op == "nin" {
                Value::Array(values)
            } else {
                values.swap_remove(0)
            };
            json!({ format!("metadata.{key}"): { op: value } })
        });
    prop_oneof![
        3 => metadata,
        2 => text_field,
        1 => lists,
        2 => category,
        1 => confidence,
        2 => times,
        1 => exists,
    ]
}

/// A filter as JSON: conditions under `and`, `or` and `not`, up to three levels deep.
fn filter_json(numbers: Vec<f64>) -> impl Strategy<Value = Value> {
    condition(numbers).prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(|all| json!({ "and": all })),
            proptest::collection::vec(inner.clone(), 0..3).prop_map(|any| json!({ "or": any })),
            inner.prop_map(|one| json!({ "not": one })),
        ]
    })
}

/// A case: its facts in batches, its filters, instants and limits.
#[derive(Debug, Clone)]
struct Case {
    batches: Vec<Vec<Generated>>,
    filters: Vec<Filter>,
    instants: Vec<i64>,
    limits: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    // A few numbers per case, some not round, shared by facts and filters.
    proptest::collection::vec(
        prop_oneof![
            Just(3.0),
            Just(-1.5),
            Just(0.1),
            (-1.0e9f64..1.0e9),
            (-1.0f64..1.0)
        ],
        1..4,
    )
    .prop_flat_map(|numbers| {
        let filters = proptest::collection::vec(
            filter_json(numbers.clone())
                .prop_filter_map("a refused filter", |value| Filter::from_json(&value).ok()),
            1..5,
        );
        (
            proptest::collection::vec(proptest::collection::vec(generated(numbers), 0..12), 1..5),
            filters,
            proptest::collection::vec(-2i64..45, 1..3),
            proptest::collection::vec(1usize..8, 1..3),
        )
    })
    .prop_map(|(batches, filters, instants, limits)| Case {
        batches,
        filters,
        instants,
        limits,
    })
}

/// The best `limit` of `facts` as a search ranks them (score, then newer `valid_from`,
/// then smaller id), with the term statistics of all of `facts` and only those `filter`
/// holds for ranked.
fn brute_search(
    store: &dyn SessionFactStore,
    facts: &[SessionFact],
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
) -> Vec<(SessionFact, f64)> {
    let filter = query.filter.cloned().unwrap_or_else(Filter::all);
    let mut scored: Vec<(SessionFact, f64)> =
        scan_scores(store.analyzer(), facts.iter(), query.text, weighting)
            .into_iter()
            .filter(|(fact, _)| filter.matches(*fact))
            .map(|(fact, score)| {
                let score = Recency::apply(query.recency.as_ref(), score, fact.valid_from());
                (fact.clone(), score)
            })
            .filter(|(_, score)| *score > 0.0)
            .collect();
    scored.sort_by(|(a, x), (b, y)| {
        y.total_cmp(x)
            .then(b.valid_from().cmp(&a.valid_from()))
            .then(a.id().cmp(&b.id()))
    });
    scored.truncate(query.limit);
    scored
}

/// Whether two ranked lists hold the same facts in the same order, scores equal up to
/// rounding.
fn same_ranking(got: &[(SessionFact, f64)], want: &[(SessionFact, f64)]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|((a, x), (b, y))| a == b && (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0))
}

/// `select` and `search` (the index and `as_of`) with a random filter answer exactly what
/// brute force over `valid_facts` / `valid_at` answers, and `nearest` what the unfiltered
/// search over every valid fact, filtered, answers; on random facts (superseding each
/// other across batches), filters of every field and operator, and instants.
pub fn filtered_reads_match_brute_force(fixture: &dyn Fixture) {
    if store(fixture).is_none() {
        return;
    }
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |case| {
        let (store, clock) = store(fixture).unwrap();
        for batch in &case.batches {
            let facts: Vec<SessionFact> = batch.iter().map(Generated::build).collect();
            store.add(facts.clone()).unwrap();
            if let Some(index) = store.vectors() {
                let rows: Vec<_> = batch
                    .iter()
                    .zip(&facts)
                    .map(|(g, f)| (f.id(), g.vector.to_vec()))
                    .collect();
                index.put_embeddings(MODEL, rows).unwrap();
            }
            clock.advance(std::time::Duration::from_secs(1));
        }
        let valid = store.valid_facts().unwrap();
        // The edges at a few nodes, now and at each instant, unfiltered and with each
        // filter, whole and cut at each limit.
        let no_filter: [Option<&Filter>; 1] = [None];
        let filters = no_filter.into_iter().chain(case.filters.iter().map(Some));
        let limits: Vec<usize> = std::iter::once(usize::MAX)
            .chain(case.limits.iter().copied())
            .collect();
        for filter in filters {
            for names in [
                &["user"][..],
                &[LONG, "alpha"],
                &["Berlin", "Zed", "task:1"],
                &[],
            ] {
                let query = EdgeQuery::new(names).with_filter(filter);
                let edges = |facts: &[SessionFact], limit: usize| -> Vec<SessionFact> {
                    facts
                        .iter()
                        .filter(|f| query.touches(f))
                        .take(limit)
                        .cloned()
                        .collect()
                };
                for &limit in &limits {
                    let query = query.with_limit(limit);
                    prop_assert_eq!(
                        store.touching(&query).unwrap(),
                        edges(&valid, limit),
                        "touching {:?}, {:?}, limit {}",
                        names,
                        filter,
                        limit
                    );
                    for &secs in &case.instants {
                        let then = store.valid_at(t(secs)).unwrap();
                        prop_assert_eq!(
                            store.touching(&query.with_as_of(Some(t(secs)))).unwrap(),
                            edges(&then, limit),
                            "touching {:?} at {}, {:?}, limit {}",
                            names,
                            secs,
                            filter,
                            limit
                        );
                    }
                }
            }
        }
        let weightings: [&dyn TermWeighting; 2] = [&Bm25, &Overlap];
        for filter in &case.filters {
            let want: Vec<SessionFact> = valid
                .iter()
                .filter(|f| filter.matches(*f))
                .cloned()
                .collect();
            prop_assert_eq!(
                store.select(filter, None).unwrap(),
                want,
                "select {:?}",
                filter
            );
            for &secs in &case.instants {
                let at: Timestamp = t(secs);
                let then = store.valid_at(at).unwrap();
                let want: Vec<SessionFact> = then
                    .iter()
                    .filter(|f| filter.matches(*f))
                    .cloned()
                    .collect();
                prop_assert_eq!(store.select(filter, Some(at)).unwrap(), want);
            }
            for text in QUERIES {
                for &limit in &case.limits {
                    // Recency halving scores every 10 s of age before the last instant.
                    let recency = Recency::new(10, t(40));
                    for (weighting, recency) in [
                        (weightings[0], None),
                        (weightings[1], None),
                        (weightings[0], recency),
                    ] {
                        let query = TermQuery::new(text, limit)
                            .with_filter(filter)
                            .with_recency(recency);
                        let got: Vec<(SessionFact, f64)> = store
                            .search(&query, weighting)
                            .unwrap()
                            .into_iter()
                            .map(|s| (s.fact, s.score))
                            .collect();
                        let want = brute_search(&*store, &valid, &query, weighting);
                        prop_assert!(
                            same_ranking(&got, &want),
                            "search {:?} for {:?}: got {:?}, want {:?}",
                            filter,
                            text,
                            got,
                            want
                        );
                    }
                    let at = t(case.instants[0]);
                    let then = store.valid_at(at).unwrap();
                    let query = TermQuery::new(text, limit)
                        .with_filter(filter)
                        .with_as_of(at)
                        .with_recency(Recency::new(7, at));
                    let got: Vec<(SessionFact, f64)> = store
                        .search(&query, &Bm25)
                        .unwrap()
                        .into_iter()
                        .map(|s| (s.fact, s.score))
                        .collect();
                    let want = brute_search(&*store, &then, &query, &Bm25);
                    prop_assert!(same_ranking(&got, &want), "as_of search {:?}", filter);
                }
            }
            if let Some(index) = store.vectors() {
                for vector in [[1.0, 0.0, 0.0], [-0.3, 0.8, 0.1]] {
                    let every = VectorQuery::new(MODEL, &vector, valid.len());
                    let ranked = index.nearest(&every).unwrap();
                    for &limit in &case.limits {
                        let query = VectorQuery::new(MODEL, &vector, limit).with_filter(filter);
                        let got = index.nearest(&query).unwrap();
                        let want: Vec<_> = ranked
                            .iter()
                            .filter(|s| filter.matches(&s.fact))
                            .take(limit)
                            .cloned()
                            .collect();
                        prop_assert_eq!(got, want, "nearest {:?}", filter);
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

/// 10,000 facts of which 1% carry `project = "rlm"`, all holding the query's word: a
/// search for 10 with that filter returns 10 of them, best first, and `select` all 100.
pub fn a_selective_filter_still_fills_the_limit(fixture: &dyn Fixture) {
    let config = StoreConfig::default().with_capacity(20_000);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    let facts: Vec<SessionFact> = (0..10_000)
        .map(|i| {
            let project = if i % 100 == 7 { "rlm" } else { "other" };
            SessionFact::builder(format!("item:{i}"), "mentions", format!("tea number {i}"))
                .tag(Tag::Decision)
                .source("ep:1", SourceRole::Implementer)
                .valid_from(t(i))
                .metadata(
                    Metadata::from_pairs([("project", MetaValue::String(project.into()))]).unwrap(),
                )
                .build()
                .unwrap()
        })
        .collect();
    store.add(facts).unwrap();
    let filter = Filter::parse_where(r#"metadata.project = "rlm""#).unwrap();
    for weighting in [&Bm25 as &dyn TermWeighting, &Overlap] {
        let found = store
            .search(&TermQuery::new("tea", 10).with_filter(&filter), weighting)
            .unwrap();
        assert_eq!(found.len(), 10);
        assert!(found.iter().all(|s| filter.matches(&s.fact)));
        // Equal scores: the newest first.
        let subjects: Vec<&str> = found.iter().map(|s| s.fact.subject()).collect();
        assert_eq!(subjects[0], "item:9907");
        assert_eq!(subjects[9], "item:9007");
    }
    let selected = store.select(&filter, None).unwrap();
    assert_eq!(selected.len(), 100);
    assert!(selected.iter().all(|f| filter.matches(f)));
    // A filter that holds for nothing finds nothing, and one for everything, 10.
    let none = Filter::parse_where(r#"metadata.project = "nowhere""#).unwrap();
    assert!(
        store
            .search(&TermQuery::new("tea", 10).with_filter(&none), &Bm25)
            .unwrap()
            .is_empty()
    );
    let all = Filter::all();
    assert_eq!(
        store
            .search(&TermQuery::new("tea", 10).with_filter(&all), &Bm25)
            .unwrap()
            .len(),
        10
    );
}

//! Invariants of retrieval, over arbitrary stores and queries.

use std::collections::HashMap;
use std::sync::Arc;

use fact_model::{SessionFact, SourceRole, Tag};
use fact_retrieve::{
    Bm25, CharsPerToken, FactQuery, FactRetriever, IndexRetriever, KeywordOverlap, MAX_LINE_CHARS,
    TokenCounter,
};
use fact_store::{SessionFactStore, TermWeighting};
use proptest::prelude::*;

use super::{store, t};

const WORDS: &[&str] = &[
    "parser", "lexer", "task", "retry", "runtime", "schema", "tests", "docs", "naming", "parsing",
];

fn text(max_words: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(WORDS), 1..max_words)
        .prop_map(|w| w.join(" "))
}

#[derive(Debug, Clone)]
struct Spec {
    subject: String,
    relation: usize,
    object: String,
    task: u8,
    tag: Tag,
    secs: i64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        text(3),
        0usize..3,
        text(30),
        0u8..5,
        proptest::sample::select(&[Tag::Decision, Tag::Error, Tag::Test][..]),
        0i64..50,
    )
        .prop_map(|(subject, relation, object, task, tag, secs)| Spec {
            subject,
            relation,
            object,
            task,
            tag,
            secs,
        })
}

fn build(spec: &Spec) -> SessionFact {
    let object = fact_model::clip(&spec.object, 200);
    SessionFact::builder(
        &spec.subject,
        ["summary", "requires", "issue"][spec.relation],
        object,
    )
    .tag(spec.tag)
    .source(spec.task.to_string(), SourceRole::Implementer)
    .valid_from(t(spec.secs))
    .build()
    .unwrap()
}

/// A brute-force reference written apart from the store: analyze every valid fact,
/// count, score and sort.
fn brute_force(
    store: &dyn SessionFactStore,
    weighting: &dyn TermWeighting,
    query: &FactQuery,
) -> Vec<(SessionFact, f64)> {
    let analyzer = store.analyzer();
    let mut terms: Vec<String> = Vec::new();
    for term in analyzer.analyze(&query.task_description) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    let docs: Vec<(SessionFact, Vec<String>)> = store
        .valid_facts()
        .into_iter()
        .map(|f| {
            let terms = analyzer.analyze_fact(&f);
            (f, terms)
        })
        .collect();
    let total: usize = docs.iter().map(|(_, d)| d.len()).sum();
    let avg = if docs.is_empty() {
        0.0
    } else {
        total as f64 / docs.len() as f64
    };
    let df: HashMap<&str, usize> = terms
        .iter()
        .map(|term| {
            (
                term.as_str(),
                docs.iter().filter(|(_, d)| d.contains(term)).count(),
            )
        })
        .collect();
    let mut scored: Vec<(SessionFact, f64)> = docs
        .iter()
        .filter(|(f, _)| f.source_task_id() != query.task_id)
        .filter(|(f, _)| {
            query
                .tags
                .as_ref()
                .is_none_or(|tags| f.tags().contains_any(tags))
        })
        .filter_map(|(f, d)| {
            let mut score = 0.0;
            for term in &terms {
                let tf = d.iter().filter(|x| *x == term).count();
                if tf > 0 {
                    score += weighting.term_weight(df[term.as_str()], docs.len(), terms.len())
                        * weighting.tf_weight(tf as u32, d.len() as u32, avg);
                }
            }
            (score > 0.0).then(|| (f.clone(), score))
        })
        .collect();
    scored.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(b.0.valid_from().cmp(&a.0.valid_from()))
            .then(a.0.id().cmp(&b.0.id()))
    });
    scored.truncate(query.max_facts);
    scored
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn retrieval_keeps_every_promise(
        batches in proptest::collection::vec(proptest::collection::vec(spec(), 1..6), 0..12),
        description in text(12),
        task in 0u8..5,
        max_facts in 1usize..15,
        max_tokens in 0usize..300,
        chars_per_token in 1usize..6,
        tags in proptest::option::of(proptest::collection::vec(proptest::sample::select(&[Tag::Decision, Tag::Error, Tag::Test][..]), 1..3)),
        bm25 in any::<bool>(),
    ) {
        let store = store();
        for batch in &batches {
            store.add(batch.iter().map(build).collect()).unwrap();
        }
        let weighting: Box<dyn TermWeighting> = if bm25 { Box::new(Bm25::default()) } else { Box::new(KeywordOverlap) };
        let counter = Arc::new(CharsPerToken::new(chars_per_token));
        let query = FactQuery { tags, max_facts, max_tokens, ..FactQuery::new(task.to_string(), description) };

        // The index answers exactly what a brute-force scan answers.
        let ranked = IndexRetriever::new(store.clone()).with_weighting(if bm25 { Box::new(Bm25::default()) } else { Box::new(KeywordOverlap) }).rank(&query);
        let expected = brute_force(&*store, &*weighting, &query);
        let got: Vec<(SessionFact, f64)> = ranked.into_iter().map(|r| (r.fact, r.score)).collect();
        prop_assert_eq!(&got, &expected);

        let retrieval = IndexRetriever::new(store.clone()).with_weighting(weighting).with_counter(counter.clone()).retrieve(&query);
        // The section never exceeds the budget, and its cost is reported exactly.
        prop_assert!(counter.count(&retrieval.section) <= max_tokens);
        prop_assert_eq!(retrieval.tokens_used, counter.count(&retrieval.section));
        // No line is longer than 120 characters.
        prop_assert!(retrieval.section.lines().all(|line| line.chars().count() <= MAX_LINE_CHARS));
        // Never an invalidated fact, never the querying task's own.
        let valid = store.valid_facts();
        for found in &retrieval.facts {
            prop_assert!(valid.contains(&found.fact));
            prop_assert_ne!(found.fact.source_task_id(), query.task_id.as_str());
        }
        // The kept facts are a prefix of the ranking.
        prop_assert!(retrieval.facts.iter().zip(&got).all(|(a, b)| a.fact == b.0));
    }
}

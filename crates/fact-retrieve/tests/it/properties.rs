//! Invariants of retrieval, over arbitrary stores and queries.

use std::collections::HashMap;
use std::sync::Arc;

use fact_model::{CharsPerToken, SessionFact, SourceRole, Tag, TokenCounter};
use fact_retrieve::{
    Bm25, FactQuery, FactRetriever, IndexRetriever, KeywordOverlap, MAX_LINE_CHARS,
    format_session_facts,
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

/// Sentences that several facts share, so that one subject often states one sentence
/// under several relations; the last is longer than an object may be, so it is clipped,
/// and clipped differently behind a `[minor] ` tag.
fn sentence() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("naming schema".to_owned()),
        Just("parser tests docs".to_owned()),
        Just(vec![WORDS.join(" "); 4].join(" ")),
    ]
}

/// The relations facts are made with: three that state points ([`FOLDED`]) and two that
/// do not.
const RELATIONS: &[&str] = &["summary", "requires", "issue", "convention", "blocked_by"];

#[derive(Debug, Clone)]
struct Spec {
    subject: String,
    relation: usize,
    object: String,
    /// Whether the object gets a `[minor] ` tag, as fact-extract's issues have.
    tagged: bool,
    task: u8,
    tag: Tag,
    secs: i64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![Just("src/models/todo.rs".to_owned()), text(3)],
        0..RELATIONS.len(),
        prop_oneof![2 => text(30), 1 => sentence()],
        any::<bool>(),
        0u8..5,
        proptest::sample::select(&[Tag::Decision, Tag::Error, Tag::Test][..]),
        0i64..50,
    )
        .prop_map(
            |(subject, relation, object, tagged, task, tag, secs)| Spec {
                subject,
                relation,
                object,
                tagged,
                task,
                tag,
                secs,
            },
        )
}

fn build(spec: &Spec) -> SessionFact {
    let object = if spec.tagged {
        format!("[minor] {}", spec.object)
    } else {
        spec.object.clone()
    };
    let object = fact_model::clip(&object, 200);
    SessionFact::builder(&spec.subject, RELATIONS[spec.relation], object)
        .tag(spec.tag)
        .source(spec.task.to_string(), SourceRole::Implementer)
        .valid_from(t(spec.secs))
        .build()
        .unwrap()
}

/// The relations whose facts fold, strongest first, as `RELATION_STRENGTH` documents.
const FOLDED: &[&str] = &["convention", "must_fix", "blocked_by", "requires", "issue"];

/// The point a fact states, as `IndexRetriever` documents it, written apart from it: the
/// strength of its relation, and its object with whitespace folded and a leading
/// `[lowercase] ` tag of at most 16 letters removed. `None` for relations that do not fold.
fn point(fact: &SessionFact) -> Option<(usize, String)> {
    let strength = FOLDED.iter().position(|r| *r == fact.relation())?;
    let text = fact
        .object()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let tag_end = text.find("] ").filter(|&end| {
        text.starts_with('[')
            && (2..=17).contains(&end)
            && text
                .get(1..end)
                .unwrap()
                .bytes()
                .all(|b| b.is_ascii_lowercase())
    });
    let text = match tag_end {
        Some(end) => text.get(end + 2..).unwrap().to_owned(),
        None => text,
    };
    Some((strength, text))
}

/// Whether two point texts are one sentence: equal, or one ends in `...` after 40 or more
/// characters the other begins with.
fn same_sentence(a: &str, b: &str) -> bool {
    let begins = |clipped: &str, text: &str| {
        clipped
            .strip_suffix("...")
            .is_some_and(|kept| kept.chars().count() >= 40 && text.starts_with(kept))
    };
    a == b || begins(a, b) || begins(b, a)
}

/// Whether two facts state one point.
fn same_point(a: &SessionFact, b: &SessionFact) -> bool {
    a.subject() == b.subject()
        && match (point(a), point(b)) {
            (Some((_, a)), Some((_, b))) => same_sentence(&a, &b),
            _ => false,
        }
}

/// `ranked` without each fact for which `ranked` holds a stronger fact with the same point
/// (stronger: relation first in [`FOLDED`], then higher score, then earlier).
fn fold(ranked: &[(SessionFact, f64)]) -> Vec<(SessionFact, f64)> {
    let key = |at: usize| {
        let (fact, score) = &ranked[at];
        (
            point(fact).map_or(usize::MAX, |(strength, _)| strength),
            *score,
            at,
        )
    };
    let stronger = |a: (usize, f64, usize), b: (usize, f64, usize)| {
        a.0.cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .is_lt()
    };
    (0..ranked.len())
        .filter(|&at| {
            !(0..ranked.len()).any(|other| {
                other != at
                    && same_point(&ranked[other].0, &ranked[at].0)
                    && stronger(key(other), key(at))
            })
        })
        .map(|at| ranked[at].clone())
        .collect()
}

/// The retriever's ranking from the full brute-force ranking: folded over the best
/// `2 × max_facts`, a window that doubles while folding leaves fewer than `max_facts` and
/// the ranking has more; then the first `max_facts`.
fn fold_in_windows(full: &[(SessionFact, f64)], max_facts: usize) -> Vec<(SessionFact, f64)> {
    let mut window = max_facts * 2;
    loop {
        let top = &full[..window.min(full.len())];
        let mut kept = fold(top);
        if top.len() < window || kept.len() >= max_facts {
            kept.truncate(max_facts);
            return kept;
        }
        window *= 2;
    }
}

/// A brute-force reference written apart from the store: analyze every valid fact,
/// count, score and sort; all of the ranking, before folding and `max_facts`. (The
/// descriptions here are far below the query caps, so the whole description is analyzed.)
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
        .unwrap()
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
        let mut query = FactQuery::new(task.to_string(), description).with_max_facts(max_facts).with_max_tokens(max_tokens);
        query.tags = tags;

        // The index answers exactly what a brute-force scan answers, folded by the same rule.
        let ranked = IndexRetriever::new(store.clone()).with_weighting(if bm25 { Box::new(Bm25::default()) } else { Box::new(KeywordOverlap) }).rank(&query).unwrap();
        let expected = fold_in_windows(&brute_force(&*store, &*weighting, &query), max_facts);
        let got: Vec<(SessionFact, f64)> = ranked.into_iter().map(|r| (r.fact, r.score)).collect();
        prop_assert_eq!(&got, &expected);
        // One point, one fact.
        for (at, (a, _)) in got.iter().enumerate() {
            prop_assert!(!got[at + 1..].iter().any(|(b, _)| same_point(a, b)), "{:?}", got);
        }

        let retrieval = IndexRetriever::new(store.clone()).with_weighting(weighting).with_counter(counter.clone()).retrieve(&query).unwrap();
        // The section never exceeds the budget, and its cost is reported exactly.
        prop_assert!(counter.count(&retrieval.section) <= max_tokens);
        prop_assert_eq!(retrieval.tokens_used, counter.count(&retrieval.section));
        // The section is the formatter's, for exactly the facts kept.
        let kept: Vec<SessionFact> = retrieval.facts.iter().map(|f| f.fact.clone()).collect();
        prop_assert_eq!(&retrieval.section, &format_session_facts(&kept));
        // No line is longer than 120 characters.
        prop_assert!(retrieval.section.lines().all(|line| line.chars().count() <= MAX_LINE_CHARS));
        // Never an invalidated fact, never the querying task's own.
        let valid = store.valid_facts().unwrap();
        for found in &retrieval.facts {
            prop_assert!(valid.contains(&found.fact));
            prop_assert_ne!(found.fact.source_task_id(), query.task_id.as_str());
        }
        // The kept facts are a prefix of the ranking.
        prop_assert!(retrieval.facts.iter().zip(&got).all(|(a, b)| a.fact == b.0));
    }
}

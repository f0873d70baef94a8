//! Every step of the retrieval pipeline, one case each.

use std::sync::Arc;

use fact_model::{CharsPerToken, Tag, TokenCounter};
use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever, KeywordOverlap, Retrieval};

use super::{fact, store, t, tagged};

fn subjects(retrieval: &Retrieval) -> Vec<&str> {
    retrieval.facts.iter().map(|f| f.fact.subject()).collect()
}

#[test]
fn an_empty_store_gives_nothing() {
    let retrieval = IndexRetriever::new(store())
        .retrieve(&FactQuery::new("1", "parser"))
        .unwrap();
    assert_eq!(retrieval, Retrieval::default());
    assert_eq!(retrieval.section, "");
}

#[test]
fn no_overlap_gives_nothing_not_recent_facts() {
    let store = store();
    store
        .add(vec![fact("src/parser.rs", "modified_by", "task:1", "1", 0)])
        .unwrap();
    let retrieval = IndexRetriever::new(store)
        .retrieve(&FactQuery::new("2", "write the changelog"))
        .unwrap();
    assert!(retrieval.facts.is_empty() && retrieval.section.is_empty());
}

#[test]
fn the_tag_filter_keeps_any_of_the_tags() {
    let store = store();
    store
        .add(vec![
            tagged(
                "src/parser.rs",
                "issue",
                "parser panics",
                "1",
                0,
                Tag::Error,
            ),
            tagged(
                "src/parser.rs",
                "convention",
                "parser names in snake_case",
                "1",
                0,
                Tag::Convention,
            ),
            tagged(
                "task:1",
                "summary",
                "parser rewritten",
                "1",
                0,
                Tag::Decision,
            ),
        ])
        .unwrap();
    let retriever = IndexRetriever::new(store);
    let query = FactQuery::new("2", "parser").with_tags(vec![Tag::Error, Tag::Convention]);
    let retrieval = retriever.retrieve(&query).unwrap();
    let relations: Vec<&str> = retrieval.facts.iter().map(|f| f.fact.relation()).collect();
    assert_eq!(relations.len(), 2);
    assert!(!relations.contains(&"summary"));
}

#[test]
fn the_querying_tasks_own_facts_are_left_out() {
    let store = store();
    store
        .add(vec![
            fact("src/parser.rs", "modified_by", "task:3", "3", 0),
            fact("src/lexer.rs", "modified_by", "task:1", "1", 0),
        ])
        .unwrap();
    let retrieval = IndexRetriever::new(store)
        .retrieve(&FactQuery::new("3", "parser lexer modified"))
        .unwrap();
    assert_eq!(subjects(&retrieval), ["src/lexer.rs"]);
}

#[test]
fn higher_overlap_ranks_first() {
    let store = store();
    store
        .add(vec![
            fact("src/lexer.rs", "modified_by", "task:1", "1", 0),
            fact("src/parser/lexer.rs", "modified_by", "task:1", "1", 0),
        ])
        .unwrap();
    let retriever = IndexRetriever::new(store).with_weighting(Box::new(KeywordOverlap));
    let retrieval = retriever
        .retrieve(&FactQuery::new("2", "parser lexer"))
        .unwrap();
    assert_eq!(
        subjects(&retrieval),
        ["src/parser/lexer.rs", "src/lexer.rs"]
    );
    assert_eq!(retrieval.facts[0].score, 1.0);
    assert_eq!(retrieval.facts[1].score, 0.5);
}

#[test]
fn ties_go_to_the_newer_fact() {
    let store = store();
    store
        .add(vec![fact(
            "src/old_parser.rs",
            "modified_by",
            "task:1",
            "1",
            0,
        )])
        .unwrap();
    store
        .add(vec![fact(
            "src/new_parser.rs",
            "modified_by",
            "task:2",
            "2",
            60,
        )])
        .unwrap();
    let retriever = IndexRetriever::new(store).with_weighting(Box::new(KeywordOverlap));
    let retrieval = retriever.retrieve(&FactQuery::new("3", "parser")).unwrap();
    assert_eq!(
        subjects(&retrieval),
        ["src/new_parser.rs", "src/old_parser.rs"]
    );
}

#[test]
fn max_facts_caps_the_list() {
    let store = store();
    store
        .add(
            (0..30)
                .map(|n| {
                    fact(
                        &format!("src/parser_{n}.rs"),
                        "modified_by",
                        "task:1",
                        "1",
                        n,
                    )
                })
                .collect(),
        )
        .unwrap();
    let query = FactQuery::new("2", "parser").with_max_facts(4);
    assert_eq!(
        IndexRetriever::new(store)
            .retrieve(&query)
            .unwrap()
            .facts
            .len(),
        4
    );
}

#[test]
fn a_budget_that_fits_one_of_two_long_facts_returns_one() {
    let store = store();
    let long = "parser ".repeat(14);
    store
        .add(vec![
            fact("task:1", "summary", &long, "1", 0),
            fact("task:2", "summary", &long, "2", 1),
        ])
        .unwrap();
    // Header (17 chars) + one line of ~120 chars = ~35 tokens; two lines need ~66.
    let query = FactQuery::new("3", "parser").with_max_tokens(50);
    let retrieval = IndexRetriever::new(store).retrieve(&query).unwrap();
    assert_eq!(subjects(&retrieval), ["task:2"]);
    assert!(retrieval.tokens_used <= 50);
    assert_eq!(
        retrieval.tokens_used,
        CharsPerToken::default().count(&retrieval.section)
    );
}

#[test]
fn fifty_facts_under_a_hundred_tokens_fill_the_budget_exactly_measured() {
    let store = store();
    store
        .add(
            (0..50)
                .map(|n| {
                    fact(
                        &format!("src/dispatch/module_{n}.rs"),
                        "modified_by",
                        &format!("task:{n}"),
                        &n.to_string(),
                        n,
                    )
                })
                .collect(),
        )
        .unwrap();
    let query = FactQuery::new("99", "dispatch module")
        .with_max_facts(50)
        .with_max_tokens(100);
    let retrieval = IndexRetriever::new(store).retrieve(&query).unwrap();
    assert!(!retrieval.facts.is_empty());
    let counter = CharsPerToken::default();
    assert!(
        counter.count(&retrieval.section) <= 100,
        "{}",
        retrieval.section
    );
    assert_eq!(retrieval.tokens_used, counter.count(&retrieval.section));
    assert!(retrieval.section.starts_with("[Session Context]\n- "));
}

#[test]
fn a_finer_counter_changes_the_budget() {
    let store = store();
    store
        .add(
            (0..10)
                .map(|n| {
                    fact(
                        &format!("src/parser_{n}.rs"),
                        "modified_by",
                        "task:1",
                        "1",
                        n,
                    )
                })
                .collect(),
        )
        .unwrap();
    let query = FactQuery::new("2", "parser").with_max_tokens(100);
    let coarse = IndexRetriever::new(store.clone()).retrieve(&query).unwrap();
    let fine = IndexRetriever::new(store)
        .with_counter(Arc::new(CharsPerToken::new(1)))
        .retrieve(&query)
        .unwrap();
    assert!(fine.facts.len() < coarse.facts.len());
    assert!(fine.tokens_used <= 100 && fine.section.chars().count() <= 100);
}

#[test]
fn invalidated_facts_are_gone_but_as_of_sees_them() {
    let store = store();
    store
        .add(vec![fact("task:1", "completed_with", "blocked", "1", 0)])
        .unwrap();
    store
        .add(vec![fact("task:1", "completed_with", "completed", "1", 10)])
        .unwrap();
    let retriever = IndexRetriever::new(store);
    let now = retriever
        .retrieve(&FactQuery::new("2", "blocked completed"))
        .unwrap();
    assert_eq!(now.facts.len(), 1);
    assert_eq!(now.facts[0].fact.object(), "completed");
    let then = retriever
        .retrieve(&FactQuery::new("2", "blocked completed").with_as_of(t(5)))
        .unwrap();
    assert_eq!(then.facts[0].fact.object(), "blocked");
}

#[test]
fn bm25_lets_a_rare_term_beat_a_common_one() {
    let store = store();
    // The retry fact is the oldest; twenty newer facts share the common word "module".
    let mut facts = vec![fact("src/retry.rs", "modified_by", "task:7", "7", 0)];
    facts.extend((1..=20).map(|n| {
        fact(
            &format!("src/module_{n}.rs"),
            "modified_by",
            "task:9",
            "9",
            n,
        )
    }));
    store.add(facts).unwrap();
    let query = FactQuery::new("30", "module retry");
    let bm25 = IndexRetriever::new(store.clone()).retrieve(&query).unwrap();
    assert_eq!(bm25.facts[0].fact.subject(), "src/retry.rs");
    assert!(bm25.facts[0].score > bm25.facts[1].score * 2.0);
    // Overlap counts "module" and "retry" alike: ties go to the newer module facts.
    let overlap = IndexRetriever::new(store)
        .with_weighting(Box::new(KeywordOverlap))
        .retrieve(&query)
        .unwrap();
    assert_eq!(overlap.facts[0].fact.subject(), "src/module_20.rs");
    assert_eq!(
        overlap.facts[0].score,
        overlap.facts.last().map_or(0.0, |f| f.score)
    );
}

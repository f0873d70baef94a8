//! One point, one line: a reviewer's issue that is also a convention reaches the
//! `[Session Context]` once, as the convention.

use std::sync::Arc;

use fact_extract::{FactExtractor, RuleBasedFactExtractor};
use fact_model::{
    CharsPerToken, DispatchResult, ManualClock, ReviewerResult, SessionFact, TokenCounter,
};
use fact_retrieve::Bm25;
use fact_retrieve::{
    FactQuery, FactRetriever, IndexRetriever, RELATION_STRENGTH, format_session_facts,
};
use fact_store::{SessionFactStore, TermQuery};
use serde_json::json;

use super::{fact, store, t};

/// The facts fact-extract's default rules make of a review of task `task` with `issues`.
fn review(task: &str, issues: serde_json::Value) -> Vec<SessionFact> {
    let result: ReviewerResult = serde_json::from_value(json!({
        "task_id": task, "assessment": "needs_changes", "issues": issues,
    }))
    .unwrap();
    RuleBasedFactExtractor::with_defaults(Arc::new(ManualClock::new(t(5))))
        .extract(&DispatchResult::Reviewer(result.clone()), task)
        .facts
}

fn lines(section: &str) -> Vec<&str> {
    section.lines().skip(1).collect()
}

const TODO: &str = "src/models/todo.rs";

/// The store after task 1 changed the model and task 2's review named a convention.
fn reviewed_store(message: &str) -> Arc<dyn SessionFactStore> {
    let store = store();
    store
        .add(vec![fact(TODO, "modified_by", "task:1", "1", 0)])
        .unwrap();
    let facts = review(
        "2",
        json!([{"severity": "minor", "file": TODO, "message": message}]),
    );
    // The rules do make both facts, with one sentence.
    let relations: Vec<&str> = facts.iter().map(SessionFact::relation).collect();
    assert!(
        relations.contains(&"issue") && relations.contains(&"convention"),
        "{relations:?}"
    );
    store.add(facts).unwrap();
    store
}

#[test]
fn an_issue_that_states_a_convention_is_rendered_once_as_the_convention() {
    let store = reviewed_store("Naming convention: use snake_case");
    let counter = Arc::new(CharsPerToken::new(1));
    let expected = format!(
        "[Session Context]\n- {TODO} convention Naming convention: use snake_case [task:2]\n\
         - {TODO} modified_by task:1 [task:1]"
    );
    // A budget that fits exactly two lines. Unfolded, the issue and the convention would
    // rank first and take both.
    let query = FactQuery::new("3", "Rename the todo model fields to the naming convention")
        .with_max_tokens(counter.count(&expected));
    let retrieval = IndexRetriever::new(store.clone())
        .with_counter(counter)
        .retrieve(&query)
        .unwrap();
    assert_eq!(retrieval.section, expected);
    let relations: Vec<&str> = retrieval.facts.iter().map(|f| f.fact.relation()).collect();
    assert_eq!(relations, ["convention", "modified_by"]);
    // Unbudgeted, the issue is still left out: its sentence is already there.
    let all = IndexRetriever::new(store)
        .rank(&FactQuery::new("3", "todo model"))
        .unwrap();
    assert_eq!(all.len(), 2);
}

#[test]
fn the_convention_wins_even_where_the_issue_scores_higher() {
    let store = reviewed_store("Naming convention: use snake_case");
    // "minor" and "issue" are terms of the issue only: it scores higher.
    let query = FactQuery::new("3", "minor issue naming convention snake_case todo");
    let scored = store
        .search(
            &TermQuery::new(&query.task_description, 10),
            &Bm25::default(),
        )
        .unwrap();
    let score = |relation: &str| {
        scored
            .iter()
            .find(|s| s.fact.relation() == relation)
            .unwrap()
            .score
    };
    assert!(score("issue") > score("convention"));
    let ranked = IndexRetriever::new(store.clone()).rank(&query).unwrap();
    let relations: Vec<&str> = ranked.iter().map(|f| f.fact.relation()).collect();
    assert_eq!(relations, ["convention", "modified_by"]);
    // The convention keeps its own score and its own place.
    assert_eq!(ranked[0].score, score("convention"));
}

#[test]
fn a_long_message_clipped_differently_in_the_two_facts_is_one_point() {
    let message = "Naming convention: every module, function and field in the models folder \
                   uses snake_case, as src/models/user.rs already does, never camelCase";
    assert!(message.chars().count() > 120);
    let store = reviewed_store(message);
    let facts = store.valid_facts().unwrap();
    let object = |relation: &str| {
        facts
            .iter()
            .find(|f| f.relation() == relation)
            .unwrap()
            .object()
            .to_owned()
    };
    // The issue's `[minor] ` leaves less of the message under the 120-character limit.
    assert!(object("issue").ends_with("...") && object("convention").ends_with("..."));
    assert_ne!(
        object("issue").strip_prefix("[minor] "),
        Some(&*object("convention"))
    );
    let ranked = IndexRetriever::new(store)
        .rank(&FactQuery::new("3", "models snake_case"))
        .unwrap();
    let relations: Vec<&str> = ranked.iter().map(|f| f.fact.relation()).collect();
    assert_eq!(relations, ["convention", "modified_by"]);
}

#[test]
fn only_one_subject_and_one_sentence_fold() {
    let store = store();
    store
        .add(vec![
            // Another file's issue with the same sentence stays.
            fact("src/a.rs", "issue", "[minor] Use snake_case", "1", 0),
            fact("src/b.rs", "convention", "Use snake_case", "1", 0),
            // Relations that name things rather than state points never fold.
            fact("cargo test", "passed_in", "task:1", "1", 0),
            fact("cargo test", "failed_in", "task:1", "1", 0),
            // The same words with more after them are another point.
            fact(
                "src/b.rs",
                "issue",
                "[minor] Use snake_case in tests",
                "1",
                0,
            ),
        ])
        .unwrap();
    let ranked = IndexRetriever::new(store)
        .rank(&FactQuery::new("2", "snake_case cargo test task:1").with_max_facts(10))
        .unwrap();
    assert_eq!(ranked.len(), 5);
}

#[test]
fn a_follow_up_that_blocks_is_kept_as_the_blocker() {
    let store = store();
    store
        .add(vec![
            fact("task:1", "requires", "Install the database driver", "1", 0),
            fact(
                "task:1",
                "blocked_by",
                "Install  the database\ndriver",
                "1",
                0,
            ),
            fact("task:1", "summary", "Install the database driver", "1", 0),
        ])
        .unwrap();
    let ranked = IndexRetriever::new(store)
        .rank(&FactQuery::new("2", "database driver"))
        .unwrap();
    let mut relations: Vec<&str> = ranked.iter().map(|f| f.fact.relation()).collect();
    relations.sort_unstable();
    // `summary` is not a point relation: it stays beside the blocker.
    assert_eq!(relations, ["blocked_by", "summary"]);
}

#[test]
fn folding_refills_max_facts_from_further_down_the_ranking() {
    let store = store();
    // Four points stated four times each, and a fact that ranks below all of them.
    let mut facts: Vec<SessionFact> = (0..4)
        .flat_map(|n| {
            let file = format!("src/style_{n}.rs");
            ["issue", "convention", "requires", "blocked_by"].map(|relation| {
                let text = format!("style rule {n}");
                let object = if relation == "issue" {
                    format!("[minor] {text}")
                } else {
                    text
                };
                fact(&file, relation, &object, "1", 0)
            })
        })
        .collect();
    facts.push(fact("docs/guide.md", "summary", "style guide", "1", 0));
    store.add(facts).unwrap();
    // The first window (10 facts) holds fewer than 5 points: it doubles.
    let query = FactQuery::new("2", "style rule").with_max_facts(5);
    let ranked = IndexRetriever::new(store).rank(&query).unwrap();
    let relations: Vec<&str> = ranked.iter().map(|f| f.fact.relation()).collect();
    assert_eq!(
        relations,
        [
            "convention",
            "convention",
            "convention",
            "convention",
            "summary"
        ]
    );
}

#[test]
fn the_retrieved_section_is_the_formatters_section() {
    let store = reviewed_store("Naming convention: use snake_case");
    let retrieval = IndexRetriever::new(store)
        .retrieve(&FactQuery::new("3", "todo model"))
        .unwrap();
    let facts: Vec<SessionFact> = retrieval.facts.iter().map(|f| f.fact.clone()).collect();
    assert_eq!(retrieval.section, format_session_facts(&facts));
    assert_eq!(lines(&retrieval.section).len(), 2);
}

#[test]
fn the_strength_table_names_fact_extracts_relations() {
    use fact_extract::relation;
    assert_eq!(
        RELATION_STRENGTH,
        [
            relation::CONVENTION,
            relation::MUST_FIX,
            relation::BLOCKED_BY,
            relation::REQUIRES,
            relation::ISSUE,
        ]
    );
}

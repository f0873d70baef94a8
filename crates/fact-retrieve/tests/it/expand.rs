//! `RecallQuery::expand`: the one-hop neighbours of a recall's best facts, after them,
//! within the same budget.

use fact_model::{CharsPerToken, Filter, SessionFact, TokenCounter};
use fact_retrieve::{RecallQuery, recall};
use fact_store::InMemoryEpisodeStore;

use crate::{fact, store};

/// A fact with its statement.
fn stated(subject: &str, relation: &str, object: &str, statement: &str, secs: i64) -> SessionFact {
    let base = fact(subject, relation, object, "chat", secs);
    SessionFact::builder(base.subject(), base.relation(), base.object())
        .tag(fact_model::Tag::Knowledge)
        .statement(statement)
        .source("chat", fact_model::SourceRole::User)
        .valid_from(base.valid_from())
        .build()
        .unwrap()
}

/// Caroline's move, her new city's facts, and a fact about someone else.
fn memory() -> std::sync::Arc<dyn fact_store::SessionFactStore> {
    let store = store();
    store
        .add(vec![
            stated(
                "caroline",
                "moved_to",
                "lisbon",
                "Caroline moved to Lisbon",
                0,
            ),
            stated(
                "lisbon",
                "has_climate",
                "mild winters",
                "Lisbon has mild winters",
                1,
            ),
            stated("lisbon", "is_in", "portugal", "Lisbon is in Portugal", 2),
            stated("melanie", "paints", "sunsets", "Melanie paints sunsets", 3),
        ])
        .unwrap();
    store
}

#[test]
fn expand_adds_the_neighbours_of_the_best_facts_after_them() {
    let store = memory();
    let counter = CharsPerToken::default();
    let episodes = InMemoryEpisodeStore::default();
    let question = "Where did Caroline move, and how are the winters there?";
    let plain = recall(
        &*store,
        &episodes,
        &RecallQuery::new(question).with_limit(1),
        &counter,
    )
    .unwrap();
    assert_eq!(plain.facts.len(), 1);
    assert!(plain.expanded.is_empty());

    let query = RecallQuery::new(question).with_limit(1).with_expand(1);
    let found = recall(&*store, &episodes, &query, &counter).unwrap();
    let best = &found.facts[0].fact;
    assert_eq!(best.object(), "lisbon");
    // Lisbon's facts are reached through the move; the one holding a word of the
    // question ("winters") comes first. Melanie's fact shares no entity.
    let reached: Vec<&str> = found.expanded.iter().map(|n| n.fact.relation()).collect();
    assert_eq!(reached, ["has_climate"], "at most `limit` neighbours");
    assert!(found.expanded.iter().all(|n| n.via == best.id()));
    assert!(found.expanded[0].score > 0.0);
    assert_eq!(
        found.text,
        "## Relevant Facts\n\
         - [knowledge] Caroline moved to Lisbon (from 2027-01-15)\n\
         - [knowledge] Lisbon has mild winters (from 2027-01-15)"
    );

    // With room for more, every neighbour, the ones sharing a word of the question first.
    let query = RecallQuery::new(question).with_limit(3).with_expand(1);
    let found = recall(&*store, &episodes, &query, &counter).unwrap();
    let all: Vec<&str> = found
        .facts
        .iter()
        .map(|f| f.fact.relation())
        .chain(found.expanded.iter().map(|n| n.fact.relation()))
        .collect();
    assert!(!all.contains(&"paints"), "{all:?}");
    assert!(
        all.contains(&"is_in") && all.contains(&"has_climate"),
        "{all:?}"
    );
}

#[test]
fn the_neighbours_share_the_budget_and_the_filter() {
    let store = memory();
    let counter = CharsPerToken::default();
    let episodes = InMemoryEpisodeStore::default();
    let question = "Where did Caroline move?";
    let query = RecallQuery::new(question).with_limit(1).with_expand(1);
    let whole = recall(&*store, &episodes, &query, &counter).unwrap();
    assert!(!whole.expanded.is_empty());
    // A budget that holds the best fact alone leaves the neighbours out, never cut.
    let best_only = recall(
        &*store,
        &episodes,
        &RecallQuery::new(question).with_limit(1),
        &counter,
    )
    .unwrap();
    let tight = query.with_max_tokens(best_only.tokens);
    let found = recall(&*store, &episodes, &tight, &counter).unwrap();
    assert_eq!(found.facts.len(), 1);
    assert!(found.expanded.is_empty());
    assert!(counter.count(&found.text) <= best_only.tokens);
    // The filter holds for the neighbours too.
    let no_climate = Filter::parse_where("relation != has_climate").unwrap();
    let query = RecallQuery::new(question)
        .with_limit(1)
        .with_expand(1)
        .with_filter(Some(&no_climate));
    let found = recall(&*store, &episodes, &query, &counter).unwrap();
    assert!(!found.expanded.is_empty());
    assert!(
        found
            .expanded
            .iter()
            .all(|n| n.fact.relation() != "has_climate")
    );
}

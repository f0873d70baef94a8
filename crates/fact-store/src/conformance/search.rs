//! The term index behind `search`: filters, order, and agreement with a brute-force scan.

use crate::{SessionFactStore, StoreConfig, TermQuery};
use fact_model::{SessionFact, SourceRole, Tag, Timestamp};

use super::{Fixture, fact, search, store_with, t};

/// A query for the ten best, its text set by [`search`].
fn query() -> TermQuery<'static> {
    TermQuery::default().with_limit(10)
}

/// Search ranks by score, then recency, then id.
pub fn ranks_by_score_then_recency_then_id(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    store
        .add(vec![fact("src/parser.rs", "modified_by", "task:1", 1, 0)])
        .unwrap();
    store
        .add(vec![fact("src/lexer.rs", "modified_by", "task:2", 2, 10)])
        .unwrap();
    store
        .add(vec![fact("docs/parser.md", "mentioned_by", "task:3", 3, 5)])
        .unwrap();
    let results = search(&*store, "parser lexer", query());
    assert_eq!(
        results,
        [
            ("src/lexer.rs modified_by task:2".to_owned(), 0.5),
            ("docs/parser.md mentioned_by task:3".to_owned(), 0.5),
            ("src/parser.rs modified_by task:1".to_owned(), 0.5),
        ]
    );
    let results = search(&*store, "modified parser", query());
    assert_eq!(
        results[0],
        ("src/parser.rs modified_by task:1".to_owned(), 1.0)
    );
    assert!(
        search(&*store, "unrelated words", query()).is_empty(),
        "zero scores are dropped"
    );
}

/// Search filters by tag and source task, and limits.
pub fn filters_by_tag_and_source_task_and_limits(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    // Equal scores: newer facts rank first.
    let tagged = |subject: &str, task: &str, tag: Tag| {
        SessionFact::builder(subject, "issue", "parser bug")
            .tag(tag)
            .source(task, SourceRole::Reviewer)
            .valid_from(t(task.parse().unwrap()))
            .build()
            .unwrap()
    };
    store
        .add(vec![
            tagged("a.rs", "1", Tag::Error),
            tagged("b.rs", "2", Tag::Convention),
            tagged("c.rs", "3", Tag::Error),
        ])
        .unwrap();
    let subjects = |q: TermQuery<'_>| -> Vec<String> {
        search(&*store, "parser", q)
            .into_iter()
            .map(|(line, _)| line.split(' ').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(subjects(query()).len(), 3);
    assert_eq!(subjects(query().with_tags(&[Tag::Error])), ["c.rs", "a.rs"]);
    assert_eq!(
        subjects(query().with_exclude_source_task("3")),
        ["b.rs", "a.rs"]
    );
    assert_eq!(subjects(query().with_limit(1)), ["c.rs"]);
    assert!(subjects(query().with_limit(0)).is_empty());
}

/// Invalidated facts leave the index, and `as_of` finds them.
pub fn invalidated_facts_leave_the_index_and_as_of_finds_them(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    store
        .add(vec![fact("task:1", "completed_with", "blocked", 1, 0)])
        .unwrap();
    store
        .add(vec![fact("task:1", "completed_with", "completed", 1, 10)])
        .unwrap();
    assert!(search(&*store, "blocked", query()).is_empty());
    let then = search(&*store, "blocked", query().with_as_of(t(5)));
    assert_eq!(then.len(), 1);
    assert_eq!(search(&*store, "completed", query()).len(), 1);
}

/// Heavy churn rebuilds the index without changing answers.
pub fn heavy_churn_rebuilds_the_index_without_changing_answers(fixture: &dyn Fixture) {
    let config = StoreConfig::default().with_auto_compact(false);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    for n in 0..3_000 {
        store
            .add(vec![
                fact(
                    "task:1",
                    "summary",
                    &format!("parser revision {n} lexer"),
                    1,
                    n,
                ),
                fact(
                    &format!("src/file{}.rs", n % 50),
                    "modified_by",
                    "task:1",
                    1,
                    n,
                ),
            ])
            .unwrap();
    }
    for text in ["parser revision 2999", "lexer", "src file7 rs", "task"] {
        for limit in [1, 5, 1000] {
            let indexed = search(&*store, text, query().with_limit(limit));
            let scanned = search(
                &*store,
                text,
                query().with_limit(limit).with_as_of(Timestamp::MAX),
            );
            assert_eq!(indexed, scanned, "{text:?} limit {limit}");
        }
    }
    assert_eq!(
        search(&*store, "revision 2999", query())[0].0,
        "task:1 summary parser revision 2999 lexer"
    );
}

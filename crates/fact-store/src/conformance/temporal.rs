//! Temporal invalidation: newer batches end older facts; nothing is overwritten.

use super::{Fixture, fact, store, t, valid_lines};
use fact_model::FactId;

/// A later batch invalidates the same subject and relation.
pub fn a_later_batch_invalidates_the_same_subject_and_relation(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store
        .add(vec![fact("task:1", "completed_with", "blocked", 1, 10)])
        .unwrap();
    let report = store
        .add(vec![fact("task:1", "completed_with", "completed", 1, 20)])
        .unwrap();
    assert_eq!(report.added.len(), 1);
    assert_eq!(
        report.invalidated,
        [FactId::for_triple("task:1", "completed_with", "blocked")]
    );
    assert_eq!(valid_lines(&*store), ["task:1 completed_with completed"]);
    let history = store.history("task:1").unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(
        history[0].valid_to(),
        Some(t(20)),
        "ends when the new fact begins"
    );
    assert_eq!(history[1].valid_to(), None);
}

/// Facts of one batch never invalidate each other.
pub fn facts_of_one_batch_never_invalidate_each_other(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let report = store
        .add(vec![
            fact("task:2", "requires", "write the parser", 2, 0),
            fact("task:2", "requires", "update the docs", 2, 0),
        ])
        .unwrap();
    assert_eq!((report.added.len(), report.invalidated.len()), (2, 0));
    assert_eq!(store.valid_count().unwrap(), 2);
    // The next batch with that key replaces both.
    let report = store
        .add(vec![fact("task:2", "requires", "nothing", 2, 5)])
        .unwrap();
    assert_eq!(report.invalidated.len(), 2);
    assert_eq!(valid_lines(&*store), ["task:2 requires nothing"]);
}

/// Re-adding a valid triple refreshes it.
pub fn re_adding_a_valid_triple_refreshes_it(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let f = fact("src/a.rs", "modified_by", "task:1", 1, 0);
    store.add(vec![f.clone()]).unwrap();
    let report = store
        .add(vec![fact("src/a.rs", "modified_by", "task:1", 1, 9)])
        .unwrap();
    assert_eq!(report.refreshed, [f.id()]);
    assert!(report.added.is_empty() && report.invalidated.is_empty());
    assert_eq!(
        store.history("src/a.rs").unwrap(),
        [f],
        "valid_from of the refreshed fact is unchanged"
    );
}

/// Re-adding an invalidated triple starts a new version.
pub fn re_adding_an_invalidated_triple_starts_a_new_version(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store
        .add(vec![fact("task:3", "reviewed_as", "needs_changes", 3, 0)])
        .unwrap();
    store
        .add(vec![fact("task:3", "reviewed_as", "approved", 3, 10)])
        .unwrap();
    let report = store
        .add(vec![fact("task:3", "reviewed_as", "needs_changes", 3, 20)])
        .unwrap();
    assert_eq!(report.added.len(), 1);
    let history: Vec<_> = store
        .history("task:3")
        .unwrap()
        .iter()
        .map(|f| (f.object().to_owned(), f.valid_from(), f.valid_to()))
        .collect();
    assert_eq!(
        history,
        [
            ("needs_changes".to_owned(), t(0), Some(t(10))),
            ("approved".to_owned(), t(10), Some(t(20))),
            ("needs_changes".to_owned(), t(20), None),
        ]
    );
    let id = FactId::for_triple("task:3", "reviewed_as", "needs_changes");
    assert_eq!(
        store.get(id).unwrap().unwrap().valid_from(),
        t(20),
        "get returns the latest version"
    );
}

/// A batch that re adds one of several facts keeps it whatever the order.
pub fn a_batch_that_re_adds_one_of_several_facts_keeps_it_whatever_the_order(
    fixture: &dyn Fixture,
) {
    for reversed in [false, true] {
        let Some((store, _)) = store(fixture) else {
            return;
        };
        store
            .add(vec![
                fact("task:4", "requires", "a", 4, 0),
                fact("task:4", "requires", "b", 4, 0),
            ])
            .unwrap();
        let mut batch = vec![
            fact("task:4", "requires", "a", 4, 5),
            fact("task:4", "requires", "c", 4, 5),
        ];
        if reversed {
            batch.reverse();
        }
        let report = store.add(batch).unwrap();
        assert_eq!(
            report.refreshed,
            [FactId::for_triple("task:4", "requires", "a")]
        );
        assert_eq!(
            report.invalidated,
            [FactId::for_triple("task:4", "requires", "b")]
        );
        let mut lines = valid_lines(&*store);
        lines.sort();
        assert_eq!(
            lines,
            ["task:4 requires a", "task:4 requires c"],
            "reversed: {reversed}"
        );
    }
}

/// A fact older than the current truth arrives superseded.
pub fn a_fact_older_than_the_current_truth_arrives_superseded(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let current = fact("task:5", "summary", "late clock", 5, 100);
    store.add(vec![current.clone()]).unwrap();
    let stale = fact("task:5", "summary", "early clock", 5, 50);
    let report = store.add(vec![stale.clone()]).unwrap();
    assert_eq!(report.arrived_superseded, [stale.id()]);
    assert!(report.added.is_empty() && report.invalidated.is_empty());
    assert_eq!(valid_lines(&*store), ["task:5 summary late clock"]);
    let history = store.history("task:5").unwrap();
    let stored = history.iter().find(|f| f.id() == stale.id()).unwrap();
    assert_eq!(
        stored.valid_to(),
        Some(t(100)),
        "ended where the newer truth began"
    );
    assert_eq!(stored.superseded_by(), Some(current.id()));
    assert_eq!(store.valid_at(t(60)).unwrap()[0].object(), "early clock");
}

/// A newer fact supersedes and names its successor.
pub fn a_newer_fact_supersedes_and_names_its_successor(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store
        .add(vec![fact(
            "user",
            "prefers_test_framework",
            "unittest",
            1,
            0,
        )])
        .unwrap();
    let newer = fact("user", "prefers_test_framework", "pytest", 2, 10);
    let report = store.add(vec![newer.clone()]).unwrap();
    assert_eq!(report.invalidated.len(), 1);
    let old = &store.history("user").unwrap()[0];
    assert_eq!(
        (old.valid_to(), old.superseded_by()),
        (Some(t(10)), Some(newer.id()))
    );
    // An explicit invalidation names no successor.
    store.invalidate("user", "prefers_test_framework").unwrap();
    assert_eq!(store.history("user").unwrap()[1].superseded_by(), None);
}

/// Explicit invalidation uses the injected clock.
pub fn explicit_invalidation_uses_the_injected_clock(fixture: &dyn Fixture) {
    let Some((store, clock)) = store(fixture) else {
        return;
    };
    store
        .add(vec![fact("task:6", "blocked_by", "missing schema", 6, 0)])
        .unwrap();
    clock.set(t(42));
    let ended = store.invalidate("task:6", "blocked_by").unwrap();
    assert_eq!(
        ended,
        [FactId::for_triple("task:6", "blocked_by", "missing schema")]
    );
    assert_eq!(store.valid_count().unwrap(), 0);
    assert_eq!(store.history("task:6").unwrap()[0].valid_to(), Some(t(42)));
    assert!(
        store.invalidate("task:6", "blocked_by").unwrap().is_empty(),
        "nothing left to invalidate"
    );
}

/// `valid_at` answers for any instant.
pub fn valid_at_answers_for_any_instant(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store
        .add(vec![fact("task:7", "completed_with", "blocked", 7, 10)])
        .unwrap();
    store
        .add(vec![fact("task:7", "completed_with", "completed", 7, 20)])
        .unwrap();
    let objects = |secs| -> Vec<String> {
        store
            .valid_at(t(secs))
            .unwrap()
            .iter()
            .map(|f| f.object().to_owned())
            .collect()
    };
    assert!(objects(9).is_empty());
    assert_eq!(objects(10), ["blocked"]);
    assert_eq!(objects(19), ["blocked"]);
    assert_eq!(objects(20), ["completed"]);
}

/// Arriving invalidated and repeated facts are skipped with reasons.
pub fn arriving_invalidated_and_repeated_facts_are_skipped_with_reasons(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let ended = fact("a", "b", "c", 1, 0).invalidated_at(t(1)).unwrap();
    let report = store
        .add(vec![
            ended,
            fact("x", "y", "z", 1, 0),
            fact("x", "y", "z", 1, 0),
        ])
        .unwrap();
    let reasons: Vec<_> = report
        .skipped
        .iter()
        .map(|s| (s.index, format!("{:?}", s.reason)))
        .collect();
    assert_eq!(
        reasons,
        [
            (0, "ArrivedInvalidated".to_owned()),
            (2, "DuplicateInBatch".to_owned())
        ]
    );
    assert_eq!(store.valid_count().unwrap(), 1);
}

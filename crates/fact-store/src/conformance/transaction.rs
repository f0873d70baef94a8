//! Transactions: several steps that commit together, batches that supersede in step
//! order, explicit ends with and without a successor, and `recorded_at` kept as given.

use super::{Fixture, fact, store, store_with, t, valid_lines};
use crate::{NotEndedReason, Snapshot, StepReport, StoreConfig, Transaction};
use fact_model::{FactId, FactSelector, SessionFact, SourceRole, Tag};

/// A conversation fact about the user, said at `t(secs)`.
fn said(relation: &str, object: &str, secs: i64) -> SessionFact {
    SessionFact::builder("user", relation, object)
        .tag(Tag::Context)
        .source("ep_1", SourceRole::Extractor)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

/// Batches of one transaction supersede in step order.
pub fn batches_of_one_transaction_supersede_in_step_order(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let paris = said("lives_in", "Paris", 20);
    let berlin = said("lives_in", "Berlin", 70);
    let report = store
        .apply(
            Transaction::new()
                .add(vec![paris.clone()])
                .add(vec![berlin.clone()]),
        )
        .unwrap();
    assert_eq!(report.steps.len(), 2);
    let StepReport::Added(second) = &report.steps[1] else {
        panic!("{report:?}");
    };
    assert_eq!(second.invalidated, [paris.id()]);
    assert_eq!(valid_lines(&*store), ["user lives_in Berlin"]);
    let history = store.history("user").unwrap();
    assert_eq!(history[0].valid_to(), Some(t(70)));
    assert_eq!(history[0].superseded_by(), Some(berlin.id()));
    assert_eq!(report.ended(), [paris.id()]);
}

/// Turns said at the same time still supersede in step order.
pub fn turns_said_at_the_same_time_still_supersede_in_step_order(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store
        .apply(
            Transaction::new()
                .add(vec![said("lives_in", "Paris", 10)])
                .add(vec![said("lives_in", "Berlin", 10)]),
        )
        .unwrap();
    assert_eq!(valid_lines(&*store), ["user lives_in Berlin"]);
    assert_eq!(store.history("user").unwrap()[0].valid_to(), Some(t(10)));
}

/// Facts of one batch in a transaction stay together.
pub fn facts_of_one_batch_in_a_transaction_stay_together(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store
        .apply(Transaction::new().add(vec![
            said("speaks", "French", 5),
            said("speaks", "German", 5),
        ]))
        .unwrap();
    assert_eq!(store.valid_count().unwrap(), 2);
}

/// An old conversation archived late arrives superseded.
pub fn an_old_conversation_archived_late_arrives_superseded(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let berlin = said("lives_in", "Berlin", 70);
    store.add(vec![berlin.clone()]).unwrap();
    let report = store
        .apply(Transaction::new().add(vec![said("lives_in", "Paris", 20)]))
        .unwrap();
    let StepReport::Added(added) = &report.steps[0] else {
        panic!("{report:?}");
    };
    assert_eq!(added.arrived_superseded.len(), 1);
    assert_eq!(valid_lines(&*store), ["user lives_in Berlin"]);
    let paris = store
        .get(FactId::for_triple("user", "lives_in", "Paris"))
        .unwrap()
        .unwrap();
    assert_eq!(paris.superseded_by(), Some(berlin.id()));
}

/// An end with a successor crosses predicates.
pub fn an_end_with_a_successor_crosses_predicates(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let pytest = said("prefers_test_framework", "pytest", 0);
    store.add(vec![pytest.clone()]).unwrap();
    let nextest = said("switched_test_runner_to", "nextest", 30);
    let report = store
        .apply(Transaction::new().add(vec![nextest.clone()]).end(
            pytest.id(),
            nextest.valid_from(),
            Some(nextest.id()),
        ))
        .unwrap();
    assert_eq!(
        report.steps[1],
        StepReport::Ended {
            ids: vec![pytest.id()]
        }
    );
    assert_eq!(
        valid_lines(&*store),
        ["user switched_test_runner_to nextest"]
    );
    let ended = store.get(pytest.id()).unwrap().unwrap();
    assert_eq!(
        (ended.valid_to(), ended.superseded_by()),
        (Some(t(30)), Some(nextest.id()))
    );
}

/// An end that cannot apply changes nothing and says why.
pub fn an_end_that_cannot_apply_changes_nothing_and_says_why(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let vim = said("prefers_editor", "vim", 50);
    store.add(vec![vim.clone()]).unwrap();
    let unknown = FactId::for_triple("nobody", "knows", "this");
    let report = store
        .apply(
            Transaction::new()
                .end(unknown, t(60), None)
                .end(vim.id(), t(60), Some(unknown))
                .end(vim.id(), t(40), None),
        )
        .unwrap();
    let reasons: Vec<_> = report
        .steps
        .iter()
        .map(|step| match step {
            StepReport::NotEnded { reason, .. } => *reason,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        reasons,
        [
            NotEndedReason::NotValid,
            NotEndedReason::SuccessorNotValid,
            NotEndedReason::NewerThanEnd
        ]
    );
    assert_eq!(store.get(vim.id()).unwrap().unwrap().valid_to(), None);
    // A removal (no successor) at a time after it began ends it, and names no one.
    store
        .apply(Transaction::new().end(vim.id(), t(90), None))
        .unwrap();
    let ended = store.get(vim.id()).unwrap().unwrap();
    assert_eq!(
        (ended.valid_to(), ended.superseded_by()),
        (Some(t(90)), None)
    );
}

/// Settling and adding is one write.
pub fn settling_and_adding_is_one_write(fixture: &dyn Fixture) {
    let Some((store, clock)) = store(fixture) else {
        return;
    };
    store
        .add(vec![fact("src/a.rs", "issue", "no tests", 2, 0)])
        .unwrap();
    clock.set(t(10));
    let report = store
        .apply(
            Transaction::new()
                .end_matching(FactSelector::from_task("issue", "2"))
                .add(vec![
                    fact("task:2", "reviewed_as", "approved", 2, 10),
                    fact("src/b.rs", "issue", "new issue of this review", 2, 10),
                ]),
        )
        .unwrap();
    assert_eq!(
        report.steps[0],
        StepReport::Ended {
            ids: vec![FactId::for_triple("src/a.rs", "issue", "no tests")]
        }
    );
    // What the batch itself adds is not settled by the selector that ran before it.
    assert_eq!(
        valid_lines(&*store),
        [
            "task:2 reviewed_as approved",
            "src/b.rs issue new issue of this review"
        ]
    );
    assert_eq!(
        store.history("src/a.rs").unwrap()[0].valid_to(),
        Some(t(10))
    );
}

/// A delete step removes every version and an unknown id none.
pub fn a_delete_step_removes_every_version_and_an_unknown_id_none(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let first = said("lives_in", "Paris", 0);
    store.add(vec![first.clone()]).unwrap();
    store.add(vec![said("lives_in", "Berlin", 5)]).unwrap();
    store.add(vec![said("lives_in", "Paris", 9)]).unwrap();
    let unknown = FactId::for_triple("a", "b", "c");
    let report = store
        .apply(Transaction::new().delete(first.id()).delete(unknown))
        .unwrap();
    assert_eq!(
        report.steps,
        [
            StepReport::Deleted {
                id: first.id(),
                versions: 2
            },
            StepReport::Deleted {
                id: unknown,
                versions: 0
            }
        ]
    );
    assert_eq!(valid_lines(&*store), Vec::<String>::new());
    assert_eq!(store.history("user").unwrap().len(), 1);
}

/// Compaction runs once after the last step.
pub fn compaction_runs_once_after_the_last_step(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default().with_capacity(2)) else {
        return;
    };
    let report = store
        .apply(
            Transaction::new()
                .add(vec![
                    fact("task:1", "a", "1", 1, 1),
                    fact("task:1", "b", "2", 1, 1),
                ])
                .add(vec![fact("task:2", "a", "3", 2, 2)])
                .add(vec![fact("task:3", "a", "4", 3, 3)]),
        )
        .unwrap();
    assert!(report.steps.iter().all(|step| match step {
        StepReport::Added(added) => added.compaction.is_none(),
        _ => true,
    }));
    assert!(report.compaction.is_some());
    assert!(store.valid_count().unwrap() <= 2);
}

/// `recorded_at` is kept as given and never confused with `valid_from`.
pub fn recorded_at_is_kept_as_given_and_never_confused_with_valid_from(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let march = said("lives_in", "Berlin", 0).recorded(t(900));
    let plain = fact("src/a.rs", "modified_by", "task:1", 1, 0);
    store.add(vec![march.clone(), plain.clone()]).unwrap();
    let got = store.get(march.id()).unwrap().unwrap();
    assert_eq!((got.valid_from(), got.recorded_at()), (t(0), Some(t(900))));
    assert_eq!(store.get(plain.id()).unwrap().unwrap().recorded_at(), None);
    assert_eq!(store.history("user").unwrap(), [march.clone()]);
    // Ending a version keeps when it was recorded.
    store.add(vec![said("lives_in", "Paris", 5)]).unwrap();
    assert_eq!(
        store.get(march.id()).unwrap().unwrap().recorded_at(),
        Some(t(900))
    );
    // Snapshots carry it.
    let snapshot: Snapshot = store.export_snapshot().unwrap();
    let json = snapshot.to_json();
    assert!(json.contains("\"recorded_at\""), "{json}");
    let Some((copy, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    copy.import_snapshot(&json).unwrap();
    assert_eq!(
        copy.get(march.id()).unwrap().unwrap().recorded_at(),
        Some(t(900))
    );
}

/// A keyed transaction applies at most once.
pub fn a_keyed_transaction_applies_at_most_once(fixture: &dyn Fixture) {
    let Some((store, clock)) = store(fixture) else {
        return;
    };
    let paris = said("lives_in", "Paris", 0);
    store.add(vec![paris.clone()]).unwrap();
    let berlin = said("lives_in", "Berlin", 10);
    let keyed = Transaction::new()
        .add(vec![berlin.clone()])
        .end(paris.id(), t(10), Some(berlin.id()))
        .with_key("ep_1:reply");
    let first = store.apply(keyed.clone()).unwrap();
    assert!(!first.replayed);
    assert_eq!(first.steps.len(), 2);
    let snapshot = store.export_snapshot().unwrap();
    // A retry, later (as after an `io` error whose commit did go through).
    clock.set(t(50));
    let retry = store.apply(keyed).unwrap();
    assert!(retry.replayed);
    assert!(retry.steps.is_empty() && retry.compaction.is_none());
    assert_eq!(
        store.export_snapshot().unwrap(),
        snapshot,
        "nothing changed"
    );
    // Another key, or none, applies.
    let other = Transaction::new()
        .add(vec![said("lives_in", "Rome", 60)])
        .with_key("ep_2:reply");
    assert!(!store.apply(other).unwrap().replayed);
    let unkeyed = Transaction::new().add(vec![said("lives_in", "Oslo", 70)]);
    assert!(!store.apply(unkeyed.clone()).unwrap().replayed);
    assert!(!store.apply(unkeyed).unwrap().replayed);
    assert_eq!(valid_lines(&*store), ["user lives_in Oslo"]);
}

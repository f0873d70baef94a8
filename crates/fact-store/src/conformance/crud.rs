//! Get, update, delete, tags and statement dedup.

use super::{Fixture, fact, memory, store};
use crate::{SkipReason, StoreError};
use fact_model::{FactId, FactUpdate, Tag};

/// Statements equal after case and whitespace folding are one fact.
pub fn statements_equal_after_case_and_whitespace_folding_are_one_fact(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let first = memory("dark mode", "Prefers dark mode", 0.9);
    store.add(vec![first.clone()]).unwrap();
    let report = store
        .add(vec![memory("dark themes", "  prefers DARK\tmode ", 0.7)])
        .unwrap();
    assert!(report.added.is_empty());
    assert_eq!(
        report.skipped[0].reason,
        SkipReason::DuplicateStatement {
            existing: first.id()
        }
    );
    assert_eq!(
        store.valid_facts().unwrap(),
        [first],
        "the existing fact is unchanged"
    );
    // A different statement is a different fact (and, same key, a newer version).
    let report = store
        .add(vec![memory("light mode", "Prefers light mode", 0.8)])
        .unwrap();
    assert_eq!(report.added.len(), 1);
}

/// `update` changes only the given fields.
pub fn update_changes_only_the_given_fields(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let original = memory("tabs", "Prefers tabs", 0.5);
    store.add(vec![original.clone()]).unwrap();
    let updated = store
        .update(
            original.id(),
            &FactUpdate {
                confidence: Some(0.95),
                ..FactUpdate::default()
            },
        )
        .unwrap();
    assert_eq!(updated.confidence(), 0.95);
    assert_eq!(
        (updated.statement(), updated.valid_from()),
        (original.statement(), original.valid_from())
    );
    assert_eq!(store.get(original.id()).unwrap().unwrap(), updated);
}

/// `update` errors are typed.
pub fn update_errors_are_typed(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let tabs = memory("tabs", "Prefers tabs", 0.5);
    store
        .add(vec![tabs.clone(), memory("vim", "Uses vim", 0.5)])
        .unwrap();
    let unknown = FactId::for_triple("no", "such", "fact");
    let bad_confidence = FactUpdate {
        confidence: Some(7.0),
        ..FactUpdate::default()
    };
    assert!(
        matches!(store.update(unknown, &bad_confidence), Err(StoreError::NotFound { id }) if id == unknown)
    );
    assert!(matches!(
        store.update(tabs.id(), &bad_confidence),
        Err(StoreError::InvalidUpdate { .. })
    ));
    let clash = FactUpdate {
        statement: Some("USES VIM".into()),
        ..FactUpdate::default()
    };
    let err = store.update(tabs.id(), &clash).unwrap_err();
    assert!(err.to_string().contains("duplicates valid fact"), "{err}");
    // A statement change is seen by dedup afterwards.
    let rename = FactUpdate {
        statement: Some("Likes tabs".into()),
        ..FactUpdate::default()
    };
    store.update(tabs.id(), &rename).unwrap();
    let report = store.add(vec![memory("x", "likes TABS", 0.1)]).unwrap();
    assert_eq!(
        report.skipped[0].reason,
        SkipReason::DuplicateStatement {
            existing: tabs.id()
        }
    );
}

/// `delete` removes every version, and unknown ids are not found.
pub fn delete_removes_every_version_and_unknown_ids_are_not_found(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    store.add(vec![fact("t", "r", "a", 1, 0)]).unwrap();
    store.add(vec![fact("t", "r", "b", 1, 1)]).unwrap();
    store.add(vec![fact("t", "r", "a", 1, 2)]).unwrap();
    let id = FactId::for_triple("t", "r", "a");
    assert_eq!(store.delete(id).unwrap(), 2);
    assert_eq!(store.history("t").unwrap().len(), 1);
    assert_eq!(
        store.valid_count().unwrap(),
        0,
        "the valid version was among those deleted"
    );
    let err = store.delete(id).unwrap_err();
    assert_eq!(err.to_string(), format!("no fact with id {id}"));
    assert!(store.get(id).unwrap().is_none());
}

/// The tags filter matches facts with any of the tags.
pub fn tags_filter_is_any_of(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let tagged = |subject: &str, tags: &[Tag]| {
        fact_model::SessionFact::builder(subject, "r", "o")
            .tags(tags.iter().copied())
            .source("1", fact_model::SourceRole::Reviewer)
            .valid_from(super::t(0))
            .build()
            .unwrap()
    };
    store
        .add(vec![
            tagged("a", &[Tag::Test]),
            tagged("b", &[Tag::Error, Tag::Test]),
            tagged("c", &[Tag::Convention]),
        ])
        .unwrap();
    let subjects = |tags: &[Tag]| -> Vec<String> {
        store
            .valid_facts_by_tags(tags)
            .unwrap()
            .iter()
            .map(|f| f.subject().to_owned())
            .collect()
    };
    assert_eq!(subjects(&[Tag::Test]), ["a", "b"]);
    assert_eq!(subjects(&[Tag::Error, Tag::Convention]), ["b", "c"]);
    assert!(subjects(&[]).is_empty());
    assert!(subjects(&[Tag::Goal]).is_empty());
}

/// The store is shared between threads.
pub fn the_store_is_shared_between_threads(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    std::thread::scope(|scope| {
        for worker in 0..4u32 {
            let store = store.clone();
            scope.spawn(move || {
                for n in 0..50 {
                    store
                        .add(vec![fact(
                            &format!("src/{worker}/{n}.rs"),
                            "modified_by",
                            "task:1",
                            1,
                            0,
                        )])
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(store.valid_count().unwrap(), 200);
}

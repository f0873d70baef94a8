//! Capacity and compaction policies.

use super::{Fixture, fact, store_with};
use crate::{CompactionPolicy, SessionFactStore, StoreConfig};
use fact_model::{SessionFact, SourceRole, Tag};

/// The facts of one implementer result of task `task`, as the rule extractor makes them.
fn result(task: u32) -> Vec<SessionFact> {
    let subject = format!("task:{task}");
    let secs = i64::from(task);
    vec![
        fact(&subject, "completed_with", "completed", task, secs),
        fact(
            &subject,
            "summary",
            &format!("implemented part {task}"),
            task,
            secs,
        ),
        fact(
            &format!("src/part_{task}.rs"),
            "modified_by",
            &subject,
            task,
            secs,
        ),
    ]
}

/// Six hundred results compacted to five hundred keep the newest verbatim.
pub fn six_hundred_results_compacted_to_five_hundred_keep_the_newest_verbatim(
    fixture: &dyn Fixture,
) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    for task in 1..=600 {
        let report = store.add(result(task)).unwrap();
        assert!(
            store.valid_count().unwrap() <= 500,
            "after task {task}: {}",
            store.valid_count().unwrap()
        );
        if task == 600 {
            assert!(report.compaction.is_some());
        }
    }
    let valid = store.valid_facts().unwrap();
    for newest in result(600) {
        assert!(valid.contains(&newest), "{newest:?} must survive verbatim");
    }
    let task1: Vec<&SessionFact> = valid.iter().filter(|f| f.subject() == "task:1").collect();
    assert!(
        task1.iter().all(|f| f.relation() == "compacted"),
        "task 1's facts are merged or gone: {task1:?}"
    );
    assert!(!valid.contains(&result(1)[0]));
}

/// `MergeBySubject` writes one summary per subject.
pub fn merge_by_subject_writes_one_summary_per_subject(fixture: &dyn Fixture) {
    let config = StoreConfig::default()
        .with_capacity(4)
        .with_auto_compact(false);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    store.add(result(1)).unwrap();
    store.add(result(2)).unwrap();
    let report = store.compact(4).unwrap();
    assert_eq!((report.merged, report.summaries.len()), (2, 1));
    let summary = store.history("task:1").unwrap().pop().unwrap();
    assert_eq!(summary.relation(), "compacted");
    assert_eq!(
        summary.object(),
        "completed_with completed; summary implemented part 1"
    );
    assert_eq!(summary.tags().as_slice(), &[Tag::Decision]);
    assert_eq!(store.valid_count().unwrap(), 4);
    // Nothing left to merge outside the newest batch: the oldest valid facts go, and the
    // newest batch survives verbatim.
    let report = store.compact(3).unwrap();
    assert_eq!((report.merged, report.dropped_valid.len()), (0, 1));
    let newest: Vec<SessionFact> = result(2);
    assert_eq!(store.valid_facts().unwrap(), newest);
}

/// `LowestConfidenceFirst` drops the least certain.
pub fn lowest_confidence_first_drops_the_least_certain(fixture: &dyn Fixture) {
    let config = StoreConfig::default()
        .with_capacity(2)
        .with_policy(CompactionPolicy::LowestConfidenceFirst);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    let with_confidence = |object: &str, confidence: f64| {
        SessionFact::builder("user", object, "x")
            .tag(Tag::Knowledge)
            .source("chat", SourceRole::Extractor)
            .valid_from(super::t(0))
            .confidence(confidence)
            .build()
            .unwrap()
    };
    store
        .add(vec![with_confidence("a", 0.9), with_confidence("b", 0.3)])
        .unwrap();
    let report = store.add(vec![with_confidence("c", 0.6)]).unwrap();
    assert_eq!(report.compaction.unwrap().dropped_valid.len(), 1);
    let mut left: Vec<String> = store
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| f.relation().to_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a", "c"]);
}

/// History beyond its limit is dropped oldest first.
pub fn history_beyond_its_limit_is_dropped_oldest_first(fixture: &dyn Fixture) {
    let config = StoreConfig::default().with_history_limit(2);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    for n in 0..5 {
        store
            .add(vec![fact("task:1", "summary", &format!("v{n}"), 1, n)])
            .unwrap();
    }
    let objects: Vec<String> = store
        .history("task:1")
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect();
    assert_eq!(objects, ["v2", "v3", "v4"]);
}

/// Without auto-compaction the store grows.
pub fn without_auto_compaction_the_store_grows(fixture: &dyn Fixture) {
    let config = StoreConfig::default()
        .with_capacity(1)
        .with_auto_compact(false);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    let report = store.add(result(1)).unwrap();
    assert!(report.compaction.is_none());
    assert_eq!(store.valid_count().unwrap(), 3);
}

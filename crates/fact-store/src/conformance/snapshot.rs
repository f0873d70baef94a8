//! Snapshot export and import.

use super::{Fixture, fact, memory, store, store_with, t};
use crate::{SessionFactStore, Snapshot, StoreConfig, StoreError};
use serde_json::json;

/// A fresh store holding four facts over three batches (one fact superseded).
fn filled(fixture: &dyn Fixture) -> Option<std::sync::Arc<dyn SessionFactStore>> {
    let (store, _) = store(fixture)?;
    store
        .add(vec![
            fact("task:1", "completed_with", "blocked", 1, 0),
            memory("tabs", "Prefers tabs", 0.6),
        ])
        .unwrap();
    store
        .add(vec![fact("task:1", "completed_with", "completed", 1, 10)])
        .unwrap();
    store
        .add(vec![fact("src/a.rs", "modified_by", "task:1", 1, 10)])
        .unwrap();
    Some(store)
}

/// Export then import yields an equal store.
pub fn export_then_import_yields_an_equal_store(fixture: &dyn Fixture) {
    let Some(source) = filled(fixture) else {
        return;
    };
    let json = source.export_snapshot().unwrap().to_json();
    let Some((copy, _)) = store(fixture) else {
        return;
    };
    let report = copy.import_snapshot(&json).unwrap();
    assert_eq!((report.imported, report.skipped.len()), (4, 0));
    assert_eq!(
        copy.export_snapshot().unwrap(),
        source.export_snapshot().unwrap()
    );
    assert_eq!(copy.valid_facts().unwrap(), source.valid_facts().unwrap());
    assert_eq!(
        copy.history("task:1").unwrap(),
        source.history("task:1").unwrap()
    );
}

/// Bad records are skipped with diagnostics and the rest imported.
pub fn bad_records_are_skipped_with_diagnostics_and_the_rest_imported(fixture: &dyn Fixture) {
    let Some(source) = filled(fixture) else {
        return;
    };
    let mut document = serde_json::to_value(source.export_snapshot().unwrap()).unwrap();
    let records = document["records"].as_array_mut().unwrap();
    records[1]["fact"]["confidence"] = json!(3.0);
    records.push(json!({"batch": 9, "fact": {"subject": ""}}));
    records.push(json!("not a record"));
    let Some((copy, _)) = store(fixture) else {
        return;
    };
    let report = copy.import_snapshot(&document.to_string()).unwrap();
    assert_eq!(report.imported, 3);
    let indexes: Vec<usize> = report.skipped.iter().map(|d| d.index).collect();
    assert_eq!(indexes, [1, 4, 5]);
    assert!(
        report.skipped[0]
            .message
            .contains("`confidence` must be a finite number"),
        "{:?}",
        report.skipped[0]
    );
}

/// Documents that are not snapshots are errors and import nothing.
pub fn documents_that_are_not_snapshots_are_errors_and_import_nothing(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    assert!(matches!(
        store.import_snapshot("{"),
        Err(StoreError::SnapshotJson(_))
    ));
    assert!(matches!(
        store.import_snapshot("[]"),
        Err(StoreError::SnapshotJson(_))
    ));
    let err = store
        .import_snapshot(r#"{"version": 2, "records": []}"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "snapshot version 2 is not supported; this store reads version 1"
    );
    assert_eq!(store.export_snapshot().unwrap().records.len(), 0);
}

/// Importing into a non-empty store lets the snapshot win its keys.
pub fn importing_into_a_non_empty_store_lets_the_snapshot_win_its_keys(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    store
        .add(vec![fact("task:1", "completed_with", "failed", 1, 20)])
        .unwrap();
    let report = store
        .import_snapshot(
            &filled(fixture)
                .unwrap()
                .export_snapshot()
                .unwrap()
                .to_json(),
        )
        .unwrap();
    assert_eq!(
        report.invalidated.len(),
        1,
        "imported batches are newer than the store's own"
    );
    let valid: Vec<String> = store
        .valid_facts()
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect();
    assert!(valid.contains(&"completed".to_owned()) && !valid.contains(&"failed".to_owned()));
    // The snapshot is plain serde data too.
    let snapshot: Snapshot =
        serde_json::from_str(&store.export_snapshot().unwrap().to_json()).unwrap();
    assert_eq!(snapshot.version, 1);
}

/// An ended version imported while the fact is valid goes into history.
pub fn an_ended_version_imported_while_the_fact_is_valid_goes_into_history(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let current = fact("src/a.rs", "modified_by", "task:2", 2, 10);
    store.add(vec![current.clone()]).unwrap();
    let ended = current.invalidated_at(t(10)).unwrap();
    let snapshot = Snapshot {
        version: crate::SNAPSHOT_VERSION,
        records: vec![crate::SnapshotRecord {
            batch: 1,
            fact: ended,
        }],
    };
    store.import(snapshot).unwrap();
    // The valid version stays the fact's latest: one valid version, refreshed by a re-add.
    assert!(store.get(current.id()).unwrap().unwrap().is_valid());
    assert_eq!(store.valid_count().unwrap(), 1);
    let report = store.add(vec![current.clone()]).unwrap();
    assert_eq!(report.refreshed, [current.id()]);
    assert_eq!(store.valid_count().unwrap(), 1);
    assert_eq!(store.history("src/a.rs").unwrap().len(), 2);
}

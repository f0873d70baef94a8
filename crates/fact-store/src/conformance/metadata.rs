//! Metadata on facts: kept per version, in history, `valid_at`, snapshots and updates.

use fact_model::{FactUpdate, Metadata, SessionFact};
use serde_json::json;

use super::{Fixture, fact, store, t};

fn meta(value: serde_json::Value) -> Metadata {
    Metadata::from_json(&value).unwrap()
}

fn with(fact: SessionFact, value: serde_json::Value) -> SessionFact {
    fact.with_metadata(meta(value))
}

/// Each version keeps its own metadata: `get`, `valid_facts`, `history` and `valid_at`
/// give back what each version was stored with.
pub fn each_version_keeps_its_own_metadata(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let first = with(
        fact("user", "works_on", "rlm", 1, 10),
        json!({"project": "rlm", "n": 3, "urgent": true, "ratio": 0.25}),
    );
    let plain = fact("user", "lives_in", "Berlin", 1, 10);
    store.add(vec![first.clone(), plain.clone()]).unwrap();
    let second = with(
        fact("user", "works_on", "factmem", 2, 20),
        json!({"project": "factmem", "note": "naïve \"quoted\" text"}),
    );
    store.add(vec![second.clone()]).unwrap();

    let got = store.get(second.id()).unwrap().unwrap();
    assert_eq!(got.metadata(), second.metadata());
    assert!(
        store
            .get(plain.id())
            .unwrap()
            .unwrap()
            .metadata()
            .is_empty()
    );
    let valid = store.valid_facts().unwrap();
    let of = |facts: &[SessionFact], object: &str| {
        facts
            .iter()
            .find(|f| f.object() == object)
            .map(|f| f.metadata().clone())
    };
    assert_eq!(of(&valid, "factmem").as_ref(), Some(second.metadata()));
    let history = store.history("user").unwrap();
    assert_eq!(of(&history, "rlm").as_ref(), Some(first.metadata()));
    assert_eq!(of(&history, "factmem").as_ref(), Some(second.metadata()));
    let then = store.valid_at(t(15)).unwrap();
    assert_eq!(of(&then, "rlm").as_ref(), Some(first.metadata()));
}

/// `update` replaces the metadata in place, empty metadata clears it, and other updates
/// leave it as it was.
pub fn update_replaces_and_clears_metadata(fixture: &dyn Fixture) {
    let Some((store, _)) = store(fixture) else {
        return;
    };
    let original = with(fact("user", "works_on", "rlm", 1, 10), json!({"a": 1}));
    store.add(vec![original.clone()]).unwrap();
    let replaced = FactUpdate {
        metadata: Some(meta(json!({"b": "two"}))),
        ..FactUpdate::default()
    };
    let updated = store.update(original.id(), &replaced).unwrap();
    assert_eq!(updated.metadata(), &meta(json!({"b": "two"})));
    assert_eq!(store.get(original.id()).unwrap().unwrap(), updated);
    let confidence = FactUpdate {
        confidence: Some(0.5),
        ..FactUpdate::default()
    };
    let kept = store.update(original.id(), &confidence).unwrap();
    assert_eq!(kept.metadata(), &meta(json!({"b": "two"})));
    let cleared = FactUpdate {
        metadata: Some(Metadata::new()),
        ..FactUpdate::default()
    };
    store.update(original.id(), &cleared).unwrap();
    assert!(
        store
            .get(original.id())
            .unwrap()
            .unwrap()
            .metadata()
            .is_empty()
    );
}

/// A snapshot carries every version's metadata, and importing it gives an equal store.
pub fn snapshots_carry_metadata(fixture: &dyn Fixture) {
    let Some((source, _)) = store(fixture) else {
        return;
    };
    source
        .add(vec![with(
            fact("user", "works_on", "rlm", 1, 10),
            json!({"project": "rlm"}),
        )])
        .unwrap();
    source
        .add(vec![with(
            fact("user", "works_on", "factmem", 2, 20),
            json!({"project": "factmem", "n": -1.5}),
        )])
        .unwrap();
    let json = source.export_snapshot().unwrap().to_json();
    let document: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        document["records"][0]["fact"]["metadata"],
        json!({"project": "rlm"}),
        "{json}"
    );
    let Some((copy, _)) = store(fixture) else {
        return;
    };
    copy.import_snapshot(&json).unwrap();
    assert_eq!(
        copy.export_snapshot().unwrap(),
        source.export_snapshot().unwrap()
    );
    assert_eq!(
        copy.history("user").unwrap(),
        source.history("user").unwrap()
    );
}

/// An episode keeps its metadata: `episode` and `episodes` give it back, a replaced
/// episode has the new metadata, and one without has none.
pub fn an_episode_keeps_its_metadata(fixture: &dyn Fixture) {
    use fact_model::{Message, MessageRole};

    use crate::Episode;

    let Some((store, _)) = super::long_term(fixture) else {
        return;
    };
    let messages = vec![Message::new(MessageRole::User, "We ship on Friday.").at(t(5))];
    let plain = Episode::new("Release", "", messages.clone(), t(10));
    let tagged = Episode::new("Planning", "", messages, t(20))
        .with_metadata(meta(json!({"project": "rlm", "n": 2, "live": false})));
    store.put_episode(&plain).unwrap();
    store.put_episode(&tagged).unwrap();
    let read = store.episode(&tagged.id).unwrap().unwrap();
    assert_eq!(read.metadata, tagged.metadata);
    assert!(
        store
            .episode(&plain.id)
            .unwrap()
            .unwrap()
            .metadata
            .is_empty()
    );
    let all = store.episodes().unwrap();
    assert_eq!(
        all.iter().find(|e| e.id == tagged.id).unwrap().metadata,
        tagged.metadata
    );
    let replaced = tagged
        .clone()
        .with_metadata(meta(json!({"project": "factmem"})));
    store.put_episode(&replaced).unwrap();
    assert_eq!(
        store.episode(&tagged.id).unwrap().unwrap().metadata,
        replaced.metadata
    );
}

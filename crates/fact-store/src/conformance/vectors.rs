//! Embeddings (`FactVectors`): storing, validation, the nearest-neighbour search and its
//! filters, and how embeddings follow their facts through supersession and deletion.

use crate::{FactVectors, MAX_MODEL_BYTES, SessionFactStore, StoreConfig, StoreError, VectorQuery};
use fact_model::{FactId, SessionFact, SourceRole, Tag};

use super::{Fixture, fact, store_with, t};

const MODEL: &str = "test/model-a";

/// The store's embeddings (every conforming store keeps them).
fn vectors(store: &dyn SessionFactStore) -> &dyn FactVectors {
    store
        .vectors()
        .expect("every conforming store keeps embeddings")
}

/// The `(object, score)` of what `nearest` finds for `vector` under [`MODEL`].
fn nearest(store: &dyn SessionFactStore, vector: &[f32], limit: usize) -> Vec<(String, f64)> {
    found(store, &VectorQuery::new(MODEL, vector, limit))
}

/// The `(object, score)` of what `query` finds, best first.
fn found(store: &dyn SessionFactStore, query: &VectorQuery<'_>) -> Vec<(String, f64)> {
    vectors(store)
        .nearest(query)
        .unwrap()
        .into_iter()
        .map(|s| (s.fact.object().to_owned(), s.score))
        .collect()
}

/// The objects of `found`, in order.
fn objects(found: &[(String, f64)]) -> Vec<&str> {
    found.iter().map(|(object, _)| object.as_str()).collect()
}

/// Three facts (objects `x`, `y`, `z`) with embeddings along the three axes.
fn three_axes(store: &dyn SessionFactStore) -> [SessionFact; 3] {
    let facts = [
        fact("a.rs", "modified_by", "x", 1, 0),
        fact("b.rs", "modified_by", "y", 1, 0),
        fact("c.rs", "modified_by", "z", 1, 0),
    ];
    store.add(facts.to_vec()).unwrap();
    let stored = vectors(store)
        .put_embeddings(
            MODEL,
            vec![
                (facts[0].id(), vec![1.0, 0.0, 0.0]),
                (facts[1].id(), vec![0.0, 1.0, 0.0]),
                (facts[2].id(), vec![0.0, 0.0, 1.0]),
            ],
        )
        .unwrap();
    assert_eq!(stored, 3);
    facts
}

/// The same vector is found first with cosine one.
pub fn the_same_vector_is_found_first_with_cosine_one(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    three_axes(&*store);
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 3);
    let results = nearest(&*store, &[0.0, 1.0, 0.0], 3);
    assert_eq!(objects(&results)[0], "y");
    assert!((results[0].1 - 1.0).abs() < 1e-6, "{results:?}");
    // The others are orthogonal: cosine 0, ties to the smaller id.
    assert_eq!(results.len(), 3);
    assert!(results[1..].iter().all(|(_, score)| score.abs() < 1e-6));
    let near_x = nearest(&*store, &[0.9, 0.1, 0.0], 2);
    assert_eq!(objects(&near_x), ["x", "y"]);
    assert!(near_x[0].1 > near_x[1].1);
}

/// Vectors are normalized.
pub fn vectors_are_normalized(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let f = fact("a.rs", "modified_by", "x", 1, 0);
    store.add(vec![f.clone()]).unwrap();
    vectors(&*store)
        .put_embeddings(MODEL, vec![(f.id(), vec![3.0, 4.0])])
        .unwrap();
    // The query is normalized too.
    let same = nearest(&*store, &[30.0, 40.0], 1);
    assert!((same[0].1 - 1.0).abs() < 1e-6, "{same:?}");
    let axis = nearest(&*store, &[1.0, 0.0], 1);
    assert!((axis[0].1 - 0.6).abs() < 1e-6, "{axis:?}");
    let opposite = nearest(&*store, &[-3.0, -4.0], 1);
    assert!((opposite[0].1 + 1.0).abs() < 1e-6, "{opposite:?}");
}

/// Invalid embeddings are rejected and nothing of the call is stored.
pub fn invalid_embeddings_are_rejected_and_nothing_of_the_call_is_stored(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, _] = three_axes(&*store);
    let long_model = "m".repeat(MAX_MODEL_BYTES + 1);
    let cases: Vec<(&str, &str, Vec<f32>)> = vec![
        ("NaN", MODEL, vec![f32::NAN, 1.0, 0.0]),
        ("infinity", MODEL, vec![f32::INFINITY, 1.0, 0.0]),
        ("zeros", MODEL, vec![0.0, 0.0, 0.0]),
        ("empty", MODEL, vec![]),
        ("wrong dimension", MODEL, vec![1.0, 0.0]),
        ("empty model", "", vec![1.0, 0.0, 0.0]),
        ("model too long", &long_model, vec![1.0, 0.0, 0.0]),
    ];
    for (case, model, bad) in cases {
        // A valid replacement first: the whole call is refused, so it is not stored.
        let err = vectors(&*store)
            .put_embeddings(
                model,
                vec![(y.id(), vec![1.0, 1.0, 1.0]), (x.id(), bad.clone())],
            )
            .unwrap_err();
        assert!(
            // A bad model identity may be reported on any vector of the call.
            matches!(err, StoreError::InvalidEmbedding { id, .. } if id == x.id() || model != MODEL),
            "{case}: {err:?}"
        );
        assert_eq!(err.code(), "invalid_embedding");
        assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 3, "{case}");
        assert_eq!(
            objects(&nearest(&*store, &[0.0, 1.0, 0.0], 1)),
            ["y"],
            "{case}"
        );
        assert!((nearest(&*store, &[0.0, 1.0, 0.0], 1)[0].1 - 1.0).abs() < 1e-6);
    }
    // The exact limit of a model identity is accepted.
    let longest = "m".repeat(MAX_MODEL_BYTES);
    let stored = vectors(&*store)
        .put_embeddings(&longest, vec![(x.id(), vec![1.0])])
        .unwrap();
    assert_eq!(stored, 1);
}

/// The first vector of a new model fixes its dimension within a call.
pub fn the_first_vector_of_a_new_model_fixes_its_dimension_within_a_call(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, _] = three_axes(&*store);
    let err = vectors(&*store)
        .put_embeddings(
            "test/new",
            vec![(x.id(), vec![1.0, 0.0]), (y.id(), vec![1.0, 0.0, 0.0])],
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidEmbedding { id, .. } if id == y.id()));
    assert_eq!(vectors(&*store).embedded_count("test/new").unwrap(), 0);
}

/// Embeddings of ids the store does not hold are skipped.
pub fn embeddings_of_ids_the_store_does_not_hold_are_skipped(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, _, _] = three_axes(&*store);
    let unknown = FactId::for_triple("nowhere", "is", "stored");
    let stored = vectors(&*store)
        .put_embeddings(
            MODEL,
            vec![
                (unknown, vec![1.0, 1.0, 0.0]),
                (x.id(), vec![1.0, 0.0, 0.0]),
            ],
        )
        .unwrap();
    assert_eq!(stored, 1);
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 3);
    assert_eq!(nearest(&*store, &[1.0, 1.0, 0.0], 5).len(), 3);
}

/// Models are kept apart.
pub fn models_are_kept_apart(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, _] = three_axes(&*store);
    let other = "test/model-b";
    let stored = vectors(&*store)
        .put_embeddings(
            other,
            vec![(x.id(), vec![0.0, 1.0]), (y.id(), vec![1.0, 0.0])],
        )
        .unwrap();
    assert_eq!(stored, 2);
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 3);
    assert_eq!(vectors(&*store).embedded_count(other).unwrap(), 2);
    assert_eq!(vectors(&*store).embedded_count("test/none").unwrap(), 0);
    let by_other = found(&*store, &VectorQuery::new(other, &[1.0, 0.0], 5));
    assert_eq!(objects(&by_other), ["y", "x"]);
    assert_eq!(objects(&nearest(&*store, &[1.0, 0.0, 0.0], 1)), ["x"]);
    // A query of one model's dimension finds nothing under the other.
    assert!(found(&*store, &VectorQuery::new(other, &[1.0, 0.0, 0.0], 5)).is_empty());
    assert!(found(&*store, &VectorQuery::new("test/none", &[1.0, 0.0], 5)).is_empty());
}

/// Superseded and invalidated facts are not found until valid again.
pub fn superseded_and_invalidated_facts_are_not_found_until_valid_again(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let old = fact("task:1", "completed_with", "blocked", 1, 0);
    let other = fact("task:2", "completed_with", "completed", 2, 0);
    store.add(vec![old.clone(), other.clone()]).unwrap();
    vectors(&*store)
        .put_embeddings(
            MODEL,
            vec![(old.id(), vec![1.0, 0.0]), (other.id(), vec![0.0, 1.0])],
        )
        .unwrap();
    // Superseded: the newer fact of the key has no embedding of its own yet.
    let newer = fact("task:1", "completed_with", "completed", 1, 10);
    store.add(vec![newer]).unwrap();
    assert_eq!(objects(&nearest(&*store, &[1.0, 0.0], 5)), ["completed"]);
    assert!(
        nearest(&*store, &[1.0, 0.0], 5)[0].1.abs() < 1e-6,
        "only task:2's fact is left"
    );
    assert_eq!(
        vectors(&*store).embedded_count(MODEL).unwrap(),
        2,
        "kept while invalid"
    );
    // The old triple becomes valid again: its embedding is found again.
    store
        .add(vec![fact("task:1", "completed_with", "blocked", 1, 20)])
        .unwrap();
    let results = nearest(&*store, &[1.0, 0.0], 5);
    assert_eq!(objects(&results), ["blocked", "completed"]);
    assert_eq!(results[0].1.round(), 1.0);
    // Invalidated explicitly.
    store.invalidate("task:2", "completed_with").unwrap();
    assert_eq!(objects(&nearest(&*store, &[0.0, 1.0], 5)), ["blocked"]);
}

/// Deleting a fact deletes its embeddings.
pub fn deleting_a_fact_deletes_its_embeddings(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, _, _] = three_axes(&*store);
    vectors(&*store)
        .put_embeddings("test/model-b", vec![(x.id(), vec![1.0])])
        .unwrap();
    store.delete(x.id()).unwrap();
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 2);
    assert_eq!(vectors(&*store).embedded_count("test/model-b").unwrap(), 0);
    assert_eq!(objects(&nearest(&*store, &[1.0, 0.0, 0.0], 5)).len(), 2);
    // Added again, the fact has no embedding.
    store.add(vec![x.clone()]).unwrap();
    assert!(!objects(&nearest(&*store, &[1.0, 0.0, 0.0], 5)).contains(&"x"));
    let missing: Vec<FactId> = vectors(&*store)
        .unembedded(MODEL, 10)
        .unwrap()
        .iter()
        .map(SessionFact::id)
        .collect();
    assert_eq!(missing, [x.id()]);
}

/// Tags and the source task filter the search.
pub fn tags_and_the_source_task_filter_the_search(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let tagged = |object: &str, task: &str, tag: Tag| {
        SessionFact::builder("user", format!("note_{object}"), object)
            .tag(tag)
            .source(task, SourceRole::Reviewer)
            .valid_from(t(0))
            .build()
            .unwrap()
    };
    let facts = [
        tagged("a", "1", Tag::Error),
        tagged("b", "2", Tag::Convention),
        tagged("c", "3", Tag::Error),
    ];
    store.add(facts.to_vec()).unwrap();
    // `a` nearest the query, then `b`, then `c`.
    vectors(&*store)
        .put_embeddings(
            MODEL,
            vec![
                (facts[0].id(), vec![1.0, 0.1]),
                (facts[1].id(), vec![1.0, 0.5]),
                (facts[2].id(), vec![1.0, 1.0]),
            ],
        )
        .unwrap();
    let query = VectorQuery::new(MODEL, &[1.0, 0.0], 10);
    assert_eq!(objects(&found(&*store, &query)), ["a", "b", "c"]);
    let errors = query.with_tags(&[Tag::Error]);
    assert_eq!(objects(&found(&*store, &errors)), ["a", "c"]);
    let not_task_1 = query.with_exclude_source_task("1");
    assert_eq!(objects(&found(&*store, &not_task_1)), ["b", "c"]);
    let both = query
        .with_tags(&[Tag::Error])
        .with_exclude_source_task("1")
        .with_limit(1);
    assert_eq!(objects(&found(&*store, &both)), ["c"]);
    let unknown_task = query.with_exclude_source_task("never seen");
    assert_eq!(found(&*store, &unknown_task).len(), 3);
    let no_tag = query.with_tags(&[Tag::Preference]);
    assert!(found(&*store, &no_tag).is_empty());
}

/// Limits and unusable queries find nothing.
pub fn limits_and_unusable_queries_find_nothing(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    three_axes(&*store);
    assert!(nearest(&*store, &[1.0, 0.0, 0.0], 0).is_empty());
    assert_eq!(nearest(&*store, &[1.0, 0.0, 0.0], 2).len(), 2);
    assert!(
        nearest(&*store, &[1.0, 0.0], 5).is_empty(),
        "wrong dimension"
    );
    assert!(nearest(&*store, &[f32::NAN, 0.0, 0.0], 5).is_empty());
    assert!(nearest(&*store, &[f32::INFINITY, 0.0, 0.0], 5).is_empty());
    assert!(
        nearest(&*store, &[0.0, 0.0, 0.0], 5).is_empty(),
        "zero vector"
    );
    assert!(nearest(&*store, &[], 5).is_empty());
}

/// `unembedded` lists exactly the valid facts without a vector, oldest first.
pub fn unembedded_lists_exactly_the_valid_facts_without_a_vector_oldest_first(
    fixture: &dyn Fixture,
) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let late = fact("d.rs", "modified_by", "late", 2, 30);
    let early = fact("e.rs", "modified_by", "early", 2, -30);
    store.add(vec![late.clone(), early.clone()]).unwrap();
    let [x, _, _] = three_axes(&*store);
    let ids = |limit| -> Vec<FactId> {
        vectors(&*store)
            .unembedded(MODEL, limit)
            .unwrap()
            .iter()
            .map(SessionFact::id)
            .collect()
    };
    assert_eq!(ids(10), [early.id(), late.id()]);
    assert_eq!(ids(1), [early.id()]);
    assert!(ids(0).is_empty());
    // Under another model, every valid fact is missing, oldest first (then by id).
    let all = vectors(&*store).unembedded("test/none", 10).unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].id(), early.id());
    assert_eq!(all[4].id(), late.id());
    // A superseded fact is not listed, its valid successor is.
    let successor = fact("a.rs", "modified_by", "x2", 3, 40);
    store.add(vec![successor.clone()]).unwrap();
    assert_eq!(ids(10), [early.id(), late.id(), successor.id()]);
    assert!(!ids(10).contains(&x.id()));
    vectors(&*store)
        .put_embeddings(
            MODEL,
            vec![
                (early.id(), vec![1.0, 1.0, 0.0]),
                (late.id(), vec![1.0, 1.0, 1.0]),
                (successor.id(), vec![0.0, 1.0, 1.0]),
            ],
        )
        .unwrap();
    assert!(ids(10).is_empty());
}

/// A new vector replaces the old one.
pub fn a_new_vector_replaces_the_old_one(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, _, _] = three_axes(&*store);
    vectors(&*store)
        .put_embeddings(MODEL, vec![(x.id(), vec![0.0, 0.0, -1.0])])
        .unwrap();
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 3);
    let results = nearest(&*store, &[0.0, 0.0, -1.0], 1);
    assert_eq!(objects(&results), ["x"]);
    assert!((results[0].1 - 1.0).abs() < 1e-6);
    let far = nearest(&*store, &[1.0, 0.0, 0.0], 3);
    assert_eq!(
        far.iter()
            .find(|(o, _)| o == "x")
            .map(|(_, s)| s.abs() < 1e-6),
        Some(true)
    );
}

/// Compaction and history eviction remove the embeddings of the ids they drop.
pub fn compaction_and_history_eviction_remove_the_embeddings_of_the_ids_they_drop(
    fixture: &dyn Fixture,
) {
    let config = StoreConfig::default()
        .with_capacity(4)
        .with_history_limit(1);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    // History eviction: the oldest invalidated version of a key is dropped.
    let first = fact("src/a.rs", "owner", "first", 9, 0);
    store.add(vec![first.clone()]).unwrap();
    vectors(&*store)
        .put_embeddings(MODEL, vec![(first.id(), vec![1.0, 0.0])])
        .unwrap();
    store
        .add(vec![fact("src/a.rs", "owner", "second", 9, 1)])
        .unwrap();
    assert_eq!(
        vectors(&*store).embedded_count(MODEL).unwrap(),
        1,
        "kept as history"
    );
    store
        .add(vec![fact("src/a.rs", "owner", "third", 9, 2)])
        .unwrap();
    assert_eq!(
        store.stored_count().unwrap(),
        2,
        "the oldest version was dropped"
    );
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 0);
    // Compaction: task 1's two facts are merged into a summary, and removed.
    let task_1 = [
        fact("task:1", "completed_with", "completed", 1, 10),
        fact("task:1", "summary", "did things", 1, 10),
    ];
    store.add(task_1.to_vec()).unwrap();
    vectors(&*store)
        .put_embeddings(
            MODEL,
            vec![
                (task_1[0].id(), vec![1.0, 0.0]),
                (task_1[1].id(), vec![0.0, 1.0]),
            ],
        )
        .unwrap();
    for task in 2..=3 {
        store
            .add(vec![
                fact(
                    &format!("task:{task}"),
                    "completed_with",
                    "completed",
                    task,
                    20,
                ),
                fact(&format!("task:{task}"), "summary", "did things", task, 20),
            ])
            .unwrap();
    }
    assert!(store.get(task_1[0].id()).unwrap().is_none(), "merged away");
    assert_eq!(vectors(&*store).embedded_count(MODEL).unwrap(), 0);
    assert!(nearest(&*store, &[1.0, 0.0], 5).is_empty());
}

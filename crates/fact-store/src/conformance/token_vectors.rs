//! Token vectors (`FactVectors::put_token_vectors` and the reads beside it): bytes kept
//! exactly, reads in the order asked, models kept apart, `untokenized` as `unembedded`,
//! and how token vectors follow their facts through supersession, deletion and history
//! eviction.

use crate::{
    FactVectors, MAX_MODEL_BYTES, SessionFactStore, StoreConfig, StoreError, TokenEncoding,
    TokenVectorStats, TokenVectors,
};
use fact_model::{FactId, SessionFact};

use super::{Fixture, fact, store_with};

const MODEL: &str = "test/late-interaction";
const OTHER: &str = "test/other";

/// The store's token vectors (every conforming store keeps them).
fn vectors(store: &dyn SessionFactStore) -> &dyn FactVectors {
    store
        .vectors()
        .expect("every conforming store keeps token vectors")
}

/// `tokens` tokens of dimension 8 that differ with `seed`, encoded as `encoding`.
fn tokens(encoding: TokenEncoding, seed: usize, tokens: usize) -> TokenVectors {
    let values: Vec<f32> = (0..tokens * 8)
        .map(|i| ((i * 7 + seed * 13) % 11) as f32 - 5.0 + 0.5)
        .collect();
    TokenVectors::encode(encoding, 8, &values).unwrap()
}

/// Three stored facts (objects `x`, `y`, `z`).
fn three(store: &dyn SessionFactStore) -> [SessionFact; 3] {
    let facts = [
        fact("a.rs", "modified_by", "x", 1, 0),
        fact("b.rs", "modified_by", "y", 1, 1),
        fact("c.rs", "modified_by", "z", 1, 2),
    ];
    store.add(facts.to_vec()).unwrap();
    facts
}

/// The ids of `facts`, in order.
fn ids(facts: &[SessionFact]) -> Vec<FactId> {
    facts.iter().map(SessionFact::id).collect()
}

/// The token vector stats of `model`.
fn stats(store: &dyn SessionFactStore, model: &str) -> TokenVectorStats {
    vectors(store).token_vector_stats(model).unwrap()
}

/// Token vectors round-trip, read in the order asked, each once.
pub fn token_vectors_round_trip_in_the_order_asked_each_once(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, z] = three(&*store);
    let (tx, ty, tz) = (
        tokens(TokenEncoding::Int8, 1, 3),
        tokens(TokenEncoding::Binary, 2, 5),
        tokens(TokenEncoding::Int8, 3, 1),
    );
    let stored = vectors(&*store)
        .put_token_vectors(
            MODEL,
            vec![
                (x.id(), tx.clone()),
                (y.id(), ty.clone()),
                (z.id(), tz.clone()),
            ],
        )
        .unwrap();
    assert_eq!(stored, 3);
    let unknown = FactId::for_triple("nowhere", "r", "o");
    let read = vectors(&*store)
        .token_vectors(MODEL, &[z.id(), x.id(), unknown, x.id(), y.id(), z.id()])
        .unwrap();
    assert_eq!(
        read,
        [(z.id(), tz.clone()), (x.id(), tx.clone()), (y.id(), ty)]
    );
    // The bytes come back exactly, and so do the values they decode to.
    assert_eq!(read[0].1.as_bytes(), tz.as_bytes());
    assert_eq!(read[1].1.decode(), tx.decode());
    assert_eq!(read[0].1.encoding(), TokenEncoding::Int8);
    assert_eq!(read[2].1.encoding(), TokenEncoding::Binary);
    assert!(
        vectors(&*store)
            .token_vectors(MODEL, &[])
            .unwrap()
            .is_empty()
    );
    assert!(
        vectors(&*store)
            .token_vectors(MODEL, &[unknown])
            .unwrap()
            .is_empty()
    );
}

/// Token vectors of ids the store does not hold are skipped.
pub fn token_vectors_of_ids_the_store_does_not_hold_are_skipped(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, _, _] = three(&*store);
    let unknown = FactId::for_triple("nowhere", "r", "o");
    let stored = vectors(&*store)
        .put_token_vectors(
            MODEL,
            vec![
                (unknown, tokens(TokenEncoding::Int8, 1, 2)),
                (x.id(), tokens(TokenEncoding::Int8, 2, 2)),
            ],
        )
        .unwrap();
    assert_eq!(stored, 1);
    assert_eq!(stats(&*store, MODEL).facts, 1);
    assert!(
        vectors(&*store)
            .token_vectors(MODEL, &[unknown])
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        vectors(&*store)
            .put_token_vectors(MODEL, Vec::new())
            .unwrap(),
        0
    );
}

/// Models are kept apart and a new value replaces the old one.
pub fn models_are_kept_apart_and_a_new_value_replaces_the_old_one(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, _] = three(&*store);
    let (first, second, other) = (
        tokens(TokenEncoding::Int8, 1, 2),
        tokens(TokenEncoding::Binary, 2, 4),
        tokens(TokenEncoding::Int8, 3, 6),
    );
    vectors(&*store)
        .put_token_vectors(MODEL, vec![(x.id(), first.clone())])
        .unwrap();
    assert!(
        vectors(&*store)
            .token_vectors(OTHER, &[x.id()])
            .unwrap()
            .is_empty()
    );
    assert_eq!(stats(&*store, OTHER), TokenVectorStats::default());
    assert_eq!(vectors(&*store).untokenized(OTHER, 10).unwrap().len(), 3);
    vectors(&*store)
        .put_token_vectors(OTHER, vec![(x.id(), other.clone())])
        .unwrap();
    assert_eq!(
        vectors(&*store).token_vectors(MODEL, &[x.id()]).unwrap(),
        [(x.id(), first)]
    );
    // A new value replaces the old one; a repeated id in a call keeps its last value.
    vectors(&*store)
        .put_token_vectors(
            MODEL,
            vec![
                (x.id(), tokens(TokenEncoding::Int8, 9, 1)),
                (y.id(), second.clone()),
                (x.id(), second.clone()),
            ],
        )
        .unwrap();
    assert_eq!(
        vectors(&*store)
            .token_vectors(MODEL, &[x.id(), y.id()])
            .unwrap(),
        [(x.id(), second.clone()), (y.id(), second.clone())]
    );
    assert_eq!(
        stats(&*store, MODEL),
        TokenVectorStats::new(2, 2 * second.as_bytes().len() as u64)
    );
    assert_eq!(
        vectors(&*store)
            .token_vectors(OTHER, &[x.id(), y.id()])
            .unwrap(),
        [(x.id(), other)]
    );
}

/// Token vector stats count facts and their bytes.
pub fn stats_count_facts_and_their_bytes(fixture: &dyn Fixture) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, z] = three(&*store);
    assert_eq!(stats(&*store, MODEL), TokenVectorStats::default());
    assert_eq!(stats(&*store, MODEL).bytes_per_fact(), 0.0);
    let values = [
        (x.id(), tokens(TokenEncoding::Int8, 1, 3)),
        (y.id(), tokens(TokenEncoding::Binary, 2, 7)),
        (z.id(), tokens(TokenEncoding::Int8, 3, 10)),
    ];
    let bytes: u64 = values.iter().map(|(_, t)| t.as_bytes().len() as u64).sum();
    // 5-byte header, then 4 + 8 (int8) or 4 + 1 (binary) bytes a token.
    assert_eq!(bytes, (5 + 3 * 12) + (5 + 7 * 5) + (5 + 10 * 12));
    vectors(&*store)
        .put_token_vectors(MODEL, values.to_vec())
        .unwrap();
    let found = stats(&*store, MODEL);
    assert_eq!(found, TokenVectorStats::new(3, bytes));
    assert!((found.bytes_per_fact() - bytes as f64 / 3.0).abs() < 1e-9);
}

/// `untokenized` lists exactly the valid facts without token vectors, oldest first.
pub fn untokenized_lists_exactly_the_valid_facts_without_token_vectors_oldest_first(
    fixture: &dyn Fixture,
) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let late = fact("d.rs", "modified_by", "late", 2, 30);
    let early = fact("e.rs", "modified_by", "early", 2, -30);
    store.add(vec![late.clone(), early.clone()]).unwrap();
    let [x, y, z] = three(&*store);
    let missing = |limit| ids(&vectors(&*store).untokenized(MODEL, limit).unwrap());
    assert_eq!(missing(10), [early.id(), x.id(), y.id(), z.id(), late.id()]);
    assert_eq!(missing(2), [early.id(), x.id()]);
    assert!(missing(0).is_empty());
    vectors(&*store)
        .put_token_vectors(
            MODEL,
            vec![
                (x.id(), tokens(TokenEncoding::Int8, 1, 1)),
                (y.id(), tokens(TokenEncoding::Int8, 2, 1)),
                (z.id(), tokens(TokenEncoding::Int8, 3, 1)),
            ],
        )
        .unwrap();
    assert_eq!(missing(10), [early.id(), late.id()]);
    // A superseded fact is not listed, its valid successor is; embeddings do not count.
    let successor = fact("a.rs", "modified_by", "x2", 3, 40);
    store.add(vec![successor.clone()]).unwrap();
    vectors(&*store)
        .put_embeddings(MODEL, vec![(early.id(), vec![1.0, 0.0])])
        .unwrap();
    assert_eq!(missing(10), [early.id(), late.id(), successor.id()]);
    vectors(&*store)
        .put_token_vectors(
            MODEL,
            vec![
                (early.id(), tokens(TokenEncoding::Binary, 4, 2)),
                (late.id(), tokens(TokenEncoding::Binary, 5, 2)),
                (successor.id(), tokens(TokenEncoding::Binary, 6, 2)),
            ],
        )
        .unwrap();
    assert!(missing(10).is_empty());
    assert_eq!(vectors(&*store).untokenized(OTHER, 10).unwrap().len(), 5);
}

/// Deleting a fact deletes its token vectors and a superseded fact keeps them.
pub fn deleting_a_fact_deletes_its_token_vectors_and_a_superseded_fact_keeps_them(
    fixture: &dyn Fixture,
) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, _] = three(&*store);
    let (tx, ty) = (
        tokens(TokenEncoding::Int8, 1, 4),
        tokens(TokenEncoding::Int8, 2, 4),
    );
    vectors(&*store)
        .put_token_vectors(MODEL, vec![(x.id(), tx.clone()), (y.id(), ty.clone())])
        .unwrap();
    vectors(&*store)
        .put_token_vectors(OTHER, vec![(x.id(), tx.clone())])
        .unwrap();
    // Superseded: `y` is no longer valid, and keeps its token vectors.
    store
        .add(vec![fact("b.rs", "modified_by", "y2", 1, 10)])
        .unwrap();
    assert_eq!(
        vectors(&*store).token_vectors(MODEL, &[y.id()]).unwrap(),
        [(y.id(), ty.clone())]
    );
    assert_eq!(stats(&*store, MODEL).facts, 2, "kept while invalid");
    // Deleted: its token vectors go under every model.
    store.delete(x.id()).unwrap();
    assert!(
        vectors(&*store)
            .token_vectors(MODEL, &[x.id()])
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        stats(&*store, MODEL),
        TokenVectorStats::new(1, ty.as_bytes().len() as u64)
    );
    assert_eq!(stats(&*store, OTHER), TokenVectorStats::default());
    // Added again, the fact has none.
    store.add(vec![x.clone()]).unwrap();
    assert!(
        vectors(&*store)
            .token_vectors(MODEL, &[x.id()])
            .unwrap()
            .is_empty()
    );
    assert!(ids(&vectors(&*store).untokenized(MODEL, 10).unwrap()).contains(&x.id()));
}

/// History eviction removes the token vectors of the versions it drops.
pub fn history_eviction_removes_the_token_vectors_of_the_versions_it_drops(fixture: &dyn Fixture) {
    let config = StoreConfig::default().with_history_limit(1);
    let Some((store, _)) = store_with(fixture, config) else {
        return;
    };
    let first = fact("src/a.rs", "owner", "first", 9, 0);
    store.add(vec![first.clone()]).unwrap();
    vectors(&*store)
        .put_token_vectors(MODEL, vec![(first.id(), tokens(TokenEncoding::Int8, 1, 2))])
        .unwrap();
    store
        .add(vec![fact("src/a.rs", "owner", "second", 9, 1)])
        .unwrap();
    assert_eq!(stats(&*store, MODEL).facts, 1, "kept as history");
    store
        .add(vec![fact("src/a.rs", "owner", "third", 9, 2)])
        .unwrap();
    assert_eq!(
        store.stored_count().unwrap(),
        2,
        "the oldest version was dropped"
    );
    assert_eq!(stats(&*store, MODEL), TokenVectorStats::default());
}

/// An invalid model identity is refused and nothing of the call is stored.
pub fn an_invalid_model_identity_is_refused_and_nothing_of_the_call_is_stored(
    fixture: &dyn Fixture,
) {
    let Some((store, _)) = store_with(fixture, StoreConfig::default()) else {
        return;
    };
    let [x, y, _] = three(&*store);
    let long_model = "m".repeat(MAX_MODEL_BYTES + 1);
    for model in ["", long_model.as_str()] {
        let err = vectors(&*store)
            .put_token_vectors(
                model,
                vec![
                    (x.id(), tokens(TokenEncoding::Int8, 1, 1)),
                    (y.id(), tokens(TokenEncoding::Int8, 2, 1)),
                ],
            )
            .unwrap_err();
        assert!(
            matches!(err, StoreError::InvalidEmbedding { .. }),
            "{}: {err:?}",
            model.len()
        );
        assert_eq!(err.code(), "invalid_embedding");
        assert_eq!(stats(&*store, model), TokenVectorStats::default());
        assert!(
            vectors(&*store)
                .token_vectors(model, &[x.id(), y.id()])
                .unwrap()
                .is_empty()
        );
    }
    // The exact limit of a model identity is accepted.
    let longest = "m".repeat(MAX_MODEL_BYTES);
    let stored = vectors(&*store)
        .put_token_vectors(
            &longest,
            vec![(x.id(), tokens(TokenEncoding::Binary, 1, 1))],
        )
        .unwrap();
    assert_eq!(stored, 1);
    assert_eq!(stats(&*store, &longest).facts, 1);
}

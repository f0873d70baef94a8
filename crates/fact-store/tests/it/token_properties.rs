//! Property tests of token vectors: random interleavings of puts (under two models),
//! deletes, supersessions and re-adds keep `token_vectors`, `untokenized` and
//! `token_vector_stats` equal to a plain model, for the in-memory store and (with the
//! `sqlite` feature) a SQLite store given the same operations.

use std::sync::Arc;

use fact_model::{FactId, ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{
    FactVectors, InMemorySessionFactStore, SessionFactStore, StoreConfig, TokenEncoding,
    TokenVectorStats, TokenVectors,
};
use proptest::prelude::*;

use crate::t;

const MODELS: [&str; 2] = ["prop/late-a", "prop/late-b"];
const FACTS: usize = 8;

/// Fact `i` (`object` 0 or 1: its two triples of one key, each superseding the other).
fn fact(i: usize, object: usize, secs: i64) -> SessionFact {
    SessionFact::builder(format!("s{i}"), "r", format!("o{object}"))
        .tag(Tag::Decision)
        .source("1", SourceRole::Implementer)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    /// Token vectors for fact `(i, object)` under model `m`: `tokens` tokens, `seed`.
    Put {
        i: usize,
        object: usize,
        m: usize,
        tokens: usize,
        seed: u8,
        binary: bool,
    },
    /// Deletes every version of `(i, object)`.
    Delete(usize, usize),
    /// Adds `(i, object)` (superseding the other object of key `i`).
    Add(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..FACTS, 0..2usize, 0..2usize, 1..5usize, any::<u8>(), any::<bool>()).prop_map(
            |(i, object, m, tokens, seed, binary)| Op::Put { i, object, m, tokens, seed, binary }
        ),
        1 => (0..FACTS, 0..2usize).prop_map(|(i, o)| Op::Delete(i, o)),
        2 => (0..FACTS, 0..2usize).prop_map(|(i, o)| Op::Add(i, o)),
    ]
}

fn encode(tokens: usize, seed: u8, binary: bool) -> TokenVectors {
    let values: Vec<f32> = (0..tokens * 4)
        .map(|i| f32::from((seed as usize + i * 5) as u8 % 7) - 3.5)
        .collect();
    let encoding = if binary {
        TokenEncoding::Binary
    } else {
        TokenEncoding::Int8
    };
    TokenVectors::encode(encoding, 4, &values).unwrap()
}

/// What the model knows of triple `(i, object)`.
#[derive(Debug, Clone, Default)]
struct Entry {
    held: bool,
    valid: bool,
    secs: i64,
    tokens: [Option<TokenVectors>; 2],
}

/// The stores under test.
fn stores() -> Vec<Box<dyn SessionFactStore>> {
    let clock = Arc::new(ManualClock::new(t(0)));
    #[allow(unused_mut)]
    let mut stores: Vec<Box<dyn SessionFactStore>> = vec![Box::new(InMemorySessionFactStore::new(
        StoreConfig::default(),
        clock.clone(),
    ))];
    #[cfg(feature = "sqlite")]
    stores.push(Box::new(
        fact_store::SqliteFactStore::open_in_memory("s", StoreConfig::default(), clock).unwrap(),
    ));
    stores
}

fn vectors(store: &dyn SessionFactStore) -> &dyn FactVectors {
    store.vectors().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn token_vectors_follow_their_facts(ops in prop::collection::vec(op(), 1..40)) {
        let stores = stores();
        let mut model = vec![Entry::default(); FACTS * 2];
        let all: Vec<FactId> = (0..FACTS * 2).map(|k| fact(k / 2, k % 2, 0).id()).collect();
        for (step, op) in ops.into_iter().enumerate() {
            let secs = i64::try_from(step).unwrap() + 1;
            match op {
                Op::Put { i, object, m, tokens, seed, binary } => {
                    let value = encode(tokens, seed, binary);
                    let k = i * 2 + object;
                    for store in &stores {
                        let stored = vectors(&**store)
                            .put_token_vectors(MODELS[m], vec![(all[k], value.clone())])
                            .unwrap();
                        prop_assert_eq!(stored, usize::from(model[k].held));
                    }
                    if model[k].held {
                        model[k].tokens[m] = Some(value);
                    }
                }
                Op::Delete(i, object) => {
                    let k = i * 2 + object;
                    for store in &stores {
                        prop_assert_eq!(store.delete(all[k]).is_ok(), model[k].held);
                    }
                    model[k] = Entry::default();
                }
                Op::Add(i, object) => {
                    let k = i * 2 + object;
                    for store in &stores {
                        store.add(vec![fact(i, object, secs)]).unwrap();
                    }
                    let other = i * 2 + (1 - object);
                    model[other].valid = false;
                    if !(model[k].held && model[k].valid) {
                        model[k].secs = secs;
                    }
                    model[k].held = true;
                    model[k].valid = true;
                }
            }
            for store in &stores {
                for (m, name) in MODELS.iter().enumerate() {
                    // Asked in reverse, with a repeat: the answer keeps that order, once each.
                    let mut asked: Vec<FactId> = all.iter().rev().copied().collect();
                    asked.push(all[0]);
                    let expected: Vec<(FactId, TokenVectors)> = asked
                        .iter()
                        .take(all.len())
                        .filter_map(|id| {
                            let k = all.iter().position(|a| a == id)?;
                            Some((*id, model[k].tokens[m].clone()?))
                        })
                        .collect();
                    let found = vectors(&**store).token_vectors(name, &asked).unwrap();
                    prop_assert_eq!(&found, &expected);
                    let bytes = expected.iter().map(|(_, t)| t.as_bytes().len() as u64).sum();
                    prop_assert_eq!(
                        vectors(&**store).token_vector_stats(name).unwrap(),
                        TokenVectorStats::new(expected.len(), bytes)
                    );
                    let mut missing: Vec<(i64, FactId)> = model
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| e.held && e.valid && e.tokens[m].is_none())
                        .map(|(k, e)| (e.secs, all[k]))
                        .collect();
                    missing.sort();
                    let listed: Vec<FactId> = vectors(&**store)
                        .untokenized(name, FACTS * 2)
                        .unwrap()
                        .iter()
                        .map(SessionFact::id)
                        .collect();
                    // Oldest first, then by id.
                    let wanted: Vec<FactId> = missing.into_iter().map(|(_, id)| id).collect();
                    prop_assert_eq!(listed, wanted);
                }
            }
        }
    }
}

//! The property test of token vectors: random interleavings of puts (under two models),
//! deletes, supersessions and re-adds keep `token_vectors`, `untokenized` and
//! `token_vector_stats` equal to a plain model, on whatever store a backend's test gives
//! ([`token_vectors_follow_their_facts`], with ops from [`token_op`]).

use crate::{FactVectors, SessionFactStore, TokenEncoding, TokenVectorStats, TokenVectors};
use fact_model::{FactId, SessionFact, SourceRole, Tag};
use proptest::prelude::*;

use super::fixture::t;

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

/// One step of the token-vector property test.
#[derive(Debug, Clone)]
pub enum TokenOp {
    /// Token vectors for fact `(i, object)` under model `m`: `tokens` tokens, `seed`.
    Put {
        /// The key (fact subject `s{i}`).
        i: usize,
        /// Which of the key's two objects.
        object: usize,
        /// Which of the two models.
        m: usize,
        /// How many tokens.
        tokens: usize,
        /// What the values are made from.
        seed: u8,
        /// Binary codes rather than int8.
        binary: bool,
    },
    /// Deletes every version of `(i, object)`.
    Delete(usize, usize),
    /// Adds `(i, object)` (superseding the other object of key `i`).
    Add(usize, usize),
}

/// A random [`TokenOp`].
pub fn token_op() -> impl Strategy<Value = TokenOp> {
    prop_oneof![
        4 => (0..FACTS, 0..2usize, 0..2usize, 1..5usize, any::<u8>(), any::<bool>()).prop_map(
            |(i, object, m, tokens, seed, binary)| TokenOp::Put { i, object, m, tokens, seed, binary }
        ),
        1 => (0..FACTS, 0..2usize).prop_map(|(i, o)| TokenOp::Delete(i, o)),
        2 => (0..FACTS, 0..2usize).prop_map(|(i, o)| TokenOp::Add(i, o)),
    ]
}

/// The token vectors of `tokens` tokens made from `seed`, binary or int8.
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

/// The store's vectors (every store of this workspace has them).
fn vectors(store: &dyn SessionFactStore) -> &dyn FactVectors {
    store.vectors().unwrap()
}

/// Applies `ops` to each of `stores` (empty stores, sharing one clock's time) and checks
/// after every step that their token vectors, `untokenized` and `token_vector_stats` equal
/// a plain model's.
///
/// # Errors
///
/// The first disagreement, as a proptest failure.
pub fn token_vectors_follow_their_facts(
    stores: &[Box<dyn SessionFactStore>],
    ops: Vec<TokenOp>,
) -> Result<(), TestCaseError> {
    let mut model = vec![Entry::default(); FACTS * 2];
    let all: Vec<FactId> = (0..FACTS * 2).map(|k| fact(k / 2, k % 2, 0).id()).collect();
    for (step, op) in ops.into_iter().enumerate() {
        let secs = i64::try_from(step).unwrap() + 1;
        match op {
            TokenOp::Put {
                i,
                object,
                m,
                tokens,
                seed,
                binary,
            } => {
                let value = encode(tokens, seed, binary);
                let k = i * 2 + object;
                for store in stores {
                    let stored = vectors(&**store)
                        .put_token_vectors(MODELS[m], vec![(all[k], value.clone())])
                        .unwrap();
                    prop_assert_eq!(stored, usize::from(model[k].held));
                }
                if model[k].held {
                    model[k].tokens[m] = Some(value);
                }
            }
            TokenOp::Delete(i, object) => {
                let k = i * 2 + object;
                for store in stores {
                    prop_assert_eq!(store.delete(all[k]).is_ok(), model[k].held);
                }
                model[k] = Entry::default();
            }
            TokenOp::Add(i, object) => {
                let k = i * 2 + object;
                for store in stores {
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
        for store in stores {
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
                let bytes = expected
                    .iter()
                    .map(|(_, t)| t.as_bytes().len() as u64)
                    .sum();
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
    Ok(())
}

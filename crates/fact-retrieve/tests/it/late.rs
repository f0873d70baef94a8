//! Late interaction (`LateInteraction`): MaxSim re-scores what pooled vectors rank wrong,
//! token vectors follow their facts and their model, and a model without token vectors is
//! a typed error, never a panic or an empty answer.

use std::sync::Arc;

use fact_model::{SessionFact, SourceRole, Tag};
use fact_retrieve::{
    EmbedError, Embedder, FactQuery, FactRetriever, HybridError, HybridRetriever, LateInteraction,
    TokenEmbedding,
};
use fact_store::{SessionFactStore, TokenEncoding, TokenVectors};

use crate::hybrid::Concepts;
use crate::{store, t};

/// Words by meaning, as [`Concepts`] groups them; every other word is the last axis.
const GROUPS: [&[&str]; 3] = [
    &["dog", "pet", "puppy"],
    &["paint", "canvas", "art"],
    &["run", "race", "marathon"],
];
const DIMENSION: usize = GROUPS.len() + 1;

/// A token model: one vector per word (its group's axis, or the last), pooled by the mean;
/// `ann` and `said` are no tokens.
#[derive(Debug)]
struct Words {
    model: &'static str,
}

/// `1` on the word's axis, `-0.3` on the others: signs that binary codes keep.
fn word_vector(word: &str) -> Vec<f32> {
    let mut vector = vec![-0.3; DIMENSION];
    let axis = GROUPS
        .iter()
        .position(|group| group.contains(&word))
        .unwrap_or(GROUPS.len());
    vector[axis] = 1.0;
    vector
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

impl Words {
    fn tokens(text: &str) -> Vec<Vec<f32>> {
        // The subject and relation every fact's text starts with carry nothing here.
        text.split_whitespace()
            .filter(|w| w.chars().any(char::is_alphanumeric) && !["ann", "said"].contains(w))
            .map(|w| word_vector(&w.to_lowercase()))
            .collect()
    }
}

impl Embedder for Words {
    fn model(&self) -> &str {
        self.model
    }
    fn dimension(&self) -> usize {
        DIMENSION
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self
            .embed_tokens(texts)?
            .into_iter()
            .map(|item| item.vector)
            .collect())
    }
    fn embed_tokens(&self, texts: &[&str]) -> Result<Vec<TokenEmbedding>, EmbedError> {
        texts
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let tokens = Words::tokens(text);
                if tokens.is_empty() {
                    return Err(EmbedError::NoTokens { index });
                }
                let mut mean = vec![0.0; DIMENSION];
                for token in &tokens {
                    mean.iter_mut().zip(token).for_each(|(m, x)| *m += x);
                }
                Ok(TokenEmbedding::new(unit(mean), tokens.concat()))
            })
            .collect()
    }
}

fn said(text: &str, secs: i64) -> SessionFact {
    SessionFact::builder("ann", "said", text)
        .statement(text)
        .tag(Tag::Observation)
        .source("chat", SourceRole::User)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

/// `A`: all about dogs; `B`: a dog, a marathon and much painting.
fn two_facts() -> [SessionFact; 2] {
    [
        said("dog dog dog dog dog", 1),
        said("dog marathon canvas canvas canvas canvas", 2),
    ]
}

fn retriever(store: &Arc<dyn SessionFactStore>, late: Option<LateInteraction>) -> HybridRetriever {
    // Every fact a vector candidate: the toy's cosines go below 0.
    let retriever = HybridRetriever::new(store.clone(), Arc::new(Words { model: "words-v1" }))
        .unwrap()
        .with_min_similarity(-1.0);
    match late {
        Some(late) => retriever.with_late_interaction(late),
        None => retriever,
    }
}

fn first(retriever: &HybridRetriever, query: &str) -> String {
    let found = retriever.rank(&FactQuery::new("q", query)).unwrap();
    found[0].fact.object().to_owned()
}

#[test]
fn maxsim_finds_the_fact_that_matches_every_query_token() {
    let store = store();
    let facts = two_facts();
    store.add(facts.to_vec()).unwrap();
    let late = LateInteraction::default().with_weight(0.9);
    let with = retriever(&store, Some(late));
    assert_eq!(with.embed_facts(&facts).unwrap(), 2);
    // `pet race`: pooled, A (all dog) is nearer; token by token, B has a pet and a race.
    let without = retriever(&store, None);
    assert_eq!(first(&without, "pet race"), facts[0].object());
    assert_eq!(first(&with, "pet race"), facts[1].object());
    // Both encodings keep that order.
    let int8 = retriever(&store, Some(late.with_encoding(TokenEncoding::Int8)));
    int8.embed_facts(&facts).unwrap();
    assert_eq!(first(&int8, "pet race"), facts[1].object());
}

#[test]
fn token_vectors_are_deleted_with_their_fact_and_kept_per_model() {
    let store = store();
    let facts = two_facts();
    store.add(facts.to_vec()).unwrap();
    let vectors = store.vectors().unwrap();
    let late = retriever(&store, Some(LateInteraction::default()));
    late.embed_facts(&facts).unwrap();
    let stats = vectors.token_vector_stats("words-v1").unwrap();
    assert_eq!(stats.facts, 2);
    // A: 5 tokens; B: 6 tokens; binary codes of 4 dimensions: 4 + 1 bytes a token.
    assert_eq!(stats.bytes, (5 + 5 * 5) + (5 + 6 * 5));
    store.delete(facts[0].id()).unwrap();
    assert_eq!(vectors.token_vector_stats("words-v1").unwrap().facts, 1);
    assert!(
        vectors
            .token_vectors("words-v1", &[facts[0].id()])
            .unwrap()
            .is_empty()
    );

    // Another model's token vectors are ignored: the facts are listed to embed again.
    let other = TokenVectors::encode(TokenEncoding::Int8, 2, &[1.0, 0.0]).unwrap();
    let fresh = said("paint the canvas", 3);
    store.add(vec![fresh.clone()]).unwrap();
    // Embedded without late interaction first: an embedding, no token vectors.
    assert_eq!(
        retriever(&store, None)
            .embed_facts(std::slice::from_ref(&fresh))
            .unwrap(),
        1
    );
    vectors
        .put_token_vectors("words-v0", vec![(fresh.id(), other)])
        .unwrap();
    let missing = vectors.untokenized("words-v1", 10).unwrap();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].id(), fresh.id());
    assert_eq!(vectors.unembedded("words-v1", 10).unwrap(), []);
    assert_eq!(late.embed_missing().unwrap(), 1, "its token vectors");
    assert!(vectors.untokenized("words-v1", 10).unwrap().is_empty());
    assert_eq!(vectors.token_vector_stats("words-v1").unwrap().facts, 2);
}

#[test]
fn a_model_without_token_vectors_is_a_typed_error_and_search_still_answers() {
    let store = store();
    let facts = [said("I adopted a puppy named Oscar", 1)];
    store.add(facts.to_vec()).unwrap();
    let retriever = HybridRetriever::new(store.clone(), Arc::new(Concepts::default()))
        .unwrap()
        .with_late_interaction(LateInteraction::default());
    let error = retriever.embed_facts(&facts).unwrap_err();
    assert!(matches!(
        error,
        HybridError::Embed(EmbedError::Unsupported { .. })
    ));
    assert_eq!(error.code(), "unsupported");
    // Neighbour context needs token vectors too.
    let episode = retriever.with_neighbour_context(1);
    assert_eq!(
        episode.embed_episodes(&[&facts]).unwrap_err().code(),
        "unsupported"
    );
    // The query side fails the same way: retrieval answers by the words.
    let found = episode
        .retrieve(&FactQuery::new("q", "puppy Oscar"))
        .unwrap();
    assert_eq!(found.facts.len(), 1);
}

#[test]
fn a_fact_with_no_tokens_is_a_typed_error_and_nothing_of_its_batch_is_half_stored() {
    let store = store();
    // `Words` finds no token in a statement of punctuation only.
    let facts = [said("dog", 1), said("?! …", 2)];
    store.add(facts.to_vec()).unwrap();
    let late = retriever(&store, Some(LateInteraction::default()));
    let error = late.embed_facts(&facts).unwrap_err();
    assert!(matches!(
        error,
        HybridError::Embed(EmbedError::NoTokens { index: 1 })
    ));
    let vectors = store.vectors().unwrap();
    assert_eq!(vectors.embedded_count("words-v1").unwrap(), 0);
    assert_eq!(vectors.token_vector_stats("words-v1").unwrap().facts, 0);
}

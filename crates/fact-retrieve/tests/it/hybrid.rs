//! `HybridRetriever`: the vector side finds what the words miss, fusion ranks both lists,
//! and the lexical pipeline's rules (tags, self-exclusion, budget) hold on both sides.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fact_model::{CharsPerToken, SessionFact, SourceRole, Tag, TokenCounter};
use fact_retrieve::{
    EmbedError, Embedder, FactQuery, FactRetriever, Fusion, HybridError, HybridRetriever,
    IndexRetriever, RecallQuery,
};
use fact_store::{InMemoryEpisodeStore, SessionFactStore};
use proptest::prelude::*;

use crate::{store, t};

/// Words grouped by meaning: a text's vector counts the groups its words belong to, so two
/// texts with no word in common are near when they talk about the same things.
const CONCEPTS: [&[&str]; 6] = [
    &["dog", "puppy", "pet", "cat", "oscar", "adopted", "animal"],
    &["paint", "painting", "sunrise", "art", "canvas", "pottery"],
    &["run", "marathon", "race", "running", "charity"],
    &[
        "lgbtq",
        "support",
        "group",
        "meeting",
        "community",
        "transgender",
    ],
    &["job", "career", "counseling", "work", "mentor"],
    &["camping", "beach", "trip", "travel", "mountains"],
];

/// A deterministic toy model over [`CONCEPTS`], plus one dimension every text has a little
/// of, so no vector is zero.
#[derive(Debug, Default)]
pub(crate) struct Concepts {
    /// When set, every call fails.
    pub(crate) broken: AtomicBool,
}

impl Embedder for Concepts {
    fn model(&self) -> &str {
        "concepts-v1"
    }

    fn dimension(&self) -> usize {
        CONCEPTS.len() + 1
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.broken.load(Ordering::Relaxed) {
            return Err(EmbedError::Inference {
                message: "broken on purpose".into(),
            });
        }
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0f32; CONCEPTS.len() + 1];
                vector[CONCEPTS.len()] = 0.1;
                for word in text
                    .split(|c: char| !c.is_alphanumeric())
                    .map(str::to_lowercase)
                {
                    for (axis, words) in CONCEPTS.iter().enumerate() {
                        if words.contains(&word.as_str()) {
                            vector[axis] += 1.0;
                        }
                    }
                }
                let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
                vector.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

fn said(speaker: &str, text: &str, secs: i64) -> SessionFact {
    SessionFact::builder(speaker, "said", text)
        .tag(Tag::Observation)
        .source("chat", SourceRole::User)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

/// A store with the facts, embedded, and a hybrid retriever over it.
fn hybrid(facts: &[SessionFact], fusion: Fusion) -> (Arc<dyn SessionFactStore>, HybridRetriever) {
    let store = store();
    store.add(facts.to_vec()).unwrap();
    let retriever = HybridRetriever::new(store.clone(), Arc::new(Concepts::default()))
        .unwrap()
        .with_fusion(fusion);
    assert_eq!(retriever.embed_facts(facts).unwrap(), facts.len());
    (store, retriever)
}

fn objects(facts: &[fact_retrieve::RetrievedFact]) -> Vec<&str> {
    facts.iter().map(|f| f.fact.object()).collect()
}

fn corpus() -> Vec<SessionFact> {
    vec![
        said("Melanie", "I adopted a puppy named Oscar", 1),
        said("Caroline", "I went to an LGBTQ support group meeting", 2),
        said("Melanie", "I painted a sunrise over the lake", 3),
        said("Caroline", "I am looking into counseling as a career", 4),
        said("Melanie", "We went camping at the beach", 5),
    ]
}

#[test]
fn finds_by_meaning_what_shares_no_word_with_the_query() {
    let (store, retriever) = hybrid(&corpus(), Fusion::default());
    let query = FactQuery::new("q", "Which animal does she own?");
    assert!(
        IndexRetriever::new(store)
            .retrieve(&query)
            .unwrap()
            .facts
            .is_empty()
    );
    let found = retriever.retrieve(&query).unwrap();
    assert_eq!(
        objects(&found.facts).first(),
        Some(&"I adopted a puppy named Oscar")
    );
}

#[test]
fn a_fact_without_an_embedding_is_still_found_by_its_words() {
    let store = store();
    store.add(corpus()).unwrap();
    let retriever = HybridRetriever::new(store, Arc::new(Concepts::default())).unwrap();
    let found = retriever
        .rank(&FactQuery::new("q", "Tell me about the sunrise painting"))
        .unwrap();
    assert_eq!(
        objects(&found),
        ["I painted a sunrise over the lake"],
        "only the lexical side can answer before embedding"
    );
}

#[test]
fn embed_missing_embeds_every_valid_fact_once() {
    let store = store();
    store.add(corpus()).unwrap();
    let retriever = HybridRetriever::new(store.clone(), Arc::new(Concepts::default())).unwrap();
    assert_eq!(retriever.embed_missing().unwrap(), 5);
    assert_eq!(retriever.embed_missing().unwrap(), 0);
    let vectors = store.vectors().unwrap();
    assert_eq!(vectors.embedded_count("concepts-v1").unwrap(), 5);
    assert!(vectors.unembedded("concepts-v1", 10).unwrap().is_empty());
}

#[test]
fn rrf_ranks_a_fact_both_lists_hold_above_facts_of_one() {
    let facts = vec![
        // Lexical hit and vector hit.
        said("Caroline", "the support group meeting helped", 1),
        // Vector hit only (same concepts, other words).
        said("Caroline", "LGBTQ community evenings", 2),
        // Lexical hit only (the word, no concept).
        said("Melanie", "a meeting at the bank about loans", 3),
    ];
    let (_, retriever) = hybrid(&facts, Fusion::Rrf { k: 60.0 });
    let found = retriever
        .rank(&FactQuery::new("q", "support group meeting"))
        .unwrap();
    assert_eq!(
        objects(&found).first(),
        Some(&"the support group meeting helped")
    );
    assert_eq!(found.len(), 3);
    assert!(found.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn the_vector_weight_moves_the_ranking_from_words_to_meaning() {
    let facts = vec![
        said("Melanie", "she said pet once, on a trip to the beach", 1),
        said("Melanie", "I adopted a puppy, a dog, an animal", 2),
    ];
    let query = FactQuery::new("q", "pet");
    let (_, words) = hybrid(&facts, Fusion::Weighted { vector_weight: 0.0 });
    assert_eq!(
        objects(&words.rank(&query).unwrap()),
        ["she said pet once, on a trip to the beach"],
        "at weight 0 only the lexical list scores"
    );
    let (_, meaning) = hybrid(&facts, Fusion::Weighted { vector_weight: 1.0 });
    assert_eq!(
        objects(&meaning.rank(&query).unwrap()).first(),
        Some(&"I adopted a puppy, a dog, an animal")
    );
}

#[test]
fn tags_and_self_exclusion_hold_on_the_vector_side() {
    let own = SessionFact::builder("Melanie", "adopted", "a puppy")
        .tag(Tag::Decision)
        .source("7", SourceRole::Implementer)
        .valid_from(t(1))
        .build()
        .unwrap();
    let other = said("Caroline", "my dog is an animal I love", 2);
    let (_, retriever) = hybrid(&[own, other], Fusion::default());
    let query = FactQuery::new("7", "pet");
    assert_eq!(
        objects(&retriever.rank(&query).unwrap()),
        ["my dog is an animal I love"],
        "task 7's own fact is left out"
    );
    let query = FactQuery::new("8", "pet").with_tags(vec![Tag::Decision]);
    assert_eq!(objects(&retriever.rank(&query).unwrap()), ["a puppy"]);
}

#[test]
fn a_query_as_of_an_instant_is_lexical() {
    let (_, retriever) = hybrid(&corpus(), Fusion::default());
    let query = FactQuery::new("q", "Which animal does she own?").with_as_of(t(10));
    assert!(retriever.rank(&query).unwrap().is_empty());
}

#[test]
fn min_similarity_drops_weak_vector_candidates() {
    let (_, retriever) = hybrid(&corpus(), Fusion::default());
    let retriever = retriever.with_min_similarity(0.9);
    let found = retriever
        .rank(&FactQuery::new("q", "Which animal does she own?"))
        .unwrap();
    assert_eq!(objects(&found), ["I adopted a puppy named Oscar"]);
}

#[test]
fn a_failing_model_is_an_error_from_rank_and_lexical_from_retrieve() {
    let store = store();
    store.add(corpus()).unwrap();
    let model = Arc::new(Concepts::default());
    let retriever = HybridRetriever::new(store, model.clone()).unwrap();
    model.broken.store(true, Ordering::Relaxed);
    let query = FactQuery::new("q", "the sunrise painting");
    let error = retriever.rank(&query).unwrap_err();
    assert!(matches!(error, HybridError::Embed(_)), "{error:?}");
    assert_eq!(error.code(), "inference");
    assert!(matches!(
        retriever.embed_missing(),
        Err(HybridError::Embed(_))
    ));
    assert_eq!(
        objects(&retriever.retrieve(&query).unwrap().facts),
        ["I painted a sunrise over the lake"]
    );
}

#[test]
fn recall_renders_the_hybrid_ranking() {
    let (_, retriever) = hybrid(&corpus(), Fusion::default());
    let counter = CharsPerToken::default();
    let found = retriever
        .recall(
            &InMemoryEpisodeStore::default(),
            &RecallQuery::new("Which animal does she own?"),
            &counter,
        )
        .unwrap();
    assert!(
        found
            .text
            .starts_with("## Relevant Facts\n- [observation] Melanie said I adopted a puppy"),
        "{}",
        found.text
    );
    assert_eq!(found.tokens, counter.count(&found.text));
}

#[test]
fn recall_expands_the_hybrid_ranking_too() {
    let (_, retriever) = hybrid(&corpus(), Fusion::default());
    let counter = CharsPerToken::default();
    let query = RecallQuery::new("Which animal does she own?").with_limit(1);
    let plain = retriever
        .recall(&InMemoryEpisodeStore::default(), &query, &counter)
        .unwrap();
    assert!(plain.expanded.is_empty());
    let found = retriever
        .recall(
            &InMemoryEpisodeStore::default(),
            &query.with_expand(1),
            &counter,
        )
        .unwrap();
    // The best fact is Melanie's puppy; her other facts are its neighbours (one, the
    // limit), Caroline's are not.
    assert_eq!(found.facts[0].fact.subject(), "Melanie");
    assert_eq!(found.expanded.len(), 1);
    assert_eq!(found.expanded[0].fact.subject(), "Melanie");
    assert_eq!(found.expanded[0].via, found.facts[0].fact.id());
    assert!(found.text.contains(found.expanded[0].fact.object()));
}

fn texts() -> impl Strategy<Value = String> {
    let words: Vec<&str> = CONCEPTS.iter().flat_map(|w| w.iter().copied()).collect();
    let mut pool = words;
    pool.extend(["the", "a", "bank", "lake", "blue", "today"]);
    prop::collection::vec(prop::sample::select(pool), 1..6).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the facts and the query: only valid facts passing the filters come back,
    /// at most `max_facts`, best first with scores above zero, and the section fits.
    #[test]
    fn the_pipeline_rules_hold(
        facts in prop::collection::vec((texts(), 0usize..3, 0u8..3), 1..30),
        query in texts(),
        rrf in any::<bool>(),
        max_facts in 0usize..8,
        max_tokens in 0usize..200,
        tag_filter in any::<bool>(),
    ) {
        let tags = [Tag::Observation, Tag::Decision, Tag::Preference];
        let facts: Vec<SessionFact> = facts
            .into_iter()
            .enumerate()
            .map(|(i, (text, task, tag))| {
                SessionFact::builder(format!("s{i}"), "said", text)
                    .tag(tags[usize::from(tag)])
                    .source(task.to_string(), SourceRole::User)
                    .valid_from(t(i as i64))
                    .build()
                    .unwrap()
            })
            .collect();
        let store = store();
        store.add(facts.clone()).unwrap();
        let fusion = if rrf { Fusion::Rrf { k: 60.0 } } else { Fusion::default() };
        let retriever = HybridRetriever::new(store.clone(), Arc::new(Concepts::default()))
            .unwrap()
            .with_fusion(fusion);
        retriever.embed_missing().unwrap();
        let mut query = FactQuery::new("0", query)
            .with_max_facts(max_facts)
            .with_max_tokens(max_tokens);
        query.tags = tag_filter.then(|| vec![Tag::Decision]);
        let found = retriever.retrieve(&query).unwrap();
        prop_assert!(found.facts.len() <= max_facts);
        prop_assert!(found.tokens_used <= max_tokens);
        prop_assert_eq!(found.tokens_used, CharsPerToken::default().count(&found.section));
        for pair in found.facts.windows(2) {
            prop_assert!(pair[0].score >= pair[1].score);
        }
        for hit in &found.facts {
            prop_assert!(hit.score > 0.0);
            prop_assert!(hit.fact.is_valid());
            prop_assert_ne!(hit.fact.source_task_id(), "0");
            if tag_filter {
                prop_assert!(hit.fact.tags().contains_any(&[Tag::Decision]));
            }
        }
    }
}

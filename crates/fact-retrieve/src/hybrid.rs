//! [`HybridRetriever`]: BM25 candidates and nearest-embedding candidates, fused.

use std::collections::HashMap;
use std::sync::Arc;

use fact_model::{CharsPerToken, FactId, SessionFact, TokenCounter};
use fact_store::{
    EpisodeStore, FactVectors, Recency, ScoredFact, SessionFactStore, StoreError, TermWeighting,
};

use crate::dedup::fold_same_points;
use crate::expand::expand;
use crate::late::{LateInteraction, encode_tokens};
use crate::recall::{related_episodes, render};
use crate::retriever::within_budget;
use crate::{
    Bm25, EmbedError, Embedder, FactQuery, FactRetriever, Recall, RecallQuery, Retrieval,
    RetrievedFact, TokenEmbedding, embedding_text, query_text,
};

/// How the lexical and the vector candidate lists become one ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal-rank fusion: a fact scores `Σ 1 / (k + rank)` over the lists it is in
    /// (rank from 1). Needs no score scale; `k` damps the head of each list (60 in the
    /// original paper).
    Rrf {
        /// The rank offset, at least 0.
        k: f64,
    },
    /// Weighted score fusion: each list's scores are scaled to `0..=1` by its best score
    /// (BM25) or min–max over its candidates (cosine), and a fact scores
    /// `(1 − vector_weight) × lexical + vector_weight × vector` (0 for a list it is not in).
    Weighted {
        /// The weight of the vector side, in `0..=1`.
        vector_weight: f64,
    },
}

impl Default for Fusion {
    /// Weighted score fusion at the weight tuned on LoCoMo conversations 0–4
    /// (`docs/benchmarks.md`).
    fn default() -> Self {
        Fusion::Weighted {
            vector_weight: DEFAULT_VECTOR_WEIGHT,
        }
    }
}

/// The vector weight of [`Fusion::default`], tuned on LoCoMo conversations 0–4
/// (observations; 0.3 to 0.7 tried, and reciprocal-rank fusion).
pub const DEFAULT_VECTOR_WEIGHT: f64 = 0.5;
/// How many candidates each side contributes by default: tuned with the vector weight on
/// LoCoMo conversations 0–4 (20, 50, 100, 200 and all tried; `docs/benchmarks.md`).
pub const DEFAULT_CANDIDATES: usize = 100;
/// How many neighbouring turns on either side [`HybridRetriever::embed_episodes`] reads
/// a turn with by default: of 0, 1 and 2, the best on LoCoMo conversations 0–4 that
/// ingests at least 200 turns a second on two cores (2 gains 0.004 on 0–4 and ingests a
/// third slower; `docs/benchmarks.md`).
pub const DEFAULT_NEIGHBOUR_CONTEXT: usize = 1;
/// How many texts [`HybridRetriever::embed_facts`] sends to the model at once (the model
/// batches them further; a large call lets it group texts of similar length).
const EMBED_BATCH: usize = 256;

/// Why a [`HybridRetriever`] cannot be made or cannot embed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HybridError {
    /// The store keeps no embeddings ([`SessionFactStore::vectors`] is `None`).
    #[error("this fact store keeps no embeddings, so it cannot serve hybrid retrieval")]
    NoVectors,
    /// The model failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The store failed: to keep the embeddings, or to read facts, embeddings or
    /// episodes.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HybridError {
    /// A short, stable code: `no_vectors`, the [`EmbedError::code`] or the
    /// [`StoreError::code`].
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            HybridError::NoVectors => "no_vectors",
            HybridError::Embed(error) => error.code(),
            HybridError::Store(error) => error.code(),
        }
    }
}

/// A [`FactRetriever`] that finds facts by their words and by their meaning.
///
/// The pipeline is [`IndexRetriever`](crate::IndexRetriever)'s with a second candidate
/// list:
///
/// 1. The description is cut as [`query_text`] cuts it. The store's BM25 search (the
///    retriever's [`TermWeighting`]) gives the lexical candidates; the [`Embedder`] embeds
///    the same text and the store's [`FactVectors::nearest`] gives the vector candidates
///    whose cosine similarity is at least the minimum similarity (default 0). Each list
///    holds at most `max(candidates, 2 × max_facts)` facts, valid now, after the tag filter
///    and without the querying task's own facts. A query `as_of` an instant has no vector
///    side: embeddings are searched over the valid facts only.
/// 2. The two lists are fused ([`Fusion`]); a fact in neither scores nothing and is not
///    returned. Ties go to the newer fact, then the smaller id.
/// 3. With [`with_late_interaction`](Self::with_late_interaction), the best fused
///    candidates are re-scored by MaxSim over their stored token vectors and fused again
///    ([`LateInteraction`]); the question's vector and token vectors come from one run of
///    the model.
/// 4. One point, one fact, at most `max_facts`, and the token budget on the rendered
///    `[Session Context]` section, exactly as `IndexRetriever` does.
///
/// Turns of a conversation are embedded with [`embed_episodes`](Self::embed_episodes),
/// each read with its neighbouring turns
/// ([`with_neighbour_context`](Self::with_neighbour_context)).
///
/// Facts are found by meaning only once they have embeddings by this retriever's model:
/// [`embed_facts`](Self::embed_facts) after each add (batched), or
/// [`embed_missing`](Self::embed_missing) to catch up. A fact without one is still found
/// by its words.
///
/// ```
/// use std::sync::Arc;
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// use fact_retrieve::{EmbedError, Embedder, FactQuery, FactRetriever, HybridRetriever};
/// use fact_store::{InMemorySessionFactStore, SessionFactStore};
///
/// /// A toy model that knows two topics.
/// #[derive(Debug)]
/// struct Topics;
/// impl Embedder for Topics {
///     fn model(&self) -> &str { "topics-v1" }
///     fn dimension(&self) -> usize { 2 }
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|t| {
///             let pets = ["dog", "puppy", "pet"].iter().any(|w| t.contains(w));
///             if pets { vec![1.0, 0.0] } else { vec![0.0, 1.0] }
///         }).collect())
///     }
/// }
///
/// let store = Arc::new(InMemorySessionFactStore::default());
/// let fact = SessionFact::builder("Melanie", "adopted", "a puppy named Oscar")
///     .tag(Tag::Observation).source("chat-1", SourceRole::User)
///     .valid_from(Timestamp::UNIX_EPOCH).build()?;
/// store.add(vec![fact.clone()])?;
/// let retriever = HybridRetriever::new(store, Arc::new(Topics))?;
/// retriever.embed_facts(&[fact])?;
///
/// // No word in common, found by meaning.
/// let found = retriever.retrieve(&FactQuery::new("q", "Which pet does she have?"))?;
/// assert_eq!(found.facts.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct HybridRetriever {
    store: Arc<dyn SessionFactStore>,
    embedder: Arc<dyn Embedder>,
    fusion: Fusion,
    weighting: Box<dyn TermWeighting>,
    counter: Arc<dyn TokenCounter>,
    candidates: usize,
    min_similarity: f64,
    late: Option<LateInteraction>,
    neighbours: usize,
}

impl HybridRetriever {
    /// A retriever over `store` with `embedder`, [`Fusion::default`], BM25 and the
    /// chars-per-token counter.
    ///
    /// # Errors
    ///
    /// [`HybridError::NoVectors`] when the store keeps no embeddings.
    pub fn new(
        store: Arc<dyn SessionFactStore>,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, HybridError> {
        if store.vectors().is_none() {
            return Err(HybridError::NoVectors);
        }
        Ok(HybridRetriever {
            store,
            embedder,
            fusion: Fusion::default(),
            weighting: Box::new(Bm25::default()),
            counter: Arc::new(CharsPerToken::default()),
            candidates: DEFAULT_CANDIDATES,
            min_similarity: 0.0,
            late: None,
            neighbours: DEFAULT_NEIGHBOUR_CONTEXT,
        })
    }

    /// Fuses with `fusion` instead.
    #[must_use]
    pub fn with_fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
        self
    }

    /// Scores the lexical side with `weighting` instead.
    #[must_use]
    pub fn with_weighting(mut self, weighting: Box<dyn TermWeighting>) -> Self {
        self.weighting = weighting;
        self
    }

    /// Counts tokens with `counter` instead.
    #[must_use]
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Takes up to `candidates` facts from each side (at least `2 × max_facts`).
    #[must_use]
    pub fn with_candidates(mut self, candidates: usize) -> Self {
        self.candidates = candidates;
        self
    }

    /// Leaves out vector candidates less similar than `min_similarity` (cosine).
    #[must_use]
    pub fn with_min_similarity(mut self, min_similarity: f64) -> Self {
        self.min_similarity = min_similarity;
        self
    }

    /// Adds the late-interaction (MaxSim) stage: the best fused candidates re-scored by
    /// their token vectors ([`LateInteraction`]). The embedder must give token vectors
    /// ([`Embedder::embed_tokens`]); [`embed_facts`](Self::embed_facts) then stores them
    /// beside each embedding.
    #[must_use]
    pub fn with_late_interaction(mut self, late: LateInteraction) -> Self {
        self.late = Some(late);
        self
    }

    /// Reads each turn of [`embed_episodes`](Self::embed_episodes) with at least `k`
    /// neighbouring turns on either side (default [`DEFAULT_NEIGHBOUR_CONTEXT`]; 0: the
    /// turn alone).
    #[must_use]
    pub fn with_neighbour_context(mut self, k: usize) -> Self {
        self.neighbours = k;
        self
    }

    /// The late-interaction stage, when there is one.
    #[must_use]
    pub fn late_interaction(&self) -> Option<&LateInteraction> {
        self.late.as_ref()
    }

    /// The embedder.
    #[must_use]
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn SessionFactStore> {
        &self.store
    }

    fn vectors(&self) -> Result<&dyn FactVectors, HybridError> {
        self.store.vectors().ok_or(HybridError::NoVectors)
    }

    /// Embeds `facts` ([`embedding_text`]) in batches and stores their embeddings;
    /// returns how many were stored (facts the store does not hold are skipped).
    ///
    /// # Errors
    ///
    /// The model's or the store's error; batches before the failing one stay stored.
    pub fn embed_facts(&self, facts: &[SessionFact]) -> Result<usize, HybridError> {
        let texts: Vec<String> = facts.iter().map(embedding_text).collect();
        self.embed_as(facts, &texts)
    }

    /// Embeds the turns of episodes, each episode's turns in their order, each turn read
    /// in the context of at least `k` turns on either side
    /// ([`with_neighbour_context`](Self::with_neighbour_context),
    /// [`Embedder::embed_tokens_in_context`]): the turn's own token vectors and vector are
    /// made in its context, and it stays the fact that is found and rendered. The episodes
    /// of one call are batched together. With `k` 0 it is
    /// [`embed_facts`](Self::embed_facts) of all the turns. Returns how many embeddings
    /// were stored (turns the store does not hold are skipped).
    ///
    /// # Errors
    ///
    /// As [`embed_facts`](Self::embed_facts); with `k` above 0, the embedder's
    /// [`EmbedError::Unsupported`] when it gives no token vectors.
    pub fn embed_episodes(&self, episodes: &[&[SessionFact]]) -> Result<usize, HybridError> {
        if self.neighbours == 0 {
            return self.embed_facts(&episodes.concat());
        }
        let mut stored = 0;
        // Calls of about EMBED_BATCH turns: a failing call leaves the earlier ones stored.
        let mut start = 0;
        while start < episodes.len() {
            let mut end = start;
            let mut turns = 0;
            while end < episodes.len() && (end == start || turns < EMBED_BATCH) {
                turns += episodes.get(end).map_or(0, |episode| episode.len());
                end += 1;
            }
            let group = episodes.get(start..end).unwrap_or_default();
            let texts: Vec<Vec<String>> = group
                .iter()
                .map(|episode| episode.iter().map(embedding_text).collect())
                .collect();
            let refs: Vec<Vec<&str>> = texts
                .iter()
                .map(|episode| episode.iter().map(String::as_str).collect())
                .collect();
            let slices: Vec<&[&str]> = refs.iter().map(Vec::as_slice).collect();
            let embedded = self
                .embedder
                .embed_tokens_in_context(&slices, self.neighbours)?;
            let facts: Vec<SessionFact> = group.concat();
            let flat: Vec<TokenEmbedding> = embedded.into_iter().flatten().collect();
            check_count(flat.len(), facts.len())?;
            stored += self.store_embedded(&facts, flat)?;
            start = end;
        }
        Ok(stored)
    }

    /// Stores the embeddings (and, with late interaction, the token vectors) of `facts`,
    /// each made from the text of the same place in `texts`.
    fn embed_as(&self, facts: &[SessionFact], texts: &[String]) -> Result<usize, HybridError> {
        let vectors = self.vectors()?;
        let model = self.embedder.model();
        let mut stored = 0;
        for (chunk, texts) in facts.chunks(EMBED_BATCH).zip(texts.chunks(EMBED_BATCH)) {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            if self.late.is_none() {
                let embedded = self.embedder.embed(&refs)?;
                check_count(embedded.len(), chunk.len())?;
                let ids = chunk.iter().map(SessionFact::id);
                stored += vectors.put_embeddings(model, ids.zip(embedded).collect())?;
                continue;
            }
            let embedded = self.embedder.embed_tokens(&refs)?;
            check_count(embedded.len(), chunk.len())?;
            stored += self.store_embedded(chunk, embedded)?;
        }
        Ok(stored)
    }

    /// Stores each fact's vector and, with late interaction, its token vectors.
    fn store_embedded(
        &self,
        facts: &[SessionFact],
        embedded: Vec<TokenEmbedding>,
    ) -> Result<usize, HybridError> {
        let vectors = self.vectors()?;
        let model = self.embedder.model();
        let dimension = self.embedder.dimension();
        let mut pooled = Vec::with_capacity(facts.len());
        let mut tokens = Vec::with_capacity(facts.len());
        for (fact, item) in facts.iter().zip(embedded) {
            if let Some(late) = &self.late {
                tokens.push((
                    fact.id(),
                    encode_tokens(late.encoding, dimension, &item.tokens)?,
                ));
            }
            pooled.push((fact.id(), item.vector));
        }
        let stored = vectors.put_embeddings(model, pooled)?;
        if !tokens.is_empty() {
            vectors.put_token_vectors(model, tokens)?;
        }
        Ok(stored)
    }

    /// Embeds every valid fact that has no embedding by this model yet; returns how many.
    ///
    /// # Errors
    ///
    /// As [`embed_facts`](Self::embed_facts); and [`HybridError::Store`] when the store
    /// cannot say which facts lack an embedding (never taken for "none").
    pub fn embed_missing(&self) -> Result<usize, HybridError> {
        let vectors = self.vectors()?;
        let mut total = 0;
        loop {
            let missing = vectors.unembedded(self.embedder.model(), 4 * EMBED_BATCH)?;
            if missing.is_empty() {
                return Ok(total + self.tokenize_missing()?);
            }
            let stored = self.embed_facts(&missing)?;
            if stored == 0 {
                // Nothing of what was missing could be stored: stop rather than loop.
                return Ok(total);
            }
            total += stored;
        }
    }

    /// [`embed_missing`](Self::embed_missing) for the token vectors of the
    /// late-interaction stage: embeds every valid fact without token vectors by this
    /// model (their embeddings are stored again with them); returns how many. Nothing
    /// without a late-interaction stage.
    fn tokenize_missing(&self) -> Result<usize, HybridError> {
        if self.late.is_none() {
            return Ok(0);
        }
        let vectors = self.vectors()?;
        let mut total = 0;
        loop {
            let missing = vectors.untokenized(self.embedder.model(), 4 * EMBED_BATCH)?;
            if missing.is_empty() || self.embed_facts(&missing)? == 0 {
                return Ok(total);
            }
            total += missing.len();
        }
    }

    /// The ranked facts for `query`, one per point, before the token budget.
    ///
    /// # Errors
    ///
    /// The model's error when the query cannot be embedded, or the store's when it cannot
    /// read (the lexical or the vector candidates).
    pub fn rank(&self, query: &FactQuery) -> Result<Vec<RetrievedFact>, HybridError> {
        if query.max_facts == 0 {
            return Ok(Vec::new());
        }
        let text = query_text(self.store.analyzer(), &query.task_description);
        if query.as_of.is_some() {
            return Ok(self.fused(query, text, Vec::new())?);
        }
        let Some(late) = &self.late else {
            let embedded = self.embedder.embed(&[text])?;
            let vector = embedded.first().ok_or_else(no_query_vector)?;
            let semantic = self.nearest(vector, query)?;
            return Ok(self.fused(query, text, semantic)?);
        };
        let embedded = self.embedder.embed_tokens(&[text])?;
        let item = embedded.first().ok_or_else(no_query_vector)?;
        let semantic = self.nearest(&item.vector, query)?;
        let fused = self.fused_all(query, text, semantic, true)?;
        let mut ranked =
            late.rescore(self.vectors()?, self.embedder.model(), &item.tokens, fused)?;
        decay(&mut ranked, query.recency.as_ref());
        ranked.truncate(query.max_facts);
        Ok(ranked)
    }

    /// [`rank`](Self::rank) without the vector side: what answers when the model fails.
    fn rank_lexical(&self, query: &FactQuery) -> Result<Vec<RetrievedFact>, StoreError> {
        if query.max_facts == 0 {
            return Ok(Vec::new());
        }
        let text = query_text(self.store.analyzer(), &query.task_description);
        self.fused(query, text, Vec::new())
    }

    /// How many candidates each side gives for `query`.
    fn depth(&self, query: &FactQuery) -> usize {
        self.candidates.max(query.max_facts.saturating_mul(2))
    }

    /// The lexical candidates for `text` fused with the vector candidates `semantic`, one
    /// per point, at most `max_facts`.
    fn fused(
        &self,
        query: &FactQuery,
        text: &str,
        semantic: Vec<ScoredFact>,
    ) -> Result<Vec<RetrievedFact>, StoreError> {
        let mut ranked = self.fused_all(query, text, semantic, false)?;
        decay(&mut ranked, query.recency.as_ref());
        ranked.truncate(query.max_facts);
        Ok(ranked)
    }

    /// [`fused`](Self::fused) before the cut at `max_facts`.
    fn fused_all(
        &self,
        query: &FactQuery,
        text: &str,
        semantic: Vec<ScoredFact>,
        keep_unscored: bool,
    ) -> Result<Vec<RetrievedFact>, StoreError> {
        let lexical = self
            .store
            .search(&query.term_query(text, self.depth(query)), &*self.weighting)?;
        Ok(fold_same_points(fuse(
            self.fusion,
            lexical,
            semantic,
            keep_unscored,
        )))
    }

    /// The vector candidates for `text`.
    fn nearest(&self, vector: &[f32], query: &FactQuery) -> Result<Vec<ScoredFact>, HybridError> {
        let vectors = self.vectors()?;
        let depth = self.depth(query);
        let mut found =
            vectors.nearest(&query.vector_query(self.embedder.model(), vector, depth))?;
        found.retain(|scored| scored.score >= self.min_similarity);
        Ok(found)
    }

    /// [`recall`](crate::recall) with this retriever's ranking of the facts: the current
    /// facts and the episodes that answer `query`, within its token budget.
    ///
    /// # Errors
    ///
    /// The model's error, or the fact or episode store's.
    pub fn recall(
        &self,
        episodes: &dyn EpisodeStore,
        query: &RecallQuery<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Recall, HybridError> {
        let text = query_text(self.store.analyzer(), query.text);
        // The vector index holds what is valid now: a recall as of another instant ranks
        // the facts valid then by their words.
        let facts = match query.as_of {
            Some(_) => {
                let mut found = self.store.search(&query.facts(text), &*self.weighting)?;
                found.sort_by(|a, b| {
                    b.score
                        .total_cmp(&a.score)
                        .then(b.fact.valid_from().cmp(&a.fact.valid_from()))
                });
                found
            }
            None => {
                let mut fact_query = FactQuery::new("", query.text)
                    .with_max_facts(query.limit)
                    .with_max_tokens(query.max_tokens);
                fact_query.filter = query.filter.cloned();
                fact_query.recency = query.recency;
                self.rank(&fact_query)?
                    .into_iter()
                    .map(|found| ScoredFact {
                        fact: found.fact,
                        score: found.score,
                    })
                    .collect()
            }
        };
        let expanded = query.expansion(text).map_or(Ok(Vec::new()), |expansion| {
            expand(&*self.store, &facts, &expansion)
        })?;
        let related = related_episodes(episodes, query, text)?;
        Ok(render(facts, expanded, related, query.max_tokens, counter))
    }
}

impl FactRetriever for HybridRetriever {
    /// The hybrid ranking within the budget. A query the model fails on is answered by the
    /// lexical side alone (the failure is the caller's to see through
    /// [`rank`](HybridRetriever::rank)); a store that cannot read is an error, never an
    /// empty answer.
    fn retrieve(&self, query: &FactQuery) -> Result<Retrieval, StoreError> {
        let facts = match self.rank(query) {
            Ok(facts) => facts,
            Err(HybridError::Store(error)) => return Err(error),
            // The model failed (or, never after `new`, the store lost its vectors).
            Err(HybridError::Embed(_) | HybridError::NoVectors) => self.rank_lexical(query)?,
        };
        Ok(within_budget(facts, query.max_tokens, &*self.counter))
    }
}

/// The error of a model that returned nothing for the query.
fn no_query_vector() -> EmbedError {
    EmbedError::Inference {
        message: "the model returned no vector for the query".into(),
    }
}

/// An error unless the model returned one result per text.
fn check_count(returned: usize, texts: usize) -> Result<(), EmbedError> {
    if returned == texts {
        Ok(())
    } else {
        Err(EmbedError::Inference {
            message: format!("the model returned {returned} vectors for {texts} texts"),
        })
    }
}

/// One ranking from the lexical and the vector lists (each best first). A fact that scores
/// nothing (the least similar vector candidate, scaled to 0) is left out unless
/// `keep_unscored`: the late-interaction stage may lift it.
/// The fused candidates' scores decayed with `recency` and ranked again (stable: equal
/// scores keep the fusion's order); nothing without it. The candidates are the fusion's
/// pool, deeper than the cut that follows, so an older fact can fall below a newer one.
fn decay(ranked: &mut [RetrievedFact], recency: Option<&Recency>) {
    let Some(recency) = recency else { return };
    for item in ranked.iter_mut() {
        item.score *= recency.factor(item.fact.valid_from());
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
}

fn fuse(
    fusion: Fusion,
    lexical: Vec<ScoredFact>,
    semantic: Vec<ScoredFact>,
    keep_unscored: bool,
) -> Vec<RetrievedFact> {
    let mut scores: HashMap<FactId, (f64, SessionFact)> = HashMap::new();
    let mut add = |fact: SessionFact, score: f64| {
        scores
            .entry(fact.id())
            .and_modify(|entry| entry.0 += score)
            .or_insert((score, fact));
    };
    match fusion {
        Fusion::Rrf { k } => {
            let k = if k.is_finite() { k.max(0.0) } else { 60.0 };
            for list in [lexical, semantic] {
                for (rank, scored) in list.into_iter().enumerate() {
                    add(scored.fact, 1.0 / (k + rank as f64 + 1.0));
                }
            }
        }
        Fusion::Weighted { vector_weight } => {
            let w = if vector_weight.is_finite() {
                vector_weight.clamp(0.0, 1.0)
            } else {
                DEFAULT_VECTOR_WEIGHT
            };
            let best = lexical.iter().map(|s| s.score).fold(0.0, f64::max);
            for scored in lexical {
                if best > 0.0 {
                    add(scored.fact, (1.0 - w) * scored.score / best);
                }
            }
            let (low, high) = semantic
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
                    (lo.min(s.score), hi.max(s.score))
                });
            let span = high - low;
            for scored in semantic {
                let scaled = if span > 0.0 {
                    (scored.score - low) / span
                } else {
                    1.0
                };
                add(scored.fact, w * scaled);
            }
        }
    }
    let mut fused: Vec<RetrievedFact> = scores
        .into_values()
        .filter(|(score, _)| keep_unscored || *score > 0.0)
        .map(|(score, fact)| RetrievedFact { fact, score })
        .collect();
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.fact.valid_from().cmp(&a.fact.valid_from()))
            .then(a.fact.id().cmp(&b.fact.id()))
    });
    fused
}

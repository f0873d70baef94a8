//! Embeddings stored beside the facts, and the nearest-neighbour search over them.
//!
//! A store that keeps embeddings answers [`SessionFactStore::vectors`] with its
//! [`FactVectors`]: the vectors a sentence-embedding model gave each fact (computed by the
//! caller, at ingest, in batches), kept per model so that a new model never mixes its
//! vectors with an old one's, and searched by cosine similarity.
//!
//! The search runs in process over an index every store shares (`VectorIndex`): an exact
//! scan up to [`EXACT_SEARCH_LIMIT`] vectors, then binary codes (one sign bit per
//! dimension) whose Hamming distance picks a pool, ranked by the query's values against
//! the codes, the best candidates re-scored exactly.
//!
//! [`SessionFactStore::vectors`]: crate::SessionFactStore::vectors

mod index;
mod kernel;
mod tokens;

use std::fmt::Debug;

use fact_model::{FactId, Filter, SessionFact, Tag};

use crate::{ScoredFact, StoreError, StoreResult};

pub use self::index::EXACT_SEARCH_LIMIT;
pub(crate) use self::index::ModelIndexes;
pub use self::index::VectorIndex;
pub use self::tokens::{InvalidTokenVectors, MAX_TOKENS, TokenEncoding, TokenVectors};

/// The longest model identity a store accepts, in bytes.
pub const MAX_MODEL_BYTES: usize = 256;
/// The largest embedding dimension a store accepts.
pub const MAX_DIMENSION: usize = 8192;

/// What to search the embeddings for.
///
/// ```
/// use fact_store::VectorQuery;
///
/// let vector = [0.6, 0.8];
/// let query = VectorQuery::new("minilm", &vector, 5).with_exclude_source_task("task:4");
/// assert_eq!((query.model, query.limit), ("minilm", 5));
/// assert_eq!(query.exclude_source_task, Some("task:4"));
/// assert!(query.tags.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct VectorQuery<'a> {
    /// The model whose embeddings are searched (its identity, as stored).
    pub model: &'a str,
    /// The query's embedding by that model; need not be unit norm (it is normalized).
    pub vector: &'a [f32],
    /// Keep only facts carrying any of these tags (`None`: no tag filter).
    pub tags: Option<&'a [Tag]>,
    /// Leave out facts whose source task is this one.
    pub exclude_source_task: Option<&'a str>,
    /// Keep only facts this filter holds for (`None`: no filter), applied while the
    /// search ranks, as [`TermQuery::filter`](crate::TermQuery::filter) is.
    pub filter: Option<&'a Filter>,
    /// The most facts to return.
    pub limit: usize,
}

impl<'a> VectorQuery<'a> {
    /// A query for the `limit` nearest valid facts, with no filter.
    #[must_use]
    pub fn new(model: &'a str, vector: &'a [f32], limit: usize) -> Self {
        VectorQuery {
            model,
            vector,
            tags: None,
            exclude_source_task: None,
            filter: None,
            limit,
        }
    }

    /// Keeps only facts `filter` holds for.
    #[must_use]
    pub fn with_filter(mut self, filter: &'a Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Keeps only facts carrying any of `tags`.
    #[must_use]
    pub fn with_tags(mut self, tags: &'a [Tag]) -> Self {
        self.tags = Some(tags);
        self
    }

    /// Leaves out facts whose source task is `task_id`.
    #[must_use]
    pub fn with_exclude_source_task(mut self, task_id: &'a str) -> Self {
        self.exclude_source_task = Some(task_id);
        self
    }

    /// Returns at most `limit` facts.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// The embeddings of a store's facts, by model, and the search over them.
///
/// Every method takes `&self` and never panics, and returns a [`StoreResult`]: a durable
/// store's read error is returned with its code, never answered as "nothing" (which
/// would make a caller decide that no fact lacks an embedding, or that none is near).
///
/// An embedding belongs to a fact id (its triple): only valid facts are found, so a fact
/// that is superseded or invalidated drops out of the search (its successor, another
/// triple, needs an embedding of its own) and comes back if its triple is valid again;
/// deleting a fact deletes its embeddings (so does anything else that removes the last
/// version of a fact id, such as compaction). An embedding of an id the store does not
/// hold is not stored.
///
/// Snapshots ([`export_snapshot`](crate::SessionFactStore::export_snapshot)) do not carry
/// embeddings: after an import, [`unembedded`](Self::unembedded) lists the facts to embed
/// again.
pub trait FactVectors: Send + Sync + Debug {
    /// Stores each `(id, vector)` as the embedding of fact `id` by `model`, replacing an
    /// earlier one, and returns how many were stored (ids of no stored fact are skipped).
    ///
    /// Vectors are normalized to unit length before they are stored.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidEmbedding`] when `model` is empty or longer than
    /// [`MAX_MODEL_BYTES`], or a vector is empty, longer than [`MAX_DIMENSION`], holds a
    /// value that is not finite, is all zeros, or has another dimension than the
    /// model's vectors already stored; nothing of the call is stored then. A durable
    /// store's I/O errors as for [`add`](crate::SessionFactStore::add).
    fn put_embeddings(
        &self,
        model: &str,
        embeddings: Vec<(FactId, Vec<f32>)>,
    ) -> StoreResult<usize>;

    /// Up to `limit` valid facts that have no embedding by `model`, oldest first: what a
    /// caller embeds to catch up (facts added before the model was configured, or by
    /// another writer).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn unembedded(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>>;

    /// How many facts (valid or not) have an embedding by `model`.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn embedded_count(&self, model: &str) -> StoreResult<usize>;

    /// The valid facts whose embeddings by `query.model` are nearest `query.vector`, best
    /// first, at most `query.limit`, after the tag filter and the source exclusion.
    ///
    /// The score is the cosine similarity, in `-1..=1`; ties go to the smaller id. A
    /// query vector of another dimension than the model's, empty, or not finite finds
    /// nothing.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn nearest(&self, query: &VectorQuery<'_>) -> StoreResult<Vec<ScoredFact>>;

    /// Stores each `(id, tokens)` as the token vectors of fact `id` by `model` (what a
    /// late-interaction scorer compares a query's tokens with), replacing earlier ones, and
    /// returns how many were stored (ids of no stored fact are skipped).
    ///
    /// Token vectors follow their fact as its embeddings do: deleting a fact's last
    /// version deletes them, and those of another model are never returned for this one.
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidEmbedding`] when `model` is empty or longer than
    /// [`MAX_MODEL_BYTES`]; nothing of the call is stored then. A durable store's I/O
    /// errors as for [`add`](crate::SessionFactStore::add).
    fn put_token_vectors(
        &self,
        model: &str,
        tokens: Vec<(FactId, TokenVectors)>,
    ) -> StoreResult<usize>;

    /// The token vectors by `model` of those of `ids` that have them, in the order of
    /// `ids` (an id without any is left out; a repeated id comes once). Whether the fact
    /// is valid is not checked: a caller asks for candidates a search just returned.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read, or holds bytes that are not
    /// token vectors ([`StoreError::Corrupt`]).
    fn token_vectors(
        &self,
        model: &str,
        ids: &[FactId],
    ) -> StoreResult<Vec<(FactId, TokenVectors)>>;

    /// Up to `limit` valid facts that have no token vectors by `model`, oldest first: what
    /// a caller embeds to catch up, as [`unembedded`](Self::unembedded) for embeddings.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn untokenized(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>>;

    /// How many facts (valid or not) have token vectors by `model`, and their encoded
    /// bytes in all.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn token_vector_stats(&self, model: &str) -> StoreResult<TokenVectorStats>;
}

/// What [`FactVectors::token_vector_stats`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenVectorStats {
    /// Facts with token vectors by the model.
    pub facts: usize,
    /// Their encoded bytes ([`TokenVectors::as_bytes`]) in all.
    pub bytes: u64,
}

impl TokenVectorStats {
    /// The stats of `facts` facts holding `bytes` bytes.
    #[must_use]
    pub fn new(facts: usize, bytes: u64) -> Self {
        TokenVectorStats { facts, bytes }
    }

    /// The average bytes per fact (0 with no facts).
    #[must_use]
    pub fn bytes_per_fact(&self) -> f64 {
        if self.facts == 0 {
            0.0
        } else {
            self.bytes as f64 / self.facts as f64
        }
    }
}

/// Checks a model identity as [`FactVectors::put_token_vectors`] does.
pub fn check_token_model(model: &str, id: FactId) -> StoreResult<()> {
    if model.is_empty() || model.len() > MAX_MODEL_BYTES {
        return Err(StoreError::InvalidEmbedding {
            id,
            reason: format!(
                "the model identity must be 1 to {MAX_MODEL_BYTES} bytes, not {}",
                model.len()
            ),
        });
    }
    Ok(())
}

/// `vector` scaled to unit length, or why it cannot be an embedding of `model`.
pub fn unit_vector(
    model: &str,
    id: FactId,
    vector: &[f32],
    dimension: Option<usize>,
) -> StoreResult<Vec<f32>> {
    let invalid = |reason: String| StoreError::InvalidEmbedding { id, reason };
    if model.is_empty() || model.len() > MAX_MODEL_BYTES {
        return Err(invalid(format!(
            "the model identity must be 1 to {MAX_MODEL_BYTES} bytes, not {}",
            model.len()
        )));
    }
    if vector.is_empty() || vector.len() > MAX_DIMENSION {
        return Err(invalid(format!(
            "an embedding has 1 to {MAX_DIMENSION} values, not {}",
            vector.len()
        )));
    }
    if let Some(expected) = dimension
        && expected != vector.len()
    {
        return Err(invalid(format!(
            "model `{model}` has {expected}-dimensional embeddings, this one has {}",
            vector.len()
        )));
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(invalid("an embedding value is not finite".into()));
    }
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Err(invalid("the embedding is all zeros".into()));
    }
    Ok(vector
        .iter()
        .map(|&x| (f64::from(x) / norm) as f32)
        .collect())
}

/// The query vector at unit length, or `None` when it cannot be compared with vectors of
/// `dimension` (then nothing is found).
pub fn unit_query(vector: &[f32], dimension: usize) -> Option<Vec<f32>> {
    if vector.len() != dimension {
        return None;
    }
    unit_vector(
        "query",
        FactId::for_triple("", "", ""),
        vector,
        Some(dimension),
    )
    .ok()
}

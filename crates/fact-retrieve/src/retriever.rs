//! [`FactRetriever`] and [`IndexRetriever`]: the retrieval pipeline.

use std::fmt::Debug;
use std::sync::Arc;

use fact_model::{Filter, Tag, Timestamp};
use fact_store::{Recency, SessionFactStore, StoreError, TermQuery, TermWeighting, VectorQuery};
use serde::{Deserialize, Serialize};

use crate::dedup::fold_same_points;
use crate::format::format_session_facts_while;
use crate::retrieved::RetrievedFact;
use fact_model::{CharsPerToken, TokenCounter};

use crate::{Bm25, query_terms, query_text};

/// What the next task needs facts for.
///
/// ```
/// use fact_model::Tag;
/// use fact_retrieve::FactQuery;
///
/// let query = FactQuery::new("4", "Add retries to the dispatch runtime");
/// assert_eq!((query.max_facts, query.max_tokens), (10, 500));
/// let query = FactQuery::new("4", "Add retries").with_max_facts(5).with_tags(vec![Tag::Decision]);
/// assert_eq!((query.max_facts, query.tags.as_deref()), (5, Some(&[Tag::Decision][..])));
/// let query: FactQuery = serde_json::from_str(r#"{"task_id": "4", "task_description": "x", "max_tokens": 200}"#)?;
/// assert_eq!(query.max_tokens, 200);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FactQuery {
    /// The task's description or prompt; its terms are matched against facts.
    pub task_description: String,
    /// The querying task: its own facts are left out (it already knows them).
    pub task_id: String,
    /// Keep only facts with any of these tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<Tag>>,
    /// The most facts to return (default 10).
    #[serde(default = "default_max_facts")]
    pub max_facts: usize,
    /// The most tokens the rendered `[Session Context]` section may cost (default 500).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// Retrieve from the facts valid at this instant instead of the valid ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Timestamp>,
    /// Keep only facts this filter holds for (its JSON shape, `docs/protocol.md`),
    /// applied where the store ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Filter>,
    /// Rank by scores decayed with their age (not on the wire: a caller's choice per
    /// call).
    #[serde(skip)]
    pub recency: Option<Recency>,
}

fn default_max_facts() -> usize {
    10
}

fn default_max_tokens() -> usize {
    500
}

impl FactQuery {
    /// A query with the default limits, no tag filter, on the valid facts.
    #[must_use]
    pub fn new(task_id: impl Into<String>, task_description: impl Into<String>) -> Self {
        FactQuery {
            task_description: task_description.into(),
            task_id: task_id.into(),
            tags: None,
            max_facts: default_max_facts(),
            max_tokens: default_max_tokens(),
            as_of: None,
            filter: None,
            recency: None,
        }
    }

    /// Keeps only facts `filter` holds for.
    #[must_use]
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Keeps only facts with any of `tags`.
    #[must_use]
    pub fn with_tags(mut self, tags: Vec<Tag>) -> Self {
        self.tags = Some(tags);
        self
    }

    /// Returns at most `max_facts` facts.
    #[must_use]
    pub fn with_max_facts(mut self, max_facts: usize) -> Self {
        self.max_facts = max_facts;
        self
    }

    /// Lets the rendered section cost at most `max_tokens` tokens.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Retrieves from the facts valid at `as_of` instead of the valid ones.
    #[must_use]
    pub fn with_as_of(mut self, as_of: Timestamp) -> Self {
        self.as_of = Some(as_of);
        self
    }

    /// The store's term query for this query's filters (tags, `as_of`, leaving out the
    /// querying task's facts): the best `limit` facts matching `text`.
    pub(crate) fn term_query<'a>(&'a self, text: &'a str, limit: usize) -> TermQuery<'a> {
        let mut term_query = TermQuery::new(text, limit).with_exclude_source_task(&self.task_id);
        term_query.tags = self.tags.as_deref();
        term_query.as_of = self.as_of;
        term_query.filter = self.filter.as_ref();
        term_query
    }

    /// The store's vector query for this query's filters (tags, leaving out the querying
    /// task's facts): the `limit` nearest embeddings of `model` to `vector`.
    pub(crate) fn vector_query<'a>(
        &'a self,
        model: &'a str,
        vector: &'a [f32],
        limit: usize,
    ) -> VectorQuery<'a> {
        let mut vector_query =
            VectorQuery::new(model, vector, limit).with_exclude_source_task(&self.task_id);
        vector_query.tags = self.tags.as_deref();
        vector_query.filter = self.filter.as_ref();
        vector_query
    }
}

/// What a retrieval returns: facts in rank order, and the section that injects them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Retrieval {
    /// The facts, best first.
    pub facts: Vec<RetrievedFact>,
    /// The `[Session Context]` section for exactly these facts; empty when there are none.
    pub section: String,
    /// What `section` costs under the retriever's token counter (0 when empty).
    pub tokens_used: usize,
}

/// Finds the facts relevant to a task, within a token budget.
///
/// A retrieval that finds nothing is an empty [`Retrieval`]; one the store could not answer
/// is the store's [`StoreError`] (its [`code`](StoreError::code) says why), never an empty
/// answer: a caller must not mistake a broken database for a memory that knows nothing.
/// The store is the only thing a retrieval reads, so its error is the only one
/// `retrieve` returns (a [`HybridRetriever`](crate::HybridRetriever) whose model fails
/// answers from the words alone).
pub trait FactRetriever: Send + Sync + Debug {
    /// The facts for `query`, best first, with their rendered section.
    ///
    /// # Errors
    ///
    /// The [`StoreError`] of a store that cannot read.
    fn retrieve(&self, query: &FactQuery) -> Result<Retrieval, StoreError>;
}

impl<R: FactRetriever + ?Sized> FactRetriever for Box<R> {
    fn retrieve(&self, query: &FactQuery) -> Result<Retrieval, StoreError> {
        (**self).retrieve(query)
    }
}

impl<R: FactRetriever + ?Sized> FactRetriever for Arc<R> {
    fn retrieve(&self, query: &FactQuery) -> Result<Retrieval, StoreError> {
        (**self).retrieve(query)
    }
}

/// The default [`FactRetriever`]: asks the store's term index, then fits the budget.
///
/// The pipeline:
///
/// 1. The description is cut to the prefix [`query_text`] keeps (at most
///    [`MAX_QUERY_BYTES`](crate::MAX_QUERY_BYTES) bytes and
///    [`MAX_QUERY_TERMS`](crate::MAX_QUERY_TERMS) distinct terms), which the store's
///    analyzer turns into terms ([`query_terms`](Self::query_terms)).
/// 2. The store scores the facts valid now (or at `as_of`) that share a term, with this
///    retriever's [`TermWeighting`] ([`Bm25`] unless set), after the tag filter and leaving
///    out the querying task's own facts; facts scoring zero never come back; ties go to the
///    newer fact, then the smaller id.
/// 3. One point, one fact: of the facts of one subject that state the same text under
///    relations of [`RELATION_STRENGTH`](crate::RELATION_STRENGTH) (a reviewer's
///    `issue [minor] Naming convention: use snake_case` and the `convention Naming
///    convention: use snake_case` made from it), only the strongest is kept, at its own
///    place: the relation listed first, then the higher score, then the better rank. Texts
///    are compared with whitespace folded and a leading `[severity] ` tag removed, and a
///    text clipped with `...` after 40 characters or more matches the text it begins.
///    This folding runs over the store's best `2 × max_facts` facts, a window that doubles
///    while folding leaves fewer than `max_facts` and the store has more.
/// 4. At most `max_facts` are kept. Then, in rank order, each fact is added while the
///    rendered section, header included, stays within `max_tokens` under the
///    [`TokenCounter`] ([`CharsPerToken`] unless set); the first fact that does not fit
///    ends the list. The section is [`format_session_facts`](crate::format_session_facts)
///    of the facts kept.
///
/// ```
/// use std::sync::Arc;
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever};
/// use fact_store::{InMemorySessionFactStore, SessionFactStore};
///
/// let store = Arc::new(InMemorySessionFactStore::default());
/// store.add(vec![SessionFact::builder("src/parser.rs", "modified_by", "task:2")
///     .tag(Tag::FileChange).source("2", SourceRole::Implementer)
///     .valid_from(Timestamp::UNIX_EPOCH).build()?])?;
/// let retriever = IndexRetriever::new(store);
/// let found = retriever.retrieve(&FactQuery::new("5", "Extend the parser with comments"))?;
/// assert_eq!(found.section, "[Session Context]\n- src/parser.rs modified_by task:2 [task:2]");
/// assert!(retriever.retrieve(&FactQuery::new("5", "Write the changelog"))?.facts.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct IndexRetriever {
    store: Arc<dyn SessionFactStore>,
    weighting: Box<dyn TermWeighting>,
    counter: Arc<dyn TokenCounter>,
}

impl IndexRetriever {
    /// A retriever over `store` with BM25 and the chars-per-token counter.
    #[must_use]
    pub fn new(store: Arc<dyn SessionFactStore>) -> Self {
        IndexRetriever {
            store,
            weighting: Box::new(Bm25::default()),
            counter: Arc::new(CharsPerToken::default()),
        }
    }

    /// Scores with `weighting` instead.
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

    /// The distinct terms the store analyzes for `query` (its description cut by
    /// [`query_text`]), in order of first appearance: at most
    /// [`MAX_QUERY_TERMS`](crate::MAX_QUERY_TERMS), however long the description.
    #[must_use]
    pub fn query_terms(&self, query: &FactQuery) -> Vec<String> {
        query_terms(self.store.analyzer(), &query.task_description)
    }

    /// The ranked facts for `query`, one per point, before the token budget (steps 1–4
    /// above, without the budget).
    ///
    /// # Errors
    ///
    /// The [`StoreError`] of a store that cannot read.
    pub fn rank(&self, query: &FactQuery) -> Result<Vec<RetrievedFact>, StoreError> {
        if query.max_facts == 0 {
            return Ok(Vec::new());
        }
        let text = query_text(self.store.analyzer(), &query.task_description);
        let mut window = query.max_facts.saturating_mul(2);
        loop {
            let term_query = query.term_query(text, window);
            let found = self.store.search(&term_query, &*self.weighting)?;
            let all = found.len() < window;
            let mut ranked = fold_same_points(
                found
                    .into_iter()
                    .map(|scored| RetrievedFact {
                        fact: scored.fact,
                        score: scored.score,
                    })
                    .collect(),
            );
            if all || ranked.len() >= query.max_facts {
                ranked.truncate(query.max_facts);
                return Ok(ranked);
            }
            window = window.saturating_mul(2);
        }
    }
}

impl FactRetriever for IndexRetriever {
    fn retrieve(&self, query: &FactQuery) -> Result<Retrieval, StoreError> {
        Ok(within_budget(
            self.rank(query)?,
            query.max_tokens,
            &*self.counter,
        ))
    }
}

/// The ranked facts that fit, in rank order, with their `[Session Context]` section: each
/// fact is added while the section stays within `max_tokens` under `counter`, and the
/// first that does not fit ends the list (step 4 of [`IndexRetriever`]).
pub(crate) fn within_budget(
    mut facts: Vec<RetrievedFact>,
    max_tokens: usize,
    counter: &dyn TokenCounter,
) -> Retrieval {
    let mut tokens_used = 0;
    let (section, kept) = format_session_facts_while(facts.iter().map(|f| &f.fact), |section| {
        let tokens = counter.count(section);
        let fits = tokens <= max_tokens;
        if fits {
            tokens_used = tokens;
        }
        fits
    });
    facts.truncate(kept);
    if facts.is_empty() {
        return Retrieval::default();
    }
    Retrieval {
        facts,
        section,
        tokens_used,
    }
}

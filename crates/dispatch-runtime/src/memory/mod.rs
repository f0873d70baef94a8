//! [`MemoryService`]: long-term conversational memory (seeds 002 and 004) composed from
//! trait objects: one scope of a [`LongTermStore`] (facts, episodes, aliases, the user's
//! profile), an optional conversation extractor, a clock and a token counter.
//!
//! Memory keeps itself true as conversations arrive:
//!
//! - **Time from the conversation.** A fact is valid from the time of the message that said
//!   it, and recorded when it was archived (`recorded_at`); `as_of` questions ask about
//!   valid time.
//! - **Updates judged against what is known.** Before the model is asked, the facts the
//!   store already holds about the conversation (`known.rs`) are listed in its prompt; the
//!   reply may supersede or remove them by id, and a reply is applied in one commit
//!   (`archive.rs`).
//! - **Entities.** Subjects are normalized ([`normalize_entity`]) and aliases resolved
//!   (`entities.rs`), so "Mel", "Melanie" and "melanie" are one subject.
//! - **Episodes you can search.** Every message is indexed; recall shows the lines that
//!   answered, with their dates.
//!
//! Conversations are archived as episodes first and their facts extracted second, so a
//! failing model never costs an archived conversation: `backfill` extracts later.

mod archive;
mod budget;
mod entities;
mod error;
mod graph;
mod known;
mod read;
mod service;
mod transfer;

use std::sync::Arc;

use fact_extract::ConversationExtractor;
use fact_model::{
    CharsPerToken, Clock, FactError, FactId, FactUpdate, Filter, MemoryHistory, Metadata,
    ProfileField, SessionFact, SourceRole, Tag, Timestamp, TokenCounter, UserContext,
    normalize_entity,
};
use fact_retrieve::{
    Bm25, EmbedError, Embedder, FactQuery, HybridError, HybridRetriever, LateInteraction,
    MemoryData, MemoryFact, Recall, RecallQuery, format_memory, recall,
};
use fact_store::{
    AddReport, Alias, AliasChange, LongTermStore, MemoryWrite, ProfileEntry, ScoredFact, Step,
    StepReport, StoreError, TermQuery, Transaction,
};
use serde::Serialize;

pub use self::archive::{ArchiveReport, ArchiveRequest, ForgetReport, MemoryChanges};
pub use self::budget::{DEFAULT_KNOWN_FACTS, DEFAULT_KNOWN_TOKENS, KnownBudget};
pub use self::error::MemoryError;
pub use self::graph::{MAX_NEIGHBOUR_DEPTH, Neighbour};
pub use self::read::ReadOptions;
pub use self::service::MemoryService;
pub use self::transfer::{
    EXPORT_SCHEMA, MEM0_RELATION, MEM0_SOURCE, Mem0Conversion, Mem0Skipped, mem0_export,
    write_whole,
};

use self::entities::Entities;
use self::error::MAX_ECHOED_ID_CHARS;

/// A fact to remember, as a person or an agent states it.
///
/// ```
/// use dispatch_runtime::NewMemory;
/// use dispatch_runtime::reexports::Tag;
///
/// let memory = NewMemory::new("user", "prefers_test_framework", "pytest")
///     .with_statement("User prefers pytest over unittest")
///     .with_category(Tag::Preference)
///     .with_confidence(0.9)
///     .with_source("cli");
/// assert_eq!((memory.category, memory.source.as_str()), (Tag::Preference, "cli"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NewMemory {
    /// What it is about (`user`, `project:rlm`); normalized and resolved through the
    /// aliases when stored.
    pub subject: String,
    /// A specific predicate (`prefers_test_framework`): a newer fact with the same subject
    /// and relation supersedes this one.
    pub relation: String,
    /// The value (`pytest`).
    pub object: String,
    /// One sentence; two facts whose statements differ only in case and spacing are one.
    pub statement: Option<String>,
    /// The category (default `knowledge`; any [`Tag`]).
    pub category: Tag,
    /// How sure, in `0..=1` (default 1.0).
    pub confidence: f64,
    /// Who states it (`cli`, `mcp`, an episode id).
    pub source: String,
    /// Since when it is true (default: now).
    pub valid_from: Option<Timestamp>,
    /// What the caller says about it (`project`, `channel`): filters test it.
    pub metadata: Metadata,
}

impl NewMemory {
    /// A fact with a `knowledge` category, confidence 1.0 and source `manual`, true from
    /// now.
    #[must_use]
    pub fn new(
        subject: impl Into<String>,
        relation: impl Into<String>,
        object: impl Into<String>,
    ) -> Self {
        NewMemory {
            subject: subject.into(),
            relation: relation.into(),
            object: object.into(),
            statement: None,
            category: Tag::Knowledge,
            confidence: 1.0,
            source: "manual".into(),
            valid_from: None,
            metadata: Metadata::new(),
        }
    }

    /// States the fact in one sentence.
    #[must_use]
    pub fn with_statement(mut self, statement: impl Into<String>) -> Self {
        self.statement = Some(statement.into());
        self
    }

    /// Files the fact under `category`.
    #[must_use]
    pub fn with_category(mut self, category: Tag) -> Self {
        self.category = category;
        self
    }

    /// Holds the fact with `confidence`, in `0..=1` (checked when it is added).
    #[must_use]
    pub fn with_confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// Names who states the fact (`cli`, `mcp`, an episode id).
    #[must_use]
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// Makes the fact true from `at` instead of now.
    #[must_use]
    pub fn with_valid_from(mut self, at: Timestamp) -> Self {
        self.valid_from = Some(at);
        self
    }

    /// Gives the fact `metadata`.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }
}

/// What [`MemoryService::add`] did: the fact as built, and the store's report (added,
/// duplicate statement skipped, or already valid; and which facts it superseded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddOutcome {
    /// The fact that was offered (its subject normalized and resolved).
    pub fact: SessionFact,
    /// What the store did with it.
    pub report: AddReport,
}

/// The fields [`MemoryService::update`] may change; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryChange {
    /// A new statement.
    pub statement: Option<String>,
    /// A new object: the triple changes, so a new fact supersedes the old one (history
    /// keeps both).
    pub object: Option<String>,
    /// A new category.
    pub category: Option<Tag>,
    /// A new confidence.
    pub confidence: Option<f64>,
    /// New metadata, replacing the old whole (empty clears it).
    pub metadata: Option<Metadata>,
}

/// The user context and history of a scope (seed 002), with every field's current
/// version.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryContext {
    /// The `User Context:` section.
    pub user_context: UserContext,
    /// The `History:` section.
    pub history: MemoryHistory,
    /// The current version of each field that has one, with its time.
    pub versions: Vec<ProfileEntry>,
}

/// What [`MemoryService::set_alias`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AliasOutcome {
    /// The alias, normalized.
    pub alias: String,
    /// The entity it names, normalized.
    pub entity: String,
    /// The current facts that were stored under the alias and now are under the entity
    /// (new versions; the old ones end, superseded by them).
    pub merged: Vec<FactId>,
}

impl MemoryService {
    /// A service over `store`, counting tokens as four characters each and with no
    /// extractor.
    #[must_use]
    pub fn new(store: Arc<dyn LongTermStore>, clock: Arc<dyn Clock>) -> Self {
        MemoryService {
            store,
            extractor: None,
            clock,
            counter: Arc::new(CharsPerToken::default()),
            hybrid: None,
            budget: KnownBudget::default(),
            message_context: None,
        }
    }

    /// Lets up to `context` neighbouring messages on each side of a message lend it
    /// `weight` of their score in [`recall`](Self::recall) (default
    /// [`fact_store::DEFAULT_MESSAGE_CONTEXT`] and [`fact_store::DEFAULT_CONTEXT_WEIGHT`]).
    #[must_use]
    pub fn with_message_context(mut self, context: usize, weight: f64) -> Self {
        self.message_context = Some((context, weight));
        self
    }

    /// Extracts conversation facts with `extractor` when archiving.
    #[must_use]
    pub fn with_extractor(mut self, extractor: Arc<dyn ConversationExtractor>) -> Self {
        self.extractor = Some(extractor);
        self
    }

    /// Measures budgets with `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Lists at most `budget` of the known facts in an extraction prompt.
    #[must_use]
    pub fn with_known_budget(mut self, budget: KnownBudget) -> Self {
        self.budget = budget;
        self
    }

    /// Makes memory semantic: facts are embedded by `embedder` as they are stored (in
    /// batches), and [`recall`](Self::recall) ranks by words and meaning together
    /// ([`HybridRetriever`] with its default fusion). When the model gives token vectors
    /// ([`Embedder::embed_tokens`], as `OnnxEmbedder` does), they are stored too and the
    /// best candidates are re-scored by late interaction ([`LateInteraction::default`]). Facts of the store that have no
    /// embedding by this model yet (stored before, or by a writer without the model) are
    /// embedded now, so this can take a while once on a large store.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Embedding`] when the store keeps no embeddings or the model fails,
    /// [`MemoryError::Store`] when the store cannot say which facts lack an embedding (or
    /// cannot keep them); what it embedded before the failure stays stored.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Result<Self, MemoryError> {
        // Late interaction when the model gives token vectors (a probe tells).
        let late = match embedder.embed_tokens(&[TOKEN_PROBE]) {
            Ok(_) => Some(LateInteraction::default()),
            Err(EmbedError::Unsupported { .. }) => None,
            Err(error) => return Err(HybridError::Embed(error).into()),
        };
        let mut hybrid = HybridRetriever::new(self.store.clone(), embedder)?;
        if let Some(late) = late {
            hybrid = hybrid.with_late_interaction(late);
        }
        hybrid.embed_missing().map_err(store_first)?;
        self.hybrid = Some(Arc::new(hybrid));
        Ok(self)
    }

    /// The hybrid retriever, when [`with_embedder`](Self::with_embedder) set one.
    #[must_use]
    pub fn hybrid(&self) -> Option<&Arc<HybridRetriever>> {
        self.hybrid.as_ref()
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn LongTermStore> {
        &self.store
    }

    /// The clock.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Embeds the facts of `batch` that `added` lists.
    fn embed_added(&self, batch: &[SessionFact], added: &[FactId]) -> Result<(), MemoryError> {
        let Some(hybrid) = &self.hybrid else {
            return Ok(());
        };
        let added: Vec<SessionFact> = batch
            .iter()
            .filter(|fact| added.contains(&fact.id()))
            .cloned()
            .collect();
        if !added.is_empty() {
            let _span = tracing::info_span!("embedding", facts = added.len()).entered();
            hybrid.embed_facts(&added)?;
        }
        Ok(())
    }

    /// The alias table, read once for an operation.
    fn entities(&self) -> Result<Entities, MemoryError> {
        Ok(Entities::new(self.store.aliases()?))
    }

    /// Remembers a fact, valid from now (or its `valid_from`), under its subject
    /// normalized and resolved through the aliases; a valid fact of the same subject and
    /// relation is superseded.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidFact`] or the store's error.
    pub fn add(&self, new: NewMemory) -> Result<AddOutcome, MemoryError> {
        let now = self.clock.now();
        let fact = fact_of(&self.entities()?, new, now)?;
        let report = {
            let _span = tracing::info_span!("store", operation = "add", facts = 1).entered();
            self.store.add(vec![fact.clone()])?
        };
        self.embed_added(std::slice::from_ref(&fact), &report.added)?;
        Ok(AddOutcome { fact, report })
    }

    /// Remembers many facts in one transaction: each as [`add`](Self::add) would, after
    /// the ones before it (a later fact of the same subject and relation supersedes an
    /// earlier one, a statement an earlier one holds is a duplicate), and all of them or,
    /// when one is invalid or the store fails, none. One outcome per fact, in order, as
    /// `add` answers it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dispatch_runtime::{MemoryService, NewMemory};
    /// use dispatch_runtime::reexports::{InMemoryLongTermStore, SystemClock};
    ///
    /// let memory = MemoryService::new(Arc::new(InMemoryLongTermStore::default()), Arc::new(SystemClock));
    /// let outcomes = memory.add_many(vec![
    ///     NewMemory::new("user", "prefers_editor", "vim"),
    ///     NewMemory::new("user", "lives_in", "Lisbon"),
    /// ])?;
    /// assert_eq!(outcomes.len(), 2);
    /// assert_eq!(memory.list(&Default::default())?.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidBatchFact`] naming the first invalid fact, or the store's
    /// error; nothing is stored then.
    pub fn add_many(&self, batch: Vec<NewMemory>) -> Result<Vec<AddOutcome>, MemoryError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let entities = self.entities()?;
        let facts = batch
            .into_iter()
            .enumerate()
            .map(|(index, new)| {
                fact_of(&entities, new, now)
                    .map_err(|error| MemoryError::InvalidBatchFact { index, error })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // One step per fact: each is added as `add` adds it, after the ones before it,
        // and all of them commit together.
        let mut transaction = Transaction::new();
        for fact in &facts {
            transaction.push(Step::Add(vec![fact.clone()]));
        }
        let applied = {
            let _span =
                tracing::info_span!("store", operation = "add", facts = facts.len()).entered();
            self.store.apply(transaction)?
        };
        let mut outcomes = Vec::with_capacity(facts.len());
        let mut added = Vec::new();
        for (fact, step) in facts.into_iter().zip(applied.steps) {
            let StepReport::Added(report) = step else {
                return Err(MemoryError::Store(StoreError::Backend {
                    message: "a step that added a fact reported something else".into(),
                }));
            };
            added.extend_from_slice(&report.added);
            outcomes.push(AddOutcome { fact, report });
        }
        let offered: Vec<SessionFact> = outcomes.iter().map(|o| o.fact.clone()).collect();
        self.embed_added(&offered, &added)?;
        Ok(outcomes)
    }

    /// Every current fact (or every fact valid at `read.as_of`) that `read.filter` holds
    /// for, oldest first.
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn list(&self, read: &ReadOptions) -> Result<Vec<SessionFact>, MemoryError> {
        Ok(match (&read.filter, read.as_of) {
            (Some(filter), as_of) => self.store.select(filter, as_of)?,
            (None, Some(at)) => self.store.valid_at(at)?,
            (None, None) => self.store.valid_facts()?,
        })
    }

    /// The latest version of the fact with this id (given as text), current or not.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidId`], [`MemoryError::NotFound`] or the store's read error.
    pub fn get(&self, id: &str) -> Result<SessionFact, MemoryError> {
        let parsed = parse_id(id)?;
        self.store
            .get(parsed)?
            .ok_or_else(|| MemoryError::not_found(id))
    }

    /// Changes a fact. A new object makes a new fact (valid from now) that supersedes the
    /// old one; other changes edit the fact in place.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidId`], [`MemoryError::NotFound`], [`MemoryError::InvalidFact`]
    /// or the store's error.
    pub fn update(&self, id: &str, change: MemoryChange) -> Result<SessionFact, MemoryError> {
        let old = self.get(id)?;
        let Some(object) = change.object else {
            let update = FactUpdate {
                statement: change.statement,
                tags: change.category.map(|tag| vec![tag]),
                confidence: change.confidence,
                metadata: change.metadata,
            };
            let updated = self.store.update(old.id(), &update).map_err(|e| match e {
                StoreError::InvalidUpdate { source, .. } => MemoryError::InvalidFact(source),
                other => MemoryError::Store(other),
            })?;
            // A new statement is new text to embed.
            if let Some(hybrid) = &self.hybrid
                && updated.statement() != old.statement()
            {
                hybrid.embed_facts(std::slice::from_ref(&updated))?;
            }
            return Ok(updated);
        };
        let now = self.clock.now();
        let category = change
            .category
            .or_else(|| old.tags().as_slice().first().copied())
            .unwrap_or(Tag::Knowledge);
        let mut builder = SessionFact::builder(old.subject(), old.relation(), object)
            .tag(category)
            .confidence(change.confidence.unwrap_or(old.confidence()))
            .source(old.source_task_id(), old.source_role())
            .valid_from(now.max(old.valid_from()))
            .recorded_at(now)
            .metadata(change.metadata.unwrap_or_else(|| old.metadata().clone()));
        // The old statement described the old object; keep it only when asked to.
        if let Some(statement) = change.statement {
            builder = builder.statement(statement);
        }
        let new = builder.build()?;
        let report = self.store.add(vec![new.clone()])?;
        self.embed_added(std::slice::from_ref(&new), &report.added)?;
        Ok(self.store.get(new.id())?.unwrap_or(new))
    }

    /// Deletes every version of a fact; returns how many.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidId`], [`MemoryError::NotFound`] or the store's error.
    pub fn delete(&self, id: &str) -> Result<usize, MemoryError> {
        let parsed = parse_id(id)?;
        self.store.delete(parsed).map_err(|e| match e {
            StoreError::NotFound { .. } => MemoryError::not_found(id),
            other => MemoryError::Store(other),
        })
    }

    /// Deletes every version of each current fact `filter` holds for, in one transaction,
    /// and returns them (as they were); with `dry_run`, deletes nothing and returns what
    /// would go.
    ///
    /// # Errors
    ///
    /// The store's error; nothing is deleted then.
    pub fn delete_matching(
        &self,
        filter: &Filter,
        dry_run: bool,
    ) -> Result<Vec<SessionFact>, MemoryError> {
        let facts = self.store.select(filter, None)?;
        if !dry_run && !facts.is_empty() {
            let mut transaction = Transaction::new();
            for fact in &facts {
                transaction = transaction.delete(fact.id());
            }
            self.store.apply(transaction)?;
        }
        Ok(facts)
    }

    /// The current facts (or those valid at `read.as_of`) that match `query` and
    /// `read.filter`, best first (BM25 over the store's terms). A query that names an
    /// alias or an aliased entity also searches for its other names.
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        read: &ReadOptions,
    ) -> Result<Vec<ScoredFact>, MemoryError> {
        self.search_among(&self.entities()?, query, limit, read)
    }

    /// Answers many searches in one call, each as [`search`](Self::search) answers it,
    /// in order; the aliases are read once for all of them.
    ///
    /// # Errors
    ///
    /// The store's read error; no answer then.
    pub fn search_many<S: AsRef<str>>(
        &self,
        queries: &[S],
        limit: usize,
        read: &ReadOptions,
    ) -> Result<Vec<Vec<ScoredFact>>, MemoryError> {
        let entities = self.entities()?;
        queries
            .iter()
            .map(|query| self.search_among(&entities, query.as_ref(), limit, read))
            .collect()
    }

    /// [`search`](Self::search) with the alias table read already.
    fn search_among(
        &self,
        entities: &Entities,
        query: &str,
        limit: usize,
        read: &ReadOptions,
    ) -> Result<Vec<ScoredFact>, MemoryError> {
        let text = entities.expand_query(self.store.analyzer(), query);
        let mut term_query = TermQuery::new(&text, limit);
        if let Some(at) = read.as_of {
            term_query = term_query.with_as_of(at);
        }
        term_query.filter = read.filter.as_ref();
        term_query.recency = read.recency(self.clock.now());
        let span = tracing::info_span!(
            "retrieval",
            operation = "search",
            limit,
            found = tracing::field::Empty
        );
        let _entered = span.enter();
        let found = self.store.search(&term_query, &Bm25::default())?;
        span.record("found", found.len());
        Ok(found)
    }

    /// [`search`](Self::search) ranked by words and meaning together when the service
    /// has an embedder ([`with_embedder`](Self::with_embedder);
    /// [`HybridRetriever::rank`], fused as [`recall`](Self::recall) fuses them), by words
    /// alone without one. The vector index holds what is valid now, so a search `as_of`
    /// another instant ranks the facts valid then by their words, as `search` does. The
    /// scores are the fusion's, not BM25's.
    ///
    /// # Errors
    ///
    /// The store's read error, or [`MemoryError::Embedding`] when the model fails on the
    /// query.
    pub fn search_hybrid(
        &self,
        query: &str,
        limit: usize,
        read: &ReadOptions,
    ) -> Result<Vec<ScoredFact>, MemoryError> {
        let Some(hybrid) = self.hybrid.as_ref().filter(|_| read.as_of.is_none()) else {
            return self.search(query, limit, read);
        };
        let text = self.entities()?.expand_query(self.store.analyzer(), query);
        let mut fact_query = FactQuery::new("", text).with_max_facts(limit);
        fact_query.filter.clone_from(&read.filter);
        fact_query.recency = read.recency(self.clock.now());
        let _span = tracing::info_span!("retrieval", operation = "search_hybrid", limit).entered();
        Ok(hybrid
            .rank(&fact_query)
            .map_err(store_first)?
            .into_iter()
            .map(|found| ScoredFact {
                fact: found.fact,
                score: found.score,
            })
            .collect())
    }

    /// Every version of the facts about `subject` (normalized, resolved through the
    /// aliases; the versions stored under its aliases included), ordered by `valid_from`;
    /// superseded versions carry `valid_to` and `superseded_by`. With `read.as_of`, the
    /// versions that had begun by then; with `read.filter`, the versions it holds for
    /// (each version tested as itself: `valid_to` is that version's).
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn history(
        &self,
        subject: &str,
        read: &ReadOptions,
    ) -> Result<Vec<SessionFact>, MemoryError> {
        let entities = self.entities()?;
        let mut versions = Vec::new();
        for name in entities.names_of(subject) {
            versions.extend(self.store.history(&name)?);
        }
        if let Some(at) = read.as_of {
            versions.retain(|v| v.valid_from() <= at);
        }
        if let Some(filter) = &read.filter {
            versions.retain(|v| filter.matches(v));
        }
        versions.sort_by_key(|v| v.valid_from());
        Ok(versions)
    }

    /// The current facts (or those valid at `read.as_of`) and the episode messages that
    /// answer `query`, rendered within `max_tokens` (see [`fact_retrieve::recall`]); facts
    /// ranked by words and meaning ([`HybridRetriever::recall`]) when the service has an
    /// embedder. A query that names an alias also recalls its entity's facts. With
    /// `read.filter`, only the facts it holds for, and no episode (see
    /// [`RecallQuery::filter`]); with `read.expand` 1, also the one-hop neighbours of the
    /// best facts, after them and within `max_tokens` ([`RecallQuery::expand`]).
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidExpand`] for an `expand` other than 0 or 1, the store's
    /// error (also when it cannot read the vector candidates), or
    /// [`MemoryError::Embedding`] when the model fails on the query.
    pub fn recall(
        &self,
        query: &str,
        limit: usize,
        max_tokens: usize,
        read: &ReadOptions,
    ) -> Result<Recall, MemoryError> {
        if read.expand > 1 {
            return Err(MemoryError::InvalidExpand { hops: read.expand });
        }
        let text = self.entities()?.expand_query(self.store.analyzer(), query);
        let mut query = RecallQuery::new(&text)
            .with_expand(read.expand)
            .with_limit(limit)
            .with_max_tokens(max_tokens)
            .with_as_of(read.as_of)
            .with_filter(read.filter.as_ref())
            .with_recency(read.recency(self.clock.now()));
        if let Some((context, weight)) = self.message_context {
            query = query.with_message_context(context, weight);
        }
        let _span = tracing::info_span!(
            "retrieval",
            operation = "recall",
            limit,
            max_tokens,
            hybrid = self.hybrid.is_some()
        )
        .entered();
        if let Some(hybrid) = &self.hybrid {
            return hybrid
                .recall(&*self.store, &query, &*self.counter)
                .map_err(store_first);
        }
        Ok(recall(&*self.store, &*self.store, &query, &*self.counter)?)
    }

    /// The user context and history (each field's current text) with their versions.
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn context(&self) -> Result<MemoryContext, MemoryError> {
        self.context_as_of(None)
    }

    fn context_as_of(&self, as_of: Option<Timestamp>) -> Result<MemoryContext, MemoryError> {
        let versions = match as_of {
            None => self.store.profile()?,
            Some(at) => {
                let mut history = self.store.profile_history()?;
                history.retain(|entry| entry.at <= at);
                fact_store::current_profile(&history)
            }
        };
        let mut context = MemoryContext::default();
        for entry in &versions {
            entry.field.set(
                &mut context.user_context,
                &mut context.history,
                entry.text.clone(),
            );
        }
        context.versions = versions;
        Ok(context)
    }

    /// Sets fields of the user context and history by hand, from now; a field whose text
    /// does not change keeps its version. Returns the fields that changed.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn set_context(
        &self,
        fields: Vec<(ProfileField, String)>,
    ) -> Result<Vec<ProfileField>, MemoryError> {
        let at = self.clock.now();
        let mut write = MemoryWrite::default();
        write.profile = fields
            .into_iter()
            .map(|(field, text)| ProfileEntry {
                field,
                text: one_line(&text),
                at,
            })
            .collect();
        Ok(self.store.commit(write)?.profile_changed)
    }

    /// Every current fact (or those valid at `read.as_of`, those `read.filter` holds for)
    /// in seed 002's layout: `User Context:`, `History:` and `Facts:` (by confidence),
    /// within `max_tokens` (facts
    /// trimmed lowest confidence first, then a character cut marked `\n...`).
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn format(&self, max_tokens: usize, read: &ReadOptions) -> Result<String, MemoryError> {
        let context = self.context_as_of(read.as_of)?;
        let data = MemoryData {
            user: context.user_context,
            history: context.history,
            facts: self
                .list(read)?
                .iter()
                .map(MemoryFact::from_session_fact)
                .collect(),
        };
        Ok(format_memory(&data, max_tokens, &*self.counter))
    }

    /// Every alias, in the order set.
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn aliases(&self) -> Result<Vec<Alias>, MemoryError> {
        Ok(self.store.aliases()?)
    }

    /// Makes `alias` another name of `entity` (both normalized): the current facts stored
    /// under the alias move to the entity (a new version each, superseding the old one,
    /// so supersession works across the names), and later facts about the alias are
    /// stored under the entity. One commit.
    ///
    /// # Errors
    ///
    /// [`StoreError::AliasCycle`] or [`StoreError::InvalidAlias`] (in
    /// [`MemoryError::Store`]) when the alias would lead back to itself or a name is
    /// blank; nothing changes then.
    pub fn set_alias(&self, alias: &str, entity: &str) -> Result<AliasOutcome, MemoryError> {
        let now = self.clock.now();
        let alias = normalize_entity(alias);
        let entity = normalize_entity(entity);
        let mut write = MemoryWrite::default();
        write.aliases.push(AliasChange::Set {
            alias: alias.clone(),
            entity: entity.clone(),
            at: now,
        });
        let (steps, moved) = archive::merge_alias(&*self.store, &alias, &entity, now)?;
        write.facts = steps;
        let report = self.store.commit(write)?;
        let merged: Vec<FactId> = report
            .facts
            .steps
            .iter()
            .filter_map(|step| match step {
                fact_store::StepReport::Added(added) => Some(added.added.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        self.embed_added(&moved, &merged)?;
        Ok(AliasOutcome {
            alias,
            entity,
            merged,
        })
    }

    /// Removes an alias (normalized); whether there was one. Facts stay where they are.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub fn remove_alias(&self, alias: &str) -> Result<bool, MemoryError> {
        let alias = normalize_entity(alias);
        if !self.store.aliases()?.iter().any(|a| a.alias == alias) {
            return Ok(false);
        }
        let mut write = MemoryWrite::default();
        write.aliases.push(AliasChange::Remove { alias });
        self.store.commit(write)?;
        Ok(true)
    }
}

/// The text [`MemoryService::with_embedder`] asks token vectors of, to learn whether the
/// model gives them.
const TOKEN_PROBE: &str = "token probe";

/// A hybrid retriever's error as memory reports it: the store's own error as
/// [`MemoryError::Store`] (a read that failed is a store error wherever it happened), the
/// model's as [`MemoryError::Embedding`].
fn store_first(error: HybridError) -> MemoryError {
    match error {
        HybridError::Store(error) => MemoryError::Store(error),
        other => MemoryError::Embedding(other),
    }
}

fn parse_id(id: &str) -> Result<FactId, MemoryError> {
    id.trim().parse().map_err(|_| MemoryError::InvalidId {
        id: fact_model::clip(id, MAX_ECHOED_ID_CHARS).into_owned(),
    })
}

/// Text on one line: runs of whitespace (newlines included) become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fact `new` describes, under its subject resolved through `entities`, recorded `now`
/// (and valid from then, unless it says when).
fn fact_of(entities: &Entities, new: NewMemory, now: Timestamp) -> Result<SessionFact, FactError> {
    let subject = entities.resolve(&new.subject);
    let mut builder = SessionFact::builder(subject, new.relation, new.object)
        .tag(new.category)
        .confidence(new.confidence)
        .source(new.source, SourceRole::User)
        .valid_from(new.valid_from.unwrap_or(now))
        .recorded_at(now)
        .metadata(new.metadata);
    if let Some(statement) = new.statement {
        builder = builder.statement(statement);
    }
    builder.build()
}

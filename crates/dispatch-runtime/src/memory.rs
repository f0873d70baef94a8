//! [`MemoryService`]: long-term conversational memory (seeds 002 and 004) composed from
//! trait objects: a fact store and an episode store (one scope of a durable database, or
//! memory), an optional conversation extractor, a clock and a token counter.
//!
//! Conversations are archived as episodes first and their facts extracted second, so a
//! failing model never costs an archived conversation: `backfill` extracts later.

use std::sync::Arc;

use fact_extract::{ConversationExtractor, LlmError, parse_transcript};
use fact_model::{
    CharsPerToken, Clock, FactError, FactId, FactUpdate, SessionFact, SourceRole, Tag, TokenCounter,
};
use fact_retrieve::{
    Embedder, HybridError, HybridRetriever, MemoryData, MemoryFact, Recall, RecallQuery,
    format_memory, recall,
};
use fact_store::{
    AddReport, Episode, EpisodeStore, ScoredFact, SessionFactStore, StoreError, TermQuery,
};
use serde::Serialize;

/// Why a memory operation failed. [`code`](Self::code) names it for the CLI and MCP.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The store could not read or write.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No fact or episode has this id.
    #[error("no fact or episode with id {id}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The text given as a fact id is not one.
    #[error("{id:?} is not a fact id (16 lowercase hex digits)")]
    InvalidId {
        /// The text given, clipped to 64 characters.
        id: String,
    },
    /// A new or changed fact is invalid.
    #[error("invalid fact: {0}")]
    InvalidFact(#[from] FactError),
    /// A transcript holds no message.
    #[error("the transcript holds no message{detail}")]
    EmptyTranscript {
        /// The first problem found in it, if any (`": line 2: …"`).
        detail: String,
    },
    /// Extraction needs a model and none is configured.
    #[error("no LLM is configured for fact extraction (give --llm-cmd)")]
    NoExtractor,
    /// The embedding model failed (or the store refused its vectors). What the call wrote
    /// before is kept: a fact whose embedding failed is stored, found by its words, and
    /// embedded when a service with the embedder next starts
    /// ([`MemoryService::with_embedder`]).
    #[error("embedding failed: {0}")]
    Embedding(#[from] HybridError),
    /// The model failed; the episode stays archived, without facts, for a later backfill.
    #[error("episode {episode_id} is archived, but extracting its facts failed: {source}")]
    Extraction {
        /// The archived episode.
        episode_id: String,
        /// What the model did.
        source: LlmError,
    },
}

impl MemoryError {
    /// A short, stable code: `not_found`, `invalid_id`, `invalid_fact`, `empty_transcript`,
    /// `no_extractor`, `extraction_failed`, the store's own code ([`StoreError::code`]),
    /// or for [`MemoryError::Embedding`] the [`HybridError::code`].
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::Store(error) => error.code(),
            MemoryError::NotFound { .. } => "not_found",
            MemoryError::InvalidId { .. } => "invalid_id",
            MemoryError::InvalidFact(_) => "invalid_fact",
            MemoryError::EmptyTranscript { .. } => "empty_transcript",
            MemoryError::NoExtractor => "no_extractor",
            MemoryError::Extraction { .. } => "extraction_failed",
            MemoryError::Embedding(error) => error.code(),
        }
    }
}

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
    /// What it is about (`user`, `project:rlm`).
    pub subject: String,
    /// A specific predicate (`prefers_test_framework`): a newer fact with the same subject
    /// and relation supersedes this one.
    pub relation: String,
    /// The value (`pytest`).
    pub object: String,
    /// One sentence; two facts whose statements differ only in case and spacing are one.
    pub statement: Option<String>,
    /// The category (default `preference`... any [`Tag`]).
    pub category: Tag,
    /// How sure, in `0..=1` (default 1.0).
    pub confidence: f64,
    /// Who states it (`cli`, `mcp`, an episode id).
    pub source: String,
}

impl NewMemory {
    /// A fact with a `knowledge` category, confidence 1.0 and source `manual`.
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
}

/// What [`MemoryService::add`] did: the fact as built, and the store's report (added,
/// duplicate statement skipped, or already valid; and which facts it superseded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddOutcome {
    /// The fact that was offered.
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
}

/// What archiving a conversation did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchiveReport {
    /// The archived episode's id.
    pub episode_id: String,
    /// Its title.
    pub title: String,
    /// How many messages the transcript held.
    pub messages: usize,
    /// What the store did with the extracted facts (`None` when no extractor ran).
    pub facts: Option<AddReport>,
    /// Transcript lines that were not messages, and extraction diagnostics.
    pub diagnostics: Vec<String>,
}

/// Long-term memory over one scope: CRUD, search, history, recall, formatting, archiving
/// conversations and backfilling their facts.
///
/// ```
/// use std::sync::Arc;
/// use dispatch_runtime::{MemoryService, NewMemory};
/// use fact_model::{ManualClock, Tag};
/// use fact_store::{InMemoryEpisodeStore, InMemorySessionFactStore};
///
/// let clock = Arc::new(ManualClock::default());
/// let memory = MemoryService::new(
///     Arc::new(InMemorySessionFactStore::default()),
///     Arc::new(InMemoryEpisodeStore::default()),
///     clock,
/// );
/// let mut fact = NewMemory::new("user", "prefers_test_framework", "pytest");
/// fact.statement = Some("User prefers pytest over unittest".into());
/// fact.category = Tag::Preference;
/// memory.add(fact)?;
/// let found = memory.recall("what test framework does the user like?", 10, 500)?;
/// assert!(found.text.contains("[preference] User prefers pytest over unittest"));
/// # Ok::<(), dispatch_runtime::MemoryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MemoryService {
    facts: Arc<dyn SessionFactStore>,
    episodes: Arc<dyn EpisodeStore>,
    extractor: Option<Arc<dyn ConversationExtractor>>,
    clock: Arc<dyn Clock>,
    counter: Arc<dyn TokenCounter>,
    /// Set by [`with_embedder`](Self::with_embedder): recall is hybrid and new facts are
    /// embedded as they are stored.
    hybrid: Option<Arc<HybridRetriever>>,
}

impl MemoryService {
    /// A service over these stores, counting tokens as four characters each and with no
    /// extractor.
    #[must_use]
    pub fn new(
        facts: Arc<dyn SessionFactStore>,
        episodes: Arc<dyn EpisodeStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        MemoryService {
            facts,
            episodes,
            extractor: None,
            clock,
            counter: Arc::new(CharsPerToken::default()),
            hybrid: None,
        }
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

    /// Makes memory semantic: facts are embedded by `embedder` as they are stored (in
    /// batches), and [`recall`](Self::recall) ranks by words and meaning together
    /// ([`HybridRetriever`] with its default fusion). Facts of the store that have no
    /// embedding by this model yet (stored before, or by a writer without the model) are
    /// embedded now, so this can take a while once on a large store.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Embedding`] when the store keeps no embeddings or the catch-up
    /// fails; what it embedded before the failure stays stored.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Result<Self, MemoryError> {
        let hybrid = HybridRetriever::new(self.facts.clone(), embedder)?;
        hybrid.embed_missing()?;
        self.hybrid = Some(Arc::new(hybrid));
        Ok(self)
    }

    /// The hybrid retriever, when [`with_embedder`](Self::with_embedder) set one.
    #[must_use]
    pub fn hybrid(&self) -> Option<&Arc<HybridRetriever>> {
        self.hybrid.as_ref()
    }

    /// Embeds the facts of `batch` that `report` says were stored as new versions.
    fn embed_added(&self, batch: &[SessionFact], report: &AddReport) -> Result<(), MemoryError> {
        let Some(hybrid) = &self.hybrid else {
            return Ok(());
        };
        let added: Vec<SessionFact> = batch
            .iter()
            .filter(|fact| report.added.contains(&fact.id()))
            .cloned()
            .collect();
        if !added.is_empty() {
            hybrid.embed_facts(&added)?;
        }
        Ok(())
    }

    /// The fact store.
    #[must_use]
    pub fn facts(&self) -> &Arc<dyn SessionFactStore> {
        &self.facts
    }

    /// The episode store.
    #[must_use]
    pub fn episodes(&self) -> &Arc<dyn EpisodeStore> {
        &self.episodes
    }

    /// Remembers a fact, valid from now; a valid fact of the same subject and relation is
    /// superseded.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidFact`] or the store's error.
    pub fn add(&self, new: NewMemory) -> Result<AddOutcome, MemoryError> {
        let mut builder = SessionFact::builder(new.subject, new.relation, new.object)
            .tag(new.category)
            .confidence(new.confidence)
            .source(new.source, SourceRole::User)
            .valid_from(self.clock.now());
        if let Some(statement) = new.statement {
            builder = builder.statement(statement);
        }
        let fact = builder.build()?;
        let report = self.facts.add(vec![fact.clone()])?;
        self.embed_added(std::slice::from_ref(&fact), &report)?;
        Ok(AddOutcome { fact, report })
    }

    /// Every current fact, oldest first.
    #[must_use]
    pub fn list(&self) -> Vec<SessionFact> {
        self.facts.valid_facts()
    }

    /// The latest version of the fact with this id (given as text), current or not.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidId`] or [`MemoryError::NotFound`].
    pub fn get(&self, id: &str) -> Result<SessionFact, MemoryError> {
        let parsed = parse_id(id)?;
        self.facts
            .get(parsed)
            .ok_or_else(|| MemoryError::NotFound { id: id.to_owned() })
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
            };
            let updated = self.facts.update(old.id(), &update).map_err(|e| match e {
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
        let category = change
            .category
            .or_else(|| old.tags().as_slice().first().copied())
            .unwrap_or(Tag::Knowledge);
        let mut builder = SessionFact::builder(old.subject(), old.relation(), object)
            .tag(category)
            .confidence(change.confidence.unwrap_or(old.confidence()))
            .source(old.source_task_id(), old.source_role())
            .valid_from(self.clock.now().max(old.valid_from()));
        // The old statement described the old object; keep it only when asked to.
        if let Some(statement) = change.statement {
            builder = builder.statement(statement);
        }
        let new = builder.build()?;
        let report = self.facts.add(vec![new.clone()])?;
        self.embed_added(std::slice::from_ref(&new), &report)?;
        Ok(self.facts.get(new.id()).unwrap_or(new))
    }

    /// Deletes every version of a fact; returns how many.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidId`], [`MemoryError::NotFound`] or the store's error.
    pub fn delete(&self, id: &str) -> Result<usize, MemoryError> {
        let parsed = parse_id(id)?;
        self.facts.delete(parsed).map_err(|e| match e {
            StoreError::NotFound { .. } => MemoryError::NotFound { id: id.to_owned() },
            other => MemoryError::Store(other),
        })
    }

    /// The current facts that match `query`, best first (BM25 over the store's terms).
    #[must_use]
    pub fn search(&self, query: &str, limit: usize) -> Vec<ScoredFact> {
        let query = TermQuery::new(query, limit);
        self.facts.search(&query, &fact_retrieve::Bm25::default())
    }

    /// Every version of the facts about `subject`, oldest first; superseded versions
    /// carry `valid_to` and `superseded_by`.
    #[must_use]
    pub fn history(&self, subject: &str) -> Vec<SessionFact> {
        self.facts.history(subject)
    }

    /// The current facts and the episodes that answer `query`, rendered within
    /// `max_tokens` (see [`fact_retrieve::recall`]); ranked by words and meaning
    /// ([`HybridRetriever::recall`]) when the service has an embedder.
    ///
    /// # Errors
    ///
    /// The episode store's error, or [`MemoryError::Embedding`] when the model fails on
    /// the query.
    pub fn recall(
        &self,
        query: &str,
        limit: usize,
        max_tokens: usize,
    ) -> Result<Recall, MemoryError> {
        let query = RecallQuery::new(query)
            .with_limit(limit)
            .with_max_tokens(max_tokens);
        if let Some(hybrid) = &self.hybrid {
            return Ok(hybrid.recall(&*self.episodes, &query, &*self.counter)?);
        }
        Ok(recall(
            &*self.facts,
            &*self.episodes,
            &query,
            &*self.counter,
        )?)
    }

    /// Every current fact as seed 002's `Facts:` section (by confidence, within
    /// `max_tokens`), for injection into a system prompt.
    #[must_use]
    pub fn format(&self, max_tokens: usize) -> String {
        let data = MemoryData {
            facts: self
                .facts
                .valid_facts()
                .iter()
                .map(MemoryFact::from_session_fact)
                .collect(),
            ..MemoryData::default()
        };
        format_memory(&data, max_tokens, &*self.counter)
    }

    /// Archives a conversation (JSON Lines of `{"role", "content"}`) as an episode, then
    /// extracts its facts with `extractor` (or the service's own) and stores them,
    /// attributed to the episode.
    ///
    /// The episode is stored before the model is asked, so a failing model loses nothing:
    /// the episode stays pending for [`backfill`](Self::backfill).
    ///
    /// # Errors
    ///
    /// [`MemoryError::EmptyTranscript`], the store's error, or
    /// [`MemoryError::Extraction`] (the episode is archived then).
    pub fn archive(
        &self,
        transcript: &str,
        title: Option<&str>,
        extractor: Option<&dyn ConversationExtractor>,
    ) -> Result<ArchiveReport, MemoryError> {
        let (messages, diagnostics) = parse_transcript(transcript);
        let mut diagnostics: Vec<String> = diagnostics
            .into_iter()
            .map(|d| format!("{}: {}", d.rule, d.message))
            .collect();
        if messages.is_empty() {
            let detail = diagnostics
                .first()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            return Err(MemoryError::EmptyTranscript { detail });
        }
        let title = title.map_or_else(|| default_title(&messages), str::to_owned);
        let mut episode = Episode::new(title, "", transcript, self.clock.now());
        self.episodes.put_episode(&episode)?;
        let extractor = extractor.or(self.extractor.as_deref());
        let facts = match extractor {
            None => None,
            Some(extractor) => {
                let (report, notes) = self.extract_into(&mut episode, extractor)?;
                diagnostics.extend(notes);
                Some(report)
            }
        };
        Ok(ArchiveReport {
            episode_id: episode.id,
            title: episode.title,
            messages: messages.len(),
            facts,
            diagnostics,
        })
    }

    /// Extracts the facts of every episode archived without them, oldest first, calling
    /// `progress(done, total)` after each. Stops at the first model failure, keeping what
    /// the earlier episodes gave.
    ///
    /// # Errors
    ///
    /// The store's error or [`MemoryError::Extraction`].
    pub fn backfill(
        &self,
        extractor: &dyn ConversationExtractor,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<ArchiveReport>, MemoryError> {
        let pending = self.episodes.pending_extraction()?;
        let total = pending.len();
        let mut reports = Vec::with_capacity(total);
        for (done, mut episode) in pending.into_iter().enumerate() {
            let (messages, _) = parse_transcript(&episode.transcript);
            let (report, diagnostics) = self.extract_into(&mut episode, extractor)?;
            reports.push(ArchiveReport {
                episode_id: episode.id,
                title: episode.title,
                messages: messages.len(),
                facts: Some(report),
                diagnostics,
            });
            progress(done + 1, total);
        }
        Ok(reports)
    }

    /// Extracts an episode's facts, stores them as one batch, and records the episode's
    /// summary and extraction time.
    fn extract_into(
        &self,
        episode: &mut Episode,
        extractor: &dyn ConversationExtractor,
    ) -> Result<(AddReport, Vec<String>), MemoryError> {
        let (messages, _) = parse_transcript(&episode.transcript);
        let extraction = extractor
            .extract_conversation(&messages, &episode.id)
            .map_err(|source| MemoryError::Extraction {
                episode_id: episode.id.clone(),
                source,
            })?;
        let batch = extraction.facts;
        let report = self.facts.add(batch.clone())?;
        if let Some(summary) = extraction.summary {
            episode.summary = summary;
        }
        if let Some(title) = extraction.title
            && episode.title.is_empty()
        {
            episode.title = title;
        }
        episode.extracted_at = Some(self.clock.now());
        self.episodes.put_episode(episode)?;
        // After the episode is marked extracted: a model failing here costs no re-extraction.
        self.embed_added(&batch, &report)?;
        let notes = extraction
            .diagnostics
            .into_iter()
            .map(|d| format!("{}: {}", d.rule, d.message))
            .collect();
        Ok((report, notes))
    }
}

/// The longest part of a rejected id an error repeats, in characters.
const MAX_ECHOED_ID_CHARS: usize = 64;

fn parse_id(id: &str) -> Result<FactId, MemoryError> {
    id.trim().parse().map_err(|_| MemoryError::InvalidId {
        id: fact_model::clip(id, MAX_ECHOED_ID_CHARS).into_owned(),
    })
}

/// The first user message, on one line and clipped, as a title.
fn default_title(messages: &[fact_extract::Message]) -> String {
    let first = messages
        .iter()
        .find(|m| m.role == fact_extract::MessageRole::User)
        .or(messages.first())
        .map(|m| m.content.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    fact_model::clip(&first, 80).into_owned()
}

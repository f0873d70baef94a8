//! Archiving conversations and applying what a model extracted from them, backfilling,
//! and forgetting.
//!
//! A conversation is read once ([`read_transcript`]: every message gets its time) and
//! stored once, as an episode of messages, before the model is asked. The model's reply
//! is then applied in one [`MemoryWrite`]: the aliases it names (each checked against the
//! table, and the facts stored under the alias moved to the entity), its facts grouped by
//! turn as one batch per turn in turn order (so a later turn supersedes an earlier one),
//! the facts it `supersedes` ended at the new fact's time with the new fact as successor,
//! those it removes ended at the conversation's time, the episode marked extracted with
//! its title and summary, and the user context and history it gives.

use std::collections::BTreeMap;

use fact_extract::{ConversationExtractor, Diagnostic, TranscriptOptions, read_transcript};
use fact_model::{FactId, Message, MessageRole, Metadata, ProfileField, SessionFact, Timestamp};
use fact_store::{
    AliasChange, Episode, EpisodeExtracted, EraseReport, LongTermStore, MemoryWrite, ProfileEntry,
    Step, StepReport, StoreError, Transaction, check_alias,
};
use serde::Serialize;

use super::error::MemoryError;
use super::service::MemoryService;

/// A conversation to archive.
///
/// ```
/// use dispatch_runtime::ArchiveRequest;
///
/// let request = ArchiveRequest::new("{\"role\": \"user\", \"content\": \"hi\"}")
///     .with_title("Greeting")
///     .with_session_time(Some("2026-03-01T09:00:00Z".parse()?));
/// assert_eq!(request.title, Some("Greeting"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ArchiveRequest<'a> {
    /// JSON Lines of `{"role", "content"}` with an optional `timestamp` (or `time`,
    /// `created_at`).
    pub transcript: &'a str,
    /// The episode's title (default: the first user message, clipped).
    pub title: Option<&'a str>,
    /// When the conversation took place, for messages without a time of their own.
    pub session_time: Option<Timestamp>,
    /// Extract with this instead of the service's extractor.
    pub extractor: Option<&'a dyn ConversationExtractor>,
    /// What the caller says about the conversation: kept on the episode and on every
    /// fact extracted from it.
    pub metadata: Metadata,
}

impl std::fmt::Debug for ArchiveRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveRequest")
            .field("transcript_bytes", &self.transcript.len())
            .field("title", &self.title)
            .field("session_time", &self.session_time)
            .field("extractor", &self.extractor)
            .field("metadata", &self.metadata)
            .finish()
    }
}

impl<'a> ArchiveRequest<'a> {
    /// A request to archive `transcript`.
    #[must_use]
    pub fn new(transcript: &'a str) -> Self {
        ArchiveRequest {
            transcript,
            title: None,
            session_time: None,
            extractor: None,
            metadata: Metadata::new(),
        }
    }

    /// Titles the episode.
    #[must_use]
    pub fn with_title(mut self, title: &'a str) -> Self {
        self.title = Some(title);
        self
    }

    /// Dates the messages that carry no time.
    #[must_use]
    pub fn with_session_time(mut self, at: Option<Timestamp>) -> Self {
        self.session_time = at;
        self
    }

    /// Extracts with `extractor`.
    #[must_use]
    pub fn with_extractor(mut self, extractor: Option<&'a dyn ConversationExtractor>) -> Self {
        self.extractor = extractor;
        self
    }

    /// Puts `metadata` on the episode and on every fact extracted from it.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }
}

/// What applying a model's reply changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryChanges {
    /// New facts (new versions).
    pub added: Vec<FactId>,
    /// Facts the reply stated again that were already current.
    pub refreshed: Vec<FactId>,
    /// Current facts a newer fact of the reply replaced: one of the same subject and
    /// relation, or one it named in `supersedes`.
    pub superseded: Vec<FactId>,
    /// Current facts the reply removed (`facts_to_remove`): ended, never deleted.
    pub removed: Vec<FactId>,
    /// Facts older than the current truth of their key: stored, already superseded.
    pub arrived_superseded: Vec<FactId>,
    /// Facts the store skipped (a duplicate statement, a repeat within the reply).
    pub skipped: usize,
    /// The aliases set, as `(alias, entity)`.
    pub aliases: Vec<(String, String)>,
    /// The user context and history fields that changed.
    pub profile: Vec<ProfileField>,
}

/// What archiving a conversation did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArchiveReport {
    /// The archived episode's id.
    pub episode_id: String,
    /// Its title.
    pub title: String,
    /// How many messages it holds.
    pub messages: usize,
    /// When the conversation took place (its first message's time).
    pub started_at: Timestamp,
    /// What the extraction changed (`None` when no extractor ran).
    pub changes: Option<MemoryChanges>,
    /// Transcript lines that were not messages, and extraction diagnostics.
    pub diagnostics: Vec<String>,
}

/// What a forget deleted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ForgetReport {
    /// The episodes deleted, with their messages.
    pub episodes: Vec<String>,
    /// The facts deleted (every version of each).
    pub facts: Vec<FactId>,
    /// How many versions went.
    pub versions: usize,
    /// The aliases removed.
    pub aliases: Vec<String>,
}

/// Diagnostics as report lines.
fn notes(diagnostics: Vec<Diagnostic>) -> Vec<String> {
    diagnostics
        .into_iter()
        .map(|d| format!("{}: {}", d.rule, d.message))
        .collect()
}

/// `fact` under `subject` (every other field kept), recorded at `at`.
fn under(fact: &SessionFact, subject: &str, at: Timestamp) -> Result<SessionFact, MemoryError> {
    let mut builder = SessionFact::builder(subject, fact.relation(), fact.object())
        .tags(fact.tags().as_slice().iter().copied())
        .valid_from(fact.valid_from())
        .source(fact.source_task_id(), fact.source_role())
        .confidence(fact.confidence())
        .recorded_at(at);
    if let Some(statement) = fact.statement() {
        builder = builder.statement(statement);
    }
    Ok(builder.build()?)
}

/// The steps that move the current facts stored under `alias` to `entity`: the alias's
/// versions ended where they began (valid at no instant, kept in history), then a copy of
/// each under the entity (same triple otherwise, same `valid_from`, recorded at `now`); and
/// the copies.
pub(crate) fn merge_alias(
    store: &dyn LongTermStore,
    alias: &str,
    entity: &str,
    now: Timestamp,
) -> Result<(Transaction, Vec<SessionFact>), MemoryError> {
    let mut transaction = Transaction::new();
    let stored: Vec<SessionFact> = store
        .history(alias)?
        .into_iter()
        .filter(SessionFact::is_valid)
        .collect();
    if stored.is_empty() || alias == entity {
        return Ok((transaction, Vec::new()));
    }
    let copies: Vec<SessionFact> = stored
        .iter()
        .map(|fact| under(fact, entity, now))
        .collect::<Result<_, _>>()?;
    // Ended first, so a copy's statement is not taken for a duplicate of its original; and
    // ended where it began, so no instant sees the fact twice (under both names).
    for fact in &stored {
        transaction.push(Step::End {
            id: fact.id(),
            at: fact.valid_from(),
            by: None,
        });
    }
    transaction.push(Step::Add(copies.clone()));
    Ok((transaction, copies))
}

impl MemoryService {
    /// Archives a conversation as an episode of its messages (each dated: see
    /// [`read_transcript`]), then extracts its facts with the request's extractor (or the
    /// service's) and applies the reply (see the module documentation).
    ///
    /// The episode is stored before the model is asked, so a failing model loses nothing:
    /// the episode stays pending for [`backfill`](Self::backfill).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Transcript`] (too large, empty, a bad or future time: nothing is
    /// stored), the store's error, or [`MemoryError::Extraction`] (the episode is archived
    /// then).
    pub fn archive(&self, request: ArchiveRequest<'_>) -> Result<ArchiveReport, MemoryError> {
        let now = self.clock.now();
        let mut options = TranscriptOptions::new(now);
        if let Some(at) = request.session_time {
            options = options.with_session_time(at);
        }
        let transcript = read_transcript(request.transcript, &options)?;
        let mut diagnostics = notes(transcript.diagnostics);
        let title = request
            .title
            .map_or_else(|| default_title(&transcript.messages), str::to_owned);
        let mut episode =
            Episode::new(title, "", transcript.messages, now).with_metadata(request.metadata);
        {
            let _span = tracing::info_span!("store", operation = "put_episode").entered();
            self.store.put_episode(&episode)?;
        }
        let extractor = request.extractor.or(self.extractor.as_deref());
        let changes = match extractor {
            None => None,
            Some(extractor) => {
                let (changes, more) = self.extract_into(&mut episode, extractor)?;
                diagnostics.extend(more);
                Some(changes)
            }
        };
        Ok(ArchiveReport {
            started_at: episode.started_at(),
            episode_id: episode.id,
            title: episode.title,
            messages: episode.messages.len(),
            changes,
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
        let pending = self.store.pending_extraction()?;
        let total = pending.len();
        let mut reports = Vec::with_capacity(total);
        for (done, mut episode) in pending.into_iter().enumerate() {
            let (changes, diagnostics) = self.extract_into(&mut episode, extractor)?;
            reports.push(ArchiveReport {
                started_at: episode.started_at(),
                episode_id: episode.id,
                title: episode.title,
                messages: episode.messages.len(),
                changes: Some(changes),
                diagnostics,
            });
            progress(done + 1, total);
        }
        Ok(reports)
    }

    /// Asks `extractor` about `episode` (with what memory already holds in the prompt)
    /// and applies the reply in one commit; updates `episode`'s title and summary.
    fn extract_into(
        &self,
        episode: &mut Episode,
        extractor: &dyn ConversationExtractor,
    ) -> Result<(MemoryChanges, Vec<String>), MemoryError> {
        let known = self.known_memory(&episode.messages)?;
        let span = tracing::info_span!(
            "extraction",
            messages = episode.messages.len(),
            facts = tracing::field::Empty
        );
        let extraction = span
            .in_scope(|| extractor.extract_conversation(&episode.messages, &episode.id, &known))
            .map_err(|source| MemoryError::Extraction {
                episode_id: episode.id.clone(),
                source,
            })?;
        span.record("facts", extraction.facts.len());
        let now = self.clock.now();
        let said_at = episode
            .messages
            .iter()
            .rev()
            .find_map(|m| m.timestamp)
            .unwrap_or(now);
        let mut notes = notes(extraction.diagnostics);
        let mut write = MemoryWrite::default();
        let mut changes = MemoryChanges::default();
        // Aliases first: facts of this reply about an alias go to its entity.
        let mut entities = self.entities()?;
        let mut moved = Vec::new();
        for alias in extraction.aliases {
            let table = entities.clone();
            let checked = check_alias(&alias.alias, &alias.entity, |name| {
                Ok::<_, StoreError>(table.entity_of(name))
            });
            if let Err(error) = checked {
                notes.push(format!("llm.alias: {error}"));
                continue;
            }
            let entity = entities.resolve(&alias.entity);
            let (steps, copies) = merge_alias(&*self.store, &alias.alias, &entity, now)?;
            write.facts.steps.extend(steps.steps);
            moved.extend(copies);
            entities.push(&alias.alias, &alias.entity, said_at);
            write.aliases.push(AliasChange::Set {
                alias: alias.alias.clone(),
                entity: alias.entity.clone(),
                at: said_at,
            });
            changes.aliases.push((alias.alias, alias.entity));
        }
        // One batch per turn, in turn order; facts without a turn last.
        let mut turns: BTreeMap<(bool, usize), Vec<SessionFact>> = BTreeMap::new();
        let mut successors: Vec<(FactId, SessionFact)> = Vec::new();
        for extracted in extraction.facts {
            let subject = entities.resolve(extracted.fact.subject());
            let mut fact = under(&extracted.fact, &subject, now)?;
            // The episode's metadata goes on every fact extracted from it.
            if !episode.metadata.is_empty() {
                fact = fact.with_metadata(episode.metadata.clone());
            }
            for old in extracted.supersedes {
                successors.push((old, fact.clone()));
            }
            let key = match extracted.turn {
                Some(turn) => (false, turn),
                None => (true, 0),
            };
            turns.entry(key).or_default().push(fact);
        }
        let batches: Vec<Vec<SessionFact>> = turns.into_values().collect();
        let added_facts: Vec<SessionFact> = batches.iter().flatten().cloned().collect();
        let first_reply_step = write.facts.steps.len();
        for batch in batches {
            write.facts.push(Step::Add(batch));
        }
        let first_end = write.facts.steps.len();
        for (old, by) in &successors {
            write.facts.push(Step::End {
                id: *old,
                at: by.valid_from(),
                by: Some(by.id()),
            });
        }
        let first_removal = write.facts.steps.len();
        for id in extraction.remove {
            write.facts.push(Step::End {
                id,
                at: said_at,
                by: None,
            });
        }
        write.profile = extraction
            .profile
            .into_iter()
            .map(|(field, text)| ProfileEntry {
                field,
                text,
                at: said_at,
            })
            .collect();
        // The model's title replaces only the one archiving derived from the first message.
        let derived = episode.title.is_empty() || episode.title == default_title(&episode.messages);
        let title = extraction.title.filter(|_| derived);
        if let Some(title) = &title {
            episode.title.clone_from(title);
        }
        write.extracted = Some(
            EpisodeExtracted::new(episode.id.clone(), now)
                .with_title(title)
                .with_summary(extraction.summary.clone()),
        );
        let report = {
            let _span = tracing::info_span!("store", operation = "commit").entered();
            self.store.commit(write)?
        };
        for (at, step) in report.facts.steps.iter().enumerate() {
            match step {
                StepReport::Added(added) if at >= first_reply_step => {
                    changes.added.extend(&added.added);
                    changes.refreshed.extend(&added.refreshed);
                    changes.superseded.extend(&added.invalidated);
                    changes.arrived_superseded.extend(&added.arrived_superseded);
                    changes.skipped += added.skipped.len();
                }
                StepReport::Ended { ids } if at >= first_removal => {
                    changes.removed.extend(ids);
                }
                StepReport::Ended { ids } if at >= first_end => {
                    changes.superseded.extend(ids);
                }
                StepReport::NotEnded { id, reason } if at >= first_end => {
                    notes.push(format!("llm.id: {id} was not ended: {}", reason.as_str()));
                }
                _ => {}
            }
        }
        changes.profile = report.profile_changed;
        if let Some(summary) = extraction.summary {
            episode.summary = summary;
        }
        episode.extracted_at = Some(now);
        // After the commit: a model failing here costs no re-extraction.
        let mut embedded = changes.added.clone();
        self.embed_added(&added_facts, &embedded)?;
        embedded.clear();
        for step in report.facts.steps.iter().take(first_reply_step) {
            if let StepReport::Added(added) = step {
                embedded.extend(&added.added);
            }
        }
        self.embed_added(&moved, &embedded)?;
        Ok((changes, notes))
    }

    /// Erases the whole scope, in one transaction: every version of every fact with its
    /// embeddings and token vectors, every episode with its messages, the aliases, the
    /// user context's versions and the keys of applied writes
    /// ([`LongTermStore::erase`]). Memory is then as empty as a new one, and stays open.
    /// What it deleted; an empty report when memory held nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dispatch_runtime::{MemoryService, NewMemory};
    /// use dispatch_runtime::reexports::{InMemoryLongTermStore, SystemClock};
    ///
    /// let memory = MemoryService::new(
    ///     Arc::new(InMemoryLongTermStore::default()),
    ///     Arc::new(SystemClock),
    /// );
    /// memory.add(NewMemory::new("user", "prefers", "pytest"))?;
    /// let erased = memory.erase()?;
    /// assert_eq!(erased.versions, 1);
    /// assert!(memory.list(&Default::default())?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The store's error; nothing is deleted then.
    pub fn erase(&self) -> Result<EraseReport, MemoryError> {
        Ok(self.store.erase()?)
    }

    /// Deletes an episode, its messages, and every fact extracted from it (every version
    /// of each), with their embeddings, in one commit: for a user who asks to be
    /// forgotten.
    ///
    /// # Errors
    ///
    /// [`MemoryError::NotFound`] for an unknown episode, or the store's error.
    pub fn forget_episode(&self, id: &str) -> Result<ForgetReport, MemoryError> {
        let id = id.trim();
        if self.store.episode(id)?.is_none() {
            return Err(MemoryError::not_found(id));
        }
        let facts = self.store.fact_ids_from_source(id)?;
        let mut write = MemoryWrite::default();
        write.delete_episodes.push(id.to_owned());
        for fact in &facts {
            write.facts.push(Step::Delete(*fact));
        }
        let report = {
            let _span = tracing::info_span!("store", operation = "commit").entered();
            self.store.commit(write)?
        };
        Ok(ForgetReport {
            episodes: vec![id.to_owned()],
            versions: deleted_versions(&report.facts.steps),
            facts,
            aliases: Vec::new(),
        })
    }

    /// Deletes every version of every fact about `subject` (normalized) and its aliases,
    /// and the aliases, in one commit, with their embeddings; says what it deleted.
    ///
    /// # Errors
    ///
    /// [`MemoryError::NotFound`] when memory holds nothing about the subject, or the
    /// store's error.
    pub fn forget_subject(&self, subject: &str) -> Result<ForgetReport, MemoryError> {
        let entities = self.entities()?;
        let names = entities.names_of(subject);
        let entity = entities.resolve(subject);
        let mut facts: Vec<FactId> = Vec::new();
        for name in &names {
            for version in self.store.history(name)? {
                if !facts.contains(&version.id()) {
                    facts.push(version.id());
                }
            }
        }
        let aliases: Vec<String> = entities
            .aliases()
            .iter()
            .filter(|a| entities.resolve(&a.alias) == entity)
            .map(|a| a.alias.clone())
            .collect();
        if facts.is_empty() && aliases.is_empty() {
            return Err(MemoryError::not_found(subject));
        }
        let mut write = MemoryWrite::default();
        for fact in &facts {
            write.facts.push(Step::Delete(*fact));
        }
        for alias in &aliases {
            write.aliases.push(AliasChange::Remove {
                alias: alias.clone(),
            });
        }
        let report = {
            let _span = tracing::info_span!("store", operation = "commit").entered();
            self.store.commit(write)?
        };
        Ok(ForgetReport {
            episodes: Vec::new(),
            versions: deleted_versions(&report.facts.steps),
            facts,
            aliases,
        })
    }
}

/// How many versions the delete steps of a transaction removed.
fn deleted_versions(steps: &[StepReport]) -> usize {
    steps
        .iter()
        .map(|step| match step {
            StepReport::Deleted { versions, .. } => *versions,
            _ => 0,
        })
        .sum()
}

/// The first user message, on one line and clipped, as a title.
fn default_title(messages: &[Message]) -> String {
    let first = messages
        .iter()
        .find(|m| m.role == MessageRole::User)
        .or(messages.first())
        .map(|m| m.content.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    fact_model::clip(&first, 80).into_owned()
}

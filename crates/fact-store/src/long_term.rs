//! [`LongTermStore`]: everything long-term memory keeps about one scope (facts, episodes,
//! entity aliases and the user's profile) and [`MemoryWrite`], a change of any of them
//! that commits whole or not at all.
//!
//! The rules that decide (alias cycles, unchanged profile texts) are functions here,
//! applied by every backend over its own rows: [`check_alias`] and [`profile_changes`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use fact_model::{
    Clock, FactId, FactSelector, FactUpdate, Filter, ProfileField, SessionFact, SystemClock, Tag,
    Timestamp,
};
use indexmap::IndexMap;
use serde::Serialize;

use crate::export::{ExportOptions, ExportRecord, ExportSource};
use crate::side::{Alias, ProfileEntry};
use crate::{
    AddReport, Analyzer, CompactionReport, EdgeQuery, Episode, EpisodeExtracted, EpisodeStore,
    EraseReport, FactVectors, ImportReport, InMemoryEpisodeStore, InMemorySessionFactStore,
    MemoryImportReport, MessageHit, MessageQuery, ScoredFact, SessionFactStore, Snapshot,
    StoreConfig, StoreError, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
};

/// The longest chain of aliases followed (an alias of an alias of …); a longer chain is
/// refused as if it were a cycle.
pub const MAX_ALIAS_DEPTH: usize = 32;

/// A change of the alias table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AliasChange {
    /// `alias` names `entity` from `at` on (replacing what it named before).
    Set {
        /// The other name.
        alias: String,
        /// The entity.
        entity: String,
        /// When.
        at: Timestamp,
    },
    /// `alias` names nothing any more.
    Remove {
        /// The name.
        alias: String,
    },
}

/// Changes of long-term memory that commit together, in this order: the alias changes,
/// the episodes to delete, the episode to store, the facts' [`Transaction`], the episode
/// marked extracted, the profile versions. On a durable store all of it is one database
/// transaction.
///
/// ```
/// use fact_model::{ProfileField, Timestamp};
/// use fact_store::{AliasChange, InMemoryLongTermStore, LongTermStore, MemoryWrite, ProfileEntry};
///
/// let store = InMemoryLongTermStore::default();
/// let at = Timestamp::from_unix_secs(1_800_000_000)?;
/// let mut write = MemoryWrite::default();
/// write.aliases.push(AliasChange::Set { alias: "mel".into(), entity: "melanie".into(), at });
/// write.profile.push(ProfileEntry { field: ProfileField::Work, text: "Nurse".into(), at });
/// store.commit(write)?;
/// assert_eq!(store.aliases()?[0].entity, "melanie");
/// assert_eq!(store.profile()?[0].text, "Nurse");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct MemoryWrite {
    /// The facts' steps.
    pub facts: Transaction,
    /// An episode to store (inserted, or replacing the one with its id).
    pub episode: Option<Episode>,
    /// Episodes to delete, with their messages.
    pub delete_episodes: Vec<String>,
    /// An episode whose facts were extracted (its messages are not written again).
    pub extracted: Option<EpisodeExtracted>,
    /// Alias changes, in order.
    pub aliases: Vec<AliasChange>,
    /// New profile versions; one whose text equals the field's current text is no change.
    pub profile: Vec<ProfileEntry>,
}

/// What a [`MemoryWrite`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryReport {
    /// What the facts' transaction did.
    pub facts: TransactionReport,
    /// How many alias changes were applied.
    pub aliases_changed: usize,
    /// How many of the episodes to delete existed.
    pub episodes_deleted: usize,
    /// The profile fields that took a new text.
    pub profile_changed: Vec<ProfileField>,
}

/// Long-term memory's storage: the facts ([`SessionFactStore`]), the episodes
/// ([`EpisodeStore`]) and, beside them, the entity aliases and the user's profile, all
/// of one scope, written together by [`commit`](Self::commit).
///
/// Implemented by [`InMemoryLongTermStore`] and by the SQL stores (`SqliteFactStore`,
/// `PgFactStore`), where one object holds all of it. Object safe: hold it as
/// `Arc<dyn LongTermStore>`, and give it where an `Arc<dyn SessionFactStore>` or an
/// `Arc<dyn EpisodeStore>` is wanted (trait upcasting).
pub trait LongTermStore: SessionFactStore + EpisodeStore {
    /// Applies `write` whole, or nothing of it.
    ///
    /// # Errors
    ///
    /// [`StoreError::AliasCycle`] or [`StoreError::InvalidAlias`] for an alias change the
    /// rules refuse ([`check_alias`]), [`StoreError::EpisodeNotFound`] for an
    /// [`extracted`](MemoryWrite::extracted) episode that is not stored, or a durable
    /// store's error; nothing changes then.
    fn commit(&self, write: MemoryWrite) -> StoreResult<MemoryReport>;

    /// Deletes everything of the scope, in one transaction: every version of every fact,
    /// their embeddings and token vectors, the episodes and their messages, the aliases,
    /// the profile versions, the keys of applied transactions, and the words that indexed
    /// them. The store stays open on the scope, as empty as a new one; caches of the scope
    /// in this process are dropped, and those of other processes reload at their next
    /// read.
    ///
    /// On SQLite, the freed pages are zeroed and the WAL is checkpointed, so that no byte
    /// of the erased text stays in the files; on PostgreSQL the rows are dead tuples until
    /// `VACUUM` (see `docs/protocol.md`).
    ///
    /// # Errors
    ///
    /// A durable store's error; nothing is deleted then.
    fn erase(&self) -> StoreResult<EraseReport>;

    /// Gives `sink` every record of the scope, in the order of the export format
    /// (`docs/export-format.md`): every version of every fact with its batch, oldest first;
    /// the episodes with their messages, in archive order; the aliases, in the order they
    /// were set; every profile version, oldest first. With
    /// [`as_of`](ExportOptions::as_of), the memory as it was then.
    ///
    /// Provided, from the reads of the whole scope; the SQL stores override it with one
    /// read transaction whose rows stream to `sink`, so memory stays flat however large
    /// the scope.
    ///
    /// # Errors
    ///
    /// A durable store's read error, or the first error `sink` returns (which ends the
    /// export).
    fn export_to(
        &self,
        options: &ExportOptions,
        sink: &mut dyn FnMut(ExportRecord) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let records = self
            .export_snapshot()?
            .records
            .into_iter()
            .map(ExportRecord::Fact)
            .chain(self.episodes()?.into_iter().map(ExportRecord::Episode))
            .chain(self.aliases()?.into_iter().map(ExportRecord::Alias))
            .chain(
                self.profile_history()?
                    .into_iter()
                    .map(ExportRecord::Profile),
            );
        for record in records {
            if let Some(record) = options.keep(record) {
                sink(record)?;
            }
        }
        Ok(())
    }

    /// Imports an export ([`export_to`](Self::export_to) written by an
    /// [`ExportWriter`](crate::ExportWriter)) into the scope, whole or not at all: the
    /// file is read to its end record before anything is kept, so a line that is not a
    /// record, or a file cut short, imports nothing.
    ///
    /// Into an empty scope the import is exact: exporting it again writes the same bytes
    /// (but for the header's scope). Into a scope that holds memory already it merges (see
    /// `docs/export-format.md`): a version the scope holds already is left as it is; the
    /// file's batches count as newer than the scope's, so its valid facts supersede the
    /// scope's on the same subject and relation; an episode replaces one with its id; an
    /// alias is set; a profile version is added after the scope's own. A file imported
    /// twice changes nothing the second time.
    ///
    /// # Errors
    ///
    /// [`StoreError::Export`] naming the line of a file that cannot be imported (an alias
    /// the scope's aliases would make a cycle of included), [`StoreError::ExportVersion`]
    /// for a newer format, or a durable store's error; nothing is imported then.
    fn import_from(&self, source: &dyn ExportSource) -> StoreResult<MemoryImportReport>;

    /// Every alias, in the order they were set.
    ///
    /// # Errors
    ///
    /// A durable store's read error.
    fn aliases(&self) -> StoreResult<Vec<Alias>>;

    /// The current text of each profile field that has one (the latest version; empty
    /// when it was cleared), in [`ProfileField::ALL`] order.
    ///
    /// # Errors
    ///
    /// A durable store's read error.
    fn profile(&self) -> StoreResult<Vec<ProfileEntry>>;

    /// Every profile version ever written, oldest first.
    ///
    /// # Errors
    ///
    /// A durable store's read error.
    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>>;

    /// The ids of every fact with a version whose `source_task_id` is `source` (an
    /// episode id: the facts extracted from it), in first-stored order.
    ///
    /// # Errors
    ///
    /// A durable store's read error.
    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>>;

    /// The valid facts about `subject`, newest first, at most `limit`. Provided: the
    /// valid versions of [`history`](SessionFactStore::history); backends override it
    /// with a query that reads no more than `limit` facts.
    ///
    /// # Errors
    ///
    /// A durable store's read error.
    fn valid_about(&self, subject: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        let mut valid: Vec<SessionFact> = self
            .history(subject)?
            .into_iter()
            .filter(SessionFact::is_valid)
            .collect();
        valid.reverse();
        valid.truncate(limit);
        Ok(valid)
    }

    /// The distinct relations of the valid facts about `subject`, in the order they first
    /// appear, at most `limit`. Provided, from [`history`](SessionFactStore::history).
    ///
    /// # Errors
    ///
    /// A durable store's read error.
    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>> {
        let mut relations: Vec<String> = Vec::new();
        for fact in self.history(subject)? {
            if relations.len() == limit {
                break;
            }
            if fact.is_valid() && !relations.iter().any(|r| r == fact.relation()) {
                relations.push(fact.relation().to_owned());
            }
        }
        Ok(relations)
    }
}

/// Whether `alias` may name `entity`, given the table as `lookup` reads it (alias →
/// entity): both must be non-blank, different, and `entity` must not lead back to
/// `alias` through the table (at most [`MAX_ALIAS_DEPTH`] steps).
///
/// # Errors
///
/// [`StoreError::InvalidAlias`] for a blank name, [`StoreError::AliasCycle`] for a cycle.
///
/// ```
/// use std::collections::HashMap;
/// use fact_store::check_alias;
///
/// let table = HashMap::from([("mel".to_owned(), "melanie".to_owned())]);
/// let lookup = |name: &str| Ok::<_, fact_store::StoreError>(table.get(name).cloned());
/// assert!(check_alias("mellie", "mel", lookup).is_ok());
/// assert_eq!(check_alias("melanie", "mel", lookup).unwrap_err().code(), "alias_cycle");
/// assert_eq!(check_alias("x", "x", lookup).unwrap_err().code(), "alias_cycle");
/// assert_eq!(check_alias(" ", "x", lookup).unwrap_err().code(), "invalid_alias");
/// ```
pub fn check_alias<E: From<StoreError>>(
    alias: &str,
    entity: &str,
    mut lookup: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<(), E> {
    if alias.trim().is_empty() || entity.trim().is_empty() {
        return Err(StoreError::InvalidAlias {
            alias: fact_model::clip(alias, 64).into_owned(),
            reason: "an alias and its entity must not be blank".into(),
        }
        .into());
    }
    let cycle = || StoreError::AliasCycle {
        alias: fact_model::clip(alias, 64).into_owned(),
        entity: fact_model::clip(entity, 64).into_owned(),
    };
    let mut at = entity.to_owned();
    for _ in 0..MAX_ALIAS_DEPTH {
        if at == alias {
            return Err(cycle().into());
        }
        match lookup(&at)? {
            Some(next) => at = next,
            None => return Ok(()),
        }
    }
    Err(cycle().into())
}

/// The versions of `entries` that change their field: those whose text differs from the
/// field's text before them (`current`, then the earlier entries), in order.
pub fn profile_changes(current: &[ProfileEntry], entries: &[ProfileEntry]) -> Vec<ProfileEntry> {
    let mut texts: HashMap<ProfileField, &str> = current
        .iter()
        .map(|entry| (entry.field, entry.text.as_str()))
        .collect();
    let mut changes = Vec::new();
    for entry in entries {
        let before = texts.get(&entry.field).copied().unwrap_or("");
        if before != entry.text {
            texts.insert(entry.field, &entry.text);
            changes.push(entry.clone());
        }
    }
    changes
}

/// The latest version of each field in `history` (oldest first), in
/// [`ProfileField::ALL`] order: the profile as `history` leaves it.
#[must_use]
pub fn current_profile(history: &[ProfileEntry]) -> Vec<ProfileEntry> {
    let mut latest: HashMap<ProfileField, &ProfileEntry> = HashMap::new();
    for entry in history {
        latest.insert(entry.field, entry);
    }
    ProfileField::ALL
        .iter()
        .filter_map(|field| latest.get(field).map(|entry| (*entry).clone()))
        .collect()
}

/// A [`LongTermStore`] in memory: an [`InMemorySessionFactStore`] and an
/// [`InMemoryEpisodeStore`], with the aliases and the profile beside them. Commits take
/// one lock, so no reader of another commit sees half of one.
pub struct InMemoryLongTermStore {
    facts: InMemorySessionFactStore,
    episodes: InMemoryEpisodeStore,
    side: RwLock<Side>,
    /// Held through a commit.
    commit: Mutex<()>,
}

/// The aliases and profile versions.
#[derive(Default)]
struct Side {
    aliases: IndexMap<String, Alias>,
    profile: Vec<ProfileEntry>,
}

impl Default for InMemoryLongTermStore {
    /// A store without capacity limits (long-term memory is not compacted behind the
    /// user's back) and the system clock.
    fn default() -> Self {
        InMemoryLongTermStore::new(
            StoreConfig::default()
                .with_capacity(usize::MAX)
                .with_history_limit(usize::MAX)
                .with_auto_compact(false),
            Arc::new(SystemClock),
        )
    }
}

impl fmt::Debug for InMemoryLongTermStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryLongTermStore")
            .field("facts", &self.facts)
            .field("episodes", &self.episodes)
            .finish_non_exhaustive()
    }
}

impl InMemoryLongTermStore {
    /// An empty store; its fact store is built with `config` and `clock`.
    #[must_use]
    pub fn new(config: StoreConfig, clock: Arc<dyn Clock>) -> Self {
        InMemoryLongTermStore {
            facts: InMemorySessionFactStore::new(config, clock),
            episodes: InMemoryEpisodeStore::default(),
            side: RwLock::new(Side::default()),
            commit: Mutex::new(()),
        }
    }

    fn side(&self) -> std::sync::RwLockReadGuard<'_, Side> {
        self.side.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LongTermStore for InMemoryLongTermStore {
    fn erase(&self) -> StoreResult<EraseReport> {
        // Under the commit lock: no commit is half applied to the fresh state.
        let _commit = self.commit.lock().unwrap_or_else(PoisonError::into_inner);
        let mut side = self.side.write().unwrap_or_else(PoisonError::into_inner);
        let erased = std::mem::take(&mut *side);
        let mut report = EraseReport {
            aliases: erased.aliases.len(),
            profile_versions: erased.profile.len(),
            ..self.facts.erase()
        };
        (report.episodes, report.messages) = self.episodes.erase();
        Ok(report)
    }

    fn import_from(&self, source: &dyn ExportSource) -> StoreResult<MemoryImportReport> {
        let _commit = self.commit.lock().unwrap_or_else(PoisonError::into_inner);
        // A first pass reads the file to its end record and checks every alias against
        // the table as the file leaves it: after it, nothing can fail half way.
        let mut aliases = self.side().aliases.clone();
        let mut reader = source.open()?;
        while let Some(record) = reader.next() {
            if let ExportRecord::Alias(alias) = record? {
                set_alias(&mut aliases, alias)
                    .map_err(|error| error.at_export_line(reader.line()))?;
            }
        }
        let mut report = MemoryImportReport::default();
        // The facts are imported in one call: the store holds them all anyway.
        let mut facts = Vec::new();
        let mut side = self.side.write().unwrap_or_else(PoisonError::into_inner);
        let mut profile: HashSet<ProfileEntry> = side.profile.iter().cloned().collect();
        let (mut episodes, mut aliases_set, mut profile_versions, mut unchanged) = (0, 0, 0, 0);
        let mut reader = source.open()?;
        while let Some(record) = reader.next() {
            let line = usize::try_from(reader.line()).unwrap_or(usize::MAX);
            match record? {
                ExportRecord::Fact(record) => facts.push((line, record)),
                ExportRecord::Episode(episode) => {
                    if self.episodes.episode(&episode.id)?.as_ref() == Some(&episode) {
                        unchanged += 1;
                    } else {
                        self.episodes.put_episode(&episode)?;
                        episodes += 1;
                    }
                }
                ExportRecord::Alias(alias) => {
                    if side.aliases.get(&alias.alias) == Some(&alias) {
                        unchanged += 1;
                    } else {
                        set_alias(&mut side.aliases, alias)?;
                        aliases_set += 1;
                    }
                }
                ExportRecord::Profile(entry) => {
                    if profile.insert(entry.clone()) {
                        side.profile.push(entry);
                        profile_versions += 1;
                    } else {
                        unchanged += 1;
                    }
                }
                _ => {}
            }
        }
        let base = self.facts.last_batch();
        report.facts = self.facts.import_records(facts, base);
        report.episodes = episodes;
        report.aliases = aliases_set;
        report.profile_versions = profile_versions;
        report.unchanged = unchanged + report.facts.unchanged;
        Ok(report)
    }

    fn commit(&self, write: MemoryWrite) -> StoreResult<MemoryReport> {
        let _commit = self.commit.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = write.facts.key_digest()
            && self.facts.applied(&key)
        {
            return Ok(MemoryReport {
                facts: TransactionReport::of_replay(),
                ..MemoryReport::default()
            });
        }
        let mut side = self.side.write().unwrap_or_else(PoisonError::into_inner);
        // Check every alias change against the table as the earlier ones leave it, before
        // anything changes: the only part of a commit that can be refused.
        let mut aliases = side.aliases.clone();
        for change in &write.aliases {
            match change {
                AliasChange::Set { alias, entity, at } => {
                    check_alias(alias, entity, |name| {
                        Ok::<_, StoreError>(aliases.get(name).map(|a| a.entity.clone()))
                    })?;
                    aliases.insert(
                        alias.clone(),
                        Alias {
                            alias: alias.clone(),
                            entity: entity.clone(),
                            at: *at,
                        },
                    );
                }
                AliasChange::Remove { alias } => {
                    aliases.shift_remove(alias);
                }
            }
        }
        if let Some(extracted) = &write.extracted {
            let deleted = write.delete_episodes.contains(&extracted.id);
            let stored = write.episode.as_ref().is_some_and(|e| e.id == extracted.id)
                || self.episodes.episode(&extracted.id)?.is_some();
            if deleted || !stored {
                return Err(StoreError::EpisodeNotFound {
                    id: extracted.id.clone(),
                });
            }
        }
        let mut report = MemoryReport {
            aliases_changed: write.aliases.len(),
            ..MemoryReport::default()
        };
        side.aliases = aliases;
        for id in &write.delete_episodes {
            if self.episodes.delete_episode(id)? {
                report.episodes_deleted += 1;
            }
        }
        if let Some(episode) = &write.episode {
            self.episodes.put_episode(episode)?;
        }
        report.facts = self.facts.apply(write.facts)?;
        if let Some(extracted) = &write.extracted {
            self.episodes.mark_extracted_with(extracted)?;
        }
        let current = current_profile(&side.profile);
        for change in profile_changes(&current, &write.profile) {
            report.profile_changed.push(change.field);
            side.profile.push(change);
        }
        Ok(report)
    }

    fn aliases(&self) -> StoreResult<Vec<Alias>> {
        Ok(self.side().aliases.values().cloned().collect())
    }

    fn profile(&self) -> StoreResult<Vec<ProfileEntry>> {
        Ok(current_profile(&self.side().profile))
    }

    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>> {
        Ok(self.side().profile.clone())
    }

    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>> {
        Ok(self.facts.ids_from_source(source))
    }

    fn valid_about(&self, subject: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        Ok(self.facts.valid_about(subject, limit))
    }

    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>> {
        Ok(self.facts.relations_of(subject, limit))
    }
}

/// Sets `alias` in `table` if the rules allow it.
fn set_alias(table: &mut IndexMap<String, Alias>, alias: Alias) -> StoreResult<()> {
    check_alias(&alias.alias, &alias.entity, |name| {
        Ok::<_, StoreError>(table.get(name).map(|a| a.entity.clone()))
    })?;
    table.insert(alias.alias.clone(), alias);
    Ok(())
}

impl EpisodeStore for InMemoryLongTermStore {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        self.episodes.put_episode(episode)
    }

    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.episodes.episode(id)
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.episodes.episodes()
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        self.episodes.search_episodes(query, limit)
    }

    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>> {
        self.episodes.search_messages(query, weighting)
    }

    fn delete_episode(&self, id: &str) -> StoreResult<bool> {
        self.episodes.delete_episode(id)
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        self.episodes.mark_extracted(id, at)
    }
}

impl SessionFactStore for InMemoryLongTermStore {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        self.facts.add(batch)
    }
    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        self.facts.apply(transaction)
    }
    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        self.facts.invalidate_matching(selector)
    }
    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        self.facts.compact(max_valid)
    }
    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.facts.update(id, update)
    }
    fn delete(&self, id: FactId) -> StoreResult<usize> {
        self.facts.delete(id)
    }
    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        self.facts.import(snapshot)
    }
    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        self.facts.valid_facts()
    }
    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        self.facts.valid_at(at)
    }
    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        self.facts.history(subject)
    }
    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        self.facts.get(id)
    }
    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        self.facts.export_snapshot()
    }
    fn analyzer(&self) -> &Analyzer {
        self.facts.analyzer()
    }
    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        self.facts.search(query, weighting)
    }
    fn valid_facts_by_tags(&self, tags: &[Tag]) -> StoreResult<Vec<SessionFact>> {
        self.facts.valid_facts_by_tags(tags)
    }
    fn select(&self, filter: &Filter, as_of: Option<Timestamp>) -> StoreResult<Vec<SessionFact>> {
        self.facts.select(filter, as_of)
    }
    fn touching(&self, query: &EdgeQuery<'_>) -> StoreResult<Vec<SessionFact>> {
        self.facts.touching(query)
    }
    fn valid_count(&self) -> StoreResult<usize> {
        self.facts.valid_count()
    }
    fn stored_count(&self) -> StoreResult<usize> {
        self.facts.stored_count()
    }
    fn vectors(&self) -> Option<&dyn FactVectors> {
        self.facts.vectors()
    }
}

//! [`commit`]: a [`MemoryWrite`] in one write transaction of one scope, for every SQL
//! store, over the rows a backend implements ([`MemoryRows`], beside the facts' [`Rows`]).
//!
//! The order is that of `InMemoryLongTermStore::commit`, and so are the rules
//! ([`check_alias`], [`profile_changes`]): alias changes (each checked against the table
//! as the earlier ones left it, in the same transaction), episodes deleted, the episode
//! stored, the facts' transaction, the episode marked extracted, the profile versions. Any
//! error rolls all of it back.

use std::collections::HashSet;

use fact_model::Timestamp;

use super::error::{DbError, DbResult, newer};
use super::rules::{Rows, Writer};
use fact_store::current_profile;
use fact_store::{
    Alias, AliasChange, Analyzer, Episode, EpisodeExtracted, EraseReport, ExportRecord,
    ExportSource, MemoryImportReport, MemoryReport, MemoryWrite, ProfileEntry, SnapshotRecord,
    StoreConfig, StoreError, TransactionReport, check_alias, profile_changes,
};

/// The rows of long-term memory beside the facts, in one open write transaction of one
/// scope. Each method is a few statements; none decides anything.
pub trait MemoryRows: Rows {
    /// The entity `alias` names, if it is one.
    fn alias_entity(&mut self, alias: &str) -> DbResult<Option<String>, Self::Error>;
    /// Sets (inserts or replaces) an alias.
    fn set_alias(&mut self, alias: &Alias) -> DbResult<(), Self::Error>;
    /// Removes an alias (nothing when it is none).
    fn remove_alias(&mut self, alias: &str) -> DbResult<(), Self::Error>;
    /// Every profile version, oldest first.
    fn profile_versions(&mut self) -> DbResult<Vec<ProfileEntry>, Self::Error>;
    /// Appends a profile version.
    fn insert_profile(&mut self, entry: &ProfileEntry) -> DbResult<(), Self::Error>;
    /// Stores an episode, replacing the one with its id, and indexes its messages
    /// (analyzed with `analyzer`), keeping the scope's message statistics and document
    /// frequencies.
    fn put_episode(&mut self, episode: &Episode, analyzer: &Analyzer) -> DbResult<(), Self::Error>;
    /// The episode `id` with its messages, as this transaction sees it.
    fn episode(&mut self, id: &str) -> DbResult<Option<Episode>, Self::Error>;
    /// Deletes an episode and its messages, from the index and the statistics too;
    /// whether there was one.
    fn delete_episode(&mut self, id: &str) -> DbResult<bool, Self::Error>;
    /// Marks an episode extracted, with a new title and summary when given (its messages
    /// untouched); whether there was one.
    /// `analyzer` analyzes the new title and summary for the episode search.
    fn mark_extracted(
        &mut self,
        extracted: &EpisodeExtracted,
        analyzer: &Analyzer,
    ) -> DbResult<bool, Self::Error>;
    /// Deletes every row of the scope from every table but `scopes` (whose counters
    /// [`Writer::commit`](crate::rules::Writer::commit) writes after [`erase`] restarts
    /// them), full-text indexes included, and zeroes the scope's message statistics;
    /// what it deleted.
    fn erase_scope(&mut self) -> DbResult<EraseReport, Self::Error>;
}

/// A failed alias lookup inside [`check_alias`], which reports its own findings as
/// [`StoreError`]s: both come back out as the [`DbError`] they are.
struct Lookup<E>(DbError<E>);

impl<E> From<StoreError> for Lookup<E> {
    fn from(error: StoreError) -> Self {
        Lookup(DbError::Store(error))
    }
}

/// Applies `write` in the transaction of `writer`: see the module documentation.
pub fn commit<R: Rows + MemoryRows>(
    writer: &mut Writer<'_, R>,
    write: MemoryWrite,
    now: Timestamp,
    config: &StoreConfig,
    episode_analyzer: &Analyzer,
) -> DbResult<MemoryReport, R::Error> {
    // A keyed write committed before changes nothing, whichever part it holds.
    if let Some(key) = write.facts.key_digest()
        && writer.rows_mut().applied(&key)?
    {
        return Ok(MemoryReport {
            facts: TransactionReport::of_replay(),
            ..MemoryReport::default()
        });
    }
    let MemoryWrite {
        facts,
        episode,
        delete_episodes,
        extracted,
        aliases,
        profile,
        // `MemoryWrite` is non-exhaustive: a part added to it must be committed here too
        // (the conformance suite's long-term tests write every part).
        ..
    } = write;
    let mut report = MemoryReport {
        aliases_changed: aliases.len(),
        ..MemoryReport::default()
    };
    for change in aliases {
        let rows = writer.rows_mut();
        match change {
            AliasChange::Set { alias, entity, at } => {
                check_alias(&alias, &entity, |name| {
                    rows.alias_entity(name).map_err(Lookup)
                })
                .map_err(|Lookup(error)| error)?;
                rows.set_alias(&Alias { alias, entity, at })?;
            }
            AliasChange::Remove { alias } => rows.remove_alias(&alias)?,
            // `AliasChange` is non-exhaustive: a change of a newer fact-store is refused.
            _ => return Err(newer("alias change")),
        }
    }
    for id in &delete_episodes {
        if writer.rows_mut().delete_episode(id)? {
            report.episodes_deleted += 1;
        }
    }
    if let Some(episode) = &episode {
        writer.rows_mut().put_episode(episode, episode_analyzer)?;
    }
    report.facts = writer.apply(facts, now, config)?;
    let rows = writer.rows_mut();
    if let Some(extracted) = &extracted
        && !rows.mark_extracted(extracted, episode_analyzer)?
    {
        return Err(DbError::Store(StoreError::EpisodeNotFound {
            id: extracted.id.clone(),
        }));
    }
    let current = current_profile(&rows.profile_versions()?);
    for change in profile_changes(&current, &profile) {
        rows.insert_profile(&change)?;
        report.profile_changed.push(change.field);
    }
    Ok(report)
}

/// Deletes everything of the scope in the transaction of `writer`
/// ([`LongTermStore::erase`](fact_store::LongTermStore::erase)): every row
/// ([`MemoryRows::erase_scope`]), then the scope's counters start again
/// ([`Writer::restart`]).
pub fn erase<R: Rows + MemoryRows>(writer: &mut Writer<'_, R>) -> DbResult<EraseReport, R::Error> {
    let report = writer.rows_mut().erase_scope()?;
    writer.restart();
    Ok(report)
}

/// Imports the export `source` in the transaction of `writer`
/// ([`LongTermStore::import_from`](fact_store::LongTermStore::import_from)): the facts'
/// versions in chunks, through the rules of a snapshot import with the batches counted
/// from the scope's newest; each episode, alias and profile version unless the scope holds
/// it already. An error anywhere, the file's included, rolls all of it back.
pub fn import<R: Rows + MemoryRows>(
    writer: &mut Writer<'_, R>,
    source: &dyn ExportSource,
    config: &StoreConfig,
    episode_analyzer: &Analyzer,
) -> DbResult<MemoryImportReport, R::Error> {
    /// Fact versions imported together.
    const CHUNK: usize = 4096;
    let mut run = writer.import_run();
    let mut report = MemoryImportReport::default();
    let mut profile: HashSet<ProfileEntry> =
        writer.rows_mut().profile_versions()?.into_iter().collect();
    let mut facts = Vec::with_capacity(CHUNK);
    let mut import_facts = |writer: &mut Writer<'_, R>,
                            facts: &mut Vec<(usize, SnapshotRecord)>|
     -> DbResult<(), R::Error> {
        let chunk = writer.import_records(facts.drain(..), &mut run, config)?;
        report.facts.imported += chunk.imported;
        report.facts.unchanged += chunk.unchanged;
        report.facts.invalidated.extend(chunk.invalidated);
        report.facts.skipped.extend(chunk.skipped);
        Ok(())
    };
    let (mut episodes, mut aliases, mut profile_versions, mut unchanged) = (0, 0, 0, 0);
    let mut reader = source.open().map_err(DbError::Store)?;
    while let Some(record) = reader.next() {
        let line = reader.line();
        match record.map_err(DbError::Store)? {
            ExportRecord::Fact(record) => {
                facts.push((usize::try_from(line).unwrap_or(usize::MAX), record));
                if facts.len() == CHUNK {
                    import_facts(writer, &mut facts)?;
                }
            }
            ExportRecord::Episode(episode) => {
                let rows = writer.rows_mut();
                if rows.episode(&episode.id)?.as_ref() == Some(&episode) {
                    unchanged += 1;
                } else {
                    rows.put_episode(&episode, episode_analyzer)?;
                    episodes += 1;
                }
            }
            ExportRecord::Alias(alias) => {
                let rows = writer.rows_mut();
                let current = rows.alias_entity(&alias.alias)?;
                if current.as_deref() == Some(alias.entity.as_str()) {
                    unchanged += 1;
                    continue;
                }
                check_alias(&alias.alias, &alias.entity, |name| {
                    rows.alias_entity(name).map_err(Lookup)
                })
                .map_err(|Lookup(error)| match error {
                    DbError::Store(error) => DbError::Store(error.at_export_line(line)),
                    other => other,
                })?;
                rows.set_alias(&alias)?;
                aliases += 1;
            }
            ExportRecord::Profile(entry) => {
                if profile.contains(&entry) {
                    unchanged += 1;
                } else {
                    writer.rows_mut().insert_profile(&entry)?;
                    profile.insert(entry);
                    profile_versions += 1;
                }
            }
            _ => {}
        }
    }
    import_facts(writer, &mut facts)?;
    report.episodes = episodes;
    report.aliases = aliases;
    report.profile_versions = profile_versions;
    report.unchanged = unchanged + report.facts.unchanged;
    Ok(report)
}

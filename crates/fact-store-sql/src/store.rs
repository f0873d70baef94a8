//! [`SqlStore`]: the store traits implemented once over a [`Driver`].
//!
//! Every SQL backend answers the same contract ([`SessionFactStore`], [`EpisodeStore`],
//! [`LongTermStore`], [`FactVectors`]) with the same rules. What differs between databases
//! is the SQL text of the reads, and how a write transaction is run: SQLite serializes the
//! writers of a store on a lock and `BEGIN IMMEDIATE`, PostgreSQL locks the scope's row,
//! tries a conflicting transaction again and notes where the primary's log stands for its
//! replicas. A backend says that much by implementing [`Driver`]; [`SqlStore`] does the
//! rest: every write goes through [`crate::rules::Writer`] and
//! [`crate::long_term::commit`], every provided method of the traits is answered
//! here, once.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use fact_model::{Clock, FactId, FactSelector, FactUpdate, Filter, SessionFact, Timestamp};
use fact_store::{
    AddReport, Alias, Analyzer, CompactionReport, EdgeQuery, Episode, EpisodeStore, EraseReport,
    ExportOptions, ExportRecord, ExportSource, FactVectors, ImportReport, LongTermStore,
    MemoryImportReport, MemoryReport, MemoryWrite, MessageHit, MessageQuery, ProfileEntry,
    SNAPSHOT_VERSION, ScoredFact, SessionFactStore, Snapshot, SnapshotRecord, StoreConfig,
    StoreError, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
    current_profile,
};

use crate::error::{DbError, DbResult};
use crate::long_term::{MemoryRows, commit};
use crate::rules::{Rows, Writer};

/// Which facts of the scope a read selects, oldest first (insertion order).
///
/// Exhaustive on purpose: a new read is one every driver must answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FactRead<'a> {
    /// The valid versions.
    Valid,
    /// The versions valid at an instant (`valid_from <= at < valid_to`).
    ValidAt(Timestamp),
    /// Every version of a subject.
    History(&'a str),
    /// The latest version of an id: its valid one if any, else its newest.
    Latest(FactId),
    /// The valid versions of a subject, newest first, at most `limit`.
    ValidAbout(&'a str, usize),
    /// The valid versions (or those valid at `as_of`, as [`ValidAt`](Self::ValidAt))
    /// that `filter` holds for: the filter compiled to SQL
    /// ([`crate::filter::compile`]), in the query, so that the database's indexes answer
    /// it.
    Matching {
        /// The filter.
        filter: &'a Filter,
        /// The instant, or `None` for the valid versions.
        as_of: Option<Timestamp>,
    },
    /// The valid versions (or those valid at `query.as_of`) whose subject or object is one
    /// of `query.entities`, found through the indexes of both columns, that `query.filter`
    /// (compiled to SQL) holds for: the oldest `query.limit`.
    Touching(&'a EdgeQuery<'a>),
}

/// One of the scope's counters (exhaustive, as [`FactRead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// How many versions are valid.
    Valid,
    /// How many versions are stored, history included.
    Stored,
}

/// A database, as [`SqlStore`] drives it: one scope of it, opened.
///
/// A driver holds what a store of one scope keeps (its connections or pool, the scope's
/// id, its term ids and in-process caches) and provides the three things that differ
/// between databases:
///
/// - the **write path** ([`write`](Self::write)): one write transaction of the scope,
///   committed whole or rolled back, with the database's locking, retry and replica
///   policy, and the commit replayed on the driver's search cache;
/// - the **reads**, as SQL text of its dialect: facts ([`facts`](Self::facts)), snapshot
///   records, counters, search, episodes, aliases and profile versions;
/// - its **errors** ([`store_error`](Self::store_error), [`is_conflict`](Self::is_conflict)).
///
/// Its supertraits are the rest of what a driver reads in its dialect: embeddings
/// ([`FactVectors`], whose index is [`crate::vectors`]'s), episodes ([`EpisodeReads`])
/// and long-term memory ([`MemoryReads`]).
///
/// Every method that reads or writes returns a [`StoreResult`] whose error carries the
/// database's location; a read that fails is an error, never an empty answer.
pub trait Driver:
    FactVectors + EpisodeReads + MemoryReads + Send + Sync + fmt::Debug + Sized + 'static
{
    /// The driver's error type.
    type Error: fmt::Debug;
    /// The rows of one open write transaction of the scope.
    type Rows<'t>: Rows<Error = Self::Error> + MemoryRows;
    /// What a store is opened on: a file's path, a server's URL.
    type Target: ?Sized;
    /// How a store uses its database.
    type Options: fmt::Debug + Default;

    /// The newest database schema version this driver reads and writes.
    const SCHEMA_VERSION: u32;

    /// The [`StoreError`] for `error`, a failure of the database at `location`.
    fn store_error(error: &Self::Error, location: &Path) -> StoreError;

    /// Whether a write transaction that failed with `error` lost a race with another
    /// writer and may be tried again (a serialization failure, a deadlock, a violated
    /// uniqueness constraint). By default no error is a conflict.
    fn is_conflict(_error: &Self::Error) -> bool {
        false
    }

    /// Opens the database at `target` with `options` (creating and migrating its schema
    /// when needed) and in it the scope `scope`, whose term documents are (re)made with
    /// `config`'s analyzer when they were made with another.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be opened, is newer than this build, or
    /// is not one of this store's.
    fn open(
        target: &Self::Target,
        scope: &str,
        config: &StoreConfig,
        options: Self::Options,
    ) -> StoreResult<Self>;

    /// The scope this driver reads and writes.
    fn scope(&self) -> &str;

    /// Where the database is: a file, or a server's URL without its password.
    fn location(&self) -> &Path;

    /// The options the database was opened with.
    fn options(&self) -> &Self::Options;

    /// How the facts' text is analyzed (the store's configuration's analyzer).
    fn analyzer(&self) -> &Analyzer;

    /// How episodes are analyzed: with the default configuration, as
    /// [`InMemoryEpisodeStore`](fact_store::InMemoryEpisodeStore) analyzes them.
    fn episode_analyzer(&self) -> &Analyzer;

    /// The estimated bytes the driver's in-process caches hold now.
    fn cache_bytes(&self) -> usize;

    /// Empties the driver's in-process caches of the scope (its search index and vector
    /// indexes), after an erasure committed. Caches of other processes see the erasure in
    /// the scope's generation and reload.
    fn forget_cached(&self);

    /// Runs `f` in one write transaction of the scope and commits it; on any error
    /// everything rolls back. A driver that tries a conflicting transaction again gives
    /// each attempt a clone of `input`; one that runs `f` once moves it in.
    ///
    /// # Errors
    ///
    /// The error `f` returned, or the database's, as a [`StoreError`].
    fn write<I: Clone, T>(
        &self,
        input: I,
        f: impl FnMut(&mut Writer<'_, Self::Rows<'_>>, I) -> DbResult<T, Self::Error>,
    ) -> StoreResult<T>;

    /// The facts `read` selects.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn facts(&self, read: FactRead<'_>) -> StoreResult<Vec<SessionFact>>;

    /// Every version of the scope with its batch, in insertion order.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn snapshot_records(&self) -> StoreResult<Vec<SnapshotRecord>>;

    /// One of the scope's counters.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn count(&self, count: Count) -> StoreResult<usize>;

    /// [`SessionFactStore::search`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>>;
}

/// The episode reads of a [`Driver`]: SQL of its dialect, behind [`EpisodeStore`]. Episode
/// writes go through the driver's write path and [`MemoryRows`].
pub trait EpisodeReads {
    /// [`EpisodeStore::episode`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn episode(&self, id: &str) -> StoreResult<Option<Episode>>;

    /// [`EpisodeStore::episodes`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn episodes(&self) -> StoreResult<Vec<Episode>>;

    /// [`EpisodeStore::pending_extraction`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn pending_extraction(&self) -> StoreResult<Vec<Episode>>;

    /// [`EpisodeStore::search_episodes`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>>;

    /// [`EpisodeStore::search_messages`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>>;

    /// Sets episode `id`'s extraction time outside a write of the rules: how many
    /// episodes changed (0: no such episode).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be written.
    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<usize>;
}

/// The long-term memory reads of a [`Driver`]: SQL of its dialect, behind
/// [`LongTermStore`]. Its writes go through the driver's write path and
/// [`commit`](crate::long_term::commit()).
pub trait MemoryReads {
    /// Every record of the scope for an export, in one read transaction, row by row to
    /// `sink` ([`LongTermStore::export_to`] without its options).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read, or the first error of `sink`.
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> StoreResult<()>) -> StoreResult<()>;

    /// [`LongTermStore::aliases`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn aliases(&self) -> StoreResult<Vec<Alias>>;

    /// [`LongTermStore::profile_history`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>>;

    /// [`LongTermStore::fact_ids_from_source`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>>;

    /// [`LongTermStore::relations_of`].
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be read.
    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>>;
}

/// A durable [`SessionFactStore`], [`EpisodeStore`], [`LongTermStore`] and
/// [`FactVectors`] over one scope of a SQL database, whatever the database: its
/// [`Driver`] runs the transactions and the reads, this type applies the rules.
///
/// The backend crates name it for their database (`SqliteFactStore` is
/// `SqlStore<Sqlite>`, `PgFactStore` is `SqlStore<Postgres>`) and document what their
/// database adds (files and processes, servers, pools and replicas).
pub struct SqlStore<D: Driver> {
    driver: D,
    config: StoreConfig,
    clock: Arc<dyn Clock>,
}

impl<D: Driver> fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("location", &self.driver.location())
            .field("scope", &self.driver.scope())
            .field("config", &self.config)
            .field("options", self.driver.options())
            .finish_non_exhaustive()
    }
}

impl<D: Driver> SqlStore<D> {
    /// The newest database schema version this build reads and writes.
    pub const SCHEMA_VERSION: u32 = D::SCHEMA_VERSION;

    /// Opens the database at `target` with the default options (creating and migrating
    /// its schema when needed) and the store of `scope` in it; `clock` dates explicit
    /// invalidations and long-term memory commits.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the database cannot be opened or reached
    /// ([`StoreError::Io`]), was written by a newer build ([`StoreError::NewerSchema`]),
    /// or is not one of this store's ([`StoreError::Corrupt`]).
    pub fn open(
        target: impl AsRef<D::Target>,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<Self> {
        SqlStore::open_with(target, scope, config, D::Options::default(), clock)
    }

    /// [`open`](Self::open) with explicit options.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open); options the database refuses are an error too.
    pub fn open_with(
        target: impl AsRef<D::Target>,
        scope: &str,
        config: StoreConfig,
        options: D::Options,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<Self> {
        let driver = D::open(target.as_ref(), scope, &config, options)?;
        Ok(SqlStore::from_driver(driver, config, clock))
    }

    /// The store over a driver already opened (with `config`'s analyzer).
    #[must_use]
    pub fn from_driver(driver: D, config: StoreConfig, clock: Arc<dyn Clock>) -> Self {
        SqlStore {
            driver,
            config,
            clock,
        }
    }

    /// The driver: the database handle and what the backend adds.
    #[must_use]
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// The scope this store reads and writes.
    #[must_use]
    pub fn scope(&self) -> &str {
        self.driver.scope()
    }

    /// The configuration the store was opened with.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The options the store's database was opened with.
    #[must_use]
    pub fn options(&self) -> &D::Options {
        self.driver.options()
    }

    /// Where the database is: a file, or a server's URL without its password.
    #[must_use]
    pub fn location(&self) -> &Path {
        self.driver.location()
    }

    /// The estimated bytes this store's in-process caches hold now (its search cache and
    /// vector indexes), as charged to its cache budget.
    #[must_use]
    pub fn cache_bytes(&self) -> usize {
        self.driver.cache_bytes()
    }
}

impl<D: Driver> SessionFactStore for SqlStore<D> {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        let config = &self.config;
        self.driver
            .write(batch, |writer, batch| writer.add(batch, config))
    }

    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        let (now, config) = (self.clock.now(), &self.config);
        self.driver.write(transaction, |writer, transaction| {
            writer.apply(transaction, now, config)
        })
    }

    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        let (now, config) = (self.clock.now(), &self.config);
        self.driver.write(selector, |writer, selector| {
            writer.invalidate(selector, now, config)
        })
    }

    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        let config = &self.config;
        self.driver.write(max_valid, |writer, max_valid| {
            writer.compact(max_valid, config)
        })
    }

    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.driver
            .write(update, |writer, update| writer.update(id, update))
    }

    fn delete(&self, id: FactId) -> StoreResult<usize> {
        self.driver.write(id, |writer, id| writer.delete(id))
    }

    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        snapshot.check_version()?;
        let config = &self.config;
        self.driver.write(snapshot.records, |writer, records| {
            writer.import(records, config)
        })
    }

    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        self.driver.facts(FactRead::Valid)
    }

    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        let mut facts = self.driver.facts(FactRead::ValidAt(at))?;
        facts.retain(|fact| fact.is_valid_at(at));
        Ok(facts)
    }

    fn touching(&self, query: &EdgeQuery<'_>) -> StoreResult<Vec<SessionFact>> {
        if query.entities.is_empty() || query.limit == 0 {
            return Ok(Vec::new());
        }
        let mut facts = self.driver.facts(FactRead::Touching(query))?;
        if let Some(at) = query.as_of {
            facts.retain(|fact| fact.is_valid_at(at));
        }
        Ok(facts)
    }

    fn select(&self, filter: &Filter, as_of: Option<Timestamp>) -> StoreResult<Vec<SessionFact>> {
        let mut facts = self.driver.facts(FactRead::Matching { filter, as_of })?;
        if let Some(at) = as_of {
            facts.retain(|fact| fact.is_valid_at(at));
        }
        Ok(facts)
    }

    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        self.driver.facts(FactRead::History(subject))
    }

    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        Ok(self.driver.facts(FactRead::Latest(id))?.pop())
    }

    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        Ok(Snapshot {
            version: SNAPSHOT_VERSION,
            records: self.driver.snapshot_records()?,
        })
    }

    fn analyzer(&self) -> &Analyzer {
        self.driver.analyzer()
    }

    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        self.driver.search(query, weighting)
    }

    fn valid_count(&self) -> StoreResult<usize> {
        self.driver.count(Count::Valid)
    }

    fn stored_count(&self) -> StoreResult<usize> {
        self.driver.count(Count::Stored)
    }

    fn vectors(&self) -> Option<&dyn FactVectors> {
        Some(&self.driver)
    }
}

impl<D: Driver> EpisodeStore for SqlStore<D> {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        let analyzer = self.driver.episode_analyzer();
        self.driver.write(episode, |writer, episode| {
            writer.rows_mut().put_episode(episode, analyzer)
        })
    }

    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.driver.episode(id)
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.driver.episodes()
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        self.driver.search_episodes(query, limit)
    }

    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>> {
        self.driver.search_messages(query, weighting)
    }

    fn delete_episode(&self, id: &str) -> StoreResult<bool> {
        self.driver
            .write(id, |writer, id| writer.rows_mut().delete_episode(id))
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        if self.driver.mark_extracted(id, at)? == 0 {
            return Err(StoreError::EpisodeNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        self.driver.pending_extraction()
    }
}

impl<D: Driver> LongTermStore for SqlStore<D> {
    fn erase(&self) -> StoreResult<EraseReport> {
        let report = self
            .driver
            .write((), |writer, ()| crate::long_term::erase(writer))?;
        self.driver.forget_cached();
        Ok(report)
    }

    fn commit(&self, write: MemoryWrite) -> StoreResult<MemoryReport> {
        let (now, config) = (self.clock.now(), &self.config);
        let analyzer = self.driver.episode_analyzer();
        self.driver.write(write, |writer, write| {
            commit(writer, write, now, config, analyzer)
        })
    }

    fn export_to(
        &self,
        options: &ExportOptions,
        sink: &mut dyn FnMut(ExportRecord) -> StoreResult<()>,
    ) -> StoreResult<()> {
        self.driver
            .export(&mut |record| match options.keep(record) {
                Some(record) => sink(record),
                None => Ok(()),
            })
    }

    fn import_from(&self, source: &dyn ExportSource) -> StoreResult<MemoryImportReport> {
        let config = &self.config;
        let analyzer = self.driver.episode_analyzer();
        self.driver.write(source, |writer, source| {
            crate::long_term::import(writer, source, config, analyzer)
        })
    }

    fn aliases(&self) -> StoreResult<Vec<Alias>> {
        self.driver.aliases()
    }

    fn profile(&self) -> StoreResult<Vec<ProfileEntry>> {
        Ok(current_profile(&self.driver.profile_history()?))
    }

    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>> {
        self.driver.profile_history()
    }

    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>> {
        self.driver.fact_ids_from_source(source)
    }

    fn valid_about(&self, subject: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        self.driver.facts(FactRead::ValidAbout(subject, limit))
    }

    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>> {
        self.driver.relations_of(subject, limit)
    }
}

/// How the scope's row names the analyzer its term documents were made with: a store
/// opened with another analyzer rebuilds them.
#[must_use]
pub fn analyzer_tag(config: fact_store::AnalyzerConfig) -> String {
    format!("stemming={}", config.stemming)
}

impl<E> DbError<E> {
    /// The [`StoreError`] for this failure of the database at `location`, whose driver
    /// is `D`.
    pub fn into_store<D: Driver<Error = E>>(self, location: &Path) -> StoreError {
        self.into_store_with(location, D::store_error)
    }

    /// Whether this failure is a conflict that `D` would try again.
    pub fn is_conflict<D: Driver<Error = E>>(&self) -> bool {
        matches!(self, DbError::Driver(error) if D::is_conflict(error))
    }
}

//! [`Sqlite`]: the [`Driver`] of the SQLite store, one scope of a database file: its
//! connections, its write path (a `BEGIN IMMEDIATE` transaction under the store's lock)
//! and its reads, and the scope's search cache, which follows other connections' writes.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fact_model::{Clock, SessionFact};
use fact_store::{
    Analyzer, AnalyzerConfig, ScoredFact, SnapshotRecord, StoreConfig, StoreError, StoreResult,
    TermQuery, TermWeighting,
};
use fact_store_sql::cache::{Cached, Pinned, ReloadPermit};
use fact_store_sql::codec::{FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, id_to_sql};
use fact_store_sql::filter::{Dialect, compile, driving};
use fact_store_sql::rules::{Outcome, TermIds, Writer};
use fact_store_sql::search::SearchCache;
use fact_store_sql::vectors::VectorCache;
use fact_store_sql::{Count, Driver, FactRead, SqlStore, analyzer_tag};
use rusqlite::types::Value;
use rusqlite::{
    Connection, OptionalExtension, Params, TransactionBehavior, params, params_from_iter,
};

use crate::codec::read_fact;
use crate::database::SqliteDatabase;
use crate::error::{DbResult, store_error};
use crate::options::SqliteOptions;
use crate::rows::SqliteRows;
use crate::schema::SCHEMA_VERSION;
use crate::search::{self, Cold, bind};

/// A durable [`SessionFactStore`](fact_store::SessionFactStore), [`EpisodeStore`](fact_store::EpisodeStore) and
/// [`LongTermStore`](fact_store::LongTermStore) over one scope of a SQLite database file.
///
/// One file holds many scopes (`spec:todo-api`, `user:alice`); a store sees only its own:
/// every table has a `scope` column, first in every index, and no query crosses scopes.
/// Several stores (threads or processes) can read and write one file at once: the database
/// runs in WAL mode, and a write waits up to
/// [`busy_timeout`](SqliteOptions::busy_timeout) for another writer. A store opened with
/// [`open`](Self::open) has connections of its own; the stores of many scopes opened from
/// one [`SqliteDatabase`](crate::SqliteDatabase) share its few connections, each operation taking one for its
/// length.
///
/// The semantics are exactly those of [`InMemorySessionFactStore`](fact_store::InMemorySessionFactStore)
/// (batches, invalidation, refresh, supersession, out-of-order arrival, history, statement
/// dedup, compaction, snapshots, and results in the same order); the conformance suite and
/// a differential property test hold both to it. What is durable is the difference: batch
/// numbers and every counter live in the file, so a reopened store carries on where the
/// last one stopped.
///
/// # Transactions and errors
///
/// Each write (`add` with its automatic compaction, `invalidate_matching`, `compact`,
/// `update`, `delete`, `import`, `apply`, an episode write, a long-term
/// [`commit`](fact_store::LongTermStore::commit)) is one `BEGIN IMMEDIATE` transaction: it
/// commits whole, or fails with a [`StoreError`](fact_store::StoreError) and leaves the store as it was. SQLite's
/// errors map to [`StoreError::Busy`](fact_store::StoreError::Busy) (locked past the timeout), [`StoreError::Corrupt`](fact_store::StoreError::Corrupt)
/// (damaged, or not a database), [`StoreError::Io`](fact_store::StoreError::Io) (disk full, I/O, read-only, cannot
/// open) and [`StoreError::Backend`](fact_store::StoreError::Backend).
///
/// Reads fail the same way: every read of [`SessionFactStore`](fact_store::SessionFactStore), [`FactVectors`](fact_store::FactVectors),
/// [`EpisodeStore`](fact_store::EpisodeStore) and [`LongTermStore`](fact_store::LongTermStore)
/// returns the error of a database it cannot read (a table gone, a damaged page, a file
/// that can no longer be opened), with its code; a failed read never answers as an empty
/// store would.
///
/// # Opening
///
/// [`open`](Self::open) creates the file and schema when needed and migrates older
/// schemas forward (each migration in its own transaction). It never resets or recreates
/// anything: a file that is not a SQLite database, or a database of another application,
/// is [`StoreError::Corrupt`](fact_store::StoreError::Corrupt); a schema newer than this build is
/// [`StoreError::NewerSchema`](fact_store::StoreError::NewerSchema), and the file is left untouched.
///
/// # Search
///
/// The database holds a term index: the analyzer's terms of every valid fact, as term
/// ids in an FTS5 table, with document frequencies and per-scope counters. `search`
/// returns the same results as the in-memory store, score for score. With
/// [`search_cache`](SqliteOptions::search_cache) (the default) the store also keeps that
/// index in memory, tagged with the scope's generation (a counter every write bumps):
/// each search checks the generation in the read transaction that fetches its results,
/// and the store's own writes update the cache as they commit. The writes of another
/// connection or process are followed row by row: every row a write inserts or changes
/// carries the generation it committed, so the next search replays only those rows (at
/// 100,000 facts a search right after another connection's write of 10 facts takes
/// about a millisecond, where reloading the scope took 200 ms). The scope is loaded
/// whole only at the first search, and again after another connection deleted facts the
/// cache may hold (a `delete`, compaction past a limit); it is loaded on a connection of
/// its own, outside the store's lock, and the searches that come meanwhile answer from
/// FTS5. Searches (and the other reads) of one store run at once, each on a connection of
/// its [`SqliteDatabase`](crate::SqliteDatabase), and read a cache at their snapshot under a shared lock; a
/// search whose snapshot is older than a write of this store already applied to the cache
/// answers from FTS5 for its snapshot.
///
/// The cache (and the vector indexes below) is charged to the store's
/// [`cache_budget`](SqliteOptions::cache_budget): give every store of a process one
/// [`CacheBudget`](crate::CacheBudget) and they hold about its limit together, however many scopes they
/// serve. Past the limit the least recently used caches of any of them are dropped (never
/// one an operation is using); a scope whose cache was dropped answers its next searches
/// from FTS5 at once while its cache loads again on a thread of its own (at 100,000 facts
/// a cache holds about 32 MiB and takes 0.2 to 0.5 s to load). [`cache_bytes`](Self::cache_bytes)
/// says what a store holds. Without the cache, FTS5 finds the candidates and their stored term documents are
/// scored: the same results, score for score, without loading anything (what a process
/// that answers one query wants). With a weighting that bounds its tf part
/// ([`TermWeighting::max_tf_weight`], as BM25 does) the candidates of the rarest query terms
/// are read first, and the facts holding only terms too common to rank are never read; a
/// query of only very common terms still reads every fact holding one (at 1,000,000
/// facts, a one-word query matching half of them takes about 0.4 s, a question naming a
/// rarer word a few milliseconds).
///
/// # Episodes and long-term memory
///
/// An episode is kept once, as its messages (rows ordered by turn, each with its time),
/// and every message is indexed as FTS5 over its term document with the scope's message
/// statistics beside it: [`search_messages`](fact_store::EpisodeStore::search_messages) lets
/// FTS5 find the messages holding a query term and ranks them with the code every store
/// shares, so it answers exactly as
/// [`InMemoryEpisodeStore`](fact_store::InMemoryEpisodeStore) does. Entity aliases and the
/// versions of the user's profile are tables of the scope too, written with the facts and
/// episodes of a [`MemoryWrite`](fact_store::MemoryWrite) in one transaction.
///
/// # Embeddings
///
/// [`vectors`](fact_store::SessionFactStore::vectors) gives the store's [`FactVectors`](fact_store::FactVectors): each fact's
/// embedding by a model is a row of the file (the vector as a BLOB of little-endian
/// `f32`s), written in one `BEGIN IMMEDIATE` transaction per
/// [`put_embeddings`](fact_store::FactVectors::put_embeddings) call and deleted with the fact's last
/// version. [`nearest`](fact_store::FactVectors::nearest) searches an index in this process, loaded
/// at a model's first search and brought up to date at each later one with only the
/// rows written since (by any connection); the candidates' facts are read in one query
/// per search, so only facts valid now are found. At 100,000 facts with 384-dimensional
/// embeddings a first search takes about 0.2 s and later ones about 3.5 ms
/// (`benches/sqlite.rs`). Token vectors
/// ([`put_token_vectors`](fact_store::FactVectors::put_token_vectors)) are rows too, written and
/// deleted the same way, and read for many facts in one query.
///
/// ```
/// use std::sync::Arc;
/// use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
/// use fact_store::{SessionFactStore, StoreConfig};
/// use fact_store_sqlite::SqliteFactStore;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("facts.db");
/// let clock = Arc::new(ManualClock::default());
/// let status = |value: &str, secs| -> Result<SessionFact, Box<dyn std::error::Error>> {
///     Ok(SessionFact::builder("task:7", "completed_with", value)
///         .tag(Tag::Decision)
///         .source("7", SourceRole::Implementer)
///         .valid_from(Timestamp::from_unix_secs(secs)?)
///         .build()?)
/// };
/// {
///     let store = SqliteFactStore::open(&path, "spec:todo-api", StoreConfig::default(), clock.clone())?;
///     store.add(vec![status("blocked", 0)?])?;
/// }
/// // Reopened, the store carries on: the new batch supersedes the stored fact.
/// let store = SqliteFactStore::open(&path, "spec:todo-api", StoreConfig::default(), clock.clone())?;
/// let report = store.add(vec![status("completed", 60)?])?;
/// assert_eq!(report.invalidated.len(), 1);
/// assert_eq!(store.history("task:7")?.len(), 2);
/// // Another scope of the same file sees nothing of it.
/// let other = SqliteFactStore::open(&path, "user:alice", StoreConfig::default(), clock)?;
/// assert_eq!(other.stored_count()?, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type SqliteFactStore = SqlStore<Sqlite>;

/// The SQLite [`Driver`]: one scope of a database file, as [`SqliteFactStore`](crate::SqliteFactStore) drives it.
///
/// See [`SqliteFactStore`](crate::SqliteFactStore) for what the store does.
pub struct Sqlite {
    /// The file, its options and its connections (shared with the stores of other scopes
    /// opened from the same [`SqliteDatabase`](crate::SqliteDatabase)).
    pub(crate) database: SqliteDatabase,
    pub(crate) scope: String,
    pub(crate) scope_id: i64,
    pub(crate) analyzer: Analyzer,
    /// Episodes are analyzed as [`InMemoryEpisodeStore`](fact_store::InMemoryEpisodeStore)
    /// analyzes them: with the default configuration.
    pub(crate) episode_analyzer: Analyzer,
    /// Lowercased word → term id of this scope, for writes; its lock serializes the
    /// store's writes (reads run beside them, each on a connection of the database's; on
    /// a private in-memory database, whose one connection they share, reads take it too).
    pub(crate) words: Mutex<TermIds>,
    /// The scope's term index in this process (`None` until a search loads it, and again
    /// once the budget evicts it); locked after `words`, never before.
    pub(crate) search_cache: Cached<Option<SearchCache>>,
    /// The embeddings' in-process indexes, by model; locked after `words`.
    pub(crate) vector_cache: Cached<VectorCache>,
    /// Set while a search (or a reload in the background) loads the scope into the cache
    /// on a connection of its own, outside every lock; searches meanwhile answer from the
    /// database.
    pub(crate) loader: Arc<AtomicBool>,
    /// How many times the scope was loaded whole into the search cache.
    pub(crate) loads: Arc<AtomicU64>,
}

/// Copies the WAL into the database and truncates it, after a transaction that deleted
/// text: with `secure_delete` on, the database's freed cells are zeroed, and the WAL's
/// frames that held the text are gone with the file's truncation. A reader that holds an
/// older snapshot keeps the checkpoint from finishing; the next one (this store's after
/// its next deletion, or SQLite's automatic one) finishes it. The deletion is committed
/// by then, so a checkpoint that fails is logged, never the write's error.
fn checkpoint(conn: &Connection) {
    match conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
        row.get::<_, i64>(0)
    }) {
        Ok(0) => {}
        Ok(_) => {
            tracing::debug!("a reader kept the WAL checkpoint after a deletion from finishing")
        }
        Err(error) => tracing::warn!(%error, "the WAL checkpoint after a deletion failed"),
    }
}

impl fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sqlite")
            .field("path", &self.path())
            .field("scope", &self.scope)
            .field("options", self.options())
            .finish_non_exhaustive()
    }
}

impl Sqlite {
    /// The store of `scope` in `database`, its term documents (re)made with `config`'s
    /// analyzer.
    pub(crate) fn init(
        database: SqliteDatabase,
        scope: &str,
        config: &StoreConfig,
    ) -> StoreResult<Sqlite> {
        let analyzer = Analyzer::new(config.analyzer);
        let scope_id = database
            .with_connection(|conn| Sqlite::find_scope(conn, scope, &analyzer))
            .map_err(|e| e.into_store::<Sqlite>(database.path()))?;
        let budget = &database.options().cache_budget;
        let search_cache = Cached::new(None, budget);
        let vector_cache = Cached::new(VectorCache::default(), budget);
        Ok(Sqlite {
            database,
            scope: scope.to_owned(),
            scope_id,
            analyzer,
            episode_analyzer: Analyzer::new(AnalyzerConfig::default()),
            words: Mutex::new(TermIds::default()),
            search_cache,
            vector_cache,
            loader: Arc::new(AtomicBool::new(false)),
            loads: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The id of `scope` (created when new), its term documents rebuilt when they were
    /// made with another analyzer.
    pub(crate) fn find_scope(
        conn: &mut Connection,
        scope: &str,
        analyzer: &Analyzer,
    ) -> DbResult<i64> {
        let tag = analyzer_tag(analyzer.config());
        let select = "SELECT id, analyzer FROM scopes WHERE name = ?1";
        let found: Option<(i64, String)> = conn
            .query_row(select, [scope], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        let (scope_id, indexed_with) = match found {
            Some(found) => found,
            None => {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.execute(
                    "INSERT OR IGNORE INTO scopes (name, analyzer) VALUES (?1, ?2)",
                    params![scope, tag],
                )?;
                let found = tx.query_row(select, [scope], |row| Ok((row.get(0)?, row.get(1)?)))?;
                tx.commit()?;
                found
            }
        };
        if indexed_with != tag {
            // Term documents are derived data: rebuild them for this analyzer.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut words = TermIds::default();
            let rows = SqliteRows::new(tx, scope_id);
            let mut writer = Writer::begin(rows, analyzer, &mut words, None)?;
            writer.reindex(&tag)?;
            writer.commit()?;
        }
        Ok(scope_id)
    }

    /// The database file (`:memory:` for a private in-memory database).
    #[must_use]
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    /// The options the store was opened with.
    #[must_use]
    pub fn options(&self) -> &SqliteOptions {
        self.database.options()
    }

    /// The database whose connections this store uses: open other scopes of the file
    /// from it to share them.
    #[must_use]
    pub fn database(&self) -> &SqliteDatabase {
        &self.database
    }

    /// The estimated bytes this store's in-process caches hold now (its search cache and
    /// vector indexes), as charged to its [`cache_budget`](SqliteOptions::cache_budget).
    #[must_use]
    pub fn cache_bytes(&self) -> usize {
        self.search_cache.charged() + self.vector_cache.charged()
    }

    // No code runs while the lock is held that could leave the term ids half-updated (a
    // failed transaction rolls back and clears them): recover a poisoned lock.
    pub(crate) fn lock_words(&self) -> MutexGuard<'_, TermIds> {
        self.words.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction of the store's scope and commits;
    /// on any error everything rolls back. The store's lock serializes its writers, so
    /// `f` runs once.
    pub(crate) fn write_once<T>(
        &self,
        f: impl FnOnce(&mut Writer<'_, SqliteRows<'_>>) -> DbResult<T>,
    ) -> StoreResult<T> {
        let mut words = self.lock_words();
        // In use until the write is applied to it: not evicted between the two looks.
        let cache = self.search_cache.pin();
        let record_since = cache.lock().as_ref().map(SearchCache::generation);
        let run = |conn: &mut Connection| -> DbResult<(T, Outcome)> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let rows = SqliteRows::new(tx, self.scope_id);
            let mut writer = Writer::begin(rows, &self.analyzer, &mut words, record_since)?;
            let value = f(&mut writer)?;
            let erasing = writer.rows_mut().erasing();
            let outcome = writer.commit()?;
            if erasing {
                checkpoint(conn);
            }
            Ok((value, outcome))
        };
        match self.database.with_connection(run) {
            Ok((value, outcome)) => {
                let mut held = cache.lock();
                if let Some(current) = held.as_mut()
                    && !current.apply(outcome, &self.analyzer)
                {
                    *held = None;
                }
                Ok(value)
            }
            Err(error) => {
                // Term ids created by the rolled-back transaction no longer exist.
                words.clear();
                Err(error.into_store::<Sqlite>(self.path()))
            }
        }
    }

    /// A cached search: from the cache when it is at the scope's generation or can follow
    /// it row by row (under the lock, a few rows at most per write of another
    /// connection); otherwise the whole scope is loaded on a connection of its own,
    /// outside the lock, so the store's other reads and writes go on meanwhile, and the
    /// searches that come while it loads answer from FTS5 instead of waiting.
    pub(crate) fn cached_search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        // In use for the whole search, its load outside the lock included: the budget
        // never evicts it meanwhile.
        let pinned = self.search_cache.pin();
        let run = |cold: Cold| {
            self.with_read_conn(|conn, scope| {
                // The cache is read beside other searches, or locked to bring it to the
                // search's snapshot; the budget only tries its lock, and skips it while
                // a search holds it.
                let searched = search::search(
                    conn,
                    scope,
                    &self.analyzer,
                    Some((&pinned, cold)),
                    query,
                    weighting,
                )?;
                if let Some(facts) = searched.loaded {
                    self.loaded(facts);
                }
                Ok(searched.results)
            })
        };
        if !self.database.reopens() {
            // Nobody else writes a private database: it loads once, at the first search.
            return run(Cold::Load).map(Option::unwrap_or_default);
        }
        let Some(loading) = Loading::try_start(&self.loader) else {
            return run(Cold::Database).map(Option::unwrap_or_default);
        };
        if let Some(results) = run(Cold::Return)? {
            return Ok(results);
        }
        if self.search_cache.evicted() {
            // The budget evicted the cache: this search answers from FTS5 at once, and
            // the scope loads again in the background (unless the budget's reloads are
            // all taken; a later search tries again).
            // The answer first: the reload does not compete with it.
            let results = run(Cold::Database)?;
            if let Some(permit) = self.search_cache.budget().reload_permit() {
                self.reload_in_background(loading, permit);
            }
            return Ok(results.unwrap_or_default());
        }
        let loaded = self
            .load_cache()
            .map_err(|e| e.into_store::<Sqlite>(self.path()))?;
        self.loaded(loaded.len());
        install(&pinned, loaded);
        drop(loading);
        // Rows written while it loaded are followed; should rows have been deleted
        // meanwhile, this search loads again under the lock rather than chase the writers.
        run(Cold::Load).map(Option::unwrap_or_default)
    }

    /// Counts and logs a load of the whole scope into the search cache.
    pub(crate) fn loaded(&self, facts: usize) {
        counted_load(&self.loads, &self.scope, facts);
    }

    /// The scope's search cache, read on a connection other than the one the store's
    /// operation holds (in one read transaction).
    pub(crate) fn load_cache(&self) -> DbResult<SearchCache> {
        load_scope(&self.database, self.scope_id, &self.analyzer)
    }

    /// Loads the scope into the search cache on a thread of its own, which installs it
    /// (charged to the budget) unless a newer cache is there by then; a failure is
    /// logged, and the next search tries again.
    pub(crate) fn reload_in_background(&self, loading: Loading, permit: ReloadPermit) {
        let database = self.database.clone();
        let scope_id = self.scope_id;
        let scope = self.scope.clone();
        let analyzer = self.analyzer.config();
        let cache = self.search_cache.handle();
        let loads = self.loads.clone();
        let reload = move || {
            match load_scope(&database, scope_id, &Analyzer::new(analyzer)) {
                Ok(loaded) => {
                    let facts = loaded.len();
                    install(&cache.pin(), loaded);
                    counted_load(&loads, &scope, facts);
                    tracing::debug!(%scope, facts, "evicted search cache reloaded");
                }
                Err(error) => {
                    let error = error.into_store::<Sqlite>(database.path());
                    tracing::warn!(%scope, %error, "reloading the search cache failed");
                }
            }
            // Released only once the cache is in place (or failed).
            drop((loading, permit));
        };
        if let Err(error) = std::thread::Builder::new()
            .name("factmem-cache-reload".to_owned())
            .spawn(reload)
        {
            tracing::warn!(scope = %self.scope, %error, "no thread to reload the search cache");
        }
    }

    /// Runs a read `f` on a connection of the database with the store's scope id, beside
    /// the store's other operations (each on a connection of its own; under the store's
    /// lock only for a private in-memory database, whose one connection they share);
    /// errors carry the path.
    pub(crate) fn with_read_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection, i64) -> DbResult<T>,
    ) -> StoreResult<T> {
        if !self.database.reopens() {
            return self.with_conn(f);
        }
        self.database
            .with_connection(|conn| f(conn, self.scope_id))
            .map_err(|e| e.into_store::<Sqlite>(self.path()))
    }

    /// Runs `f` on a connection of the database with the store's scope id, under the
    /// store's lock (one such operation of the store at a time); errors carry the path.
    pub(crate) fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection, i64) -> DbResult<T>,
    ) -> StoreResult<T> {
        let _operation = self.lock_words();
        self.database
            .with_connection(|conn| f(conn, self.scope_id))
            .map_err(|e| e.into_store::<Sqlite>(self.path()))
    }

    /// The facts `sql` selects with [`FACT_COLUMNS`] first.
    pub(crate) fn facts(&self, sql: &str, params: impl Params) -> StoreResult<Vec<SessionFact>> {
        self.with_read_conn(|conn, _| query_facts(conn, sql, params))
    }

    /// One of the scope's counters.
    pub(crate) fn counter(&self, column: &str) -> StoreResult<usize> {
        let sql = format!("SELECT {column} FROM scopes WHERE id = ?1");
        self.with_read_conn(|conn, scope| {
            let count: i64 = conn
                .prepare_cached(&sql)?
                .query_row([scope], |row| row.get(0))?;
            Ok(usize::try_from(count).unwrap_or(0))
        })
    }
}

/// Marks a store's scope as loading into its search cache until dropped (moved to the
/// thread of a background reload).
pub(crate) struct Loading(Arc<AtomicBool>);

impl Loading {
    /// The mark, unless another load holds it.
    pub(crate) fn try_start(flag: &Arc<AtomicBool>) -> Option<Loading> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Loading(flag.clone()))
    }
}

impl Drop for Loading {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The search cache of `scope_id` in `database`, read on a connection of its own (in one
/// read transaction).
fn load_scope(
    database: &SqliteDatabase,
    scope_id: i64,
    analyzer: &Analyzer,
) -> DbResult<SearchCache> {
    database.with_connection(|conn| {
        let tx = conn.transaction()?;
        let cache = search::load(&tx, scope_id, analyzer)?;
        tx.commit()?;
        Ok(cache)
    })
}

/// Puts a cache loaded outside every lock in place, unless the one there is as new.
fn install(cache: &Pinned<'_, Option<SearchCache>>, loaded: SearchCache) {
    let mut held = cache.lock();
    if held
        .as_ref()
        .is_none_or(|current| current.generation() < loaded.generation())
    {
        *held = Some(loaded);
    }
}

/// Counts and logs a load of the whole scope into the search cache.
pub(crate) fn counted_load(loads: &AtomicU64, scope: &str, facts: usize) {
    let loads = loads.fetch_add(1, Ordering::Relaxed) + 1;
    tracing::debug!(%scope, facts, loads, "search cache loaded the scope");
}

/// The facts a query selects with [`FACT_COLUMNS`] first.
pub(crate) fn query_facts(
    conn: &Connection,
    sql: &str,
    params: impl Params,
) -> DbResult<Vec<SessionFact>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut facts = Vec::new();
    while let Some(row) = rows.next()? {
        facts.push(read_fact(row, 0)?);
    }
    Ok(facts)
}

impl Driver for Sqlite {
    type Error = rusqlite::Error;
    type Rows<'t> = SqliteRows<'t>;
    type Target = Path;
    type Options = SqliteOptions;

    const SCHEMA_VERSION: u32 = SCHEMA_VERSION;

    fn store_error(error: &rusqlite::Error, location: &Path) -> StoreError {
        store_error(error, location)
    }

    /// A store with a [`SqliteDatabase`](crate::SqliteDatabase) of its own, which keeps up to
    /// [`idle_connections`](SqliteOptions::idle_connections) connections for the store's
    /// operations that run at once; open the stores of many scopes of one file from one
    /// [`SqliteDatabase`](crate::SqliteDatabase) instead, to share them. A read-only open of a file that needs a
    /// migration or lacks the scope is [`StoreError::Io`](fact_store::StoreError::Io).
    fn open(
        path: &Path,
        scope: &str,
        config: &StoreConfig,
        options: SqliteOptions,
    ) -> StoreResult<Sqlite> {
        Sqlite::init(SqliteDatabase::new(path, options), scope, config)
    }

    fn scope(&self) -> &str {
        &self.scope
    }

    fn location(&self) -> &Path {
        self.database.path()
    }

    fn options(&self) -> &SqliteOptions {
        self.database.options()
    }

    fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    fn episode_analyzer(&self) -> &Analyzer {
        &self.episode_analyzer
    }

    fn cache_bytes(&self) -> usize {
        self.search_cache.charged() + self.vector_cache.charged()
    }

    fn forget_cached(&self) {
        self.search_cache.with(|cache| *cache = None);
        self.vector_cache
            .with(|vectors| *vectors = VectorCache::default());
    }

    /// One `BEGIN IMMEDIATE` transaction under the store's lock: `f` runs once, with
    /// `input` moved in.
    fn write<I: Clone, T>(
        &self,
        input: I,
        mut f: impl FnMut(&mut Writer<'_, SqliteRows<'_>>, I) -> DbResult<T>,
    ) -> StoreResult<T> {
        self.write_once(|writer| f(writer, input))
    }

    fn facts(&self, read: FactRead<'_>) -> StoreResult<Vec<SessionFact>> {
        let scope = self.scope_id;
        match read {
            FactRead::Valid => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND valid_to IS NULL \
                     ORDER BY seq"
                );
                self.facts(&sql, [scope])
            }
            FactRead::ValidAt(at) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND valid_from <= ?2 \
                     AND (valid_to IS NULL OR ?2 < valid_to) ORDER BY seq"
                );
                self.facts(&sql, params![scope, at.unix_micros()])
            }
            FactRead::History(subject) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND subject = ?2 \
                     ORDER BY seq"
                );
                self.facts(&sql, params![scope, subject])
            }
            FactRead::Latest(id) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND id = ?2 \
                     ORDER BY valid_to IS NULL DESC, seq DESC LIMIT 1"
                );
                self.facts(&sql, params![scope, id_to_sql(id)])
            }
            FactRead::Matching { filter, as_of } => {
                let (validity, mut values) = match as_of {
                    None => ("f.valid_to IS NULL", vec![Value::Integer(scope)]),
                    Some(at) => (
                        "f.valid_from <= ?2 AND (f.valid_to IS NULL OR ?2 < f.valid_to)",
                        vec![Value::Integer(scope), Value::Integer(at.unix_micros())],
                    ),
                };
                let compiled = compile(filter, Dialect::Sqlite, values.len() + 1);
                values.extend(compiled.params.iter().map(bind));
                // A metadata equality the filter requires: the index finds its versions.
                let drive = driving(filter, Dialect::Sqlite, values.len() + 1);
                let drive_sql = drive.as_ref().map_or("TRUE", |d| d.sql.as_str());
                values.extend(drive.iter().flat_map(|d| d.params.iter().map(bind)));
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ?1 AND {validity} \
                     AND {drive_sql} AND {} ORDER BY f.seq",
                    compiled.sql
                );
                self.facts(&sql, params_from_iter(values))
            }
            FactRead::Touching(query) => {
                let names = serde_json::Value::from(query.entities.to_vec()).to_string();
                let mut values = vec![Value::Integer(scope), Value::Text(names)];
                let validity = match query.as_of {
                    None => "f.valid_to IS NULL".to_owned(),
                    Some(at) => {
                        values.push(Value::Integer(at.unix_micros()));
                        let at = values.len();
                        format!(
                            "f.valid_from <= ?{at} AND (f.valid_to IS NULL OR ?{at} < f.valid_to)"
                        )
                    }
                };
                let filter = match query.filter {
                    Some(filter) => {
                        let compiled = compile(filter, Dialect::Sqlite, values.len() + 1);
                        values.extend(compiled.params.iter().map(bind));
                        compiled.sql
                    }
                    None => "TRUE".to_owned(),
                };
                values.push(Value::Integer(
                    i64::try_from(query.limit).unwrap_or(i64::MAX),
                ));
                let limit = values.len();
                // Each side through its index: `facts_key` (scope, subject, …) and
                // `facts_object` (scope, object).
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ?1 AND {validity} \
                     AND f.seq IN (\
                       SELECT seq FROM facts WHERE scope = ?1 \
                         AND subject IN (SELECT value FROM json_each(?2)) \
                       UNION SELECT seq FROM facts WHERE scope = ?1 \
                         AND object IN (SELECT value FROM json_each(?2))) \
                     AND {filter} ORDER BY f.seq LIMIT ?{limit}"
                );
                self.facts(&sql, params_from_iter(values))
            }
            FactRead::ValidAbout(subject, limit) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND subject = ?2 \
                     AND valid_to IS NULL ORDER BY seq DESC LIMIT ?3"
                );
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                self.with_conn(|conn, scope| {
                    query_facts(conn, &sql, params![scope, subject, limit])
                })
            }
        }
    }

    fn snapshot_records(&self) -> StoreResult<Vec<SnapshotRecord>> {
        self.with_conn(|conn, scope| {
            let sql =
                format!("SELECT {FACT_COLUMNS}, batch FROM facts WHERE scope = ?1 ORDER BY seq");
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query([scope])?;
            let mut records = Vec::new();
            while let Some(row) = rows.next()? {
                let fact = read_fact(row, 0)?;
                let batch: i64 = row.get(FACT_COLUMN_COUNT)?;
                records.push(SnapshotRecord {
                    batch: batch_from_sql(batch),
                    fact,
                });
            }
            Ok(records)
        })
    }

    fn count(&self, count: Count) -> StoreResult<usize> {
        self.counter(match count {
            Count::Valid => "valid_count",
            Count::Stored => "stored_count",
        })
    }

    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        if self.options().search_cache && query.as_of.is_none() {
            return self.cached_search(query, weighting);
        }
        self.with_read_conn(|conn, scope| {
            let searched = search::search(conn, scope, &self.analyzer, None, query, weighting)?;
            Ok(searched.results.unwrap_or_default())
        })
    }
}

impl SqliteDatabase {
    /// The store of `scope` in this database (created when new), sharing its connections;
    /// `clock` dates explicit invalidations.
    ///
    /// # Errors
    ///
    /// As [`SqliteFactStore::open`](crate::SqliteFactStore::open): [`StoreError::Corrupt`](fact_store::StoreError::Corrupt) when the file is not a fact
    /// store database, [`StoreError::NewerSchema`](fact_store::StoreError::NewerSchema) when a newer build wrote it,
    /// [`StoreError::Io`](fact_store::StoreError::Io) when it cannot be opened or created (or, read-only, lacks the
    /// scope), [`StoreError::Busy`](fact_store::StoreError::Busy) when another writer holds it past the busy timeout.
    pub fn open(
        &self,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<SqliteFactStore> {
        let driver = Sqlite::init(self.clone(), scope, &config)?;
        Ok(SqliteFactStore::from_driver(driver, config, clock))
    }

    /// The names of the scopes the database holds, sorted. Opening a store creates its
    /// scope; an erased scope keeps its name, empty
    /// ([`LongTermStore::erase`](fact_store::LongTermStore::erase)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fact_model::SystemClock;
    /// use fact_store::StoreConfig;
    /// use fact_store_sqlite::SqliteDatabase;
    ///
    /// let database = SqliteDatabase::in_memory()?;
    /// assert!(database.scopes()?.is_empty());
    /// let _bob = database.open("user:bob", StoreConfig::default(), Arc::new(SystemClock))?;
    /// assert_eq!(database.scopes()?, ["user:bob"]);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open), when the file cannot be opened or read.
    pub fn scopes(&self) -> StoreResult<Vec<String>> {
        self.with_connection(|conn| {
            let mut stmt = conn.prepare_cached("SELECT name FROM scopes ORDER BY name")?;
            let names = stmt
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(names)
        })
        .map_err(|e| e.into_store::<Sqlite>(self.path()))
    }

    /// Rewrites the file without its free pages (`VACUUM`), so that it shrinks after an
    /// erasure. Deleted text is gone from the file already (`secure_delete` zeroes what a
    /// deletion frees, and the WAL is checkpointed after it): this returns the space. It
    /// needs as much free disk as the file, and waits for the other writers.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open); [`StoreError::Busy`](fact_store::StoreError::Busy) when a
    /// reader or writer holds the file past the busy timeout.
    pub fn vacuum(&self) -> StoreResult<()> {
        self.with_connection(|conn| {
            conn.execute_batch("VACUUM")?;
            Ok(())
        })
        .map_err(|e| e.into_store::<Sqlite>(self.path()))
    }
}

//! [`PgFactStore`]: facts and episodes of many scopes on a PostgreSQL server, shared by
//! processes on many machines.
//!
//! - `schema.rs`: the tables, constraints and indexes, and the forward migrations.
//! - `rows.rs`: the rows of one write transaction, for the temporal rules every SQL store
//!   shares ([`crate::sql::rules`]).
//! - `search.rs`: term search over the GIN index, with the shared in-process cache.
//! - `episodes.rs`: the [`EpisodeStore`](crate::EpisodeStore) implementation (episodes
//!   kept as their messages, message search).
//! - `long_term.rs`: the rows of long-term memory in a write transaction (aliases,
//!   profile versions, messages and their index) and the
//!   [`LongTermStore`](crate::LongTermStore) implementation.
//! - `vectors.rs`: the [`FactVectors`] implementation (embeddings and token vectors as
//!   `bytea`).
//! - `database.rs`: [`PgDatabase`], the database the stores of many scopes share (one
//!   pool, one schema check).
//! - `replicas.rs`: read replicas (hot standbys): where reads go, how a store reads its own
//!   writes there, and what a lagging or failing replica costs.
//! - `pool.rs`: the connection pool; `codec.rs`: rows → facts.

mod codec;
mod database;
mod episodes;
mod long_term;
mod pool;
mod replicas;
mod rows;
mod schema;
mod search;
mod vectors;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use fact_model::{Clock, FactId, FactSelector, FactUpdate, SessionFact, Timestamp};
use postgres::error::SqlState;
use postgres::types::ToSql;

use self::codec::read_fact;
use self::database::FoundScope;
pub use self::database::PgDatabase;
use self::pool::{Connection, Manager};
pub use self::replicas::ReplicaStats;
use self::replicas::Written;
use self::rows::PgRows;
use self::search::CacheSlot;
use crate::cache::Cached;
use crate::sql::codec::{FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, id_to_sql};
use crate::sql::error::{DbError, DbResult};
use crate::sql::rules::{Outcome, Writer};
use crate::sql::search::SearchCache;
use crate::sql::vectors::VectorCache;
use crate::{
    AddReport, Analyzer, AnalyzerConfig, CacheBudget, CompactionReport, FactVectors, ImportReport,
    SNAPSHOT_VERSION, ScoredFact, SessionFactStore, Snapshot, SnapshotRecord, StoreConfig,
    StoreError, StoreResult, TermQuery, TermWeighting, Transaction, TransactionReport,
};

/// How a [`PgDatabase`] and the [`PgFactStore`]s opened from it use their server.
///
/// ```
/// use std::time::Duration;
/// use fact_store::PgOptions;
///
/// let options = PgOptions::default()
///     .with_pool_size(2)
///     .with_lock_timeout(Duration::from_secs(10));
/// assert_eq!((options.pool_size, options.lock_timeout), (2, Duration::from_secs(10)));
/// assert_eq!(options.schema, "factmem");
/// assert!(options.search_cache);
/// assert_eq!(options.replica_wait, Duration::from_millis(50));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PgOptions {
    /// The PostgreSQL schema (namespace) that holds the store's tables (default
    /// `factmem`): lowercase ASCII letters, digits and `_`, not starting with a digit.
    pub schema: String,
    /// At most this many connections at once, shared by every store opened from one
    /// [`PgDatabase`] (default 4).
    pub pool_size: u32,
    /// How long opening a connection, or waiting for a free one, may take before the
    /// operation fails with [`StoreError::Io`] (default 5 s).
    pub connect_timeout: Duration,
    /// How long a write waits for another writer of the same scope before it fails with
    /// [`StoreError::Busy`] (default 30 s; PostgreSQL's `lock_timeout`).
    pub lock_timeout: Duration,
    /// How often a write transaction is tried when the server reports a conflict (a
    /// serialization failure, a deadlock, a violated uniqueness or exclusion constraint)
    /// before the error is returned (default 5; backoff 10 ms, doubling, with jitter).
    pub attempts: u32,
    /// Keep the scope's term index in memory for [`search`](SessionFactStore::search)
    /// (default true), checked against the scope's generation on every search.
    pub search_cache: bool,
    /// With read replicas ([`PgDatabase::connect_with_replicas`]): how long a read waits
    /// for a replica to replay its store's last write before the primary answers it
    /// (default 50 ms; zero: never wait).
    pub replica_wait: Duration,
    /// With read replicas: how long a replica that failed (unreachable, an error) is left
    /// alone before a read tries it again; the primary answers meanwhile (default 5 s).
    pub replica_retry: Duration,
    /// The byte budget the in-process caches (search caches, vector indexes) of every
    /// store opened from the [`PgDatabase`] share, with those of every store given a
    /// clone of it; see [`CacheBudget`]. Default: [`CacheBudget::unbounded`].
    pub cache_budget: CacheBudget,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            schema: "factmem".to_owned(),
            pool_size: 4,
            connect_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(30),
            attempts: 5,
            search_cache: true,
            replica_wait: Duration::from_millis(50),
            replica_retry: Duration::from_secs(5),
            cache_budget: CacheBudget::unbounded(),
        }
    }
}

impl PgOptions {
    /// Keeps the store's tables in the PostgreSQL schema `schema` (checked when opened).
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Opens at most `pool_size` connections at once.
    #[must_use]
    pub fn with_pool_size(mut self, pool_size: u32) -> Self {
        self.pool_size = pool_size;
        self
    }

    /// Lets opening or waiting for a connection take up to `connect_timeout`.
    #[must_use]
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Lets a write wait up to `lock_timeout` for another writer of the same scope.
    #[must_use]
    pub fn with_lock_timeout(mut self, lock_timeout: Duration) -> Self {
        self.lock_timeout = lock_timeout;
        self
    }

    /// Tries a conflicting write transaction at most `attempts` times.
    #[must_use]
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// Keeps the scope's term index in memory for search (`true`) or asks the server.
    #[must_use]
    pub fn with_search_cache(mut self, search_cache: bool) -> Self {
        self.search_cache = search_cache;
        self
    }

    /// Lets a read wait up to `replica_wait` for a replica to replay its store's last
    /// write.
    #[must_use]
    pub fn with_replica_wait(mut self, replica_wait: Duration) -> Self {
        self.replica_wait = replica_wait;
        self
    }

    /// Leaves a failed replica alone for `replica_retry` before trying it again.
    #[must_use]
    pub fn with_replica_retry(mut self, replica_retry: Duration) -> Self {
        self.replica_retry = replica_retry;
        self
    }

    /// Charges the in-process caches of the stores opened with these options to `budget`,
    /// which evicts the least recently used of them past its limit.
    #[must_use]
    pub fn with_cache_budget(mut self, budget: CacheBudget) -> Self {
        self.cache_budget = budget;
        self
    }
}

/// A durable [`SessionFactStore`], [`EpisodeStore`](crate::EpisodeStore) and
/// [`LongTermStore`](crate::LongTermStore) over one scope of a PostgreSQL database, shared
/// by every process that connects to it.
///
/// The semantics are exactly those of [`InMemorySessionFactStore`](crate::InMemorySessionFactStore)
/// (and [`InMemoryLongTermStore`](crate::InMemoryLongTermStore)) and of the SQLite store:
/// the temporal rules are the SQLite store's own code (`sql/rules.rs`) over PostgreSQL
/// rows, a long-term memory commit follows `sql/long_term.rs`, messages are ranked by the
/// code every store shares, and the conformance suite holds all three to the same
/// results, score for score.
///
/// # Many writers
///
/// Each write (`add` with its automatic compaction, `apply`, `invalidate_matching`,
/// `compact`, `update`, `delete`, `import`, an episode write, a long-term memory
/// [`commit`](crate::LongTermStore::commit)) is one transaction. It begins by
/// locking its scope's row, so writers of one scope take turns whatever machine they run
/// on, and writers of different scopes never wait for each other. The database enforces
/// the temporal invariants itself: a partial unique index allows one valid version per
/// triple, and an exclusion constraint checked at commit lets the valid facts of a
/// `(subject, relation)` key come from one batch only, which is at most one valid fact
/// per key when a batch holds one fact per key. A transaction the server rejects for a
/// conflict (serialization failure, deadlock, unique or exclusion violation) is rolled
/// back and tried again, at most [`attempts`](PgOptions::attempts) times with a growing
/// backoff; then the error is returned.
///
/// # Errors and lost connections
///
/// A write either commits whole or fails with a [`StoreError`] and changes nothing:
/// [`StoreError::Io`] when the server cannot be reached or the connection drops (a
/// restart), [`StoreError::Busy`] when another writer held the scope past the lock
/// timeout or conflicts persisted, [`StoreError::Corrupt`] for damaged rows,
/// [`StoreError::NewerSchema`] when a newer build migrated the database, and
/// [`StoreError::Backend`] for the rest. A connection the server closed is dropped from
/// the pool, and the next operation opens a new one: a client survives a server restart
/// by reporting the operation that was in flight.
///
/// Reads fail the same way: every read of [`SessionFactStore`], [`FactVectors`],
/// [`EpisodeStore`](crate::EpisodeStore) and [`LongTermStore`](crate::LongTermStore)
/// returns the error when the server cannot answer (a lost connection, missing
/// privileges), with its code; a failed read never answers as an empty store would.
///
/// # Connections
///
/// A store opens no connection of its own: it takes one from its [`PgDatabase`]'s pool
/// for each operation (a write's retry takes a new one after its pause). Stores opened
/// from one handle ([`PgDatabase::open`]) share its pool, so a process serving many
/// scopes holds at most [`pool_size`](PgOptions::pool_size) connections;
/// [`connect`](Self::connect) opens a handle for the one store. The store's own locks
/// (its term ids, its search cache, its vector indexes) are held only for work in memory,
/// never across a round trip to the server or a retry's pause: a thread that waits for
/// the server holds up no other.
///
/// # Search
///
/// The valid facts' term documents are indexed twice over: a `tsvector` with a GIN index
/// in the database, and (with [`search_cache`](PgOptions::search_cache), the default) the
/// same index in this process, tagged with the scope's generation and reloaded when
/// another process wrote. Both score as the in-memory store does. The in-process index
/// and the vector indexes are charged to the options'
/// [`cache_budget`](PgOptions::cache_budget), shared by every store opened from the
/// [`PgDatabase`] (and by any store given a clone of it): past its limit the least
/// recently used are dropped (never one a search is using), and the searches of that
/// scope answer from the GIN index while it loads again on a thread of its own, with a
/// connection of the pool (see [`CacheBudget`]).
///
/// # Embeddings
///
/// [`vectors`](SessionFactStore::vectors) gives the store's [`FactVectors`]: each fact's
/// embedding by a model is a row (the vector as a `bytea` of little-endian `f32`s),
/// written in one transaction per [`put_embeddings`](FactVectors::put_embeddings) call
/// (under the scope's row lock, tried again on conflicts) and deleted with the fact's
/// last version. [`nearest`](FactVectors::nearest) searches an index in this process,
/// loaded at a model's first search and brought up to date at each later one with only
/// the rows written since (by any process); the candidates' facts are read in one query
/// per search (`= ANY($1)`), so only facts valid now are found. At 100,000 facts with
/// 384-dimensional embeddings on a loopback server a first search takes about 0.45 s and
/// later ones about 4 ms (`benches/postgres.rs`). Token vectors
/// ([`put_token_vectors`](FactVectors::put_token_vectors)) are rows too, written and
/// deleted the same way, and read for many facts in one query.
///
/// ```no_run
/// use std::sync::Arc;
/// use fact_model::SystemClock;
/// use fact_store::{PgFactStore, SessionFactStore, StoreConfig};
///
/// let url = std::env::var("FACTMEM_PG_URL")?;
/// let store = PgFactStore::connect(&url, "spec:todo-api", StoreConfig::default(), Arc::new(SystemClock))?;
/// println!("{} valid facts", store.valid_count()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PgFactStore {
    /// The database: its pool, shared with every store opened from it, and its options.
    database: PgDatabase,
    scope: String,
    scope_id: i64,
    config: StoreConfig,
    analyzer: Analyzer,
    /// Episodes are analyzed as [`InMemoryEpisodeStore`](crate::InMemoryEpisodeStore)
    /// analyzes them: with the default configuration.
    episode_analyzer: Analyzer,
    clock: Arc<dyn Clock>,
    /// Lowercased word → term id of this scope, for writes. A write takes the map out
    /// and gives it back after its commit, so the lock is held for moments only, never
    /// while a transaction talks to the server or sleeps before a retry.
    words: Mutex<HashMap<String, i64>>,
    /// The scope's term index in this process, charged to the options' cache budget;
    /// locked only to read or change it in memory (`search.rs`).
    cache: Cached<CacheSlot>,
    /// The embeddings' in-process indexes, by model, charged to the same budget; locked
    /// only to read or change them in memory (`vectors.rs`).
    vectors: Cached<VectorCache>,
    /// With read replicas, the primary's WAL position after this store's last commit: a
    /// replica answers this store's reads once it has replayed that far.
    written: Written,
}

impl fmt::Debug for PgFactStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgFactStore")
            .field("location", &self.location())
            .field("scope", &self.scope)
            .field("config", &self.config)
            .field("options", self.options())
            .finish_non_exhaustive()
    }
}

/// How the scope's row names the analyzer its term documents were made with.
fn analyzer_tag(config: AnalyzerConfig) -> String {
    format!("stemming={}", config.stemming)
}

/// `url` without a password: neither the one after the user name nor a `password`
/// parameter (of the query string, or of a `key=value` connection string).
fn redacted(url: &str) -> String {
    let is_password = |key: &str| key.eq_ignore_ascii_case("password");
    let Some((scheme, rest)) = url.split_once("://") else {
        return url
            .split_whitespace()
            .filter(|pair| !pair.split('=').next().is_some_and(is_password))
            .collect::<Vec<_>>()
            .join(" ");
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    let query = query
        .map(|query| {
            query
                .split('&')
                .filter(|pair| !pair.split('=').next().is_some_and(is_password))
                .collect::<Vec<_>>()
                .join("&")
        })
        .filter(|query| !query.is_empty())
        .map(|query| format!("?{query}"))
        .unwrap_or_default();
    format!("{scheme}://{authority}{path}{query}")
}

/// Whether a failed transaction should be tried again.
fn is_conflict(error: &DbError) -> bool {
    let DbError::Postgres(error) = error else {
        return false;
    };
    error.code().is_some_and(|code| {
        [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::UNIQUE_VIOLATION,
            SqlState::EXCLUSION_VIOLATION,
        ]
        .contains(code)
    })
}

/// The [`StoreError`] for a failure of the server at `location` (the URL without its
/// password).
pub(crate) fn store_error(error: &postgres::Error, location: &Path) -> StoreError {
    let message = match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => describe(error),
    };
    let io = || StoreError::Io {
        message: format!("{}: {message}", location.display()),
    };
    let Some(code) = error.code() else {
        // No SQLSTATE: the connection failed or closed (a restart, a network error).
        return io();
    };
    match code.code().get(..2).unwrap_or_default() {
        // Serialization failures and deadlocks that outlived the retries; lock timeouts.
        "40" | "55" => StoreError::Busy { message },
        // Connection exceptions, a refused login, a missing database, insufficient
        // resources (a full disk), operator intervention (a shutdown), system errors, a
        // read-only transaction or server.
        "08" | "28" | "3D" | "53" | "57" | "58" | "25" => io(),
        _ if *code == SqlState::INSUFFICIENT_PRIVILEGE => io(),
        _ if *code == SqlState::DATA_CORRUPTED || *code == SqlState::INDEX_CORRUPTED => {
            StoreError::Corrupt {
                path: location.to_path_buf(),
                message,
            }
        }
        _ => StoreError::Backend { message },
    }
}

/// An error with its causes (`error connecting to server: Connection refused (os error
/// 111)`): the driver's `Display` stops at its own words.
fn describe(error: &postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A short pause before the `attempt`-th retry: 10 ms doubling, capped at 320 ms, plus up
/// to half as much again at random (the standard library's randomly keyed hasher), so
/// writers that collided do not collide again.
fn backoff(attempt: u32) -> Duration {
    use std::hash::BuildHasher;
    let base = 10u64 << attempt.min(5);
    let jitter = std::collections::hash_map::RandomState::new().hash_one(attempt) % base;
    Duration::from_millis(base + jitter / 2)
}

impl PgFactStore {
    /// The newest database schema version this build reads and writes.
    pub const SCHEMA_VERSION: u32 = schema::SCHEMA_VERSION;

    /// Connects to the server at `url` (`postgres://user:password@host:port/database`, or
    /// a `host=… user=…` string) with the default [`PgOptions`], creates or migrates the
    /// store's schema, and opens the store of `scope`; `clock` dates explicit
    /// invalidations.
    ///
    /// The store gets a [`PgDatabase`] (a pool) of its own; stores of many scopes share
    /// one when they are opened from one handle ([`PgDatabase::open`]).
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] when the server cannot be reached or refuses the login or the
    /// schema's creation, [`StoreError::NewerSchema`] when a newer build migrated it,
    /// [`StoreError::Backend`] for a malformed URL.
    pub fn connect(
        url: &str,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<PgFactStore> {
        PgFactStore::connect_with(url, scope, config, PgOptions::default(), clock)
    }

    /// [`connect`](Self::connect) with explicit [`PgOptions`].
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect); an invalid [`schema`](PgOptions::schema) name is
    /// [`StoreError::Backend`].
    pub fn connect_with(
        url: &str,
        scope: &str,
        config: StoreConfig,
        options: PgOptions,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<PgFactStore> {
        // One connection outside the pool migrates the schema and finds the scope, as
        // `PgDatabase::connect` and a first `open` would in two.
        PgDatabase::new(url, options)?.open(scope, config, clock)
    }

    /// The store of `scope` (its row found, with the analyzer its term documents were
    /// made with) on `database`; rebuilds the term documents when `config`'s analyzer
    /// differs.
    fn new(
        database: PgDatabase,
        scope: &str,
        found: FoundScope,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<PgFactStore> {
        let analyzer = Analyzer::new(config.analyzer);
        let written = Written::default();
        written.at(found.position);
        let indexed_with = found.indexed_with;
        let budget = &database.options().cache_budget;
        let cache = Cached::new(CacheSlot::default(), budget);
        let vectors = Cached::new(VectorCache::default(), budget);
        let store = PgFactStore {
            database,
            scope: scope.to_owned(),
            scope_id: found.id,
            config,
            analyzer,
            episode_analyzer: Analyzer::new(AnalyzerConfig::default()),
            clock,
            words: Mutex::new(HashMap::new()),
            cache,
            vectors,
            written,
        };
        let tag = analyzer_tag(store.analyzer.config());
        if indexed_with != tag {
            // Term documents are derived data: rebuild them for this analyzer.
            store.write(|writer| writer.reindex(&tag))?;
        }
        Ok(store)
    }

    /// `url` as messages and logs may show it: without a password, neither the one after
    /// the user name nor a `password` parameter.
    ///
    /// ```
    /// use fact_store::PgFactStore;
    ///
    /// let shown = PgFactStore::display_url("postgres://me:s3cret@db:5432/memory?sslmode=require");
    /// assert_eq!(shown, "postgres://me@db:5432/memory?sslmode=require");
    /// assert_eq!(PgFactStore::display_url("host=db user=me password=s3cret"), "host=db user=me");
    /// ```
    #[must_use]
    pub fn display_url(url: &str) -> String {
        redacted(url)
    }

    /// The server's URL, without its password.
    #[must_use]
    pub fn location(&self) -> &Path {
        self.database.location()
    }

    /// The scope this store reads and writes.
    #[must_use]
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The configuration the store was opened with.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The options the store was opened with (its database's).
    #[must_use]
    pub fn options(&self) -> &PgOptions {
        self.database.options()
    }

    /// The estimated bytes this store's in-process caches hold now (its search cache and
    /// vector indexes), as charged to its [`cache_budget`](PgOptions::cache_budget).
    #[must_use]
    pub fn cache_bytes(&self) -> usize {
        self.cache.charged() + self.vectors.charged()
    }

    /// The database the store was opened on: stores of other scopes opened from it share
    /// this store's pool.
    #[must_use]
    pub fn database(&self) -> &PgDatabase {
        &self.database
    }

    /// A connection from the pool.
    fn connection(&self) -> StoreResult<r2d2::PooledConnection<Manager>> {
        self.database.connection()
    }

    /// The connection a pooled holder holds.
    fn held<'c>(&self, holder: &'c mut pool::Holder) -> StoreResult<&'c mut Connection> {
        self.database.held(holder)
    }

    fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        lock(mutex)
    }

    /// Runs `f` in one transaction of the store's scope and commits, trying again on
    /// conflicts; on any error everything rolls back.
    ///
    /// No lock is held while the transaction talks to the server, and neither a lock nor
    /// a connection while it waits before a retry: the store's words are taken out for
    /// the write and given back after its commit.
    fn write<T>(&self, f: impl Fn(&mut Writer<'_, PgRows<'_>>) -> DbResult<T>) -> StoreResult<T> {
        let mut words = std::mem::take(&mut *Self::lock(&self.words));
        let mut attempt = 0;
        loop {
            let record_since = self
                .cache
                .with(|slot| slot.cache.as_ref().map(SearchCache::generation));
            let run = |conn: &mut Connection, words: &mut HashMap<String, i64>| {
                let Connection {
                    client, statements, ..
                } = conn;
                let tx = client.transaction()?;
                let rows = PgRows::new(tx, statements, self.scope_id);
                let mut writer = Writer::begin(rows, &self.analyzer, words, record_since)?;
                let value = f(&mut writer)?;
                Ok::<_, DbError>((value, writer.commit()?))
            };
            let outcome = {
                let mut pooled = self.connection()?;
                let conn = self.held(&mut pooled)?;
                let outcome = run(conn, &mut words);
                if outcome.is_ok() {
                    self.committed(conn);
                }
                outcome
            };
            match outcome {
                Ok((value, outcome)) => {
                    self.apply(outcome);
                    self.give_back(words);
                    return Ok(value);
                }
                Err(error) => {
                    // Term ids created by the rolled-back transaction no longer exist.
                    words.clear();
                    attempt += 1;
                    if is_conflict(&error) && attempt < self.options().attempts {
                        tracing::debug!(scope = %self.scope, attempt, ?error, "write conflict; trying again");
                        std::thread::sleep(backoff(attempt));
                        continue;
                    }
                    return Err(error.into_store(self.location()));
                }
            }
        }
    }

    /// Returns the words a committed write used (and learned) to the store, merged with
    /// those of writes that committed meanwhile (a term's id never changes once
    /// committed).
    fn give_back(&self, mut words: HashMap<String, i64>) {
        let mut shared = Self::lock(&self.words);
        if shared.len() < words.len() {
            std::mem::swap(&mut *shared, &mut words);
        }
        shared.extend(words);
    }

    /// Replays a committed write on the search cache. A cache the write cannot be
    /// replayed on (another write, of this process or another, came between) stays as it
    /// is, a true image of its generation, and the next search brings it up to date.
    fn apply(&self, outcome: Outcome) {
        self.cache.with(|slot| {
            if let Some(current) = slot.cache.as_mut() {
                current.apply(outcome, &self.analyzer);
            }
        });
    }

    /// With read replicas, notes where the primary's WAL stands after a commit on `conn`,
    /// for this store's later reads; when `conn` cannot say (it dropped right after the
    /// commit), the next read asks the primary first.
    fn committed(&self, conn: &mut Connection) {
        if !self.database.has_replicas() {
            return;
        }
        match replicas::commit_position(conn) {
            Ok(lsn) => self.written.at(lsn),
            Err(error) => {
                tracing::debug!(scope = %self.scope, ?error, "could not read the commit's WAL position");
                self.written.lost();
            }
        }
    }

    /// Runs the read `f` (on a pooled connection of a replica that has replayed this
    /// store's last write, or of the primary); errors carry the location of the server
    /// that answered. `f` may run twice: once on a replica that failed, then on the
    /// primary.
    fn with_conn<T>(
        &self,
        mut f: impl FnMut(&mut Connection, i64) -> DbResult<T>,
    ) -> StoreResult<T> {
        let need = if self.database.has_replicas() {
            self.written.need(|| self.database.primary_position())
        } else {
            None
        };
        self.database.read(need, |conn| f(conn, self.scope_id))
    }

    /// Runs the write `f` on a pooled connection of the primary (a write outside
    /// [`write`](Self::write)'s transaction), noting its position for later reads.
    fn with_primary<T>(
        &self,
        f: impl FnOnce(&mut Connection, i64) -> DbResult<T>,
    ) -> StoreResult<T> {
        let mut pooled = self.connection()?;
        let conn = self.held(&mut pooled)?;
        let value = f(conn, self.scope_id).map_err(|e| e.into_store(self.location()))?;
        self.committed(conn);
        Ok(value)
    }

    /// The facts `sql` selects with [`FACT_COLUMNS`] first.
    fn facts(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<SessionFact>> {
        self.with_conn(|conn, _| {
            let rows = query(conn, sql, params)?;
            rows.iter().map(|row| read_fact(row, 0)).collect()
        })
    }

    /// One of the scope's counters.
    fn counter(&self, column: &str) -> StoreResult<usize> {
        let sql = format!("SELECT {column} FROM scopes WHERE id = $1");
        self.with_conn(|conn, scope| {
            let rows = query(conn, &sql, &[&scope])?;
            let count: i64 = match rows.first() {
                Some(row) => row.try_get(0)?,
                None => 0,
            };
            Ok(usize::try_from(count).unwrap_or(0))
        })
    }
}

/// Locks one of a store's in-memory structures. Nothing runs under these locks but work
/// in memory (never a round trip to the server, never a sleep), and nothing under them
/// can leave a structure half-updated, so a poisoned lock is taken over.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs a prepared (and cached) query outside a transaction.
fn query(
    conn: &mut Connection,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> DbResult<Vec<postgres::Row>> {
    let Connection {
        client, statements, ..
    } = conn;
    let statement = match statements.get(sql) {
        Some(statement) => statement.clone(),
        None => {
            let statement = client.prepare(sql)?;
            statements.insert(sql.to_owned(), statement.clone());
            statement
        }
    };
    Ok(client.query(&statement, params)?)
}

impl SessionFactStore for PgFactStore {
    fn add(&self, batch: Vec<SessionFact>) -> StoreResult<AddReport> {
        self.write(|writer| writer.add(batch.clone(), &self.config))
    }

    fn apply(&self, transaction: Transaction) -> StoreResult<TransactionReport> {
        let now = self.clock.now();
        self.write(|writer| writer.apply(transaction.clone(), now, &self.config))
    }

    fn invalidate_matching(&self, selector: &FactSelector) -> StoreResult<Vec<FactId>> {
        let now = self.clock.now();
        self.write(|writer| writer.invalidate(selector, now, &self.config))
    }

    fn compact(&self, max_valid: usize) -> StoreResult<CompactionReport> {
        self.write(|writer| writer.compact(max_valid, &self.config))
    }

    fn update(&self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        self.write(|writer| writer.update(id, update))
    }

    fn delete(&self, id: FactId) -> StoreResult<usize> {
        self.write(|writer| writer.delete(id))
    }

    fn import(&self, snapshot: Snapshot) -> StoreResult<ImportReport> {
        snapshot.check_version()?;
        self.write(|writer| writer.import(snapshot.records.clone(), &self.config))
    }

    fn valid_facts(&self) -> StoreResult<Vec<SessionFact>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND valid_to IS NULL ORDER BY seq"
        );
        self.facts(&sql, &[&self.scope_id])
    }

    fn valid_at(&self, at: Timestamp) -> StoreResult<Vec<SessionFact>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND valid_from <= $2 \
             AND (valid_to IS NULL OR $2 < valid_to) ORDER BY seq"
        );
        let mut facts = self.facts(&sql, &[&self.scope_id, &at.unix_micros()])?;
        facts.retain(|fact| fact.is_valid_at(at));
        Ok(facts)
    }

    fn history(&self, subject: &str) -> StoreResult<Vec<SessionFact>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 \
             AND subject_hash = hashtextextended($2, 0) AND subject = $2 ORDER BY seq"
        );
        self.facts(&sql, &[&self.scope_id, &subject])
    }

    fn get(&self, id: FactId) -> StoreResult<Option<SessionFact>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND id = $2 \
             ORDER BY valid_to IS NULL DESC, seq DESC LIMIT 1"
        );
        Ok(self.facts(&sql, &[&self.scope_id, &id_to_sql(id)])?.pop())
    }

    fn export_snapshot(&self) -> StoreResult<Snapshot> {
        let records = self.with_conn(|conn, scope| {
            let sql =
                format!("SELECT {FACT_COLUMNS}, batch FROM facts WHERE scope = $1 ORDER BY seq");
            let rows = query(conn, &sql, &[&scope])?;
            rows.iter()
                .map(|row| {
                    let batch: i64 = row.try_get(FACT_COLUMN_COUNT)?;
                    Ok(SnapshotRecord {
                        batch: batch_from_sql(batch),
                        fact: read_fact(row, 0)?,
                    })
                })
                .collect::<DbResult<Vec<_>>>()
        })?;
        Ok(Snapshot {
            version: SNAPSHOT_VERSION,
            records,
        })
    }

    fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<ScoredFact>> {
        // An evicted cache reloads in the background while its scope's searches answer
        // from the GIN index; the reload starts once this search answered.
        let evicted = if self.options().search_cache {
            search::evicted(&self.database, self.scope_id, &self.analyzer, &self.cache)
        } else {
            search::Evicted::Answer
        };
        let pinned = matches!(evicted, search::Evicted::No).then(|| self.cache.pin());
        let cache = pinned.as_ref();
        let results = self.with_conn(|conn, scope| {
            search::search(conn, scope, &self.analyzer, cache, query, weighting)
        });
        if let search::Evicted::Reload(reload) = evicted {
            reload.start();
        }
        results
    }

    fn valid_count(&self) -> StoreResult<usize> {
        self.counter("valid_count")
    }

    fn stored_count(&self) -> StoreResult<usize> {
        self.counter("stored_count")
    }

    fn vectors(&self) -> Option<&dyn FactVectors> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        let cases = [
            (
                "postgres://alice:s3cret@db.example:5432/memory",
                "postgres://alice@db.example:5432/memory",
            ),
            (
                "postgresql://bob@localhost/x?sslmode=disable",
                "postgresql://bob@localhost/x?sslmode=disable",
            ),
            ("postgres://host/db", "postgres://host/db"),
            (
                "postgres://me:p%40w@host/db?sslmode=require&password=pw",
                "postgres://me@host/db?sslmode=require",
            ),
            ("postgres://host/db?password=pw", "postgres://host/db"),
            (
                "host=db user=carol password=hunter2 dbname=m",
                "host=db user=carol dbname=m",
            ),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn backoff_grows_and_is_bounded() {
        assert!(backoff(1) >= Duration::from_millis(20));
        assert!(backoff(30) <= Duration::from_millis(480));
    }
}

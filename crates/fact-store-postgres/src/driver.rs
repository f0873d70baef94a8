//! [`Postgres`]: the [`Driver`] of the PostgreSQL store, one scope of a database on a
//! server: its pool, its write path (the scope's row lock, retries on conflicts, the
//! replicas' positions) and its reads, and the scope's search cache.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use fact_model::{Clock, SessionFact};
use fact_store::{
    Analyzer, AnalyzerConfig, ScoredFact, SnapshotRecord, StoreConfig, StoreError, StoreResult,
    TermQuery, TermWeighting,
};
use fact_store_sql::cache::Cached;
use fact_store_sql::codec::{FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, id_to_sql};
use fact_store_sql::filter::{Dialect, compile};
use fact_store_sql::rules::{Outcome, TermIds, Writer};
use fact_store_sql::search::SearchCache;
use fact_store_sql::vectors::VectorCache;
use fact_store_sql::{Count, Driver, FactRead, SqlStore, analyzer_tag};
use postgres::types::ToSql;

use crate::client::{backoff, lock, query};
use crate::codec::read_fact;
use crate::database::{FoundScope, PgDatabase};
use crate::error::{DbError, DbResult, is_conflict, store_error};
use crate::options::PgOptions;
use crate::pool::{self, Connection, Manager};
use crate::replicas::{self, Written};
use crate::rows::PgRows;
use crate::schema;
use crate::search::{self, CacheSlot};
use crate::statements::bind;

/// A durable [`SessionFactStore`](fact_store::SessionFactStore), [`EpisodeStore`](fact_store::EpisodeStore) and
/// [`LongTermStore`](fact_store::LongTermStore) over one scope of a PostgreSQL database, shared
/// by every process that connects to it.
///
/// The semantics are exactly those of [`InMemorySessionFactStore`](fact_store::InMemorySessionFactStore)
/// (and [`InMemoryLongTermStore`](fact_store::InMemoryLongTermStore)) and of the SQLite store:
/// the temporal rules are the SQLite store's own code (`sql/rules.rs`) over PostgreSQL
/// rows, a long-term memory commit follows `sql/long_term.rs`, messages are ranked by the
/// code every store shares, and the conformance suite holds all three to the same
/// results, score for score.
///
/// # Many writers
///
/// Each write (`add` with its automatic compaction, `apply`, `invalidate_matching`,
/// `compact`, `update`, `delete`, `import`, an episode write, a long-term memory
/// [`commit`](fact_store::LongTermStore::commit)) is one transaction. It begins by
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
/// A write either commits whole or fails with a [`StoreError`](fact_store::StoreError) and changes nothing:
/// [`StoreError::Io`](fact_store::StoreError::Io) when the server cannot be reached or the connection drops (a
/// restart), [`StoreError::Busy`](fact_store::StoreError::Busy) when another writer held the scope past the lock
/// timeout or conflicts persisted, [`StoreError::Corrupt`](fact_store::StoreError::Corrupt) for damaged rows,
/// [`StoreError::NewerSchema`](fact_store::StoreError::NewerSchema) when a newer build migrated the database, and
/// [`StoreError::Backend`](fact_store::StoreError::Backend) for the rest. A connection the server closed is dropped from
/// the pool, and the next operation opens a new one: a client survives a server restart
/// by reporting the operation that was in flight.
///
/// Reads fail the same way: every read of [`SessionFactStore`](fact_store::SessionFactStore), [`FactVectors`](fact_store::FactVectors),
/// [`EpisodeStore`](fact_store::EpisodeStore) and [`LongTermStore`](fact_store::LongTermStore)
/// returns the error when the server cannot answer (a lost connection, missing
/// privileges), with its code; a failed read never answers as an empty store would.
///
/// # Connections
///
/// A store opens no connection of its own: it takes one from its [`PgDatabase`](crate::PgDatabase)'s pool
/// for each operation (a write's retry takes a new one after its pause). Stores opened
/// from one handle ([`PgDatabase::open`](crate::PgDatabase::open)) share its pool, so a process serving many
/// scopes holds at most [`pool_size`](PgOptions::pool_size) connections;
/// [`PgFactStore::open`](crate::PgFactStore::open) opens a handle for the one store. The store's own locks
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
/// [`PgDatabase`](crate::PgDatabase) (and by any store given a clone of it): past its limit the least
/// recently used are dropped (never one a search is using), and the searches of that
/// scope answer from the GIN index while it loads again on a thread of its own, with a
/// connection of the pool (see [`CacheBudget`](crate::CacheBudget)).
///
/// # Embeddings
///
/// [`vectors`](fact_store::SessionFactStore::vectors) gives the store's [`FactVectors`](fact_store::FactVectors): each fact's
/// embedding by a model is a row (the vector as a `bytea` of little-endian `f32`s),
/// written in one transaction per [`put_embeddings`](fact_store::FactVectors::put_embeddings) call
/// (under the scope's row lock, tried again on conflicts) and deleted with the fact's
/// last version. [`nearest`](fact_store::FactVectors::nearest) searches an index in this process,
/// loaded at a model's first search and brought up to date at each later one with only
/// the rows written since (by any process); the candidates' facts are read in one query
/// per search (`= ANY($1)`), so only facts valid now are found. At 100,000 facts with
/// 384-dimensional embeddings on a loopback server a first search takes about 0.45 s and
/// later ones about 4 ms (`benches/postgres.rs`). Token vectors
/// ([`put_token_vectors`](fact_store::FactVectors::put_token_vectors)) are rows too, written and
/// deleted the same way, and read for many facts in one query.
///
/// ```no_run
/// use std::sync::Arc;
/// use fact_model::SystemClock;
/// use fact_store::{SessionFactStore, StoreConfig};
/// use fact_store_postgres::PgFactStore;
///
/// let url = std::env::var("FACTMEM_PG_URL")?;
/// let store = PgFactStore::open(&url, "spec:todo-api", StoreConfig::default(), Arc::new(SystemClock))?;
/// println!("{} valid facts", store.valid_count()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type PgFactStore = SqlStore<Postgres>;

/// The PostgreSQL [`Driver`]: one scope of a database on a server, as
/// [`PgFactStore`](crate::PgFactStore) drives it.
///
/// See [`PgFactStore`](crate::PgFactStore) for what the store does.
pub struct Postgres {
    /// The database: its pool, shared with every store opened from it, and its options.
    pub(crate) database: PgDatabase,
    pub(crate) scope: String,
    pub(crate) scope_id: i64,
    pub(crate) analyzer: Analyzer,
    /// Episodes are analyzed as [`InMemoryEpisodeStore`](fact_store::InMemoryEpisodeStore)
    /// analyzes them: with the default configuration.
    pub(crate) episode_analyzer: Analyzer,
    /// Lowercased word → term id of this scope, for writes. A write takes the map out
    /// and gives it back after its commit, so the lock is held for moments only, never
    /// while a transaction talks to the server or sleeps before a retry.
    pub(crate) words: Mutex<TermIds>,
    /// The scope's term index in this process, charged to the options' cache budget;
    /// locked only to read or change it in memory (`search.rs`).
    pub(crate) cache: Cached<CacheSlot>,
    /// The embeddings' in-process indexes, by model, charged to the same budget; locked
    /// only to read or change them in memory (`vectors.rs`).
    pub(crate) vectors: Cached<VectorCache>,
    /// With read replicas, the primary's WAL position after this store's last commit: a
    /// replica answers this store's reads once it has replayed that far.
    pub(crate) written: Written,
}

impl fmt::Debug for Postgres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Postgres")
            .field("location", &self.location())
            .field("scope", &self.scope)
            .field("options", self.options())
            .finish_non_exhaustive()
    }
}

impl Postgres {
    /// The store of `scope` (its row found, with the analyzer its term documents were
    /// made with) on `database`; rebuilds the term documents when `config`'s analyzer
    /// differs.
    pub(crate) fn new(
        database: PgDatabase,
        scope: &str,
        found: FoundScope,
        config: &StoreConfig,
    ) -> StoreResult<Postgres> {
        let analyzer = Analyzer::new(config.analyzer);
        let written = Written::default();
        written.at(found.position);
        let indexed_with = found.indexed_with;
        let budget = &database.options().cache_budget;
        let cache = Cached::new(CacheSlot::default(), budget);
        let vectors = Cached::new(VectorCache::default(), budget);
        let store = Postgres {
            database,
            scope: scope.to_owned(),
            scope_id: found.id,
            analyzer,
            episode_analyzer: Analyzer::new(AnalyzerConfig::default()),
            words: Mutex::new(TermIds::default()),
            cache,
            vectors,
            written,
        };
        let tag = analyzer_tag(store.analyzer.config());
        if indexed_with != tag {
            // Term documents are derived data: rebuild them for this analyzer.
            store.write_attempts(|writer| writer.reindex(&tag))?;
        }
        Ok(store)
    }

    /// The database the store was opened on: stores of other scopes opened from it share
    /// this store's pool.
    #[must_use]
    pub fn database(&self) -> &PgDatabase {
        &self.database
    }

    /// A connection from the pool.
    pub(crate) fn connection(&self) -> StoreResult<r2d2::PooledConnection<Manager>> {
        self.database.connection()
    }

    /// The connection a pooled holder holds.
    pub(crate) fn held<'c>(&self, holder: &'c mut pool::Holder) -> StoreResult<&'c mut Connection> {
        self.database.held(holder)
    }

    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        lock(mutex)
    }

    /// Runs `f` in one transaction of the store's scope and commits, trying again on
    /// conflicts (each attempt calls `f` anew); on any error everything rolls back.
    ///
    /// No lock is held while the transaction talks to the server, and neither a lock nor
    /// a connection while it waits before a retry: the store's words are taken out for
    /// the write and given back after its commit.
    pub(crate) fn write_attempts<T>(
        &self,
        mut f: impl FnMut(&mut Writer<'_, PgRows<'_>>) -> DbResult<T>,
    ) -> StoreResult<T> {
        let mut words = std::mem::take(&mut *Self::lock(&self.words));
        let mut attempt = 0;
        loop {
            let record_since = self
                .cache
                .with(|slot| slot.cache.as_ref().map(SearchCache::generation));
            let mut run = |conn: &mut Connection, words: &mut TermIds| {
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
                    if error.is_conflict::<Postgres>() && attempt < self.options().attempts {
                        tracing::debug!(scope = %self.scope, attempt, ?error, "write conflict; trying again");
                        std::thread::sleep(backoff(attempt));
                        continue;
                    }
                    return Err(error.into_store::<Postgres>(self.location()));
                }
            }
        }
    }

    /// Returns the words a committed write used (and learned) to the store, merged with
    /// those of writes that committed meanwhile (a term's id never changes within a
    /// vocabulary).
    pub(crate) fn give_back(&self, words: TermIds) {
        Self::lock(&self.words).merge(words);
    }

    /// Replays a committed write on the search cache. A cache the write cannot be
    /// replayed on (another write, of this process or another, came between) stays as it
    /// is, a true image of its generation, and the next search brings it up to date.
    pub(crate) fn apply(&self, outcome: Outcome) {
        self.cache.with(|slot| {
            if let Some(current) = slot.cache.as_mut() {
                current.apply(outcome, &self.analyzer);
            }
        });
    }

    /// With read replicas, notes where the primary's WAL stands after a commit on `conn`,
    /// for this store's later reads; when `conn` cannot say (it dropped right after the
    /// commit), the next read asks the primary first.
    pub(crate) fn committed(&self, conn: &mut Connection) {
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
    pub(crate) fn with_conn<T>(
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
    /// [`write_attempts`](Self::write_attempts)'s transaction), noting its position for later reads.
    pub(crate) fn with_primary<T>(
        &self,
        f: impl FnOnce(&mut Connection, i64) -> DbResult<T>,
    ) -> StoreResult<T> {
        let mut pooled = self.connection()?;
        let conn = self.held(&mut pooled)?;
        let value =
            f(conn, self.scope_id).map_err(|e| e.into_store::<Postgres>(self.location()))?;
        self.committed(conn);
        Ok(value)
    }

    /// The facts `sql` selects with [`FACT_COLUMNS`] first.
    pub(crate) fn facts(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<SessionFact>> {
        self.with_conn(|conn, _| {
            let rows = query(conn, sql, params)?;
            rows.iter().map(|row| read_fact(row, 0)).collect()
        })
    }

    /// One of the scope's counters.
    pub(crate) fn counter(&self, column: &str) -> StoreResult<usize> {
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

impl Driver for Postgres {
    type Error = postgres::Error;
    type Rows<'t> = PgRows<'t>;
    type Target = str;
    type Options = PgOptions;

    const SCHEMA_VERSION: u32 = schema::SCHEMA_VERSION;

    fn store_error(error: &postgres::Error, location: &Path) -> StoreError {
        store_error(error, location)
    }

    fn is_conflict(error: &postgres::Error) -> bool {
        is_conflict(error)
    }

    /// Connects to the server at `url` (`postgres://user:password@host:port/database`, or
    /// a `host=… user=…` string), creates or migrates the store's schema, and opens the
    /// scope. The store gets a [`PgDatabase`](crate::PgDatabase) (a pool) of its own; stores of many scopes
    /// share one when they are opened from one handle ([`PgDatabase::open`](crate::PgDatabase::open)). An invalid
    /// [`schema`](PgOptions::schema) name or a malformed URL is [`StoreError::Backend`](fact_store::StoreError::Backend).
    fn open(
        url: &str,
        scope: &str,
        config: &StoreConfig,
        options: PgOptions,
    ) -> StoreResult<Postgres> {
        // One connection outside the pool migrates the schema and finds the scope, as
        // `PgDatabase::connect` and a first `open` would in two.
        let database = PgDatabase::new(url, options)?;
        let found = database.find(scope, config)?;
        Postgres::new(database, scope, found, config)
    }

    fn scope(&self) -> &str {
        &self.scope
    }

    fn location(&self) -> &Path {
        self.database.location()
    }

    fn options(&self) -> &PgOptions {
        self.database.options()
    }

    fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    fn episode_analyzer(&self) -> &Analyzer {
        &self.episode_analyzer
    }

    fn cache_bytes(&self) -> usize {
        self.cache.charged() + self.vectors.charged()
    }

    fn forget_cached(&self) {
        self.cache.with(|slot| slot.cache = None);
        self.vectors
            .with(|vectors| *vectors = VectorCache::default());
    }

    /// One transaction under the scope's row lock, tried again on conflicts: each
    /// attempt gets a clone of `input`.
    fn write<I: Clone, T>(
        &self,
        input: I,
        mut f: impl FnMut(&mut Writer<'_, PgRows<'_>>, I) -> DbResult<T>,
    ) -> StoreResult<T> {
        self.write_attempts(|writer| f(writer, input.clone()))
    }

    fn facts(&self, read: FactRead<'_>) -> StoreResult<Vec<SessionFact>> {
        let scope = self.scope_id;
        match read {
            FactRead::Valid => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND valid_to IS NULL \
                     ORDER BY seq"
                );
                self.facts(&sql, &[&scope])
            }
            FactRead::ValidAt(at) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND valid_from <= $2 \
                     AND (valid_to IS NULL OR $2 < valid_to) ORDER BY seq"
                );
                self.facts(&sql, &[&scope, &at.unix_micros()])
            }
            FactRead::History(subject) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 \
                     AND subject_hash = hashtextextended($2, 0) AND subject = $2 ORDER BY seq"
                );
                self.facts(&sql, &[&scope, &subject])
            }
            FactRead::Latest(id) => {
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND id = $2 \
                     ORDER BY valid_to IS NULL DESC, seq DESC LIMIT 1"
                );
                self.facts(&sql, &[&scope, &id_to_sql(id)])
            }
            FactRead::ValidAbout(subject, limit) => self.valid_about(subject, limit),
            FactRead::Touching(query) => {
                let names: Vec<&str> = query.entities.to_vec();
                let mut values: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(scope), Box::new(names)];
                let validity = match query.as_of {
                    None => "f.valid_to IS NULL",
                    Some(at) => {
                        values.push(Box::new(at.unix_micros()));
                        "f.valid_from <= $3 AND (f.valid_to IS NULL OR $3 < f.valid_to)"
                    }
                };
                let filter = match query.filter {
                    Some(filter) => {
                        let compiled = compile(filter, Dialect::Postgres, values.len() + 1);
                        values.extend(bind(&compiled.params));
                        compiled.sql
                    }
                    None => "TRUE".to_owned(),
                };
                values.push(Box::new(i64::try_from(query.limit).unwrap_or(i64::MAX)));
                let limit = values.len();
                // Each side through its index of hashes: `facts_subject` (scope,
                // subject_hash) and `facts_object` (scope, hashtextextended(object, 0)).
                let sql = format!(
                    "WITH names AS (SELECT name, hashtextextended(name, 0) AS hash \
                       FROM unnest($2::text[]) AS name) \
                     SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = $1 AND {validity} \
                     AND f.seq IN (\
                       SELECT seq FROM facts JOIN names ON subject_hash = names.hash \
                         WHERE scope = $1 AND subject = names.name \
                       UNION SELECT seq FROM facts JOIN names \
                         ON hashtextextended(object, 0) = names.hash \
                         WHERE scope = $1 AND object = names.name) \
                     AND {filter} ORDER BY f.seq LIMIT ${limit}"
                );
                let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(AsRef::as_ref).collect();
                self.facts(&sql, &refs)
            }
            FactRead::Matching { filter, as_of } => {
                let mut values: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(scope)];
                let validity = match as_of {
                    None => "f.valid_to IS NULL",
                    Some(at) => {
                        values.push(Box::new(at.unix_micros()));
                        "f.valid_from <= $2 AND (f.valid_to IS NULL OR $2 < f.valid_to)"
                    }
                };
                let compiled = compile(filter, Dialect::Postgres, values.len() + 1);
                values.extend(bind(&compiled.params));
                let sql = format!(
                    "SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = $1 AND {validity} \
                     AND {} ORDER BY f.seq",
                    compiled.sql
                );
                let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(AsRef::as_ref).collect();
                self.facts(&sql, &refs)
            }
        }
    }

    fn snapshot_records(&self) -> StoreResult<Vec<SnapshotRecord>> {
        self.with_conn(|conn, scope| {
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
}

impl PgDatabase {
    /// Opens the store of `scope` (created on first use) in this database; `clock` dates
    /// explicit invalidations. The store shares this handle's pool.
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`](fact_store::StoreError::Io) when the server cannot be reached or no pooled connection comes
    /// free within [`connect_timeout`](PgOptions::connect_timeout); on a handle's first
    /// store (one made by [`new`](Self::new)) also what [`PgFactStore::open`](crate::PgFactStore::open)
    /// reports.
    pub fn open(
        &self,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<PgFactStore> {
        let found = self.find(scope, &config)?;
        let driver = Postgres::new(self.clone(), scope, found, &config)?;
        Ok(SqlStore::from_driver(driver, config, clock))
    }

    /// The names of the scopes the database holds, sorted. Opening a store creates its
    /// scope; an erased scope keeps its name, empty
    /// ([`LongTermStore::erase`](fact_store::LongTermStore::erase)).
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open), when the server cannot be reached or read.
    pub fn scopes(&self) -> StoreResult<Vec<String>> {
        self.ensure_schema()?;
        let mut pooled = self.connection()?;
        let conn = self.held(&mut pooled)?;
        let rows = query(conn, "SELECT name FROM scopes ORDER BY name", &[])
            .map_err(|e| e.into_store_with(self.location(), store_error))?;
        rows.iter()
            .map(|row| {
                row.try_get(0)
                    .map_err(|e| DbError::from(e).into_store_with(self.location(), store_error))
            })
            .collect()
    }

    /// Runs `VACUUM` on every table an erasure deletes from, so that the server marks the
    /// space of the deleted rows free for reuse and drops them from the indexes. What it
    /// does not do (the rows' bytes may stay in free space, in the WAL and its archives, in
    /// base backups and on replicas until overwritten) is in `docs/protocol.md`.
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open); [`StoreError::Backend`](fact_store::StoreError::Backend)
    /// when the role may not vacuum the tables.
    pub fn vacuum(&self) -> StoreResult<()> {
        self.ensure_schema()?;
        let mut pooled = self.connection()?;
        let conn = self.held(&mut pooled)?;
        let tables = crate::rows::ERASED_TABLES.join(", ");
        conn.client
            .batch_execute(&format!("VACUUM {tables}"))
            .map_err(|e| DbError::from(e).into_store_with(self.location(), store_error))
    }
}

//! [`PgDatabase`](crate::PgDatabase): one PostgreSQL database as the stores of its scopes share it: one
//! connection pool (each connection with the statements it prepared) and one schema check,
//! however many stores are opened from it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::client::{query, redacted};
use crate::error::DbResult;
use crate::error::{describe, store_error};
use crate::options::PgOptions;
use crate::pool::{self, Connection, Manager};
use crate::replicas::{self, ReplicaStats, Replicas, Served};
use crate::schema;
use fact_store::{StoreConfig, StoreError, StoreResult};
use fact_store_sql::CacheBudget;
use fact_store_sql::analyzer_tag;

/// A PostgreSQL database, opened once for the stores of many scopes: they share one pool
/// of at most [`pool_size`](PgOptions::pool_size) connections, and the schema is checked
/// (and migrated) once, by the first connection of the handle.
///
/// A handle is cheap to clone (clones share the pool) and every [`PgFactStore`](crate::PgFactStore) opened
/// from it keeps it alive; the pool's connections close when the last of them is dropped.
/// [`PgFactStore::open`](crate::PgFactStore::open) opens a handle of its own for one store; a process that
/// serves many scopes (a runtime's per-spec stores, a memory service beside them) opens
/// one handle and every store from it, so a hundred specs use at most the pool's
/// connections, not a hundred pools.
///
/// ```no_run
/// use std::sync::Arc;
/// use fact_model::SystemClock;
/// use fact_store::{SessionFactStore, StoreConfig};
/// use fact_store_postgres::PgDatabase;
///
/// let url = std::env::var("FACTMEM_PG_URL")?;
/// let database = PgDatabase::connect(&url)?;
/// let clock = Arc::new(SystemClock);
/// let api = database.open("spec:todo-api", StoreConfig::default(), clock.clone())?;
/// let cli = database.open("spec:cli", StoreConfig::default(), clock)?;
/// println!("{} and {} valid facts", api.valid_count()?, cli.valid_count()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct PgDatabase {
    shared: Arc<Shared>,
}

/// What the clones of a handle share.
struct Shared {
    /// The server's URL without its password, for messages.
    location: PathBuf,
    options: PgOptions,
    /// Opens the first connection, outside the pool.
    manager: Manager,
    pool: r2d2::Pool<Manager>,
    /// Set once this handle brought the schema to this build's version: later stores
    /// find their scope on a pooled connection without checking it again.
    migrated: AtomicBool,
    /// The read replicas (none: the primary answers every read); shared with the handles
    /// [`PgDatabase::with_cache_budget`](crate::PgDatabase::with_cache_budget) makes.
    replicas: Arc<Replicas>,
}

impl fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgDatabase")
            .field("location", &self.shared.location)
            .field("options", &self.shared.options)
            .field("replicas", &self.shared.replicas)
            .finish_non_exhaustive()
    }
}

impl PgDatabase {
    /// Connects to the server at `url` (`postgres://user:password@host:port/database`, or
    /// a `host=… user=…` string) with the default [`PgOptions`], and creates or migrates
    /// the store's schema.
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`](fact_store::StoreError::Io) when the server cannot be reached or refuses the login or the
    /// schema's creation, [`StoreError::NewerSchema`](fact_store::StoreError::NewerSchema) when a newer build migrated it,
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) for a malformed URL.
    pub fn connect(url: &str) -> StoreResult<PgDatabase> {
        PgDatabase::connect_with(url, PgOptions::default())
    }

    /// [`PgFactStore::open`](crate::PgFactStore::open) with explicit [`PgOptions`]; every store opened from the
    /// handle uses them.
    ///
    /// # Errors
    ///
    /// As [`PgFactStore::open`](crate::PgFactStore::open); an invalid [`schema`](PgOptions::schema) name is
    /// [`StoreError::Backend`](fact_store::StoreError::Backend).
    pub fn connect_with(url: &str, options: PgOptions) -> StoreResult<PgDatabase> {
        PgDatabase::connect_with_replicas::<&str>(url, &[], options)
    }

    /// [`connect_with`](Self::connect_with) with read replicas: hot standbys of the
    /// primary at `url`, fed by PostgreSQL's streaming replication, at `replicas`.
    ///
    /// Every write goes to the primary; reads (searches through the database's index
    /// and the search cache's loads, history, valid facts, episodes and message search,
    /// long-term memory's reads, embeddings) go to a replica, round robin among those
    /// that are up. Each store opened from the handle reads its own writes: after a
    /// commit it remembers the primary's WAL position, and a replica answers only once
    /// it has replayed that far, waiting at most
    /// [`replica_wait`](PgOptions::replica_wait); otherwise the primary answers. A
    /// replica that is down or fails a read is left alone for
    /// [`replica_retry`](PgOptions::replica_retry) while the primary answers, with a
    /// `tracing` warning (at most one per replica and kind every 10 s), never an error to
    /// the caller. Nothing connects to a replica before the first read; see
    /// [`replica_stats`](Self::replica_stats) for how reads were served.
    ///
    /// ```no_run
    /// use fact_store_postgres::{PgDatabase, PgOptions};
    ///
    /// let primary = "postgres://factmem@db-primary:5432/memory";
    /// let replicas = ["postgres://factmem@db-standby-1:5432/memory"];
    /// let database = PgDatabase::connect_with_replicas(primary, &replicas, PgOptions::default())?;
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`connect_with`](Self::connect_with) for the primary; a malformed replica URL
    /// is [`StoreError::Backend`](fact_store::StoreError::Backend) (an unreachable replica is not an error).
    pub fn connect_with_replicas<S: AsRef<str>>(
        url: &str,
        replicas: &[S],
        options: PgOptions,
    ) -> StoreResult<PgDatabase> {
        let database = PgDatabase::new_with_replicas(url, replicas, options)?;
        database.first(None)?;
        Ok(database)
    }

    /// A handle on the database at `url` that has not talked to the server yet: the URL
    /// and options are checked now, and the first [`open`](Self::open) connects (and
    /// migrates the schema), as [`connect_with`](Self::connect_with) does at once. For
    /// whoever opens stores later, or never (a factory of stores).
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) for a malformed URL or an invalid
    /// [`schema`](PgOptions::schema) name.
    pub fn new(url: &str, options: PgOptions) -> StoreResult<PgDatabase> {
        PgDatabase::new_with_replicas::<&str>(url, &[], options)
    }

    /// [`new`](Self::new) with read replicas, as
    /// [`connect_with_replicas`](Self::connect_with_replicas) opens them.
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) for a malformed URL (of the primary or of a replica) or an
    /// invalid [`schema`](PgOptions::schema) name.
    pub fn new_with_replicas<S: AsRef<str>>(
        url: &str,
        replicas: &[S],
        options: PgOptions,
    ) -> StoreResult<PgDatabase> {
        let location = PathBuf::from(redacted(url));
        let valid_schema = options
            .schema
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && options
                .schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_schema {
            return Err(StoreError::Backend {
                message: format!(
                    "schema name {:?}: use lowercase ASCII letters, digits and `_`",
                    options.schema
                ),
            });
        }
        let pg_config = postgres::Config::from_str(url).map_err(|e| StoreError::Backend {
            message: format!("{}: not a PostgreSQL URL: {e}", location.display()),
        })?;
        let manager = Manager::new(
            pg_config,
            &options.schema,
            options.lock_timeout,
            options.connect_timeout,
        )
        .map_err(|message| StoreError::Backend { message })?;
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(options.connect_timeout)
            .error_handler(Box::new(pool::LogErrors))
            .build_unchecked(manager.clone());
        let replicas = Arc::new(Replicas::new(replicas, &options)?);
        Ok(PgDatabase {
            shared: Arc::new(Shared {
                location,
                options,
                manager,
                pool,
                migrated: AtomicBool::new(false),
                replicas,
            }),
        })
    }

    /// Creates or migrates the schema if no store of this handle did yet.
    pub(crate) fn ensure_schema(&self) -> StoreResult<()> {
        if !self.shared.migrated.load(Ordering::Acquire) {
            self.first(None)?;
        }
        Ok(())
    }

    /// The row of `scope` (created on first use) in this database, for a store opened on
    /// this handle.
    pub(crate) fn find(&self, scope: &str, config: &StoreConfig) -> StoreResult<FoundScope> {
        let replicas = self.has_replicas();
        if self.shared.migrated.load(Ordering::Acquire) {
            let mut pooled = self.connection()?;
            let conn = self.held(&mut pooled)?;
            return find_scope(conn, scope, config, replicas)
                .map_err(|e| e.into_store_with(self.location(), store_error));
        }
        self.first(Some((scope, config)))?
            .ok_or_else(|| StoreError::Backend {
                message: format!(
                    "{}: the scope {scope:?} was not found",
                    self.location().display()
                ),
            })
    }

    /// `url` as messages and logs may show it: without a password, neither the one after
    /// the user name nor a `password` parameter.
    ///
    /// ```
    /// use fact_store_postgres::PgDatabase;
    ///
    /// let shown = PgDatabase::display_url("postgres://me:s3cret@db:5432/memory?sslmode=require");
    /// assert_eq!(shown, "postgres://me@db:5432/memory?sslmode=require");
    /// assert_eq!(PgDatabase::display_url("host=db user=me password=s3cret"), "host=db user=me");
    /// ```
    #[must_use]
    pub fn display_url(url: &str) -> String {
        redacted(url)
    }

    /// A handle on the same pool (and schema check) whose stores charge their in-process
    /// caches to `budget` instead of [`cache_budget`](PgOptions::cache_budget): for a
    /// process that decides its budget after the handle was made. Stores already opened
    /// keep theirs.
    #[must_use]
    pub fn with_cache_budget(&self, budget: CacheBudget) -> PgDatabase {
        let shared = &self.shared;
        PgDatabase {
            shared: Arc::new(Shared {
                location: shared.location.clone(),
                options: shared.options.clone().with_cache_budget(budget),
                manager: shared.manager.clone(),
                pool: shared.pool.clone(),
                migrated: AtomicBool::new(shared.migrated.load(Ordering::Acquire)),
                replicas: shared.replicas.clone(),
            }),
        }
    }

    /// The server's URL, without its password.
    #[must_use]
    pub fn location(&self) -> &Path {
        &self.shared.location
    }

    /// The pool's connections now: how many are open, and how many of them are idle
    /// (the others are in use by an operation).
    #[must_use]
    pub fn pool_connections(&self) -> (usize, usize) {
        let state = self.shared.pool.state();
        let open = usize::try_from(state.connections).unwrap_or(usize::MAX);
        let idle = usize::try_from(state.idle_connections).unwrap_or(usize::MAX);
        (open, idle)
    }

    /// The options the handle was opened with.
    #[must_use]
    pub fn options(&self) -> &PgOptions {
        &self.shared.options
    }

    /// The read replicas' URLs, without their passwords (none without replicas).
    pub fn replicas(&self) -> impl Iterator<Item = &Path> {
        self.shared.replicas.locations()
    }

    /// How the reads of the stores opened from this handle were served so far: by a
    /// replica, or by the primary and why (all zero without replicas).
    #[must_use]
    pub fn replica_stats(&self) -> ReplicaStats {
        self.shared.replicas.stats()
    }

    /// Whether reads may go to a replica (and commits must note their WAL position).
    pub(super) fn has_replicas(&self) -> bool {
        !self.shared.replicas.is_empty()
    }

    /// Runs the read `f` on a replica that has replayed WAL position `need`, or on the
    /// primary (`need` of `None`, no replicas, or none able to answer); errors carry the
    /// location of the server that answered.
    pub(super) fn read<T>(
        &self,
        need: Option<u64>,
        mut f: impl FnMut(&mut Connection) -> DbResult<T>,
    ) -> StoreResult<T> {
        if let Some(need) = need.filter(|_| self.has_replicas()) {
            match self.shared.replicas.read(need, &mut f) {
                Served::Value(value) => return Ok(value),
                Served::Failed(error) => return Err(error),
                Served::Primary => {}
            }
        }
        let mut pooled = self.connection()?;
        let conn = self.held(&mut pooled)?;
        f(conn).map_err(|e| e.into_store_with(self.location(), store_error))
    }

    /// The primary's WAL position now, on a pooled connection: past every commit that
    /// returned (`None` when the primary cannot say).
    pub(super) fn primary_position(&self) -> Option<u64> {
        let mut pooled = self.connection().ok()?;
        let conn = self.held(&mut pooled).ok()?;
        match replicas::commit_position(conn) {
            Ok(lsn) => Some(lsn),
            Err(error) => {
                tracing::debug!(?error, "could not read the primary's WAL position");
                None
            }
        }
    }

    /// The first connection of the handle, made outside the pool and closed before this
    /// returns: an unreachable server or a refused login fails at once with the driver's
    /// own words, instead of after the pool's timeout with its summary. It migrates the
    /// schema and, given a scope, finds (or creates) it.
    fn first(&self, scope: Option<(&str, &StoreConfig)>) -> StoreResult<Option<FoundScope>> {
        let location = self.location();
        let mut conn = self.shared.manager.open().map_err(|e| StoreError::Io {
            message: format!("{}: {}", location.display(), describe(&e)),
        })?;
        let outcome = setup(
            &mut conn,
            &self.shared.options.schema,
            scope,
            self.has_replicas(),
        );
        pool::close_now(conn);
        match outcome.map_err(|e| e.into_store_with(location, store_error))? {
            Ok(found) => {
                self.shared.migrated.store(true, Ordering::Release);
                Ok(found)
            }
            Err(found) => Err(StoreError::NewerSchema {
                path: location.to_path_buf(),
                found,
                supported: schema::SCHEMA_VERSION,
            }),
        }
    }

    /// A connection from the pool.
    pub(super) fn connection(&self) -> StoreResult<r2d2::PooledConnection<Manager>> {
        self.shared.pool.get().map_err(|e| StoreError::Io {
            message: format!(
                "{}: no connection to the server: {e}",
                self.location().display()
            ),
        })
    }

    /// The connection a pooled holder holds.
    pub(super) fn held<'c>(&self, holder: &'c mut pool::Holder) -> StoreResult<&'c mut Connection> {
        holder.0.as_mut().ok_or_else(|| StoreError::Io {
            message: format!("{}: the connection was closed", self.location().display()),
        })
    }
}

/// A scope as the primary knows it when its store opens.
pub(super) struct FoundScope {
    /// The scope's row id.
    pub(super) id: i64,
    /// The analyzer its term documents were made with.
    pub(super) indexed_with: String,
    /// With read replicas, the primary's WAL position once the scope was found (or
    /// created): a replica answers the new store's reads only once it has replayed this
    /// far, so it knows the scope (and everything the primary showed when it opened).
    pub(super) position: u64,
}

/// Migrates the schema and, given a scope, finds (or creates) it; `Ok(Err(found))` for a
/// schema newer than this build's.
fn setup(
    conn: &mut Connection,
    schema: &str,
    scope: Option<(&str, &StoreConfig)>,
    replicas: bool,
) -> DbResult<Result<Option<FoundScope>, u32>> {
    if let Err(found) = schema::migrate(&mut conn.client, schema)? {
        return Ok(Err(found));
    }
    scope
        .map(|(scope, config)| find_scope(conn, scope, config, replicas))
        .transpose()
        .map(Ok)
}

/// The scope's row, created (tagged with `config`'s analyzer) when there is none, and with
/// `replicas` the primary's WAL position after; prepared statements, so a scope that
/// exists costs one round trip (two with replicas).
fn find_scope(
    conn: &mut Connection,
    scope: &str,
    config: &StoreConfig,
    replicas: bool,
) -> DbResult<FoundScope> {
    let (id, indexed_with) = scope_row(conn, scope, config)?;
    let position = if replicas {
        replicas::commit_position(conn)?
    } else {
        0
    };
    Ok(FoundScope {
        id,
        indexed_with,
        position,
    })
}

/// The id of `scope` and the analyzer its term documents were made with, creating its row
/// when there is none.
fn scope_row(conn: &mut Connection, scope: &str, config: &StoreConfig) -> DbResult<(i64, String)> {
    const FIND: &str = "SELECT id, analyzer FROM scopes WHERE name = $1";
    let found = |conn: &mut Connection| -> DbResult<Option<(i64, String)>> {
        query(conn, FIND, &[&scope])?
            .first()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .transpose()
    };
    if let Some(row) = found(conn)? {
        return Ok(row);
    }
    let tag = analyzer_tag(config.analyzer);
    query(
        conn,
        "INSERT INTO scopes (name, analyzer) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        &[&scope, &tag],
    )?;
    found(conn)?.ok_or_else(|| {
        crate::error::DbError::Corrupt(format!("the scope {scope:?} has no row after its insert"))
    })
}

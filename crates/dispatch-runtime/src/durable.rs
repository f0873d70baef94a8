//! Durable composition (features `sqlite` and `postgres`): the runtime's per-spec stores
//! and the memory service on one database, each under its own scope.
//!
//! A spec's facts live under scope `spec:NAME`, a user's memory under the scope the caller
//! names (`default`, `user:alice`); one database serves them all and no query crosses
//! scopes. The database is a SQLite file (feature `sqlite`) or a PostgreSQL server
//! (feature `postgres`), shared by every process that connects to it; a [`Database`] names
//! either, and [`stores`] and [`open_memory_on`] open the runtime's stores and the memory
//! service on it (with feature `onnx`, `open_embedder` loads a local sentence-embedding
//! model that makes the memory semantic from a model directory, `open_embedder_files` from
//! files wherever they are). A [`DatabaseHandle`] ([`Database::handle`])
//! opens both on one set of connections: on PostgreSQL one pool, however many specs:
//!
//! ```no_run
//! use std::sync::Arc;
//! use dispatch_runtime::DispatchRuntimeManager;
//! use dispatch_runtime::durable::{self, Database};
//! use dispatch_runtime::reexports::SystemClock;
//!
//! // A path, or `postgres://user:password@host:5432/factmem`.
//! let database: Database = std::env::args().nth(1).unwrap_or("memory.db".into()).parse()?;
//! let handle = database.handle()?;
//! let config = durable::retained(None, None);
//! let memory = handle.open_memory("user:alice", config, Arc::new(SystemClock))?;
//! let runtime = DispatchRuntimeManager::builder()
//!     .stores(handle.stores(config))
//!     .build();
//! println!("facts on {database}"); // never shows a password
//! # let _ = (memory, runtime);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::OsStr;
use std::fmt;
#[cfg(feature = "sqlite")]
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use fact_model::Clock;
use fact_store::{SessionFactStore, StoreConfig, StoreResult};

use crate::reexports::CacheBudget;
#[cfg(feature = "postgres")]
use fact_store_postgres::{PgDatabase, PgFactStore, PgOptions};
#[cfg(feature = "sqlite")]
use fact_store_sqlite::{SqliteDatabase, SqliteFactStore, SqliteOptions};

use crate::{MemoryService, StoreFactory};

/// The scope of a spec's facts: `spec:` and the spec's name.
///
/// ```
/// assert_eq!(dispatch_runtime::durable::spec_scope("todo-api"), "spec:todo-api");
/// ```
#[must_use]
pub fn spec_scope(spec_name: &str) -> String {
    format!("spec:{spec_name}")
}

/// The URL schemes that name a PostgreSQL server.
const POSTGRES_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// A durable database: a SQLite file or a PostgreSQL server.
///
/// Parse one from what a user typed (`--db`, an environment variable): a
/// `postgres://` or `postgresql://` URL names a server, anything else a SQLite file.
/// [`Display`](fmt::Display) and [`Debug`] never show a password, so a `Database` can go
/// into messages and logs as it is.
///
/// ```
/// use std::path::PathBuf;
/// use dispatch_runtime::durable::Database;
///
/// # #[cfg(feature = "sqlite")] {
/// let file: Database = "data/memory.db".parse()?;
/// assert_eq!(file, Database::Sqlite(PathBuf::from("data/memory.db")));
/// assert_eq!(file.to_string(), "data/memory.db");
/// # }
/// # #[cfg(feature = "postgres")] {
/// let server: Database = "postgres://factmem:s3cret@db.internal:5432/memory".parse()?;
/// assert!(server.is_postgres());
/// assert_eq!(server.to_string(), "postgres://factmem@db.internal:5432/memory");
/// assert!(!format!("{server:?}").contains("s3cret"));
/// # }
/// # Ok::<(), dispatch_runtime::durable::ParseDatabaseError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Database {
    /// A SQLite file, created on first use (its directory must exist).
    #[cfg(feature = "sqlite")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
    Sqlite(PathBuf),
    /// A PostgreSQL server: a `postgres://user:password@host:port/database` URL (or a
    /// `host=… user=…` connection string). The store's tables are created, or migrated, on
    /// first use.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    Postgres(String),
}

/// Why a text does not name a [`Database`] this build can open: a PostgreSQL URL without
/// the `postgres` feature, or a path without the `sqlite` feature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseDatabaseError {
    message: String,
}

impl Database {
    /// Reads `value` as [`FromStr`] does, keeping a SQLite path that is not UTF-8 as it is
    /// (for command-line arguments and environment variables).
    ///
    /// ```
    /// use std::ffi::OsStr;
    /// use dispatch_runtime::durable::Database;
    ///
    /// # #[cfg(feature = "sqlite")] {
    /// let db = Database::parse_os(OsStr::new("memory.db"))?;
    /// assert!(!db.is_postgres());
    /// # }
    /// # Ok::<(), dispatch_runtime::durable::ParseDatabaseError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ParseDatabaseError`] when this build lacks the backend `value` names.
    pub fn parse_os(value: &OsStr) -> Result<Database, ParseDatabaseError> {
        let is_url = value.to_str().is_some_and(|text| {
            POSTGRES_SCHEMES.iter().any(|scheme| {
                text.get(..scheme.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
            })
        });
        if is_url {
            postgres_url(value)
        } else {
            sqlite_path(value)
        }
    }

    /// Whether this is a PostgreSQL server.
    #[must_use]
    pub fn is_postgres(&self) -> bool {
        match self {
            #[cfg(feature = "sqlite")]
            Database::Sqlite(_) => false,
            #[cfg(feature = "postgres")]
            Database::Postgres(_) => true,
        }
    }

    /// A handle that every store opened from it shares: on PostgreSQL one pool of
    /// connections (at most [`PgOptions::pool_size`], 4) and one schema check, whatever
    /// the number of specs and memories; on SQLite the file's connections (a few kept
    /// open between operations, [`SqliteOptions::idle_connections`], whatever the number
    /// of scopes). Nothing is connected yet: the first store opened connects.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use dispatch_runtime::DispatchRuntimeManager;
    /// use dispatch_runtime::durable::{self, Database};
    /// use dispatch_runtime::reexports::SystemClock;
    ///
    /// let database: Database = "postgres://factmem@127.0.0.1:5432/memory".parse()?;
    /// let handle = database.handle()?;
    /// let config = durable::retained(None, None);
    /// let memory = handle.open_memory("user:alice", config, Arc::new(SystemClock))?;
    /// let runtime = DispatchRuntimeManager::builder().stores(handle.stores(config)).build();
    /// # let _ = (memory, runtime);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) for a malformed
    /// PostgreSQL URL.
    pub fn handle(&self) -> StoreResult<DatabaseHandle> {
        self.handle_with_replicas(&[])
    }

    /// [`handle`](Self::handle) with read replicas: hot standbys of this PostgreSQL
    /// server (PostgreSQL's streaming replication). Every write goes to this server;
    /// searches, recalls, history and the other reads go to a replica, and each store
    /// opened from the handle reads its own writes at once (a replica that has not
    /// replayed them, is down or fails answers nothing: this server does, with a warning
    /// in the log). See [`PgDatabase::connect_with_replicas`].
    ///
    /// ```no_run
    /// use dispatch_runtime::durable::Database;
    ///
    /// let primary: Database = "postgres://factmem@db-primary:5432/memory".parse()?;
    /// let standby: Database = "postgres://factmem@db-standby:5432/memory".parse()?;
    /// let handle = primary.handle_with_replicas(&[standby])?;
    /// # let _ = handle;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) for a malformed URL, for
    /// replicas of a SQLite file, or for a replica that is not a PostgreSQL server.
    pub fn handle_with_replicas(&self, replicas: &[Database]) -> StoreResult<DatabaseHandle> {
        let cache_budget = CacheBudget::unbounded();
        let backend = match self {
            #[cfg(feature = "sqlite")]
            Database::Sqlite(path) => {
                if !replicas.is_empty() {
                    return Err(fact_store::StoreError::Backend {
                        message: format!(
                            "{}: read replicas need a PostgreSQL database, not a SQLite file",
                            path.display()
                        ),
                    });
                }
                Backend::Sqlite(SqliteDatabase::new(path, sqlite_options(&cache_budget)))
            }
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => {
                let urls = replicas
                    .iter()
                    .map(|replica| match replica {
                        Database::Postgres(url) => Ok(url.as_str()),
                        #[cfg(feature = "sqlite")]
                        Database::Sqlite(path) => Err(fact_store::StoreError::Backend {
                            message: format!(
                                "read replica {}: not a postgres:// URL",
                                path.display()
                            ),
                        }),
                    })
                    .collect::<StoreResult<Vec<&str>>>()?;
                Backend::Postgres(PgDatabase::new_with_replicas(
                    url,
                    &urls,
                    PgOptions::default(),
                )?)
            }
        };
        Ok(DatabaseHandle {
            database: self.clone(),
            backend,
            cache_budget,
        })
    }
}

/// The page cache (KiB) of each SQLite connection of a handle with a bounded cache budget.
#[cfg(feature = "sqlite")]
const MANY_STORES_PAGE_CACHE_KIB: u32 = 2048;

/// The options of the SQLite stores of a handle whose caches are charged to `budget`:
/// the defaults for an unbounded budget; under a bounded one (a server of many scopes)
/// the connections' own memory is bounded too: no memory map (the pages each connection
/// touched through its map counted once per connection) and a small page cache.
#[cfg(feature = "sqlite")]
fn sqlite_options(budget: &CacheBudget) -> SqliteOptions {
    let options = SqliteOptions::default().with_cache_budget(budget.clone());
    if budget.limit().is_some() {
        options
            .with_mmap_size(0)
            .with_page_cache_kib(MANY_STORES_PAGE_CACHE_KIB)
    } else {
        options
    }
}

/// A [`Database`] as the stores opened from it share it: [`Database::handle`]. Cheap to
/// clone; clones share the connections.
#[derive(Clone)]
pub struct DatabaseHandle {
    database: Database,
    backend: Backend,
    /// What every store opened from the handle charges its in-process caches to.
    cache_budget: CacheBudget,
}

/// A database's connections at one moment ([`DatabaseHandle::connections`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connections {
    /// Open and unused now, kept for the next operation.
    pub idle: usize,
    /// Open now, idle or in use, where the backend counts them (PostgreSQL's pool).
    pub open: Option<usize>,
    /// Opened since the database was opened, closed since or not, where the backend
    /// counts them (SQLite).
    pub opened: Option<u64>,
}

/// What a [`DatabaseHandle`] opens stores with.
#[derive(Clone)]
enum Backend {
    /// Every store shares the file's connections.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteDatabase),
    /// Every store shares the database's pool.
    #[cfg(feature = "postgres")]
    Postgres(PgDatabase),
}

impl fmt::Debug for DatabaseHandle {
    /// The database as [`Database`]'s `Debug` shows it: no password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DatabaseHandle")
            .field(&self.database)
            .finish()
    }
}

impl DatabaseHandle {
    /// The database this handle opens stores in.
    #[must_use]
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// This handle, its stores (every spec's and every memory's opened from it afterwards)
    /// sharing `budget` for their in-process caches: a scope's term index and vector
    /// indexes. Past the budget's limit the least recently used caches are dropped, and
    /// their scopes load again at their next search, so a server that touches many scopes
    /// holds about the budget, not every scope it ever served. The default is
    /// [`CacheBudget::unbounded`] (one budget for the handle's stores, never evicting).
    ///
    /// A bounded budget also bounds the SQLite connections (which the handle's stores
    /// share): no memory map (`mmap_size` 0) and a page cache of 2 MiB, where a store
    /// alone maps up to 256 MiB of the file and caches 32 MiB of pages. The pages each
    /// connection touched through its map counted in the process once per connection;
    /// searches and writes measured as fast without it.
    ///
    /// ```
    /// use dispatch_runtime::durable::Database;
    /// use dispatch_runtime::reexports::CacheBudget;
    ///
    /// # #[cfg(feature = "sqlite")] {
    /// let database: Database = "memory.db".parse()?;
    /// let budget = CacheBudget::new(512 * 1024 * 1024);
    /// let handle = database.handle()?.with_cache_budget(budget.clone());
    /// assert_eq!(handle.cache_budget(), &budget);
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_cache_budget(mut self, budget: CacheBudget) -> Self {
        self.backend = match self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(database) => Backend::Sqlite(SqliteDatabase::new(
                database.path(),
                sqlite_options(&budget),
            )),
            #[cfg(feature = "postgres")]
            Backend::Postgres(database) => {
                Backend::Postgres(database.with_cache_budget(budget.clone()))
            }
        };
        self.cache_budget = budget;
        self
    }

    /// The database's connections now, as the handle's stores share them: on SQLite the
    /// idle ones and how many were opened so far, on PostgreSQL the pool's open and idle
    /// ones (a metrics scrape reads them).
    #[must_use]
    pub fn connections(&self) -> Connections {
        match &self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(database) => Connections {
                idle: database.idle_connections(),
                open: None,
                opened: Some(database.opened_connections()),
            },
            #[cfg(feature = "postgres")]
            Backend::Postgres(database) => {
                let (open, idle) = database.pool_connections();
                Connections {
                    idle,
                    open: Some(open),
                    opened: None,
                }
            }
        }
    }

    /// The budget the handle's stores charge their in-process caches to.
    #[must_use]
    pub fn cache_budget(&self) -> &CacheBudget {
        &self.cache_budget
    }

    /// A [`StoreFactory`] that opens each spec's store from this handle, under scope
    /// [`spec_scope`], with `config`: [`stores`] on one handle, so the stores of every
    /// spec (and the memory opened from the same handle) share its connections.
    #[must_use]
    pub fn stores(&self, config: StoreConfig) -> StoreFactory {
        let handle = self.clone();
        Box::new(move |spec_name, clock| handle.open_store(&spec_scope(spec_name), config, clock))
    }

    /// A [`StoreFactory`] like [`stores`](DatabaseHandle::stores) whose spec scopes start
    /// with `prefix`: spec `NAME` is kept under scope `PREFIX` followed by
    /// [`spec_scope`]`(NAME)`. A server that serves several tenants gives each its own
    /// prefix (`facts mcp --tokens` gives `TENANT_SCOPE/`), so their specs never share a
    /// store even when they share a name.
    #[must_use]
    pub fn stores_under(&self, prefix: &str, config: StoreConfig) -> StoreFactory {
        let handle = self.clone();
        let prefix = prefix.to_owned();
        Box::new(move |spec_name, clock| {
            handle.open_store(&format!("{prefix}{}", spec_scope(spec_name)), config, clock)
        })
    }

    /// The memory of `scope`: [`open_memory_with`] on this handle's connections.
    ///
    /// # Errors
    ///
    /// As [`open_memory_on`].
    pub fn open_memory(
        &self,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<MemoryService> {
        let store: Arc<dyn fact_store::LongTermStore> = match &self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(database) => Arc::new(database.open(scope, config, clock.clone())?),
            #[cfg(feature = "postgres")]
            Backend::Postgres(database) => Arc::new(database.open(scope, config, clock.clone())?),
        };
        Ok(MemoryService::new(store, clock))
    }

    /// The names of the scopes the database holds, sorted (memory scopes, and the spec
    /// scopes of runs).
    ///
    /// # Errors
    ///
    /// The database's error when it cannot be opened or read.
    pub fn scopes(&self) -> StoreResult<Vec<String>> {
        match &self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(database) => database.scopes(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(database) => database.scopes(),
        }
    }

    /// Returns the space of deleted rows (after [`LongTermStore::erase`]): SQLite rewrites
    /// the file (`VACUUM`), PostgreSQL vacuums the tables of the stores.
    ///
    /// [`LongTermStore::erase`]: fact_store::LongTermStore::erase
    ///
    /// # Errors
    ///
    /// The database's error.
    pub fn vacuum(&self) -> StoreResult<()> {
        match &self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(database) => database.vacuum(),
            #[cfg(feature = "postgres")]
            Backend::Postgres(database) => database.vacuum(),
        }
    }

    /// The store of `scope`.
    fn open_store(
        &self,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<Arc<dyn SessionFactStore>> {
        Ok(match &self.backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(database) => Arc::new(database.open(scope, config, clock)?),
            #[cfg(feature = "postgres")]
            Backend::Postgres(database) => Arc::new(database.open(scope, config, clock)?),
        })
    }
}

/// A PostgreSQL URL as a [`Database`].
#[cfg(feature = "postgres")]
fn postgres_url(value: &OsStr) -> Result<Database, ParseDatabaseError> {
    Ok(Database::Postgres(value.to_string_lossy().into_owned()))
}

/// A PostgreSQL URL in a build without PostgreSQL.
#[cfg(not(feature = "postgres"))]
fn postgres_url(_: &OsStr) -> Result<Database, ParseDatabaseError> {
    Err(ParseDatabaseError {
        message: "a postgres:// URL names a PostgreSQL server, which needs the `postgres` \
                  feature of dispatch-runtime"
            .into(),
    })
}

/// A SQLite path as a [`Database`].
#[cfg(feature = "sqlite")]
fn sqlite_path(value: &OsStr) -> Result<Database, ParseDatabaseError> {
    Ok(Database::Sqlite(PathBuf::from(value)))
}

/// A path in a build without SQLite.
#[cfg(not(feature = "sqlite"))]
fn sqlite_path(value: &OsStr) -> Result<Database, ParseDatabaseError> {
    Err(ParseDatabaseError {
        message: format!(
            "{}: SQLite files need the `sqlite` feature of dispatch-runtime \
             (a PostgreSQL server is named by a postgres:// URL)",
            value.to_string_lossy()
        ),
    })
}

impl FromStr for Database {
    type Err = ParseDatabaseError;

    /// A `postgres://` or `postgresql://` URL (any case) is a PostgreSQL server; anything
    /// else is the path of a SQLite file.
    fn from_str(value: &str) -> Result<Database, ParseDatabaseError> {
        Database::parse_os(OsStr::new(value))
    }
}

#[cfg(feature = "sqlite")]
impl From<PathBuf> for Database {
    /// The SQLite file at `path`.
    fn from(path: PathBuf) -> Database {
        Database::Sqlite(path)
    }
}

impl fmt::Display for Database {
    /// The path, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "sqlite")]
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => f.write_str(&PgDatabase::display_url(url)),
        }
    }
}

impl fmt::Debug for Database {
    /// As [`Display`](fmt::Display) shows it, with the variant: no password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "sqlite")]
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&PgDatabase::display_url(url))
                .finish(),
        }
    }
}

/// What a durable store forgets: nothing, unless a limit is given. Without a limit the store
/// keeps every version and never compacts by itself (seed 000's compaction is about what
/// goes into a prompt, which the retriever's budget decides, not about what a database
/// forgets). With `capacity`, more valid facts than that are compacted (merged by subject,
/// then dropped, oldest first); with `history_limit`, the oldest ended versions beyond it
/// are deleted; either limit turns automatic compaction on.
///
/// ```
/// use dispatch_runtime::durable::retained;
///
/// let kept = retained(None, None);
/// assert_eq!((kept.capacity, kept.history_limit, kept.auto_compact), (usize::MAX, usize::MAX, false));
/// let limited = retained(None, Some(10_000));
/// assert_eq!((limited.history_limit, limited.auto_compact), (10_000, true));
/// ```
#[must_use]
pub fn retained(capacity: Option<usize>, history_limit: Option<usize>) -> StoreConfig {
    StoreConfig::default()
        .with_capacity(capacity.unwrap_or(usize::MAX))
        .with_history_limit(history_limit.unwrap_or(usize::MAX))
        .with_auto_compact(capacity.is_some() || history_limit.is_some())
}

/// The configuration of long-term memory: [`retained`] without limits (it is not
/// compacted behind the user's back).
fn memory_config() -> StoreConfig {
    retained(None, None)
}

/// A [`StoreFactory`] that opens each spec's store in `database`, under scope
/// [`spec_scope`], with `config`: give it to
/// [`RuntimeBuilder::stores`](crate::RuntimeBuilder::stores) and a restarted runtime
/// serves the facts of every earlier run. On PostgreSQL, every runtime connected to the
/// server serves them, wherever it runs.
///
/// Nothing is opened until a run names its spec: a database that cannot be opened fails
/// that `init_run` with a store error. On PostgreSQL every spec's store comes from one
/// [`DatabaseHandle`]: a hundred specs share one pool of at most four connections, and
/// the schema is checked once. [`DatabaseHandle::stores`] shares it with a memory too.
///
/// ```no_run
/// use dispatch_runtime::DispatchRuntimeManager;
/// use dispatch_runtime::durable::{self, Database};
/// use dispatch_runtime::reexports::StoreConfig;
///
/// let database: Database = std::env::var("FACTMEM_DATABASE_URL")?.parse()?;
/// let runtime = DispatchRuntimeManager::builder()
///     .stores(durable::stores(&database, durable::retained(None, None)))
///     .build();
/// # let _ = runtime;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn stores(database: &Database, config: StoreConfig) -> StoreFactory {
    match database.handle() {
        Ok(handle) => handle.stores(config),
        // A malformed URL: every spec's `init_run` reports it.
        Err(error) => Box::new(move |_, _| Err(error.clone())),
    }
}

/// The memory of `scope` in `database`: facts and episodes in one store, without capacity
/// limits (long-term memory is not compacted behind the user's back). A SQLite file is
/// created if needed (not its directory); a PostgreSQL server gets the store's tables on
/// first use.
///
/// ```no_run
/// use std::sync::Arc;
/// use dispatch_runtime::NewMemory;
/// use dispatch_runtime::durable::{self, Database};
/// use dispatch_runtime::reexports::{SystemClock, Tag};
///
/// // `postgres://factmem@127.0.0.1:5432/memory`, or a SQLite path.
/// let database: Database = std::env::var("FACTMEM_DATABASE_URL")?.parse()?;
/// let memory = durable::open_memory_on(&database, "user:alice", Arc::new(SystemClock))?;
/// memory.add(
///     NewMemory::new("user", "prefers_test_framework", "pytest")
///         .with_category(Tag::Preference)
///         .with_confidence(0.9)
///         .with_source("example"),
/// )?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// The store's error when the database cannot be opened: for SQLite not a database, a
/// newer schema, no permission; for PostgreSQL an unreachable server or a refused login
/// ([`StoreError::Io`](fact_store::StoreError::Io)), a malformed URL
/// ([`StoreError::Backend`](fact_store::StoreError::Backend)), a newer schema.
pub fn open_memory_on(
    database: &Database,
    scope: &str,
    clock: Arc<dyn Clock>,
) -> StoreResult<MemoryService> {
    open_memory_with(database, scope, memory_config(), clock)
}

/// [`open_memory_on`] with a store configuration of the caller's: [`retained`] with the
/// limits a user configured.
///
/// # Errors
///
/// As [`open_memory_on`].
pub fn open_memory_with(
    database: &Database,
    scope: &str,
    config: StoreConfig,
    clock: Arc<dyn Clock>,
) -> StoreResult<MemoryService> {
    database.handle()?.open_memory(scope, config, clock)
}

/// Which index answers the searches of a durable memory: what suits a process that answers
/// many queries differs from what suits one that answers one and exits.
///
/// Both answer the same facts with the same scores (the stores' conformance suite and
/// property tests run on both); only the cost differs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchPath {
    /// The scope's term index kept in this process (the stores' search cache): loaded
    /// whole at the first search (about 0.2 s at 100,000 facts on SQLite), then each
    /// search costs about a millisecond and follows other processes' writes row by row.
    /// For long-lived processes: `facts mcp`, a runtime. The default.
    #[default]
    InProcess,
    /// The database's own full-text index (FTS5 on SQLite, the GIN index on PostgreSQL):
    /// nothing is loaded, each search reads the candidates its terms select. For a
    /// process that answers one query and exits (`facts mem search`, `facts mem recall`).
    Database,
}

/// [`open_memory_with`], searching through `search`: [`SearchPath::Database`] for a
/// process that answers one query, so it loads nothing of the scope before answering.
///
/// ```no_run
/// use std::sync::Arc;
/// use dispatch_runtime::durable::{self, Database, SearchPath};
/// use dispatch_runtime::reexports::SystemClock;
///
/// let database: Database = "memory.db".parse()?;
/// let config = durable::retained(None, None);
/// let memory =
///     durable::open_memory_searching(&database, "default", config, SearchPath::Database, Arc::new(SystemClock))?;
/// let found = memory.search("which editor does the user prefer", 10, &Default::default())?;
/// # let _ = found;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`open_memory_on`].
pub fn open_memory_searching(
    database: &Database,
    scope: &str,
    config: StoreConfig,
    search: SearchPath,
    clock: Arc<dyn Clock>,
) -> StoreResult<MemoryService> {
    if search == SearchPath::InProcess {
        return open_memory_with(database, scope, config, clock);
    }
    // One query, then the process ends: a store of its own, without the search cache.
    match database {
        #[cfg(feature = "sqlite")]
        Database::Sqlite(path) => {
            let options = SqliteOptions::default().with_search_cache(false);
            let store = SqliteFactStore::open_with(path, scope, config, options, clock.clone())?;
            Ok(MemoryService::new(Arc::new(store), clock))
        }
        #[cfg(feature = "postgres")]
        Database::Postgres(url) => {
            let options = PgOptions::default().with_search_cache(false);
            let store = PgFactStore::open_with(url, scope, config, options, clock.clone())?;
            Ok(MemoryService::new(Arc::new(store), clock))
        }
    }
}

/// A [`StoreFactory`] that opens each spec's store in the SQLite database at `path`, under
/// scope [`spec_scope`], with `config`: [`stores`] on [`Database::Sqlite`].
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
#[must_use]
pub fn sqlite_stores(path: impl Into<PathBuf>, config: StoreConfig) -> StoreFactory {
    let path = path.into();
    Box::new(move |spec_name, clock| {
        let store = SqliteFactStore::open(&path, &spec_scope(spec_name), config, clock)?;
        Ok(Arc::new(store) as Arc<dyn SessionFactStore>)
    })
}

/// The memory of `scope` in the SQLite database at `path`: [`open_memory_on`] on
/// [`Database::Sqlite`].
///
/// # Errors
///
/// The store's error when the database cannot be opened (not a database, a newer schema,
/// no permission).
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub fn open_memory(path: &Path, scope: &str, clock: Arc<dyn Clock>) -> StoreResult<MemoryService> {
    let store = Arc::new(SqliteFactStore::open(
        path,
        scope,
        memory_config(),
        clock.clone(),
    )?);
    Ok(MemoryService::new(store, clock))
}

/// The local sentence-embedding model in `dir` (feature `onnx`:
/// [`OnnxEmbedder`](fact_retrieve::OnnxEmbedder) with its default options), ready for
/// [`MemoryService::with_embedder`], which makes the memory of a database semantic. `dir`
/// holds `model.onnx`, `tokenizer.json` and the ONNX Runtime library; the repository's
/// `.ci/models` assembles it. Nothing is downloaded.
///
/// ```no_run
/// use std::path::Path;
/// use std::sync::Arc;
/// use dispatch_runtime::durable::{self, Database};
/// use dispatch_runtime::reexports::SystemClock;
///
/// let database: Database = "memory.db".parse()?;
/// let embedder = durable::open_embedder(Path::new("models/minilm"))?;
/// let memory = durable::open_memory_on(&database, "default", Arc::new(SystemClock))?
///     .with_embedder(embedder)?; // embeds the facts stored without it
/// let recalled = memory.recall("which pet does she own?", 10, 2000, &Default::default())?;
/// println!("{}", recalled.text);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`EmbedError::Missing`](fact_retrieve::EmbedError::Missing) when the directory or one of
/// its files is not there (the message says how to get it),
/// [`EmbedError::Load`](fact_retrieve::EmbedError::Load) when a file cannot be loaded.
#[cfg(feature = "onnx")]
#[cfg_attr(docsrs, doc(cfg(feature = "onnx")))]
pub fn open_embedder(
    dir: &std::path::Path,
) -> Result<Arc<dyn fact_retrieve::Embedder>, fact_retrieve::EmbedError> {
    Ok(Arc::new(fact_retrieve::OnnxEmbedder::open(dir)?))
}

/// The local sentence-embedding model whose files `files` names, wherever they are (feature
/// `onnx`: [`OnnxEmbedder::open_files`](fact_retrieve::OnnxEmbedder::open_files) with the
/// default options), ready for [`MemoryService::with_embedder`]: [`open_embedder`] for a
/// model whose files are not gathered in one directory, as a package manager installs them.
/// The same files under the same [`ModelFiles::name`](fact_retrieve::ModelFiles::name) as a
/// directory's name give the same model identity, so the vectors stored by either are used
/// by both. Nothing is downloaded.
///
/// ```no_run
/// use dispatch_runtime::durable;
/// use dispatch_runtime::reexports::ModelFiles;
///
/// let files = ModelFiles::new(
///     "all-minilm-l6-v2-int8",
///     "/opt/minilm/model.onnx",
///     "/opt/minilm/tokenizer.json",
///     Some("/opt/onnxruntime/libonnxruntime.so.1.32.0".into()),
/// );
/// let embedder = durable::open_embedder_files(&files)?;
/// assert!(embedder.model().starts_with("onnx:all-minilm-l6-v2-int8:"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`EmbedError::Missing`](fact_retrieve::EmbedError::Missing) naming the file that is not
/// there, [`EmbedError::Load`](fact_retrieve::EmbedError::Load) when a file cannot be loaded
/// or the name is empty.
#[cfg(feature = "onnx")]
#[cfg_attr(docsrs, doc(cfg(feature = "onnx")))]
pub fn open_embedder_files(
    files: &fact_retrieve::ModelFiles,
) -> Result<Arc<dyn fact_retrieve::Embedder>, fact_retrieve::EmbedError> {
    Ok(Arc::new(fact_retrieve::OnnxEmbedder::open_files(
        files,
        fact_retrieve::OnnxOptions::default(),
    )?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[cfg(feature = "postgres")]
    #[test]
    fn passwords_never_show() {
        let db: Database = "postgres://me:pw@host/db?password=pw2&sslmode=require"
            .parse()
            .unwrap();
        for shown in [db.to_string(), format!("{db:?}")] {
            assert!(shown.contains("me@host/db?sslmode=require"), "{shown}");
            assert!(!shown.contains("pw"), "{shown}");
        }
    }

    #[test]
    fn urls_name_servers_and_everything_else_files() {
        #[cfg(feature = "postgres")]
        for url in ["postgres://h/db", "postgresql://h/db", "POSTGRES://h/db"] {
            let db: Database = url.parse().unwrap();
            assert_eq!(db, Database::Postgres(url.to_owned()));
            assert!(db.is_postgres());
        }
        #[cfg(feature = "sqlite")]
        for path in [
            "memory.db",
            "/tmp/postgres/x.db",
            "postgres:/x",
            "./postgres://x",
        ] {
            let db: Database = path.parse().unwrap();
            assert_eq!(db, Database::Sqlite(PathBuf::from(path)));
            assert_eq!(db.to_string(), path);
            assert!(!db.is_postgres());
        }
        #[cfg(feature = "postgres")]
        {
            let db: Database = "postgres://me:secret@h/db".parse().unwrap();
            assert_eq!(db.to_string(), "postgres://me@h/db");
            assert_eq!(format!("{db:?}"), r#"Postgres("postgres://me@h/db")"#);
        }
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn a_bounded_budget_opens_sqlite_stores_without_a_map_and_with_a_small_page_cache() {
        let defaults = SqliteOptions::default();
        let single = sqlite_options(&CacheBudget::unbounded());
        assert_eq!(single.mmap_size, defaults.mmap_size);
        assert_eq!(single.page_cache_kib, defaults.page_cache_kib);
        let budget = CacheBudget::new(64 << 20);
        let many = sqlite_options(&budget);
        assert_eq!(many.mmap_size, 0);
        assert_eq!(many.page_cache_kib, MANY_STORES_PAGE_CACHE_KIB);
        assert_eq!(many.cache_budget, budget);
        // And a handle given the budget opens its stores so.
        let db: Database = "memory.db".parse().unwrap();
        let handle = db.handle().unwrap().with_cache_budget(budget.clone());
        match &handle.backend {
            Backend::Sqlite(database) => assert_eq!(database.options(), &many),
            #[allow(unreachable_patterns)]
            _ => unreachable!("a SQLite path opens a SQLite handle"),
        }
    }
}

//! [`SqliteDatabase`](crate::SqliteDatabase): the connections to one SQLite file, shared by the stores of its
//! scopes.
//!
//! A store takes a connection for each of its operations and gives it back when the
//! operation ends; the database keeps up to
//! [`idle_connections`](SqliteOptions::idle_connections) of them open between operations
//! and opens another whenever every kept one is in use. So a process that serves a
//! thousand scopes of one file holds a handful of connections (each with its page cache
//! and its prepared statements), not one per scope.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::error::{DbError, DbResult, store_error};
use crate::options::SqliteOptions;
use crate::schema::{self, Found, SCHEMA_VERSION};
use fact_store::{StoreError, StoreResult};

/// The connections to one SQLite database file, shared by every store opened from it (and
/// from its clones): what `PgDatabase` is for a PostgreSQL server.
///
/// [`SqliteFactStore::open_with`](crate::SqliteFactStore::open_with) opens a database of its own for each store. A process
/// that serves many scopes of one file (a server of many tenants, or a runtime of many
/// specs) opens the file once as a `SqliteDatabase` and each scope's store from it with
/// [`open`](Self::open): the stores then share a few connections instead of holding one
/// each. A connection is taken for each operation of a store and given back when it ends;
/// up to [`SqliteOptions::idle_connections`] are kept open between operations, and more
/// are opened (then closed) while more operations run at once. Nothing is opened until
/// the first store is.
///
/// ```
/// use std::sync::Arc;
/// use fact_model::ManualClock;
/// use fact_store::{SessionFactStore, StoreConfig};
/// use fact_store_sqlite::{SqliteDatabase, SqliteOptions};
///
/// let dir = tempfile::tempdir()?;
/// let database = SqliteDatabase::new(dir.path().join("facts.db"), SqliteOptions::default());
/// let clock = Arc::new(ManualClock::default());
/// for tenant in 0..100 {
///     let store = database.open(&format!("user:{tenant}"), StoreConfig::default(), clock.clone())?;
///     assert_eq!(store.stored_count()?, 0);
/// }
/// // One connection served all hundred stores, one after the other.
/// assert_eq!(database.opened_connections(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SqliteDatabase {
    shared: Arc<Shared>,
}

/// What the clones of a [`SqliteDatabase`](crate::SqliteDatabase) share.
struct Shared {
    path: PathBuf,
    options: SqliteOptions,
    /// Whether more connections to the database can be opened: not to a private in-memory
    /// database, whose only connection is the one kept here.
    reopens: bool,
    /// The connections kept open between operations, the most recently used last.
    idle: Mutex<Vec<Connection>>,
    /// How many connections were opened.
    opened: AtomicU64,
    /// Held while a connection is opened and prepared: connections of one database are
    /// opened one at a time, so two never race to create (or switch to WAL, or migrate)
    /// a new file, which SQLite answers with `SQLITE_BUSY` at once, not after the busy
    /// timeout.
    opening: Mutex<()>,
}

impl fmt::Debug for SqliteDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteDatabase")
            .field("path", &self.shared.path)
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl SqliteDatabase {
    /// The database file at `path`, used with `options` by every store opened from it.
    /// Nothing is opened yet: the first store opened (or the first operation) opens the
    /// file, creates or migrates its schema, and reports what fails.
    #[must_use]
    pub fn new(path: impl AsRef<Path>, options: SqliteOptions) -> SqliteDatabase {
        SqliteDatabase {
            shared: Arc::new(Shared {
                path: path.as_ref().to_path_buf(),
                options,
                reopens: true,
                idle: Mutex::new(Vec::new()),
                opened: AtomicU64::new(0),
                opening: Mutex::new(()),
            }),
        }
    }

    /// A private in-memory database (nothing is written to disk): its one connection,
    /// which no other can join. For tests, and for runs that want the SQLite store's
    /// behaviour without a file.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fact_model::SystemClock;
    /// use fact_store::{SessionFactStore, StoreConfig};
    /// use fact_store_sqlite::SqliteDatabase;
    ///
    /// let store = SqliteDatabase::in_memory()?.open("test", StoreConfig::default(), Arc::new(SystemClock))?;
    /// assert_eq!(store.valid_count()?, 0);
    /// # Ok::<(), fact_store::StoreError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) if SQLite cannot allocate the database.
    pub fn in_memory() -> StoreResult<SqliteDatabase> {
        let path = PathBuf::from(":memory:");
        let options = SqliteOptions::default();
        let run = || -> DbResult<Connection> {
            let mut conn = Connection::open_in_memory()?;
            prepare(&mut conn, &path, &options)?;
            Ok(conn)
        };
        let conn = run().map_err(|e| e.into_store_with(&path, store_error))?;
        Ok(SqliteDatabase {
            shared: Arc::new(Shared {
                path,
                options,
                reopens: false,
                idle: Mutex::new(vec![conn]),
                opened: AtomicU64::new(1),
                opening: Mutex::new(()),
            }),
        })
    }

    /// The database file (`:memory:` for a private in-memory database).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The options every store opened from this database uses.
    #[must_use]
    pub fn options(&self) -> &SqliteOptions {
        &self.shared.options
    }

    /// How many connections are open and unused now (at most
    /// [`SqliteOptions::idle_connections`]).
    #[must_use]
    pub fn idle_connections(&self) -> usize {
        self.lock_idle().len()
    }

    /// How many connections this database (with its clones) has opened since it was
    /// created, including those closed since.
    #[must_use]
    pub fn opened_connections(&self) -> u64 {
        self.shared.opened.load(Ordering::Relaxed)
    }

    /// Whether a store of this database can open connections of its own (to load its
    /// search cache beside its other operations): not for a private in-memory database.
    pub(super) fn reopens(&self) -> bool {
        self.shared.reopens
    }

    /// Runs `f` on a connection (the most recently used idle one, or a new one,
    /// configured and its schema checked and migrated) and keeps the connection for the
    /// next operation. Should `f` panic, the connection is closed instead.
    pub(super) fn with_connection<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> DbResult<T>,
    ) -> DbResult<T> {
        let kept = self.lock_idle().pop();
        let mut conn = match kept {
            Some(conn) => conn,
            None if self.shared.reopens => self.connect()?,
            None => {
                return Err(DbError::Store(StoreError::Busy {
                    message: "the connection of the in-memory database is in use".into(),
                }));
            }
        };
        let result = f(&mut conn);
        // A connection still inside a transaction (the stores' transactions commit or
        // roll back before `f` returns) is closed, not kept.
        if conn.is_autocommit() {
            self.give_back(conn);
        }
        result
    }

    /// A new connection to the file, ready for the stores.
    fn connect(&self) -> DbResult<Connection> {
        let shared = &self.shared;
        // Nothing is left half-done under it: a poisoned lock is as good as a free one.
        let _opening = shared
            .opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let flags = if shared.options.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        };
        let mut conn =
            Connection::open_with_flags(&shared.path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        prepare(&mut conn, &shared.path, &shared.options)?;
        shared.opened.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }

    /// Keeps `conn` for the next operation, unless enough are kept already.
    fn give_back(&self, conn: Connection) {
        let mut idle = self.lock_idle();
        if idle.len() < self.shared.options.idle_connections.max(1) || !self.shared.reopens {
            idle.push(conn);
        }
    }

    // A connection is pushed or popped whole: a poisoned lock leaves a valid list.
    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// What every connection of a store sets before it reads.
fn configure(conn: &Connection, options: &SqliteOptions) -> DbResult<()> {
    conn.busy_timeout(options.busy_timeout)?;
    // Plans stay as prepared: without this, SQLite (built with STAT4) re-prepares a
    // cached statement whenever a bound value could change its plan, which was a
    // fifth of the time of an `add`.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // By default a page cache for large stores (SQLite's default is 2 MiB), and reads
    // through mmap; a process of many stores makes both small (see `SqliteOptions`).
    conn.pragma_update(None, "cache_size", -i64::from(options.page_cache_kib))?;
    conn.pragma_update(
        None,
        "mmap_size",
        i64::try_from(options.mmap_size).unwrap_or(i64::MAX),
    )?;
    Ok(())
}

/// Configures a new connection to the database at `path`, checks the schema and
/// migrates it: [`StoreError::NewerSchema`](fact_store::StoreError::NewerSchema) for a schema newer than this build's.
fn prepare(conn: &mut Connection, path: &Path, options: &SqliteOptions) -> DbResult<()> {
    configure(conn, options)?;
    // Read before anything is written: a newer or foreign file stays untouched.
    let newer = |found| {
        DbError::Store(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        })
    };
    let version = match schema::check(conn)? {
        Found::Newer(found) => return Err(newer(found)),
        Found::Version(version) => version,
    };
    if !options.read_only {
        let _mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        let sync = if options.sync_every_commit {
            "FULL"
        } else {
            "NORMAL"
        };
        conn.pragma_update(None, "synchronous", sync)?;
        // Checkpoint every 10,000 WAL pages (≈ 40 MiB) instead of 1,000: pages that
        // every batch touches (counters, term frequencies, index interiors) are copied
        // into the database once per checkpoint, so rarer checkpoints copy each hot page
        // fewer times. Checkpoints were a quarter of the time of an `add`.
        conn.pragma_update(None, "wal_autocheckpoint", 10_000)?;
        // Deleted content is overwritten with zeros, not left in free space: what
        // `forget`, `delete` and compaction remove is gone from the file once the WAL is
        // checkpointed (the store checkpoints after every transaction that deletes text).
        conn.pragma_update(None, "secure_delete", "ON")?;
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    if version < SCHEMA_VERSION {
        let migrated = schema::migrate(conn)?;
        if migrated > SCHEMA_VERSION {
            return Err(newer(migrated));
        }
    }
    Ok(())
}

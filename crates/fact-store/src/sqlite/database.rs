//! [`SqliteDatabase`]: the connections to one SQLite file, shared by the stores of its
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

use fact_model::Clock;
use rusqlite::{Connection, OpenFlags};

use super::{SqliteFactStore, SqliteOptions};
use crate::sql::error::{DbError, DbResult};
use crate::{StoreConfig, StoreError, StoreResult};

/// The connections to one SQLite database file, shared by every store opened from it (and
/// from its clones): what [`PgDatabase`](crate::PgDatabase) is for a PostgreSQL server.
///
/// [`SqliteFactStore::open_with`] opens a database of its own for each store. A process
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
/// use fact_store::{SessionFactStore, SqliteDatabase, SqliteOptions, StoreConfig};
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

/// What the clones of a [`SqliteDatabase`] share.
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

    /// A private in-memory database: its one connection, which no other can join.
    pub(super) fn in_memory() -> StoreResult<SqliteDatabase> {
        let path = PathBuf::from(":memory:");
        let options = SqliteOptions::default();
        let run = || -> DbResult<Connection> {
            let mut conn = Connection::open_in_memory()?;
            SqliteFactStore::prepare(&mut conn, &path, &options)?;
            Ok(conn)
        };
        let conn = run().map_err(|e| e.into_store(&path))?;
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

    /// The store of `scope` in this database (created when new), sharing its connections;
    /// `clock` dates explicit invalidations.
    ///
    /// # Errors
    ///
    /// As [`SqliteFactStore::open`]: [`StoreError::Corrupt`] when the file is not a fact
    /// store database, [`StoreError::NewerSchema`] when a newer build wrote it,
    /// [`StoreError::Io`] when it cannot be opened or created (or, read-only, lacks the
    /// scope), [`StoreError::Busy`] when another writer holds it past the busy timeout.
    pub fn open(
        &self,
        scope: &str,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<SqliteFactStore> {
        SqliteFactStore::init(self.clone(), scope, config, clock)
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
        SqliteFactStore::prepare(&mut conn, &shared.path, &shared.options)?;
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

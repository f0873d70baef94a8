//! How database failures become [`StoreError`]s.
//!
//! Inside the SQL stores every fallible step returns [`DbResult`], so `?` works on the
//! driver's calls and on the store's own errors alike; the stores' public methods turn a
//! [`DbError`] into a [`StoreError`] with [`DbError::into_store`], which knows where the
//! database is (a file, or a server's URL without its password).

use std::path::Path;

use crate::StoreError;

/// A failure inside a SQL store, before it is given the database's location.
#[derive(Debug)]
pub(crate) enum DbError {
    /// SQLite (or rusqlite) failed.
    #[cfg(feature = "sqlite")]
    Sqlite(rusqlite::Error),
    /// The PostgreSQL server or its client failed.
    #[cfg(feature = "postgres")]
    Postgres(postgres::Error),
    /// A stored row is not what this build writes: damaged or foreign data.
    Corrupt(String),
    /// A store-level error (not found, invalid update, …), passed through unchanged.
    Store(StoreError),
}

/// The result of a step inside a SQL store.
pub(crate) type DbResult<T> = Result<T, DbError>;

#[cfg(feature = "sqlite")]
impl From<rusqlite::Error> for DbError {
    fn from(error: rusqlite::Error) -> Self {
        DbError::Sqlite(error)
    }
}

#[cfg(feature = "postgres")]
impl From<postgres::Error> for DbError {
    fn from(error: postgres::Error) -> Self {
        DbError::Postgres(error)
    }
}

impl From<StoreError> for DbError {
    fn from(error: StoreError) -> Self {
        DbError::Store(error)
    }
}

impl DbError {
    /// The [`StoreError`] for this failure of the database at `location`.
    pub(crate) fn into_store(self, location: &Path) -> StoreError {
        match self {
            DbError::Store(error) => error,
            DbError::Corrupt(message) => StoreError::Corrupt {
                path: location.to_path_buf(),
                message,
            },
            #[cfg(feature = "sqlite")]
            DbError::Sqlite(error) => crate::sqlite::store_error(&error, location),
            #[cfg(feature = "postgres")]
            DbError::Postgres(error) => crate::postgres::store_error(&error, location),
        }
    }
}

//! How database failures become [`StoreError`]s.
//!
//! Inside the SQL stores every fallible step returns [`DbResult`], so `?` works on the
//! driver's calls and on the store's own errors alike. [`DbError`] is generic over the
//! driver's error type and never names a driver: each backend says how its driver's
//! errors read as [`StoreError`]s by implementing
//! [`Driver`](crate::Driver), and the stores' public methods turn a [`DbError`] into a
//! [`StoreError`] with [`DbError::into_store`], which knows where the database is (a
//! file, or a server's URL without its password).

use std::path::Path;

use fact_store::StoreError;

/// A failure inside a SQL store whose driver fails with `E`, before it is given the
/// database's location.
#[derive(Debug)]
pub enum DbError<E> {
    /// The database or its driver failed.
    Driver(E),
    /// A stored row is not what this build writes: damaged or foreign data.
    Corrupt(String),
    /// A store-level error (not found, invalid update, …), passed through unchanged.
    Store(StoreError),
}

/// The result of a step inside a SQL store whose driver fails with `E`.
pub type DbResult<T, E> = Result<T, DbError<E>>;

impl<E> From<E> for DbError<E> {
    fn from(error: E) -> Self {
        DbError::Driver(error)
    }
}

/// The error for a value of a newer `fact-store` (its enums are non-exhaustive) that these
/// rules do not know yet: refused, never half applied.
pub(crate) fn newer<E>(what: &str) -> DbError<E> {
    DbError::Store(StoreError::Backend {
        message: format!("the SQL stores cannot apply this {what} of a newer fact-store"),
    })
}

impl<E> DbError<E> {
    /// The [`StoreError`] for this failure of the database at `location`, the driver's
    /// own errors mapped by `driver_error` (a backend's `store_error`). Code below a
    /// backend's [`Driver`](crate::Driver) uses it; [`into_store`](Self::into_store) names
    /// the driver instead.
    pub fn into_store_with(
        self,
        location: &Path,
        driver_error: impl FnOnce(&E, &Path) -> StoreError,
    ) -> StoreError {
        match self {
            DbError::Store(error) => error,
            DbError::Corrupt(message) => StoreError::Corrupt {
                path: location.to_path_buf(),
                message,
            },
            DbError::Driver(error) => driver_error(&error, location),
        }
    }
}

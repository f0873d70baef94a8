//! How SQLite failures become [`StoreError`]s.
//!
//! Inside the module every fallible step returns [`DbResult`], so `?` works on rusqlite
//! calls and on the store's own errors alike; the store's public methods turn a [`DbError`]
//! into a [`StoreError`] with [`DbError::into_store`], which knows the database path.

use std::path::Path;

use rusqlite::ErrorCode;

use crate::StoreError;

/// A failure inside the SQLite backend, before it is given the database path.
#[derive(Debug)]
pub(super) enum DbError {
    /// SQLite (or rusqlite) failed.
    Sql(rusqlite::Error),
    /// A stored row is not what this build writes: damaged or foreign data.
    Corrupt(String),
    /// A store-level error (not found, invalid update, …), passed through unchanged.
    Store(StoreError),
}

/// The result of a step inside the SQLite backend.
pub(super) type DbResult<T> = Result<T, DbError>;

impl From<rusqlite::Error> for DbError {
    fn from(error: rusqlite::Error) -> Self {
        DbError::Sql(error)
    }
}

impl From<StoreError> for DbError {
    fn from(error: StoreError) -> Self {
        DbError::Store(error)
    }
}

impl DbError {
    /// The [`StoreError`] for this failure of the database at `path`.
    ///
    /// SQLITE_BUSY and SQLITE_LOCKED are [`StoreError::Busy`]; SQLITE_CORRUPT and
    /// SQLITE_NOTADB [`StoreError::Corrupt`]; SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY,
    /// SQLITE_CANTOPEN and SQLITE_PERM [`StoreError::Io`]; anything else
    /// [`StoreError::Backend`].
    pub(super) fn into_store(self, path: &Path) -> StoreError {
        match self {
            DbError::Store(error) => error,
            DbError::Corrupt(message) => StoreError::Corrupt {
                path: path.to_path_buf(),
                message,
            },
            DbError::Sql(error) => {
                let message = error.to_string();
                match error.sqlite_error_code() {
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                        StoreError::Busy { message }
                    }
                    Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                        StoreError::Corrupt {
                            path: path.to_path_buf(),
                            message,
                        }
                    }
                    Some(
                        ErrorCode::DiskFull
                        | ErrorCode::SystemIoFailure
                        | ErrorCode::ReadOnly
                        | ErrorCode::CannotOpen
                        | ErrorCode::PermissionDenied,
                    ) => StoreError::Io {
                        message: format!("{}: {message}", path.display()),
                    },
                    _ => StoreError::Backend { message },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rusqlite::ffi;

    use super::*;

    fn failure(code: std::ffi::c_int) -> DbError {
        DbError::Sql(rusqlite::Error::SqliteFailure(
            ffi::Error::new(code),
            Some("boom".into()),
        ))
    }

    #[test]
    fn sqlite_codes_map_to_typed_errors() {
        let path = PathBuf::from("/tmp/facts.db");
        let code = |error: DbError| error.into_store(&path).code();
        assert_eq!(code(failure(ffi::SQLITE_BUSY)), "busy");
        assert_eq!(code(failure(ffi::SQLITE_LOCKED)), "busy");
        assert_eq!(code(failure(ffi::SQLITE_CORRUPT)), "corrupt");
        assert_eq!(code(failure(ffi::SQLITE_NOTADB)), "corrupt");
        assert_eq!(code(failure(ffi::SQLITE_FULL)), "io");
        assert_eq!(code(failure(ffi::SQLITE_IOERR)), "io");
        assert_eq!(code(failure(ffi::SQLITE_READONLY)), "io");
        assert_eq!(code(failure(ffi::SQLITE_CANTOPEN)), "io");
        assert_eq!(code(failure(ffi::SQLITE_CONSTRAINT)), "backend");
        assert_eq!(code(DbError::Corrupt("bad row".into())), "corrupt");
        let corrupt = failure(ffi::SQLITE_NOTADB).into_store(&path);
        assert!(
            corrupt.to_string().starts_with("/tmp/facts.db: "),
            "{corrupt}"
        );
    }
}

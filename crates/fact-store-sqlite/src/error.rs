//! How SQLite failures become [`StoreError`](fact_store::StoreError)s, and the error types of this backend's steps
//! (see [`fact_store_sql::error`] for the rest).

use std::path::Path;

use rusqlite::ErrorCode;

use fact_store::StoreError;

/// A failure inside the SQLite store.
pub(crate) type DbError = fact_store_sql::error::DbError<rusqlite::Error>;
/// The result of a step inside the SQLite store.
pub(crate) type DbResult<T> = fact_store_sql::error::DbResult<T, rusqlite::Error>;

/// The [`StoreError`](fact_store::StoreError) for a failure of the SQLite database at `path`.
///
/// SQLITE_BUSY and SQLITE_LOCKED are [`StoreError::Busy`](fact_store::StoreError::Busy); SQLITE_CORRUPT and
/// SQLITE_NOTADB [`StoreError::Corrupt`](fact_store::StoreError::Corrupt); SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY,
/// SQLITE_CANTOPEN and SQLITE_PERM [`StoreError::Io`](fact_store::StoreError::Io); anything else
/// [`StoreError::Backend`](fact_store::StoreError::Backend).
pub(crate) fn store_error(error: &rusqlite::Error, path: &Path) -> StoreError {
    let message = error.to_string();
    match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy { message },
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            path: path.to_path_buf(),
            message,
        },
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rusqlite::ffi;

    use super::{DbError, store_error};

    fn failure(code: std::ffi::c_int) -> DbError {
        DbError::Driver(rusqlite::Error::SqliteFailure(
            ffi::Error::new(code),
            Some("boom".into()),
        ))
    }

    #[test]
    fn sqlite_codes_map_to_typed_errors() {
        let path = PathBuf::from("/tmp/facts.db");
        let code = |error: DbError| error.into_store_with(&path, store_error).code();
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
        let corrupt = failure(ffi::SQLITE_NOTADB).into_store_with(&path, store_error);
        assert!(
            corrupt.to_string().starts_with("/tmp/facts.db: "),
            "{corrupt}"
        );
    }
}

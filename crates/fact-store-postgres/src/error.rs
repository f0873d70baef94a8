//! How PostgreSQL failures become [`StoreError`](fact_store::StoreError)s, which of them are conflicts a write
//! tries again, and the error types of this backend's steps (see
//! [`fact_store_sql::error`] for the rest).

use std::path::Path;

use postgres::error::SqlState;

use fact_store::StoreError;

/// A failure inside the PostgreSQL store.
pub(crate) type DbError = fact_store_sql::error::DbError<postgres::Error>;
/// The result of a step inside the PostgreSQL store.
pub(crate) type DbResult<T> = fact_store_sql::error::DbResult<T, postgres::Error>;

/// Whether a failed transaction should be tried again.
pub(crate) fn is_conflict(error: &postgres::Error) -> bool {
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

/// The [`StoreError`](fact_store::StoreError) for a failure of the server at `location` (the URL without its
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
pub(crate) fn describe(error: &postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

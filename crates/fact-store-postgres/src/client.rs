//! Small helpers every part of the PostgreSQL store uses: prepared queries outside a
//! transaction, the locks of in-memory structures, URLs without passwords, and the pause
//! before a retry.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use postgres::types::ToSql;

use crate::error::DbResult;
use crate::pool::Connection;

/// `url` without a password: neither the one after the user name nor a `password`
/// parameter (of the query string, or of a `key=value` connection string).
pub(crate) fn redacted(url: &str) -> String {
    let is_password = |key: &str| key.eq_ignore_ascii_case("password");
    let Some((scheme, rest)) = url.split_once("://") else {
        return url
            .split_whitespace()
            .filter(|pair| !pair.split('=').next().is_some_and(is_password))
            .collect::<Vec<_>>()
            .join(" ");
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    let query = query
        .map(|query| {
            query
                .split('&')
                .filter(|pair| !pair.split('=').next().is_some_and(is_password))
                .collect::<Vec<_>>()
                .join("&")
        })
        .filter(|query| !query.is_empty())
        .map(|query| format!("?{query}"))
        .unwrap_or_default();
    format!("{scheme}://{authority}{path}{query}")
}

/// A short pause before the `attempt`-th retry: 10 ms doubling, capped at 320 ms, plus up
/// to half as much again at random (the standard library's randomly keyed hasher), so
/// writers that collided do not collide again.
pub(crate) fn backoff(attempt: u32) -> Duration {
    use std::hash::BuildHasher;
    let base = 10u64 << attempt.min(5);
    let jitter = std::collections::hash_map::RandomState::new().hash_one(attempt) % base;
    Duration::from_millis(base + jitter / 2)
}

/// Locks one of a store's in-memory structures. Nothing runs under these locks but work
/// in memory (never a round trip to the server, never a sleep), and nothing under them
/// can leave a structure half-updated, so a poisoned lock is taken over.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs a prepared (and cached) query outside a transaction.
pub(crate) fn query(
    conn: &mut Connection,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> DbResult<Vec<postgres::Row>> {
    let Connection {
        client, statements, ..
    } = conn;
    let statement = match statements.get(sql) {
        Some(statement) => statement.clone(),
        None => {
            let statement = client.prepare(sql)?;
            statements.insert(sql.to_owned(), statement.clone());
            statement
        }
    };
    Ok(client.query(&statement, params)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        let cases = [
            (
                "postgres://alice:s3cret@db.example:5432/memory",
                "postgres://alice@db.example:5432/memory",
            ),
            (
                "postgresql://bob@localhost/x?sslmode=disable",
                "postgresql://bob@localhost/x?sslmode=disable",
            ),
            ("postgres://host/db", "postgres://host/db"),
            (
                "postgres://me:p%40w@host/db?sslmode=require&password=pw",
                "postgres://me@host/db?sslmode=require",
            ),
            ("postgres://host/db?password=pw", "postgres://host/db"),
            (
                "host=db user=carol password=hunter2 dbname=m",
                "host=db user=carol dbname=m",
            ),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn backoff_grows_and_is_bounded() {
        assert!(backoff(1) >= Duration::from_millis(20));
        assert!(backoff(30) <= Duration::from_millis(480));
    }
}

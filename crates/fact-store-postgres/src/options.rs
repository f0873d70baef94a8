//! [`PgOptions`]: how a PostgreSQL store and its database use their server.

use std::time::Duration;

use fact_store_sql::CacheBudget;

/// How a [`PgDatabase`](crate::PgDatabase) and the [`PgFactStore`](crate::PgFactStore)s opened from it use their server.
///
/// ```
/// use std::time::Duration;
/// use fact_store_postgres::PgOptions;
///
/// let options = PgOptions::default()
///     .with_pool_size(2)
///     .with_lock_timeout(Duration::from_secs(10));
/// assert_eq!((options.pool_size, options.lock_timeout), (2, Duration::from_secs(10)));
/// assert_eq!(options.schema, "factmem");
/// assert!(options.search_cache);
/// assert_eq!(options.replica_wait, Duration::from_millis(50));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PgOptions {
    /// The PostgreSQL schema (namespace) that holds the store's tables (default
    /// `factmem`): lowercase ASCII letters, digits and `_`, not starting with a digit.
    pub schema: String,
    /// At most this many connections at once, shared by every store opened from one
    /// [`PgDatabase`](crate::PgDatabase) (default 4).
    pub pool_size: u32,
    /// How long opening a connection, or waiting for a free one, may take before the
    /// operation fails with [`StoreError::Io`](fact_store::StoreError::Io) (default 5 s).
    pub connect_timeout: Duration,
    /// How long a write waits for another writer of the same scope before it fails with
    /// [`StoreError::Busy`](fact_store::StoreError::Busy) (default 30 s; PostgreSQL's `lock_timeout`).
    pub lock_timeout: Duration,
    /// How often a write transaction is tried when the server reports a conflict (a
    /// serialization failure, a deadlock, a violated uniqueness or exclusion constraint)
    /// before the error is returned (default 5; backoff 10 ms, doubling, with jitter).
    pub attempts: u32,
    /// Keep the scope's term index in memory for [`search`](fact_store::SessionFactStore::search)
    /// (default true), checked against the scope's generation on every search.
    pub search_cache: bool,
    /// With read replicas ([`PgDatabase::connect_with_replicas`](crate::PgDatabase::connect_with_replicas)): how long a read waits
    /// for a replica to replay its store's last write before the primary answers it
    /// (default 50 ms; zero: never wait).
    pub replica_wait: Duration,
    /// With read replicas: how long a replica that failed (unreachable, an error) is left
    /// alone before a read tries it again; the primary answers meanwhile (default 5 s).
    pub replica_retry: Duration,
    /// The byte budget the in-process caches (search caches, vector indexes) of every
    /// store opened from the [`PgDatabase`](crate::PgDatabase) share, with those of every store given a
    /// clone of it; see [`CacheBudget`](crate::CacheBudget). Default: [`CacheBudget::unbounded`](crate::CacheBudget::unbounded).
    pub cache_budget: CacheBudget,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            schema: "factmem".to_owned(),
            pool_size: 4,
            connect_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(30),
            attempts: 5,
            search_cache: true,
            replica_wait: Duration::from_millis(50),
            replica_retry: Duration::from_secs(5),
            cache_budget: CacheBudget::unbounded(),
        }
    }
}

impl PgOptions {
    /// Keeps the store's tables in the PostgreSQL schema `schema` (checked when opened).
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Opens at most `pool_size` connections at once.
    #[must_use]
    pub fn with_pool_size(mut self, pool_size: u32) -> Self {
        self.pool_size = pool_size;
        self
    }

    /// Lets opening or waiting for a connection take up to `connect_timeout`.
    #[must_use]
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Lets a write wait up to `lock_timeout` for another writer of the same scope.
    #[must_use]
    pub fn with_lock_timeout(mut self, lock_timeout: Duration) -> Self {
        self.lock_timeout = lock_timeout;
        self
    }

    /// Tries a conflicting write transaction at most `attempts` times.
    #[must_use]
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// Keeps the scope's term index in memory for search (`true`) or asks the server.
    #[must_use]
    pub fn with_search_cache(mut self, search_cache: bool) -> Self {
        self.search_cache = search_cache;
        self
    }

    /// Lets a read wait up to `replica_wait` for a replica to replay its store's last
    /// write.
    #[must_use]
    pub fn with_replica_wait(mut self, replica_wait: Duration) -> Self {
        self.replica_wait = replica_wait;
        self
    }

    /// Leaves a failed replica alone for `replica_retry` before trying it again.
    #[must_use]
    pub fn with_replica_retry(mut self, replica_retry: Duration) -> Self {
        self.replica_retry = replica_retry;
        self
    }

    /// Charges the in-process caches of the stores opened with these options to `budget`,
    /// which evicts the least recently used of them past its limit.
    #[must_use]
    pub fn with_cache_budget(mut self, budget: CacheBudget) -> Self {
        self.cache_budget = budget;
        self
    }
}

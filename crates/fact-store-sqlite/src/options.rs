//! [`SqliteOptions`]: how a SQLite store uses its database file.

use std::time::Duration;

use fact_store_sql::CacheBudget;

/// How a [`SqliteFactStore`](crate::SqliteFactStore) uses its database file.
///
/// ```
/// use std::time::Duration;
/// use fact_store_sqlite::SqliteOptions;
///
/// let options = SqliteOptions::default().with_busy_timeout(Duration::from_secs(30));
/// assert_eq!(options.busy_timeout, Duration::from_secs(30));
/// assert!(options.search_cache && !options.read_only);
/// assert_eq!(options.cache_budget.limit(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// How long a write waits for another connection's write transaction before it fails
    /// with [`StoreError::Busy`](fact_store::StoreError::Busy) (default 5 s).
    pub busy_timeout: Duration,
    /// Open the file read-only: reads work, every write fails with [`StoreError::Io`](fact_store::StoreError::Io)
    /// (default false). A file whose schema is older than this build's, or that lacks
    /// the store's scope, cannot be opened read-only.
    pub read_only: bool,
    /// Sync the write-ahead log on every commit (`PRAGMA synchronous = FULL`). Off by
    /// default (`NORMAL`): a commit survives a crash of the process, and a power loss may
    /// lose the last commits but never corrupts the file.
    pub sync_every_commit: bool,
    /// Keep the scope's term index in memory for [`search`](fact_store::SessionFactStore::search)
    /// (default true); see [`SqliteFactStore`](crate::SqliteFactStore)'s section on search.
    pub search_cache: bool,
    /// The byte budget the store's in-process caches (the search cache, the vector
    /// indexes) share with those of every store given a clone of it; see
    /// [`CacheBudget`](crate::CacheBudget). Default: [`CacheBudget::unbounded`](crate::CacheBudget::unbounded), a budget of the store's own
    /// that never evicts.
    pub cache_budget: CacheBudget,
    /// How many bytes of the file each of the store's connections reads through a memory
    /// map (`PRAGMA mmap_size`; default 256 MiB, 0 reads every page into the page cache).
    /// The pages a connection touches through its map count in the process's resident
    /// memory once per connection, so a process holding many connections to one file
    /// (many stores, or a [`SqliteDatabase`](crate::SqliteDatabase) serving many operations at once) sets it
    /// to 0.
    pub mmap_size: u64,
    /// The page cache of each of the store's connections, in KiB (`PRAGMA cache_size`;
    /// default 32 MiB). It fills only with pages read other than through the memory map.
    pub page_cache_kib: u32,
    /// How many connections a [`SqliteDatabase`](crate::SqliteDatabase) keeps open between operations for the
    /// stores opened from it (default 4; at least one is kept). More are opened while
    /// more operations run at once, and closed when they end.
    pub idle_connections: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(5),
            read_only: false,
            sync_every_commit: false,
            search_cache: true,
            cache_budget: CacheBudget::unbounded(),
            mmap_size: 256 * 1024 * 1024,
            page_cache_kib: 32 * 1024,
            idle_connections: 4,
        }
    }
}

impl SqliteOptions {
    /// Lets a write wait up to `busy_timeout` for another connection's write.
    #[must_use]
    pub fn with_busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Opens the file read-only (`true`) or read-write.
    #[must_use]
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Syncs the write-ahead log on every commit (`true`) or lets SQLite batch syncs.
    #[must_use]
    pub fn with_sync_every_commit(mut self, sync_every_commit: bool) -> Self {
        self.sync_every_commit = sync_every_commit;
        self
    }

    /// Keeps the scope's term index in memory for search (`true`) or searches the file.
    #[must_use]
    pub fn with_search_cache(mut self, search_cache: bool) -> Self {
        self.search_cache = search_cache;
        self
    }

    /// Charges the store's in-process caches to `budget` (a clone of the budget every
    /// store of the process shares), which evicts the least recently used caches of all
    /// of them past its limit.
    #[must_use]
    pub fn with_cache_budget(mut self, budget: CacheBudget) -> Self {
        self.cache_budget = budget;
        self
    }

    /// Maps up to `mmap_size` bytes of the file into each connection (0: no map).
    #[must_use]
    pub fn with_mmap_size(mut self, mmap_size: u64) -> Self {
        self.mmap_size = mmap_size;
        self
    }

    /// Gives each connection a page cache of `page_cache_kib` KiB.
    #[must_use]
    pub fn with_page_cache_kib(mut self, page_cache_kib: u32) -> Self {
        self.page_cache_kib = page_cache_kib;
        self
    }

    /// Keeps up to `idle_connections` connections open between operations.
    #[must_use]
    pub fn with_idle_connections(mut self, idle_connections: usize) -> Self {
        self.idle_connections = idle_connections;
        self
    }
}

//! [`CacheBudget`]: one byte budget for the in-process caches of many store objects (a
//! scope's term index, its vector indexes), and the slot each cache lives in
//! ([`Cached`]), which the budget can empty when it needs room.
//!
//! # How the pieces fit
//!
//! A store keeps each cache in a [`Cached`] registered with its budget. An operation
//! first *pins* the cache (`Cached::pin`: the cache is in use, and its LRU stamp is
//! touched), then locks it for the work in memory ([`Pinned::lock`]); when the lock is
//! released the cache's size is measured ([`Measure::heap_bytes`]) and charged. A charge
//! that takes the total over the limit evicts the least recently used caches that are not
//! pinned ([`Measure::evict`]: the cache goes back to its "not loaded" state) until the
//! total fits, or no other cache is left. So, between operations, the total exceeds the
//! limit only when one cache alone is larger than the whole budget (it is then the only
//! one kept).
//!
//! Locks: the budget's ledger is locked only for bookkeeping, never across database I/O,
//! and never waits for a cache: it only *tries* a cache's lock (a cache whose lock is held
//! is in use, and skipped). A cache's lock is taken before the ledger's, never after. An
//! evicted cache is dropped after the ledger's lock is released.
//!
//! Eviction never loses data: caches hold copies of what the database holds, and a pinned
//! cache (an operation in progress, a load running outside its lock) is never evicted, so
//! an operation finds its cache as it left it between two locks.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{
    Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError,
    Weak,
};

/// A byte budget shared by the in-process caches of many store objects.
///
/// The SQL stores keep a scope's term index (for [`search`](fact_store::SessionFactStore::search))
/// and its vector indexes (for [`nearest`](fact_store::FactVectors::nearest)) in memory. Each
/// such cache registers its estimated size with the store's budget and is stamped on every
/// use; when the caches of a budget together grow past its limit, the least recently used
/// ones (of any store object sharing the budget, but never one in use) are dropped. A
/// store whose cache was dropped answers its next searches from the database's own index
/// (FTS5, GIN) while the cache loads again on a thread of its own (at most two reloads at
/// once per budget); it loses nothing, since the database holds everything a cache holds.
/// At 100,000 facts a scope's search cache holds about 32 MiB, and the first search after
/// its eviction took 37 ms on SQLite where reloading takes about 180 ms
/// (`benches/cache_budget.rs`).
///
/// A budget is cheap to clone: clones share the limit and the accounting. Give one to
/// every store of a process through
/// `SqliteOptions::with_cache_budget` or
/// `PgOptions::with_cache_budget` (every store
/// opened from a `PgDatabase` shares its options' budget). The
/// default is [`unbounded`](Self::unbounded), a budget of its own for each store that
/// never evicts anything, which is how the stores behaved before budgets existed.
///
/// The budget counts the caches only, not the database connections: a SQLite store has a
/// connection of its own, about 165 KiB of SQLite's memory plus the pages it reads
/// (through its memory map, counted once per connection, unless
/// `mmap_size` is 0, as a process of many stores sets
/// it).
///
/// Sizes are estimates of the heap a cache holds: every allocation counted by its
/// capacity, as the chunk `malloc` gives it. Between operations the total stays within the
/// limit, except while one cache alone is larger than the whole budget (it is then the
/// only one kept); during operations, a cache that is loading or in use is not evicted,
/// so the process may briefly hold more.
///
/// ```
/// use fact_store_sql::CacheBudget;
///
/// let budget = CacheBudget::new(64 * 1024 * 1024);
/// let shared = budget.clone();
/// assert_eq!(shared.limit(), Some(64 * 1024 * 1024));
/// assert_eq!((shared.used(), shared.loaded(), shared.evictions()), (0, 0, 0));
/// assert_eq!(budget, shared);
/// assert_ne!(budget, CacheBudget::new(64 * 1024 * 1024));
/// assert_eq!(CacheBudget::unbounded().limit(), None);
/// ```
#[derive(Clone)]
pub struct CacheBudget {
    ledger: Arc<Ledger>,
}

/// What the clones of a budget share.
struct Ledger {
    /// `usize::MAX` for an unbounded budget.
    limit: usize,
    /// The LRU clock: every use of a cache takes the next stamp.
    clock: AtomicU64,
    /// The registered total, readable without the lock.
    used: AtomicUsize,
    evictions: AtomicU64,
    /// Reloads of evicted caches running in the background now.
    reloads: AtomicUsize,
    state: Mutex<State>,
}

/// At most this many evicted caches of one budget reload in the background at once: each
/// holds a whole cache before it is charged, so they are what a budget can exceed by.
const MAX_RELOADS: usize = 2;

/// The right to reload an evicted cache in the background ([`CacheBudget::reload_permit`]),
/// given back when dropped.
pub struct ReloadPermit {
    ledger: Arc<Ledger>,
}

impl Drop for ReloadPermit {
    fn drop(&mut self) {
        self.ledger.reloads.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The registered caches.
#[derive(Default)]
struct State {
    next_id: u64,
    total: usize,
    entries: HashMap<u64, Entry>,
}

/// A registered cache: its size as last charged, and its slot.
struct Entry {
    bytes: usize,
    slot: Weak<dyn Evict>,
}

impl Default for CacheBudget {
    /// [`CacheBudget::unbounded`].
    fn default() -> Self {
        CacheBudget::unbounded()
    }
}

impl fmt::Debug for CacheBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheBudget")
            .field("limit", &self.limit())
            .field("used", &self.used())
            .finish_non_exhaustive()
    }
}

impl PartialEq for CacheBudget {
    /// Two budgets are equal when they are clones of one (they share the accounting).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.ledger, &other.ledger)
    }
}

impl Eq for CacheBudget {}

impl CacheBudget {
    /// A budget of `bytes` for every cache registered with it (and its clones).
    #[must_use]
    pub fn new(bytes: usize) -> Self {
        CacheBudget {
            ledger: Arc::new(Ledger {
                limit: bytes,
                clock: AtomicU64::new(0),
                used: AtomicUsize::new(0),
                evictions: AtomicU64::new(0),
                reloads: AtomicUsize::new(0),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// A budget without a limit: caches are counted, never evicted.
    #[must_use]
    pub fn unbounded() -> Self {
        CacheBudget::new(usize::MAX)
    }

    /// The limit in bytes; `None` for an [`unbounded`](Self::unbounded) budget.
    #[must_use]
    pub fn limit(&self) -> Option<usize> {
        (self.ledger.limit != usize::MAX).then_some(self.ledger.limit)
    }

    /// The estimated bytes the caches registered with this budget hold now.
    #[must_use]
    pub fn used(&self) -> usize {
        self.ledger.used.load(Ordering::Acquire)
    }

    /// How many registered caches hold anything now (are loaded).
    #[must_use]
    pub fn loaded(&self) -> usize {
        self.state()
            .entries
            .values()
            .filter(|entry| entry.bytes > 0)
            .count()
    }

    /// How many evicted caches are loading again in the background now (a store whose
    /// cache was evicted answers its next search from the database's index while its
    /// cache reloads).
    #[must_use]
    pub fn reloading(&self) -> usize {
        self.ledger.reloads.load(Ordering::Acquire)
    }

    /// How many caches this budget has evicted so far.
    #[must_use]
    pub fn evictions(&self) -> u64 {
        self.ledger.evictions.load(Ordering::Relaxed)
    }

    /// A permit to reload an evicted cache in the background, unless `MAX_RELOADS` (2) are
    /// running.
    pub fn reload_permit(&self) -> Option<ReloadPermit> {
        self.ledger
            .reloads
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < MAX_RELOADS).then_some(running + 1)
            })
            .ok()
            .map(|_| ReloadPermit {
                ledger: self.ledger.clone(),
            })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Bookkeeping only, never left half-done: a poisoned lock is taken over.
        self.ledger
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn stamp(&self) -> u64 {
        self.ledger.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a new cache of `bytes`.
    fn register(&self, bytes: usize, slot: Weak<dyn Evict>) -> u64 {
        let mut state = self.state();
        let id = state.next_id;
        state.next_id += 1;
        state.entries.insert(id, Entry { bytes, slot });
        state.total = state.total.saturating_add(bytes);
        self.ledger.used.store(state.total, Ordering::Release);
        id
    }

    /// Forgets the cache `id` (its store is gone).
    fn unregister(&self, id: u64) {
        let mut state = self.state();
        if let Some(entry) = state.entries.remove(&id) {
            state.total = state.total.saturating_sub(entry.bytes);
            self.ledger.used.store(state.total, Ordering::Release);
        }
    }

    /// Records that cache `id` (locked by the caller) now holds `bytes`, and evicts other
    /// caches if the total no longer fits.
    fn charge(&self, id: u64, bytes: usize) {
        let evicted = {
            let mut state = self.state();
            if let Some(entry) = state.entries.get_mut(&id) {
                let before = entry.bytes;
                entry.bytes = bytes;
                state.total = state.total.saturating_sub(before).saturating_add(bytes);
            }
            self.fit(&mut state, id)
        };
        drop(evicted);
    }

    /// Evicts other caches than `id` if the total does not fit.
    fn settle(&self, id: u64) {
        if self.used() <= self.ledger.limit {
            return;
        }
        let evicted = {
            let mut state = self.state();
            self.fit(&mut state, id)
        };
        drop(evicted);
    }

    /// Evicts the least recently used caches but `keep`, skipping those in use, until the
    /// total fits; returns what they held, for the caller to drop after the lock.
    fn fit(&self, state: &mut State, keep: u64) -> Vec<Box<dyn Any + Send>> {
        let mut evicted = Vec::new();
        if state.total > self.ledger.limit {
            let mut candidates: Vec<(u64, u64, Arc<dyn Evict>)> = state
                .entries
                .iter()
                .filter(|(id, entry)| **id != keep && entry.bytes > 0)
                .filter_map(|(id, entry)| {
                    let slot = entry.slot.upgrade()?;
                    Some((slot.stamp(), *id, slot))
                })
                .collect();
            candidates.sort_by_key(|(stamp, id, _)| (*stamp, *id));
            for (_, id, slot) in candidates {
                if state.total <= self.ledger.limit {
                    break;
                }
                let Some(held) = slot.try_evict() else {
                    continue;
                };
                evicted.push(held);
                if let Some(entry) = state.entries.get_mut(&id) {
                    state.total = state.total.saturating_sub(entry.bytes);
                    entry.bytes = 0;
                }
                self.ledger.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.ledger.used.store(state.total, Ordering::Release);
        evicted
    }
}

/// A cache as a budget sees it: its size and what it holds that can go.
pub trait Measure: Send + Sync + 'static {
    /// The estimated heap it holds (`fact_store::backend`'s heap model).
    fn heap_bytes(&self) -> usize;

    /// Empties it back to its "not loaded" state; returns what it held, for the caller to
    /// drop.
    fn evict(&mut self) -> Box<dyn Any + Send>;
}

/// A registered slot as the ledger reaches it, whatever the cache's type.
trait Evict: Send + Sync {
    /// Its last use.
    fn stamp(&self) -> u64;

    /// Empties the cache unless it is in use (pinned, or locked); returns what it held.
    fn try_evict(&self) -> Option<Box<dyn Any + Send>>;
}

/// The cache's cell: what the store and the ledger share.
struct Slot<T> {
    stamp: AtomicU64,
    /// The bytes last charged (the ledger's entry), changed only under `value`'s lock.
    charged: AtomicUsize,
    /// Whether the budget evicted the cache and nothing was loaded since.
    evicted: AtomicBool,
    /// How many operations use the cache now: a pinned cache is never evicted.
    pins: AtomicUsize,
    /// Read by many searches at once; written by one operation at a time (a load, the
    /// rows a search follows, a write applied) and by an eviction.
    value: RwLock<T>,
}

impl<T: Measure> Evict for Slot<T> {
    fn stamp(&self) -> u64 {
        self.stamp.load(Ordering::Relaxed)
    }

    fn try_evict(&self) -> Option<Box<dyn Any + Send>> {
        let mut value = match self.value.try_write() {
            Ok(value) => value,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        // A pin is taken before the lock, so under the lock a count of 0 means no
        // operation has looked at the cache and will look again.
        if self.pins.load(Ordering::SeqCst) > 0 {
            return None;
        }
        self.charged.store(0, Ordering::Relaxed);
        self.evicted.store(true, Ordering::Relaxed);
        Some(value.evict())
    }
}

/// A store's cache, registered with a [`CacheBudget`] until it is dropped; it
/// dereferences to its [`Handle`].
pub struct Cached<T: Measure> {
    handle: Handle<T>,
}

/// A cache as its users reach it: cheap to clone (for a reload on another thread), and
/// registered as long as its [`Cached`] lives.
pub struct Handle<T: Measure> {
    slot: Arc<Slot<T>>,
    budget: CacheBudget,
    id: u64,
}

impl<T: Measure> Clone for Handle<T> {
    fn clone(&self) -> Self {
        Handle {
            slot: self.slot.clone(),
            budget: self.budget.clone(),
            id: self.id,
        }
    }
}

impl<T: Measure> fmt::Debug for Cached<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cached")
            .field("id", &self.handle.id)
            .finish_non_exhaustive()
    }
}

impl<T: Measure> std::ops::Deref for Cached<T> {
    type Target = Handle<T>;

    fn deref(&self) -> &Handle<T> {
        &self.handle
    }
}

impl<T: Measure> Cached<T> {
    /// `value` as a cache registered with `budget`.
    pub fn new(value: T, budget: &CacheBudget) -> Self {
        let bytes = value.heap_bytes();
        let slot = Arc::new(Slot {
            stamp: AtomicU64::new(budget.stamp()),
            charged: AtomicUsize::new(bytes),
            evicted: AtomicBool::new(false),
            pins: AtomicUsize::new(0),
            value: RwLock::new(value),
        });
        let weak: Weak<Slot<T>> = Arc::downgrade(&slot);
        let id = budget.register(bytes, weak);
        Cached {
            handle: Handle {
                slot,
                budget: budget.clone(),
                id,
            },
        }
    }

    /// A handle on the cache, for another thread.
    pub fn handle(&self) -> Handle<T> {
        self.handle.clone()
    }
}

impl<T: Measure> Handle<T> {
    /// The budget the cache is charged to.
    pub fn budget(&self) -> &CacheBudget {
        &self.budget
    }

    /// Whether the budget evicted the cache and nothing was loaded into it since.
    pub fn evicted(&self) -> bool {
        self.slot.evicted.load(Ordering::Relaxed)
    }

    /// Marks the cache in use until the pin is dropped: it is not evicted meanwhile.
    pub fn pin(&self) -> Pinned<'_, T> {
        self.slot.pins.fetch_add(1, Ordering::SeqCst);
        self.slot
            .stamp
            .store(self.budget.stamp(), Ordering::Relaxed);
        Pinned { cached: self }
    }

    /// Runs `f` on the cache, pinned and locked (work in memory only).
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let pinned = self.pin();
        let mut held = pinned.lock();
        f(&mut held)
    }

    /// The bytes the cache was last charged.
    pub fn charged(&self) -> usize {
        self.slot.charged.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
impl<T: Measure> Cached<T> {
    /// What the cache holds now, without using it.
    fn peek(&self) -> usize {
        self.slot
            .value
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .heap_bytes()
    }
}

impl<T: Measure> Drop for Cached<T> {
    fn drop(&mut self) {
        self.handle.budget.unregister(self.handle.id);
    }
}

/// A cache in use: [`Handle::pin`].
pub struct Pinned<'c, T: Measure> {
    cached: &'c Handle<T>,
}

impl<T: Measure> Pinned<'_, T> {
    /// Locks the cache to change it; its size is charged to the budget when the lock is
    /// released.
    pub fn lock(&self) -> Held<'_, T> {
        let guard = self
            .cached
            .slot
            .value
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        Held {
            guard,
            cached: self.cached,
        }
    }

    /// Locks the cache to read it, beside the other readers: nothing changes, so nothing
    /// is charged.
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        self.cached
            .slot
            .value
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Measure> Drop for Pinned<'_, T> {
    fn drop(&mut self) {
        let slot = &self.cached.slot;
        slot.stamp
            .store(self.cached.budget.stamp(), Ordering::Relaxed);
        slot.pins.fetch_sub(1, Ordering::SeqCst);
        // Room may have been wanted while this cache was in use and others could not go.
        self.cached.budget.settle(self.cached.id);
    }
}

/// A locked cache: dereferences to it; charges its size when dropped.
pub struct Held<'p, T: Measure> {
    guard: RwLockWriteGuard<'p, T>,
    cached: &'p Handle<T>,
}

impl<T: Measure> std::ops::Deref for Held<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: Measure> std::ops::DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T: Measure> Drop for Held<'_, T> {
    fn drop(&mut self) {
        let bytes = self.guard.heap_bytes();
        let budget = &self.cached.budget;
        let charged = &self.cached.slot.charged;
        // A use that changed nothing (a hot search) does not touch the ledger.
        if charged.load(Ordering::Relaxed) == bytes && budget.used() <= budget.ledger.limit {
            return;
        }
        // Charged with the cache still locked: the ledger and the cache agree whenever
        // the cache's lock is free.
        charged.store(bytes, Ordering::Relaxed);
        if bytes > 0 {
            self.cached.slot.evicted.store(false, Ordering::Relaxed);
        }
        budget.charge(self.cached.id, bytes);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::any::Any;

    use proptest::prelude::*;

    use super::{CacheBudget, Cached, Measure};

    /// A cache of so many bytes, or not loaded.
    #[derive(Debug, Default)]
    struct Fake(Option<usize>);

    impl Measure for Fake {
        fn heap_bytes(&self) -> usize {
            self.0.unwrap_or(0)
        }
        fn evict(&mut self) -> Box<dyn Any + Send> {
            Box::new(self.0.take())
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Use cache `n`: load it at `bytes` if it is not loaded.
        Use(usize, usize),
        /// Cache `n` grows or shrinks to `bytes` if loaded (a write).
        Resize(usize, usize),
        /// Cache `n`'s store is dropped and opened again.
        Reopen(usize),
    }

    fn op(caches: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..caches, 1..400usize).prop_map(|(n, b)| Op::Use(n, b)),
            1 => (0..caches, 1..400usize).prop_map(|(n, b)| Op::Resize(n, b)),
            1 => (0..caches).prop_map(Op::Reopen),
        ]
    }

    proptest! {
        /// After every operation the total is within the limit, or the one cache loaded
        /// is the one used last (alone larger than the budget); the registered total is
        /// what the caches hold.
        #[test]
        fn the_total_stays_within_the_budget(
            limit in 1..1000usize,
            ops in prop::collection::vec(op(6), 1..80),
        ) {
            let budget = CacheBudget::new(limit);
            let mut caches: Vec<Cached<Fake>> =
                (0..6).map(|_| Cached::new(Fake::default(), &budget)).collect();
            // The cache used last (a reopened store's cache is new, and unused).
            let mut last = 0;
            for op in ops {
                match op {
                    Op::Use(n, bytes) => {
                        caches[n].with(|cache| {
                            cache.0.get_or_insert(bytes);
                        });
                        last = n;
                    }
                    Op::Resize(n, bytes) => {
                        caches[n].with(|cache| {
                            if let Some(held) = cache.0.as_mut() {
                                *held = bytes;
                            }
                        });
                        last = n;
                    }
                    Op::Reopen(n) => {
                        caches[n] = Cached::new(Fake::default(), &budget);
                    }
                }
                let used = budget.used();
                let held: usize = caches.iter().map(Cached::peek).sum();
                prop_assert_eq!(used, held);
                prop_assert!(
                    used <= limit || (budget.loaded() == 1 && caches[last].charged() == used),
                    "{} bytes over a limit of {}", used, limit
                );
            }
        }
    }

    #[test]
    fn a_pinned_cache_is_not_evicted_and_the_oldest_goes_first() {
        let budget = CacheBudget::new(100);
        let a = Cached::new(Fake::default(), &budget);
        let b = Cached::new(Fake::default(), &budget);
        let c = Cached::new(Fake::default(), &budget);
        a.with(|f| f.0 = Some(40));
        {
            // `a` is in use (pinned, unlocked, as during a load outside the lock): `b`,
            // although used after it, goes for `c`.
            let pinned = a.pin();
            b.with(|f| f.0 = Some(40));
            c.with(|f| f.0 = Some(40));
            assert_eq!(b.charged(), 0);
            assert_eq!(pinned.lock().0, Some(40));
        }
        assert_eq!((a.charged(), c.charged(), budget.used()), (40, 40, 80));
        assert_eq!(budget.evictions(), 1);
        drop(a);
        assert_eq!(budget.used(), 40);
    }
}

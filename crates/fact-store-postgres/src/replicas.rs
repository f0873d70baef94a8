//! Read replicas: hot standbys that follow the primary by PostgreSQL's streaming
//! replication and answer a [`PgDatabase`](super::PgDatabase)'s reads, while every write
//! goes to the primary.
//!
//! # Reading one's own writes
//!
//! A store object remembers where the primary's WAL stood after its last commit
//! ([`Written`]): `pg_current_wal_lsn()`, read on the committing connection right after
//! `COMMIT` returned. With `synchronous_commit` on (or `local`, `remote_write`, …) the
//! commit waited until its record was flushed, and the write position is never behind the
//! flush position, so that position is at or past the end of the commit record; once a
//! standby's `pg_last_wal_replay_lsn()` reaches it, the commit is replayed and visible to
//! every snapshot the standby takes after. Read inside the transaction it would come
//! before the commit record, too early. `pg_current_wal_insert_lsn()` is not used when
//! the commit is flushed: it counts WAL that other sessions reserved and may not have
//! written yet, and it can point past a page header where no record ends, so an idle
//! standby could stay short of it and every read would wait out its bound for nothing.
//! Only with `synchronous_commit = off`, where `COMMIT` returns before its record is
//! written, is the insert position the one sure to be past the commit, and the store
//! reads it then.
//!
//! Before a read, a replica whose replay position (cached from its last check) is behind
//! the store's is asked once (`SELECT pg_last_wal_replay_lsn()`), then polled for at most
//! [`replica_wait`](super::PgOptions::replica_wait); still behind, the primary answers.
//!
//! # Failures
//!
//! A replica that cannot be reached or fails a read is skipped for
//! [`replica_retry`](super::PgOptions::replica_retry) and the primary answers meanwhile; a
//! query cancelled by a recovery conflict ("canceling statement due to conflict with
//! recovery", SQLSTATE class 40 on a standby) goes to the primary without the back-off.
//! Each of these is a `tracing` warning, at most one per replica and kind every
//! [`WARN_EVERY`] (with the number of those left out), never one per query.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use fact_model::{Clock, SystemClock, Timestamp};

use postgres::error::SqlState;
use postgres::types::PgLsn;

use crate::client::{lock, query, redacted};
use crate::error::{DbError, DbResult};
use crate::error::{describe, store_error};
use crate::options::PgOptions;
use crate::pool::{self, Connection, Manager};
use fact_store::{StoreError, StoreResult};

/// At most one warning per replica and kind of trouble in this time.
pub(super) const WARN_EVERY: Duration = Duration::from_secs(10);

/// How long from `earlier` to `later`; zero when the clock went back.
fn since(later: Timestamp, earlier: Timestamp) -> Duration {
    let micros = later.unix_micros().saturating_sub(earlier.unix_micros());
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

/// `at` plus `by` (`at` itself past the last representable instant).
fn after(at: Timestamp, by: Duration) -> Timestamp {
    at.checked_add(by).unwrap_or(at)
}

/// A replica known to lag is passed over for one known to be caught up, until what is
/// known of it is this old.
const RECHECK: Duration = Duration::from_secs(1);

/// The longest pause between two checks of a lagging replica.
const POLL_AT_MOST: Duration = Duration::from_millis(10);

/// How a [`PgDatabase`](super::PgDatabase)'s reads were served since it was opened: by
/// its read replicas, or by the primary and why.
///
/// ```
/// use fact_store_postgres::ReplicaStats;
///
/// let stats = ReplicaStats::default();
/// assert_eq!(stats.replica_reads + stats.lag_fallbacks + stats.error_fallbacks, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplicaStats {
    /// Reads a replica answered.
    pub replica_reads: u64,
    /// Of those, the reads that first waited for the replica to replay the store's last
    /// write.
    pub waited: u64,
    /// Reads the primary answered because the replica had not replayed the store's last
    /// write within [`replica_wait`](super::PgOptions::replica_wait).
    pub lag_fallbacks: u64,
    /// Reads the primary answered because a replica failed: unreachable, closed the
    /// connection, cancelled the query (a recovery conflict) or reported an error.
    pub error_fallbacks: u64,
    /// Reads the primary answered because every replica was backing off after a failure.
    pub down_fallbacks: u64,
}

/// The counters behind [`ReplicaStats`].
#[derive(Debug, Default)]
struct Counters {
    replica_reads: AtomicU64,
    waited: AtomicU64,
    lag_fallbacks: AtomicU64,
    error_fallbacks: AtomicU64,
    down_fallbacks: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Where a store object's last commit left the primary's WAL, for reading its own writes.
///
/// `lsn` only grows. When a commit's position could not be read (the connection dropped
/// right after `COMMIT`), `unknown` counts it: the next read first asks the primary for its
/// current position, which is past that commit, and clears the count only if no other
/// position was lost meanwhile.
#[derive(Debug, Default)]
pub(super) struct Written {
    lsn: AtomicU64,
    unknown: AtomicU64,
}

impl Written {
    /// A commit (or the scope's lookup at open) left the primary at `lsn`.
    pub(super) fn at(&self, lsn: u64) {
        self.lsn.fetch_max(lsn, Ordering::AcqRel);
    }

    /// A commit's position could not be read.
    pub(super) fn lost(&self) {
        self.unknown.fetch_add(1, Ordering::AcqRel);
    }

    /// The position a replica must have replayed before it answers for this store; a lost
    /// position is resolved first with `primary` (the primary's current position), and
    /// `None` (read on the primary) when that fails.
    pub(super) fn need(&self, primary: impl FnOnce() -> Option<u64>) -> Option<u64> {
        let lost = self.unknown.load(Ordering::Acquire);
        if lost > 0 {
            let now = primary()?;
            self.at(now);
            // Only the losses counted before `now` was read are covered by it.
            let _ = self
                .unknown
                .compare_exchange(lost, 0, Ordering::AcqRel, Ordering::Acquire);
        }
        Some(self.lsn.load(Ordering::Acquire))
    }
}

/// Where the primary's WAL stands now, as [`Written`] needs it: past every commit that
/// returned on any connection to it (see the module documentation).
pub(super) fn commit_position(conn: &mut Connection) -> DbResult<u64> {
    let rows = query(
        conn,
        "SELECT CASE WHEN current_setting('synchronous_commit') = 'off' \
         THEN pg_current_wal_insert_lsn() ELSE pg_current_wal_lsn() END",
        &[],
    )?;
    let lsn: Option<PgLsn> = match rows.first() {
        Some(row) => row.try_get(0)?,
        None => None,
    };
    Ok(lsn.map_or(0, u64::from))
}

/// What a replica's failure means for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    /// A query cancelled by a recovery conflict (class 40 on a standby, where a read-only
    /// transaction has nothing else to conflict with): the next read may use it again.
    Conflict,
    /// Unreachable, a closed connection or any other error: skipped for the back-off.
    Down,
}

/// How a replica's failure with SQLSTATE `code` (`None` for a failure of the connection
/// itself) is treated.
pub(super) fn classify(code: Option<&SqlState>) -> Failure {
    match code {
        Some(code) if code.code().starts_with("40") => Failure::Conflict,
        _ => Failure::Down,
    }
}

/// The outcome of a read offered to the replicas.
pub(super) enum Served<T> {
    /// A replica answered.
    Value(T),
    /// A replica answered with an error of the store's own (damaged rows, not found),
    /// which the primary would give as well.
    Failed(StoreError),
    /// The primary must answer.
    Primary,
}

/// A database's read replicas.
pub(super) struct Replicas {
    list: Vec<Replica>,
    /// Round robin: the replica the next read starts looking at.
    next: AtomicUsize,
    wait: Duration,
    retry: Duration,
    counters: Counters,
    /// Times back-offs, waits and warnings (the system clock).
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for Replicas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|replica| replica.location.display()))
            .finish()
    }
}

impl Replicas {
    /// The replicas at `urls`, opened with `options` (nothing is connected yet).
    ///
    /// # Errors
    ///
    /// [`StoreError::Backend`](fact_store::StoreError::Backend) for a malformed URL.
    pub(super) fn new<S: AsRef<str>>(urls: &[S], options: &PgOptions) -> StoreResult<Replicas> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let list = urls
            .iter()
            .map(|url| Replica::new(url.as_ref(), options, clock.clone()))
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(Replicas {
            list,
            next: AtomicUsize::new(0),
            wait: options.replica_wait,
            retry: options.replica_retry,
            counters: Counters::default(),
            clock,
        })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(super) fn locations(&self) -> impl Iterator<Item = &Path> {
        self.list.iter().map(|replica| replica.location.as_path())
    }

    pub(super) fn stats(&self) -> ReplicaStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ReplicaStats {
            replica_reads: get(&self.counters.replica_reads),
            waited: get(&self.counters.waited),
            lag_fallbacks: get(&self.counters.lag_fallbacks),
            error_fallbacks: get(&self.counters.error_fallbacks),
            down_fallbacks: get(&self.counters.down_fallbacks),
        }
    }

    /// Round robin over the replicas not backing off, each read starting at the next. The
    /// replica in turn is taken when it is known to have replayed `need`, or when what is
    /// known of it is older than [`RECHECK`] (or nothing is); otherwise another known to
    /// have replayed `need`, if any, spares the read a wait. `None` when all are backing
    /// off.
    fn pick(&self, need: u64) -> Option<&Replica> {
        let count = self.list.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let now = self.clock.now();
        let mut usable = (0..count)
            .filter_map(|offset| self.list.get(start.wrapping_add(offset) % count))
            .filter(|replica| replica.usable(now));
        let turn = usable.next()?;
        if turn.replayed.load(Ordering::Acquire) >= need || turn.stale(now) {
            return Some(turn);
        }
        Some(
            usable
                .find(|replica| replica.replayed.load(Ordering::Acquire) >= need)
                .unwrap_or(turn),
        )
    }

    /// Offers a read to a replica that has replayed `need` (waiting for it at most the
    /// configured time): its answer, or [`Served::Primary`] when none can give it.
    pub(super) fn read<T>(
        &self,
        need: u64,
        f: &mut dyn FnMut(&mut Connection) -> DbResult<T>,
    ) -> Served<T> {
        let Some(replica) = self.pick(need) else {
            bump(&self.counters.down_fallbacks);
            return Served::Primary;
        };
        let mut lease = match replica.pool.get() {
            Ok(lease) => lease,
            Err(error) => {
                replica.failed(Failure::Down, &error, self.retry);
                bump(&self.counters.error_fallbacks);
                return Served::Primary;
            }
        };
        if lease.fresh {
            // A new connection (the pool grew, or the replica restarted): what an older
            // one saw is no longer trusted.
            replica.forget();
        }
        let Some(conn) = lease.conn.as_mut() else {
            return Served::Primary;
        };
        if replica.replayed.load(Ordering::Acquire) < need {
            match replica.wait_for(conn, need, self.wait) {
                Ok(Caught::Up { waited }) => {
                    if waited {
                        bump(&self.counters.waited);
                    }
                }
                Ok(Caught::Behind { replayed, waited }) => {
                    replica.lagged(need, replayed, waited);
                    bump(&self.counters.lag_fallbacks);
                    return Served::Primary;
                }
                Ok(Caught::NotStandby) => {
                    lease.broken = true;
                    replica.not_standby(self.retry);
                    bump(&self.counters.error_fallbacks);
                    return Served::Primary;
                }
                Err(error) => {
                    lease.broken = true;
                    replica.failed_db(&error, self.retry);
                    bump(&self.counters.error_fallbacks);
                    return Served::Primary;
                }
            }
        }
        match f(conn) {
            Ok(value) => {
                replica.answered();
                bump(&self.counters.replica_reads);
                Served::Value(value)
            }
            Err(DbError::Driver(error)) => {
                if classify(error.code()) == Failure::Down {
                    lease.broken = true;
                }
                replica.failed_db(&DbError::Driver(error), self.retry);
                bump(&self.counters.error_fallbacks);
                Served::Primary
            }
            Err(other) => Served::Failed(other.into_store_with(&replica.location, store_error)),
        }
    }
}

/// What a check of a replica's replay position found.
enum Caught {
    /// It has replayed the position; `waited` when it had to be polled for it.
    Up { waited: bool },
    /// Still behind after the wait.
    Behind { replayed: u64, waited: Duration },
    /// The server is not in recovery: not a standby (perhaps promoted).
    NotStandby,
}

/// One read replica: its pool, what it was last seen to have replayed, and its health.
struct Replica {
    /// Its URL without the password, for messages.
    location: PathBuf,
    pool: ReplicaPool,
    /// The newest replay position a check saw (0: none yet, or a new connection since).
    replayed: AtomicU64,
    /// When a check last saw it (`None`: never, or a new connection since).
    checked: Mutex<Option<Timestamp>>,
    /// Skipped until then, after a failure.
    down_until: Mutex<Option<Timestamp>>,
    lag_warnings: Warnings,
    error_warnings: Warnings,
    clock: Arc<dyn Clock>,
}

impl Replica {
    fn new(url: &str, options: &PgOptions, clock: Arc<dyn Clock>) -> StoreResult<Replica> {
        let location = PathBuf::from(redacted(url));
        let mut config = postgres::Config::from_str(url).map_err(|e| StoreError::Backend {
            message: format!("{}: not a PostgreSQL URL: {e}", location.display()),
        })?;
        if config.get_application_name().is_none() {
            config.application_name("factmem-replica");
        }
        let manager = Manager::new(
            config,
            &options.schema,
            options.lock_timeout,
            options.connect_timeout,
        )
        .map_err(|message| StoreError::Backend { message })?;
        Ok(Replica {
            location,
            pool: ReplicaPool {
                manager,
                max: options.pool_size.max(1),
                wait: options.connect_timeout,
                state: Mutex::new(PoolState::default()),
                freed: Condvar::new(),
                clock: clock.clone(),
            },
            replayed: AtomicU64::new(0),
            checked: Mutex::new(None),
            down_until: Mutex::new(None),
            lag_warnings: Warnings::default(),
            error_warnings: Warnings::default(),
            clock,
        })
    }

    fn usable(&self, now: Timestamp) -> bool {
        lock(&self.down_until).is_none_or(|until| now >= until)
    }

    /// Whether its replay position was never checked, or not for [`RECHECK`].
    fn stale(&self, now: Timestamp) -> bool {
        lock(&self.checked).is_none_or(|at| since(now, at) >= RECHECK)
    }

    /// Forgets what was seen of it: a new connection, or a failure.
    fn forget(&self) {
        self.replayed.store(0, Ordering::Release);
        *lock(&self.checked) = None;
    }

    /// Polls the replay position until it reaches `need` or `wait` has passed.
    fn wait_for(&self, conn: &mut Connection, need: u64, wait: Duration) -> DbResult<Caught> {
        let start = self.clock.now();
        let mut pause = Duration::from_millis(1);
        let mut slept = false;
        // What was slept bounds the wait too, whatever the clock says.
        let mut slept_for = Duration::ZERO;
        loop {
            let rows = query(
                conn,
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()",
                &[],
            )?;
            let Some(row) = rows.first() else {
                return Ok(Caught::NotStandby);
            };
            let (recovering, replayed): (bool, Option<PgLsn>) = (row.try_get(0)?, row.try_get(1)?);
            if !recovering {
                return Ok(Caught::NotStandby);
            }
            let replayed = replayed.map_or(0, u64::from);
            self.replayed.fetch_max(replayed, Ordering::AcqRel);
            let now = self.clock.now();
            *lock(&self.checked) = Some(now);
            let waited = since(now, start).max(slept_for);
            if replayed >= need {
                return Ok(Caught::Up { waited: slept });
            }
            let Some(left) = wait.checked_sub(waited).filter(|left| !left.is_zero()) else {
                return Ok(Caught::Behind { replayed, waited });
            };
            std::thread::sleep(pause.min(left));
            slept_for += pause.min(left);
            slept = true;
            pause = (pause * 2).min(POLL_AT_MOST);
        }
    }

    /// A read succeeded: a replica that was down is back.
    fn answered(&self) {
        let mut down = lock(&self.down_until);
        if down.take().is_some() {
            tracing::info!(replica = %self.location.display(), "read replica answers again");
        }
    }

    fn back_off(&self, retry: Duration) {
        *lock(&self.down_until) = Some(after(self.clock.now(), retry));
    }

    fn lagged(&self, need: u64, replayed: u64, waited: Duration) {
        if let Some(suppressed) = self.lag_warnings.due(self.clock.now()) {
            tracing::warn!(
                replica = %self.location.display(),
                needed = %PgLsn::from(need),
                replayed = %PgLsn::from(replayed),
                waited_ms = waited.as_millis(),
                suppressed,
                "read replica has not replayed this store's last write: the primary answers"
            );
        }
    }

    fn not_standby(&self, retry: Duration) {
        self.back_off(retry);
        if let Some(suppressed) = self.error_warnings.due(self.clock.now()) {
            tracing::warn!(
                replica = %self.location.display(),
                retry_in_ms = retry.as_millis(),
                suppressed,
                "read replica is not in recovery (not a standby, or promoted): the primary answers"
            );
        }
    }

    fn failed_db(&self, error: &DbError, retry: Duration) {
        let (failure, message) = match error {
            DbError::Driver(error) => (classify(error.code()), describe(error)),
            other => (Failure::Down, format!("{other:?}")),
        };
        self.failed(failure, &message, retry);
    }

    fn failed(&self, failure: Failure, error: &dyn fmt::Display, retry: Duration) {
        if failure == Failure::Down {
            self.back_off(retry);
            self.forget();
            self.pool.clear();
        }
        if let Some(suppressed) = self.error_warnings.due(self.clock.now()) {
            match failure {
                Failure::Down => tracing::warn!(
                    replica = %self.location.display(),
                    %error,
                    retry_in_ms = retry.as_millis(),
                    suppressed,
                    "read replica failed: the primary answers until it is tried again"
                ),
                Failure::Conflict => tracing::warn!(
                    replica = %self.location.display(),
                    %error,
                    suppressed,
                    "read replica cancelled a read (conflict with recovery): the primary answers it"
                ),
            }
        }
    }
}

/// Rate limit of one kind of warning: at most one per [`WARN_EVERY`].
#[derive(Debug, Default)]
struct Warnings {
    last: Mutex<Option<Timestamp>>,
    suppressed: AtomicU64,
}

impl Warnings {
    /// `Some(how many were left out since the last)` when a warning is due at `now`.
    fn due(&self, now: Timestamp) -> Option<u64> {
        let mut last = lock(&self.last);
        if last.is_some_and(|at| since(now, at) < WARN_EVERY) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

/// A replica's connections: at most `max` open, idle ones kept. Not r2d2: a replica that
/// refuses connections must fail a read at once (with the driver's own words) so the
/// primary answers it, where r2d2 keeps trying until its timeout.
struct ReplicaPool {
    manager: Manager,
    max: u32,
    /// How long a read waits for a connection when `max` are in use.
    wait: Duration,
    state: Mutex<PoolState>,
    freed: Condvar,
    clock: Arc<dyn Clock>,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Connection>,
    /// Connections open, idle or leased.
    open: u32,
}

/// A connection leased from a [`ReplicaPool`], given back when dropped (closed instead
/// when `broken` or closed by the server).
struct Lease<'p> {
    pool: &'p ReplicaPool,
    conn: Option<Connection>,
    /// Opened for this lease.
    fresh: bool,
    broken: bool,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let mut state = lock(&self.pool.state);
        if self.broken || conn.client.is_closed() {
            state.open = state.open.saturating_sub(1);
            drop(state);
            pool::close(conn);
        } else {
            state.idle.push(conn);
            drop(state);
        }
        self.pool.freed.notify_one();
    }
}

impl ReplicaPool {
    /// An idle connection, a new one, or (with `max` in use) the next one freed.
    fn get(&self) -> Result<Lease<'_>, String> {
        let deadline = after(self.clock.now(), self.wait);
        let mut state = lock(&self.state);
        loop {
            if let Some(conn) = state.idle.pop() {
                if conn.client.is_closed() {
                    state.open = state.open.saturating_sub(1);
                    pool::close(conn);
                    continue;
                }
                return Ok(Lease {
                    pool: self,
                    conn: Some(conn),
                    fresh: false,
                    broken: false,
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match self.manager.open() {
                    Ok(mut conn) => {
                        conn.replica = true;
                        Ok(Lease {
                            pool: self,
                            conn: Some(conn),
                            fresh: true,
                            broken: false,
                        })
                    }
                    Err(error) => {
                        let mut state = lock(&self.state);
                        state.open = state.open.saturating_sub(1);
                        drop(state);
                        self.freed.notify_one();
                        Err(describe(&error))
                    }
                };
            }
            let left = since(deadline, self.clock.now());
            if left.is_zero() {
                return Err(format!(
                    "no connection came free within {} ms",
                    self.wait.as_millis()
                ));
            }
            let (next, timeout) = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner);
            state = next;
            if timeout.timed_out() && state.idle.is_empty() && state.open >= self.max {
                return Err(format!(
                    "no connection came free within {} ms",
                    self.wait.as_millis()
                ));
            }
        }
    }

    /// Closes the idle connections (after a failure: they are likely dead too).
    fn clear(&self) {
        let idle = {
            let mut state = lock(&self.state);
            let idle = std::mem::take(&mut state.idle);
            state.open = state
                .open
                .saturating_sub(u32::try_from(idle.len()).unwrap_or(u32::MAX));
            idle
        };
        for conn in idle {
            pool::close(conn);
        }
        self.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What happens to a store object's [`Written`] and the primary, in some order.
    #[derive(Debug, Clone)]
    enum Op {
        /// A commit whose position was read.
        Commit,
        /// A commit whose position was lost.
        Lost,
        /// A read; the primary can say where it stands, or not.
        Read { primary_answers: bool },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::Commit),
            Just(Op::Lost),
            any::<bool>().prop_map(|primary_answers| Op::Read { primary_answers }),
        ]
    }

    proptest! {
        /// A read never asks a replica for less than the store's newest commit: it either
        /// goes to the primary, or needs a position at or past every commit made before it.
        #[test]
        fn a_read_needs_every_commit_before_it(ops in proptest::collection::vec(op(), 0..40)) {
            let written = Written::default();
            // The primary's WAL: each commit moves it on by some bytes.
            let mut primary = 0u64;
            let mut newest_commit = 0u64;
            for op in ops {
                match op {
                    Op::Commit => {
                        primary += 40;
                        newest_commit = primary;
                        written.at(primary);
                    }
                    Op::Lost => {
                        primary += 40;
                        newest_commit = primary;
                        written.lost();
                    }
                    Op::Read { primary_answers } => {
                        let now = primary;
                        if let Some(need) = written.need(|| primary_answers.then_some(now)) {
                            prop_assert!(need >= newest_commit, "{need} < {newest_commit}");
                            prop_assert!(need <= primary);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn recovery_conflicts_keep_the_replica_and_the_rest_back_it_off() {
        for code in [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
        ] {
            assert_eq!(classify(Some(&code)), Failure::Conflict, "{}", code.code());
        }
        for code in [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_FAILURE,
            SqlState::UNDEFINED_TABLE,
            SqlState::INVALID_CATALOG_NAME,
        ] {
            assert_eq!(classify(Some(&code)), Failure::Down, "{}", code.code());
        }
        assert_eq!(classify(None), Failure::Down);
    }

    #[test]
    fn warnings_are_rate_limited_and_count_what_they_leave_out() {
        let warnings = Warnings::default();
        let start = Timestamp::from_unix_secs(1_800_000_000).unwrap();
        assert_eq!(warnings.due(start), Some(0));
        assert_eq!(warnings.due(start), None);
        assert_eq!(warnings.due(after(start, WARN_EVERY / 2)), None);
        assert_eq!(warnings.due(after(start, WARN_EVERY)), Some(2));
        assert_eq!(warnings.due(after(start, WARN_EVERY)), None);
    }

    #[test]
    fn a_lost_position_is_resolved_by_the_primary_before_a_read() {
        let written = Written::default();
        assert_eq!(written.need(|| None), Some(0));
        written.at(100);
        written.at(50);
        assert_eq!(written.need(|| None), Some(100));
        written.lost();
        // The primary cannot say: the read goes to the primary.
        assert_eq!(written.need(|| None), None);
        assert_eq!(written.need(|| Some(300)), Some(300));
        // Resolved: the primary is not asked again.
        assert_eq!(written.need(|| None), Some(300));
    }

    #[test]
    fn a_loss_during_its_resolution_stays_to_be_resolved() {
        let written = Written::default();
        written.lost();
        let need = written.need(|| {
            // Another commit loses its position while the primary is asked.
            written.lost();
            Some(10)
        });
        assert_eq!(need, Some(10));
        assert_eq!(written.need(|| None), None);
        assert_eq!(written.need(|| Some(20)), Some(20));
    }
}

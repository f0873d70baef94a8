//! Where reads go with a read replica, and what a lagging, failing or wrong replica costs:
//! never an error to the caller, never a missed write of the reader's own, a warning
//! that does not repeat per query.
//!
//! The tests share one standby. The one that pauses its replay holds an exclusive advisory
//! lock on the primary while it does; those whose assertions need a standby that replays
//! hold it shared, so neither runs during the other (nextest runs tests as processes).

use std::cell::RefCell;
use std::fmt::Write as _;
use std::net::TcpListener;
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use fact_model::ManualClock;
use fact_store::{SessionFactStore, StoreConfig, TermQuery};
use fact_store_postgres::{PgDatabase, PgFactStore, PgOptions, ReplicaStats};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use super::servers;
use crate::postgres::{fresh_scope, options};
use crate::{fact, t};

/// The advisory lock the replica tests take on the primary.
const STANDBY_LOCK: i64 = 24_0004;

/// Holds the standby lock while alive (its connection holds it).
struct StandbyLock(#[allow(dead_code)] postgres::Client);

impl StandbyLock {
    /// Shared: the standby replays while this is held. Exclusive: for the test that pauses
    /// it.
    fn take(primary: &str, exclusive: bool) -> StandbyLock {
        let mut client = postgres::Client::connect(primary, postgres::NoTls).unwrap();
        let sql = if exclusive {
            "SELECT pg_advisory_lock($1)"
        } else {
            "SELECT pg_advisory_lock_shared($1)"
        };
        client.execute(sql, &[&STANDBY_LOCK]).unwrap();
        StandbyLock(client)
    }
}

fn admin(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// Resumes the standby's replay (a test that paused it and died left it paused).
fn resume(replica: &str) {
    admin(replica)
        .execute("SELECT pg_wal_replay_resume()", &[])
        .unwrap();
}

/// The standby's replay paused until dropped (also when the test fails).
struct Paused(String);

impl Paused {
    fn new(replica: &str) -> Paused {
        admin(replica)
            .execute("SELECT pg_wal_replay_pause()", &[])
            .unwrap();
        Paused(replica.to_owned())
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.0, postgres::NoTls) {
            let _ = client.execute("SELECT pg_wal_replay_resume()", &[]);
        }
    }
}

/// `url` with an `application_name` of its own.
fn named(url: &str, application: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name={application}")
}

/// An `application_name` no other test (of this run or another) uses.
fn application(test: &str) -> String {
    fresh_scope(test)
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        .chars()
        .take(60)
        .collect()
}

/// The sessions of `application` on the server `url` names: how many, and the last
/// statement of each.
fn sessions(url: &str, application: &str) -> Vec<String> {
    admin(url)
        .query(
            "SELECT query FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(t(0)))
}

/// The warnings logged on this thread while `f` runs, each as `field=value` pairs.
///
/// The capturing subscriber is the process's global default, and each thread keeps its
/// own list. A scoped subscriber (`with_default`) loses events here: when it is the only
/// one alive, tracing-core computes a callsite's interest, once and for good, from the
/// default of whichever thread reaches it first. Another test reading from the paused
/// standby on its own thread, with no subscriber, then marks the lag warning's callsite
/// as never interesting, and this thread's subscriber never sees it.
fn warnings<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(Warnings)
            .expect("no other global subscriber in this test binary");
    });
    /// Ends the capture also when `f` panics.
    struct Capture;
    impl Drop for Capture {
        fn drop(&mut self) {
            CAPTURED.with(|seen| seen.borrow_mut().take());
        }
    }
    CAPTURED.with(|seen| *seen.borrow_mut() = Some(Vec::new()));
    let capture = Capture;
    let value = f();
    let seen = CAPTURED.with(|seen| seen.borrow_mut().take().unwrap_or_default());
    drop(capture);
    (value, seen)
}

thread_local! {
    /// This thread's warnings while [`warnings`] runs; `None` otherwise.
    static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// A subscriber that keeps the warning events of the threads that capture them.
struct Warnings;

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::INFO
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() != Level::WARN {
            return;
        }
        CAPTURED.with(|seen| {
            if let Some(seen) = seen.borrow_mut().as_mut() {
                let mut fields = Fields(String::new());
                event.record(&mut fields);
                seen.push(fields.0);
            }
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The objects of the facts `history(subject)` gives.
fn history(store: &dyn SessionFactStore, subject: &str) -> Vec<String> {
    store
        .history(subject)
        .unwrap()
        .iter()
        .map(|f| f.object().to_owned())
        .collect()
}

/// Reads until a replica answers one (at most 10 s): the standby has caught up with the
/// store's last write.
fn until_the_replica_answers(database: &PgDatabase, store: &dyn SessionFactStore) {
    let before = database.replica_stats().replica_reads;
    let deadline = Instant::now() + Duration::from_secs(10);
    while database.replica_stats().replica_reads == before {
        assert!(Instant::now() < deadline, "the standby never caught up");
        store.valid_count().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn reads_go_to_the_replica_and_writes_to_the_primary() {
    let Some((primary, replica)) = servers() else {
        return;
    };
    let _lock = StandbyLock::take(&primary, false);
    resume(&replica);
    let app = application("replica_reads");
    // A generous wait: the standby answers however slow the machine.
    let options = options().with_replica_wait(Duration::from_secs(5));
    let database =
        PgDatabase::connect_with_replicas(&primary, &[named(&replica, &app)], options).unwrap();
    assert_eq!(database.replicas().count(), 1);
    let store = database
        .open(&fresh_scope("reads"), StoreConfig::default(), clock())
        .unwrap();
    store
        .add(vec![fact("api", "uses", "postgres", 1, 0)])
        .unwrap();
    assert_eq!(history(&store, "api"), ["postgres"]);
    assert_eq!(
        database.replica_stats().replica_reads,
        1,
        "{:?}",
        database.replica_stats()
    );
    // The replica's connection lives on the standby, and ran the read last; the primary
    // never saw it.
    let on_standby = sessions(&replica, &app);
    assert_eq!(on_standby.len(), 1, "{on_standby:?}");
    assert!(
        on_standby[0].contains("subject_hash"),
        "the standby's session last ran {:?}",
        on_standby[0]
    );
    assert!(sessions(&primary, &app).is_empty());
    let in_recovery: bool = admin(&named(&replica, &app))
        .query_one("SELECT pg_is_in_recovery()", &[])
        .unwrap()
        .get(0);
    assert!(in_recovery, "FACTMEM_PG_REPLICA_URL names a standby");
}

#[test]
fn a_session_reads_its_own_writes_at_once() {
    let Some((primary, replica)) = servers() else {
        return;
    };
    let _lock = StandbyLock::take(&primary, false);
    resume(&replica);
    for cache in [true, false] {
        let options = options().with_search_cache(cache);
        let database = PgDatabase::connect_with_replicas(&primary, &[&replica], options).unwrap();
        let store = database
            .open(&fresh_scope("own"), StoreConfig::default(), clock())
            .unwrap();
        let writes = 100;
        let started = Instant::now();
        for n in 0..writes {
            let object = format!("value{n}");
            store
                .add(vec![fact("config", &format!("key{n}"), &object, 1, n)])
                .unwrap();
            // History, search and the count each see the write just made.
            let seen = history(&store, "config");
            assert_eq!(seen.len(), n as usize + 1, "write {n}: {seen:?}");
            assert_eq!(seen.last(), Some(&object));
            let found = crate::search(&store, &object, TermQuery::default().with_limit(3));
            assert_eq!(
                found.first().map(|(line, _)| line.as_str()),
                Some(format!("config key{n} {object}").as_str()),
                "write {n}"
            );
            assert_eq!(store.valid_count().unwrap(), n as usize + 1);
        }
        let stats = database.replica_stats();
        let reads = u64::try_from(writes * 3).unwrap();
        assert_eq!(
            stats.replica_reads + stats.lag_fallbacks,
            reads,
            "{stats:?}"
        );
        assert_eq!(stats.error_fallbacks + stats.down_fallbacks, 0, "{stats:?}");
        eprintln!(
            "search cache {cache}: {writes} writes, each read back 3 times, in {:?}: {stats:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_paused_replica_hides_others_writes_but_never_ones_own() {
    let Some((primary, replica)) = servers() else {
        return;
    };
    let _lock = StandbyLock::take(&primary, true);
    resume(&replica);
    let ((), warned) = warnings(|| {
        let wait = Duration::from_millis(100);
        let database = PgDatabase::connect_with_replicas(
            &primary,
            &[&replica],
            options().with_replica_wait(wait),
        )
        .unwrap();
        let scope = fresh_scope("paused");
        let store = database
            .open(&scope, StoreConfig::default(), clock())
            .unwrap();
        store.add(vec![fact("mine", "is", "first", 1, 0)]).unwrap();
        until_the_replica_answers(&database, &store);
        let paused = Paused::new(&replica);
        // Another session writes the scope on the primary: this store reads from the
        // paused standby, which has not replayed it.
        let other =
            PgFactStore::open_with(&primary, &scope, StoreConfig::default(), options(), clock())
                .unwrap();
        other.add(vec![fact("theirs", "is", "new", 2, 1)]).unwrap();
        let before = database.replica_stats();
        assert!(history(&store, "theirs").is_empty());
        assert_eq!(history(&store, "mine"), ["first"]);
        let after = database.replica_stats();
        assert_eq!(after.replica_reads, before.replica_reads + 2, "{after:?}");
        // Its own write is read back at once: the standby cannot replay it, so after the
        // bounded wait the primary answers.
        store.add(vec![fact("mine", "is", "second", 1, 2)]).unwrap();
        let started = Instant::now();
        assert_eq!(history(&store, "mine"), ["first", "second"]);
        let took = started.elapsed();
        assert!(took >= wait, "answered in {took:?}, before the wait ended");
        let lagging = database.replica_stats();
        assert_eq!(
            lagging.lag_fallbacks,
            after.lag_fallbacks + 1,
            "{lagging:?}"
        );
        // The primary answers every read until the standby replays again, with one
        // warning, not one per read.
        for _ in 0..5 {
            assert_eq!(store.valid_count().unwrap(), 2, "theirs and my second");
        }
        assert_eq!(
            database.replica_stats().lag_fallbacks,
            lagging.lag_fallbacks + 5
        );
        drop(paused);
        until_the_replica_answers(&database, &store);
        assert_eq!(history(&store, "theirs"), ["new"]);
    });
    let lag: Vec<&String> = warned
        .iter()
        .filter(|w| w.contains("has not replayed"))
        .collect();
    assert_eq!(lag.len(), 1, "{warned:?}");
    assert!(lag[0].contains("replica="), "{lag:?}");
}

#[test]
fn a_replica_that_is_down_leaves_reads_to_the_primary_with_one_warning() {
    let Some((primary, _)) = servers() else {
        return;
    };
    let down = format!(
        "postgres://postgres@127.0.0.1:{}/factmem_test",
        closed_port()
    );
    let retry = Duration::from_secs(2);
    let ((), warned) = warnings(|| {
        let database = PgDatabase::connect_with_replicas(
            &primary,
            &[&down],
            options().with_replica_retry(retry),
        )
        .unwrap();
        let store = database
            .open(&fresh_scope("down"), StoreConfig::default(), clock())
            .unwrap();
        for n in 0..10 {
            store
                .add(vec![fact("svc", &format!("port{n}"), "open", 1, n)])
                .unwrap();
            assert_eq!(history(&store, "svc").len(), n as usize + 1);
        }
        let stats = database.replica_stats();
        assert_eq!(
            (
                stats.replica_reads,
                stats.error_fallbacks,
                stats.down_fallbacks
            ),
            (0, 1, 9),
            "tried once, then left alone: {stats:?}"
        );
        // After the back-off it is tried again (and fails again, without a new warning).
        std::thread::sleep(retry + Duration::from_millis(50));
        assert_eq!(history(&store, "svc").len(), 10);
        assert_eq!(database.replica_stats().error_fallbacks, 2);
    });
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("read replica failed") && warned[0].contains("refused"),
        "{warned:?}"
    );
}

#[test]
fn a_replica_whose_connections_are_cut_is_tried_again_after_its_back_off() {
    let Some((primary, replica)) = servers() else {
        return;
    };
    let _lock = StandbyLock::take(&primary, false);
    resume(&replica);
    let app = application("replica_cut");
    let retry = Duration::from_millis(300);
    let ((), warned) = warnings(|| {
        let options = options()
            .with_replica_retry(retry)
            .with_replica_wait(Duration::from_secs(5));
        let database =
            PgDatabase::connect_with_replicas(&primary, &[named(&replica, &app)], options).unwrap();
        let store = database
            .open(&fresh_scope("cut"), StoreConfig::default(), clock())
            .unwrap();
        store
            .add(vec![fact("job", "state", "queued", 1, 0)])
            .unwrap();
        assert_eq!(history(&store, "job"), ["queued"]);
        assert_eq!(database.replica_stats().replica_reads, 1);
        // The standby drops the replica's connections (as a restart does).
        admin(&replica)
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = $1",
                &[&app],
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(history(&store, "job"), ["queued"]);
        assert_eq!(history(&store, "job"), ["queued"]);
        let stats = database.replica_stats();
        assert_eq!(
            (
                stats.replica_reads,
                stats.error_fallbacks,
                stats.down_fallbacks
            ),
            (1, 1, 1),
            "{stats:?}"
        );
        std::thread::sleep(retry + Duration::from_millis(50));
        store.add(vec![fact("job", "state", "done", 1, 1)]).unwrap();
        assert_eq!(history(&store, "job"), ["queued", "done"]);
        assert_eq!(
            database.replica_stats().replica_reads,
            2,
            "back on the replica"
        );
    });
    assert_eq!(warned.len(), 1, "{warned:?}");
}

#[test]
fn a_server_that_is_not_a_standby_is_not_read_from() {
    let Some((primary, _)) = servers() else {
        return;
    };
    let ((), warned) = warnings(|| {
        let database = PgDatabase::connect_with_replicas(&primary, &[&primary], options()).unwrap();
        let store = database
            .open(&fresh_scope("notstandby"), StoreConfig::default(), clock())
            .unwrap();
        store.add(vec![fact("a", "b", "c", 1, 0)]).unwrap();
        assert_eq!(history(&store, "a"), ["c"]);
        let stats = database.replica_stats();
        assert_eq!(
            (stats.replica_reads, stats.error_fallbacks),
            (0, 1),
            "{stats:?}"
        );
    });
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("not in recovery"), "{warned:?}");
}

#[test]
fn several_replicas_share_the_reads_round_robin() {
    let Some((primary, replica)) = servers() else {
        return;
    };
    let _lock = StandbyLock::take(&primary, false);
    resume(&replica);
    let (one, two) = (application("replica_one"), application("replica_two"));
    let database = PgDatabase::connect_with_replicas(
        &primary,
        &[named(&replica, &one), named(&replica, &two)],
        options().with_replica_wait(Duration::from_secs(5)),
    )
    .unwrap();
    let store = database
        .open(&fresh_scope("robin"), StoreConfig::default(), clock())
        .unwrap();
    store.add(vec![fact("x", "y", "z", 1, 0)]).unwrap();
    for _ in 0..20 {
        assert_eq!(history(&store, "x"), ["z"]);
    }
    let stats = database.replica_stats();
    assert_eq!(stats.replica_reads, 20, "{stats:?}");
    assert_eq!(sessions(&replica, &one).len(), 1);
    assert_eq!(sessions(&replica, &two).len(), 1);
}

#[test]
fn a_malformed_replica_url_is_refused_before_any_connection() {
    let error = PgDatabase::new_with_replicas(
        "postgres://u@127.0.0.1:1/db",
        &["postgres://u:secret@127.0.0.1:notaport/db"],
        PgOptions::default(),
    )
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("not a PostgreSQL URL"), "{message}");
    assert!(!message.contains("secret"), "{message}");
}

/// Reads are answered the same however they are routed: a statistics snapshot of a
/// database without replicas stays at zero.
#[test]
fn without_replicas_every_read_is_the_primarys() {
    let Some((primary, _)) = servers() else {
        return;
    };
    let database = PgDatabase::connect_with(&primary, options()).unwrap();
    let store = database
        .open(&fresh_scope("plain"), StoreConfig::default(), clock())
        .unwrap();
    store.add(vec![fact("p", "q", "r", 1, 0)]).unwrap();
    assert_eq!(history(&store, "p"), ["r"]);
    assert_eq!(database.replica_stats(), ReplicaStats::default());
    assert_eq!(database.replicas().count(), 0);
}

//! A stress loop over a store's lock protocol, for each backend's tests to run: many short rounds in which 2 to 4
//! threads add, invalidate, search and snapshot one store at once, each round checked
//! against the store's documented invariants afterwards.
//!
//! What each store's lock protects: the in-memory store's `RwLock<State>` (reads in
//! parallel, writes one at a time, the term index and the version chains under the same
//! lock); the SQLite store's `Mutex` around its connection and search cache, and between
//! two connections to one file the `BEGIN IMMEDIATE` transactions and the cache reload
//! when the other connection has written (the threads of a round share two connections,
//! and a third one checks). PostgreSQL (when `FACTMEM_PG_URL` is set) runs fewer rounds:
//! its protocol, the scope row lock, is a server's.
//!
//! Every thread of a round owns the keys of its own subject and races the others on one
//! shared key with a distinct `valid_from` each, so the final state does not depend on the
//! interleaving: the temporal rule keeps the newest `valid_from` valid whatever the
//! arrival order (an older fact arrives already superseded). The checks are the store's
//! invariants (the valid facts of a key come from one batch, at most one valid version of
//! an id, a successor has the superseded fact's key), no lost write (every version any
//! thread stored is there, with the history of every subject complete), and
//! read-your-writes inside each thread. Threads yield between operations in a pattern
//! that changes from round to round, so the rounds interleave differently.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use crate::{SessionFactStore, Snapshot, StoreConfig, TermQuery};
use fact_model::{FactId, ManualClock, SessionFact, SourceRole, Tag};

use super::fixture::{Overlap, t};

/// The time explicit invalidations are dated by (the stores' manual clock).
const NOW_SECS: i64 = 100;

/// No compaction: every version written stays, so "no lost write" can be counted.
pub fn config() -> StoreConfig {
    StoreConfig::default().with_auto_compact(false)
}

/// A fact of round `round`, from thread `thread`, valid from `t(secs)`.
fn fact(subject: &str, relation: &str, object: &str, thread: usize, secs: i64) -> SessionFact {
    SessionFact::builder(subject, relation, object)
        .tag(Tag::Decision)
        .source(format!("w{thread}"), SourceRole::Implementer)
        .valid_from(t(secs))
        .build()
        .unwrap()
}

/// The subject a thread owns in a round; one analyzer term, so a search finds it.
fn own_subject(round: usize, thread: usize) -> String {
    format!("zq{round}x{thread}")
}

/// The subject every thread of a round writes.
fn shared_subject(round: usize) -> String {
    format!("zs{round}")
}

/// Yields when bit `step` of the round's pattern is set, so rounds interleave differently.
fn maybe_yield(pattern: usize, step: usize) {
    if (pattern >> step) & 1 == 1 {
        std::thread::yield_now();
    }
}

/// What one thread does in one round, checking what it can see of its own writes;
/// whether its shared fact arrived after a newer one (the threads ran out of order).
fn work(store: &dyn SessionFactStore, round: usize, thread: usize) -> bool {
    let pattern = round
        .wrapping_mul(2_654_435_761)
        .rotate_left(thread as u32 * 5);
    let own = own_subject(round, thread);
    let open = fact(&own, "state", "open", thread, 0);
    let note = fact(&own, "note", "kept", thread, 0);
    // The shared key: thread n's version is valid from t(1 + n), so the last thread's wins.
    let shared = fact(
        &shared_subject(round),
        "status",
        &format!("from{thread}"),
        thread,
        1 + thread as i64,
    );
    maybe_yield(pattern, 0);
    let report = store
        .add(vec![open.clone(), note.clone(), shared.clone()])
        .unwrap();
    // The shared fact is stored either way: new, or already superseded by a newer one.
    assert_eq!(
        report.added.len() + report.arrived_superseded.len(),
        3,
        "round {round} thread {thread}: {report:?}"
    );
    assert!(report.skipped.is_empty());
    let out_of_order = report.arrived_superseded == [shared.id()];
    maybe_yield(pattern, 1);
    // Read-your-writes: what this thread stored is there and found.
    assert!(store.get(open.id()).unwrap().is_some_and(|f| f.is_valid()));
    let found = store.search(&TermQuery::new(&own, 10), &Overlap).unwrap();
    let mut found: Vec<FactId> = found.iter().map(|s| s.fact.id()).collect();
    found.sort_unstable();
    let mut expected = vec![open.id(), note.id()];
    expected.sort_unstable();
    assert_eq!(found, expected, "round {round} thread {thread}: search");
    maybe_yield(pattern, 2);
    // Only this thread writes its own key: the invalidation ends exactly its fact.
    assert_eq!(store.invalidate(&own, "state").unwrap(), [open.id()]);
    maybe_yield(pattern, 3);
    let snapshot = store.export_snapshot().unwrap();
    check_snapshot(&snapshot, round);
    let in_snapshot = |id: FactId| {
        snapshot
            .records
            .iter()
            .filter(|r| r.fact.id() == id)
            .map(|r| r.fact.is_valid())
            .collect::<Vec<bool>>()
    };
    assert_eq!(
        in_snapshot(open.id()),
        [false],
        "round {round} thread {thread}"
    );
    assert_eq!(
        in_snapshot(note.id()),
        [true],
        "round {round} thread {thread}"
    );
    assert_eq!(in_snapshot(shared.id()).len(), 1);
    maybe_yield(pattern, 4);
    let closed = fact(&own, "state", "closed", thread, 200);
    let report = store.add(vec![closed.clone()]).unwrap();
    assert_eq!(report.added, [closed.id()]);
    assert!(report.invalidated.is_empty(), "the key had no valid fact");
    out_of_order
}

/// The invariants a snapshot of any store holds at any instant.
pub fn check_snapshot(snapshot: &Snapshot, round: usize) {
    let mut key_batches: HashMap<(&str, &str), u64> = HashMap::new();
    let mut valid_versions: HashMap<FactId, usize> = HashMap::new();
    let mut keys_of: HashMap<FactId, (&str, &str)> = HashMap::new();
    for record in &snapshot.records {
        let f = &record.fact;
        keys_of.insert(f.id(), (f.subject(), f.relation()));
        if f.is_valid() {
            let batch = *key_batches
                .entry((f.subject(), f.relation()))
                .or_insert(record.batch);
            assert_eq!(
                batch,
                record.batch,
                "round {round}: key ({}, {}) has valid facts of two batches",
                f.subject(),
                f.relation()
            );
            *valid_versions.entry(f.id()).or_default() += 1;
        }
    }
    assert!(
        valid_versions.values().all(|n| *n == 1),
        "round {round}: an id with two valid versions"
    );
    for record in &snapshot.records {
        let f = &record.fact;
        if let Some(by) = f.superseded_by() {
            assert_eq!(
                keys_of.get(&by),
                Some(&(f.subject(), f.relation())),
                "round {round}: {} superseded by a fact of another key",
                f.id()
            );
        }
    }
}

/// Checks the store after a round of `threads` threads: nothing lost, history complete,
/// the shared key decided by `valid_from` alone. `stored_before` is the store's count
/// before the round.
fn check_round(store: &dyn SessionFactStore, round: usize, threads: usize, stored_before: usize) {
    // Four versions per thread: open, note, shared, closed.
    assert_eq!(
        store.stored_count().unwrap(),
        stored_before + 4 * threads,
        "round {round}: a write was lost"
    );
    for thread in 0..threads {
        let own = own_subject(round, thread);
        let history = store.history(&own).unwrap();
        let lines: Vec<(String, bool)> = history
            .iter()
            .map(|f| (format!("{} {}", f.relation(), f.object()), f.is_valid()))
            .collect();
        let mut lines = lines;
        lines.sort();
        assert_eq!(
            lines,
            [
                ("note kept".to_owned(), true),
                ("state closed".to_owned(), true),
                ("state open".to_owned(), false),
            ],
            "round {round} thread {thread}"
        );
        let open = history.iter().find(|f| f.object() == "open").unwrap();
        assert_eq!(open.valid_to(), Some(t(NOW_SECS)));
        assert_eq!(
            open.superseded_by(),
            None,
            "an explicit invalidation names no successor"
        );
    }
    let shared = store.history(&shared_subject(round)).unwrap();
    assert_eq!(shared.len(), threads, "round {round}: shared history");
    let valid: Vec<&SessionFact> = shared.iter().filter(|f| f.is_valid()).collect();
    assert_eq!(valid.len(), 1, "round {round}: {shared:?}");
    assert_eq!(valid[0].object(), format!("from{}", threads - 1));
    for f in shared.iter().filter(|f| !f.is_valid()) {
        // Ended by a newer version of the key, whichever arrived when.
        let to = f.valid_to().unwrap();
        assert!(to > f.valid_from() && to <= t(threads as i64));
        assert!(f.superseded_by().is_some());
    }
    // The other connection sees the round's writes through its own search cache.
    let found = store
        .search(&TermQuery::new(&shared_subject(round), 10), &Overlap)
        .unwrap();
    assert_eq!(
        found.len(),
        1,
        "round {round}: only the valid shared fact is found"
    );
    assert_eq!(found[0].fact.id(), valid[0].id());
}

/// A round's stores: the checker's view and the threads' views.
pub type Views = (Arc<dyn SessionFactStore>, Vec<Arc<dyn SessionFactStore>>);

/// Runs `rounds` rounds of 2, 3 or 4 threads. `stores(round)` gives, per round, the
/// checker's view and the threads' views of one store (the same object or several
/// connections to it); threads are reused across rounds and start each round together.
/// Returns how many rounds were checked, and in how many a shared fact arrived after a
/// newer one (evidence that the threads really ran in changing orders).
pub fn stress(rounds: usize, stores: &dyn Fn(usize) -> Views) -> (usize, usize) {
    const MAX_THREADS: usize = 4;
    let checked = AtomicUsize::new(0);
    let reordered = AtomicUsize::new(0);
    // The current round's views, handed to the workers between the barriers.
    let current: std::sync::Mutex<Vec<Arc<dyn SessionFactStore>>> =
        std::sync::Mutex::new(Vec::new());
    let start = Barrier::new(MAX_THREADS + 1);
    let end = Barrier::new(MAX_THREADS + 1);
    std::thread::scope(|scope| {
        for worker in 0..MAX_THREADS {
            let (current, start, end, reordered) = (&current, &start, &end, &reordered);
            scope.spawn(move || {
                for round in 0..rounds {
                    start.wait();
                    let threads = 2 + round % 3;
                    if worker < threads {
                        let views = current.lock().unwrap().clone();
                        let store = views[worker % views.len()].clone();
                        if work(&*store, round, worker) {
                            reordered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    end.wait();
                }
            });
        }
        for round in 0..rounds {
            let (checker, views) = stores(round);
            let before = checker.stored_count().unwrap();
            *current.lock().unwrap() = views;
            start.wait();
            end.wait();
            check_round(&*checker, round, 2 + round % 3, before);
            checked.fetch_add(1, Ordering::Relaxed);
        }
    });
    (checked.into_inner(), reordered.into_inner())
}

/// A manual clock at the time explicit invalidations are dated by.
pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(t(NOW_SECS)))
}

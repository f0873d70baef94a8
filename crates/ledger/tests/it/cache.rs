//! The ledger cache: hits without reading, rehash on mtime only, rebuild on content, and
//! stale ledgers that say so.

use std::fs::File;
use std::time::{Duration, SystemTime};

use ledger::{Freshness, LedgerCache, LedgerError};

use super::temp_dir;

fn write(path: &std::path::Path, text: &str, mtime_secs: u64) {
    std::fs::write(path, text).unwrap();
    set_mtime(path, mtime_secs);
}

fn set_mtime(path: &std::path::Path, secs: u64) {
    let file = File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs))
        .unwrap();
}

#[test]
fn hit_rehash_rebuild_and_stale() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    let cache = LedgerCache::default();
    write(&path, "- [ ] 1. First\n", 1);

    let (first, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!((freshness, cache.rebuilds()), (Freshness::Rebuilt, 1));

    let (again, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!(freshness, Freshness::Hit);
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "a hit returns the same ledger"
    );

    set_mtime(&path, 2);
    let (rehashed, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!((freshness, cache.rebuilds()), (Freshness::Rehashed, 1));
    assert_eq!(rehashed.tasks(), first.tasks());
    assert_ne!(rehashed.fingerprint().mtime, first.fingerprint().mtime);
    assert_eq!(cache.load("spec", &path).unwrap().1, Freshness::Hit);

    write(&path, "- [x] 1. First\n", 3);
    let (rebuilt, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!((freshness, cache.rebuilds()), (Freshness::Rebuilt, 2));
    assert_eq!(rebuilt.totals().completed, 1);

    write(&path, "no tasks at all\n", 4);
    let failure = cache.load("spec", &path).unwrap_err();
    assert!(
        matches!(failure.error, LedgerError::NoTasks { .. }),
        "{failure:?}"
    );
    assert_eq!(
        failure.stale.as_deref(),
        Some(&*rebuilt),
        "the last good ledger, marked stale"
    );
    assert!(failure.to_string().contains("returned as stale"));

    std::fs::remove_file(&path).unwrap();
    let failure = cache.load("spec", &path).unwrap_err();
    assert!(matches!(
        failure.error,
        LedgerError::MissingTasksFile { .. }
    ));
    assert!(failure.stale.is_some());
}

#[test]
fn a_first_load_that_fails_has_no_stale_ledger() {
    let dir = temp_dir();
    let failure = LedgerCache::default()
        .load("spec", &dir.path().join("tasks.md"))
        .unwrap_err();
    assert!(failure.stale.is_none());
    assert!(!failure.to_string().contains("stale"));
}

#[test]
fn a_same_size_edit_in_the_same_clock_tick_is_not_missed() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    let cache = LedgerCache::default();
    std::fs::write(&path, "- [ ] 1. First\n").unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let (first, _) = cache.load("spec", &path).unwrap();
    assert_eq!(first.totals().pending, 1);
    // Too fresh to trust: read and hashed again, the same ledger.
    let (again, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!(freshness, Freshness::Rehashed);
    assert_eq!(again.tasks(), first.tasks());
    // Same size, same mtime (as a write within one tick leaves it): still seen.
    std::fs::write(&path, "- [x] 1. First\n").unwrap();
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (edited, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!((freshness, cache.rebuilds()), (Freshness::Rebuilt, 2));
    assert_eq!(edited.totals().completed, 1);
}

#[test]
fn a_file_with_a_future_mtime_is_never_trusted() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    let cache = LedgerCache::default();
    std::fs::write(&path, "- [ ] 1. First\n").unwrap();
    let future = SystemTime::now() + Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(future)
        .unwrap();
    cache.load("spec", &path).unwrap();
    assert_eq!(cache.load("spec", &path).unwrap().1, Freshness::Rehashed);
}

#[test]
fn size_and_mtime_are_trusted_once_the_file_has_settled_on_the_cache_clock() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    write(&path, "- [ ] 1. First\n", 10);
    let mtime = fact_model::Timestamp::from_unix_secs(1_700_000_010).unwrap();
    let clock = std::sync::Arc::new(fact_model::ManualClock::new(
        mtime.checked_add(Duration::from_secs(1)).unwrap(),
    ));
    let cache = LedgerCache::with_clock(clock.clone());
    assert_eq!(cache.load("spec", &path).unwrap().1, Freshness::Rebuilt);
    // One second after the mtime: too fresh, hashed again.
    assert_eq!(cache.load("spec", &path).unwrap().1, Freshness::Rehashed);
    // Two seconds after: the read that settles it still hashes, the next one trusts it.
    clock.advance(Duration::from_secs(1));
    assert_eq!(cache.load("spec", &path).unwrap().1, Freshness::Rehashed);
    assert_eq!(cache.load("spec", &path).unwrap().1, Freshness::Hit);
    assert_eq!(cache.rebuilds(), 1);
}

//! What only the durable store has: reopening a file, scopes sharing one file, files that
//! are not (or not yet) fact stores, read-only files, episodes, several connections
//! writing at once, and the stores of many scopes sharing one database's connections. (Migrations from older schemas are tested in `src/sqlite/tests.rs`,
//! which can build a database with the statements of each older version.)

use std::path::Path;
use std::sync::Arc;

use fact_model::{FactId, FactSelector, ManualClock, ProfileField};
use fact_store::{
    AliasChange, Episode, EpisodeStore, LongTermStore, MemoryWrite, MessageQuery, ProfileEntry,
    SessionFactStore, StoreConfig, StoreError, TermQuery,
};
use fact_store_sqlite::{SqliteDatabase, SqliteFactStore, SqliteOptions};
use proptest::prelude::*;

use super::{fact, t};
use crate::{Overlap, durable};

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(t(0)))
}

fn open(path: &Path, scope: &str, clock: &Arc<ManualClock>) -> SqliteFactStore {
    SqliteFactStore::open(path, scope, StoreConfig::default(), clock.clone()).unwrap()
}

fn search(store: &dyn SessionFactStore, text: &str) -> Vec<(String, f64)> {
    let query = TermQuery::default().with_limit(10);
    crate::search(store, text, query)
}

#[test]
fn a_reopened_file_holds_everything_and_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    let before = {
        let store = open(&path, "spec:todo-api", &clock);
        store
            .add(vec![
                fact("task:1", "requires", "parser", 1, 0),
                fact("task:1", "requires", "docs", 1, 0),
            ])
            .unwrap();
        store
            .add(vec![fact("src/parser.rs", "modified_by", "task:1", 1, 5)])
            .unwrap();
        store
            .add(vec![fact("task:1", "completed_with", "blocked", 1, 6)])
            .unwrap();
        store
            .add(vec![fact("task:1", "completed_with", "completed", 1, 9)])
            .unwrap();
        let found = search(&store, "parser docs");
        assert_eq!(found.len(), 3);
        (
            store.export_snapshot().unwrap(),
            store.valid_count().unwrap(),
            store.stored_count().unwrap(),
            found,
        )
    };
    let store = open(&path, "spec:todo-api", &clock);
    assert_eq!(store.export_snapshot().unwrap(), before.0);
    assert_eq!(
        (store.valid_count().unwrap(), store.stored_count().unwrap()),
        (before.1, before.2)
    );
    assert_eq!(search(&store, "parser docs"), before.3);
    assert_eq!(store.history("task:1").unwrap().len(), 4);
    assert_eq!(store.valid_at(t(7)).unwrap()[3].object(), "blocked");
    // Batches carry on: this batch is later than the one that added both requirements,
    // so it ends both; the stored batch numbers keep growing.
    let report = store
        .add(vec![fact("task:1", "requires", "nothing", 1, 10)])
        .unwrap();
    assert_eq!(report.invalidated.len(), 2);
    let batches: Vec<u64> = store
        .export_snapshot()
        .unwrap()
        .records
        .iter()
        .map(|r| r.batch)
        .collect();
    assert_eq!(batches, [1, 1, 2, 3, 4, 5]);
    assert_eq!(search(&store, "docs"), []);
    assert_eq!(search(&store, "nothing")[0].0, "task:1 requires nothing");
}

#[test]
fn scopes_of_one_file_see_nothing_of_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    let spec = open(&path, "spec:todo-api", &clock);
    let alice = open(&path, "user:alice", &clock);
    spec.add(vec![
        fact("task:1", "summary", "parser work", 1, 0),
        fact("task:1", "requires", "lexer", 1, 0),
        fact("src/a.rs", "issue", "no tests", 1, 0),
    ])
    .unwrap();
    alice
        .add(vec![fact("task:1", "summary", "parser preference", 1, 0)])
        .unwrap();
    // Same key in another scope: nothing invalidated across.
    let report = alice
        .add(vec![fact("task:1", "requires", "coffee", 1, 5)])
        .unwrap();
    assert!(report.invalidated.is_empty());
    assert_eq!(
        (spec.valid_count().unwrap(), alice.valid_count().unwrap()),
        (3, 2)
    );
    assert_eq!(
        (spec.stored_count().unwrap(), alice.stored_count().unwrap()),
        (3, 2)
    );
    assert_eq!(spec.history("task:1").unwrap().len(), 2);
    assert_eq!(alice.history("task:1").unwrap().len(), 2);
    assert_eq!(search(&spec, "parser").len(), 1);
    assert_eq!(
        search(&alice, "parser")[0].0,
        "task:1 summary parser preference"
    );
    assert!(search(&alice, "lexer tests").is_empty());
    assert_eq!(alice.valid_at(t(10)).unwrap().len(), 2);
    assert_eq!(alice.export_snapshot().unwrap().records.len(), 2);
    // An id both scopes hold: each scope's own version.
    let lexer = FactId::for_triple("task:1", "requires", "lexer");
    assert!(alice.get(lexer).unwrap().is_none());
    assert!(matches!(
        alice.delete(lexer),
        Err(StoreError::NotFound { .. })
    ));
    // Invalidation without a subject, and compaction, stay in their scope.
    let ended = alice
        .invalidate_matching(&FactSelector {
            subject: None,
            relation: "summary".into(),
            source_task_id: None,
        })
        .unwrap();
    assert_eq!(ended.len(), 1);
    assert_eq!(spec.valid_count().unwrap(), 3);
    let report = spec.compact(1).unwrap();
    assert!(report.merged + report.dropped_valid.len() > 0);
    assert_eq!(alice.valid_count().unwrap(), 1);
    assert_eq!(alice.history("task:1").unwrap().len(), 2);
    // Episodes too.
    let at = t(0);
    spec.put_episode(&Episode::new(
        "Parser",
        "The parser is done.",
        durable::says("The parser is done."),
        at,
    ))
    .unwrap();
    assert!(alice.episodes().unwrap().is_empty());
    assert!(alice.search_episodes("parser", 5).unwrap().is_empty());
    assert_eq!(spec.search_episodes("parser", 5).unwrap().len(), 1);
    let parser = MessageQuery::new("parser", 5);
    assert!(alice.search_messages(&parser, &Overlap).unwrap().is_empty());
    assert_eq!(spec.search_messages(&parser, &Overlap).unwrap().len(), 1);
    // Aliases and the profile too.
    let mut write = MemoryWrite::default();
    write.aliases = vec![AliasChange::Set {
        alias: "mel".into(),
        entity: "melanie".into(),
        at,
    }];
    write.profile = vec![ProfileEntry {
        field: ProfileField::Work,
        text: "Nurse".into(),
        at,
    }];
    spec.commit(write).unwrap();
    assert!(alice.aliases().unwrap().is_empty());
    assert!(alice.profile_history().unwrap().is_empty());
    assert_eq!(spec.aliases().unwrap().len(), 1);
    assert_eq!(alice.fact_ids_from_source("1").unwrap().len(), 2);
}

#[test]
fn a_text_file_is_corrupt_and_stays_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = "these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    let err = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock()).unwrap_err();
    assert_eq!(err.code(), "corrupt", "{err}");
    assert!(
        matches!(&err, StoreError::Corrupt { path: p, .. } if *p == path),
        "{err:?}"
    );
    assert!(err.to_string().contains("notes.txt"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

/// Writes a big-endian `u32` into the SQLite header of a closed database file.
fn patch_header(path: &Path, offset: usize, value: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset..offset + 4].copy_from_slice(&value.to_be_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    drop(open(&path, "s", &clock()));
    // `PRAGMA user_version` is the big-endian u32 at offset 60 of the header.
    let newer = SqliteFactStore::SCHEMA_VERSION + 1;
    patch_header(&path, 60, newer);
    let before = std::fs::read(&path).unwrap();
    let err = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock()).unwrap_err();
    match &err {
        StoreError::NewerSchema {
            path: p,
            found,
            supported,
        } => {
            assert_eq!(
                (p, *found, *supported),
                (&path, newer, SqliteFactStore::SCHEMA_VERSION)
            );
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert_eq!(err.code(), "newer_schema");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is untouched"
    );
}

#[test]
fn a_database_of_another_application_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    drop(open(&path, "s", &clock()));
    // `PRAGMA application_id` is the big-endian u32 at offset 68.
    patch_header(&path, 68, 0x1234);
    let before = std::fs::read(&path).unwrap();
    let err = SqliteFactStore::open(&path, "s", StoreConfig::default(), clock()).unwrap_err();
    assert_eq!(err.code(), "corrupt", "{err}");
    assert!(err.to_string().contains("another application"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_read_only_store_reads_and_refuses_writes_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    open(&path, "s", &clock)
        .add(vec![fact("a", "r", "o", 1, 0)])
        .unwrap();
    let options = SqliteOptions::default().with_read_only(true);
    let store = SqliteFactStore::open_with(
        &path,
        "s",
        StoreConfig::default(),
        options.clone(),
        clock.clone(),
    )
    .unwrap();
    assert_eq!(store.valid_count().unwrap(), 1);
    assert_eq!(search(&store, "o").len(), 1);
    let err = store.add(vec![fact("b", "r", "o", 1, 1)]).unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
    let err = store
        .put_episode(&Episode::new("x", "y", durable::says("z"), t(0)))
        .unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
    assert_eq!(store.valid_count().unwrap(), 1);
    // A scope the file lacks cannot be created read-only.
    let err = SqliteFactStore::open_with(&path, "other", StoreConfig::default(), options, clock)
        .unwrap_err();
    assert_eq!(err.code(), "io", "{err}");
}

/// The environment variable that names the folder of
/// [`a_file_without_write_permission_gives_a_typed_error_on_write`] in the unprivileged
/// child that test starts when it runs as root.
#[cfg(unix)]
const UNPRIVILEGED_DIR: &str = "FACTMEM_TEST_UNPRIVILEGED_DIR";

/// The user and group the root case runs as: `nobody`/`nogroup` (through `setpriv`, which
/// needs no entry in `/etc/passwd`).
#[cfg(unix)]
const NOBODY: u32 = 65534;

/// In `dir`, which this process may write: a store with one fact, its file made 0444, then
/// opened again and written: a typed `io` error, at the open or at the write.
#[cfg(unix)]
fn write_permission_is_refused_in(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("facts.db");
    let clock = clock();
    open(&path, "s", &clock)
        .add(vec![fact("a", "r", "o", 1, 0)])
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert!(
        std::fs::OpenOptions::new().write(true).open(&path).is_err(),
        "permissions do not bind this process: nothing would be tested"
    );
    match SqliteFactStore::open(&path, "s", StoreConfig::default(), clock) {
        Err(err) => assert_eq!(err.code(), "io", "{err}"),
        Ok(store) => {
            assert_eq!(store.valid_count().unwrap(), 1);
            let err = store.add(vec![fact("b", "r", "o", 1, 1)]).unwrap_err();
            assert_eq!(err.code(), "io", "{err}");
        }
    }
}

/// A file without write permission: opening it or writing it is a typed `io` error. Root,
/// whom permissions do not bind, runs the case in a child process of this test binary as
/// `nobody` (through `setpriv`, as `facts/tests/hostile.rs` does), in a folder that user
/// owns; without `setpriv` the test says why it cannot run, and fails under `CI=true`.
#[cfg(unix)]
#[test]
fn a_file_without_write_permission_gives_a_typed_error_on_write() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;
    if let Some(dir) = std::env::var_os(UNPRIVILEGED_DIR) {
        // The child: run the case in the folder the parent made.
        write_permission_is_refused_in(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    std::fs::write(&probe, b"").unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o444)).unwrap();
    let bound = std::fs::OpenOptions::new()
        .append(true)
        .open(&probe)
        .is_err();
    std::fs::remove_file(&probe).unwrap();
    if bound {
        write_permission_is_refused_in(dir.path());
        return;
    }
    // Root: the same case as `nobody`, in a child process.
    if Command::new("setpriv").arg("--version").output().is_err() {
        let message = "a file without write permission: cannot run as an unprivileged \
                       user, running as root without `setpriv` (util-linux)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        eprintln!("skipped: {message}");
        return;
    }
    let folder = dir.path().join("nobody");
    std::fs::create_dir(&folder).unwrap();
    std::os::unix::fs::chown(&folder, Some(NOBODY), Some(NOBODY)).unwrap();
    // The temporary folder is root's and 0700: `nobody` may pass through it, no more.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let nobody = NOBODY.to_string();
    let output = Command::new("setpriv")
        .args(["--reuid", &nobody, "--regid", &nobody, "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sqlite::only::a_file_without_write_permission_gives_a_typed_error_on_write",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(UNPRIVILEGED_DIR, &folder)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the case as nobody failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // The filter matched this one test, and it ran.
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the case did not run as nobody:\n{stdout}\n{stderr}"
    );
    // What `nobody` could not write is as it was.
    assert_eq!(
        open(&folder.join("facts.db"), "s", &clock())
            .valid_count()
            .unwrap(),
        1
    );
}

#[test]
fn every_read_of_tables_gone_is_an_error_not_an_empty_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let store = open(&path, "s", &clock());
    durable::add_embedded_facts(&store);
    // The store has prepared its statements and loaded its search and vector caches.
    durable::assert_reads_answer(&store);
    // Another connection takes the tables the reads use away, after the store opened.
    let other = rusqlite::Connection::open(&path).unwrap();
    let rename = |from: &str, to: &str| {
        other
            .execute_batch(&format!("ALTER TABLE {from} RENAME TO {to}"))
            .unwrap();
    };
    let tables = ["facts", "scopes", "embeddings"];
    for table in tables {
        rename(table, &format!("gone_{table}"));
    }
    // `no such table: facts`: SQLite's generic error.
    durable::assert_every_read_fails(&store, "backend");
    let err = store.valid_facts().unwrap_err();
    assert!(err.to_string().contains("no such table"), "{err}");
    // Nothing was lost: with the tables back, the same store answers as before.
    for table in tables {
        rename(&format!("gone_{table}"), table);
    }
    durable::assert_reads_answer(&store);
}

#[test]
fn episodes_are_stored_searched_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("facts.db"), "user:alice", &clock());
    durable::episodes_are_stored_searched_and_marked(&store);
}

#[test]
fn two_connections_writing_one_file_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    let stores: Vec<SqliteFactStore> = (0..2)
        .map(|_| {
            SqliteFactStore::open(&path, "spec:shared", durable::roomy(), clock.clone()).unwrap()
        })
        .collect();
    durable::writers_on_several_stores_lose_nothing(&stores, 2, 100);
}

#[test]
fn a_search_cache_follows_writes_of_other_connections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    let reader = open(&path, "s", &clock);
    let writer = open(&path, "s", &clock);
    durable::a_search_cache_follows_writes_of_another_store(&reader, &writer, clock);
}

#[test]
fn opening_with_another_analyzer_reindexes_the_scope() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock: Arc<ManualClock> = clock();
    let stemmed = open(&path, "s", &clock);
    stemmed
        .add(vec![fact("task:1", "summary", "parsing parsers", 1, 0)])
        .unwrap();
    assert_eq!(search(&stemmed, "parse").len(), 1);
    drop(stemmed);
    let plain_config = StoreConfig::default()
        .with_analyzer(fact_store::AnalyzerConfig::default().with_stemming(false));
    let plain = SqliteFactStore::open(&path, "s", plain_config, clock.clone()).unwrap();
    assert!(search(&plain, "parse").is_empty());
    assert_eq!(search(&plain, "parsers").len(), 1);
    let reference = fact_store::InMemorySessionFactStore::new(plain_config, clock.clone());
    reference.import(plain.export_snapshot().unwrap()).unwrap();
    assert_eq!(
        search(&plain, "parsing task summary"),
        search(&reference, "parsing task summary")
    );
}

#[test]
fn embeddings_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    durable::embeddings_survive_reopening(Box::new(open(&path, "s", &clock)), || {
        Box::new(open(&path, "s", &clock))
    });
}

#[test]
fn nearest_follows_embeddings_of_other_connections() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    let reader = open(&path, "s", &clock);
    let writer = open(&path, "s", &clock);
    durable::nearest_follows_embeddings_of_another_store(&reader, &writer);
}

#[test]
fn scopes_of_one_file_do_not_see_each_other_s_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    durable::scopes_do_not_see_each_other_s_vectors(
        &open(&path, "a", &clock),
        &open(&path, "b", &clock),
    );
}

#[test]
fn another_connection_sees_messages_aliases_and_profile() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    let clock = clock();
    durable::another_store_sees_long_term_writes(
        &open(&path, "user:alice", &clock),
        &open(&path, "user:alice", &clock),
    );
}

#[test]
fn the_stores_of_many_scopes_share_the_connections_of_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let database = SqliteDatabase::new(dir.path().join("facts.db"), SqliteOptions::default());
    let clock = clock();
    let stores: Vec<SqliteFactStore> = (0..200)
        .map(|n| {
            let store = database
                .open(&format!("user:{n}"), StoreConfig::default(), clock.clone())
                .unwrap();
            store
                .add(vec![fact(
                    &format!("user:{n}"),
                    "likes",
                    &format!("tea{n}"),
                    1,
                    0,
                )])
                .unwrap();
            store
        })
        .collect();
    for (n, store) in stores.iter().enumerate() {
        // Each scope sees its own fact only (the search loads its cache on the same
        // connection, given back in between).
        let found = search(store, &format!("tea{n} tea{}", (n + 1) % 200));
        assert_eq!(found.len(), 1, "scope {n}: {found:?}");
        assert_eq!(store.valid_count().unwrap(), 1);
        assert_eq!(store.driver().database().path(), database.path());
    }
    // Operations one after the other: one connection served the 200 stores.
    assert_eq!(database.opened_connections(), 1);
    assert_eq!(database.idle_connections(), 1);
}

#[test]
fn a_database_refuses_a_newer_schema_for_every_store_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("facts.db");
    drop(open(&path, "spec:a", &clock()));
    patch_header(&path, 60, SqliteFactStore::SCHEMA_VERSION + 1);
    let before = std::fs::read(&path).unwrap();
    let database = SqliteDatabase::new(&path, SqliteOptions::default());
    for scope in ["spec:a", "spec:b"] {
        let error = database
            .open(scope, StoreConfig::default(), clock())
            .unwrap_err();
        assert!(
            matches!(error, StoreError::NewerSchema { found, .. } if found == SqliteFactStore::SCHEMA_VERSION + 1),
            "{error:?}"
        );
    }
    assert_eq!(database.idle_connections(), 0);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Threads writing and searching the stores of several scopes of one database at once.
/// Returns the database once every thread is done.
fn write_at_once(
    threads: usize,
    idle: usize,
    batches: usize,
) -> (tempfile::TempDir, SqliteDatabase) {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions::default().with_idle_connections(idle);
    let database = SqliteDatabase::new(dir.path().join("facts.db"), options);
    let clock = clock();
    std::thread::scope(|s| {
        for thread in 0..threads {
            let (database, clock) = (&database, &clock);
            s.spawn(move || {
                // Two threads per scope: a scope's store is shared as a server shares it.
                let scope = format!("tenant:{}", thread / 2);
                let store = database
                    .open(&scope, StoreConfig::default(), clock.clone())
                    .unwrap();
                for batch in 0..batches {
                    let subject = format!("task:{thread}-{batch}");
                    store
                        .add(vec![fact(&subject, "requires", "parser", 1, batch as i64)])
                        .unwrap();
                    assert!(!search(&store, "parser").is_empty());
                }
            });
        }
    });
    (dir, database)
}

#[test]
fn operations_at_once_open_more_connections_and_keep_only_the_idle_limit() {
    let (_dir, database) = write_at_once(6, 2, 20);
    assert!(database.idle_connections() <= 2);
    assert!(database.opened_connections() >= 1);
    // Every write of every thread is there, in its own scope.
    for scope in 0..3 {
        let store = database
            .open(&format!("tenant:{scope}"), StoreConfig::default(), clock())
            .unwrap();
        assert_eq!(store.valid_count().unwrap(), 2 * 20, "tenant:{scope}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// However many operations run at once, a database keeps at most its idle limit of
    /// connections open between them (at least one), and loses no write.
    #[test]
    fn a_database_keeps_at_most_its_idle_limit_and_loses_no_write(
        threads in 1usize..6,
        idle in 0usize..4,
        batches in 1usize..6,
    ) {
        let (_dir, database) = write_at_once(threads, idle, batches);
        prop_assert!(database.idle_connections() <= idle.max(1));
        prop_assert!(database.idle_connections() >= 1);
        let mut stored = 0;
        for scope in 0..threads.div_ceil(2) {
            let store = database
                .open(&format!("tenant:{scope}"), StoreConfig::default(), clock())
                .unwrap();
            stored += store.valid_count().unwrap();
        }
        prop_assert_eq!(stored, threads * batches);
    }
}

#[test]
fn searches_of_one_store_run_beside_each_other_and_beside_its_writes() {
    let dir = tempfile::tempdir().unwrap();
    let database = SqliteDatabase::new(dir.path().join("facts.db"), SqliteOptions::default());
    let clock = clock();
    let store = database
        .open("spec:shared", StoreConfig::default(), clock.clone())
        .unwrap();
    // Enough facts that a search takes a while: searches of four threads overlap.
    for start in (0..4000).step_by(200) {
        let batch = (start..start + 200)
            .map(|n| {
                fact(
                    &format!("file:{n}"),
                    "requires",
                    &format!("parser w{}", n % 50),
                    1,
                    0,
                )
            })
            .collect();
        store.add(batch).unwrap();
    }
    assert!(!search(&store, "parser w7").is_empty());
    let barrier = std::sync::Barrier::new(5);
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (store, barrier) = (&store, &barrier);
            s.spawn(move || {
                barrier.wait();
                // The writer only adds facts holding `marker`: what a search finds of
                // them never shrinks, whichever snapshot it reads.
                let mut seen = 0;
                for n in 0..300 {
                    assert!(!search(store, &format!("parser w{}", n % 50)).is_empty());
                    let marked = search(store, "marker").len();
                    assert!(marked >= seen, "{marked} after {seen}");
                    seen = marked;
                }
            });
        }
        let (store, barrier) = (&store, &barrier);
        s.spawn(move || {
            barrier.wait();
            for n in 0..40 {
                let subject = format!("task:{n}");
                store
                    .add(vec![fact(&subject, "completed_with", "marker", 2, n)])
                    .unwrap();
            }
        });
    });
    // Searches took connections of their own at once (one connection would have done
    // for searches one at a time).
    assert!(
        database.opened_connections() >= 2,
        "{}",
        database.opened_connections()
    );
    // And the store's cache answers as a store that loads the scope afresh.
    let fresh = SqliteFactStore::open(
        database.path(),
        "spec:shared",
        StoreConfig::default(),
        clock,
    )
    .unwrap();
    for text in ["marker", "parser w7 marker", "w3 w4"] {
        assert_eq!(search(&store, text), search(&fresh, text), "{text}");
    }
}

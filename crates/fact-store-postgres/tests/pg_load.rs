//! `PgFactStore` under load and faults: eight writer *processes* ingesting dispatch results
//! into one scope at once, then one writer for comparison, and the same eight writers
//! across a server restart.
//!
//! The parent test re-invokes this binary (`--exact writer_process`) once per writer, with
//! the scope, the writer's number, a deadline and a log file in `FACTMEM_PG_LOAD_*`
//! variables; `writer_process` does nothing without them. Each writer adds batches of 5–20
//! facts (one fact per `(subject, relation)` key, subjects shared by every writer, every
//! triple unique, plus one marker fact naming the batch) until the deadline, and logs every
//! batch as a JSON line: its facts, whether `add` acknowledged it (and its report) or failed
//! (and the error code), and the latency. Afterwards the parent checks the store against
//! the logs (see [`check`]).
//!
//! `FACTMEM_PG_LOAD_SECS` sets each load run's length (default 30 s; the restart run lasts
//! two thirds of it, 6–20 s). Needs `FACTMEM_PG_URL` (and `FACTMEM_PG_DIR` for the restart):
//! `eval "$(.ci/pg-server start)"`. Run with
//! `cargo test -p fact-store --features postgres --test pg_load -- --nocapture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fact_model::{FactId, SessionFact, SourceRole, SystemClock, Tag, Timestamp};
use fact_store::{SessionFactStore, SnapshotRecord, StoreConfig, TermQuery, TermWeighting};
use fact_store_postgres::{PgFactStore, PgOptions};
use serde_json::{Value, json};

/// The test that runs one writer in a child process.
const WRITER_TEST: &str = "writer_process";
const ENV_SCOPE: &str = "FACTMEM_PG_LOAD_SCOPE";
const ENV_WRITER: &str = "FACTMEM_PG_LOAD_WRITER";
const ENV_DEADLINE: &str = "FACTMEM_PG_LOAD_DEADLINE_MS";
const ENV_LOG: &str = "FACTMEM_PG_LOAD_LOG";
const ENV_CONNECT_TIMEOUT: &str = "FACTMEM_PG_LOAD_CONNECT_TIMEOUT_MS";

/// The load tests restart the server or measure throughput: never two at once.
static SERIAL: Mutex<()> = Mutex::new(());

/// `name`'s value; `None` outside CI when it is unset (after one message on stderr).
fn required_env(name: &str) -> Option<String> {
    if let Ok(value) = std::env::var(name)
        && !value.is_empty()
    {
        return Some(value);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{name} is not set under CI=true: start a server with \
         `eval \"$(.ci/pg-server start)\"` (.ci/run does)"
    );
    // One message per variable, straight to stderr: the test harness captures `eprintln!`.
    static REPORTED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut reported = REPORTED.lock().unwrap_or_else(PoisonError::into_inner);
    if !reported.iter().any(|r| r == name) {
        reported.push(name.to_owned());
        let _ = writeln!(
            std::io::stderr(),
            "{name} is not set: the PostgreSQL load tests are skipped; \
             `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
    }
    None
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap())
}

fn now() -> Timestamp {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap());
    Timestamp::from_unix_micros(micros).unwrap()
}

/// A scope no other run uses.
fn fresh_scope(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("test:pg_load:{name}:{}:{nanos}", std::process::id())
}

/// No compaction and no history limit: every version the writers add stays.
fn unbounded() -> StoreConfig {
    StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false)
}

fn load_secs() -> u64 {
    std::env::var("FACTMEM_PG_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
}

// ---- the writer process ------------------------------------------------------------------

/// SplitMix64: the batch contents are a function of (writer, batch number).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

const MODULES: u64 = 24;
const TASKS: u64 = 40;
/// The keys every writer shares: `src/module_N.rs` `modified_by` / `issue`, `task:N`
/// `completed_with`.
const KEYS: u64 = 2 * MODULES + TASKS;

/// One dispatch result of `writer`: a marker fact naming the batch, then 4–19 facts of
/// distinct shared keys, every triple unique to this batch.
fn dispatch_batch(writer: u64, n: u64) -> Vec<SessionFact> {
    let mut state = mix(writer << 32 | n);
    let count = 4 + state % 16;
    let at = now();
    let task = format!("w{writer}-{n}");
    let build = |subject: &str, relation: &str, object: &str, tag: Tag, role: SourceRole| {
        SessionFact::builder(subject, relation, object)
            .tag(tag)
            .source(&task, role)
            .valid_from(at)
            .build()
            .unwrap()
    };
    let mut facts = vec![build(
        &format!("batch:{task}"),
        "sent_by",
        &format!("writer {writer}"),
        Tag::Decision,
        SourceRole::Implementer,
    )];
    let mut keys = HashSet::new();
    while (keys.len() as u64) < count {
        state = mix(state);
        keys.insert(state % KEYS);
    }
    let mut keys: Vec<u64> = keys.into_iter().collect();
    keys.sort_unstable();
    for key in keys {
        let fact = if key < MODULES {
            build(
                &format!("src/module_{key}.rs"),
                "modified_by",
                &format!("task:{task}"),
                Tag::FileChange,
                SourceRole::Implementer,
            )
        } else if key < 2 * MODULES {
            let issue = ["missing tests", "unwrap in handler", "naming", "no docs"]
                [usize::try_from(key % 4).unwrap()];
            build(
                &format!("src/module_{}.rs", key - MODULES),
                "issue",
                &format!("{issue} (review {task})"),
                Tag::Error,
                SourceRole::Reviewer,
            )
        } else {
            let status = ["completed", "blocked", "partial"][usize::try_from(key % 3).unwrap()];
            build(
                &format!("task:{}", key - 2 * MODULES),
                "completed_with",
                &format!("{status} by {task}"),
                Tag::Decision,
                SourceRole::Implementer,
            )
        };
        facts.push(fact);
    }
    facts
}

fn ids(ids: &[FactId]) -> Value {
    ids.iter().map(ToString::to_string).collect()
}

/// One writer: runs only in a child process the parent started (the variables set).
#[test]
fn writer_process() {
    let Ok(scope) = std::env::var(ENV_SCOPE) else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap();
    let url = var("FACTMEM_PG_URL");
    let writer: u64 = var(ENV_WRITER).parse().unwrap();
    let deadline: u64 = var(ENV_DEADLINE).parse().unwrap();
    let connect_timeout = Duration::from_millis(var(ENV_CONNECT_TIMEOUT).parse().unwrap());
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(var(ENV_LOG))
        .unwrap();
    let options = PgOptions::default()
        .with_pool_size(1)
        .with_connect_timeout(connect_timeout);
    let store =
        PgFactStore::open_with(&url, &scope, unbounded(), options, Arc::new(SystemClock)).unwrap();
    let mut n = 0;
    while unix_ms() < deadline {
        let batch = dispatch_batch(writer, n);
        let facts: Vec<Value> = batch
            .iter()
            .map(|f| json!({"id": f.id().to_string(), "subject": f.subject(), "relation": f.relation()}))
            .collect();
        let started_ms = unix_ms();
        let clock = Instant::now();
        let result = store.add(batch);
        let latency_us = u64::try_from(clock.elapsed().as_micros()).unwrap();
        let mut line = json!({
            "writer": writer, "n": n, "facts": facts, "started_ms": started_ms,
            "ended_ms": unix_ms(), "latency_us": latency_us,
        });
        let failed = result.is_err();
        match result {
            Ok(report) => {
                line["ok"] = json!(true);
                line["added"] = ids(&report.added);
                line["refreshed"] = ids(&report.refreshed);
                line["invalidated"] = ids(&report.invalidated);
                line["arrived_superseded"] = ids(&report.arrived_superseded);
                line["skipped"] = json!(report.skipped.len());
            }
            Err(error) => {
                line["ok"] = json!(false);
                line["code"] = json!(error.code());
                line["error"] = json!(error.to_string());
            }
        }
        writeln!(log, "{line}").unwrap();
        if failed {
            // The server is away: do not spin.
            std::thread::sleep(Duration::from_millis(20));
        }
        n += 1;
    }
}

// ---- the parent ---------------------------------------------------------------------------

/// One logged batch.
#[derive(Debug)]
struct Batch {
    writer: u64,
    n: u64,
    /// Id, subject, relation.
    facts: Vec<(FactId, String, String)>,
    ok: bool,
    code: String,
    latency_us: u64,
    started_ms: u64,
    ended_ms: u64,
    added: Vec<FactId>,
    refreshed: Vec<FactId>,
    invalidated: Vec<FactId>,
    arrived_superseded: Vec<FactId>,
    skipped: u64,
}

fn parse_ids(value: &Value) -> Vec<FactId> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap().parse().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

fn parse_batch(line: &str) -> Batch {
    let v: Value = serde_json::from_str(line).unwrap();
    Batch {
        writer: v["writer"].as_u64().unwrap(),
        n: v["n"].as_u64().unwrap(),
        facts: v["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["id"].as_str().unwrap().parse().unwrap(),
                    f["subject"].as_str().unwrap().to_owned(),
                    f["relation"].as_str().unwrap().to_owned(),
                )
            })
            .collect(),
        ok: v["ok"].as_bool().unwrap(),
        code: v["code"].as_str().unwrap_or_default().to_owned(),
        latency_us: v["latency_us"].as_u64().unwrap(),
        started_ms: v["started_ms"].as_u64().unwrap(),
        ended_ms: v["ended_ms"].as_u64().unwrap(),
        added: parse_ids(&v["added"]),
        refreshed: parse_ids(&v["refreshed"]),
        invalidated: parse_ids(&v["invalidated"]),
        arrived_superseded: parse_ids(&v["arrived_superseded"]),
        skipped: v["skipped"].as_u64().unwrap_or(0),
    }
}

/// Runs `writers` writer processes on `scope` for `secs` seconds, calls `during` while they
/// run, and returns every writer's logged batches.
fn run_writers(
    scope: &str,
    writers: u64,
    secs: u64,
    connect_timeout: Duration,
    during: impl FnOnce(),
) -> Vec<Vec<Batch>> {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let deadline = unix_ms() + secs * 1000;
    let log = |w: u64| dir.path().join(format!("writer-{w}.jsonl"));
    let out = |w: u64| dir.path().join(format!("writer-{w}.out"));
    let children: Vec<_> = (0..writers)
        .map(|w| {
            let output = std::fs::File::create(out(w)).unwrap();
            let child = Command::new(&exe)
                .args(["--exact", WRITER_TEST, "--nocapture", "--test-threads", "1"])
                .env(ENV_SCOPE, scope)
                .env(ENV_WRITER, w.to_string())
                .env(ENV_DEADLINE, deadline.to_string())
                .env(ENV_LOG, log(w))
                .env(ENV_CONNECT_TIMEOUT, connect_timeout.as_millis().to_string())
                .stdin(Stdio::null())
                .stdout(output.try_clone().unwrap())
                .stderr(output)
                .spawn()
                .unwrap();
            (w, child)
        })
        .collect();
    during();
    for (w, mut child) in children {
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "writer {w} failed ({status}):\n{}",
            std::fs::read_to_string(out(w)).unwrap_or_default()
        );
    }
    (0..writers)
        .map(|w| {
            std::fs::read_to_string(log(w))
                .unwrap()
                .lines()
                .map(parse_batch)
                .collect()
        })
        .collect()
}

/// What the check found.
#[derive(Debug, Default)]
struct Checked {
    versions: usize,
    keys: usize,
    failed_applied: usize,
    failed_absent: usize,
}

/// Checks the store of `scope` against the writers' logs:
///
/// - every key has exactly one valid fact (the database's count per `(subject, relation)`
///   too), and the scope's counters match its rows;
/// - every fact of every acknowledged batch is stored, by one batch (one batch number), and
///   the report accounts for every fact of it (added or arrived superseded: the triples
///   are unique, so nothing is refreshed or skipped); every fact it reported invalidated
///   (or arrived superseded) has a `valid_to`;
/// - a failed batch is stored whole (its marker and every fact, by one batch) or not at
///   all;
/// - nothing is stored that no batch sent; each key holds as many versions as the logs
///   say were stored; every version but the valid one ended (`valid_to` and
///   `superseded_by` a version of the same key), and the valid one is the newest.
fn check(url: &str, scope: &str, logs: &[Vec<Batch>]) -> Checked {
    let store = PgFactStore::open_with(
        url,
        scope,
        unbounded(),
        PgOptions::default().with_pool_size(1),
        Arc::new(SystemClock),
    )
    .unwrap();
    let records = store.export_snapshot().unwrap().records;
    assert!(!records.is_empty(), "nothing stored in {scope}");
    let mut by_id: HashMap<FactId, &SnapshotRecord> = HashMap::new();
    for record in &records {
        let previous = by_id.insert(record.fact.id(), record);
        assert!(
            previous.is_none(),
            "{} stored twice (every triple is unique)",
            record.fact.id()
        );
    }

    // Batches that are stored: the acknowledged ones and the failed ones that committed.
    let mut checked = Checked::default();
    let mut expected: HashMap<FactId, (u64, u64)> = HashMap::new();
    let mut batch_numbers: HashMap<u64, (u64, u64)> = HashMap::new();
    for batch in logs.iter().flatten() {
        let name = (batch.writer, batch.n);
        let present: Vec<&SnapshotRecord> = batch
            .facts
            .iter()
            .filter_map(|(id, _, _)| by_id.get(id).copied())
            .collect();
        if batch.ok {
            assert_eq!(
                present.len(),
                batch.facts.len(),
                "acknowledged batch {name:?} lost facts"
            );
            assert!(
                batch.refreshed.is_empty() && batch.skipped == 0,
                "batch {name:?}: unique triples were refreshed or skipped"
            );
            let reported: HashSet<FactId> = batch
                .added
                .iter()
                .chain(&batch.arrived_superseded)
                .copied()
                .collect();
            let sent: HashSet<FactId> = batch.facts.iter().map(|f| f.0).collect();
            assert_eq!(reported, sent, "batch {name:?}: the report misses facts");
            for id in batch.invalidated.iter().chain(&batch.arrived_superseded) {
                let fact = &by_id
                    .get(id)
                    .unwrap_or_else(|| panic!("batch {name:?}: {id} not stored"))
                    .fact;
                assert!(
                    fact.valid_to().is_some(),
                    "batch {name:?}: {id} reported ended but is valid"
                );
            }
        } else if present.is_empty() {
            checked.failed_absent += 1;
            continue;
        } else {
            assert_eq!(
                present.len(),
                batch.facts.len(),
                "failed batch {name:?} ({}) half applied: {} of {} facts stored",
                batch.code,
                present.len(),
                batch.facts.len()
            );
            checked.failed_applied += 1;
        }
        let numbers: HashSet<u64> = present.iter().map(|r| r.batch).collect();
        assert_eq!(
            numbers.len(),
            1,
            "batch {name:?} stored by several batches: {numbers:?}"
        );
        let number = *numbers.iter().next().unwrap();
        if let Some(other) = batch_numbers.insert(number, name) {
            panic!("batches {other:?} and {name:?} both stored as batch {number}");
        }
        for (id, _, _) in &batch.facts {
            expected.insert(*id, name);
        }
    }

    // Nothing else is stored; versions per key as logged.
    for record in &records {
        assert!(
            expected.contains_key(&record.fact.id()),
            "{} stored but no stored batch sent it",
            record.fact.id()
        );
    }
    assert_eq!(expected.len(), records.len());
    let mut logged_versions: HashMap<(String, String), usize> = HashMap::new();
    for batch in logs.iter().flatten() {
        if expected.contains_key(&batch.facts[0].0) {
            for (_, subject, relation) in &batch.facts {
                *logged_versions
                    .entry((subject.clone(), relation.clone()))
                    .or_default() += 1;
            }
        }
    }
    let mut keys: BTreeMap<(&str, &str), Vec<&SessionFact>> = BTreeMap::new();
    for record in &records {
        keys.entry((record.fact.subject(), record.fact.relation()))
            .or_default()
            .push(&record.fact);
    }
    assert_eq!(keys.len(), logged_versions.len());
    for ((subject, relation), versions) in &keys {
        let key = (subject.to_string(), relation.to_string());
        assert_eq!(
            versions.len(),
            logged_versions[&key],
            "{key:?}: versions stored against versions logged"
        );
        let valid: Vec<&&SessionFact> =
            versions.iter().filter(|f| f.valid_to().is_none()).collect();
        assert_eq!(valid.len(), 1, "{key:?}: {} valid facts", valid.len());
        let ids: HashSet<FactId> = versions.iter().map(|f| f.id()).collect();
        let newest = versions.iter().map(|f| f.valid_from()).max().unwrap();
        assert_eq!(
            valid[0].valid_from(),
            newest,
            "{key:?}: the valid fact is not the newest"
        );
        for fact in versions.iter().filter(|f| f.valid_to().is_some()) {
            let by = fact.superseded_by();
            assert!(
                by.is_some_and(|by| ids.contains(&by)),
                "{key:?}: {} ended without a successor of its key ({by:?})",
                fact.id()
            );
            assert!(fact.valid_to() >= Some(fact.valid_from()));
        }
    }
    checked.versions = records.len();
    checked.keys = keys.len();

    // The database's own view, through a raw connection.
    let mut raw = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let scope_id: i64 = raw
        .query_one("SELECT id FROM factmem.scopes WHERE name = $1", &[&scope])
        .unwrap()
        .get(0);
    let doubled = raw
        .query(
            "SELECT subject, relation, count(*) FROM factmem.facts \
             WHERE scope = $1 AND valid_to IS NULL GROUP BY subject, relation HAVING count(*) > 1",
            &[&scope_id],
        )
        .unwrap();
    assert!(
        doubled.is_empty(),
        "{} keys with several valid facts",
        doubled.len()
    );
    let row = raw
        .query_one(
            "SELECT (SELECT count(*) FROM factmem.facts WHERE scope = $1 AND valid_to IS NULL), \
                    (SELECT count(*) FROM factmem.facts WHERE scope = $1), \
                    valid_count, stored_count FROM factmem.scopes WHERE id = $1",
            &[&scope_id],
        )
        .unwrap();
    let (valid, stored, valid_counter, stored_counter): (i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(
        (valid, stored),
        (valid_counter, stored_counter),
        "scope counters"
    );
    assert_eq!(usize::try_from(valid).unwrap(), checked.keys);
    assert_eq!(usize::try_from(stored).unwrap(), checked.versions);
    assert_eq!(store.valid_count().unwrap(), checked.keys);
    checked
}

/// Throughput and latency of one run.
#[derive(Debug)]
struct Figures {
    acked: usize,
    failed: usize,
    facts: usize,
    secs: f64,
    p50: f64,
    p95: f64,
    p99: f64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

fn figures(logs: &[Vec<Batch>]) -> Figures {
    let all: Vec<&Batch> = logs.iter().flatten().collect();
    let start = all.iter().map(|b| b.started_ms).min().unwrap();
    let end = all.iter().map(|b| b.ended_ms).max().unwrap();
    let mut latencies: Vec<u64> = all.iter().filter(|b| b.ok).map(|b| b.latency_us).collect();
    latencies.sort_unstable();
    Figures {
        acked: latencies.len(),
        failed: all.iter().filter(|b| !b.ok).count(),
        facts: all.iter().filter(|b| b.ok).map(|b| b.facts.len()).sum(),
        secs: (end - start) as f64 / 1000.0,
        p50: percentile(&latencies, 0.50),
        p95: percentile(&latencies, 0.95),
        p99: percentile(&latencies, 0.99),
    }
}

#[test]
fn eight_writer_processes_keep_the_invariants_and_lose_nothing() {
    let Some(url) = required_env("FACTMEM_PG_URL") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let secs = load_secs();
    let mut rows = Vec::new();
    for writers in [8, 1] {
        let scope = fresh_scope(&format!("writers{writers}"));
        // With 8 writers, a reader searches the scope all along: its search cache follows
        // the writers' commits row by row.
        let mut reader = None;
        let logs = run_writers(&scope, writers, secs, Duration::from_secs(5), || {
            if writers == 8 {
                reader = Some(read_while_writing(&url, &scope, secs));
            }
        });
        let checked = check(&url, &scope, &logs);
        if let Some((store, latencies)) = reader {
            // After the last commit, the followed cache answers as a store that loads the
            // scope afresh.
            let fresh =
                PgFactStore::open(&url, &scope, unbounded(), Arc::new(SystemClock)).unwrap();
            for text in READER_QUERIES {
                assert_eq!(
                    search_lines(&store, text),
                    search_lines(&fresh, text),
                    "{text}"
                );
            }
            println!(
                "search while {writers} writers write, {} searches: p50 {:.2} ms, p95 {:.2} ms, \
                 p99 {:.2} ms",
                latencies.len(),
                percentile(&latencies, 0.50),
                percentile(&latencies, 0.95),
                percentile(&latencies, 0.99)
            );
        }
        let figures = figures(&logs);
        println!(
            "{writers} writer(s), {secs} s on {scope}: {} batches acknowledged, {} failed; \
             {} versions of {} keys stored, every check passed",
            figures.acked, figures.failed, checked.versions, checked.keys
        );
        let failed: Vec<&Batch> = logs.iter().flatten().filter(|b| !b.ok).collect();
        assert!(
            failed.is_empty(),
            "batches failed without a fault: {failed:?}"
        );
        for (w, log) in logs.iter().enumerate() {
            assert!(
                log.iter().any(|b| b.ok),
                "writer {w} got nothing acknowledged"
            );
        }
        rows.push((writers, figures));
    }
    println!();
    println!("| writers | batches acknowledged | facts | batches/s | facts/s | p50 | p95 | p99 |");
    println!("|---|---|---|---|---|---|---|---|");
    for (writers, f) in &rows {
        println!(
            "| {writers} | {} | {} | {:.1} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms |",
            f.acked,
            f.facts,
            f.acked as f64 / f.secs,
            f.facts as f64 / f.secs,
            f.p50,
            f.p95,
            f.p99
        );
    }
}

/// Keyword overlap: each distinct query term a fact holds counts `1 / query terms`.
#[derive(Debug)]
struct Overlap;

impl TermWeighting for Overlap {
    fn term_weight(&self, _: usize, _: usize, query_terms: usize) -> f64 {
        1.0 / query_terms as f64
    }

    fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
        1.0
    }
}

/// The searches the reader runs while the writers write.
const READER_QUERIES: [&str; 3] = ["module issue", "task completed", "modified module"];

fn search_lines(store: &PgFactStore, text: &str) -> Vec<(String, u64)> {
    let query = TermQuery::new(text, 10);
    store
        .search(&query, &Overlap)
        .unwrap()
        .into_iter()
        .map(|s| (s.fact.id().to_string(), s.score.to_bits()))
        .collect()
}

/// Searches `scope` from its own store (its cache following the writers' commits) until
/// `deadline`; returns the latencies in µs, sorted.
fn read_while_writing(url: &str, scope: &str, secs: u64) -> (PgFactStore, Vec<u64>) {
    let store = PgFactStore::open(url, scope, unbounded(), Arc::new(SystemClock)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut latencies = Vec::new();
    let mut n = 0usize;
    while Instant::now() < deadline {
        let text = READER_QUERIES[n % READER_QUERIES.len()];
        let started = Instant::now();
        let _ = search_lines(&store, text);
        latencies.push(u64::try_from(started.elapsed().as_micros()).unwrap());
        n += 1;
        std::thread::sleep(Duration::from_millis(25));
    }
    latencies.sort_unstable();
    (store, latencies)
}

fn pg_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/pg-server")
}

#[test]
fn eight_writer_processes_survive_a_server_restart() {
    let Some(url) = required_env("FACTMEM_PG_URL") else {
        return;
    };
    let Some(pg_dir) = required_env("FACTMEM_PG_DIR") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let secs = (load_secs() * 2 / 3).clamp(6, 20);
    let scope = fresh_scope("restart");
    let mut restart = None;
    // A short connect timeout, so an add that finds the server down fails instead of waiting
    // for it.
    let logs = run_writers(&scope, 8, secs, Duration::from_millis(100), || {
        std::thread::sleep(Duration::from_millis(secs * 400));
        let started_ms = unix_ms();
        let status = Command::new("bash")
            .arg(pg_server_script())
            .args(["restart", &pg_dir])
            .status()
            .unwrap();
        assert!(status.success(), "pg-server restart failed: {status}");
        restart = Some((started_ms, unix_ms()));
    });
    let (restart_start, restart_end) = restart.unwrap();
    let checked = check(&url, &scope, &logs);
    let f = figures(&logs);
    println!(
        "restart run, {secs} s on {scope}: `pg-server restart` took {} ms, {} s into the run",
        restart_end - restart_start,
        (restart_start - logs.iter().flatten().map(|b| b.started_ms).min().unwrap()) / 1000
    );
    println!(
        "{} batches acknowledged, {} failed ({} of them committed all the same, {} not at all); \
         {} versions of {} keys stored, every check passed",
        f.acked,
        f.failed,
        checked.failed_applied,
        checked.failed_absent,
        checked.versions,
        checked.keys
    );
    println!();
    let mut outages = Vec::new();
    println!("| writer | acknowledged | failed | error codes | first failure → first success |");
    println!("|---|---|---|---|---|");
    for (w, log) in logs.iter().enumerate() {
        let acked = log.iter().filter(|b| b.ok).count();
        let failures: Vec<&Batch> = log.iter().filter(|b| !b.ok).collect();
        let codes: BTreeMap<&str, usize> = failures.iter().fold(BTreeMap::new(), |mut m, b| {
            *m.entry(b.code.as_str()).or_default() += 1;
            m
        });
        let first_failure = failures.first().map(|b| b.ended_ms);
        let recovered = first_failure.and_then(|at| {
            log.iter()
                .find(|b| b.ok && b.started_ms >= at)
                .map(|b| b.ended_ms - at)
        });
        println!(
            "| {w} | {acked} | {} | {codes:?} | {} |",
            failures.len(),
            recovered.map_or("never".to_owned(), |ms| format!("{ms} ms"))
        );
        outages.extend(recovered);
        assert!(
            !failures.is_empty(),
            "writer {w} saw no failed batch across the restart"
        );
        assert!(
            recovered.is_some(),
            "writer {w} never got a batch acknowledged after its first failure"
        );
    }
    println!(
        "the restart as the writers saw it (first failure to first success): {} to {} ms",
        outages.iter().min().unwrap(),
        outages.iter().max().unwrap()
    );
}

//! The runtime shared by threads, as an async orchestrator shares it: compile-time proof
//! that the runtime, the memory service and every store are `Send + Sync`, and eight
//! threads ingesting and compiling at once giving the results of a sequential run, on the
//! in-memory store, on SQLite, and on PostgreSQL when `FACTMEM_PG_URL` is set (under
//! `CI=true` it must be).
//!
//! # What "the same results" means here
//!
//! Each thread drives tasks of a spec of its own (`own0` … `own7`) and two tasks of one
//! spec every thread shares (`shared`, task `2i+1` and `2i+2` for thread `i`). Every
//! task's steps run in order on one thread, and every fact a step writes is keyed by its
//! task or by a file only that task touches, so no two threads ever write one
//! `(subject, relation)`: the temporal rules then decide each key from that key's own
//! writes, and the final state does not depend on how the threads interleaved. The clock
//! is a manual clock that never moves, so every instant is the same in every run.
//!
//! So against a sequential run (thread 0's steps, then thread 1's, …) on a fresh runtime
//! and store of the same kind:
//!
//! - every response of every step is equal, except the parts of a `compile_prompt` for
//!   the shared spec that retrieve other threads' facts (the `[Session Context]` section
//!   and what derives from it: the prompt, its hash and token count, the fact ids): which
//!   of another thread's facts exist at that instant depends on the interleaving; the
//!   same holds for `query_facts` on the shared spec. For those the test checks that
//!   every fact id named is a fact of the shared spec (none crossed from another spec);
//! - every spec's store holds the same versions (id, content, validity, successor), in
//!   the same order for the per-thread specs; the shared spec's batch numbers and record
//!   order follow the interleaving, so it is compared as a sorted set without them;
//! - every run's task ledger (revision, status, facts, history) and the fact counts of the
//!   telemetry are equal.
//!
//! The concurrent run is repeated, each time a new interleaving: 10 times on the
//! in-memory store, 3 on SQLite, once on PostgreSQL.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
    MemoryService, RuntimeBuilder, StoreFactory,
};
use fact_model::{Clock, ManualClock, SourceRole};
use fact_retrieve::FactQuery;
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig, StoreResult};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Compile-time: the shared types are `Send + Sync`, and so are the trait objects the
/// runtime holds them as. (A type that is not makes this file fail to compile.)
#[allow(dead_code)]
fn shared_types_are_send_and_sync() {
    fn check<T: Send + Sync + ?Sized>() {}
    check::<DispatchRuntimeManager>();
    check::<RuntimeBuilder>();
    check::<MemoryService>();
    check::<InMemorySessionFactStore>();
    check::<fact_store::InMemoryEpisodeStore>();
    check::<dyn SessionFactStore>();
    check::<Arc<dyn SessionFactStore>>();
    check::<Box<dyn SessionFactStore>>();
    check::<dyn fact_store::EpisodeStore>();
    check::<dyn fact_store::FactVectors>();
    check::<dyn fact_retrieve::FactRetriever>();
    check::<dyn fact_model::TokenCounter>();
    check::<dyn fact_extract::FactExtractor>();
    check::<dyn fact_extract::ConversationExtractor>();
    check::<dyn Clock>();
    check::<StoreFactory>();
    #[cfg(feature = "sqlite")]
    check::<fact_store_sqlite::SqliteFactStore>();
    #[cfg(feature = "postgres")]
    check::<fact_store_postgres::PgFactStore>();
}

const THREADS: usize = 8;
/// Tasks of each thread's own spec.
const OWN_TASKS: usize = 3;
/// Tasks of the shared spec each thread drives.
const SHARED_PER_THREAD: usize = 2;

/// The project: `own0` … `own7` with three tasks each, `shared` with sixteen.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    let mut specs: Vec<(String, usize)> = (0..THREADS)
        .map(|i| (format!("own{i}"), OWN_TASKS))
        .collect();
    specs.push(("shared".into(), THREADS * SHARED_PER_THREAD));
    for (spec, tasks) in specs {
        let folder = dir.path().join(".spec-context/specs").join(&spec);
        std::fs::create_dir_all(&folder).unwrap();
        let text: String = (1..=tasks)
            .map(|n| {
                format!(
                    "- [ ] {n}. Task {n} of {spec}\n  - _Prompt: Implement part {n} of {spec} \
                     in src/{spec}/t{n}.rs_\n"
                )
            })
            .collect();
        std::fs::write(folder.join("tasks.md"), text).unwrap();
    }
    dir
}

/// One call a thread makes.
#[derive(Debug, Clone)]
enum Step {
    Init,
    Compile(SourceRole),
    Implement,
    Review { approve: bool },
    History,
    Query,
}

/// The steps of one task, in order.
fn task_steps() -> Vec<Step> {
    vec![
        Step::Init,
        Step::Compile(SourceRole::Implementer),
        Step::Implement,
        Step::Compile(SourceRole::Reviewer),
        Step::Review { approve: false },
        Step::Compile(SourceRole::Implementer),
        Step::Implement,
        Step::Review { approve: false },
        Step::Compile(SourceRole::Reviewer),
        Step::Review { approve: true },
        Step::History,
        Step::Query,
    ]
}

/// Thread `i`'s program: `(spec, task, step)` in order, alternating between its own spec
/// and the shared one.
fn program(thread: usize) -> Vec<(String, String, Step)> {
    let mut tasks = Vec::new();
    for n in 1..=OWN_TASKS {
        tasks.push((format!("own{thread}"), n.to_string()));
        if n <= SHARED_PER_THREAD {
            let shared = thread * SHARED_PER_THREAD + n;
            tasks.push(("shared".to_owned(), shared.to_string()));
        }
    }
    tasks
        .into_iter()
        .flat_map(|(spec, task)| {
            task_steps()
                .into_iter()
                .map(move |step| (spec.clone(), task.clone(), step))
        })
        .collect()
}

/// The file a task of a spec touches: only that task writes facts about it.
fn file(spec: &str, task: &str) -> String {
    format!("src/{spec}/t{task}.rs")
}

fn output(result: &Value) -> String {
    format!("Done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

/// Runs one step; the answer as JSON (`{"error": code}` for an error).
fn run_step(
    runtime: &DispatchRuntimeManager,
    dir: &Path,
    spec: &str,
    task: &str,
    step: &Step,
) -> Value {
    let run_id = format!("{spec}:{task}");
    let answer = match step {
        Step::Init => runtime
            .init_run(InitRunRequest::new(spec, task).with_project_path(dir.to_owned()))
            .map(
                |r| json!({"run_id": r.run_id, "active": r.active_task_id, "warnings": r.warnings}),
            ),
        Step::Compile(role) => runtime
            .compile_prompt(CompilePromptRequest::new(run_id, *role, task))
            .map(|r| serde_json::to_value(r).unwrap()),
        Step::Implement => {
            let result = json!({
                "task_id": task, "status": "completed",
                "summary": format!("part {task} of {spec} implemented"),
                "files_changed": [file(spec, task)],
                "tests": [{"command": format!("cargo test {spec}_t{task}"), "passed": true}],
            });
            runtime
                .ingest_output(IngestOutputRequest::new(
                    run_id,
                    SourceRole::Implementer,
                    task,
                    output(&result),
                ))
                .map(|r| serde_json::to_value(r).unwrap())
        }
        Step::Review { approve } => {
            let result = if *approve {
                json!({"task_id": task, "assessment": "approved"})
            } else {
                json!({"task_id": task, "assessment": "needs_changes",
                       "required_fixes": [format!("handle errors in {}", file(spec, task))],
                       "issues": [{"severity": "important", "file": file(spec, task),
                                   "message": format!("part {task} of {spec} ignores errors"),
                                   "fix": "return a typed error"}]})
            };
            runtime
                .ingest_output(IngestOutputRequest::new(
                    run_id,
                    SourceRole::Reviewer,
                    task,
                    output(&result),
                ))
                .map(|r| serde_json::to_value(r).unwrap())
        }
        Step::History => runtime
            .fact_history(spec, &file(spec, task))
            .map(|facts| serde_json::to_value(facts).unwrap()),
        Step::Query => runtime
            .query_facts(spec, &FactQuery::new(task, format!("part {task} errors")))
            .map(|r| {
                let ids: Vec<String> = r.facts.iter().map(|f| f.fact.id().to_string()).collect();
                json!({"ids": ids, "section": r.section})
            }),
    };
    answer.unwrap_or_else(|e| json!({"error": e.code(), "message": e.to_string()}))
}

/// What of an answer does not depend on the interleaving; the fact ids a shared-spec
/// prompt or query named go to `named`, to be checked against the shared store.
fn comparable(spec: &str, step: &Step, answer: &Value, named: &mut Vec<String>) -> Value {
    if spec != "shared" {
        return answer.clone();
    }
    let mut answer = answer.clone();
    match step {
        Step::Compile(_) => {
            let fields = answer.as_object_mut().unwrap();
            for id in fields["session_fact_ids"].as_array().unwrap() {
                named.push(id.as_str().unwrap().to_owned());
            }
            for field in [
                "prompt",
                "full_prompt_hash",
                "session_context",
                "session_fact_ids",
                "prompt_tokens",
                "compaction_stage",
            ] {
                fields.remove(field);
            }
        }
        Step::Query => {
            for id in answer["ids"].as_array().unwrap() {
                named.push(id.as_str().unwrap().to_owned());
            }
            answer = json!("query of the shared spec");
        }
        _ => {}
    }
    answer
}

/// A store factory that also keeps each spec's store, to read its state afterwards.
type Registry = Arc<Mutex<BTreeMap<String, Arc<dyn SessionFactStore>>>>;

type Open =
    Arc<dyn Fn(&str, Arc<dyn Clock>) -> StoreResult<Arc<dyn SessionFactStore>> + Send + Sync>;

fn runtime(open: Open) -> (DispatchRuntimeManager, Registry) {
    let registry: Registry = Arc::default();
    let kept = registry.clone();
    let stores: StoreFactory = Box::new(move |spec, clock| {
        let store = open(spec, clock)?;
        kept.lock().unwrap().insert(spec.to_owned(), store.clone());
        Ok(store)
    });
    let runtime = DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::new(
            "2026-11-25T09:00:00Z".parse().unwrap(),
        )))
        .stores(stores)
        .build();
    (runtime, registry)
}

/// Everything a run leaves behind, comparable between runs.
#[derive(Debug, PartialEq)]
struct Outcome {
    /// Per thread, the comparable answers of its steps in order.
    answers: Vec<Vec<Value>>,
    /// Per spec, its store's versions (for `shared`: sorted, without batch numbers).
    stores: BTreeMap<String, Vec<Value>>,
    /// Per run, its task ledger snapshot.
    ledgers: BTreeMap<String, Value>,
    /// Telemetry that counts rather than orders.
    counts: Value,
}

/// Runs every thread's program, concurrently or one thread after another, and checks
/// the fact ids shared-spec answers named.
fn drive(dir: &TempDir, open: Open, concurrent: bool) -> Outcome {
    let (runtime, registry) = runtime(open);
    let run_thread = |thread: usize| -> (Vec<Value>, Vec<String>) {
        let mut named = Vec::new();
        let answers = program(thread)
            .iter()
            .map(|(spec, task, step)| {
                let answer = run_step(&runtime, dir.path(), spec, task, step);
                assert!(
                    answer.get("error").is_none(),
                    "thread {thread} {spec}:{task} {step:?}: {answer}"
                );
                comparable(spec, step, &answer, &mut named)
            })
            .collect();
        (answers, named)
    };
    let results: Vec<(Vec<Value>, Vec<String>)> = if concurrent {
        let start = std::sync::Barrier::new(THREADS);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|thread| {
                    let (start, run_thread) = (&start, &run_thread);
                    scope.spawn(move || {
                        start.wait();
                        run_thread(thread)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    } else {
        (0..THREADS).map(run_thread).collect()
    };
    let registry = registry.lock().unwrap();
    let shared = &registry["shared"];
    let mut answers = Vec::new();
    for (thread_answers, named) in results {
        for id in named {
            // A fact a shared-spec answer named is a fact of the shared spec: no fact
            // crossed from another spec while the threads raced.
            assert!(
                shared.get(id.parse().unwrap()).unwrap().is_some(),
                "{id} is not a fact of the shared spec"
            );
        }
        answers.push(thread_answers);
    }
    let stores = registry
        .iter()
        .map(|(spec, store)| {
            let records = store.export_snapshot().unwrap().records;
            let mut versions: Vec<Value> = if spec == "shared" {
                records
                    .iter()
                    .map(|r| serde_json::to_value(&r.fact).unwrap())
                    .collect()
            } else {
                records
                    .iter()
                    .map(|r| serde_json::to_value(r).unwrap())
                    .collect()
            };
            if spec == "shared" {
                versions.sort_by_key(Value::to_string);
            }
            (spec.clone(), versions)
        })
        .collect();
    let mut ledgers = BTreeMap::new();
    for thread in 0..THREADS {
        for (spec, task, _) in program(thread) {
            let run_id = format!("{spec}:{task}");
            let snapshot = runtime.get_snapshot(&run_id).unwrap();
            ledgers.insert(run_id, serde_json::to_value(snapshot).unwrap());
        }
    }
    let telemetry = runtime.telemetry().unwrap();
    let counts = json!({
        "dispatch_count": telemetry.dispatch_count,
        "total_output_tokens": telemetry.total_output_tokens,
        "observation_tokens_ingested": telemetry.observation_tokens_ingested,
        "schema_error_counts": telemetry.schema_error_counts,
        "approval_loops": telemetry.approval_loops,
        "ledger_mode_usage": telemetry.ledger_mode_usage,
        "facts_stored": telemetry.facts_stored,
        "facts_valid": telemetry.facts_valid,
        "facts_invalidated": telemetry.facts_invalidated,
    });
    Outcome {
        answers,
        stores,
        ledgers,
        counts,
    }
}

/// Eight threads against a sequential run on stores `open` makes, `repeat` times (each a
/// new interleaving); `open` must give a fresh store for every call (a new scope for
/// durable stores).
fn check_concurrent_equals_sequential(open: Open, repeat: usize) {
    // One project for both runs: paths are part of the answers and the ledgers, and no
    // step edits the project's files.
    let dir = project();
    let sequential = drive(&dir, open.clone(), false);
    // Sanity: the workload did what it is meant to (facts in every spec, the reviews'
    // issues settled by the approvals, every run's ledger written).
    assert_eq!(sequential.stores.len(), THREADS + 1);
    assert!(sequential.stores.values().all(|v| v.len() > 5));
    assert_eq!(
        sequential.counts["dispatch_count"],
        (THREADS * (OWN_TASKS + SHARED_PER_THREAD) * 5) as u64
    );
    assert_eq!(
        sequential.ledgers.len(),
        THREADS * (OWN_TASKS + SHARED_PER_THREAD)
    );
    for _ in 0..repeat {
        let concurrent = drive(&dir, open.clone(), true);
        check_same(&concurrent, &sequential);
    }
}

/// A concurrent run's outcome against the sequential run's, naming the first difference.
fn check_same(concurrent: &Outcome, sequential: &Outcome) {
    assert_eq!(concurrent.counts, sequential.counts);
    for (run, ledger) in &sequential.ledgers {
        assert_eq!(
            concurrent.ledgers[run].to_string(),
            ledger.to_string(),
            "run {run}: the task ledger differs from the sequential run's"
        );
    }
    for spec in sequential.stores.keys() {
        assert_eq!(
            concurrent.stores[spec], sequential.stores[spec],
            "spec {spec}: the store differs from the sequential run's"
        );
    }
    for thread in 0..THREADS {
        for (n, (a, b)) in concurrent.answers[thread]
            .iter()
            .zip(&sequential.answers[thread])
            .enumerate()
        {
            assert_eq!(a, b, "thread {thread} step {n}: {:?}", program(thread)[n]);
        }
    }
    assert_eq!(concurrent, sequential);
}

#[test]
fn eight_threads_on_in_memory_stores_give_the_sequential_results() {
    let open: Open = Arc::new(|_spec, clock| {
        Ok(Arc::new(InMemorySessionFactStore::new(
            StoreConfig::default(),
            clock,
        )))
    });
    check_concurrent_equals_sequential(open, 10);
}

#[cfg(feature = "sqlite")]
#[test]
fn eight_threads_on_sqlite_stores_give_the_sequential_results() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    // One database file; each runtime's specs in scopes of their own.
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("facts.db");
    let runs = Arc::new(AtomicUsize::new(0));
    let open: Open = Arc::new(move |spec, clock| {
        let scope = format!("spec:{spec}:{}", runs.fetch_add(1, Ordering::Relaxed));
        Ok(Arc::new(fact_store_sqlite::SqliteFactStore::open(
            &path,
            &scope,
            StoreConfig::default(),
            clock,
        )?))
    });
    check_concurrent_equals_sequential(open, 3);
}

#[cfg(feature = "postgres")]
#[test]
fn eight_threads_on_postgres_stores_give_the_sequential_results() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let Some(url) = pg_server() else {
        return;
    };
    // A scope no earlier run of the tests used.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let prefix = format!("test:concurrency:{}:{nanos}", std::process::id());
    let runs = Arc::new(AtomicUsize::new(0));
    let open: Open = Arc::new(move |spec, clock| {
        let scope = format!("{prefix}:{spec}:{}", runs.fetch_add(1, Ordering::Relaxed));
        Ok(Arc::new(fact_store_postgres::PgFactStore::open(
            &url,
            &scope,
            StoreConfig::default(),
            clock,
        )?))
    });
    check_concurrent_equals_sequential(open, 1);
}

/// The server `FACTMEM_PG_URL` names; `None` (with one note) when it is unset, a failure
/// under `CI=true`.
#[cfg(feature = "postgres")]
pub(crate) fn pg_server() -> Option<String> {
    if let Ok(url) = std::env::var("FACTMEM_PG_URL")
        && !url.is_empty()
    {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_URL is not set under CI=true: start a server with \
         `eval \"$(.ci/pg-server start)\"` (.ci/run does)"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "FACTMEM_PG_URL is not set: the runtime's PostgreSQL concurrency test is skipped"
    );
    None
}

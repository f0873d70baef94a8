//! A run's life: `end_run` and the idle expiry drop a run (and only its task ledger; the
//! spec's facts stay), a request naming it afterwards is `run_not_initialized`, and the
//! runtime's memory does not grow with the runs and retrievals it served: retrieval times
//! go into a histogram whose percentiles stay within 1/128 of the exact ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, IngestStatus,
    InitRunRequest, RetrieverFactory, protocol,
};
use fact_model::{ManualClock, SourceRole};
use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever, Retrieval};
use fact_store::StoreError;
use serde_json::json;
use tempfile::TempDir;

/// A project whose spec `demo` has three tasks.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&folder).unwrap();
    let text: String = (1..=3)
        .map(|n| format!("- [ ] {n}. Task {n}\n  - _Prompt: Do task {n} in src/t{n}.rs_\n"))
        .collect();
    std::fs::write(folder.join("tasks.md"), text).unwrap();
    dir
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new("2026-11-26T09:00:00Z".parse().unwrap()))
}

fn implemented(runtime: &DispatchRuntimeManager, run: &str, task: &str) -> Result<(), String> {
    let result = json!({"task_id": task, "status": "completed",
        "summary": format!("task {task} done in src/t{task}.rs"),
        "files_changed": [format!("src/t{task}.rs")]});
    let output = format!("BEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n");
    runtime
        .ingest_output(IngestOutputRequest::new(
            run,
            SourceRole::Implementer,
            task,
            output,
        ))
        .map(|_| ())
        .map_err(|e| e.code().to_owned())
}

fn compiled(runtime: &DispatchRuntimeManager, run: &str, task: &str) -> Result<(), String> {
    runtime
        .compile_prompt(CompilePromptRequest::new(run, SourceRole::Reviewer, task))
        .map(|_| ())
        .map_err(|e| e.code().to_owned())
}

/// Every request that names a run, answered with its error code.
fn run_requests(runtime: &DispatchRuntimeManager, run: &str, task: &str) -> Vec<String> {
    vec![
        compiled(runtime, run, task).unwrap_err(),
        implemented(runtime, run, task).unwrap_err(),
        runtime.get_snapshot(run).unwrap_err().code().to_owned(),
        runtime.end_run(run).unwrap_err().code().to_owned(),
    ]
}

#[test]
fn an_ended_run_is_unknown_and_its_spec_keeps_its_facts() {
    let dir = project();
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock())
        .project_root(dir.path())
        .build();
    let run = runtime
        .init_run(InitRunRequest::new("demo", "1"))
        .unwrap()
        .run_id;
    implemented(&runtime, &run, "1").unwrap();
    let revision = runtime.get_snapshot(&run).unwrap().revision;

    let ended = runtime.end_run(&run).unwrap();
    assert_eq!(
        (
            ended.run_id.as_str(),
            ended.spec_name.as_str(),
            ended.task_id.as_str()
        ),
        ("demo:1", "demo", "1")
    );
    assert_eq!(ended.revision, revision);
    assert_eq!(ended.status, Some(IngestStatus::Recorded));
    assert_eq!(format!("{runtime:?}").matches("runs: 0").count(), 1);
    assert_eq!(
        run_requests(&runtime, &run, "1"),
        ["run_not_initialized"; 4],
        "every request naming an ended run"
    );
    let message = runtime.get_snapshot(&run).unwrap_err().to_string();
    assert!(message.contains("ended or expired"), "{message}");

    // The spec's facts stay; a run started again has a new task ledger.
    let facts = runtime
        .query_facts("demo", &FactQuery::new("2", "task 1 src/t1.rs"))
        .unwrap();
    assert!(!facts.facts.is_empty());
    let again = runtime
        .init_run(InitRunRequest::new("demo", "1"))
        .unwrap()
        .run_id;
    let snapshot = runtime.get_snapshot(&again).unwrap();
    assert_eq!(snapshot.status, None);
    assert!(
        snapshot.revision < revision,
        "{} {revision}",
        snapshot.revision
    );
}

#[test]
fn end_run_over_the_protocol_answers_the_run_and_then_run_not_initialized() {
    let dir = project();
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock())
        .project_root(dir.path())
        .build();
    let init = protocol::handle(
        &runtime,
        &json!({"action": "init_run", "spec_name": "demo", "task_id": "2"}),
    );
    assert!(protocol::is_success(&init), "{init}");
    let end = protocol::handle(
        &runtime,
        &json!({"action": "end_run", "id": 7, "run_id": "demo:2"}),
    );
    assert_eq!(
        end,
        json!({"ok": true, "id": 7, "run_id": "demo:2", "spec_name": "demo", "task_id": "2",
               "revision": init_revision(&runtime), "status": null})
    );
    let again = protocol::handle(&runtime, &json!({"action": "end_run", "run_id": "demo:2"}));
    assert_eq!(again["error"]["code"], "run_not_initialized", "{again}");
    let unknown_field = protocol::handle(
        &runtime,
        &json!({"action": "end_run", "run_id": "demo:2", "force": true}),
    );
    assert_eq!(unknown_field["error"]["code"], "invalid_request");
}

/// The revision a fresh run of `demo` task 2 starts with (its progress facts).
fn init_revision(runtime: &DispatchRuntimeManager) -> u64 {
    let run = runtime
        .init_run(InitRunRequest::new("demo", "2").with_run_id("probe"))
        .unwrap()
        .run_id;
    runtime.end_run(&run).unwrap().revision
}

#[test]
fn a_run_idle_longer_than_the_expiry_is_dropped_and_a_used_one_is_kept() {
    let dir = project();
    let clock = clock();
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock.clone())
        .project_root(dir.path())
        .run_expiry(Duration::from_secs(600))
        .build();
    let idle = runtime
        .init_run(InitRunRequest::new("demo", "1"))
        .unwrap()
        .run_id;
    let busy = runtime
        .init_run(InitRunRequest::new("demo", "2"))
        .unwrap()
        .run_id;
    implemented(&runtime, &idle, "1").unwrap();
    // Every request naming a run keeps it alive: `busy` is named every 5 minutes.
    for _ in 0..3 {
        clock.advance(Duration::from_secs(300));
        compiled(&runtime, &busy, "2").unwrap();
    }
    // `idle` was last named 15 minutes ago: expired, so unknown, to every request.
    assert_eq!(
        run_requests(&runtime, &idle, "1"),
        ["run_not_initialized"; 4]
    );
    runtime.get_snapshot(&busy).unwrap();
    // Exactly at the expiry a run is still there; past it, it is not.
    clock.advance(Duration::from_secs(600));
    runtime.get_snapshot(&busy).unwrap();
    clock.advance(Duration::from_micros(600_000_001));
    assert_eq!(
        runtime.get_snapshot(&busy).unwrap_err().code(),
        "run_not_initialized"
    );
    // The expired run's spec keeps the facts its run ingested.
    let facts = runtime
        .query_facts("demo", &FactQuery::new("3", "task 1 src/t1.rs"))
        .unwrap();
    assert!(!facts.facts.is_empty());
}

#[test]
fn expired_runs_leave_the_runtime_even_when_nobody_names_them_again() {
    let dir = project();
    let clock = clock();
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock.clone())
        .project_root(dir.path())
        .run_expiry(Duration::from_secs(60))
        .build();
    for n in 0..1_000 {
        runtime
            .init_run(InitRunRequest::new("demo", "1").with_run_id(format!("run-{n}")))
            .unwrap();
        clock.advance(Duration::from_secs(1));
    }
    // Each init_run dropped the runs idle for more than a minute: 61 are left, not 1,000.
    let debug = format!("{runtime:?}");
    assert!(debug.contains("runs: 61,"), "{debug}");
    // Without an expiry, runs stay until they are ended.
    let keeps = DispatchRuntimeManager::builder()
        .clock(clock.clone())
        .project_root(dir.path())
        .build();
    keeps.init_run(InitRunRequest::new("demo", "1")).unwrap();
    clock.advance(Duration::from_secs(365 * 24 * 3600));
    keeps.get_snapshot("demo:1").unwrap();
}

/// A retriever that makes each retrieval take a given time, by moving the manual clock.
#[derive(Debug)]
struct Timed {
    inner: IndexRetriever,
    clock: Arc<ManualClock>,
    calls: Arc<AtomicU64>,
}

/// How long retrieval `n` takes, in microseconds: spread over five orders of magnitude.
fn took(n: u64) -> u64 {
    (n * 7_919 % 1_000 + 1) * [1, 10, 100, 1_000][(n % 4) as usize]
}

impl FactRetriever for Timed {
    fn retrieve(&self, query: &FactQuery) -> Result<Retrieval, StoreError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        self.clock.advance(Duration::from_micros(took(n)));
        self.inner.retrieve(query)
    }
}

#[test]
fn retrieval_percentiles_are_within_1_in_128_of_the_exact_ones() {
    let dir = project();
    let clock = clock();
    let calls = Arc::new(AtomicU64::new(0));
    let (timed_clock, counted) = (clock.clone(), calls.clone());
    let retrievers: RetrieverFactory = Box::new(move |store, counter| {
        Box::new(Timed {
            inner: IndexRetriever::new(store).with_counter(counter),
            clock: timed_clock.clone(),
            calls: counted.clone(),
        })
    });
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock)
        .retrievers(retrievers)
        .project_root(dir.path())
        .build();
    let before = runtime.telemetry().unwrap();
    assert_eq!(
        (before.retrieval_p50_us, before.retrieval_p99_us),
        (0.0, 0.0)
    );
    let run = runtime
        .init_run(InitRunRequest::new("demo", "1"))
        .unwrap()
        .run_id;
    implemented(&runtime, &run, "1").unwrap();
    const COMPILES: u64 = 2_000;
    for _ in 0..COMPILES {
        compiled(&runtime, &run, "1").unwrap();
    }
    assert_eq!(calls.load(Ordering::Relaxed), COMPILES);
    let mut exact: Vec<u64> = (0..COMPILES).map(took).collect();
    exact.sort_unstable();
    let telemetry = runtime.telemetry().unwrap();
    for (estimate, quantile) in [
        (telemetry.retrieval_p50_us, 0.5),
        (telemetry.retrieval_p99_us, 0.99),
    ] {
        let exact = exact[(COMPILES as f64 * quantile) as usize] as f64;
        assert!(
            (estimate - exact).abs() <= exact / 128.0,
            "p{quantile}: {estimate} against {exact}"
        );
    }
}

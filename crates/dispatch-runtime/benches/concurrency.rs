//! The runtime shared by threads on PostgreSQL: eight specs, each driven through the
//! orchestrator's loop, by eight threads at once (one spec each) or by one thread doing the
//! same work spec after spec. Run with
//! `cargo bench -p dispatch-runtime --features postgres --bench concurrency` against the
//! server `FACTMEM_PG_URL` names (`eval "$(.ci/pg-server start)"` starts one on loopback);
//! without it, it prints a skip message and runs nothing.
//!
//! One sample is the whole work: for each of the 8 specs, 3 tasks of 12 requests each
//! (`init_run`; implementer prompt, result; reviewer prompt, review asking for changes;
//! implementer prompt, result; review asking for changes; reviewer prompt, approval;
//! `fact_history`; `query_facts`), 288 requests with 120 store transactions. divan's
//! counter gives requests/s; the throughput of `threads = 8` over that of `threads = 1` is
//! what the runtime's locking lets eight sessions gain over one.
//!
//! Every sample gets a fresh runtime and fresh scopes (`bench:concurrency:*`, left on the
//! server), their stores opened before the clock starts, so the time is the requests', not
//! the connections'.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest, StoreFactory,
};
use divan::Bencher;
use divan::counter::ItemsCount;
use fact_model::{ManualClock, SourceRole};
use fact_retrieve::FactQuery;
use fact_store::{SessionFactStore, StoreConfig};
use fact_store_postgres::PgFactStore;
use serde_json::{Value, json};
use tempfile::TempDir;

const SPECS: usize = 8;
const TASKS: usize = 3;
const STEPS_PER_TASK: usize = 12;

fn main() {
    if url().is_none() {
        eprintln!(
            "FACTMEM_PG_URL is not set: the runtime's PostgreSQL concurrency benchmark is \
             skipped; `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
        return;
    }
    divan::main();
}

fn url() -> Option<String> {
    std::env::var("FACTMEM_PG_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

/// The project: specs `s0` … `s7` with three tasks each.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    for spec in 0..SPECS {
        let spec = format!("s{spec}");
        let folder = dir.path().join(".spec-context/specs").join(&spec);
        std::fs::create_dir_all(&folder).unwrap();
        let text: String = (1..=TASKS)
            .map(|n| {
                format!(
                    "- [ ] {n}. Task {n} of {spec}\n  - _Prompt: Implement part {n} of {spec} \
                     in src/{spec}/t{n}.rs with retries and typed errors_\n"
                )
            })
            .collect();
        std::fs::write(folder.join("tasks.md"), text).unwrap();
    }
    dir
}

fn output(result: &Value) -> String {
    format!("Done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

/// Drives every task of `spec` through the loop.
fn drive_spec(runtime: &DispatchRuntimeManager, dir: &Path, spec: &str) {
    for n in 1..=TASKS {
        let task = n.to_string();
        let file = format!("src/{spec}/t{task}.rs");
        let run = runtime
            .init_run(InitRunRequest::new(spec, task.clone()).with_project_path(dir))
            .unwrap()
            .run_id;
        let compile = |role| {
            runtime
                .compile_prompt(CompilePromptRequest::new(run.clone(), role, task.clone()))
                .unwrap();
        };
        let implement = || {
            let result = json!({
                "task_id": task, "status": "completed",
                "summary": format!("part {task} of {spec} implemented"),
                "files_changed": [file],
                "tests": [{"command": format!("cargo test {spec}_t{task}"), "passed": true}],
            });
            runtime
                .ingest_output(IngestOutputRequest::new(
                    run.clone(),
                    SourceRole::Implementer,
                    task.clone(),
                    output(&result),
                ))
                .unwrap();
        };
        let review = |approve: bool, round: usize| {
            let result = if approve {
                json!({"task_id": task, "assessment": "approved"})
            } else {
                json!({"task_id": task, "assessment": "needs_changes",
                       "required_fixes": [format!("handle errors in {file} ({round})")],
                       "issues": [{"severity": "important", "file": file,
                                   "message": format!("part {task} of {spec} ignores errors"),
                                   "fix": "return a typed error"}]})
            };
            runtime
                .ingest_output(IngestOutputRequest::new(
                    run.clone(),
                    SourceRole::Reviewer,
                    task.clone(),
                    output(&result),
                ))
                .unwrap();
        };
        compile(SourceRole::Implementer);
        implement();
        compile(SourceRole::Reviewer);
        review(false, 1);
        compile(SourceRole::Implementer);
        implement();
        review(false, 2);
        compile(SourceRole::Reviewer);
        review(true, 3);
        runtime.fact_history(spec, &file).unwrap();
        runtime
            .query_facts(spec, &FactQuery::new(task.clone(), "errors retries"))
            .unwrap();
    }
}

/// A fresh runtime whose specs' stores are already connected to fresh scopes.
fn runtime(run: usize) -> DispatchRuntimeManager {
    let url = url().unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let clock = Arc::new(ManualClock::new("2026-11-25T09:00:00Z".parse().unwrap()));
    let opened: HashMap<String, Arc<dyn SessionFactStore>> = (0..SPECS)
        .map(|spec| {
            let scope = format!(
                "bench:concurrency:{}:{nanos}:{run}:s{spec}",
                std::process::id()
            );
            let store: Arc<dyn SessionFactStore> = Arc::new(
                PgFactStore::open(&url, &scope, StoreConfig::default(), clock.clone()).unwrap(),
            );
            (format!("s{spec}"), store)
        })
        .collect();
    let opened = Mutex::new(opened);
    let stores: StoreFactory = Box::new(move |spec, _clock| {
        Ok(opened
            .lock()
            .unwrap()
            .remove(spec)
            .expect("each spec's store is opened once"))
    });
    DispatchRuntimeManager::builder()
        .clock(clock)
        .stores(stores)
        .build()
}

/// The eight specs' work by `threads` threads (1: spec after spec on this thread; 8: one
/// spec per thread).
#[divan::bench(args = [1, 8], sample_count = 15, sample_size = 1)]
fn eight_specs_on_postgres(bencher: Bencher<'_, '_>, threads: usize) {
    let dir = project();
    let mut run = 0;
    bencher
        .counter(ItemsCount::new(SPECS * TASKS * STEPS_PER_TASK))
        .with_inputs(|| {
            run += 1;
            runtime(run)
        })
        .bench_local_values(|runtime| {
            if threads == 1 {
                for spec in 0..SPECS {
                    drive_spec(&runtime, dir.path(), &format!("s{spec}"));
                }
            } else {
                std::thread::scope(|scope| {
                    for spec in 0..SPECS {
                        let (runtime, dir) = (&runtime, dir.path());
                        scope.spawn(move || drive_spec(runtime, dir, &format!("s{spec}")));
                    }
                });
            }
            runtime
        });
}

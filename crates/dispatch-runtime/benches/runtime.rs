//! Runtime benchmarks: `compile_prompt` with about 500 facts in the spec's store, and
//! `ingest_output` of one workload result. Run with `cargo bench -p dispatch-runtime`.
//!
//! The store is filled by ingesting results of the shared dispatch workload
//! (`../shared/bench/`, ported in `fact-store/benches/support/workload.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../fact-store/benches/support/workload.rs"]
mod workload;

use std::path::PathBuf;
use std::sync::Arc;

use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
};
use divan::Bencher;
use fact_model::ManualClock;
use fact_model::SourceRole;

fn main() {
    divan::main();
}

/// A project whose spec `bench` has one task per workload task.
fn project(tasks: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("runtime-bench-{}", std::process::id()));
    let spec = dir.join(".spec-context/specs/bench");
    std::fs::create_dir_all(&spec).unwrap();
    let text: String = (1..=tasks)
        .map(|n| format!("- [ ] {n}. Implement part {n} of the parser store index\n  - _Prompt: Role: Developer | Task: Implement part {n} of the parser, store and index_\n"))
        .collect();
    std::fs::write(spec.join("tasks.md"), text).unwrap();
    dir
}

fn output(json: &impl serde::Serialize) -> String {
    format!(
        "Done.\nBEGIN_DISPATCH_RESULT\n{}\nEND_DISPATCH_RESULT\n",
        serde_json::to_string(json).unwrap()
    )
}

/// A runtime whose spec holds the facts of enough workload tasks for about 500 facts.
fn filled() -> (DispatchRuntimeManager, PathBuf, workload::Workload) {
    let workload = workload::generate(2_000, 10, 42);
    let dir = project(workload.tasks.len() + 1);
    let runtime = DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::default()))
        .build();
    for task in workload.tasks.iter().take(38) {
        let id = &task.implementer.task_id;
        let run = runtime
            .init_run(InitRunRequest::new("bench", id.clone()).with_project_path(dir.clone()))
            .unwrap()
            .run_id;
        for (role, text) in [
            (SourceRole::Implementer, output(&task.implementer)),
            (SourceRole::Reviewer, output(&task.reviewer)),
        ] {
            let request = IngestOutputRequest::new(run.clone(), role, id.clone(), text);
            runtime.ingest_output(request).unwrap();
        }
    }
    (runtime, dir, workload)
}

#[divan::bench(sample_count = 300)]
fn compile_prompt_with_500_facts(bencher: Bencher<'_, '_>) {
    let (runtime, dir, workload) = filled();
    let facts = runtime.telemetry().unwrap().facts_valid;
    assert!((450..=550).contains(&facts), "{facts} valid facts");
    let task = (workload.tasks.len() + 1).to_string();
    let run = runtime
        .init_run(InitRunRequest::new("bench", task.clone()).with_project_path(dir))
        .unwrap()
        .run_id;
    bencher.bench_local(|| {
        let request = CompilePromptRequest::new(run.clone(), SourceRole::Implementer, task.clone());
        runtime.compile_prompt(request).unwrap()
    });
}

#[divan::bench(sample_count = 300)]
fn ingest_output_implementer_result(bencher: Bencher<'_, '_>) {
    let (runtime, dir, workload) = filled();
    let last = workload.tasks.last().unwrap();
    let id = last.implementer.task_id.clone();
    let run = runtime
        .init_run(InitRunRequest::new("bench", id.clone()).with_project_path(dir))
        .unwrap()
        .run_id;
    let text = output(&last.implementer);
    bencher.bench_local(|| {
        let request = IngestOutputRequest::new(
            run.clone(),
            SourceRole::Implementer,
            id.clone(),
            text.clone(),
        );
        runtime.ingest_output(request).unwrap()
    });
}

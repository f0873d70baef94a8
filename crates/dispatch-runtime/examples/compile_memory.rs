//! The runtime's memory over a million `compile_prompt` calls: run it with
//! `cargo run --release -p dispatch-runtime --example compile_memory [CALLS]` (default
//! 1,000,000; Linux, where the resident set is read from `/proc/self/statm`).
//!
//! One spec of 100 tasks whose store holds the facts of 50 implementer results (about 150
//! valid facts). Every 100 compiles a new run starts (`init_run`), alternately ended with
//! `end_run` after its compiles or left idle, to be dropped by the runtime's idle expiry
//! (one second, by the system clock, which also times every retrieval into the telemetry's
//! histogram). The example prints the resident set size, the runs the runtime holds and the
//! retrieval percentiles after 10,000 calls and at every tenth of the way to the end: before
//! issue 23 every retrieval's latency was kept (8 bytes per compile, and a sorted copy per
//! `get_telemetry`) and no run was ever dropped; now both stay bounded, and so does the
//! resident set.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::error::Error;
use std::time::Duration;

use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
};
use fact_model::SourceRole;

const TASKS: usize = 100;
const COMPILES_PER_RUN: usize = 100;

/// The resident set size in KiB, on Linux.
fn rss_kib() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4)
}

fn report(runtime: &DispatchRuntimeManager, calls: usize) {
    let telemetry = runtime.telemetry().unwrap();
    let debug = format!("{runtime:?}");
    let runs = debug
        .split("runs: ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or("?");
    println!(
        "{calls:>9} compiles: RSS {:>7} KiB, runs held {runs:>3}, retrieval p50 {} µs, p99 {} µs",
        rss_kib().map_or_else(|| "?".to_owned(), |k| k.to_string()),
        telemetry.retrieval_p50_us,
        telemetry.retrieval_p99_us,
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    let calls: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1_000_000,
    };
    let dir = tempfile::tempdir()?;
    let spec = dir.path().join(".spec-context/specs/mem");
    std::fs::create_dir_all(&spec)?;
    let tasks: String = (1..=TASKS)
        .map(|n| {
            format!(
                "- [ ] {n}. Task {n}\n  - _Prompt: Implement part {n} of the parser in \
                 src/part{n}.rs with typed errors_\n"
            )
        })
        .collect();
    std::fs::write(spec.join("tasks.md"), tasks)?;
    let runtime = DispatchRuntimeManager::builder()
        .project_root(dir.path())
        .run_expiry(Duration::from_secs(1))
        .build();
    for n in 1..=TASKS / 2 {
        let task = n.to_string();
        let run = runtime.init_run(InitRunRequest::new("mem", &task))?.run_id;
        let output = format!(
            "BEGIN_DISPATCH_RESULT\n{}\nEND_DISPATCH_RESULT\n",
            serde_json::json!({"task_id": task, "status": "completed",
                "summary": format!("part {n} of the parser implemented"),
                "files_changed": [format!("src/part{n}.rs")],
                "tests": [{"command": format!("cargo test part{n}"), "passed": true}]})
        );
        runtime.ingest_output(IngestOutputRequest::new(
            &run,
            SourceRole::Implementer,
            &task,
            output,
        ))?;
        runtime.end_run(&run)?;
    }
    let mut reports: Vec<usize> = (1..=10).map(|k| calls * k / 10).collect();
    reports.push(10_000.min(calls));
    reports.sort_unstable();
    reports.dedup();
    let mut reports = reports.into_iter().peekable();
    let mut done = 0;
    let mut run_number = 0usize;
    while done < calls {
        let task = (run_number % TASKS + 1).to_string();
        let run = runtime
            .init_run(InitRunRequest::new("mem", &task).with_run_id(format!("run-{run_number}")))?
            .run_id;
        for n in 0..COMPILES_PER_RUN.min(calls - done) {
            let role = if n.is_multiple_of(2) {
                SourceRole::Implementer
            } else {
                SourceRole::Reviewer
            };
            runtime.compile_prompt(CompilePromptRequest::new(&run, role, &task))?;
            done += 1;
            if reports.next_if_eq(&done).is_some() {
                report(&runtime, done);
            }
        }
        if run_number.is_multiple_of(2) {
            runtime.end_run(&run)?;
        }
        run_number += 1;
    }
    Ok(())
}

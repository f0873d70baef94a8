//! The benchmarks' Rust port of the shared dispatch workload generator stays faithful.

#[path = "../../benches/support/workload.rs"]
mod workload;

use std::path::Path;
use std::process::Command;

#[test]
fn workload_port_is_deterministic_and_matches_its_known_first_task() {
    let w = workload::generate(40, 2, 42);
    assert_eq!((w.tasks.len(), w.queries.len()), (3, 2));
    // The first summary the Python generator prints for seed 42.
    assert_eq!(
        w.tasks[0].implementer.summary,
        "telemetry stall cache naming config store json error dispatch rule fact stall \
         snapshot prompt service retriever format implementer"
    );
    assert_eq!(
        w.tasks[0].implementer.files_changed[0],
        "src/token/format_4593.rs"
    );
    assert_eq!(
        w.tasks[0].reviewer.issues[0].file.as_deref(),
        Some("src/service/prompt.rs")
    );
    assert_eq!(w.queries[0].0, "4");
}

/// Says why the comparison cannot run: on stderr, and the test passes, except under
/// `CI=true` (where `.ci/run` has the shared folder and installs Python), where it fails.
fn cannot_run(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the workload port cannot be compared with the Python generator under CI=true: {why}"
    );
    eprintln!("skipped: {why}");
}

/// Compares every result and query with the Python generator's output. Without the shared
/// folder or a Python interpreter it is skipped, saying why, except under `CI=true`, where
/// it fails.
#[test]
fn workload_port_matches_the_python_generator() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench/dispatch_workload.py");
    if !script.exists() {
        cannot_run(&format!("{} not found", script.display()));
        return;
    }
    let output = match Command::new("python3")
        .arg(&script)
        .args(["--facts", "400", "--queries", "20"])
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            cannot_run(&format!("python3 could not be run: {e}"));
            return;
        }
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ported = workload::generate(400, 20, 42);
    let mut expected = Vec::new();
    for task in &ported.tasks {
        expected.push(serde_json::json!({"kind": "result", "role": "implementer", "task_id": task.implementer.task_id, "output": task.implementer}));
        expected.push(serde_json::json!({"kind": "result", "role": "reviewer", "task_id": task.reviewer.task_id, "output": task.reviewer}));
    }
    for (task_id, description) in &ported.queries {
        expected.push(serde_json::json!({"kind": "query", "task_id": task_id, "task_description": description}));
    }
    let actual: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(&expected) {
        // Deserialize the script's result through the contract types, so that fields the
        // serializer omits (empty `failures`) compare equal.
        let normalise = |v: &serde_json::Value| {
            let mut v = v.clone();
            if let Some(output) = v.get_mut("output") {
                if output.get("status").is_some() {
                    let r: fact_model::ImplementerResult =
                        serde_json::from_value(output.clone()).unwrap();
                    *output = serde_json::to_value(r).unwrap();
                } else {
                    let r: fact_model::ReviewerResult =
                        serde_json::from_value(output.clone()).unwrap();
                    *output = serde_json::to_value(r).unwrap();
                }
            }
            v
        };
        assert_eq!(normalise(a), normalise(e));
    }
}

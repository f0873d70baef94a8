//! Wrong input through the protocol: each gets a typed error or a warning, never a silent
//! `ok: true`; and what a response must say about what happened (compaction, omitted facts,
//! the request's `id`).

use std::path::Path;
use std::sync::Arc;

use dispatch_runtime::reexports::TaskStatus;
use dispatch_runtime::{
    CompilePromptRequest, DispatchRuntimeManager, IngestOutputRequest, InitRunRequest,
    MAX_LISTED_FACTS, SetTaskStatusRequest, protocol,
};
use fact_model::{ManualClock, SourceRole};
use fact_store::{InMemorySessionFactStore, StoreConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tempfile::TempDir;

/// A project with spec `demo` of three tasks, the second with a near-miss line after it.
fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("tasks.md"),
        "- [ ] 1. Parse\n- [ ] 2. Store\n- [ ] 3. Serve\n",
    )
    .unwrap();
    dir
}

fn runtime(project: &Path) -> DispatchRuntimeManager {
    DispatchRuntimeManager::builder()
        .clock(Arc::new(ManualClock::new(
            "2026-11-23T09:00:00Z".parse().unwrap(),
        )))
        .project_root(project)
        .build()
}

fn call(runtime: &DispatchRuntimeManager, request: Value) -> Value {
    protocol::handle(runtime, &request)
}

fn block(body: &Value) -> String {
    format!("BEGIN_DISPATCH_RESULT\n{body}\nEND_DISPATCH_RESULT")
}

#[test]
fn the_default_project_comes_from_the_builder_for_a_missing_or_null_path() {
    let dir = project();
    let runtime = runtime(dir.path());
    for request in [
        json!({"action": "init_run", "spec_name": "demo", "task_id": "1"}),
        json!({"action": "init_run", "spec_name": "demo", "task_id": "2", "project_path": null}),
    ] {
        let answer = call(&runtime, request);
        assert_eq!(answer["ok"], true, "{answer}");
        assert!(
            answer["tasks_path"]
                .as_str()
                .unwrap()
                .starts_with(&dir.path().display().to_string())
        );
    }
}

#[test]
fn an_unknown_field_is_an_invalid_request_naming_it() {
    let dir = project();
    let runtime = runtime(dir.path());
    let requests = [
        (
            json!({"action": "init_run", "spec_name": "demo", "task_id": "1", "run": "x"}),
            "run",
        ),
        (
            json!({"action": "compile_prompt", "run_id": "demo:1", "role": "implementer",
                   "task_id": "1", "max_output_token": 9}),
            "max_output_token",
        ),
        (
            json!({"action": "ingest_output", "run_id": "demo:1", "role": "implementer",
                   "task_id": "1", "output": "", "budget": 9}),
            "budget",
        ),
        (
            json!({"action": "set_task_status", "spec_name": "demo", "task_id": "1",
                   "status": "completed", "force": true}),
            "force",
        ),
        (
            json!({"action": "get_snapshot", "run_id": "demo:1", "verbose": true}),
            "verbose",
        ),
        (
            json!({"action": "get_telemetry", "verbose": true}),
            "verbose",
        ),
        (
            json!({"action": "query_facts", "spec_name": "demo", "task_id": "1",
                   "task_description": "x", "max_fact": 3}),
            "max_fact",
        ),
        (
            json!({"action": "fact_history", "spec_name": "demo", "subject": "x", "limit": 3}),
            "limit",
        ),
    ];
    for (request, unknown) in requests {
        let answer = call(&runtime, request.clone());
        assert_eq!(
            answer["error"]["code"], "invalid_request",
            "{request} -> {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("unknown field `{unknown}`")),
            "{message}"
        );
    }
}

#[test]
fn the_request_id_is_echoed_on_success_and_failure() {
    let dir = project();
    let runtime = runtime(dir.path());
    let ok = call(&runtime, json!({"action": "get_telemetry", "id": "req-1"}));
    assert_eq!(
        (ok["ok"].clone(), ok["id"].clone()),
        (json!(true), json!("req-1"))
    );
    let failed = call(
        &runtime,
        json!({"action": "get_snapshot", "run_id": "nope", "id": 42}),
    );
    assert_eq!(
        (failed["ok"].clone(), failed["id"].clone()),
        (json!(false), json!(42))
    );
    let unknown = call(&runtime, json!({"action": "fly", "id": [1]}));
    assert_eq!(unknown["id"], json!([1]));
    assert!(
        call(&runtime, json!({"action": "get_telemetry"}))
            .get("id")
            .is_none()
    );
}

#[test]
fn a_spec_name_cannot_leave_the_specs_folder() {
    let dir = project();
    // A tasks.md the escape would reach: <project>/outside/tasks.md.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("tasks.md"), "- [ ] 1. Secret\n").unwrap();
    let runtime = runtime(dir.path());
    for name in [
        "../../../outside",
        "..",
        ".",
        "",
        "a/b",
        "a\\b",
        "nul\0byte",
    ] {
        for request in [
            json!({"action": "init_run", "spec_name": name, "task_id": "1"}),
            json!({"action": "query_facts", "spec_name": name, "task_id": "1", "task_description": "x"}),
            json!({"action": "fact_history", "spec_name": name, "subject": "x"}),
        ] {
            let answer = call(&runtime, request);
            assert_eq!(
                answer["error"]["code"], "invalid_spec_name",
                "{name:?}: {answer}"
            );
        }
    }
}

#[test]
fn init_run_of_a_task_not_in_tasks_md_is_task_not_found() {
    let dir = project();
    let runtime = runtime(dir.path());
    let answer = call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "9"}),
    );
    assert_eq!(answer["error"]["code"], "task_not_found", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tasks.md")
    );
}

#[test]
fn rebinding_a_run_to_another_task_needs_the_flag() {
    let dir = project();
    let runtime = runtime(dir.path());
    let first = json!({"action": "init_run", "spec_name": "demo", "task_id": "1", "run_id": "r"});
    assert_eq!(call(&runtime, first.clone())["ok"], true);
    // The same binding again is fine.
    assert_eq!(call(&runtime, first)["ok"], true);
    let other = json!({"action": "init_run", "spec_name": "demo", "task_id": "2", "run_id": "r"});
    let refused = call(&runtime, other);
    assert_eq!(refused["error"]["code"], "run_rebind", "{refused}");
    // Still bound to task 1.
    let snapshot = call(&runtime, json!({"action": "get_snapshot", "run_id": "r"}));
    let task = snapshot["snapshot"]["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["k"] == "ledger.progress.task_id")
        .map(|f| f["v"].clone());
    assert_eq!(task, Some(json!("1")), "{snapshot}");
    let rebound = call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "2", "run_id": "r", "rebind": true}),
    );
    assert_eq!(rebound["ok"], true, "{rebound}");
}

#[test]
fn init_run_reports_the_parsers_diagnostics_as_warnings() {
    let dir = project();
    let tasks = dir.path().join(".spec-context/specs/demo/tasks.md");
    std::fs::write(&tasks, "- [ ] 1. Parse\n- [~] 2. Store\n- [ ]3. Serve\n").unwrap();
    let runtime = runtime(dir.path());
    let answer = call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "1"}),
    );
    assert_eq!(answer["ok"], true, "{answer}");
    let warnings: Vec<&str> = answer["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with("line 2:")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.starts_with("line 3:")),
        "{warnings:?}"
    );
    let clean = project();
    let answer = call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "1", "project_path": clean.path()}),
    );
    assert_eq!(answer["warnings"], json!([]), "{answer}");
}

#[test]
fn a_query_about_a_spec_nobody_knows_says_so() {
    let dir = project();
    let runtime = runtime(dir.path());
    for action in ["query_facts", "fact_history"] {
        let request = json!({"action": action, "spec_name": "dmeo", "task_id": "1",
            "task_description": "parse", "subject": "src/parse.rs"});
        let mut request = request.as_object().unwrap().clone();
        if action == "fact_history" {
            request.remove("task_id");
            request.remove("task_description");
        } else {
            request.remove("subject");
        }
        let answer = call(&runtime, Value::Object(request.clone()));
        assert_eq!(answer["ok"], true, "{answer}");
        assert!(
            answer["warnings"][0].as_str().unwrap().contains("dmeo"),
            "{answer}"
        );
        // A spec with a run is known, even with no facts yet.
        assert_eq!(
            call(
                &runtime,
                json!({"action": "init_run", "spec_name": "demo", "task_id": "1"})
            )["ok"],
            true
        );
        request.insert("spec_name".into(), json!("demo"));
        let answer = call(&runtime, Value::Object(request));
        assert_eq!(answer["warnings"], json!([]), "{answer}");
    }
}

#[test]
fn an_ingest_response_lists_a_bounded_number_of_facts_and_reports_compaction() {
    let dir = project();
    let clock = Arc::new(ManualClock::new("2026-11-23T09:00:00Z".parse().unwrap()));
    let config = StoreConfig::default().with_capacity(50);
    let runtime = DispatchRuntimeManager::builder()
        .clock(clock)
        .project_root(dir.path())
        .stores(Box::new(move |_, clock| {
            Ok(Arc::new(InMemorySessionFactStore::new(config, clock)))
        }))
        .build();
    assert_eq!(
        call(
            &runtime,
            json!({"action": "init_run", "spec_name": "demo", "task_id": "1"})
        )["ok"],
        true
    );
    let files: Vec<String> = (0..300).map(|n| format!("src/file_{n}.rs")).collect();
    let body = json!({"task_id": "1", "status": "completed", "summary": "many files", "files_changed": files});
    let answer = call(
        &runtime,
        json!({"action": "ingest_output", "run_id": "demo:1", "role": "implementer",
               "task_id": "1", "output": block(&body), "max_output_tokens": 100000}),
    );
    assert_eq!(answer["ok"], true, "{answer}");
    let listed = answer["facts_extracted"].as_array().unwrap().len();
    assert_eq!(listed, MAX_LISTED_FACTS);
    let omitted = answer["facts_extracted_omitted"].as_u64().unwrap() as usize;
    assert!(omitted >= 200, "{omitted}");
    let compaction = &answer["compaction"];
    assert!(compaction.is_object(), "{answer}");
    assert!(
        compaction["valid_after"].as_u64().unwrap() <= 50,
        "{compaction}"
    );
}

#[test]
fn masking_savings_count_each_observation_once_per_later_cycle() {
    let dir = project();
    let runtime = runtime(dir.path());
    let output = block(
        &json!({"task_id": "1", "status": "completed", "summary": "Parser added in src/parse.rs"}),
    );
    let tokens = (output.chars().count() as u64).div_ceil(4);
    call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "1"}),
    );
    let compile = |task: &str, role: &str| {
        let run = format!("demo:{task}");
        let answer = call(
            &runtime,
            json!({"action": "compile_prompt", "run_id": run, "role": role, "task_id": task}),
        );
        assert_eq!(answer["ok"], true, "{answer}");
    };
    compile("1", "implementer"); // before any observation: saves nothing
    let ingest = json!({"action": "ingest_output", "run_id": "demo:1", "role": "implementer", "task_id": "1", "output": output});
    assert_eq!(call(&runtime, ingest)["ok"], true);
    compile("1", "reviewer"); // re-sends one observation
    call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "2"}),
    );
    compile("2", "implementer"); // and again
    let telemetry = call(&runtime, json!({"action": "get_telemetry"}))["telemetry"].clone();
    assert_eq!(telemetry["observation_tokens_ingested"], tokens);
    assert_eq!(
        telemetry["masking_savings_tokens"],
        2 * tokens,
        "{telemetry}"
    );
    let injected = telemetry["session_context_tokens_injected"]
        .as_f64()
        .unwrap();
    let ratio = telemetry["injected_to_masked_ratio"].as_f64().unwrap();
    assert!(
        (ratio - injected / (2 * tokens) as f64).abs() < 1e-9,
        "{telemetry}"
    );
}

#[test]
fn set_task_status_rewrites_one_marker_and_moves_the_active_task() {
    let dir = project();
    let tasks = dir.path().join(".spec-context/specs/demo/tasks.md");
    // CRLF, trailing blanks and no final newline must survive.
    let before = "# Tasks\r\n\r\n- [ ] 1. Parse  \r\n- [ ] 2. Store\r\n- [ ] 3. Serve";
    std::fs::write(&tasks, before).unwrap();
    let runtime = runtime(dir.path());
    let init = call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "1"}),
    );
    assert_eq!(init["active_task_id"], "1");
    let answer = call(
        &runtime,
        json!({"action": "set_task_status", "spec_name": "demo", "task_id": "1", "status": "completed"}),
    );
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["previous_status"], "pending");
    assert_eq!(answer["status"], "completed");
    assert_eq!(answer["changed"], true);
    assert_eq!(answer["active_task_id"], "2");
    assert_eq!(answer["totals"]["completed"], 1);
    assert_eq!(
        std::fs::read_to_string(&tasks).unwrap(),
        before.replacen("- [ ] 1.", "- [x] 1.", 1)
    );
    // The next init_run sees it.
    let next = call(
        &runtime,
        json!({"action": "init_run", "spec_name": "demo", "task_id": "2"}),
    );
    assert_eq!(next["active_task_id"], "2", "{next}");
    // Again: nothing to write.
    let again = call(
        &runtime,
        json!({"action": "set_task_status", "spec_name": "demo", "task_id": "1", "status": "completed"}),
    );
    assert_eq!(again["changed"], false, "{again}");
}

#[test]
fn set_task_status_refuses_unknown_tasks_statuses_and_escapes() {
    let dir = project();
    let tasks = dir.path().join(".spec-context/specs/demo/tasks.md");
    let before = std::fs::read(&tasks).unwrap();
    let runtime = runtime(dir.path());
    let cases = [
        (
            json!({"spec_name": "demo", "task_id": "9", "status": "completed"}),
            "task_not_found",
        ),
        (
            json!({"spec_name": "demo", "task_id": "1", "status": "done"}),
            "invalid_request",
        ),
        (
            json!({"spec_name": "../demo", "task_id": "1", "status": "completed"}),
            "invalid_spec_name",
        ),
        (
            json!({"spec_name": "nope", "task_id": "1", "status": "completed"}),
            "progress_ledger_missing_tasks",
        ),
        (
            json!({"spec_name": "demo", "task_id": "1", "status": "completed", "force": true}),
            "invalid_request",
        ),
    ];
    for (fields, code) in cases {
        let mut request = fields.as_object().unwrap().clone();
        request.insert("action".into(), json!("set_task_status"));
        let answer = call(&runtime, Value::Object(request));
        assert_eq!(answer["error"]["code"], code, "{fields} -> {answer}");
    }
    assert_eq!(
        std::fs::read(&tasks).unwrap(),
        before,
        "no failure touched the file"
    );
}

/// `built` is what `wire` (one request's JSON, fields as the protocol spells them)
/// deserializes to, and serializes back to exactly `wire`; a field `wire` does not know is
/// still refused.
fn check_wire<T>(built: &T, wire: &Value)
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let read: T = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(&read, built, "{wire}");
    assert_eq!(&serde_json::to_value(built).unwrap(), wire);
    let mut unknown = wire.clone();
    unknown["surprise"] = json!(1);
    let err = serde_json::from_value::<T>(unknown).unwrap_err();
    assert!(err.to_string().contains("surprise"), "{err}");
}

#[test]
fn request_constructors_build_what_the_wire_form_reads() {
    // The constructors leave every optional field at the protocol's default.
    check_wire(
        &InitRunRequest::new("demo", "2"),
        &json!({"spec_name": "demo", "task_id": "2", "project_path": null, "run_id": null,
                "rebind": false}),
    );
    check_wire(
        &InitRunRequest::new("demo", "2")
            .with_project_path("/p")
            .with_run_id("r")
            .with_rebind(true),
        &json!({"spec_name": "demo", "task_id": "2", "project_path": "/p", "run_id": "r",
                "rebind": true}),
    );
    check_wire(
        &SetTaskStatusRequest::new("demo", "3", TaskStatus::InProgress),
        &json!({"spec_name": "demo", "task_id": "3", "status": "in_progress",
                "project_path": null}),
    );
    check_wire(
        &SetTaskStatusRequest::new("demo", "3", TaskStatus::Completed).with_project_path("/p"),
        &json!({"spec_name": "demo", "task_id": "3", "status": "completed",
                "project_path": "/p"}),
    );
    check_wire(
        &IngestOutputRequest::new("demo:1", SourceRole::Implementer, "1", "out"),
        &json!({"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": "out",
                "max_output_tokens": null}),
    );
    check_wire(
        &IngestOutputRequest::new("demo:1", SourceRole::Reviewer, "1", "out")
            .with_max_output_tokens(800),
        &json!({"run_id": "demo:1", "role": "reviewer", "task_id": "1", "output": "out",
                "max_output_tokens": 800}),
    );
    check_wire(
        &CompilePromptRequest::new("demo:1", SourceRole::Reviewer, "1"),
        &json!({"run_id": "demo:1", "role": "reviewer", "task_id": "1", "task_prompt": null,
                "max_output_tokens": null}),
    );
    check_wire(
        &CompilePromptRequest::new("demo:1", SourceRole::Implementer, "1")
            .with_task_prompt("Do this")
            .with_max_output_tokens(600),
        &json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
                "task_prompt": "Do this", "max_output_tokens": 600}),
    );
    // A minimal request (optional fields left out) reads as the constructor builds it.
    let minimal: CompilePromptRequest =
        serde_json::from_value(json!({"run_id": "r", "role": "reviewer", "task_id": "1"})).unwrap();
    assert_eq!(
        minimal,
        CompilePromptRequest::new("r", SourceRole::Reviewer, "1")
    );
}

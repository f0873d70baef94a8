//! `facts mcp`: the real binary driven over stdio the way an MCP client drives it, one
//! JSON-RPC request at a time, and over streamable HTTP (`--http`) with plain HTTP/1.1
//! requests, as the transport's specification spells them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

/// The protocol's tools, in the order `tools/list` shows them.
const ACTIONS: [&str; 9] = [
    "init_run",
    "compile_prompt",
    "ingest_output",
    "set_task_status",
    "end_run",
    "get_snapshot",
    "query_facts",
    "fact_history",
    "get_telemetry",
];

#[path = "support/http_client.rs"]
mod http_client;
use http_client::{HttpClient, HttpServer, PROTOCOL_VERSION, post};
#[path = "support/stdio_client.rs"]
mod stdio_client;

use stdio_client::Client;

/// A client of `facts mcp --project tests/fixtures/project`.
fn start() -> Client {
    start_with(&["mcp", "--project", "tests/fixtures/project"])
}

/// A client of `facts ARGS…`, run from the crate's directory.
fn start_with<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Client {
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit());
    Client::start(command)
}

/// An agent's raw output: prose around one marked result block.
fn output(body: &Value) -> String {
    format!("Work done.\nBEGIN_DISPATCH_RESULT\n{body}\nEND_DISPATCH_RESULT\n")
}

#[test]
fn tools_list_names_every_action_with_its_schemas_and_annotations() {
    let mut client = start();
    let tools = client.tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ACTIONS);
    let ingest = &tools[2]["inputSchema"];
    assert_eq!(
        ingest["required"],
        json!(["run_id", "role", "task_id", "output"])
    );
    let mut read_only = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["outputSchema"]["required"], json!(["ok"]), "{tool}");
        assert!(tool["outputSchema"]["properties"]["error"].is_object());
        let annotations = &tool["annotations"];
        assert!(tool["title"].is_string(), "{tool}");
        assert_eq!(annotations["title"], tool["title"]);
        for hint in ["destructiveHint", "idempotentHint", "openWorldHint"] {
            assert!(annotations[hint].is_boolean(), "{name}: {hint}");
        }
        if annotations["readOnlyHint"] == true {
            read_only.push(name);
        }
    }
    assert_eq!(
        read_only,
        [
            "get_snapshot",
            "query_facts",
            "fact_history",
            "get_telemetry"
        ]
    );
    let ingest = &tools[2]["outputSchema"]["properties"];
    assert_eq!(ingest["next_action"]["$ref"], "#/$defs/NextAction");
    assert!(client.finish().success());
}

#[test]
fn a_session_over_mcp_carries_task_one_facts_into_task_two_prompt() {
    let mut client = start();

    let init = client.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    assert_eq!(init["isError"], false, "{init}");
    assert_eq!(init["structuredContent"]["run_id"], "demo:1");

    let result = json!({
        "task_id": "1", "status": "completed",
        "summary": "Parser added in src/parser.rs",
        "files_changed": ["src/parser.rs"]
    });
    let ingest = client.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": output(&result)}),
    );
    assert_eq!(
        ingest["structuredContent"]["next_action"],
        "dispatch_reviewer"
    );
    // The same answer as text, for clients that only read text.
    let text: Value = serde_json::from_str(ingest["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, ingest["structuredContent"]);

    client.call("init_run", json!({"spec_name": "demo", "task_id": "2"}));
    let compiled = client.call(
        "compile_prompt",
        json!({"run_id": "demo:2", "role": "implementer", "task_id": "2"}),
    );
    let compiled = &compiled["structuredContent"];
    assert_eq!(compiled["ledger_mode"], "ledger_only");
    let context = compiled["session_context"].as_str().unwrap();
    assert!(context.starts_with("[Session Context]"), "{compiled}");
    assert!(context.contains("src/parser.rs"), "{context}");
    assert!(compiled["prompt"].as_str().unwrap().contains(context));

    let history = client.call(
        "fact_history",
        json!({"spec_name": "demo", "subject": "src/parser.rs"}),
    );
    assert!(
        !history["structuredContent"]["facts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let telemetry = client.call("get_telemetry", json!({}));
    assert_eq!(
        telemetry["structuredContent"]["telemetry"]["dispatch_count"],
        1
    );
    assert!(client.finish().success());
}

#[test]
fn runs_end_with_end_run_and_expire_after_run_expiry() {
    let mut client = start_with(&[
        "mcp",
        "--project",
        "tests/fixtures/project",
        "--run-expiry",
        "1s",
    ]);
    client.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    let ended = client.call("end_run", json!({"run_id": "demo:1"}));
    assert_eq!(ended["isError"], false, "{ended}");
    assert_eq!(ended["structuredContent"]["spec_name"], "demo");
    let gone = client.call("get_snapshot", json!({"run_id": "demo:1"}));
    assert_eq!(
        gone["structuredContent"]["error"]["code"],
        "run_not_initialized"
    );

    // A run nobody names for longer than the expiry is dropped.
    client.call("init_run", json!({"spec_name": "demo", "task_id": "2"}));
    let kept = client.call("get_snapshot", json!({"run_id": "demo:2"}));
    assert_eq!(kept["isError"], false, "{kept}");
    std::thread::sleep(Duration::from_millis(2_100));
    let expired = client.call("get_snapshot", json!({"run_id": "demo:2"}));
    assert_eq!(expired["isError"], true, "{expired}");
    assert_eq!(
        expired["structuredContent"]["error"]["code"],
        "run_not_initialized"
    );
    assert!(client.finish().success());

    // A duration that is not one is a usage error.
    let output = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mcp", "--run-expiry", "soon"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a duration"), "{stderr}");
}

#[test]
fn protocol_failures_are_tool_errors_with_their_code_and_the_server_keeps_going() {
    let mut client = start();

    let missing = client.call(
        "compile_prompt",
        json!({"run_id": "demo:9", "role": "implementer", "task_id": "9"}),
    );
    assert_eq!(missing["isError"], true);
    assert_eq!(
        missing["structuredContent"]["error"]["code"],
        "run_not_initialized"
    );

    let bad_request = client.call("get_snapshot", json!({"run": "x"}));
    assert_eq!(
        bad_request["structuredContent"]["error"]["code"],
        "invalid_request"
    );

    client.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    let no_block = client.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": "no block"}),
    );
    assert_eq!(no_block["isError"], true);
    assert_eq!(
        no_block["structuredContent"]["error"]["code"],
        "marker_missing"
    );
    assert_eq!(
        no_block["structuredContent"]["next_action"],
        "halt_schema_invalid_terminal"
    );

    // An unknown tool is a tool error too, naming the tools there are.
    let unknown = client.call("fly", json!({}));
    assert_eq!(unknown["isError"], true, "{unknown}");
    let error = &unknown["structuredContent"]["error"];
    assert_eq!(error["code"], "unknown_tool", "{unknown}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("\"fly\"") && message.contains("known tools: init_run, compile_prompt"),
        "{message}"
    );
    assert_eq!(unknown["structuredContent"]["ok"], false);

    let telemetry = client.call("get_telemetry", json!({}));
    assert_eq!(
        telemetry["structuredContent"]["telemetry"]["schema_error_counts"]["marker_missing"],
        1
    );
    assert!(client.finish().success());
}

/// The memory tools, in the order `tools/list` shows them after the protocol's.
const MEMORY_TOOLS: [&str; 22] = [
    "memory_add",
    "memory_add_many",
    "memory_get",
    "memory_list",
    "memory_update",
    "memory_delete",
    "memory_search",
    "memory_search_many",
    "memory_recall",
    "memory_history",
    "memory_neighbours",
    "memory_format",
    "memory_archive",
    "memory_backfill",
    "memory_context",
    "memory_set_context",
    "memory_aliases",
    "memory_alias",
    "memory_unalias",
    "memory_forget",
    "memory_erase_scope",
    "memory_export",
];

/// `facts mcp --db DB …` from the crate's directory.
fn start_on(db: &Path, extra: &[&str]) -> Client {
    let mut args: Vec<std::ffi::OsString> = vec!["mcp".into(), "--db".into(), db.into()];
    args.extend(extra.iter().map(Into::into));
    start_with(&args)
}

/// Remembers a fact; returns the answer's structured content.
fn remember(client: &mut Client, relation: &str, object: &str, statement: &str) -> Value {
    let added = client.call(
        "memory_add",
        json!({"subject": "user", "relation": relation, "object": object,
               "statement": statement, "category": "preference", "confidence": 0.9}),
    );
    assert_eq!(added["isError"], false, "{added}");
    added["structuredContent"].clone()
}

#[test]
fn memory_tools_are_served_only_with_a_database_and_round_trip() {
    let mut client = start();
    assert!(
        !client
            .tool_names()
            .iter()
            .any(|name| name.starts_with("memory_"))
    );
    assert!(client.finish().success());

    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let mut client = start_on(&db, &[]);
    let names = client.tool_names();
    assert_eq!(names[..ACTIONS.len()], ACTIONS);
    assert_eq!(names[ACTIONS.len()..], MEMORY_TOOLS);

    let unittest = remember(
        &mut client,
        "prefers_test_framework",
        "unittest",
        "User prefers unittest",
    );
    assert_eq!(unittest["status"], "added");
    let pytest = remember(
        &mut client,
        "prefers_test_framework",
        "pytest",
        "User prefers pytest over unittest",
    );
    assert_eq!(pytest["ok"], true);
    assert_eq!(pytest["superseded"], json!([unittest["id"]]));
    let id = pytest["id"].as_str().unwrap().to_owned();

    let found = client.call("memory_search", json!({"query": "test framework"}));
    let results = found["structuredContent"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "only the current fact: {found}");
    assert_eq!(results[0]["fact"]["object"], "pytest");
    // The same answer as text.
    let text: Value = serde_json::from_str(found["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, found["structuredContent"]);

    let recalled = client.call(
        "memory_recall",
        json!({"query": "which test framework does the user prefer?", "max_tokens": 200}),
    );
    let text = recalled["structuredContent"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("## Relevant Facts\n- [preference] User prefers pytest over unittest"),
        "{recalled}"
    );

    let history = client.call("memory_history", json!({"subject": "user"}));
    let versions = history["structuredContent"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0]["superseded_by"], id.as_str());

    let archived = client.call(
        "memory_archive",
        json!({"transcript": "{\"role\": \"user\", \"content\": \"I moved to Lisbon.\"}",
               "title": "Moving"}),
    );
    assert_eq!(archived["isError"], false, "{archived}");
    assert_eq!(archived["structuredContent"]["changes"], Value::Null);
    assert!(
        archived["structuredContent"]["episode_id"]
            .as_str()
            .unwrap()
            .starts_with("ep_")
    );
    let recalled = client.call("memory_recall", json!({"query": "moving"}));
    assert_eq!(
        recalled["structuredContent"]["episodes"][0]["title"],
        "Moving"
    );

    let deleted = client.call("memory_delete", json!({"id": id}));
    assert_eq!(deleted["structuredContent"]["versions"], 1, "{deleted}");
    assert!(client.finish().success());
}

#[test]
fn memory_tool_failures_are_tool_errors_with_their_code() {
    let dir = TempDir::new().unwrap();
    let mut client = start_on(&dir.path().join("memory.db"), &[]);
    let code = |result: &Value| {
        assert_eq!(result["isError"], true, "{result}");
        result["structuredContent"]["error"]["code"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    let unknown = client.call("memory_delete", json!({"id": "0123456789abcdef"}));
    assert_eq!(code(&unknown), "not_found");
    let invalid = client.call("memory_delete", json!({"id": "nope"}));
    assert_eq!(code(&invalid), "invalid_id");
    let bad_fact = client.call(
        "memory_add",
        json!({"subject": "user", "relation": "r", "object": "o", "confidence": 2.0}),
    );
    assert_eq!(code(&bad_fact), "invalid_fact");
    let typo = client.call("memory_search", json!({"qurey": "x"}));
    assert_eq!(code(&typo), "invalid_request");
    let category = client.call(
        "memory_add",
        json!({"subject": "user", "relation": "r", "object": "o", "category": "prefs"}),
    );
    assert_eq!(code(&category), "invalid_request");
    let empty = client.call("memory_archive", json!({"transcript": "not json"}));
    assert_eq!(code(&empty), "empty_transcript");

    // A command a client names is never run unless the server was started to allow it.
    let marker = dir.path().join("ran");
    let archive = client.call(
        "memory_archive",
        json!({"transcript": "{\"role\": \"user\", \"content\": \"hi\"}",
               "llm_cmd": format!("touch '{}'", marker.display())}),
    );
    assert_eq!(code(&archive), "llm_cmd_not_allowed");
    assert!(
        archive["structuredContent"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-llm-cmd")
    );
    // Refused before anything is stored: no episode waits for a backfill.
    let recalled = client.call("memory_recall", json!({"query": "hi"}));
    assert_eq!(
        recalled["structuredContent"]["episodes"],
        json!([]),
        "{recalled}"
    );
    let backfill = client.call(
        "memory_backfill",
        json!({"llm_cmd": format!("touch '{}'", marker.display()), "timeout_secs": 5}),
    );
    assert_eq!(code(&backfill), "llm_cmd_not_allowed");
    assert!(!marker.exists());
    assert!(client.finish().success());
}

#[test]
fn memory_archive_runs_the_model_command_when_the_server_allows_it() {
    let dir = TempDir::new().unwrap();
    let reply = dir.path().join("reply.json");
    std::fs::write(
        &reply,
        r#"{"title": "Testing choices", "summary": "The user chose pytest.", "facts": [
            {"subject": "user", "predicate": "prefers_test_framework", "object": "pytest",
             "statement": "User prefers pytest over unittest", "category": "preference",
             "confidence": 0.9}]}"#,
    )
    .unwrap();
    let llm = format!("cat >/dev/null; cat '{}'", reply.display());
    let mut client = start_on(&dir.path().join("memory.db"), &["--allow-llm-cmd"]);
    let archived = client.call(
        "memory_archive",
        json!({"transcript": "{\"role\": \"user\", \"content\": \"Use pytest, not unittest.\"}",
               "llm_cmd": llm}),
    );
    assert_eq!(archived["isError"], false, "{archived}");
    let episode = archived["structuredContent"]["episode_id"].clone();
    assert_eq!(
        archived["structuredContent"]["changes"]["added"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let recalled = client.call("memory_recall", json!({"query": "test framework pytest"}));
    let recalled = &recalled["structuredContent"];
    assert_eq!(recalled["facts"][0]["fact"]["source_task_id"], episode);
    assert_eq!(recalled["episodes"][0]["id"], episode);
    assert!(client.finish().success());
}

#[test]
fn memory_tools_carry_the_hints_a_client_asks_before_calling_them() {
    let dir = TempDir::new().unwrap();
    let mut client = start_on(&dir.path().join("memory.db"), &[]);
    let tools = client.tools();
    let hinted = |hint: &str| -> Vec<&str> {
        tools
            .iter()
            .filter(|t| t["annotations"][hint] == true)
            .map(|t| t["name"].as_str().unwrap())
            .filter(|name| name.starts_with("memory_"))
            .collect()
    };
    // A client asks a person before a call that loses what cannot be recovered.
    assert_eq!(
        hinted("destructiveHint"),
        ["memory_delete", "memory_forget", "memory_erase_scope"]
    );
    assert_eq!(
        hinted("readOnlyHint"),
        [
            "memory_get",
            "memory_list",
            "memory_search",
            "memory_search_many",
            "memory_recall",
            "memory_history",
            "memory_neighbours",
            "memory_format",
            "memory_context",
            "memory_aliases",
            "memory_export"
        ]
    );
    assert_eq!(
        hinted("openWorldHint"),
        ["memory_archive", "memory_backfill"]
    );
    for tool in tools
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("memory_"))
    {
        let annotations = &tool["annotations"];
        for hint in ["destructiveHint", "idempotentHint", "openWorldHint"] {
            assert!(annotations[hint].is_boolean(), "{tool}: {hint}");
        }
        let read_only = annotations["readOnlyHint"] == true;
        assert!(
            !(read_only && annotations["destructiveHint"] == true),
            "{tool}"
        );
        assert_eq!(tool["outputSchema"]["required"], json!(["ok"]), "{tool}");
    }
    // The forget tool says what it needs: one of `episode` and `subject`.
    let forget = tools.iter().find(|t| t["name"] == "memory_forget").unwrap();
    let properties = forget["inputSchema"]["properties"].as_object().unwrap();
    assert!(properties.contains_key("episode") && properties.contains_key("subject"));
    assert!(client.finish().success());
}

#[test]
fn every_memory_tool_round_trips_over_stdio_within_its_output_schema() {
    let dir = TempDir::new().unwrap();
    let mut client = start_on(&dir.path().join("memory.db"), &["--allow-llm-cmd"]);
    let schemas = output_schemas(&mut client);
    let mut used = BTreeSet::new();
    let mut call = |tool: &str, arguments: Value| {
        used.insert(tool.to_owned());
        call_checked(&mut client, &schemas, tool, arguments, true)
    };

    // Paris until March 20, Berlin since: valid time, given by the caller.
    let paris = call(
        "memory_add",
        json!({"subject": "User", "relation": "lives_in", "object": "Paris",
               "statement": "User lives in Paris", "category": "context",
               "valid_from": "2026-02-10T09:00:00Z"}),
    );
    let paris = paris["id"].as_str().unwrap().to_owned();
    let berlin = call(
        "memory_add",
        json!({"subject": "user", "relation": "lives_in", "object": "Berlin",
               "statement": "User lives in Berlin", "category": "context",
               "valid_from": "2026-03-20T10:00:00Z"}),
    );
    assert_eq!(berlin["superseded"], json!([paris]), "{berlin}");
    let berlin = berlin["id"].as_str().unwrap().to_owned();

    let got = call("memory_get", json!({"id": paris}));
    assert_eq!(got["fact"]["superseded_by"], berlin.as_str(), "{got}");
    assert_eq!(got["fact"]["valid_to"], "2026-03-20T10:00:00Z");
    let objects = |answer: &Value, key: &str| -> Vec<String> {
        answer[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let f = if f["fact"].is_object() { &f["fact"] } else { f };
                f["object"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let march = "2026-03-01T12:00:00Z";
    let now = call("memory_list", json!({}));
    assert_eq!(
        (objects(&now, "facts"), &now["count"]),
        (vec!["Berlin".to_owned()], &json!(1))
    );
    let then = call("memory_list", json!({"as_of": march}));
    assert_eq!(objects(&then, "facts"), ["Paris"], "{then}");
    let found = call("memory_search", json!({"query": "lives", "as_of": march}));
    assert_eq!(objects(&found, "results"), ["Paris"], "{found}");
    // Many facts in one transaction, and many searches in one call.
    let many = call(
        "memory_add_many",
        json!({"facts": [
            {"subject": "user", "relation": "prefers_editor", "object": "vim"},
            {"subject": "user", "relation": "prefers_editor", "object": "helix"},
            {"subject": "user", "relation": "speaks", "object": "Portuguese"},
        ]}),
    );
    let statuses: Vec<&str> = many["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["added", "added", "added"], "{many}");
    let searched = call(
        "memory_search_many",
        json!({"queries": ["editor", "lives", "nothing matches this"]}),
    );
    let answers = searched["results"].as_array().unwrap();
    assert_eq!(objects(&answers[0], "results"), ["helix"], "{searched}");
    assert_eq!(objects(&answers[1], "results"), ["Berlin"], "{searched}");
    assert_eq!(answers[2]["results"], json!([]), "{searched}");
    for result in many["results"].as_array().unwrap() {
        let id = result["id"].as_str().unwrap();
        assert_eq!(call("memory_delete", json!({"id": id}))["versions"], 1);
    }
    let history = call("memory_history", json!({"subject": "USER", "as_of": march}));
    assert_eq!(objects(&history, "versions"), ["Paris"], "{history}");
    let around = call("memory_neighbours", json!({"entity": "user", "depth": 2}));
    let reached = around["neighbours"].as_array().unwrap();
    assert!(!reached.is_empty(), "{around}");
    assert!(
        reached.iter().all(|n| n["fact"]["valid_to"].is_null()),
        "{around}"
    );
    let recalled = call(
        "memory_recall",
        json!({"query": "where does the user live", "as_of": march}),
    );
    assert!(
        recalled["text"]
            .as_str()
            .unwrap()
            .contains("User lives in Paris (from 2026-02-10)"),
        "{recalled}"
    );

    // In place, then with a new object: a new fact supersedes.
    let edited = call("memory_update", json!({"id": berlin, "confidence": 0.7}));
    assert_eq!(
        (&edited["superseded"], &edited["fact"]["confidence"]),
        (&Value::Null, &json!(0.7))
    );
    let moved = call(
        "memory_update",
        json!({"id": berlin, "object": "Hamburg", "statement": "User lives in Hamburg"}),
    );
    assert_eq!(moved["superseded"], berlin.as_str(), "{moved}");
    let hamburg = moved["fact"]["id"].as_str().unwrap().to_owned();

    let set = call(
        "memory_set_context",
        json!({"work": "Staff engineer at Acme", "earlier_context": "Lived in Paris"}),
    );
    assert_eq!(set["changed"], json!(["work", "earlier_context"]), "{set}");
    let context = call("memory_context", json!({}));
    assert_eq!(context["user_context"]["work"], "Staff engineer at Acme");
    assert_eq!(context["history"]["earlier_context"], "Lived in Paris");
    assert_eq!(
        context["versions"].as_array().unwrap().len(),
        2,
        "{context}"
    );
    let formatted = call("memory_format", json!({"max_tokens": 500}));
    assert_eq!(
        formatted["text"],
        "User Context:\n- Work: Staff engineer at Acme\n\nHistory:\n- Earlier context: \
         Lived in Paris\n\nFacts:\n- [context | 0.70] User lives in Hamburg",
        "{formatted}"
    );
    let formatted = call("memory_format", json!({"as_of": march}));
    assert_eq!(
        formatted["text"],
        "Facts:\n- [context | 1.00] User lives in Paris"
    );

    // A fact about "Mel" before Mel was known to be Melanie: the alias moves it.
    let mel = call(
        "memory_add",
        json!({"subject": "Mel", "relation": "adopted_pet", "object": "Oscar",
               "statement": "Mel adopted a puppy named Oscar"}),
    );
    let aliased = call("memory_alias", json!({"alias": "Mel", "entity": "Melanie"}));
    assert_eq!(
        (&aliased["alias"], &aliased["entity"]),
        (&json!("mel"), &json!("melanie"))
    );
    let merged = aliased["merged"].as_array().unwrap();
    assert_eq!(merged.len(), 1, "{aliased}");
    let aliases = call("memory_aliases", json!({}));
    assert_eq!(aliases["aliases"][0]["alias"], "mel", "{aliases}");
    assert_eq!(aliases["aliases"][0]["entity"], "melanie");
    let found = call("memory_search", json!({"query": "Melanie"}));
    assert_eq!(found["results"][0]["fact"]["subject"], "melanie", "{found}");
    assert_eq!(found["results"][0]["fact"]["id"], merged[0]);
    assert_ne!(merged[0], mel["id"], "a new version under the entity");
    let removed = call("memory_unalias", json!({"alias": " MEL "}));
    assert_eq!(removed["removed"], "mel", "{removed}");
    assert_eq!(call("memory_aliases", json!({}))["aliases"], json!([]));

    // A conversation, extracted by the model command the server allows, judged against
    // what memory holds: the prompt lists Hamburg by its short id, and the reply ends it.
    let reply = json!({"summary": "The user moved to Munich.", "facts": [
        {"subject": "user", "predicate": "resides_in", "object": "Munich",
         "content": "User resides in Munich", "category": "context", "turn": 1,
         "supersedes": [&hamburg[..8]]}],
        "user_context": {"top_of_mind": "Settling in Munich"}});
    let llm = scripted_model(dir.path(), &reply);
    // Said now: Hamburg became true when it was updated, and only a later time ends it.
    let transcript = "{\"role\": \"user\", \"content\": \"Big news.\"}\n\
        {\"role\": \"user\", \"content\": \"We moved to Munich.\"}";
    let archived = call(
        "memory_archive",
        json!({"transcript": transcript, "llm_cmd": llm, "timeout_secs": 30}),
    );
    assert_eq!(
        archived["changes"]["superseded"],
        json!([hamburg]),
        "{archived}"
    );
    assert_eq!(archived["changes"]["profile"], json!(["top_of_mind"]));
    assert_eq!(archived["diagnostics"], json!([]), "{archived}");
    let munich = call("memory_get", json!({"id": archived["changes"]["added"][0]}));
    assert_eq!(munich["fact"]["object"], "Munich", "{munich}");
    let today = &munich["fact"]["valid_from"].as_str().unwrap()[..10];
    let prompt = std::fs::read_to_string(dir.path().join("prompt.txt")).unwrap();
    assert!(
        prompt.contains(&format!("- [{}] user lives_in Hamburg", &hamburg[..8])),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("[1] user ({today}): We moved to Munich.")),
        "{prompt}"
    );
    let episode = archived["episode_id"].as_str().unwrap().to_owned();
    let recalled = call("memory_recall", json!({"query": "Munich"}));
    assert_eq!(
        recalled["episodes"][0]["id"],
        episode.as_str(),
        "{recalled}"
    );
    assert!(
        recalled["text"]
            .as_str()
            .unwrap()
            .contains("User resides in Munich"),
        "{recalled}"
    );

    // Archived without a model, dated by the session, then extracted by a backfill.
    let pending = call(
        "memory_archive",
        json!({"transcript": "{\"role\": \"user\", \"content\": \"I play the cello.\"}",
               "session_time": "2026-10-31T18:00:00+01:00", "title": "Music"}),
    );
    assert_eq!(pending["changes"], Value::Null, "{pending}");
    assert_eq!(pending["started_at"], "2026-10-31T17:00:00Z", "{pending}");
    assert_eq!(pending["title"], "Music");
    let recalled = call("memory_recall", json!({"query": "cello"}));
    assert_eq!(
        recalled["episodes"][0]["messages"][0]["timestamp"], "2026-10-31T17:00:00Z",
        "{recalled}"
    );
    let llm = scripted_model(
        dir.path(),
        &json!({"facts": [{"subject": "user", "predicate": "plays_instrument",
            "object": "cello", "content": "User plays the cello", "category": "context"}]}),
    );
    let backfilled = call("memory_backfill", json!({"llm_cmd": llm}));
    let episodes = backfilled["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 1, "{backfilled}");
    assert_eq!(episodes[0]["episode_id"], pending["episode_id"]);
    assert_eq!(episodes[0]["changes"]["added"].as_array().unwrap().len(), 1);
    let cello = call("memory_search", json!({"query": "cello"}));
    assert_eq!(
        cello["results"][0]["fact"]["valid_from"], "2026-10-31T17:00:00Z",
        "said in the session: {cello}"
    );
    let again = call("memory_backfill", json!({"llm_cmd": llm}));
    assert_eq!(again["episodes"], json!([]), "nothing left to extract");

    // Forget: the Munich conversation with its fact, then everything about Melanie.
    let forgot = call("memory_forget", json!({"episode": episode}));
    assert_eq!(forgot["episodes"], json!([episode]), "{forgot}");
    assert_eq!(forgot["facts"].as_array().unwrap().len(), 1, "{forgot}");
    let found = call("memory_search", json!({"query": "Munich"}));
    assert_eq!(found["results"], json!([]), "{found}");
    assert_eq!(
        call("memory_recall", json!({"query": "Munich"}))["text"],
        ""
    );
    // Mel is Melanie again: nothing current to move, and forgetting her reaches the
    // version stored under Mel before the first alias, and the alias.
    let aliased = call("memory_alias", json!({"alias": "Mel", "entity": "Melanie"}));
    assert_eq!(aliased["merged"], json!([]), "{aliased}");
    let forgot = call("memory_forget", json!({"subject": "Melanie"}));
    assert_eq!(
        forgot["versions"], 2,
        "the old version under mel too: {forgot}"
    );
    assert_eq!(forgot["facts"].as_array().unwrap().len(), 2, "{forgot}");
    assert_eq!(forgot["aliases"], json!(["mel"]), "{forgot}");
    for subject in ["melanie", "mel"] {
        let history = call("memory_history", json!({"subject": subject}));
        assert_eq!(history["versions"], json!([]), "{history}");
    }
    assert_eq!(call("memory_aliases", json!({}))["aliases"], json!([]));

    let deleted = call("memory_delete", json!({"id": paris}));
    assert_eq!(
        (&deleted["deleted"], &deleted["versions"]),
        (&json!(paris), &json!(1))
    );

    // The export, in pages of three lines, joins into a file an import takes.
    let (mut file, mut offset) = (String::new(), json!(0));
    while !offset.is_null() {
        let page = call("memory_export", json!({"offset": offset, "limit": 3}));
        file.push_str(page["lines"].as_str().unwrap());
        offset = page["next_offset"].clone();
    }
    let exported = dir.path().join("exported.jsonl");
    std::fs::write(&exported, &file).unwrap();
    let copy = dir.path().join("copy.db");
    let imported = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mem", "--json", "--db"])
        .arg(&copy)
        .arg("import")
        .arg(&exported)
        .output()
        .unwrap();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stdout)
    );
    let whole = call("memory_export", json!({}));
    assert_eq!(whole["lines"], file);
    assert_eq!(whole["next_offset"], Value::Null);
    assert_eq!(whole["total_lines"], file.lines().count());

    // Erasing the scope (`memory_erase_scope_erases_only_the_scope_it_is_named`): then
    // nothing is left.
    assert!(
        !call("memory_list", json!({}))["facts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let erased = call("memory_erase_scope", json!({"scope": "default"}));
    assert_eq!(erased["scope"], "default", "{erased}");
    assert!(
        erased["erased"]["versions"].as_u64().unwrap() > 0,
        "{erased}"
    );
    assert!(
        erased["erased"]["episodes"].as_u64().unwrap() > 0,
        "{erased}"
    );
    assert_eq!(call("memory_list", json!({}))["count"], 0);
    assert_eq!(call("memory_recall", json!({"query": "cello"}))["text"], "");
    let again = call("memory_erase_scope", json!({"scope": "default"}));
    assert_eq!(again["erased"]["versions"], 0, "{again}");

    let listed: BTreeSet<String> = MEMORY_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    assert_eq!(used, listed, "every memory tool was called");
    assert!(client.finish().success());
}

#[test]
fn memory_erase_scope_erases_only_the_scope_it_is_named() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let mut other = start_on(&db, &["--scope", "user:bob"]);
    remember(&mut other, "prefers_editor", "helix", "Bob prefers helix");
    assert!(other.finish().success());
    let mut client = start_on(&db, &["--scope", "user:alice"]);
    let schemas = output_schemas(&mut client);
    remember(&mut client, "prefers_editor", "vim", "Alice prefers vim");
    for (scope, why) in [
        ("user:bob", "another scope of the database"),
        ("default", "the default scope"),
        ("user:alice ", "a name that is not exactly the scope"),
    ] {
        let refused = call_checked(
            &mut client,
            &schemas,
            "memory_erase_scope",
            json!({"scope": scope}),
            false,
        );
        assert_eq!(refused["error"]["code"], "wrong_scope", "{why}: {refused}");
    }
    let missing = client.call("memory_erase_scope", json!({}));
    assert_eq!(missing["isError"], true, "{missing}");
    assert_eq!(
        missing["structuredContent"]["error"]["code"],
        "invalid_request"
    );
    let listed = call_checked(&mut client, &schemas, "memory_list", json!({}), true);
    assert_eq!(listed["count"], 1, "nothing was erased: {listed}");
    let erased = call_checked(
        &mut client,
        &schemas,
        "memory_erase_scope",
        json!({"scope": "user:alice"}),
        true,
    );
    assert_eq!(erased["erased"]["versions"], 1, "{erased}");
    let listed = call_checked(&mut client, &schemas, "memory_list", json!({}), true);
    assert_eq!(listed["count"], 0, "{listed}");
    assert!(client.finish().success());
    let mut other = start_on(&db, &["--scope", "user:bob"]);
    let found = other.call("memory_search", json!({"query": "helix"}));
    assert_eq!(
        found["structuredContent"]["results"][0]["fact"]["object"], "helix",
        "the other scope keeps its facts: {found}"
    );
    assert!(other.finish().success());
}

#[test]
fn a_restarted_server_on_the_same_database_serves_earlier_runs_facts() {
    let dir = TempDir::new().unwrap();
    let project = dir.path().join("project");
    let spec = project.join(".spec-context/specs/demo");
    std::fs::create_dir_all(&spec).unwrap();
    std::fs::write(
        spec.join("tasks.md"),
        "# Tasks: Demo\n\n\
         - [ ] 1. Parse tasks.md\n  \
         - _Prompt: Role: Rust Developer | Task: Parse tasks.md task lines in src/parser.rs | Success: every line parses_\n\
         - [ ] 2. Add a lexer\n  \
         - _Prompt: Role: Rust Developer | Task: Add a lexer in src/lexer.rs | Success: tokens_\n\
         - [ ] 3. Extend the parser with prompts\n  \
         - _Prompt: Role: Rust Developer | Task: Extend the tasks.md parser with multi-line prompts | Success: prompts stay whole_\n",
    )
    .unwrap();
    let db = dir.path().join("facts.db");
    let project_arg = project.to_str().unwrap();

    let mut client = start_on(&db, &["--project", project_arg]);
    client.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    let result = json!({
        "task_id": "1", "status": "completed",
        "summary": "Parser added in src/parser.rs",
        "files_changed": ["src/parser.rs"]
    });
    let ingest = client.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": output(&result)}),
    );
    assert_eq!(ingest["isError"], false, "{ingest}");
    remember(
        &mut client,
        "prefers_test_framework",
        "pytest",
        "User prefers pytest",
    );
    client.kill();

    let mut client = start_on(&db, &["--project", project_arg]);
    let init = client.call("init_run", json!({"spec_name": "demo", "task_id": "3"}));
    assert_eq!(init["isError"], false, "{init}");
    let compiled = client.call(
        "compile_prompt",
        json!({"run_id": "demo:3", "role": "implementer", "task_id": "3"}),
    );
    let context = compiled["structuredContent"]["session_context"]
        .as_str()
        .unwrap();
    assert!(context.starts_with("[Session Context]"), "{compiled}");
    assert!(context.contains("src/parser.rs"), "{context}");
    let found = client.call("memory_search", json!({"query": "pytest"}));
    assert_eq!(
        found["structuredContent"]["results"][0]["fact"]["object"],
        "pytest"
    );
    assert!(client.finish().success());

    // The control: a server on another database knows nothing of task 1.
    let mut client = start_on(&dir.path().join("other.db"), &["--project", project_arg]);
    client.call("init_run", json!({"spec_name": "demo", "task_id": "3"}));
    let compiled = client.call(
        "compile_prompt",
        json!({"run_id": "demo:3", "role": "implementer", "task_id": "3"}),
    );
    let context = &compiled["structuredContent"]["session_context"];
    assert!(
        !context
            .as_str()
            .unwrap_or_default()
            .contains("src/parser.rs"),
        "{compiled}"
    );
    assert!(client.finish().success());
}

#[test]
fn a_database_that_cannot_be_opened_stops_the_server_with_exit_1() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "not a database, only text ".repeat(20)).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_facts"))
        .arg("mcp")
        .arg("--db")
        .arg(&db)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("store error (corrupt)"), "{stderr}");
}

#[test]
fn a_project_that_is_not_a_directory_stops_the_server_with_exit_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mcp", "--project", "no/such/project"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--project no/such/project"), "{stderr}");
}

// Output schemas: what a client that validates structured content (the official Python
// SDK does, with `jsonschema`, for every result that is not an error) checks.

/// Checks `value` against `schema` (a part of `root`, which holds the `$defs`), pushing
/// one line per violation onto `out`. It knows the keywords the tools' schemas use, and
/// fails on any other, so a schema never says more than this checks.
fn check(schema: &Value, root: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let schema = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return out.push(format!("{path}: the schema allows nothing")),
        Value::Object(schema) => schema,
        other => panic!("{path}: not a schema: {other}"),
    };
    for (keyword, rule) in schema {
        match keyword.as_str() {
            "description" | "title" | "default" | "examples" | "format" | "$schema" | "$defs" => {}
            "$ref" => {
                let target = rule.as_str().unwrap().strip_prefix('#').unwrap();
                let target = root
                    .pointer(target)
                    .unwrap_or_else(|| panic!("{path}: {rule}"));
                check(target, root, value, path, out);
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::Array(types) => types.iter().map(|t| t.as_str().unwrap()).collect(),
                    one => vec![one.as_str().unwrap()],
                };
                if !types.iter().any(|t| has_type(value, t)) {
                    out.push(format!("{path}: {value} is not of type {rule}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(value) {
                    out.push(format!("{path}: {value} is not one of {rule}"));
                }
            }
            "const" => {
                if rule != value {
                    out.push(format!("{path}: {value} is not {rule}"));
                }
            }
            "minimum" => {
                if value.as_f64().is_some_and(|v| v < rule.as_f64().unwrap()) {
                    out.push(format!("{path}: {value} is under {rule}"));
                }
            }
            "maximum" => {
                if value.as_f64().is_some_and(|v| v > rule.as_f64().unwrap()) {
                    out.push(format!("{path}: {value} is over {rule}"));
                }
            }
            "required" => {
                if let Some(object) = value.as_object() {
                    for field in rule.as_array().unwrap() {
                        if !object.contains_key(field.as_str().unwrap()) {
                            out.push(format!("{path}: {field} is missing"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(object) = value.as_object() {
                    for (field, property) in rule.as_object().unwrap() {
                        if let Some(field_value) = object.get(field) {
                            check(property, root, field_value, &format!("{path}.{field}"), out);
                        }
                    }
                }
            }
            "additionalProperties" => {
                let known = schema.get("properties").and_then(Value::as_object);
                if let Some(object) = value.as_object() {
                    for (field, field_value) in object {
                        if !known.is_some_and(|k| k.contains_key(field)) {
                            check(rule, root, field_value, &format!("{path}.{field}"), out);
                        }
                    }
                }
            }
            "items" => {
                if let Some(items) = value.as_array() {
                    for (i, item) in items.iter().enumerate() {
                        check(rule, root, item, &format!("{path}[{i}]"), out);
                    }
                }
            }
            "anyOf" | "oneOf" | "allOf" => {
                let matching = rule
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|option| {
                        let mut errors = Vec::new();
                        check(option, root, value, path, &mut errors);
                        errors.is_empty()
                    })
                    .count();
                let options = rule.as_array().unwrap().len();
                let fits = match keyword.as_str() {
                    "anyOf" => matching > 0,
                    "oneOf" => matching == 1,
                    _ => matching == options,
                };
                if !fits {
                    out.push(format!(
                        "{path}: {value} fits {matching} of {keyword} {rule}"
                    ));
                }
            }
            other => panic!("{path}: the checker does not know the keyword {other:?}"),
        }
    }
}

/// Whether `value` is of the JSON Schema type `name`.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        other => panic!("unknown type {other:?}"),
    }
}

/// The violations of `value` against a tool's output schema.
fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, value, "$", &mut out);
    out
}

#[test]
fn the_schema_checker_finds_what_a_validator_finds() {
    let schema = json!({
        "$defs": {"Mode": {"oneOf": [{"const": "a"}, {"const": "b"}]}},
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "mode": {"$ref": "#/$defs/Mode"},
            "n": {"type": ["integer", "null"], "minimum": 0},
            "list": {"type": "array", "items": {"type": "string"}},
            "inner": {"type": "object", "required": ["x"], "additionalProperties": false,
                      "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
        },
        "required": ["ok"]
    });
    let good = json!({"ok": true, "mode": "a", "n": null, "list": ["x"], "inner": {"x": null}});
    assert_eq!(violations(&schema, &good), Vec::<String>::new());
    let bad = json!({"mode": "c", "n": -1, "list": [1], "inner": {"y": 1}});
    let found = violations(&schema, &bad);
    for expected in [
        "$: \"ok\" is missing",
        "$.mode: \"c\" fits 0 of oneOf",
        "$.n: -1 is under 0",
        "$.list[0]: 1 is not of type \"string\"",
        "$.inner: \"x\" is missing",
        "$.inner.y: the schema allows nothing",
    ] {
        assert!(
            found.iter().any(|f| f.starts_with(expected)),
            "{expected}: {found:?}"
        );
    }
    assert_eq!(found.len(), 6, "{found:?}");
}

/// Calls `tool` and checks its result: `isError` as `ok` expects, the same answer as
/// structured content and as text, and the structured content within the tool's output
/// schema. Returns the structured content.
fn call_checked(
    client: &mut Client,
    schemas: &Value,
    tool: &str,
    arguments: Value,
    ok: bool,
) -> Value {
    let result = client.call(tool, arguments.clone());
    assert_eq!(result["isError"], !ok, "{tool} {arguments}: {result}");
    let content = &result["structuredContent"];
    assert_eq!(content["ok"], ok, "{tool}: {result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, content, "{tool}");
    let schema = &schemas[tool];
    assert!(schema.is_object(), "{tool} has no output schema");
    let found = violations(schema, content);
    assert!(
        found.is_empty(),
        "{tool} {arguments}: {content}\n{found:#?}"
    );
    content.clone()
}

/// The output schema of every listed tool, by name.
fn output_schemas(client: &mut Client) -> Value {
    let schemas: serde_json::Map<String, Value> = client
        .tools()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["outputSchema"].clone(),
            )
        })
        .collect();
    Value::Object(schemas)
}

/// `value` with every string that is one of `vars`' names replaced by its value.
fn fill(value: Value, vars: &[(&str, Value)]) -> Value {
    match value {
        Value::String(s) => vars
            .iter()
            .find(|(name, _)| *name == s)
            .map_or(Value::String(s), |(_, v)| v.clone()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, fill(v, vars))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| fill(v, vars)).collect()),
        other => other,
    }
}

/// A scripted model in `dir`: a command line that saves the prompt it reads on stdin to
/// `dir/prompt.txt` and answers `reply`.
fn scripted_model(dir: &Path, reply: &Value) -> String {
    let answer = dir.join("reply.json");
    std::fs::write(&answer, reply.to_string()).unwrap();
    format!(
        "cat > '{}'; cat '{}'",
        dir.join("prompt.txt").display(),
        answer.display()
    )
}

#[test]
fn every_tool_answers_within_its_output_schema_for_valid_and_invalid_requests() {
    let dir = TempDir::new().unwrap();
    let project = dir.path().join("project");
    let spec = project.join(".spec-context/specs/demo");
    std::fs::create_dir_all(&spec).unwrap();
    // A copy: set_task_status rewrites tasks.md.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/project/.spec-context/specs/demo/tasks.md"),
        spec.join("tasks.md"),
    )
    .unwrap();
    let db = dir.path().join("memory.db");
    // Allowed to run a model command, so that memory_backfill has a valid request.
    let mut client = start_on(
        &db,
        &["--project", project.to_str().unwrap(), "--allow-llm-cmd"],
    );
    let schemas = output_schemas(&mut client);
    let result = json!({
        "task_id": "2", "status": "completed",
        "summary": "Prompts parsed in src/parser.rs",
        "files_changed": ["src/parser.rs"]
    });
    let transcript = "{\"role\": \"user\", \"content\": \"I moved to Lisbon.\"}";
    let llm = scripted_model(
        dir.path(),
        &json!({"summary": "The user moved.", "facts": [
            {"subject": "user", "predicate": "moved_to", "object": "Lisbon",
             "content": "User moved to Lisbon", "category": "context", "turn": 0}]}),
    );

    // (tool, a valid request, an invalid one and the code it answers), in an order where
    // each valid request has what it needs; "$fact" and "$episode" stand for the ids the
    // earlier answers gave.
    let cases = [
        (
            "init_run",
            json!({"spec_name": "demo", "task_id": "2"}),
            json!({"spec_name": "demo"}),
            "invalid_request",
        ),
        (
            "compile_prompt",
            json!({"run_id": "demo:2", "role": "implementer", "task_id": "2"}),
            json!({"run_id": "demo:9", "role": "implementer", "task_id": "9"}),
            "run_not_initialized",
        ),
        (
            "ingest_output",
            json!({"run_id": "demo:2", "role": "implementer", "task_id": "2",
                   "output": output(&result)}),
            json!({"run_id": "demo:2", "role": "implementer", "task_id": "2",
                   "output": "no block"}),
            "marker_missing",
        ),
        (
            "set_task_status",
            json!({"spec_name": "demo", "task_id": "2", "status": "in_progress"}),
            json!({"spec_name": "demo", "task_id": "9", "status": "completed"}),
            "task_not_found",
        ),
        (
            "get_snapshot",
            json!({"run_id": "demo:2"}),
            json!({"run": "demo:2"}),
            "invalid_request",
        ),
        (
            "query_facts",
            json!({"spec_name": "demo", "task_id": "3", "task_description": "parser prompts"}),
            json!({"spec_name": "../demo", "task_id": "3", "task_description": "x"}),
            "invalid_spec_name",
        ),
        (
            "fact_history",
            json!({"spec_name": "demo", "subject": "src/parser.rs"}),
            json!({"spec_name": "demo"}),
            "invalid_request",
        ),
        (
            "get_telemetry",
            json!({}),
            json!({"verbose": true}),
            "invalid_request",
        ),
        (
            // Ended by the valid call, so the second call names a run that is gone.
            "end_run",
            json!({"run_id": "demo:2"}),
            json!({"run_id": "demo:2"}),
            "run_not_initialized",
        ),
        (
            "memory_add",
            json!({"subject": "user", "relation": "lives_in", "object": "Lisbon",
                   "statement": "User lives in Lisbon", "category": "preference"}),
            json!({"subject": "user", "relation": "r", "object": "o", "confidence": 2.0}),
            "invalid_fact",
        ),
        (
            "memory_get",
            json!({"id": "$fact"}),
            json!({"id": "nope"}),
            "invalid_id",
        ),
        (
            "memory_list",
            json!({"as_of": "2026-01-01T00:00:00Z"}),
            json!({"as_of": "yesterday"}),
            "invalid_request",
        ),
        (
            "memory_update",
            json!({"id": "$fact", "confidence": 0.8}),
            json!({"id": "0123456789abcdef", "statement": "User lives in Porto"}),
            "not_found",
        ),
        (
            "memory_search",
            json!({"query": "Lisbon", "as_of": "2030-01-01T00:00:00Z"}),
            json!({"qurey": "Lisbon"}),
            "invalid_request",
        ),
        (
            "memory_search_many",
            json!({"queries": ["Lisbon", "tea"], "limit": 3}),
            json!({"queries": "Lisbon"}),
            "invalid_request",
        ),
        (
            "memory_add_many",
            json!({"facts": [{"subject": "user", "relation": "drinks", "object": "tea"}]}),
            json!({"facts": [{"subject": "user", "relation": "eats", "object": "soup"},
                             {"subject": " ", "relation": "eats", "object": "bread"}]}),
            "invalid_fact",
        ),
        (
            "memory_recall",
            json!({"query": "where does the user live"}),
            json!({}),
            "invalid_request",
        ),
        (
            "memory_history",
            json!({"subject": "user"}),
            json!({"subject": 7}),
            "invalid_request",
        ),
        (
            "memory_neighbours",
            json!({"entity": "user", "depth": 2}),
            json!({"entity": "user", "depth": "two"}),
            "invalid_request",
        ),
        (
            "memory_format",
            json!({"max_tokens": 300}),
            json!({"max_tokens": "many"}),
            "invalid_request",
        ),
        (
            "memory_archive",
            json!({"transcript": transcript, "title": "Moving",
                   "session_time": "2026-03-01T09:00:00Z"}),
            json!({"transcript": "not json"}),
            "empty_transcript",
        ),
        (
            "memory_backfill",
            json!({"llm_cmd": llm, "timeout_secs": 30}),
            json!({"timeout_secs": 30}),
            "invalid_request",
        ),
        (
            "memory_context",
            json!({}),
            json!({"work": "Engineer"}),
            "invalid_request",
        ),
        (
            "memory_set_context",
            json!({"work": "Engineer at Acme"}),
            json!({}),
            "invalid_request",
        ),
        (
            "memory_alias",
            json!({"alias": "Mel", "entity": "Melanie"}),
            json!({"alias": "Melanie", "entity": "Mel"}),
            "alias_cycle",
        ),
        (
            "memory_aliases",
            json!({}),
            json!({"alias": "Mel"}),
            "invalid_request",
        ),
        (
            "memory_unalias",
            json!({"alias": "Mel"}),
            json!({"alias": "Mel"}),
            "not_found",
        ),
        (
            "memory_forget",
            json!({"episode": "$episode"}),
            json!({"episode": "ep_0000000000000000"}),
            "not_found",
        ),
        (
            "memory_delete",
            json!({"id": "$fact"}),
            json!({"id": "nope"}),
            "invalid_id",
        ),
        (
            "memory_export",
            json!({"offset": 1, "limit": 2}),
            json!({"limit": 0}),
            "invalid_request",
        ),
        (
            "memory_erase_scope",
            json!({"scope": "default"}),
            json!({"scope": "user:someone-else"}),
            "wrong_scope",
        ),
    ];
    let mut covered = BTreeSet::new();
    let mut ids: Vec<(&str, Value)> = Vec::new();
    for (tool, valid, invalid, code) in cases {
        let answer = call_checked(&mut client, &schemas, tool, fill(valid, &ids), true);
        match tool {
            "memory_add" => ids.push(("$fact", answer["id"].clone())),
            "memory_archive" => ids.push(("$episode", answer["episode_id"].clone())),
            "memory_backfill" => {
                // The episode archived without a model got its fact.
                let episodes = answer["episodes"].as_array().unwrap();
                assert_eq!(episodes.len(), 1, "{answer}");
                assert_eq!(episodes[0]["changes"]["added"].as_array().unwrap().len(), 1);
            }
            "memory_forget" => {
                // The episode, and the fact the backfill extracted from it.
                assert_eq!(answer["facts"].as_array().unwrap().len(), 1, "{answer}");
            }
            _ => {}
        }
        let failure = call_checked(&mut client, &schemas, tool, fill(invalid, &ids), false);
        assert_eq!(failure["error"]["code"], code, "{tool}: {failure}");
        covered.insert(tool.to_owned());
    }
    let listed: BTreeSet<String> = schemas.as_object().unwrap().keys().cloned().collect();
    assert_eq!(covered, listed, "every listed tool has a case");

    // A failure that carries more than `ok` and `error` fits too (on demo:2 started again:
    // the end_run case ended it).
    client.call("init_run", json!({"spec_name": "demo", "task_id": "2"}));
    let no_block = client.call(
        "ingest_output",
        json!({"run_id": "demo:2", "role": "implementer", "task_id": "2", "output": "none"}),
    );
    assert_eq!(
        no_block["structuredContent"]["next_action"],
        "halt_schema_invalid_terminal"
    );
    assert!(client.finish().success());
}

// Streamable HTTP: `facts mcp --http`.

#[test]
fn http_clients_share_one_runtime_each_in_its_own_session() {
    let server = HttpServer::start("127.0.0.1:0", &["--project", "tests/fixtures/project"]);
    let port = server.url.strip_prefix("http://127.0.0.1:").unwrap();
    assert!(port.ends_with("/mcp"), "{}", server.url);
    assert_ne!(
        port, "0/mcp",
        "the printed URL names the port the system chose"
    );

    let mut first = HttpClient::connect(&server.url);
    let mut second = HttpClient::connect(&server.url);
    assert_ne!(first.session, second.session);
    let list = second.request("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ACTIONS);

    // The first client runs task 1...
    let init = first.call("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    assert_eq!(init["isError"], false, "{init}");
    let result = json!({
        "task_id": "1", "status": "completed",
        "summary": "Parser added in src/parser.rs",
        "files_changed": ["src/parser.rs"]
    });
    let ingest = first.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": output(&result)}),
    );
    assert_eq!(
        ingest["structuredContent"]["next_action"], "dispatch_reviewer",
        "{ingest}"
    );

    // ...and the second one's task 2 prompt carries its facts.
    second.call("init_run", json!({"spec_name": "demo", "task_id": "2"}));
    let compiled = second.call(
        "compile_prompt",
        json!({"run_id": "demo:2", "role": "implementer", "task_id": "2"}),
    );
    let context = compiled["structuredContent"]["session_context"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("src/parser.rs modified_by task:1"),
        "{compiled}"
    );
    let history = second.call(
        "fact_history",
        json!({"spec_name": "demo", "subject": "src/parser.rs"}),
    );
    assert!(
        !history["structuredContent"]["facts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let telemetry = second.call("get_telemetry", json!({}));
    assert_eq!(
        telemetry["structuredContent"]["telemetry"]["dispatch_count"],
        1
    );

    let unknown = second.call("fly", json!({}));
    assert_eq!(unknown["isError"], true);
    assert_eq!(
        unknown["structuredContent"]["error"]["code"],
        "unknown_tool"
    );

    // A request outside a session, or in a session that does not exist, is refused.
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}});
    let sessionless = post(&server.url, &[], &list.to_string());
    assert!(
        (400..500).contains(&sessionless.status),
        "{}",
        sessionless.status
    );
    let stranger = post(
        &server.url,
        &[("Mcp-Session-Id", "not-a-session")],
        &list.to_string(),
    );
    assert_eq!(stranger.status, 404, "{}", stranger.body);
}

#[test]
fn http_refuses_foreign_hosts_and_browser_origins() {
    // 127.0.0.2 is loopback too, and served by its own address.
    let server = HttpServer::start("127.0.0.2:0", &[]);
    let mut client = HttpClient::connect(&server.url);
    assert_eq!(client.call("get_telemetry", json!({}))["isError"], false);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "page", "version": "0"}}})
    .to_string();
    // A name that resolves here only through DNS rebinding.
    let rebound = post(&server.url, &[("Host", "attacker.example")], &init);
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    // A page in a browser.
    let page = post(
        &server.url,
        &[("Origin", "https://attacker.example")],
        &init,
    );
    assert_eq!(page.status, 403, "{}", page.body);
}

#[test]
fn the_logging_capability_is_declared_and_a_log_level_is_accepted() {
    let server = HttpServer::start("127.0.0.1:0", &[]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "inspector", "version": "0"}}});
    let answer = post(&server.url, &[], &init.to_string()).message();
    assert!(
        answer["result"]["capabilities"]["logging"].is_object(),
        "{answer}"
    );
    let mut client = HttpClient::connect(&server.url);
    for level in ["debug", "info", "warning", "emergency"] {
        let set = client.request("logging/setLevel", json!({"level": level}));
        assert_eq!(set["result"], json!({}), "{set}");
    }
    // A level that is not one is the client's error.
    let wrong = client.request("logging/setLevel", json!({"level": "loud"}));
    assert!(wrong["error"]["code"].is_i64(), "{wrong}");
    assert_eq!(client.call("get_telemetry", json!({}))["isError"], false);
}

#[test]
fn http_on_an_address_that_is_not_loopback_needs_allow_remote() {
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_facts"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&["--http", "0.0.0.0:0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    let (code, stderr) = run(&["--allow-remote"]);
    assert_eq!(code, Some(2), "--allow-remote needs --http: {stderr}");
    let (code, stderr) = run(&["--http", "somewhere:80"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("IP:PORT"), "{stderr}");
    // A client-named shell command is never offered to the network.
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("m.db");
    let (code, stderr) = run(&[
        "--http",
        "0.0.0.0:0",
        "--allow-remote",
        "--db",
        db.to_str().unwrap(),
        "--allow-llm-cmd",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--allow-llm-cmd"), "{stderr}");
    assert!(!db.exists());
}

#[test]
fn a_cache_budget_of_zero_still_answers_every_search_and_a_bad_one_is_a_usage_error() {
    // A budget of 0 MiB keeps at most the cache in use: searches still answer the same.
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let mut client = start_on(&db, &["--cache-mb", "0"]);
    remember(&mut client, "prefers_editor", "helix", "User prefers helix");
    for _ in 0..3 {
        let found = client.call("memory_search", json!({"query": "editor helix"}));
        let results = found["structuredContent"]["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{found}");
    }
    assert!(client.finish().success());

    let output = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["mcp", "--cache-mb", "lots"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--cache-mb"), "{stderr}");
}

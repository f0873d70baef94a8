//! `facts mcp`: the real binary driven over stdio the way an MCP client drives it, one
//! JSON-RPC request at a time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

/// A connected client: the server process and its pipes.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn start() -> Client {
        Client::start_with(&["mcp", "--project", "tests/fixtures/project"])
    }

    /// Starts `facts ARGS…` (from the crate's directory) and initializes the session.
    fn start_with<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Client {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "facts-test", "version": "0"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "facts", "{init}");
        assert!(init["result"]["capabilities"]["tools"].is_object());
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its response arrives.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert_ne!(
                self.stdout.read_line(&mut line).unwrap(),
                0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Calls a tool and returns its result (`content`, `structuredContent`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        response["result"].clone()
    }

    /// Closes stdin and waits for the server to exit.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }

    /// Kills the server, as a crash or `kill -9` would.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// The names of the listed tools.
    fn tool_names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", json!({}));
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// An agent's raw output: prose around one marked result block.
fn output(body: &Value) -> String {
    format!("Work done.\nBEGIN_DISPATCH_RESULT\n{body}\nEND_DISPATCH_RESULT\n")
}

#[test]
fn tools_list_names_every_action_with_its_schema() {
    let mut client = Client::start();
    let list = client.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "init_run",
            "compile_prompt",
            "ingest_output",
            "get_snapshot",
            "query_facts",
            "fact_history",
            "get_telemetry"
        ]
    );
    let ingest = &tools[2]["inputSchema"];
    assert_eq!(
        ingest["required"],
        json!(["run_id", "role", "task_id", "output"])
    );
    assert!(client.finish().success());
}

#[test]
fn a_session_over_mcp_carries_task_one_facts_into_task_two_prompt() {
    let mut client = Client::start();

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
fn protocol_failures_are_tool_errors_with_their_code_and_the_server_keeps_going() {
    let mut client = Client::start();

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

    // An unknown tool is a protocol error, not a tool result.
    let unknown = client.request("tools/call", json!({"name": "fly", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let telemetry = client.call("get_telemetry", json!({}));
    assert_eq!(
        telemetry["structuredContent"]["telemetry"]["schema_error_counts"]["marker_missing"],
        1
    );
    assert!(client.finish().success());
}

/// The memory tools, in the order `tools/list` shows them after the protocol's.
const MEMORY_TOOLS: [&str; 6] = [
    "memory_add",
    "memory_search",
    "memory_recall",
    "memory_history",
    "memory_delete",
    "memory_archive",
];

/// `facts mcp --db DB …` from the crate's directory.
fn start_on(db: &Path, extra: &[&str]) -> Client {
    let mut args: Vec<std::ffi::OsString> = vec!["mcp".into(), "--db".into(), db.into()];
    args.extend(extra.iter().map(Into::into));
    Client::start_with(&args)
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
    let mut client = Client::start();
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
    assert_eq!(names.len(), 13, "{names:?}");
    assert_eq!(names[7..], MEMORY_TOOLS);

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
    assert_eq!(archived["structuredContent"]["facts"], Value::Null);
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
        archived["structuredContent"]["facts"]["added"]
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

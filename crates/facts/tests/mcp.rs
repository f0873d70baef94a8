//! `facts mcp`: the real binary driven over stdio the way an MCP client drives it, one
//! JSON-RPC request at a time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A connected client: the server process and its pipes.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
            .args(["mcp", "--project", "tests/fixtures/project"])
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

//! An MCP client of `facts mcp` over stdio, one JSON-RPC request at a time, shared by the
//! tests (`tests/mcp.rs`, `tests/postgres.rs`) and the benchmarks (`benches/mcp*.rs`),
//! which include it with `#[path]`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};

use serde_json::{Value, json};

/// A connected client: the server process and its pipes. Dropping it kills the server.
pub(crate) struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    /// Starts `command` (a `facts mcp …`; its stderr as the caller set it) with piped
    /// stdin and stdout, and initializes the session.
    pub(crate) fn start(mut command: Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
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
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// Writes one message line.
    pub(crate) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its response arrives.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
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
    pub(crate) fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        response["result"].clone()
    }

    /// Calls a tool that must succeed; returns its structured content.
    pub(crate) fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// The listed tools.
    pub(crate) fn tools(&mut self) -> Vec<Value> {
        let list = self.request("tools/list", json!({}));
        list["result"]["tools"].as_array().unwrap().clone()
    }

    /// The names of the listed tools.
    pub(crate) fn tool_names(&mut self) -> Vec<String> {
        self.tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Closes stdin and waits for the server to exit.
    pub(crate) fn finish(mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }

    /// Kills the server, as a crash or `kill -9` would.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Already exited after `finish` or `kill`: nothing to do then.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

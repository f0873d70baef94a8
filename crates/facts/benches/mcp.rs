//! `memory_recall` through `facts mcp --db`, round trip: a JSON-RPC `tools/call` written to
//! the server's stdin until its response line is read back, with 1,000 memories in the
//! SQLite database (issue goal: at most 2 ms).
//!
//! Run with `cargo bench -p facts --bench mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use divan::Bencher;
use serde_json::{Value, json};

fn main() {
    divan::main();
}

/// The server and its pipes.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::TempDir::new().unwrap();
        let db = dir.path().join("memory.db");
        let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
            .args(["mcp", "--db"])
            .arg(&db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
            next_id: 0,
            _dir: dir,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

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

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answer
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TOPICS: &[&str] = &[
    "test framework",
    "editor",
    "shell",
    "database",
    "deployment target",
    "code review style",
    "branch naming",
    "commit message format",
    "language",
    "formatter",
];
const VALUES: &[&str] = &[
    "pytest",
    "helix",
    "fish",
    "postgres",
    "kubernetes",
    "terse",
    "kebab",
    "imperative",
    "rust",
    "rustfmt",
];

#[divan::bench(sample_count = 200, sample_size = 1)]
fn memory_recall_round_trip(bencher: Bencher<'_, '_>) {
    let mut server = Server::start();
    for i in 0..1_000 {
        let topic = TOPICS[i % TOPICS.len()];
        let value = VALUES[(i / TOPICS.len()) % VALUES.len()];
        server.call(
            "memory_add",
            json!({"subject": format!("user:{i}"), "relation": format!("prefers_{}", topic.replace(' ', "_")),
                   "object": value, "statement": format!("User {i} prefers {value} as their {topic}"),
                   "category": "preference", "confidence": 0.9}),
        );
    }
    let mut n = 0usize;
    bencher.bench_local(|| {
        n += 1;
        let topic = TOPICS[n % TOPICS.len()];
        server.call(
            "memory_recall",
            json!({"query": format!("which {topic} does the user prefer?"), "max_tokens": 500}),
        )
    });
}

//! `memory_recall` through `facts mcp --db`, round trip: a JSON-RPC `tools/call` written to
//! the server's stdin until its response line is read back, with 1,000 memories in the
//! SQLite database (issue goal: at most 2 ms).
//!
//! Run with `cargo bench -p factmem-cli --bench mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::process::{Command, Stdio};

use divan::Bencher;
use serde_json::json;

fn main() {
    divan::main();
}

#[path = "../tests/support/stdio_client.rs"]
mod stdio_client;

use stdio_client::Client;

/// `facts mcp --db` on a new SQLite database, and the folder that holds it.
fn start() -> (Client, tempfile::TempDir) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(["mcp", "--db"])
        .arg(dir.path().join("memory.db"))
        .stderr(Stdio::null());
    (Client::start(command), dir)
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
    let (mut server, _dir) = start();
    for i in 0..1_000 {
        let topic = TOPICS[i % TOPICS.len()];
        let value = VALUES[(i / TOPICS.len()) % VALUES.len()];
        server.ok(
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
        server.ok(
            "memory_recall",
            json!({"query": format!("which {topic} does the user prefer?"), "max_tokens": 500}),
        )
    });
}

//! Tool calls through `facts mcp`, round trip:
//!
//! - `memory_recall_round_trip`: `memory_recall` over stdio, a JSON-RPC `tools/call` written
//!   to the server's stdin until its response line is read back, with 1,000 memories in
//!   the SQLite database (issue goal: at most 2 ms);
//! - `http_tool_call_round_trip`: `get_telemetry` over streamable HTTP (`--http`), one POST
//!   on a new loopback connection until the server closes it, with and without `--tokens`
//!   (the cost of a call over HTTP whatever it does: 44 ms before `TCP_NODELAY`).
//!
//! Run with `cargo bench -p factmem-cli --bench mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::process::{Command, Stdio};

use divan::Bencher;
use serde_json::json;

fn main() {
    divan::main();
}

#[path = "../tests/support/http_client.rs"]
mod http_client;
#[path = "../tests/support/stdio_client.rs"]
mod stdio_client;

use http_client::{HttpClient, HttpServer};
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

/// The token of the `--tokens` variant (its SHA-256 is in the token file).
const TOKEN: &str = "bench-token-0123456789abcdef";

#[divan::bench(args = [false, true], sample_count = 300, sample_size = 1)]
fn http_tool_call_round_trip(bencher: Bencher<'_, '_>, tokens: bool) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut args: Vec<String> = vec!["--project".into(), "tests/fixtures/project".into()];
    let mut headers = Vec::new();
    if tokens {
        use sha2::Digest;
        let digest: String = sha2::Sha256::digest(TOKEN.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let file = dir.path().join("tokens.json");
        let tenants = json!({"defaults": {"rate_per_sec": 100_000, "burst": 100_000},
            "tenants": [{"tenant": "bench", "sha256": digest, "scope": "bench", "rights": ["read"]}]});
        std::fs::write(&file, tenants.to_string()).unwrap();
        args.extend(["--tokens".into(), file.display().to_string()]);
        headers.push(("Authorization".to_owned(), format!("Bearer {TOKEN}")));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = HttpServer::start("127.0.0.1:0", &args);
    let mut client = HttpClient::connect_with(&server.url, &headers);
    client.call("get_telemetry", json!({}));
    bencher.bench_local(|| client.call("get_telemetry", json!({})));
}

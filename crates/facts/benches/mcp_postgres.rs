//! `compile_prompt` through `facts mcp --db postgres://…`, round trip: a JSON-RPC
//! `tools/call` written to the server's stdin until its response line is read back, with
//! the spec's facts on the PostgreSQL server `FACTMEM_PG_URL` names (each prompt searches
//! them for its `[Session Context]`).
//!
//! Run with `eval "$(.ci/pg-server start)"` then `cargo bench -p factmem-cli --bench mcp_postgres`;
//! without `FACTMEM_PG_URL` it prints why and measures nothing. Every run uses a fresh
//! spec and memory scope, so runs never see each other's facts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::Write;
use std::process::{Command, Stdio};

use divan::Bencher;
use serde_json::json;

/// The environment variable that names the test server.
const URL_ENV: &str = "FACTMEM_PG_URL";

fn main() {
    if std::env::var(URL_ENV).map_or(true, |url| url.is_empty()) {
        // Straight to stderr, as the tests do.
        let _ = writeln!(
            std::io::stderr(),
            "{URL_ENV} is not set: the PostgreSQL benchmark is skipped; \
             `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
        return;
    }
    divan::main();
}

/// A name no other run uses: the process id and the time.
fn fresh(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}", std::process::id())
}

#[path = "../tests/support/stdio_client.rs"]
mod stdio_client;

use stdio_client::Client;

/// `facts mcp --db URL --scope <fresh> --project <a project with spec>`, and the project's
/// folder.
fn start(url: &str, spec: &str) -> (Client, tempfile::TempDir) {
    let dir = tempfile::TempDir::new().unwrap();
    let spec_dir = dir.path().join(".spec-context/specs").join(spec);
    std::fs::create_dir_all(&spec_dir).unwrap();
    std::fs::write(
        spec_dir.join("tasks.md"),
        "# Tasks: Bench\n\n\
         - [ ] 1. Parse tasks.md\n  \
         - _Prompt: Role: Rust Developer | Task: Parse tasks.md task lines in src/parser.rs | Success: every line parses_\n\
         - [ ] 2. Extend the parser with prompts\n  \
         - _Prompt: Role: Rust Developer | Task: Extend the tasks.md parser in src/parser.rs with multi-line prompts | Success: prompts stay whole_\n",
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(["mcp", "--db", url, "--scope", &fresh("bench")])
        .arg("--project")
        .arg(dir.path())
        .env_remove("FACTMEM_DATABASE_URL")
        .stderr(Stdio::inherit());
    (Client::start(command), dir)
}

#[divan::bench(sample_count = 200, sample_size = 1)]
fn compile_prompt_round_trip(bencher: Bencher<'_, '_>) {
    let url = std::env::var(URL_ENV).unwrap();
    let spec = fresh("bench-spec");
    let (mut server, _dir) = start(&url, &spec);
    // Task 1 leaves facts in the spec's store on the server; task 2's prompts search them.
    server.ok("init_run", json!({"spec_name": spec, "task_id": "1"}));
    let result = json!({
        "task_id": "1", "status": "completed",
        "summary": "Parser added in src/parser.rs with a Task struct",
        "files_changed": ["src/parser.rs", "src/lib.rs"]
    });
    let output = format!("Done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n");
    let run_1 = format!("{spec}:1");
    server.ok(
        "ingest_output",
        json!({"run_id": run_1, "role": "implementer", "task_id": "1", "output": output}),
    );
    server.ok("init_run", json!({"spec_name": spec, "task_id": "2"}));
    let run_2 = format!("{spec}:2");
    let request = json!({"run_id": run_2, "role": "implementer", "task_id": "2"});
    let first = server.ok("compile_prompt", request.clone());
    assert!(
        first["session_context"]
            .as_str()
            .unwrap_or_default()
            .contains("src/parser.rs"),
        "{first}"
    );
    bencher.bench_local(|| server.ok("compile_prompt", request.clone()));
}

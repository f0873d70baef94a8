//! `facts mem` and `facts mcp` on a PostgreSQL server: `--db postgres://…` and
//! `$FACTMEM_DATABASE_URL` select it, and the commands and tools work as on SQLite. Each
//! test uses a scope (and a spec) of its own, so tests sharing the server never see each
//! other's facts.
//!
//! The server is the one `FACTMEM_PG_URL` names; without it the tests that need it are
//! skipped with one message on stderr, and under `CI=true` they fail instead
//! (`eval "$(.ci/pg-server start)"` starts a throwaway server and sets it). An unreachable
//! server needs none.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "support/pg_server.rs"]
mod pg_server;
use pg_server::pg_server;

/// A server nothing listens on.
const UNREACHABLE: &str = "postgres://factmem:s3cret@127.0.0.1:1/factmem";

/// A name no other test (of this run or an earlier one) uses.
fn fresh(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("test-{name}-{}-{nanos}-{n}", std::process::id())
}

/// `facts ARGS…` with none of the database variables set.
fn facts(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(args)
        .env_remove("FACTMEM_DATABASE_URL")
        .env_remove("FACTMEM_DB")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// The one JSON document of a command that must succeed.
fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn mem_remembers_and_recalls_on_a_server_named_by_db() {
    let Some(url) = pg_server("the PostgreSQL tests of facts are") else {
        return;
    };
    let scope = fresh("mem");
    let mem = |args: &[&str]| {
        let mut all = vec![
            "mem",
            "--db",
            url.as_str(),
            "--scope",
            scope.as_str(),
            "--json",
        ];
        all.extend_from_slice(args);
        json_of(&facts(&all).output().unwrap())
    };
    let added = mem(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_test_framework",
        "--object",
        "pytest",
        "--statement",
        "User prefers pytest over unittest",
    ]);
    assert_eq!(added["status"], "added", "{added}");
    let id = added["id"].as_str().unwrap().to_owned();
    // A newer object supersedes it; the history keeps both.
    let superseded = mem(&["update", &id, "--object", "nextest"]);
    assert_eq!(superseded["superseded"], id.as_str(), "{superseded}");
    let found = mem(&["search", "test", "framework"]);
    assert_eq!(found["results"][0]["fact"]["object"], "nextest", "{found}");
    let recall = mem(&["recall", "which test framework?"]);
    assert!(
        recall["text"].as_str().unwrap().contains("nextest"),
        "{recall}"
    );
    let history = mem(&["history", "user"]);
    assert_eq!(
        history["versions"].as_array().map(Vec::len),
        Some(2),
        "{history}"
    );
    // Another scope on the same server sees none of it.
    let other = json_of(
        &facts(&[
            "mem",
            "--db",
            &url,
            "--scope",
            &fresh("other"),
            "--json",
            "list",
        ])
        .output()
        .unwrap(),
    );
    assert_eq!(other["facts"], json!([]), "{other}");
}

#[test]
fn mem_reads_the_server_from_factmem_database_url_before_factmem_db() {
    let Some(url) = pg_server("the PostgreSQL tests of facts are") else {
        return;
    };
    let scope = fresh("env");
    let dir = TempDir::new().unwrap();
    let sqlite = dir.path().join("memory.db");
    let run = |args: &[&str]| {
        let mut all = vec!["mem", "--scope", scope.as_str(), "--json"];
        all.extend_from_slice(args);
        facts(&all)
            .env("FACTMEM_DATABASE_URL", &url)
            .env("FACTMEM_DB", &sqlite)
            .output()
            .unwrap()
    };
    let added = json_of(&run(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_editor",
        "--object",
        "helix",
    ]));
    assert_eq!(added["status"], "added", "{added}");
    let listed = json_of(&run(&["list"]));
    assert_eq!(listed["facts"][0]["object"], "helix", "{listed}");
    assert!(
        !sqlite.exists(),
        "FACTMEM_DB is not used when FACTMEM_DATABASE_URL is set"
    );
    // The same scope on the server through --db.
    let through_db = json_of(
        &facts(&[
            "mem", "--db", &url, "--scope", &scope, "--json", "search", "editor",
        ])
        .output()
        .unwrap(),
    );
    assert_eq!(through_db["results"][0]["fact"]["object"], "helix");
    // --db wins over the variable.
    let on_file = json_of(
        &facts(&[
            "mem",
            "--db",
            sqlite.to_str().unwrap(),
            "--scope",
            &scope,
            "--json",
            "list",
        ])
        .env("FACTMEM_DATABASE_URL", &url)
        .output()
        .unwrap(),
    );
    assert_eq!(on_file["facts"], json!([]), "{on_file}");
    assert!(sqlite.exists());
}

#[test]
fn an_unreachable_server_is_one_clear_line_and_exit_1() {
    for args in [
        vec!["mem", "--db", UNREACHABLE, "list"],
        vec!["mcp", "--db", UNREACHABLE],
    ] {
        let output = facts(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
        assert!(
            lines[0].starts_with("facts: store error (io): ")
                && lines[0].contains("postgres://factmem@127.0.0.1:1/factmem")
                && lines[0].contains("error connecting to server"),
            "{stderr}"
        );
        assert!(!stderr.contains("s3cret"), "{stderr}");
        assert!(output.stdout.is_empty());
    }
    // With --json, the error is a document too.
    let output = facts(&["mem", "--db", UNREACHABLE, "--json", "list"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["code"], "io", "{document}");
}

#[test]
fn the_variable_counts_as_db_for_the_flags_that_need_one() {
    // Without a database, --scope is a usage error…
    let output = facts(&["mcp", "--scope", "x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    // …with the variable it is accepted (and the unreachable server then fails the start).
    let output = facts(&["mcp", "--scope", "x", "--allow-llm-cmd"])
        .env("FACTMEM_DATABASE_URL", UNREACHABLE)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("store error (io)"), "{stderr}");
    // An empty variable is no database.
    let output = facts(&["mcp", "--scope", "x"])
        .env("FACTMEM_DATABASE_URL", "")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[path = "support/stdio_client.rs"]
mod stdio_client;

use stdio_client::Client;

/// A project with one spec of three tasks named `spec`.
fn project(dir: &Path, spec: &str) -> String {
    let spec_dir = dir.join(".spec-context/specs").join(spec);
    std::fs::create_dir_all(&spec_dir).unwrap();
    std::fs::write(
        spec_dir.join("tasks.md"),
        "# Tasks: Demo\n\n\
         - [ ] 1. Parse tasks.md\n  \
         - _Prompt: Role: Rust Developer | Task: Parse tasks.md task lines in src/parser.rs | Success: every line parses_\n\
         - [ ] 2. Extend the parser with prompts\n  \
         - _Prompt: Role: Rust Developer | Task: Extend the tasks.md parser with multi-line prompts | Success: prompts stay whole_\n",
    )
    .unwrap();
    dir.to_str().unwrap().to_owned()
}

/// Task 1's output: prose around the marked result block.
fn task_one_output() -> String {
    let result = json!({
        "task_id": "1", "status": "completed",
        "summary": "Parser added in src/parser.rs",
        "files_changed": ["src/parser.rs"]
    });
    format!("Work done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

#[test]
fn mcp_on_a_server_lists_the_memory_tools_and_serves_them_and_the_protocol() {
    let Some(url) = pg_server("the PostgreSQL tests of facts are") else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let spec = fresh("spec");
    let project = project(dir.path(), &spec);
    let scope = fresh("mcp");
    let start = |via_env: bool| {
        let mut command = facts(&["mcp", "--scope", &scope, "--project", &project]);
        if via_env {
            command.env("FACTMEM_DATABASE_URL", &url);
        } else {
            command.args(["--db", &url]);
        }
        Client::start(command)
    };

    let mut client = start(false);
    let names = client.tool_names();
    for tool in ["init_run", "compile_prompt", "memory_add", "memory_recall"] {
        assert!(names.iter().any(|n| n == tool), "{tool}: {names:?}");
    }
    let added = client.ok(
        "memory_add",
        json!({"subject": "user", "relation": "prefers_test_framework", "object": "pytest",
               "statement": "User prefers pytest", "category": "preference",
               "confidence": 0.9}),
    );
    assert_eq!(added["status"], "added", "{added}");
    let init = client.ok("init_run", json!({"spec_name": spec, "task_id": "1"}));
    let run_1 = init["run_id"].as_str().unwrap().to_owned();
    client.ok(
        "ingest_output",
        json!({"run_id": run_1, "role": "implementer", "task_id": "1",
               "output": task_one_output()}),
    );
    assert!(client.finish().success());

    // A new server, through the variable: the spec's facts and the memory are on the server.
    let mut client = start(true);
    let init = client.ok("init_run", json!({"spec_name": spec, "task_id": "2"}));
    let run_2 = init["run_id"].as_str().unwrap().to_owned();
    let compiled = client.ok(
        "compile_prompt",
        json!({"run_id": run_2, "role": "implementer", "task_id": "2"}),
    );
    let context = compiled["session_context"].as_str().unwrap();
    assert!(context.starts_with("[Session Context]"), "{compiled}");
    assert!(context.contains("src/parser.rs"), "{context}");
    let found = client.ok("memory_search", json!({"query": "pytest"}));
    assert_eq!(found["results"][0]["fact"]["object"], "pytest", "{found}");
    let recalled = client.ok("memory_recall", json!({"query": "which test framework?"}));
    assert!(recalled.to_string().contains("pytest"), "{recalled}");
    assert!(client.finish().success());
}

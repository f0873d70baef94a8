//! Reads that fail (issue 23), through the real binary: a database that cannot be read is
//! a store error with its code, never an empty answer. `facts mem` exits 1 with `store
//! error (CODE): …` (and `{"error": {"code": CODE, …}}` with `--json`); over
//! MCP a read tool answers a tool error carrying the code (the store's own for the memory
//! tools, `store_` and it for the runtime's).
//!
//! SQLite: another connection (rusqlite) renames the tables the reads use, after the
//! database was opened. PostgreSQL: a database of the test's own terminates the server's
//! sessions and refuses new ones, while `facts mcp` holds a connection.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "support/stdio_client.rs"]
mod stdio_client;
use stdio_client::Client;

#[path = "support/pg_server.rs"]
mod pg_server;
use pg_server::pg_server;

/// Renames `tables` of the SQLite database `db` from `from…` to `to…` names, from a
/// connection of the test's own.
fn rename(db: &Path, tables: &[&str], from: &str, to: &str) {
    let other = rusqlite::Connection::open(db).unwrap();
    for table in tables {
        other
            .execute_batch(&format!("ALTER TABLE {from}{table} RENAME TO {to}{table}"))
            .unwrap();
    }
}

/// `facts mem --db DB ARGS…`.
fn mem(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_facts"))
        .arg("mem")
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("FACTMEM_DB")
        .env_remove("FACTMEM_DATABASE_URL")
        .env_remove("FACTMEM_EMBEDDER")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn mem_reads_of_a_database_whose_facts_table_is_gone_exit_1_with_the_store_code() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let added = mem(
        &db,
        &[
            "add",
            "--subject",
            "user",
            "--relation",
            "lives_in",
            "--object",
            "Berlin",
            "--json",
        ],
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let id = serde_json::from_slice::<Value>(&added.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The file still opens (its schema version and scope are there); the facts are not.
    rename(&db, &["facts"], "", "gone_");
    for args in [
        vec!["list"],
        vec!["list", "--as-of", "2099-01-01T00:00:00Z"],
        vec!["search", "berlin"],
        vec!["history", "user"],
        vec!["show", id.as_str()],
        vec!["recall", "where does the user live"],
        vec!["format"],
    ] {
        let output = mem(&db, &args);
        let message = stderr(&output);
        // Before, `list` and `search` printed nothing and exited 0.
        assert_eq!(output.status.code(), Some(1), "{args:?}: {message}");
        assert!(
            message.starts_with(
                "facts: store error (backend): store backend failed: no such table: facts"
            ),
            "{args:?}: {message}"
        );
        let mut json = args.clone();
        json.push("--json");
        let output = mem(&db, &json);
        assert_eq!(output.status.code(), Some(1), "{json:?}");
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(document["error"]["code"], "backend", "{json:?}: {document}");
    }
    // Nothing was lost: with the table back the fact is listed.
    rename(&db, &["facts"], "gone_", "");
    let output = mem(&db, &["list"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("Berlin"));
}

/// An agent's raw output for task 1 of the fixture project's `demo` spec.
fn task_one_output() -> String {
    let result = json!({"task_id": "1", "status": "completed",
        "summary": "Parser added in src/parser.rs", "files_changed": ["src/parser.rs"]});
    format!("Work done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

/// The error code of a tool call that must fail.
fn tool_error(client: &mut Client, tool: &str, arguments: Value) -> String {
    let result = client.call(tool, arguments);
    assert_eq!(result["isError"], true, "{tool}: {result}");
    result["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn mcp_read_tools_on_a_database_whose_tables_are_gone_are_tool_errors_with_the_code() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .arg("mcp")
        .arg("--db")
        .arg(&db)
        .args(["--project", "tests/fixtures/project"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("FACTMEM_EMBEDDER")
        .stderr(Stdio::inherit());
    let mut client = Client::start(command);
    client.ok(
        "memory_add",
        json!({"subject": "user", "relation": "lives_in", "object": "Berlin"}),
    );
    client.ok("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    client.ok(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": task_one_output()}),
    );
    client.ok("init_run", json!({"spec_name": "demo", "task_id": "2"}));

    rename(&db, &["facts", "scopes"], "", "gone_");
    for (tool, arguments) in [
        ("memory_list", json!({})),
        ("memory_search", json!({"query": "berlin"})),
        ("memory_history", json!({"subject": "user"})),
        (
            "memory_recall",
            json!({"query": "where does the user live"}),
        ),
        ("memory_format", json!({})),
    ] {
        assert_eq!(
            tool_error(&mut client, tool, arguments),
            "backend",
            "{tool}"
        );
    }
    for (tool, arguments) in [
        (
            "query_facts",
            json!({"spec_name": "demo", "task_id": "2", "task_description": "parser"}),
        ),
        (
            "fact_history",
            json!({"spec_name": "demo", "subject": "src/parser.rs"}),
        ),
        ("get_telemetry", json!({})),
        (
            "compile_prompt",
            json!({"run_id": "demo:2", "role": "implementer", "task_id": "2"}),
        ),
    ] {
        assert_eq!(
            tool_error(&mut client, tool, arguments),
            "store_backend",
            "{tool}"
        );
    }

    // The server goes on, and answers once the tables are back.
    rename(&db, &["facts", "scopes"], "gone_", "");
    let found = client.ok("memory_search", json!({"query": "berlin"}));
    assert_eq!(found["results"][0]["fact"]["object"], "Berlin", "{found}");
    let history = client.ok(
        "fact_history",
        json!({"spec_name": "demo", "subject": "src/parser.rs"}),
    );
    assert!(
        !history["facts"].as_array().unwrap().is_empty(),
        "{history}"
    );
    assert!(client.finish().success());
}

/// Runs `sql` on the test server's own database.
fn admin(url: &str, sql: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.batch_execute(sql).unwrap();
}

/// A database of its own on the test server, dropped at the end (the server's sessions
/// of it are cut, which would cut every other test's in the shared database).
struct OwnDatabase {
    admin: String,
    name: String,
    url: String,
}

impl OwnDatabase {
    fn create(url: &str) -> OwnDatabase {
        let (address, query) = url.split_once('?').unwrap_or((url, ""));
        let (server, _database) = address.rsplit_once('/').unwrap();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!("factmem_reads_{}_{nanos}", std::process::id());
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        admin(url, &format!("CREATE DATABASE {name}"));
        OwnDatabase {
            admin: url.to_owned(),
            url: format!("{server}/{name}{query}"),
            name,
        }
    }

    /// Terminates the database's sessions and refuses new ones.
    fn cut(&self) {
        admin(
            &self.admin,
            &format!(
                "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
                 SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'",
                name = self.name
            ),
        );
    }

    fn restore(&self) {
        admin(
            &self.admin,
            &format!("ALTER DATABASE {} ALLOW_CONNECTIONS true", self.name),
        );
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

#[test]
fn mcp_read_tools_on_a_postgres_database_that_cut_its_connections_are_io_tool_errors() {
    let Some(url) = pg_server("the PostgreSQL read failures of facts are") else {
        return;
    };
    let database = OwnDatabase::create(&url);
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(["mcp", "--db", &database.url, "--scope", "reads"])
        .env_remove("FACTMEM_EMBEDDER")
        .stderr(Stdio::null());
    let mut client = Client::start(command);
    client.ok(
        "memory_add",
        json!({"subject": "user", "relation": "lives_in", "object": "Berlin"}),
    );
    database.cut();
    // The held connection is gone and no new one is let in: `io` (after the pool's
    // connect timeout), never an empty list.
    for (tool, arguments) in [
        ("memory_list", json!({})),
        ("memory_search", json!({"query": "berlin"})),
        ("memory_history", json!({"subject": "user"})),
    ] {
        assert_eq!(tool_error(&mut client, tool, arguments), "io", "{tool}");
    }
    database.restore();
    let listed = client.ok("memory_list", json!({}));
    assert_eq!(listed["count"], 1, "{listed}");
    assert!(client.finish().success());
}

//! `facts mem` and `facts mcp` on a PostgreSQL server: `--db postgres://…` and
//! `$FACTMEM_DATABASE_URL` select it, and the commands and tools work as on SQLite. Each
//! test uses a scope (and a spec) of its own, so tests sharing the server never see each
//! other's facts.
//!
//! The server is the one `FACTMEM_PG_URL` names; without it the tests that need it are
//! skipped with one message on stderr, and under `CI=true` they fail instead
//! (`eval "$(.ci/pg-server start)"` starts a throwaway server and sets it). An unreachable
//! server needs none.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

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

    // Erased, and the tables vacuumed: the scope is empty, and a scope never opened is
    // not found.
    let erased = mem(&["erase", "--yes", "--vacuum"]);
    assert_eq!(erased["erased"]["versions"], 2, "{erased}");
    assert_eq!(erased["vacuumed"], true, "{erased}");
    assert_eq!(mem(&["list"])["count"], 0);
    let unknown = facts(&[
        "mem",
        "--db",
        &url,
        "--scope",
        &fresh("never"),
        "erase",
        "--yes",
    ])
    .output()
    .unwrap();
    assert_eq!(unknown.status.code(), Some(3), "{unknown:?}");
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

    // The tools of long-term memory's new paths, on the server.
    let then = client.ok("memory_list", json!({"as_of": "2026-01-01T00:00:00Z"}));
    assert_eq!(then["count"], 0, "added today: {then}");
    client.ok(
        "memory_add",
        json!({"subject": "Mel", "relation": "adopted_pet", "object": "Oscar",
               "valid_from": "2026-03-01T09:00:00Z"}),
    );
    let aliased = client.ok("memory_alias", json!({"alias": "Mel", "entity": "Melanie"}));
    assert_eq!(
        aliased["merged"].as_array().map(Vec::len),
        Some(1),
        "{aliased}"
    );
    let aliases = client.ok("memory_aliases", json!({}));
    assert_eq!(aliases["aliases"][0]["alias"], "mel", "{aliases}");
    // Moved under the entity, still true since it was said.
    let then = client.ok("memory_list", json!({"as_of": "2026-03-02T00:00:00Z"}));
    let moved = then["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["subject"] == "melanie")
        .unwrap_or_else(|| panic!("melanie's fact in {then}"));
    assert_eq!(moved["valid_from"], "2026-03-01T09:00:00Z", "{then}");
    let now = client.ok("memory_list", json!({}));
    let subjects: Vec<&str> = now["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["user", "melanie"], "{now}");
    let set = client.ok("memory_set_context", json!({"work": "Staff engineer"}));
    assert_eq!(set["changed"], json!(["work"]));
    let context = client.ok("memory_context", json!({}));
    assert_eq!(
        context["user_context"]["work"], "Staff engineer",
        "{context}"
    );
    let forgot = client.ok("memory_forget", json!({"subject": "mel"}));
    assert_eq!(forgot["versions"], 2, "{forgot}");
    assert_eq!(forgot["aliases"], json!(["mel"]), "{forgot}");
    let history = client.ok("memory_history", json!({"subject": "melanie"}));
    assert_eq!(history["versions"], json!([]), "{history}");
    let again = client.call("memory_forget", json!({"subject": "mel"}));
    assert_eq!(
        again["structuredContent"]["error"]["code"], "not_found",
        "{again}"
    );
    assert!(client.finish().success());
}

// Memory that keeps itself true, on the server: the scenarios of `tests/mem.rs` that
// touch the store's new paths (dated messages, valid time, known facts, aliases,
// forgetting), with the same fixtures and a scripted model command.

/// The path of `tests/fixtures/memory/NAME`.
fn fixture_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/memory")
        .join(name)
        .display()
        .to_string()
}

/// `facts mem --db URL --scope SCOPE` in a scope of its own, with a folder for the
/// scripted model's reply and the prompt it saves.
struct ServerMem {
    url: String,
    scope: String,
    dir: TempDir,
}

impl ServerMem {
    fn new(url: String, name: &str) -> ServerMem {
        ServerMem {
            url,
            scope: fresh(name),
            dir: TempDir::new().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["mem", "--db", &self.url, "--scope", &self.scope];
        all.extend_from_slice(args);
        facts(&all).output().unwrap()
    }

    /// The text answer of a command that must succeed.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// The JSON answer of a command that must succeed.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        json_of(&self.run(&all))
    }

    /// The exit code and error code of a command that must fail.
    fn failure(&self, args: &[&str]) -> (Option<i32>, String) {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.run(&all);
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        let code = document["error"]["code"].as_str().unwrap().to_owned();
        (output.status.code(), code)
    }

    /// A model command that saves its prompt and answers `reply`.
    fn model(&self, reply: &str) -> String {
        let reply_path = self.dir.path().join("reply.json");
        std::fs::write(&reply_path, reply).unwrap();
        format!(
            "cat > '{}'; cat '{}'",
            self.dir.path().join("prompt.txt").display(),
            reply_path.display()
        )
    }

    fn prompt(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prompt.txt")).unwrap()
    }

    /// Archives the fixture conversation `name`, the model answering `reply`.
    fn archive(&self, name: &str, reply: &str, extra: &[&str]) -> Value {
        let llm = self.model(reply);
        let transcript = fixture_path(name);
        let mut args = vec!["archive", "--transcript", &transcript, "--llm-cmd", &llm];
        args.extend_from_slice(extra);
        self.json(&args)
    }

    /// The objects of the current facts (or those valid at `as_of`), oldest first.
    fn objects(&self, as_of: Option<&str>) -> Vec<String> {
        let mut args = vec!["list"];
        args.extend(as_of.map(|at| ["--as-of", at]).into_iter().flatten());
        self.json(&args)["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["object"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[test]
fn mem_on_a_server_dates_facts_by_the_conversation_and_answers_as_of() {
    let Some(url) = pg_server("the PostgreSQL tests of facts are") else {
        return;
    };
    let mem = ServerMem::new(url, "dated");
    let greyhound = std::fs::read_to_string(fixture_path("greyhound.reply.json")).unwrap();
    let archived = mem.archive(
        "greyhound.jsonl",
        &greyhound,
        &["--session-time", "2026-02-20T10:00:00Z"],
    );
    assert_eq!(archived["started_at"], "2026-02-20T10:00:00Z", "{archived}");
    let luna = archived["changes"]["added"][0].as_str().unwrap().to_owned();
    let prompt = mem.prompt();
    assert!(
        prompt.contains("[0] user (2026-02-20): Quick question")
            && prompt.contains("[1] user (2026-03-01): I adopted a greyhound called Luna."),
        "{prompt}"
    );
    let history = mem.json(&["history", "user"]);
    let version = &history["versions"][0];
    assert_eq!(version["valid_from"], "2026-03-01T08:30:00Z", "{history}");
    let recorded = &version["recorded_at"].as_str().unwrap()[..10];
    let text = mem.ok(&["history", "user"]);
    assert!(text.starts_with(&luna), "{text}");
    if recorded != "2026-03-01" {
        assert!(
            text.contains(&format!("from 2026-03-01 (recorded {recorded})")),
            "{text}"
        );
    }
    let recall = mem.ok(&["recall", "greyhound Luna"]);
    assert!(
        recall.contains("User adopted a greyhound called Luna (from 2026-03-01)")
            && recall.contains("  > [2026-03-01] user: I adopted a greyhound called Luna."),
        "{recall}"
    );

    // Paris, then Berlin, in one conversation; March 1 is Paris's time.
    let mem = ServerMem::new(mem.url.clone(), "moving");
    let moving = std::fs::read_to_string(fixture_path("moving.reply.json")).unwrap();
    let archived = mem.archive("moving.jsonl", &moving, &[]);
    assert_eq!(
        archived["changes"]["superseded"].as_array().map(Vec::len),
        Some(1)
    );
    let march = "2026-03-01T12:00:00Z";
    assert_eq!(mem.objects(None), ["Acme", "Berlin"]);
    assert_eq!(mem.objects(Some(march)), ["Paris", "Acme"]);
    let found = mem.json(&["search", "lives", "--as-of", march]);
    assert_eq!(found["results"][0]["fact"]["object"], "Paris", "{found}");
    assert_eq!(
        found["results"].as_array().map(Vec::len),
        Some(1),
        "{found}"
    );
    let history = mem.json(&["history", "user", "--as-of", march]);
    assert_eq!(
        history["versions"].as_array().map(Vec::len),
        Some(2),
        "{history}"
    );
    let recall = mem.ok(&[
        "recall",
        "where does the user live? Paris Berlin",
        "--as-of",
        march,
    ]);
    assert!(
        recall.contains("User lives in Paris (from 2026-02-10)"),
        "{recall}"
    );
    // Neither the fact nor the message of March 20.
    assert!(
        !recall.contains("Berlin (from") && !recall.contains("moved to Berlin"),
        "{recall}"
    );
    let format = mem.json(&["format", "--as-of", march]);
    assert_eq!(
        format["text"],
        "Facts:\n- [context | 1.00] User lives in Paris\n- [context | 1.00] User works at Acme"
    );
    let format = mem.ok(&["format"]);
    assert!(
        format.starts_with("User Context:\n- Personal: Lives in Berlin since March 2026\n"),
        "{format}"
    );
}

#[test]
fn mem_on_a_server_judges_a_reply_against_known_facts_and_forgets_for_good() {
    let Some(url) = pg_server("the PostgreSQL tests of facts are") else {
        return;
    };
    let mem = ServerMem::new(url, "known");
    let moving = std::fs::read_to_string(fixture_path("moving.reply.json")).unwrap();
    let first = mem.archive("moving.jsonl", &moving, &[]);
    let list = mem.json(&["list"]);
    let id_of = |object: &str| -> String {
        list["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["object"] == object)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (berlin, acme) = (id_of("Berlin"), id_of("Acme"));
    let reply = json!({
        "facts": [{"subject": "user", "predicate": "resides_in", "object": "Munich",
                   "content": "User resides in Munich", "category": "context", "turn": 0,
                   "supersedes": [&berlin[..8]]}],
        "facts_to_remove": [&acme[..8], "deadbeef"],
        "aliases": [{"alias": "Mel", "entity": "Melanie"}]
    });
    let second = mem.archive("relocation.jsonl", &reply.to_string(), &[]);
    let prompt = mem.prompt();
    assert!(
        prompt.contains(&format!("- [{}] user lives_in Berlin", &berlin[..8]))
            && prompt.contains(&format!("- [{}] user works_at Acme", &acme[..8]))
            && prompt.contains("- user: works_at, lives_in"),
        "{prompt}"
    );
    let changes = &second["changes"];
    assert_eq!(changes["superseded"], json!([berlin]), "{second}");
    assert_eq!(changes["removed"], json!([acme]), "{second}");
    assert_eq!(changes["aliases"], json!([["mel", "melanie"]]), "{second}");
    let notes = second["diagnostics"].to_string();
    assert!(
        notes.contains("llm.id") && notes.contains("deadbeef"),
        "{notes}"
    );
    assert_eq!(mem.objects(None), ["Munich"]);
    let shown = mem.ok(&["show", &acme]);
    assert!(
        shown.contains("ended on 2026-04-02 08:00:00 UTC"),
        "{shown}"
    );

    // The alias the reply named: a fact about Mel is Melanie's, found by either name.
    mem.json(&[
        "add",
        "--subject",
        "Mel",
        "--relation",
        "adopted_pet",
        "--object",
        "Oscar",
    ]);
    let found = mem.json(&["search", "Melanie"]);
    assert_eq!(found["results"][0]["fact"]["subject"], "melanie", "{found}");
    let listed = mem.json(&["alias", "--list"]);
    assert_eq!(listed["aliases"][0]["entity"], "melanie", "{listed}");
    assert_eq!(
        mem.failure(&["alias", "Melanie", "Mel"]),
        (Some(2), "alias_cycle".to_owned())
    );

    // Context by hand, beside the model's.
    mem.ok(&["context", "set", "--work", "Staff engineer"]);
    assert_eq!(
        mem.json(&["context"])["user_context"]["work"],
        "Staff engineer"
    );

    // Forget the first conversation: its facts go, every version, and its messages.
    let episode = first["episode_id"].as_str().unwrap();
    let forgot = mem.json(&["forget", "--episode", episode]);
    // Paris, Acme and Berlin, ended or not; Munich came from the second conversation.
    assert_eq!(
        forgot["facts"].as_array().map(Vec::len),
        Some(3),
        "{forgot}"
    );
    assert_eq!(forgot["episodes"], json!([episode]), "{forgot}");
    assert_eq!(mem.ok(&["recall", "Paris"]), "");
    assert!(mem.ok(&["search", "Berlin"]).contains("no facts match"));
    let history = mem.json(&["history", "user"]);
    assert_eq!(
        history["versions"].as_array().map(Vec::len),
        Some(1),
        "Munich: {history}"
    );
    // Forget Melanie by her alias: the fact and the alias.
    let forgot = mem.json(&["forget", "--subject", "mel"]);
    assert_eq!(forgot["aliases"], json!(["mel"]), "{forgot}");
    assert!(mem.ok(&["search", "Oscar"]).contains("no facts match"));
    assert_eq!(
        mem.failure(&["forget", "--episode", episode]),
        (Some(3), "not_found".to_owned())
    );
    assert_eq!(
        mem.failure(&["forget", "--subject", "melanie"]),
        (Some(3), "not_found".to_owned())
    );

    // A transcript refused whole stores nothing on the server either.
    let bad = mem.dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"role\": \"user\", \"content\": \"A cello.\", \"timestamp\": \"2999-01-01T00:00:00Z\"}\n",
    )
    .unwrap();
    let bad = bad.display().to_string();
    assert_eq!(
        mem.failure(&["archive", "--transcript", &bad]),
        (Some(2), "future_timestamp".to_owned())
    );
    assert_eq!(mem.ok(&["recall", "cello"]), "");
}

/// The standby `FACTMEM_PG_REPLICA_URL` names (`.ci/pg-server start-standby`); `None`
/// outside CI when it is unset.
fn pg_standby() -> Option<String> {
    if let Ok(url) = std::env::var("FACTMEM_PG_REPLICA_URL")
        && !url.is_empty()
    {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_REPLICA_URL is not set under CI=true: start a standby with \
         `eval \"$(.ci/pg-server start-standby)\"` (.ci/run does)"
    );
    None
}

#[test]
fn mcp_with_a_read_replica_reads_every_write_back_at_once() {
    let Some(url) = pg_server("the PostgreSQL tests of facts are") else {
        return;
    };
    let Some(standby) = pg_standby() else { return };
    let dir = TempDir::new().unwrap();
    let spec = fresh("spec");
    let project = project(dir.path(), &spec);
    let scope = fresh("replica");
    let application: String = fresh("replica")
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        .chars()
        .take(60)
        .collect();
    let replica = format!("{standby}?application_name={application}");
    let command = facts(&[
        "mcp",
        "--db",
        &url,
        "--db-replica",
        &replica,
        "--scope",
        &scope,
        "--project",
        &project,
    ]);
    let mut client = Client::start(command);
    for n in 0..20 {
        let object = format!("framework{n}");
        client.ok(
            "memory_add",
            json!({"subject": "user", "relation": format!("tried_{n}"), "object": object}),
        );
        let found = client.ok("memory_search", json!({"query": object}));
        assert_eq!(found["results"][0]["fact"]["object"], object, "{found}");
    }
    // The spec's store reads through the standby too: an ingested result is in the next
    // task's prompt at once.
    let init = client.ok("init_run", json!({"spec_name": spec, "task_id": "1"}));
    let run_1 = init["run_id"].as_str().unwrap().to_owned();
    client.ok(
        "ingest_output",
        json!({"run_id": run_1, "role": "implementer", "task_id": "1",
               "output": task_one_output()}),
    );
    let init = client.ok("init_run", json!({"spec_name": spec, "task_id": "2"}));
    let run_2 = init["run_id"].as_str().unwrap().to_owned();
    let compiled = client.ok(
        "compile_prompt",
        json!({"run_id": run_2, "role": "implementer", "task_id": "2"}),
    );
    let context = compiled["session_context"].as_str().unwrap();
    assert!(context.contains("src/parser.rs"), "{context}");
    // Reads ran on the standby, while the server still runs.
    let mut admin = postgres::Client::connect(&standby, postgres::NoTls).unwrap();
    let sessions: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap()
        .get(0);
    assert!(sessions >= 1, "no connection of the server on the standby");
    assert!(client.finish().success());
}

//! `facts mem`: the real binary against a temporary database, one process per command, in
//! its human and `--json` forms, with a fake model command for extraction.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "support/stdio_client.rs"]
mod stdio_client;

/// The canned reply of the fake model.
const REPLY: &str = r#"{"title": "Testing choices", "summary": "The user chose pytest over unittest.",
 "facts": [{"subject": "user", "predicate": "prefers_test_framework", "object": "pytest",
 "statement": "User prefers pytest over unittest", "category": "preference",
 "confidence": 0.9}]}"#;

/// A conversation in JSON Lines.
const TRANSCRIPT: &str = r#"{"role": "user", "content": "Use pytest for the tests, not unittest."}
{"role": "assistant", "content": "Understood: pytest it is."}
"#;

/// A temporary database and a folder for files.
struct Mem {
    dir: TempDir,
    db: PathBuf,
}

impl Mem {
    fn new() -> Mem {
        let dir = TempDir::new().unwrap();
        let db = dir.path().join("memory.db");
        Mem { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
        command
            .arg("mem")
            .arg("--db")
            .arg(&self.db)
            .args(args)
            .env_remove("FACTMEM_DB")
            .current_dir(self.dir.path());
        command
    }

    /// Runs `facts mem --db DB ARGS…`.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs with `stdin` as standard input.
    fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs a command that must succeed; returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        succeeded(self.run(args))
    }

    /// Runs a command with `--json` that must succeed; returns its one JSON document.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_str(&self.ok(&args)).unwrap()
    }

    /// Adds a fact; returns its id.
    fn add(&self, subject: &str, relation: &str, object: &str, extra: &[&str]) -> String {
        let mut args = vec![
            "add",
            "--subject",
            subject,
            "--relation",
            relation,
            "--object",
            object,
        ];
        args.extend_from_slice(extra);
        let added = self.json(&args);
        assert_eq!(added["status"], "added", "{added}");
        added["id"].as_str().unwrap().to_owned()
    }

    /// Writes the fake model: it saves the prompt it reads on stdin and prints `reply`.
    fn fake_llm(&self, reply: &str) -> String {
        std::fs::write(self.path("reply.json"), reply).unwrap();
        let script = self.path("llm.sh");
        std::fs::write(
            &script,
            format!(
                "cat > '{}'\ncat '{}'\n",
                self.path("prompt.txt").display(),
                self.path("reply.json").display()
            ),
        )
        .unwrap();
        format!("sh '{}'", script.display())
    }

    fn transcript(&self) -> String {
        let path = self.path("chat.jsonl");
        std::fs::write(&path, TRANSCRIPT).unwrap();
        path.display().to_string()
    }
}

fn succeeded(output: Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn add_list_show_update_search_delete_in_both_forms() {
    let mem = Mem::new();
    let added = mem.ok(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_editor",
        "--object",
        "helix",
        "--statement",
        "User edits code in Helix",
        "--category",
        "preference",
        "--confidence",
        "0.8",
    ]);
    let id = added.trim().strip_prefix("added ").unwrap().to_owned();
    assert_eq!(id.len(), 16, "{added}");
    let other = mem.add("project:rlm", "uses_database", "sqlite", &[]);

    let list = mem.ok(&["list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with(&format!(
        "{id}  preference  0.80  user prefers_editor helix"
    )));
    assert!(lines[0].ends_with("\"User edits code in Helix\""), "{list}");
    assert!(lines[1].starts_with(&format!("{other}  knowledge   1.00  project:rlm")));
    let listed = mem.json(&["list"]);
    assert_eq!(listed["facts"].as_array().unwrap().len(), 2);
    assert_eq!(listed["facts"][0]["id"], id.as_str());
    assert_eq!(listed["facts"][0]["tags"][0], "preference");

    let show = mem.ok(&["show", &id]);
    assert!(show.contains("subject     user"), "{show}");
    assert!(
        show.contains("statement   User edits code in Helix"),
        "{show}"
    );
    assert!(show.contains("source      cli (user)"), "{show}");
    assert!(show.contains("state       current"), "{show}");
    assert_eq!(mem.json(&["show", &id])["fact"]["confidence"], 0.8);

    // A new confidence edits the fact in place; a new object supersedes it.
    let updated = mem.json(&["update", &id, "--confidence", "0.6"]);
    assert_eq!(updated["id"], id.as_str());
    assert_eq!(updated["superseded"], Value::Null);
    assert_eq!(updated["fact"]["confidence"], 0.6);
    let replaced = mem.ok(&["update", &id, "--object", "zed"]);
    let first = replaced.lines().next().unwrap();
    let new_id = first.rsplit(' ').next().unwrap().to_owned();
    assert_eq!(first, format!("superseded {id} by {new_id}"));
    assert!(replaced.contains("object      zed"), "{replaced}");
    assert!(
        mem.ok(&["show", &id])
            .contains(&format!("superseded by {new_id} on "))
    );

    let search = mem.ok(&["search", "which", "database?"]);
    assert!(search.starts_with(&other), "{search}");
    assert!(
        search.contains("project:rlm uses_database sqlite"),
        "{search}"
    );
    let found = mem.json(&["search", "sqlite", "--limit", "5"]);
    assert_eq!(found["query"], "sqlite");
    assert_eq!(found["results"][0]["fact"]["id"], other.as_str());
    assert!(found["results"][0]["score"].as_f64().unwrap() > 0.0);
    assert!(mem.ok(&["search", "kubernetes"]).contains("no facts match"));

    assert_eq!(
        mem.ok(&["delete", &other]).trim(),
        format!("deleted {other} (1 version)")
    );
    let deleted = mem.json(&["delete", &new_id]);
    assert_eq!(deleted["deleted"], new_id.as_str());
    assert_eq!(deleted["versions"], 1);
    let listed = mem.json(&["list"]);
    assert!(listed["facts"].as_array().unwrap().is_empty(), "{listed}");
    assert_eq!(mem.ok(&["list"]).trim(), "no facts");
}

#[test]
fn a_newer_fact_supersedes_the_older_one_and_history_keeps_both() {
    let mem = Mem::new();
    let unittest = mem.add("user", "prefers_test_framework", "unittest", &[]);
    let added = mem.json(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_test_framework",
        "--object",
        "pytest",
    ]);
    let pytest = added["id"].as_str().unwrap().to_owned();
    assert_eq!(added["superseded"], serde_json::json!([unittest]));

    let history = mem.ok(&["history", "user"]);
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(lines.len(), 2, "{history}");
    assert!(lines[0].starts_with(&unittest), "{history}");
    assert!(
        lines[0].contains("prefers_test_framework unittest"),
        "{history}"
    );
    assert!(
        lines[0].contains(&format!("superseded by {pytest} on 20")),
        "{history}"
    );
    assert!(
        lines[1].starts_with(&pytest) && lines[1].ends_with("current"),
        "{history}"
    );
    let versions = mem.json(&["history", "user"]);
    assert_eq!(versions["subject"], "user");
    assert_eq!(versions["versions"][0]["superseded_by"], pytest.as_str());
    assert!(versions["versions"][0]["valid_to"].is_string());
    assert_eq!(versions["versions"][1]["valid_to"], Value::Null);

    let current = mem.json(&["list"]);
    assert_eq!(current["facts"].as_array().unwrap().len(), 1);
    assert_eq!(current["facts"][0]["object"], "pytest");

    // The human form of a superseding add names what it superseded.
    let text = mem.ok(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_test_framework",
        "--object",
        "nose",
    ]);
    assert!(text.contains(&format!("superseded {pytest}")), "{text}");
    assert!(
        mem.ok(&["history", "nobody"])
            .contains("no facts about \"nobody\"")
    );
}

#[test]
fn a_duplicate_statement_is_skipped_and_names_the_fact_that_holds_it() {
    let mem = Mem::new();
    let statement = ["--statement", "User prefers pytest over unittest"];
    let first = mem.add("user", "prefers_test_framework", "pytest", &statement);
    let again = mem.json(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "likes",
        "--object",
        "pytest",
        "--statement",
        "user prefers PYTEST over unittest",
    ]);
    assert_eq!(again["status"], "duplicate");
    assert_eq!(again["existing_id"], first.as_str());
    let text = mem.ok(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "likes",
        "--object",
        "pytest",
        "--statement",
        "User prefers pytest  over unittest",
    ]);
    assert_eq!(
        text.trim(),
        format!("duplicate skipped: {first} already holds this statement")
    );
}

#[test]
fn recall_and_format_render_the_memory_for_a_prompt() {
    let mem = Mem::new();
    let statement = ["--statement", "User prefers pytest over unittest"];
    let mut extra = statement.to_vec();
    extra.extend(["--category", "preference", "--confidence", "0.9"]);
    mem.add("user", "prefers_test_framework", "pytest", &extra);
    mem.add("user", "lives_in", "Lisbon", &["--category", "context"]);

    let recall = mem.ok(&["recall", "which test framework does the user prefer?"]);
    let mut lines = recall.lines();
    assert_eq!(lines.next(), Some("## Relevant Facts"));
    let line = lines.next().unwrap();
    assert!(
        line.starts_with("- [preference] User prefers pytest over unittest (from 20"),
        "{recall}"
    );
    let recalled = mem.json(&["recall", "test", "framework", "--max-tokens", "500"]);
    assert_eq!(recalled["query"], "test framework");
    assert!(
        recalled["text"]
            .as_str()
            .unwrap()
            .starts_with("## Relevant Facts")
    );
    assert_eq!(recalled["facts"][0]["fact"]["object"], "pytest");
    assert!(recalled["tokens"].as_u64().unwrap() > 0);
    // A budget too small for any line recalls nothing.
    let tiny = mem.json(&["recall", "test framework", "--max-tokens", "3"]);
    assert_eq!(tiny["text"], "");
    assert_eq!(
        mem.ok(&["recall", "test framework", "--max-tokens", "3"]),
        ""
    );

    let format = mem.ok(&["format"]);
    assert_eq!(
        format.trim_end(),
        "Facts:\n- [context | 1.00] user lives_in Lisbon\n\
         - [preference | 0.90] User prefers pytest over unittest"
    );
    let formatted = mem.json(&["format", "--max-tokens", "2000"]);
    assert_eq!(formatted["text"].as_str().unwrap(), format.trim_end());
}

#[test]
fn unknown_ids_exit_3_and_invalid_input_exits_2() {
    let mem = Mem::new();
    let unknown = "0123456789abcdef";
    for args in [
        vec!["show", unknown],
        vec!["delete", unknown],
        vec!["update", unknown, "--confidence", "0.5"],
    ] {
        let output = mem.run(&args);
        assert_eq!(output.status.code(), Some(3), "{args:?}");
        assert!(stderr(&output).contains(unknown), "{}", stderr(&output));
        assert!(output.stdout.is_empty());
    }
    // With --json, the error is the one document on stdout too.
    let output = mem.run(&["show", unknown, "--json"]);
    assert_eq!(output.status.code(), Some(3));
    let error: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["error"]["code"], "not_found");

    let output = mem.run(&["show", "not-an-id"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("\"not-an-id\" is not a fact id"));

    let output = mem.run(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "r",
        "--object",
        "o",
        "--confidence",
        "1.5",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("invalid fact"),
        "{}",
        stderr(&output)
    );
    let output = mem.run(&["add", "--subject", "", "--relation", "r", "--object", "o"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    // Usage errors: an unknown category, an update with nothing to change.
    let output = mem.run(&[
        "add",
        "--subject",
        "u",
        "--relation",
        "r",
        "--object",
        "o",
        "--category",
        "prefs",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("allowed: file_change"));
    assert_eq!(mem.run(&["update", unknown]).status.code(), Some(2));
}

#[test]
fn archive_with_a_model_command_extracts_facts_that_recall_finds_with_the_episode() {
    let mem = Mem::new();
    let llm = mem.fake_llm(REPLY);
    let transcript = mem.transcript();
    let archived = mem.json(&["archive", "--transcript", &transcript, "--llm-cmd", &llm]);
    let episode = archived["episode_id"].as_str().unwrap().to_owned();
    assert!(episode.starts_with("ep_"), "{archived}");
    assert_eq!(archived["messages"], 2);
    assert_eq!(archived["changes"]["added"].as_array().unwrap().len(), 1);
    // The model read the conversation on stdin.
    let prompt = std::fs::read_to_string(mem.path("prompt.txt")).unwrap();
    assert!(prompt.contains("Use pytest for the tests"), "{prompt}");

    let recall = mem.ok(&[
        "recall",
        "which test framework does the user prefer? pytest",
    ]);
    assert!(
        recall.contains("- [preference] User prefers pytest over unittest (from 20"),
        "{recall}"
    );
    assert!(recall.contains("## Related Episodes"), "{recall}");
    assert!(recall.contains(&format!("(entry: {episode}): The user chose pytest")));
    let fact = &mem.json(&["list"])["facts"][0];
    assert_eq!(fact["source_task_id"], episode.as_str());
    assert_eq!(fact["source_role"], "extractor");

    // The human form, from stdin.
    let output = mem.run_with_stdin(
        &["archive", "--transcript", "-", "--title", "Editors"],
        br#"{"role": "user", "content": "I use Helix."}"#,
    );
    let text = succeeded(output);
    assert!(text.starts_with("archived ep_"), "{text}");
    assert!(text.contains("\"Editors\" (1 message)"), "{text}");
    assert!(text.contains("facts: not extracted"), "{text}");
}

#[test]
fn archive_without_a_model_then_backfill_extracts_with_progress_on_stderr() {
    let mem = Mem::new();
    let transcript = mem.transcript();
    let archived = mem.json(&["archive", "--transcript", &transcript]);
    let episode = archived["episode_id"].as_str().unwrap().to_owned();
    assert_eq!(archived["changes"], Value::Null);
    assert!(mem.json(&["list"])["facts"].as_array().unwrap().is_empty());

    // A failing model keeps the episode for a later backfill: exit 1, the code named.
    let output = mem.run(&[
        "backfill",
        "--llm-cmd",
        "cat >/dev/null; echo down >&2; exit 7",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("LLM error (extraction_failed)"),
        "{}",
        stderr(&output)
    );

    let llm = mem.fake_llm(REPLY);
    let output = mem.run(&["backfill", "--llm-cmd", &llm, "--json"]);
    let progress = stderr(&output);
    let stdout = succeeded(output);
    assert_eq!(progress.trim(), format!("backfill 1/1 {episode}"));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["episodes"][0]["episode_id"], episode.as_str());
    assert_eq!(
        report["episodes"][0]["changes"]["added"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let facts = mem.json(&["list"]);
    assert_eq!(facts["facts"][0]["object"], "pytest");

    let output = mem.run(&["backfill", "--llm-cmd", &llm]);
    assert!(stderr(&output).is_empty());
    assert!(succeeded(output).contains("nothing to backfill"));
}

#[test]
fn a_missing_empty_or_non_utf8_transcript_is_a_clear_error() {
    let mem = Mem::new();
    let output = mem.run(&["archive", "--transcript", "no-such.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot read transcript no-such.jsonl"),
        "{}",
        stderr(&output)
    );

    std::fs::write(
        mem.path("bad.jsonl"),
        b"{\"role\": \"user\", \"content\": \"\xff\"}\n",
    )
    .unwrap();
    let output = mem.run(&["archive", "--transcript", "bad.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("bad.jsonl is not UTF-8"),
        "{}",
        stderr(&output)
    );

    let output = mem.run_with_stdin(&["archive", "--transcript", "-", "--json"], b"hello\n");
    assert_eq!(output.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["error"]["code"], "empty_transcript");
}

#[test]
fn two_scopes_in_one_database_do_not_see_each_other() {
    let mem = Mem::new();
    let alice = ["--scope", "alice"];
    let mut args = vec![
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_test_framework",
        "--object",
        "pytest",
        "--json",
    ];
    args.extend(alice);
    let added: Value = serde_json::from_str(&mem.ok(&args)).unwrap();
    let id = added["id"].as_str().unwrap();

    assert_eq!(mem.ok(&["list", "--scope", "bob"]).trim(), "no facts");
    assert!(
        mem.ok(&["search", "pytest", "--scope", "bob"])
            .contains("no facts match")
    );
    assert_eq!(
        mem.run(&["show", id, "--scope", "bob"]).status.code(),
        Some(3)
    );
    assert_eq!(mem.ok(&["recall", "pytest", "--scope", "bob"]), "");
    assert!(mem.ok(&["list"]).contains("no facts"), "the default scope");
    assert!(mem.ok(&["list", "--scope", "alice"]).starts_with(id));
}

#[test]
fn the_database_defaults_to_factmem_db_then_the_data_directory() {
    let dir = TempDir::new().unwrap();
    let facts = |envs: &[(&str, &Path)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
        command
            .args(["mem", "list"])
            .env_remove("FACTMEM_DB")
            .env_remove("XDG_DATA_HOME");
        for (key, value) in envs {
            command.env(key, value);
        }
        succeeded(command.output().unwrap())
    };
    let data = dir.path().join("data");
    facts(&[("XDG_DATA_HOME", &data), ("HOME", dir.path())]);
    assert!(data.join("factmem/memory.db").exists());
    facts(&[("HOME", dir.path())]);
    assert!(dir.path().join(".local/share/factmem/memory.db").exists());
    let chosen = dir.path().join("elsewhere/mine.db");
    facts(&[("FACTMEM_DB", &chosen), ("HOME", dir.path())]);
    assert!(chosen.exists());
}

#[test]
fn a_file_that_is_not_a_database_is_a_store_error_that_exits_1() {
    let mem = Mem::new();
    std::fs::write(&mem.db, "not a database, only text ".repeat(20)).unwrap();
    let output = mem.run(&["list"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with("facts: store error (corrupt): "),
        "{}",
        stderr(&output)
    );
    let output = mem.run(&["list", "--json"]);
    let error: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["error"]["code"], "corrupt");
    // The file is left as it was.
    assert!(
        std::fs::read_to_string(&mem.db)
            .unwrap()
            .starts_with("not a database")
    );
}

// Memory that keeps itself true: time from the conversation, updates judged against what
// memory holds, the user context, aliases, forgetting, and input refused whole. The
// conversations and replies are in `tests/fixtures/memory/` (its README says what each
// holds); `tests/postgres.rs` runs the key scenarios on a server.

/// The text of `tests/fixtures/memory/NAME`.
fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/memory")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The path of `tests/fixtures/memory/NAME`, as an argument.
fn fixture_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/memory")
        .join(name)
        .display()
        .to_string()
}

impl Mem {
    /// The prompt the fake model read last.
    fn prompt(&self) -> String {
        std::fs::read_to_string(self.path("prompt.txt")).unwrap()
    }

    /// Runs a command with `--json` that must fail; its exit code and error document.
    fn failure(&self, args: &[&str]) -> (Option<i32>, Value) {
        let mut args = args.to_vec();
        args.push("--json");
        let output = self.run(&args);
        assert!(!output.status.success(), "{args:?} succeeded");
        let document: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&output)));
        (output.status.code(), document)
    }

    /// Archives the fixture conversation `name` with the fake model answering `reply`;
    /// returns the report.
    fn archive_fixture(&self, name: &str, reply: &str, extra: &[&str]) -> Value {
        let llm = self.fake_llm(reply);
        let transcript = fixture_path(name);
        let mut args = vec!["archive", "--transcript", &transcript, "--llm-cmd", &llm];
        args.extend_from_slice(extra);
        self.json(&args)
    }

    /// The ids of the current facts with this relation.
    fn ids_of(&self, relation: &str) -> Vec<String> {
        self.json(&["list"])["facts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["relation"] == relation)
            .map(|f| f["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// The `relation object` pairs of the facts of a `--json` answer's `key`.
fn pairs(answer: &Value, key: &str) -> Vec<String> {
    answer[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let f = if f["fact"].is_object() { &f["fact"] } else { f };
            format!(
                "{} {}",
                f["relation"].as_str().unwrap(),
                f["object"].as_str().unwrap()
            )
        })
        .collect()
}

/// `YYYY-MM-DD` of an RFC 3339 string.
fn day(at: &Value) -> &str {
    &at.as_str().unwrap()[..10]
}

#[test]
fn a_fact_is_true_from_when_it_was_said_and_recorded_when_it_was_archived() {
    let mem = Mem::new();
    // A fact remembered today, for contrast: said and recorded on one day.
    let today_id = mem.add("user", "prefers_editor", "helix", &[]);
    let archived = mem.archive_fixture(
        "greyhound.jsonl",
        &fixture("greyhound.reply.json"),
        &["--session-time", "2026-02-20T10:00:00Z"],
    );
    // The first message has no time: the session's. The others have the time of the
    // second, converted to UTC, which the third inherits.
    assert_eq!(archived["started_at"], "2026-02-20T10:00:00Z", "{archived}");
    assert_eq!(archived["messages"], 3);
    let luna = archived["changes"]["added"][0].as_str().unwrap().to_owned();
    let prompt = mem.prompt();
    for line in [
        "[0] user (2026-02-20): Quick question before we start on the flat.",
        "[1] user (2026-03-01): I adopted a greyhound called Luna.",
        "[2] assistant (2026-03-01): Congratulations on Luna!",
    ] {
        assert!(prompt.contains(line), "{line:?} in\n{prompt}");
    }
    // What memory held is in the prompt, by its short id, with its predicate.
    assert!(
        prompt.contains(&format!("- [{}] user prefers_editor helix", &today_id[..8])),
        "{prompt}"
    );
    assert!(prompt.contains("- user: prefers_editor"), "{prompt}");

    let history = mem.json(&["history", "user"]);
    let versions = history["versions"].as_array().unwrap();
    let said = versions.iter().find(|v| v["id"] == luna.as_str()).unwrap();
    assert_eq!(said["valid_from"], "2026-03-01T08:30:00Z", "{history}");
    let recorded = day(&said["recorded_at"]).to_owned();
    let today = versions
        .iter()
        .find(|v| v["id"] == today_id.as_str())
        .unwrap();
    let added_on = day(&today["valid_from"]).to_owned();
    assert_eq!(added_on, recorded, "both recorded today: {history}");

    let text = mem.ok(&["history", "user"]);
    let line = text.lines().find(|l| l.starts_with(&luna)).unwrap();
    let expected = if recorded == "2026-03-01" {
        "from 2026-03-01  ".to_owned()
    } else {
        format!("from 2026-03-01 (recorded {recorded})  ")
    };
    assert!(line.contains(&expected), "{expected:?} in {text}");
    assert!(
        line.contains("user owns_pet Luna") && line.ends_with("current"),
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with(&today_id)).unwrap();
    assert!(line.contains(&format!("from {added_on}  ")), "{text}");
    assert!(
        !line.contains("(recorded"),
        "said and recorded on one day: {text}"
    );
    // By when it became true: March before today.
    assert!(text.find(&luna) < text.find(&today_id), "{text}");

    let recall = mem.ok(&["recall", "greyhound Luna"]);
    assert!(
        recall.contains("- [context] User adopted a greyhound called Luna (from 2026-03-01)"),
        "{recall}"
    );
    assert!(
        recall.contains("  > [2026-03-01] user: I adopted a greyhound called Luna."),
        "{recall}"
    );
    assert!(recall.contains("on 2026-02-20 (entry: ep_"), "{recall}");
    let recalled = mem.json(&["recall", "greyhound Luna"]);
    let messages = recalled["episodes"][0]["messages"].as_array().unwrap();
    let adopted = messages.iter().find(|m| m["turn"] == 1).unwrap();
    assert_eq!(adopted["timestamp"], "2026-03-01T08:30:00Z", "{recalled}");
    assert_eq!(adopted["role"], "user");
}

#[test]
fn a_move_within_one_conversation_supersedes_and_as_of_gives_the_earlier_state() {
    let mem = Mem::new();
    let archived = mem.archive_fixture("moving.jsonl", &fixture("moving.reply.json"), &[]);
    let changes = &archived["changes"];
    assert_eq!(changes["added"].as_array().unwrap().len(), 3, "{archived}");
    assert_eq!(
        changes["profile"],
        serde_json::json!(["personal"]),
        "{archived}"
    );
    // Turn 2 came after turn 0: Berlin superseded Paris.
    let history = mem.json(&["history", "user"]);
    let paris = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["object"] == "Paris")
        .unwrap()
        .clone();
    let berlin = mem.ids_of("lives_in");
    assert_eq!(berlin.len(), 1, "one current city");
    assert_eq!(changes["superseded"], serde_json::json!([paris["id"]]));
    assert_eq!(paris["superseded_by"], berlin[0].as_str());
    assert_eq!(paris["valid_to"], "2026-03-20T10:00:00Z");
    assert_eq!(paris["valid_from"], "2026-02-10T09:00:00Z");
    let now = mem.json(&["list"]);
    assert_eq!(pairs(&now, "facts"), ["works_at Acme", "lives_in Berlin"]);

    let march = "2026-03-01T12:00:00Z";
    let then = mem.json(&["list", "--as-of", march]);
    assert_eq!(
        pairs(&then, "facts"),
        ["lives_in Paris", "works_at Acme"],
        "{then}"
    );
    assert!(
        mem.ok(&["list", "--as-of", march])
            .contains("user lives_in Paris")
    );
    // Before anything was said, nothing was true.
    let before = mem.json(&["list", "--as-of", "2026-01-01T00:00:00Z"]);
    assert_eq!(before["count"], 0, "{before}");

    assert_eq!(
        pairs(&mem.json(&["search", "lives"]), "results"),
        ["lives_in Berlin"]
    );
    let searched = mem.json(&["search", "lives", "--as-of", march]);
    assert_eq!(
        pairs(&searched, "results"),
        ["lives_in Paris"],
        "{searched}"
    );

    let recall = mem.ok(&["recall", "where does the user live? Paris Berlin"]);
    assert!(
        recall.contains("User lives in Berlin (from 2026-03-20)"),
        "{recall}"
    );
    assert!(!recall.contains("User lives in Paris"), "{recall}");
    assert!(
        recall.contains("> [2026-03-20] user: Update: I moved to Berlin"),
        "{recall}"
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
    assert!(!recall.contains("Berlin (from"), "{recall}");
    // What was said after March 1 had not been said then.
    assert!(
        recall.contains("> [2026-02-10] user: I live in Paris"),
        "{recall}"
    );
    assert!(!recall.contains("moved to Berlin"), "{recall}");

    let history = mem.json(&["history", "user", "--as-of", march]);
    let objects: Vec<&str> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["object"].as_str().unwrap())
        .collect();
    assert_eq!(objects, ["Paris", "Acme"], "{history}");
    let text = mem.ok(&["history", "user", "--as-of", march]);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("user lives_in Paris"), "{text}");
    assert!(text.contains("user works_at Acme"), "{text}");

    let format = mem.ok(&["format"]);
    assert_eq!(
        format.trim_end(),
        "User Context:\n- Personal: Lives in Berlin since March 2026\n\nFacts:\n\
         - [context | 1.00] User works at Acme\n- [context | 1.00] User lives in Berlin",
        "{format}"
    );
    let format = mem.json(&["format", "--as-of", march]);
    assert_eq!(
        format["text"],
        "Facts:\n- [context | 1.00] User lives in Paris\n- [context | 1.00] User works at Acme",
        "the context was set on March 20: {format}"
    );
}

#[test]
fn a_later_conversation_supersedes_and_removes_known_facts_by_their_short_ids() {
    let mem = Mem::new();
    mem.archive_fixture("moving.jsonl", &fixture("moving.reply.json"), &[]);
    let berlin = mem.ids_of("lives_in").remove(0);
    let acme = mem.ids_of("works_at").remove(0);
    let reply = serde_json::json!({
        "summary": "The user relocated to Munich and left Acme.",
        "facts": [{"subject": "user", "predicate": "resides_in", "object": "Munich",
                   "content": "User resides in Munich", "category": "context", "turn": 0,
                   "supersedes": [&berlin[..8], "deadbeef"]}],
        "facts_to_remove": [&acme[..8]]
    });
    let archived = mem.archive_fixture("relocation.jsonl", &reply.to_string(), &[]);

    // The model was shown what memory holds: short ids, triples, statements, dates, and the
    // predicates in use.
    let prompt = mem.prompt();
    assert!(
        prompt.contains(&format!(
            "- [{}] user lives_in Berlin: \"User lives in Berlin\" (since 2026-03-20)",
            &berlin[..8]
        )),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("- [{}] user works_at Acme", &acme[..8])),
        "{prompt}"
    );
    // In the order the current facts were first stored: Acme at turn 0, Berlin at turn 2.
    assert!(prompt.contains("- user: works_at, lives_in"), "{prompt}");
    assert!(
        prompt.contains("[0] user (2026-04-02): We relocated to Munich"),
        "{prompt}"
    );

    let changes = &archived["changes"];
    let munich = changes["added"][0].as_str().unwrap().to_owned();
    assert_eq!(changes["added"].as_array().unwrap().len(), 1, "{archived}");
    // Superseded under another predicate, by its short id.
    assert_eq!(
        changes["superseded"],
        serde_json::json!([berlin]),
        "{archived}"
    );
    assert_eq!(changes["removed"], serde_json::json!([acme]), "{archived}");
    // The id the model made up changed nothing, and the report says so.
    let diagnostics = archived["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{archived}");
    let note = diagnostics[0].as_str().unwrap();
    assert!(
        note.starts_with("llm.id: ") && note.contains("\"deadbeef\""),
        "{note}"
    );

    assert_eq!(pairs(&mem.json(&["list"]), "facts"), ["resides_in Munich"]);
    // Removed is ended, not deleted: the history keeps it, with the day it ended.
    let history = mem.json(&["history", "user"]);
    let version = |id: &str| {
        history["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {history}"))
            .clone()
    };
    assert_eq!(version(&berlin)["superseded_by"], munich.as_str());
    assert_eq!(version(&berlin)["valid_to"], "2026-04-02T08:00:00Z");
    assert_eq!(version(&acme)["valid_to"], "2026-04-02T08:00:00Z");
    assert!(
        version(&acme)
            .get("superseded_by")
            .is_none_or(Value::is_null)
    );
    let shown = mem.ok(&["show", &acme]);
    assert!(
        shown.contains("state       ended on 2026-04-02 08:00:00 UTC"),
        "{shown}"
    );
    let text = mem.ok(&["history", "user"]);
    assert!(
        text.contains(&format!(
            "superseded by {munich} on 2026-04-02 08:00:00 UTC"
        )),
        "{text}"
    );

    // A reply naming only an id that was never listed changes nothing; the human form says
    // why.
    let before = mem.json(&["history", "user"]);
    let llm = mem.fake_llm(r#"{"facts": [], "facts_to_remove": ["0badc0de"]}"#);
    let text = mem.ok(&[
        "archive",
        "--transcript",
        &fixture_path("relocation.jsonl"),
        "--llm-cmd",
        &llm,
    ]);
    assert!(text.contains("\nfacts: none\n"), "{text}");
    assert!(
        text.contains(
            "note: llm.id: facts_to_remove 1: \"0badc0de\" is not the id of a known fact"
        ),
        "{text}"
    );
    assert_eq!(mem.json(&["history", "user"]), before);
}

#[test]
fn context_set_shows_in_context_and_in_format() {
    let mem = Mem::new();
    assert!(
        mem.ok(&["context"])
            .starts_with("no user context or history yet"),
        "an empty context says how to set one"
    );
    let set = mem.ok(&[
        "context",
        "set",
        "--work",
        "Staff engineer at Acme,\n on the search team",
        "--long-term-background",
        "Grew up in Lyon",
    ]);
    assert_eq!(set.trim(), "set work, long_term_background");
    let again = mem.json(&[
        "context",
        "set",
        "--work",
        "Staff engineer at Acme, on the search team",
    ]);
    assert_eq!(
        again["changed"],
        serde_json::json!([]),
        "the same text: {again}"
    );
    assert_eq!(
        mem.ok(&[
            "context",
            "set",
            "--work",
            "Staff engineer at Acme, on the search team"
        ])
        .trim(),
        "unchanged"
    );

    let context = mem.json(&["context"]);
    // One line: the newline and the indent folded.
    assert_eq!(
        context["user_context"]["work"],
        "Staff engineer at Acme, on the search team"
    );
    assert_eq!(context["user_context"]["personal"], "");
    assert_eq!(
        context["history"]["long_term_background"],
        "Grew up in Lyon"
    );
    let fields: Vec<&str> = context["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["work", "long_term_background"], "{context}");
    let set_on = day(&context["versions"][0]["at"]).to_owned();
    let text = mem.ok(&["context"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            format!("work                  {set_on}  Staff engineer at Acme, on the search team"),
            format!("long_term_background  {set_on}  Grew up in Lyon"),
        ],
        "{text}"
    );

    mem.add(
        "user",
        "prefers_editor",
        "helix",
        &[
            "--statement",
            "User edits in Helix",
            "--category",
            "preference",
        ],
    );
    let format = mem.ok(&["format"]);
    assert_eq!(
        format.trim_end(),
        "User Context:\n- Work: Staff engineer at Acme, on the search team\n\n\
         History:\n- Long-term background: Grew up in Lyon\n\n\
         Facts:\n- [preference | 1.00] User edits in Helix"
    );
    // Set today, so not yet in the memory of March.
    let march = mem.json(&["format", "--as-of", "2026-03-01T00:00:00Z"]);
    assert_eq!(march["text"], "", "{march}");
}

#[test]
fn an_alias_finds_its_entity_s_facts_until_it_is_removed_and_a_cycle_is_refused() {
    let mem = Mem::new();
    let puppy = mem.add(
        "Melanie",
        "adopted_pet",
        "a puppy named Oscar",
        &["--statement", "Melanie adopted a puppy named Oscar"],
    );
    mem.add("Caroline", "works_as", "counselor", &[]);
    assert!(mem.ok(&["search", "Mel"]).contains("no facts match"));
    assert_eq!(mem.ok(&["alias", "--list"]).trim(), "no aliases");

    assert_eq!(
        mem.ok(&["alias", "Mel", "Melanie"]).trim(),
        "mel is melanie"
    );
    let listed = mem.json(&["alias", "--list"]);
    let aliases = listed["aliases"].as_array().unwrap();
    assert_eq!(aliases.len(), 1, "{listed}");
    assert_eq!(
        (&aliases[0]["alias"], &aliases[0]["entity"]),
        (&"mel".into(), &"melanie".into())
    );
    assert!(aliases[0]["at"].is_string());
    assert_eq!(mem.ok(&["alias", "--list"]).trim(), "mel  →  melanie");
    assert_eq!(
        mem.ok(&["alias"]).trim(),
        "mel  →  melanie",
        "no arguments lists too"
    );

    // The alias finds what is stored under the entity, and only that.
    let found = mem.json(&["search", "Mel"]);
    let ids: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fact"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [puppy.as_str()], "{found}");
    let recall = mem.ok(&["recall", "what did Mel adopt?"]);
    assert!(
        recall.contains("Melanie adopted a puppy named Oscar"),
        "{recall}"
    );
    // A fact about the alias is stored under the entity, and its history is the entity's.
    let added = mem.json(&[
        "add",
        "--subject",
        "MEL",
        "--relation",
        "lives_in",
        "--object",
        "Austin",
    ]);
    assert_eq!(added["fact"]["subject"], "melanie", "{added}");
    let history = mem.json(&["history", "mel"]);
    assert_eq!(
        history["versions"].as_array().unwrap().len(),
        2,
        "{history}"
    );

    // A cycle of names is refused, and changes nothing.
    let (code, error) = mem.failure(&["alias", "Melanie", "Mel"]);
    assert_eq!(code, Some(2), "{error}");
    assert_eq!(error["error"]["code"], "alias_cycle", "{error}");
    let output = mem.run(&["alias", "Melanie", "mel"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cycle"), "{}", stderr(&output));
    let (code, error) = mem.failure(&["alias", " ", "Melanie"]);
    assert_eq!(
        (code, &error["error"]["code"]),
        (Some(2), &"invalid_alias".into())
    );
    assert_eq!(mem.json(&["alias", "--list"]), listed);

    let removed = mem.json(&["alias", "--remove", "MEL"]);
    assert_eq!(removed["removed"], "mel", "{removed}");
    assert_eq!(mem.ok(&["alias", "--list"]).trim(), "no aliases");
    assert!(mem.ok(&["search", "Mel"]).contains("no facts match"));
    // The facts stay with the entity.
    assert_eq!(
        mem.json(&["search", "Melanie"])["results"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (code, error) = mem.failure(&["alias", "--remove", "mel"]);
    assert_eq!(
        (code, &error["error"]["code"]),
        (Some(3), &"not_found".into())
    );
}

#[test]
fn forget_deletes_an_episode_or_a_subject_for_good_and_says_what() {
    let mem = Mem::new();
    let archived = mem.archive_fixture("moving.jsonl", &fixture("moving.reply.json"), &[]);
    let episode = archived["episode_id"].as_str().unwrap().to_owned();
    let from_episode: Vec<String> = mem.json(&["history", "user"])["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(from_episode.len(), 3);
    let editor = mem.add("user", "prefers_editor", "helix", &[]);
    mem.add(
        "Melanie",
        "adopted_pet",
        "Oscar",
        &["--statement", "Melanie adopted Oscar"],
    );
    mem.add(
        "Melanie",
        "adopted_pet",
        "Bailey",
        &["--statement", "Melanie adopted Bailey"],
    );
    mem.ok(&["alias", "Mel", "Melanie"]);

    let text = mem.ok(&["forget", "--episode", &episode]);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(format!("deleted episode {episode} and its messages").as_str())
    );
    assert_eq!(lines.next(), Some("deleted 3 facts (3 versions)"), "{text}");
    let listed: Vec<&str> = lines.map(str::trim).collect();
    let mut expected: Vec<&str> = from_episode.iter().map(String::as_str).collect();
    expected.sort_unstable();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, expected, "{text}");
    // Nothing of it is found: not its facts, not its messages, not in history.
    for query in ["Paris", "Berlin", "Acme"] {
        assert!(
            mem.ok(&["search", query]).contains("no facts match"),
            "{query}"
        );
        assert_eq!(mem.ok(&["recall", query]), "", "{query}");
    }
    let history = mem.json(&["history", "user"]);
    let left: Vec<&str> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        left,
        [editor.as_str()],
        "only what the episode did not give: {history}"
    );
    assert_eq!(
        mem.json(&["list", "--as-of", "2026-03-01T00:00:00Z"])["count"],
        0
    );

    // A subject, by its alias: every fact and version about it, and its aliases.
    let forgot = mem.json(&["forget", "--subject", "Mel"]);
    assert_eq!(forgot["facts"].as_array().unwrap().len(), 2, "{forgot}");
    assert_eq!(forgot["versions"], 2);
    assert_eq!(forgot["aliases"], serde_json::json!(["mel"]));
    assert_eq!(forgot["episodes"], serde_json::json!([]));
    for query in ["Melanie", "Mel", "Oscar"] {
        assert!(
            mem.ok(&["search", query]).contains("no facts match"),
            "{query}"
        );
        assert_eq!(mem.ok(&["recall", query]), "", "{query}");
    }
    assert!(mem.ok(&["history", "melanie"]).contains("no facts about"));
    assert_eq!(mem.ok(&["alias", "--list"]).trim(), "no aliases");
    // The user's facts are untouched.
    assert_eq!(mem.ids_of("prefers_editor"), std::slice::from_ref(&editor));

    // Once more: nothing is left to forget.
    for args in [
        vec!["forget", "--episode", episode.as_str()],
        vec!["forget", "--subject", "melanie"],
        vec!["forget", "--episode", "ep_0000000000000000"],
    ] {
        let (code, error) = mem.failure(&args);
        assert_eq!(code, Some(3), "{args:?}: {error}");
        assert_eq!(error["error"]["code"], "not_found", "{args:?}");
    }
    let output = mem.run(&["forget", "--subject", "nobody"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains("nobody"), "{}", stderr(&output));
    // The human form of a forget of one fact.
    let text = mem.ok(&["forget", "--subject", "user"]);
    assert_eq!(
        text.lines().next(),
        Some("deleted 1 fact (1 version)"),
        "{text}"
    );
    // Exactly one of --episode and --subject.
    assert_eq!(mem.run(&["forget"]).status.code(), Some(2));
    assert_eq!(
        mem.run(&["forget", "--episode", &episode, "--subject", "user"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn a_bad_or_future_time_or_an_oversized_transcript_stores_nothing_and_exits_2() {
    let mem = Mem::new();
    let llm = mem.fake_llm(&fixture("greyhound.reply.json"));
    let cases = [
        (
            "{\"role\": \"user\", \"content\": \"I adopted Luna.\", \"timestamp\": \"last Tuesday\"}\n",
            vec![],
            "invalid_timestamp",
            "\"last Tuesday\"",
        ),
        (
            "{\"role\": \"user\", \"content\": \"I adopted Luna.\"}\n\
             {\"role\": \"user\", \"content\": \"Luna is a greyhound.\", \"time\": \"2026-02-30T10:00:00Z\"}\n",
            vec![],
            "invalid_timestamp",
            "line 2",
        ),
        (
            "{\"role\": \"user\", \"content\": \"I adopted Luna.\", \"created_at\": \"2999-01-01T00:00:00Z\"}\n",
            vec![],
            "future_timestamp",
            "more than one day after now",
        ),
        (
            "{\"role\": \"user\", \"content\": \"I adopted Luna.\"}\n",
            vec!["--session-time", "2999-01-01T00:00:00Z"],
            "future_timestamp",
            "the session time 2999-01-01T00:00:00Z",
        ),
    ];
    for (transcript, extra, code, says) in cases {
        std::fs::write(mem.path("chat.jsonl"), transcript).unwrap();
        let mut args = vec!["archive", "--transcript", "chat.jsonl", "--llm-cmd", &llm];
        args.extend(extra.iter().copied());
        let (exit, error) = mem.failure(&args);
        assert_eq!(exit, Some(2), "{code}: {error}");
        assert_eq!(error["error"]["code"], code, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{says:?} in {message}");
        let output = mem.run(&args);
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
    // A session time that does not parse is a usage error of the flag.
    let output = mem.run(&[
        "archive",
        "--transcript",
        "chat.jsonl",
        "--session-time",
        "soon",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--session-time"),
        "{}",
        stderr(&output)
    );

    // One byte over 8 MiB, from a file and from stdin.
    let line = "{\"role\": \"user\", \"content\": \"I adopted Luna, a greyhound.\"}\n";
    let limit = 8 * 1024 * 1024;
    let mut big = line.repeat(limit / line.len() + 1);
    big.truncate(limit + 1);
    std::fs::write(mem.path("big.jsonl"), &big).unwrap();
    let (exit, error) = mem.failure(&["archive", "--transcript", "big.jsonl", "--llm-cmd", &llm]);
    assert_eq!(exit, Some(2), "{error}");
    assert_eq!(error["error"]["code"], "transcript_too_large", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("8388608 bytes (8 MiB)"), "{message}");
    let output = mem.run_with_stdin(&["archive", "--transcript", "-"], big.as_bytes());
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("transcript stdin is over the limit of 8388608 bytes"));
    // Exactly 8 MiB is within the limit.
    big.truncate(limit - (limit % line.len()));
    assert!(big.len() <= limit);
    std::fs::write(mem.path("big.jsonl"), &big).unwrap();
    let archived = mem.json(&["archive", "--transcript", "big.jsonl"]);
    assert_eq!(
        archived["messages"],
        big.len() / line.len(),
        "{}",
        archived["episode_id"]
    );

    // Nothing refused was stored, and the model was never asked.
    assert!(!mem.path("prompt.txt").exists(), "the model ran");
    assert_eq!(mem.json(&["list"])["count"], 0);
    let recall = mem.json(&["recall", "Luna", "--limit", "20"]);
    let episodes = recall["episodes"].as_array().unwrap();
    assert_eq!(
        episodes.len(),
        1,
        "only the archive within the limit: {recall}"
    );
    assert_eq!(episodes[0]["id"], archived["episode_id"]);
}

/// What the store logs (at debug) when it loads a scope into its search cache.
const CACHE_LOADED: &str = "search cache loaded the scope";

#[test]
fn one_shot_commands_answer_from_the_database_and_load_nothing() {
    let mem = Mem::new();
    mem.ok(&[
        "add",
        "--subject",
        "user",
        "--relation",
        "prefers_editor",
        "--object",
        "helix",
        "--statement",
        "User prefers helix as their editor",
    ]);
    // One process, one query: the database's own index answers; the scope is not loaded.
    for command in ["search", "recall"] {
        let output = mem.run(&["--log-level", "debug", command, "which editor"]);
        let log = stderr(&output);
        assert!(succeeded(output).contains("helix"), "{command}");
        assert!(
            !log.contains(CACHE_LOADED),
            "{command} loaded the scope:\n{log}"
        );
    }
    // The long-lived server loads it once, at its first search, and answers the same.
    let log = mem.path("mcp.log");
    let mut server = Command::new(env!("CARGO_BIN_EXE_facts"));
    server
        .args(["mcp", "--log-level", "debug", "--db"])
        .arg(&mem.db)
        .env_remove("FACTMEM_DB")
        .stderr(std::fs::File::create(&log).unwrap());
    let mut client = stdio_client::Client::start(server);
    for _ in 0..2 {
        let found = client.call("memory_search", json!({"query": "which editor"}));
        let results = &found["structuredContent"]["results"];
        assert_eq!(results[0]["fact"]["object"], "helix", "{found}");
        assert_eq!(mem.json(&["search", "which editor"])["results"], *results);
    }
    assert!(client.finish().success());
    let log = std::fs::read_to_string(log).unwrap();
    assert_eq!(log.matches(CACHE_LOADED).count(), 1, "{log}");
}

#[test]
fn metadata_and_filters_from_the_command_line() {
    let mem = Mem::new();
    let rlm = mem.add(
        "user",
        "works_on",
        "the parser",
        &[
            "--meta",
            "project=rlm",
            "--meta",
            "n=3",
            "--meta",
            r#"tag="7""#,
            "--valid-from",
            "2026-01-01T00:00:00Z",
        ],
    );
    mem.add(
        "user",
        "drinks",
        "tea",
        &["--meta-json", r#"{"project": "home", "ok": true}"#],
    );
    mem.add("user", "edits_with", "helix", &[]);
    let shown = mem.json(&["show", &rlm])["fact"].clone();
    assert_eq!(
        shown["metadata"],
        json!({"project": "rlm", "n": 3, "tag": "7"})
    );
    assert_eq!(shown["valid_from"], "2026-01-01T00:00:00Z");
    assert!(mem.ok(&["show", &rlm]).contains("metadata.n"));

    // Both forms of a filter narrow list, search, history, recall and format.
    let objects = |value: &Value, key: &str| -> Vec<String> {
        value[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let fact = if f["fact"].is_object() { &f["fact"] } else { f };
                fact["object"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    for filter in [
        vec!["--where", r#"metadata.project = "rlm""#],
        vec!["--filter", r#"{"metadata.n": {"gte": 3}}"#],
    ] {
        let with = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend(filter.iter().copied());
            mem.json(&all)
        };
        assert_eq!(objects(&with(&["list"]), "facts"), ["the parser"]);
        assert_eq!(
            objects(&with(&["search", "user"]), "results"),
            ["the parser"]
        );
        assert_eq!(
            objects(&with(&["history", "user"]), "versions"),
            ["the parser"]
        );
        let recall = with(&["recall", "user works drinks edits"]);
        assert_eq!(objects(&recall, "facts"), ["the parser"]);
        let format = with(&["format"]);
        assert!(
            !format["text"].as_str().unwrap().contains("tea"),
            "{format}"
        );
    }
    let missing = mem.json(&["list", "--where", "metadata.project not exists"]);
    assert_eq!(objects(&missing, "facts"), ["helix"]);

    // Filters and metadata that do not read are usage errors naming where.
    let bad = mem.run(&[
        "list",
        "--where",
        "metadata.project = rlm and bogus = 1",
        "--json",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let answer: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(answer["error"]["code"], "invalid_filter");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("column"),
        "{answer}"
    );
    let bad = mem.run(&[
        "list",
        "--filter",
        r#"{"or": [{"colour": "red"}]}"#,
        "--json",
    ]);
    let answer: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/or/0/colour")
    );
    let bad = mem.run(&[
        "add",
        "--subject",
        "s",
        "--relation",
        "r",
        "--object",
        "o",
        "--meta",
        "no pair",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("metadata"), "{}", stderr(&bad));

    // Updating metadata replaces it whole.
    let updated = mem.json(&["update", &rlm, "--meta", "project=factmem"]);
    assert_eq!(updated["fact"]["metadata"], json!({"project": "factmem"}));

    // Deleting by filter: the count first, the list with --dry-run, then --yes.
    let home = ["delete", "--where", r#"metadata.project = "home""#];
    let refused = mem.run(&home);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("holds for 1 fact: give --yes"),
        "{}",
        stderr(&refused)
    );
    let mut dry = home.to_vec();
    dry.push("--dry-run");
    let listed = mem.json(&dry);
    assert_eq!(
        (listed["dry_run"].clone(), listed["count"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(mem.json(&["list"])["count"], 3);
    let mut yes = home.to_vec();
    yes.push("--yes");
    let deleted = mem.json(&yes);
    assert_eq!(deleted["count"], 1);
    assert_eq!(mem.json(&["list"])["count"], 2);
    // An id and a filter together are a usage error.
    let both = mem.run(&["delete", &rlm, "--where", "confidence > 0"]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn an_archived_conversations_metadata_reaches_its_facts() {
    let mem = Mem::new();
    let llm = mem.fake_llm(REPLY);
    let transcript = mem.transcript();
    let archived = mem.json(&[
        "archive",
        "--transcript",
        &transcript,
        "--llm-cmd",
        &llm,
        "--meta",
        "channel=slack",
    ]);
    assert_eq!(archived["changes"]["added"].as_array().unwrap().len(), 1);
    let facts = mem.json(&["list", "--where", r#"metadata.channel = "slack""#]);
    assert_eq!(facts["count"], 1, "{facts}");
}

#[test]
fn neighbours_walk_from_an_entity() {
    let mem = Mem::new();
    let works = mem.add("user", "works_on", "project:rlm", &[]);
    let lang = mem.add("project:rlm", "written_in", "rust", &["--meta", "lang=yes"]);
    mem.add("berlin", "is_in", "germany", &[]);
    let one = mem.json(&["neighbours", "user"]);
    assert_eq!(one["neighbours"].as_array().unwrap().len(), 1);
    assert_eq!(one["neighbours"][0]["fact"]["id"], works.as_str());
    let two = mem.json(&["neighbours", "user", "--depth", "2"]);
    let found = two["neighbours"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[1]["fact"]["id"], lang.as_str());
    assert_eq!(found[1]["path"], json!(["user", "project:rlm"]));
    assert_eq!(found[1]["via"], works.as_str());
    let text = mem.ok(&["neighbours", "user", "--depth", "2"]);
    assert!(text.contains("user > project:rlm"), "{text}");
    // A filter narrows every hop: the depth-1 fact fails it, so nothing is reached.
    let none = mem.json(&[
        "neighbours",
        "user",
        "--depth",
        "2",
        "--where",
        "metadata.lang exists",
    ]);
    assert_eq!(none["neighbours"], json!([]));
    assert_eq!(
        mem.run(&["neighbours", "user", "--depth", "3"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn recency_is_opt_in_on_search_and_recall() {
    let mem = Mem::new();
    let old = mem.add(
        "user",
        "plays",
        "tennis",
        &[
            "--statement",
            "User plays tennis on tennis courts",
            "--valid-from",
            "2026-01-01T00:00:00Z",
        ],
    );
    let new = mem.add(
        "user",
        "started",
        "padel",
        &[
            "--statement",
            "User started padel, like tennis",
            "--valid-from",
            "2026-06-01T00:00:00Z",
        ],
    );
    let first = |args: &[&str]| mem.json(args)["results"][0]["fact"]["id"].clone();
    assert_eq!(first(&["search", "tennis", "courts"]), json!(old));
    let recent = [
        "search",
        "tennis",
        "courts",
        "--recency-half-life",
        "30d",
        "--reference-date",
        "2026-06-02T00:00:00Z",
    ];
    assert_eq!(first(&recent), json!(new));
    let recall = mem.json(&["recall", "tennis courts", "--recency-half-life", "2w"]);
    assert_eq!(recall["facts"][0]["fact"]["id"], json!(new));
    assert_eq!(
        mem.run(&["search", "tennis", "--recency-half-life", "soon"])
            .status
            .code(),
        Some(2)
    );
    // A reference date alone is a usage error: recency is off without a half-life.
    assert_eq!(
        mem.run(&[
            "search",
            "tennis",
            "--reference-date",
            "2026-06-02T00:00:00Z"
        ])
        .status
        .code(),
        Some(2)
    );
}

#[test]
fn erase_empties_only_its_scope_after_a_confirmation_and_an_unknown_scope_is_not_found() {
    let mem = Mem::new();
    // No database yet: nothing to erase, and no file is made.
    let none = mem.run(&["--scope", "user:alice", "erase", "--yes"]);
    assert_eq!(none.status.code(), Some(3), "{none:?}");
    assert!(!mem.db.exists());
    mem.archive_fixture(
        "moving.jsonl",
        &fixture("moving.reply.json"),
        &["--scope", "user:alice"],
    );
    mem.ok(&["--scope", "user:alice", "alias", "Mel", "Melanie"]);
    mem.add("user", "prefers_editor", "helix", &["--scope", "user:bob"]);

    let typo = mem.run(&["--scope", "user:alcie", "erase", "--yes"]);
    assert_eq!(typo.status.code(), Some(3), "{typo:?}");
    let said = String::from_utf8_lossy(&typo.stderr);
    assert!(
        said.contains("user:alice, user:bob"),
        "names the scopes: {said}"
    );
    assert!(
        !mem.ok(&["--scope", "user:alcie", "erase", "--help"])
            .is_empty(),
        "help"
    );

    // Without --yes: what it holds, and nothing goes.
    let unconfirmed = mem.run(&["--scope", "user:alice", "erase"]);
    assert_eq!(unconfirmed.status.code(), Some(2), "{unconfirmed:?}");
    let said = String::from_utf8_lossy(&unconfirmed.stderr);
    assert!(
        said.contains("2 current facts (3 versions), 1 episode, 1 alias"),
        "{said}"
    );
    assert_eq!(mem.json(&["--scope", "user:alice", "list"])["count"], 2);

    let erased = mem.json(&["--scope", "user:alice", "erase", "--yes", "--vacuum"]);
    assert_eq!(erased["scope"], "user:alice", "{erased}");
    assert_eq!(erased["erased"]["versions"], 3, "{erased}");
    assert_eq!(erased["erased"]["episodes"], 1, "{erased}");
    assert_eq!(erased["erased"]["aliases"], 1, "{erased}");
    assert_eq!(erased["vacuumed"], true);
    assert_eq!(mem.json(&["--scope", "user:alice", "list"])["count"], 0);
    assert_eq!(mem.ok(&["--scope", "user:alice", "recall", "Berlin"]), "");
    assert_eq!(
        mem.json(&["--scope", "user:alice", "alias", "--list"])["aliases"],
        json!([])
    );
    assert_eq!(
        mem.json(&["--scope", "user:bob", "list"])["count"],
        1,
        "the other scope keeps its facts"
    );
    // The erased scope keeps its name, empty: erasing it again erases nothing.
    let again = mem.ok(&["--scope", "user:alice", "erase", "--yes"]);
    assert!(again.contains("0 fact versions, 0 embeddings"), "{again}");
    let bytes = std::fs::read(&mem.db).unwrap();
    assert!(
        !bytes.windows(6).any(|w| w == b"Berlin"),
        "the erased conversation's words are gone from the file"
    );
}

#[test]
fn export_then_import_moves_a_scope_byte_for_byte_and_a_second_import_changes_nothing() {
    let mem = Mem::new();
    mem.add("user", "prefers", "unittest", &["--meta", "project=rlm"]);
    mem.add(
        "user",
        "prefers",
        "pytest",
        &["--statement", "The user prefers \"pytest\"."],
    );
    mem.ok(&[
        "archive",
        "--transcript",
        &mem.transcript(),
        "--llm-cmd",
        &mem.fake_llm(REPLY),
    ]);
    mem.ok(&["context", "set", "--work", "Nurse <b>on nights</b>"]);
    mem.ok(&["alias", "mel", "melanie"]);
    // To stdout: the file alone; the summary on stderr.
    let output = mem.run(&["export"]);
    let file = succeeded(output.clone());
    assert!(String::from_utf8_lossy(&output.stderr).contains("exported"));
    let lines: Vec<&str> = file.lines().collect();
    assert!(lines[0].starts_with(r#"{"type":"header","format":"factmem-export","version":1"#));
    assert!(lines.last().unwrap().starts_with(r#"{"type":"end""#));
    for kind in ["fact", "episode", "alias", "profile"] {
        assert!(
            file.contains(&format!(r#"{{"type":"{kind}""#)),
            "no {kind} in\n{file}"
        );
    }
    // To a file, with --json; the same bytes.
    let exported = mem.json(&["export", "--output", "out.jsonl"]);
    assert_eq!(exported["records"], lines.len() - 2, "{exported}");
    assert_eq!(
        std::fs::read_to_string(mem.path("out.jsonl")).unwrap(),
        file
    );
    assert!(!mem.path("out.jsonl.partial").exists());

    // Into another database: the same export comes back.
    let copy = Mem::new();
    let source = mem.path("out.jsonl").display().to_string();
    let imported = copy.json(&["import", &source]);
    assert_eq!(imported["report"]["facts"]["imported"], 3, "{imported}");
    assert_eq!(imported["report"]["episodes"], 1, "{imported}");
    assert_eq!(succeeded(copy.run(&["export"])), file);
    let again = copy.json(&["import", &source]);
    assert_eq!(again["report"]["unchanged"], lines.len() - 2, "{again}");
    assert_eq!(again["report"]["facts"]["imported"], 0, "{again}");
    assert_eq!(succeeded(copy.run(&["export"])), file);
    // The imported memory answers as the original does.
    assert!(copy.ok(&["search", "pytest"]).contains("pytest"));
}

#[test]
fn a_bad_export_imports_nothing_and_exports_of_unknown_scopes_are_not_found() {
    let mem = Mem::new();
    mem.add("user", "prefers", "pytest", &[]);
    let file = succeeded(mem.run(&["export"]));
    let target = Mem::new();
    target.add("user", "lives_in", "Lisbon", &[]);
    let before = succeeded(target.run(&["export"]));
    let write = |name: &str, text: &str| {
        let path = target.path(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let cut = write("cut.jsonl", &file[..file.len() - 20]);
    let newer = write(
        "newer.jsonl",
        &file.replacen(r#""version":1"#, r#""version":7"#, 1),
    );
    let foreign = write("foreign.json", r#"{"version": 1, "records": []}"#);
    for (path, code, words) in [
        (&cut, "invalid_export", "line 3"),
        (&newer, "export_version", "version 7"),
        (
            &foreign,
            "invalid_export",
            "line 1: not a factmem-export file",
        ),
    ] {
        let output = target.run(&["import", path, "--json"]);
        assert_eq!(output.status.code(), Some(2), "{path}");
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{message}");
        assert_eq!(succeeded(target.run(&["export"])), before);
    }
    // An unknown scope or database is not found (exit 3), and nothing is created.
    let typo = mem.run(&["--scope", "nobody", "export"]);
    assert_eq!(typo.status.code(), Some(3));
    let nothing = Mem::new();
    assert_eq!(nothing.run(&["export"]).status.code(), Some(3));
    assert!(!nothing.db.exists());
    // The data goes to stdout: --json needs --output.
    assert_eq!(mem.run(&["export", "--json"]).status.code(), Some(2));
    // `facts schema export` prints the format's JSON Schema.
    let schema = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(["schema", "export"])
        .output()
        .unwrap();
    let schema: Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert_eq!(
        schema["$defs"]["header"]["properties"]["format"]["const"],
        "factmem-export"
    );
}

#[test]
fn a_mem0_dump_imports_as_facts_with_their_text_times_and_metadata() {
    let mem = Mem::new();
    let dump = mem.path("mem0.json");
    std::fs::write(
        &dump,
        json!({"results": [
            {"id": "a1", "memory": "Is allergic to peanuts", "user_id": "alice",
             "metadata": {"source": "onboarding"}, "hash": "h",
             "created_at": "2025-03-01T09:00:00-08:00", "updated_at": "2025-03-02T00:00:00Z"},
            {"id": "a2", "memory": ""}
        ]})
        .to_string(),
    )
    .unwrap();
    let imported = mem.json(&["import", "--from", "mem0", &dump.display().to_string()]);
    assert_eq!(imported["report"]["facts"]["imported"], 1, "{imported}");
    assert_eq!(imported["mem0"]["skipped"][0]["index"], 1, "{imported}");
    let listed = mem.json(&["list", "--where", "metadata.mem0_id = 'a1'"]);
    let fact = &listed["facts"][0];
    assert_eq!(fact["subject"], "alice", "{listed}");
    assert_eq!(fact["statement"], "Is allergic to peanuts");
    assert_eq!(fact["valid_from"], "2025-03-01T17:00:00Z");
    assert_eq!(fact["metadata"]["source"], "onboarding");
}

#[test]
fn all_scopes_export_one_after_another_and_import_each_into_its_own() {
    let mem = Mem::new();
    for scope in ["user:alice", "user:bob"] {
        mem.ok(&[
            "--scope",
            scope,
            "add",
            "--subject",
            "user",
            "--relation",
            "likes",
            "--object",
            scope,
        ]);
    }
    let file = mem.path("all.jsonl");
    let exported = mem.json(&["export", "--all-scopes", "--output", "all.jsonl"]);
    let scopes: Vec<&str> = exported["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, ["user:alice", "user:bob"], "{exported}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches(r#"{"type":"header""#).count(), 2);

    // One scope at a time refuses a file of several, saying how to import it.
    let copy = Mem::new();
    let path = file.display().to_string();
    let single = copy.run(&["import", &path, "--json"]);
    assert_eq!(single.status.code(), Some(2));
    let answer: Value = serde_json::from_slice(&single.stdout).unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--all-scopes"),
        "{answer}"
    );
    let imported = copy.json(&["import", "--all-scopes", &path]);
    assert_eq!(imported["scopes"][1]["scope"], "user:bob", "{imported}");
    copy.ok(&["export", "--all-scopes", "--output", "again.jsonl"]);
    assert_eq!(
        std::fs::read_to_string(copy.path("again.jsonl")).unwrap(),
        text
    );
    let bob = copy.json(&["--scope", "user:bob", "list"]);
    assert_eq!(bob["facts"][0]["object"], "user:bob", "{bob}");

    // A bad export anywhere in the file imports nothing of any.
    // A third export, cut short after its header.
    let broken = text.clone()
        + r#"{"type":"header","format":"factmem-export","version":1,"scope":"user:carol"}"#
        + "\n";
    std::fs::write(copy.path("broken.jsonl"), broken).unwrap();
    let third = Mem::new();
    let failed = third.run(&[
        "import",
        "--all-scopes",
        &copy.path("broken.jsonl").display().to_string(),
    ]);
    assert_eq!(failed.status.code(), Some(2));
    let after = third.run(&["--scope", "user:alice", "export"]);
    assert_eq!(
        after.status.code(),
        Some(3),
        "nothing of the file was imported"
    );
}

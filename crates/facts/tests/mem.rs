//! `facts mem`: the real binary against a temporary database, one process per command, in
//! its human and `--json` forms, with a fake model command for extraction.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

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

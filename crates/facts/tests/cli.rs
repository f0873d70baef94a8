//! The real `facts` binary on committed scripts and files: replay (files, stdin, a
//! coprocess on a pipe), exit codes, logs, completions, man pages, schemas, ledgers, demo.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_facts");
const FIXTURE_TASKS: &str = "tests/fixtures/project/.spec-context/specs/demo/tasks.md";

fn facts(args: &[&str]) -> Output {
    facts_with_stdin(args, b"")
}

/// Runs `facts` in the crate's directory with `input` on stdin (a pipe, so not a terminal).
fn facts_with_stdin(args: &[&str], input: &[u8]) -> Output {
    facts_in(env!("CARGO_MANIFEST_DIR"), args, input, &[])
}

fn facts_in(dir: impl AsRef<Path>, args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that stops at start (a bad argument) may exit before it reads its input.
    if let Err(e) = child.stdin.take().unwrap().write_all(input) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

// ---------------------------------------------------------------------------------------
// replay

#[test]
fn replay_answers_each_line_in_order_byte_for_byte() {
    let output = facts(&[
        "replay",
        "tests/fixtures/replay.jsonl",
        "--project",
        "tests/fixtures/project",
        "--deterministic",
    ]);
    // The script has failing requests on purpose: exit code 1, the lines on stderr.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("6 of 14 requests failed (line 5, 6, 7, 14, 15, 16)"),
        "{}",
        stderr(&output)
    );
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay.expected.jsonl"),
    )
    .unwrap();
    let actual = stdout(&output);
    assert_eq!(
        actual, expected,
        "regenerate with: facts replay tests/fixtures/replay.jsonl --project tests/fixtures/project --deterministic"
    );
    // One answer per request: the comment and the blank line get none.
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 14);
    assert!(lines.iter().all(|l| l["ok"].is_boolean()));
    assert_eq!(lines[0]["id"], "init-1", "the request's id is echoed");
    assert_eq!(lines[3]["error"]["code"], "marker_missing");
    assert_eq!(lines[3]["next_action"], "halt_schema_invalid_terminal");
    // Every failure names its script line once, in `line`, not in the message.
    let failures: Vec<(&str, u64)> = lines
        .iter()
        .filter(|l| l["ok"] == false)
        .map(|l| {
            let message = l["error"]["message"].as_str().unwrap();
            assert!(!message.starts_with("line "), "{message}");
            (
                l["error"]["code"].as_str().unwrap(),
                l["error"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        failures,
        [
            ("marker_missing", 5),
            ("invalid_json", 6),
            ("unknown_action", 7),
            ("progress_ledger_missing_tasks", 14),
            ("task_not_found", 15),
            ("invalid_request", 16),
        ]
    );
    assert!(
        lines[13]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("missing field `run_id`")
    );
    assert!(
        lines
            .iter()
            .filter(|l| l["ok"] == true)
            .all(|l| l.get("error").is_none())
    );
    assert_eq!(
        lines[7]["facts"][0]["subject"], "task:1",
        "task 1's facts reach task 2"
    );
}

#[test]
fn replay_answers_a_line_that_is_not_utf8_and_goes_on() {
    let dir = tempfile::TempDir::new().unwrap();
    let script = dir.path().join("bad.jsonl");
    std::fs::write(
        &script,
        b"{\"action\": \"get_telemetry\"}\n\xff\xfe bad\n{\"action\": \"get_telemetry\"}\r\n",
    )
    .unwrap();
    let output = facts(&["replay", script.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "a request failed");
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["error"]["code"], "invalid_json");
    assert_eq!(lines[1]["error"]["line"], 2);
    assert!(
        lines[1]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("not UTF-8")
    );
    assert_eq!(lines[2]["ok"], true, "the line after it, CRLF and all");
}

#[test]
fn replay_of_a_missing_script_exits_2() {
    let output = facts(&["replay", "tests/fixtures/no-such-script.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cannot read"));
}

#[test]
fn replay_exits_0_when_every_request_succeeds_and_skips_blank_lines_and_comments() {
    let script = b"# telemetry twice\n\n{\"action\": \"get_telemetry\", \"id\": 1}\n   \n  # indented comment\n{\"action\": \"get_telemetry\", \"id\": [2]}\n";
    let output = facts_with_stdin(&["replay", "-"], script);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[1]["id"], serde_json::json!([2]));
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
}

#[test]
fn replay_exits_1_when_any_request_fails_and_every_error_names_its_line() {
    let script = b"{\"action\": \"get_telemetry\"}\n# a comment\n{\"action\": \"get_snapshot\", \"run_id\": \"nope\", \"id\": \"s\"}\n{\"action\": \"get_telemetry\", \"extra\": 1}\n{\"action\": \"get_telemetry\"}\n";
    let output = facts_with_stdin(&["replay", "-"], script);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 4, "a failure does not stop the script");
    // A runtime error carries the line too.
    assert_eq!(lines[1]["error"]["code"], "run_not_initialized");
    assert_eq!(lines[1]["error"]["line"], 3);
    assert_eq!(lines[1]["id"], "s");
    assert_eq!(lines[2]["error"]["code"], "invalid_request");
    assert_eq!(lines[2]["error"]["line"], 4);
    assert_eq!(lines[3]["ok"], true);
    assert!(lines[0]["error"].is_null());
    assert!(
        stderr(&output).contains("2 of 4 requests failed (line 3, 4)"),
        "{}",
        stderr(&output)
    );
}

/// Reads one line from `lines` within a minute, or fails the test instead of hanging.
fn next_line(lines: &mpsc::Receiver<String>) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(60))
        .expect("a response before the next request is written");
    serde_json::from_str(&line).unwrap()
}

#[test]
fn replay_of_stdin_answers_each_request_before_the_next_arrives() {
    let mut child = Command::new(BIN)
        .args(["replay", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if sender.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    stdin
        .write_all(b"{\"action\": \"get_telemetry\", \"id\": 1}\n")
        .unwrap();
    stdin.flush().unwrap();
    let first = next_line(&lines);
    assert_eq!(first["id"], 1);
    assert_eq!(first["ok"], true);
    // The response reflects the first request only; stdin is still open.
    stdin
        .write_all(b"# keep going\n{\"action\": \"teleport\", \"id\": 2}\n")
        .unwrap();
    stdin.flush().unwrap();
    let second = next_line(&lines);
    assert_eq!(second["id"], 2);
    assert_eq!(second["error"]["line"], 3);
    stdin
        .write_all(b"{\"action\": \"get_telemetry\", \"id\": 3}\n")
        .unwrap();
    stdin.flush().unwrap();
    assert_eq!(next_line(&lines)["id"], 3);
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(status.code(), Some(1), "request 2 failed");
}

#[test]
fn replay_without_a_script_reads_stdin_when_it_is_not_a_terminal() {
    let output = facts_with_stdin(&["replay"], b"{\"action\": \"get_telemetry\"}\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json_lines(&output).len(), 1);
}

/// `replay` with no script and a terminal on stdin: a usage error, not a wait for typing.
/// Stdin must be a terminal, which only a pseudo-terminal gives a test: `script` (util-linux;
/// Debian's `bsdutils`, an essential package) runs the command on one. Without `script` the
/// test says why it cannot run, and fails under `CI=true`.
#[test]
fn replay_without_a_script_on_a_terminal_is_a_usage_error() {
    let cannot_run = |why: String| {
        let message = format!(
            "replay on a terminal: {why}; install util-linux (Debian: bsdutils) for `script`"
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        eprintln!("skipped: {message}");
    };
    match Command::new("script").arg("--version").output() {
        Ok(probe) if probe.status.success() => {}
        Ok(probe) => {
            return cannot_run(format!(
                "`script --version` failed ({}): {}",
                probe.status,
                stderr(&probe)
            ));
        }
        Err(e) => return cannot_run(format!("no `script` command to make a terminal: {e}")),
    }
    let output = Command::new("script")
        .args(["--quiet", "--return", "--command"])
        .arg(format!("'{BIN}' replay"))
        .arg("/dev/null")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("no script"), "{text}");
}

#[test]
fn replay_checks_the_project_at_start() {
    let request = b"{\"action\": \"get_telemetry\"}\n";
    let missing = facts_with_stdin(&["replay", "-", "--project", "tests/no-such-dir"], request);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("--project tests/no-such-dir"),
        "{}",
        stderr(&missing)
    );
    assert!(missing.stdout.is_empty(), "no request is answered");
    let file = facts_with_stdin(&["replay", "-", "--project", FIXTURE_TASKS], request);
    assert_eq!(file.status.code(), Some(2));
    assert!(
        stderr(&file).contains("not a directory"),
        "{}",
        stderr(&file)
    );
}

#[test]
fn replay_gives_init_run_the_project_when_it_names_none_or_null() {
    let script = b"{\"action\": \"init_run\", \"spec_name\": \"demo\", \"task_id\": \"1\"}\n\
        {\"action\": \"init_run\", \"spec_name\": \"demo\", \"task_id\": \"2\", \"project_path\": null}\n";
    let output = facts_with_stdin(
        &["replay", "-", "--project", "tests/fixtures/project"],
        script,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let lines = json_lines(&output);
    assert_eq!(lines[0]["run_id"], "demo:1");
    assert_eq!(lines[1]["run_id"], "demo:2");
}

#[cfg(not(feature = "tiktoken"))]
#[test]
fn a_bpe_tokenizer_without_the_feature_names_the_install_command() {
    let output = facts(&["replay", "-", "--tokenizer", "o200k"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cargo install --path crates/facts --features tiktoken"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn replay_and_mcp_help_point_to_the_protocol_and_spec_format_docs() {
    for command in ["replay", "mcp"] {
        let output = facts(&[command, "--help"]);
        assert!(output.status.success());
        let text = stdout(&output);
        assert!(text.contains("docs/protocol.md"), "{command}: {text}");
        assert!(text.contains("docs/spec-format.md"), "{command}: {text}");
        assert!(text.contains("Exit codes"), "{command}: {text}");
    }
    let replay = stdout(&facts(&["replay", "--help"]));
    assert!(replay.contains("\"line\""), "{replay}");
}

// ---------------------------------------------------------------------------------------
// exit codes, logs

#[test]
fn the_top_level_help_lists_the_exit_codes() {
    let text = stdout(&facts(&["--help"]));
    assert!(text.contains("Exit codes"), "{text}");
    for line in [
        "0  success",
        "1  a request",
        "2  usage error",
        "3  not found",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert_eq!(facts(&["no-such-command"]).status.code(), Some(2));
}

#[test]
fn log_level_debug_writes_to_stderr_and_nothing_extra_to_stdout() {
    let script = b"{\"action\": \"get_telemetry\"}\n";
    let args = ["replay", "-", "--deterministic"];
    let quiet = facts_with_stdin(&args, script);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(
        quiet.stderr.is_empty(),
        "warnings only by default: {}",
        stderr(&quiet)
    );
    let dir = env!("CARGO_MANIFEST_DIR");
    let debug = facts_in(
        dir,
        &["--log-level", "debug", "replay", "-", "--deterministic"],
        script,
        &[],
    );
    assert_eq!(debug.status.code(), Some(0));
    assert_eq!(debug.stdout, quiet.stdout, "stdout is the protocol only");
    let logs = stderr(&debug);
    assert!(logs.contains("replay started"), "{logs}");
    assert!(logs.contains("DEBUG"), "{logs}");
    // After the subcommand too (the option is global).
    let after = facts_in(dir, &["replay", "-", "--log-level", "info"], script, &[]);
    assert!(
        stderr(&after).contains("replay finished"),
        "{}",
        stderr(&after)
    );
    // RUST_LOG when there is no flag; the flag wins over it.
    let env = facts_in(dir, &["replay", "-"], script, &[("RUST_LOG", "info")]);
    assert!(stderr(&env).contains("replay started"), "{}", stderr(&env));
    let off = facts_in(
        dir,
        &["--log-level", "off", "replay", "-"],
        script,
        &[("RUST_LOG", "debug")],
    );
    assert!(off.stderr.is_empty(), "{}", stderr(&off));
}

// ---------------------------------------------------------------------------------------
// completions, man pages, schemas

#[test]
fn completions_for_bash_know_the_subcommands() {
    let output = facts(&["completions", "bash"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("replay"), "{text}");
    assert!(text.contains("--log-level"), "{text}");
    for shell in ["zsh", "fish"] {
        let output = facts(&["completions", shell]);
        assert!(output.status.success());
        assert!(stdout(&output).contains("replay"), "{shell}");
    }
}

#[test]
fn man_writes_one_page_per_command() {
    let dir = tempfile::TempDir::new().unwrap();
    let out = dir.path().join("man");
    let output = facts(&["man", "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let top = std::fs::read_to_string(out.join("facts.1")).unwrap();
    assert!(top.contains("Exit codes"), "{top}");
    let replay = std::fs::read_to_string(out.join("facts-replay.1")).unwrap();
    assert!(replay.contains("docs/protocol.md"));
    assert!(out.join("facts-mem-add.1").is_file());
    assert!(out.join("facts-mcp.1").is_file());
}

#[test]
fn schema_prints_every_action_or_one() {
    let output = facts(&["schema"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let all: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"init_run") && names.contains(&"get_telemetry"),
        "{names:?}"
    );
    for action in all.as_array().unwrap() {
        assert_eq!(action["input_schema"]["type"], "object", "{action}");
        assert!(
            action["output_schema"]["properties"]["ok"].is_object(),
            "{action}"
        );
        assert!(action["read_only"].is_boolean());
    }
    let one: Value = serde_json::from_slice(&facts(&["schema", "get_snapshot"]).stdout).unwrap();
    assert_eq!(one["name"], "get_snapshot");
    assert_eq!(one["read_only"], true);
    assert_eq!(
        one["input_schema"]["required"],
        serde_json::json!(["run_id"])
    );
    let init: Value = serde_json::from_slice(&facts(&["schema", "init_run"]).stdout).unwrap();
    assert_eq!(init["read_only"], false);
}

#[test]
fn schema_of_an_unknown_action_exits_3_and_lists_the_names() {
    let output = facts(&["schema", "NOPE"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(output.stdout.is_empty());
    let text = stderr(&output);
    assert!(text.contains("\"NOPE\""), "{text}");
    assert!(
        text.contains("init_run") && text.contains("fact_history"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------
// ledger

#[test]
fn ledger_shows_the_progress_of_a_tasks_md() {
    let output = facts(&["ledger", FIXTURE_TASKS]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(
        text.starts_with(&format!("demo ({FIXTURE_TASKS})")),
        "{text}"
    );
    assert!(
        text.contains("2 tasks: 1 completed, 0 in progress, 1 pending"),
        "{text}"
    );
    assert!(text.contains("[x] 1 Parse tasks.md\n"), "{text}");
    assert!(
        text.contains("[ ] 2 Extend the parser with prompts  <- active"),
        "{text}"
    );
    assert!(!text.contains("done"), "{text}");
    let json = facts(&["ledger", FIXTURE_TASKS, "--json"]);
    assert!(json.status.success());
    let value: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["spec_name"], "demo");
    assert_eq!(value["active_task_id"], "2");
    assert_eq!(value["totals"]["total"], 2);
    assert_eq!(value["tasks"][0]["id"], "1");
    assert_eq!(value["tasks"][0]["status"], "completed");
}

#[test]
fn ledger_names_the_spec_folder_when_run_inside_it() {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/project/.spec-context/specs/demo");
    let output = facts_in(&spec, &["ledger", "tasks.md"], b"", &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("demo (tasks.md)\n"), "{text}");
    let json = facts_in(&spec, &["ledger", "./tasks.md", "--json"], b"", &[]);
    let value: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["spec_name"], "demo");
}

#[test]
fn ledger_counts_one_task_says_when_all_are_done_and_marks_each_status() {
    let dir = tempfile::TempDir::new().unwrap();
    let spec = dir.path().join("parser");
    std::fs::create_dir(&spec).unwrap();
    let path = spec.join("tasks.md");
    std::fs::write(&path, "- [x] 1. Parse\n").unwrap();
    let text = stdout(&facts(&["ledger", path.to_str().unwrap()]));
    assert!(text.starts_with("parser ("), "{text}");
    assert!(
        text.contains("\n1 task: 1 completed, 0 in progress, 0 pending\n"),
        "{text}"
    );
    assert!(text.contains("all tasks are done"), "{text}");
    assert!(!text.contains("<- active"), "{text}");
    let json: Value =
        serde_json::from_slice(&facts(&["ledger", path.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    assert_eq!(json["active_task_id"], Value::Null);
    std::fs::write(
        &path,
        "- [x] 1. Parse\n- [-] 2. Index\n  - [ ] 2.1 Tokens\n",
    )
    .unwrap();
    let text = stdout(&facts(&["ledger", path.to_str().unwrap()]));
    assert!(
        text.contains("3 tasks: 1 completed, 1 in progress, 1 pending"),
        "{text}"
    );
    assert!(!text.contains("all tasks are done"), "{text}");
    assert!(text.contains("[x] 1 Parse"), "{text}");
    assert!(text.contains("[-] 2 Index  <- active"), "{text}");
    assert!(text.contains("  [ ] 2.1 Tokens"), "{text}");
}

#[test]
fn ledger_failures_exit_2_and_are_json_with_json() {
    let missing = facts(&["ledger", "tests/fixtures/nothing/tasks.md"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(missing.stdout.is_empty());
    assert!(
        stderr(&missing).contains("no tasks.md at"),
        "{}",
        stderr(&missing)
    );
    let json = facts(&["ledger", "tests/fixtures/nothing/tasks.md", "--json"]);
    assert_eq!(json.status.code(), Some(2));
    let value: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["code"], "missing_tasks_file");
    assert!(
        value["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no tasks.md at")
    );
    let dir = tempfile::TempDir::new().unwrap();
    let empty = dir.path().join("tasks.md");
    std::fs::write(&empty, "# Tasks\n\nnothing here\n").unwrap();
    let json = facts(&["ledger", empty.to_str().unwrap(), "--json"]);
    assert_eq!(json.status.code(), Some(2));
    let value: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["error"]["code"], "no_tasks");
}

// ---------------------------------------------------------------------------------------
// demo

#[test]
fn demo_runs_a_whole_session() {
    let output = facts(&["demo"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("== task 8 reviewer"));
    assert!(text.contains("[Session Context]"));
    assert!(text.contains("prompt tokens, full replay"));
    // What the words mean, one line each.
    assert!(text.contains("  full replay "), "{text}");
    assert!(text.contains("  guide full "), "{text}");
    // The fix dispatch of task 2 gets the reviewer's feedback through its delta packet.
    let fix = text
        .split("== task 2 implementer")
        .nth(2)
        .expect("task 2's implementer is dispatched twice");
    let fix = fix.split("\n== ").next().unwrap();
    assert!(fix.contains("delta:"), "{fix}");
    assert!(
        fix.contains("required_fixes: [\"Rename store methods to snake_case\"]"),
        "{fix}"
    );
    assert!(fix.contains("reviewer_assessment: needs_changes"), "{fix}");
    // Invalidated facts are listed, not only counted.
    let approval = text
        .split("== task 2 reviewer")
        .nth(2)
        .expect("task 2's reviewer is dispatched twice");
    let approval = approval.split("\n== ").next().unwrap();
    assert!(approval.contains("3 invalidated"), "{approval}");
    assert!(
        approval.contains("     - task:2 reviewed_as needs_changes"),
        "{approval}"
    );
    assert!(
        !text.contains("more fact"),
        "every invalidated fact is named: {text}"
    );
    // What to try next, with exact commands.
    assert!(text.contains("== try next"), "{text}");
    assert!(text.contains(
        "cargo run --bin facts -- replay crates/facts/tests/fixtures/replay.jsonl --project crates/facts/tests/fixtures/project"
    ));
    assert!(text.contains("facts mcp --project PATH"), "{text}");
    let config = text
        .lines()
        .find(|line| line.trim_start().starts_with("{\"mcpServers\""))
        .expect("an example client config");
    let config: Value = serde_json::from_str(config.trim()).unwrap();
    assert_eq!(config["mcpServers"]["facts"]["args"][0], "mcp");
}

#[test]
fn a_read_replica_needs_a_postgres_database_and_a_postgres_url() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let db = db.to_str().unwrap();
    let replica = "postgres://factmem@127.0.0.1:1/memory";
    let output = facts_in(
        dir.path(),
        &["mcp", "--db", db, "--db-replica", replica],
        b"",
        &[],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--db-replica needs a postgres:// --db"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("memory.db").exists(), "nothing created");

    let output = facts_in(
        dir.path(),
        &["mcp", "--db", replica, "--db-replica", "standby.db"],
        b"",
        &[],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--db-replica standby.db: not a postgres:// URL"),
        "{}",
        stderr(&output)
    );

    // Without --db: clap's own usage error.
    let output = facts_in(
        dir.path(),
        &["mcp", "--db-replica", replica],
        b"",
        &[("FACTMEM_DATABASE_URL", "")],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

//! The real `facts` binary on committed scripts and files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::Path;
use std::process::{Command, Output};

fn facts(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

#[test]
fn replay_answers_each_line_in_order_byte_for_byte() {
    let output = facts(&[
        "replay",
        "tests/fixtures/replay.jsonl",
        "--project",
        "tests/fixtures/project",
        "--deterministic",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay.expected.jsonl"),
    )
    .unwrap();
    let actual = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        actual, expected,
        "regenerate with: facts replay tests/fixtures/replay.jsonl --project tests/fixtures/project --deterministic"
    );
    // Every line is a JSON object with `ok`; the bad lines are errors naming themselves.
    let lines: Vec<serde_json::Value> = actual
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 13);
    assert!(lines.iter().all(|l| l["ok"].is_boolean()));
    assert_eq!(lines[3]["error"]["code"], "marker_missing");
    assert_eq!(lines[3]["next_action"], "halt_schema_invalid_terminal");
    assert_eq!(lines[4]["error"]["code"], "invalid_json");
    assert!(
        lines[4]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 5:")
    );
    // Errors about the request line itself name the line.
    assert_eq!(lines[5]["error"]["code"], "unknown_action");
    assert!(
        lines[5]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 6:")
    );
    assert_eq!(lines[12]["error"]["code"], "invalid_request");
    assert!(
        lines[12]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 13: missing field `run_id`")
    );
    assert_eq!(lines[11]["error"]["code"], "progress_ledger_missing_tasks");
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
    assert!(output.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["error"]["code"], "invalid_json");
    assert!(
        lines[1]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 2: not UTF-8")
    );
    assert_eq!(lines[2]["ok"], true, "the line after it, CRLF and all");
}

#[test]
fn replay_of_a_missing_script_exits_2() {
    let output = facts(&["replay", "tests/fixtures/no-such-script.jsonl"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read"));
}

#[test]
fn ledger_shows_the_progress_of_a_tasks_md() {
    let output = facts(&[
        "ledger",
        "tests/fixtures/project/.spec-context/specs/demo/tasks.md",
    ]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("2 tasks: 1 completed, 0 in progress, 1 pending"),
        "{text}"
    );
    assert!(
        text.contains("[ ] 2 Extend the parser with prompts  <- active"),
        "{text}"
    );
    let json = facts(&[
        "ledger",
        "tests/fixtures/project/.spec-context/specs/demo/tasks.md",
        "--json",
    ]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["tasks"][0]["id"], "1");
    assert_eq!(
        facts(&["ledger", "tests/fixtures/nothing/tasks.md"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn demo_runs_a_whole_session() {
    let output = facts(&["demo"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("== task 8 reviewer"));
    assert!(text.contains("[Session Context]"));
    assert!(text.contains("prompt tokens, full replay"));
}

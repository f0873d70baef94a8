//! The documents against the running code, so they cannot drift: every action and memory
//! tool, request field, response field and error code appears in `docs/protocol.md`, and
//! its example session, replayed through the real binary, answers exactly the responses it
//! prints; `docs/spec-format.md`'s example spec gives the ledger, task prompt and facts it
//! shows.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use dispatch_runtime::memory_protocol;
use dispatch_runtime::protocol;
use serde_json::Value;

fn read_doc(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn doc() -> String {
    read_doc("protocol.md")
}

/// The text of the section `### \`name\`` up to the next heading of level 2 or 3.
fn section<'d>(doc: &'d str, name: &str) -> &'d str {
    let heading = format!("\n### `{name}`\n");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/protocol.md has no section {heading:?}"));
    let body = &doc[start + heading.len()..];
    let end = [body.find("\n### "), body.find("\n## ")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(body.len());
    &body[..end]
}

/// The property names of an object schema.
fn properties(schema: &serde_json::Map<String, Value>) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_action_and_field_is_documented_in_its_section() {
    let doc = doc();
    let envelope = ["ok", "id", "error"];
    for action in protocol::actions() {
        let section = section(&doc, action.name);
        for field in properties(&action.input_schema) {
            assert!(
                section.contains(&format!("| `{field}` |")),
                "docs/protocol.md: `{}` does not document request field `{field}` in its \
                 request table",
                action.name
            );
        }
        for field in properties(&action.output_schema) {
            if envelope.contains(&field.as_str()) {
                continue;
            }
            assert!(
                section.contains(&format!("`{field}`")),
                "docs/protocol.md: `{}` does not document response field `{field}`",
                action.name
            );
        }
        if action.read_only {
            assert!(
                section.contains("Read-only."),
                "docs/protocol.md: `{}` is read-only and should say so",
                action.name
            );
        }
    }
}

#[test]
fn every_error_code_is_in_the_table() {
    let doc = doc();
    for code in protocol::error_codes() {
        assert!(
            doc.contains(&format!("| `{code}` |")),
            "docs/protocol.md: error code `{code}` is missing from the error code table"
        );
    }
}

/// The text of the chapter `## title` up to the next heading of level 2.
fn chapter<'d>(doc: &'d str, title: &str) -> &'d str {
    let heading = format!("\n## {title}\n");
    let start = doc
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/protocol.md has no chapter {heading:?}"));
    let body = &doc[start + heading.len()..];
    &body[..body.find("\n## ").unwrap_or(body.len())]
}

/// The table row of `field` in a section: the line that starts with ``| `field` |``.
fn row<'d>(section: &'d str, field: &str) -> &'d str {
    let start = format!("| `{field}` |");
    section
        .lines()
        .find(|line| line.starts_with(&start))
        .unwrap_or_else(|| panic!("no row for `{field}` in:\n{section}"))
}

#[test]
fn every_memory_tool_and_field_is_documented_in_its_section() {
    let doc = doc();
    let memory = chapter(&doc, "Memory tools");
    let tools = memory_protocol::tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
    assert_eq!(names, memory_protocol::TOOL_NAMES);
    for tool in &tools {
        let name = tool.name;
        assert!(
            memory.contains(&format!("\n### `{name}`\n")),
            "docs/protocol.md: `{name}` has no section under \"## Memory tools\""
        );
        assert!(
            memory.contains(&format!("\n| `{name}` | `")),
            "docs/protocol.md: `{name}` is missing from the table of tools and `facts mem` \
             subcommands"
        );
        let section = section(&doc, name);
        for field in properties(&tool.input_schema) {
            row(section, &field);
        }
        for field in properties(&tool.output_schema) {
            if field == "ok" || field == "error" {
                continue;
            }
            assert!(
                section.contains(&format!("| `{field}` |")),
                "docs/protocol.md: `{name}` does not document response field `{field}` in \
                 its response table"
            );
        }
        for (hint, says) in [
            (tool.read_only, "Read-only."),
            (tool.destructive, "Destructive."),
        ] {
            assert_eq!(
                section.contains(says),
                hint,
                "docs/protocol.md: `{name}` should say {says:?} exactly when it is so"
            );
        }
    }
    // The defaults the tables give are the code's.
    let limit = format!("| no | {} |", memory_protocol::DEFAULT_LIMIT);
    let tokens = format!("| no | {} |", memory_protocol::DEFAULT_MAX_TOKENS);
    let timeout = format!("| no | {} |", memory_protocol::DEFAULT_TIMEOUT_SECS);
    for (tool, field, default) in [
        ("memory_search", "limit", &limit),
        ("memory_recall", "limit", &limit),
        ("memory_recall", "max_tokens", &tokens),
        ("memory_format", "max_tokens", &tokens),
        ("memory_archive", "timeout_secs", &timeout),
        ("memory_backfill", "timeout_secs", &timeout),
    ] {
        let line = row(section(&doc, tool), field);
        assert!(
            line.contains(default.as_str()),
            "`{tool}` `{field}`: {line}"
        );
    }
    let bytes = memory_protocol::MAX_TRANSCRIPT_BYTES;
    let bytes = format!(
        "{},{:03},{:03}",
        bytes / 1_000_000,
        bytes / 1_000 % 1_000,
        bytes % 1_000
    );
    assert!(
        row(section(&doc, "memory_archive"), "transcript").contains(&bytes),
        "the transcript limit is {bytes} bytes"
    );
}

#[test]
fn every_memory_error_code_is_in_the_memory_table_and_only_those() {
    let doc = doc();
    let memory = chapter(&doc, "Memory tools");
    let heading = "\n### Memory error codes\n";
    let table = &memory[memory
        .find(heading)
        .expect("a \"### Memory error codes\" section")..];
    for code in memory_protocol::ERROR_CODES {
        assert!(
            table.contains(&format!("\n| `{code}` |")),
            "docs/protocol.md: memory error code `{code}` is missing from its table"
        );
    }
    assert!(memory_protocol::ERROR_CODES.contains(&memory_protocol::LLM_CMD_NOT_ALLOWED));
    // No row for a code the tools no longer answer.
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let code = line
            .trim_start_matches("| `")
            .split('`')
            .next()
            .unwrap_or_default();
        assert!(
            memory_protocol::ERROR_CODES.contains(&code),
            "docs/protocol.md: the memory error table lists `{code}`, which is not in \
             memory_protocol::ERROR_CODES"
        );
    }
    // Every code a tool's section names is one of them, or the store's or the model's.
    let others = [
        "io",
        "busy",
        "corrupt",
        "newer_schema",
        "backend",
        "invalid_embedding",
        "missing",
        "load",
        "inference",
        "no_vectors",
    ];
    for tool in memory_protocol::tools() {
        let section = section(&doc, tool.name);
        let Some(errors) = section.split("\nErrors: ").nth(1) else {
            continue;
        };
        // Beside codes, the line may name tools and the tool's own fields.
        let fields = properties(&tool.input_schema);
        for code in errors.split('`').skip(1).step_by(2) {
            if memory_protocol::TOOL_NAMES.contains(&code) || fields.iter().any(|f| f == code) {
                continue;
            }
            assert!(
                memory_protocol::ERROR_CODES.contains(&code) || others.contains(&code),
                "docs/protocol.md: `{}` names an error code `{code}` no tool answers",
                tool.name
            );
        }
    }
}

/// The fenced block after `<!-- example: NAME -->`.
fn example<'d>(doc: &'d str, name: &str) -> &'d str {
    let marker = format!("<!-- example: {name} -->\n");
    let start = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("the document has no {marker:?}"));
    let fence = &doc[start + marker.len()..];
    let body_start = fence.find('\n').expect("a fence line") + 1;
    let body = &fence[body_start..];
    let end = body.find("\n```").expect("a closing fence");
    &body[..end + 1]
}

/// Whether `actual` is what the document shows: equal values, except that a documented
/// string ending in `…` stands for any string that starts with what comes before it.
fn matches(documented: &Value, actual: &Value) -> bool {
    match (documented, actual) {
        (Value::String(d), Value::String(a)) => match d.strip_suffix('…') {
            Some(prefix) => a.starts_with(prefix),
            None => d == a,
        },
        (Value::Array(d), Value::Array(a)) => {
            d.len() == a.len() && d.iter().zip(a).all(|(d, a)| matches(d, a))
        }
        (Value::Object(d), Value::Object(a)) => {
            d.len() == a.len()
                && d.iter()
                    .all(|(key, d)| a.get(key).is_some_and(|a| matches(d, a)))
        }
        _ => documented == actual,
    }
}

#[test]
fn the_example_session_replays_through_the_binary_as_documented() {
    let doc = doc();
    let tasks = example(&doc, "tasks.md");
    let requests = example(&doc, "requests");
    let responses: Vec<Value> = example(&doc, "responses")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let dir = tempfile::TempDir::new().unwrap();
    let spec = dir.path().join("project/.spec-context/specs/demo");
    std::fs::create_dir_all(&spec).unwrap();
    std::fs::write(spec.join("tasks.md"), tasks).unwrap();
    let (stdout, code) = facts(
        dir.path(),
        &["replay", "--deterministic", "--project", "project", "-"],
        requests,
    );
    let actual: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        actual.len(),
        responses.len(),
        "one response per request:\n{stdout}"
    );
    for (number, (documented, actual)) in responses.iter().zip(&actual).enumerate() {
        assert!(
            matches(documented, actual),
            "docs/protocol.md example response {} drifted;\n documented: {documented}\n actual:     {actual}",
            number + 1
        );
    }
    // The session shows a failure too, so the exit code is the documented 1.
    assert_eq!(code, Some(1), "{stdout}");
}

/// Runs the binary in `dir` with `args`, `stdin` as its input; its stdout and exit code.
fn facts(dir: &std::path::Path, args: &[&str], stdin: &str) -> (String, Option<i32>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_facts"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        output.status.code(),
    )
}

#[test]
fn the_spec_format_example_gives_what_the_document_shows() {
    let doc = read_doc("spec-format.md");
    let dir = tempfile::TempDir::new().unwrap();
    let project = dir.path().join("demo");
    let spec = project.join(".spec-context/specs/demo");
    std::fs::create_dir_all(&spec).unwrap();
    for file in ["tasks.md", "requirements.md", "design.md"] {
        std::fs::write(spec.join(file), example(&doc, file)).unwrap();
    }

    // The ledger table, run from the project folder as the document says.
    let shown = example(&doc, "ledger");
    let (command, table) = shown.split_once('\n').unwrap();
    let args: Vec<&str> = command
        .strip_prefix("$ facts ")
        .expect("the block starts with the command")
        .split(' ')
        .collect();
    let (stdout, code) = facts(&project, &args, "");
    assert_eq!((stdout.as_str(), code), (table, Some(0)));

    // The task prompt and the facts of both results, through the protocol.
    let request = |fields: Value| fields.to_string() + "\n";
    let script: String = [
        request(serde_json::json!({"action": "init_run", "spec_name": "demo", "task_id": "2"})),
        request(
            serde_json::json!({"action": "compile_prompt", "run_id": "demo:2",
            "role": "implementer", "task_id": "2"}),
        ),
        request(
            serde_json::json!({"action": "ingest_output", "run_id": "demo:2",
            "role": "implementer", "task_id": "2",
            "output": example(&doc, "implementer output")}),
        ),
        request(
            serde_json::json!({"action": "ingest_output", "run_id": "demo:2",
            "role": "reviewer", "task_id": "2", "output": example(&doc, "reviewer output")}),
        ),
    ]
    .concat();
    let (stdout, code) = facts(&project, &["replay", "--deterministic", "-"], &script);
    assert_eq!(code, Some(0), "{stdout}");
    let answers: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let prompt = answers[1]["prompt"].as_str().unwrap();
    assert!(
        prompt
            .trim_end()
            .ends_with(example(&doc, "task prompt").trim_end()),
        "docs/spec-format.md: the task prompt drifted; the prompt is:\n{prompt}"
    );
    for (answer, block) in [
        (&answers[2], "implementer facts"),
        (&answers[3], "reviewer facts"),
    ] {
        let facts: Vec<&str> = answer["facts_extracted"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let documented: Vec<&str> = example(&doc, block).lines().collect();
        assert_eq!(facts, documented, "docs/spec-format.md: {block} drifted");
    }
}

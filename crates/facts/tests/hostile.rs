//! Hostile input through the real `facts` binary (issue 15): bytes that are not UTF-8 and
//! NUL bytes in every file and stream the commands read, an empty and a 50 MB agent output,
//! a 10 MB MCP frame, JSON nested 100,000 deep, a client that goes away mid-request, and a
//! database that is read-only, on a full disk or locked by another process.
//!
//! Every case must end in a clear error (a non-zero exit with a message on stderr, a failed
//! request, a JSON-RPC or tool error), never a panic (no `panicked at`, no exit code 101)
//! and never a hang: every child runs under [`LIMIT`] and one still running then is killed
//! and fails the test. What was accepted before the hostile input must still be there after
//! it. `docs/robustness.md` ("Hostile input") lists the cases and what the user sees.
//!
//! The full disk and the read-only file system need a tmpfs mount, which needs root: without
//! it those checks print why they were skipped, and fail under `CI=true`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_facts");

/// How long any child may run before it counts as hung (a guard, not a measurement: every
/// case here finishes in seconds, the locked database after its 5 s busy timeout).
const LIMIT: Duration = Duration::from_secs(120);

/// The demo spec's tasks.md (task 1 done, task 2 pending).
const TASKS_MD: &str = "# Tasks: Demo\n\n- [x] 1. Parse tasks.md\n- [ ] 2. Extend the parser\n";

/// What a finished child left.
struct Finished {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Finished {
    /// Asserts the child neither panicked nor was killed by a signal, and exited `code`.
    fn exited(&self, code: i32) -> &Finished {
        assert!(
            !self.stderr.contains("panicked at"),
            "a panic: {}",
            self.stderr
        );
        assert_eq!(
            self.code,
            Some(code),
            "exit code; stderr: {}\nstdout: {}",
            self.stderr,
            String::from_utf8_lossy(&self.stdout[..self.stdout.len().min(2000)])
        );
        self
    }

    /// Asserts stderr contains `needle`.
    fn says(&self, needle: &str) -> &Finished {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {}",
            self.stderr
        );
        self
    }

    /// Stdout as JSON lines.
    fn lines(&self) -> Vec<Value> {
        String::from_utf8(self.stdout.clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Stdout as one JSON document.
    fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap()
    }

    fn stdout(&self) -> String {
        String::from_utf8(self.stdout.clone()).unwrap()
    }
}

/// Reads a pipe to its end on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Waits for `child` at most [`LIMIT`]; kills it and fails the test when it is still running.
fn wait_limited(child: &mut Child, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {LIMIT:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `facts ARGS…` in `dir` with `input` on stdin (closed after it), under [`LIMIT`].
fn facts<S: AsRef<OsStr>>(dir: &Path, args: &[S], input: &[u8]) -> Finished {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("FACTMEM_DB")
        .env_remove("FACTMEM_DATABASE_URL")
        .env_remove("FACTMEM_EMBEDDER");
    run(command, input)
}

fn run(mut command: Command, input: &[u8]) -> Finished {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A command that stops early may not read all of its input: a broken pipe is fine.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let status = wait_limited(&mut child, &format!("{command:?}"));
    writer.join().unwrap();
    Finished {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
    }
}

/// A project with the demo spec, and room for a database and files.
struct Project {
    dir: TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = TempDir::new().unwrap();
        let project = Project { dir };
        project.write_spec("tasks.md", TASKS_MD.as_bytes());
        project
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a file of the demo spec folder.
    fn write_spec(&self, name: &str, bytes: &[u8]) {
        let spec = self.dir.path().join(".spec-context/specs/demo");
        std::fs::create_dir_all(&spec).unwrap();
        std::fs::write(spec.join(name), bytes).unwrap();
    }

    /// `facts replay - --project ROOT` with `script` on stdin.
    fn replay(&self, script: &[u8]) -> Finished {
        let root = self.root().to_str().unwrap();
        facts(self.root(), &["replay", "-", "--project", root], script)
    }

    /// `facts mem --db DB ARGS…` with `input` on stdin.
    fn mem(&self, db: &Path, args: &[&str], input: &[u8]) -> Finished {
        let mut all: Vec<&OsStr> = vec!["mem".as_ref(), "--db".as_ref(), db.as_os_str()];
        all.extend(args.iter().map(OsStr::new));
        facts(self.root(), &all, input)
    }

    /// `facts mem --db DB add SUBJECT RELATION OBJECT`, which must succeed.
    fn mem_add(&self, db: &Path, subject: &str, relation: &str, object: &str) {
        let args = ["add", "--subject", subject, "--relation", relation];
        self.mem(db, &[&args[..], &["--object", object]].concat(), b"")
            .exited(0);
    }

    /// `facts mcp --project ROOT [--db DB]`, initialized.
    fn mcp(&self, db: Option<&Path>) -> Mcp {
        let mut command = Command::new(BIN);
        command
            .args(["mcp", "--project"])
            .arg(self.root())
            .current_dir(self.root())
            .env_remove("RUST_LOG")
            .env_remove("FACTMEM_DATABASE_URL")
            .env_remove("FACTMEM_EMBEDDER");
        if let Some(db) = db {
            command.arg("--db").arg(db);
        }
        Mcp::start(command)
    }
}

/// An agent's raw output: `prose`, then one marked result block for task `task` that
/// changed `file`.
fn output(prose: &str, task: &str, file: &str) -> String {
    let result = json!({"task_id": task, "status": "completed",
                        "summary": format!("Changed {file}"), "files_changed": [file]});
    format!("{prose}\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

/// One replay request line.
fn line(request: &Value) -> Vec<u8> {
    format!("{request}\n").into_bytes()
}

fn init_run(task: &str) -> Value {
    json!({"action": "init_run", "spec_name": "demo", "task_id": task})
}

fn ingest(task: &str, output: &str) -> Value {
    json!({"action": "ingest_output", "run_id": format!("demo:{task}"), "role": "implementer",
           "task_id": task, "output": output})
}

fn history(subject: &str) -> Value {
    json!({"action": "fact_history", "spec_name": "demo", "subject": subject})
}

/// The objects of the facts of a `fact_history` answer.
fn subjects_known(answer: &Value) -> usize {
    answer["facts"].as_array().map_or(0, Vec::len)
}

/// `[[[…]]]`, `depth` deep.
fn nested(depth: usize) -> String {
    let mut text = "[".repeat(depth);
    text.push_str(&"]".repeat(depth));
    text
}

// ---------------------------------------------------------------------------------------
// An MCP client that never waits longer than LIMIT.

/// A `facts mcp` child over stdio; its stdout lines arrive on a channel, so every read has
/// a deadline, and its stderr is collected.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: JoinHandle<Vec<u8>>,
    next_id: u64,
}

impl Mcp {
    fn start(mut command: Command) -> Mcp {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = drain(child.stderr.take().unwrap());
        let mut mcp = Mcp {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            next_id: 0,
        };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "facts", "{init}");
        mcp.raw(b"{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}\n");
        mcp
    }

    /// Writes bytes as they are.
    fn raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next message with `id`, within [`LIMIT`].
    fn answer(&mut self, id: &Value) -> Value {
        self.next_where(
            |message| message["id"] == *id,
            &format!("an answer to {id}"),
        )
    }

    /// The next JSON-RPC parse error (`-32700`), within [`LIMIT`].
    fn parse_error(&mut self) -> Value {
        let error = self.next_where(|m| m["error"]["code"] == -32700, "a parse error");
        assert_eq!(error["jsonrpc"], "2.0", "{error}");
        error
    }

    fn next_where(&mut self, wanted: impl Fn(&Value) -> bool, what: &str) -> Value {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let message: Value = serde_json::from_str(&line).unwrap();
                    if wanted(&message) {
                        return message;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no {what} within {LIMIT:?}"),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the server closed stdout before {what}")
                }
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.raw(format!("{message}\n").as_bytes());
        self.answer(&json!(id))
    }

    /// Calls a tool; its result (`structuredContent`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(answer["error"].is_null(), "{tool}: {answer}");
        answer["result"].clone()
    }

    /// Calls a tool that must succeed; its structured content.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// Closes stdin (if still open) and waits for the server to exit, within [`LIMIT`].
    fn close(mut self) -> Finished {
        drop(self.stdin.take());
        let status = wait_limited(&mut self.child, "facts mcp");
        let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(Vec::new));
        Finished {
            code: status.code(),
            stdout: Vec::new(),
            stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// Invalid UTF-8 and NUL bytes

/// A replay script, through stdin and as a file: a line that is not UTF-8, a line with a
/// raw NUL byte and one with an escaped NUL each get a failed request naming the line; the
/// facts ingested before them are still there after them.
#[test]
fn replay_answers_lines_with_invalid_utf8_or_nul_bytes_and_keeps_what_came_before() {
    let project = Project::new();
    let mut script = Vec::new();
    script.extend(line(&init_run("1")));
    script.extend(line(&ingest("1", &output("Done.", "1", "src/parser.rs"))));
    script.extend(b"{\"action\": \"get_telemetry\", \"id\": \"\xff\xfe\"}\n");
    script.extend(b"{\"action\": \"get_telemetry\"}\0\n");
    script.extend(b"\0\0\0\n");
    // An escaped NUL is a valid JSON string: an unknown action names it, escaped.
    script.extend(b"{\"action\": \"tele\\u0000port\"}\n");
    script.extend(line(&history("src/parser.rs")));
    let file = project.path("script.jsonl");
    std::fs::write(&file, &script).unwrap();

    let from_stdin = project.replay(&script);
    let root = project.root().to_str().unwrap();
    let from_file = facts(
        project.root(),
        &["replay", file.to_str().unwrap(), "--project", root],
        b"",
    );
    for finished in [from_stdin, from_file] {
        finished
            .exited(1)
            .says("4 of 7 requests failed (line 3, 4, 5, 6)");
        let answers = finished.lines();
        assert_eq!(answers.len(), 7);
        assert_eq!(answers[1]["ok"], true, "{}", answers[1]);
        let message = |n: usize| answers[n]["error"]["message"].as_str().unwrap().to_owned();
        assert_eq!(answers[2]["error"]["code"], "invalid_json");
        assert!(message(2).starts_with("not UTF-8"), "{}", message(2));
        assert_eq!(answers[2]["error"]["line"], 3);
        assert_eq!(answers[3]["error"]["code"], "invalid_json");
        assert!(message(3).contains("trailing characters"), "{}", message(3));
        assert_eq!(answers[4]["error"]["code"], "invalid_json");
        assert_eq!(
            answers[5]["error"]["code"], "unknown_action",
            "{}",
            answers[5]
        );
        assert!(message(5).contains(r"tele\0port"), "{}", message(5));
        assert!(subjects_known(&answers[6]) > 0, "{}", answers[6]);
    }
}

/// tasks.md that is not UTF-8: `facts ledger` exits 2 naming the byte offset, `init_run`
/// (replay and MCP) fails with `progress_ledger_invalid` naming it too, and the facts a
/// server ingested before are still served.
#[test]
fn a_tasks_md_that_is_not_utf8_is_a_clear_error_everywhere() {
    let project = Project::new();
    let tasks = project.path(".spec-context/specs/demo/tasks.md");
    let mut mcp = project.mcp(None);
    mcp.ok("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    mcp.ok(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": output("Done.", "1", "src/parser.rs")}),
    );

    let mut bad = TASKS_MD.as_bytes().to_vec();
    bad.extend(b"- [ ] 3. Caf\xe9 au lait\n");
    project.write_spec("tasks.md", &bad);

    let ledger = facts(
        project.root(),
        &[OsStr::new("ledger"), tasks.as_os_str()],
        b"",
    );
    ledger
        .exited(2)
        .says("tasks.md is not UTF-8 (first invalid byte at offset 78)");
    let json = facts(
        project.root(),
        &[
            OsStr::new("ledger"),
            tasks.as_os_str(),
            OsStr::new("--json"),
        ],
        b"",
    );
    json.exited(2);
    assert_eq!(
        json.json()["error"]["code"],
        "not_utf8",
        "{}",
        json.stdout()
    );

    let not_utf8 = |error: &Value| {
        assert_eq!(error["code"], "progress_ledger_invalid", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("tasks.md is not UTF-8 (first invalid byte at offset 78)"),
            "{message}"
        );
    };
    let replay = project.replay(&line(&init_run("2")));
    replay.exited(1).says("1 of 1 requests failed (line 1)");
    not_utf8(&replay.lines()[0]["error"]);

    let init = mcp.call("init_run", json!({"spec_name": "demo", "task_id": "2"}));
    assert_eq!(init["isError"], true, "{init}");
    not_utf8(&init["structuredContent"]["error"]);
    let history = mcp.ok(
        "fact_history",
        json!({"spec_name": "demo", "subject": "src/parser.rs"}),
    );
    assert!(subjects_known(&history) > 0, "{history}");
    mcp.close().exited(0);
}

/// NUL bytes in a tasks.md are text like any other: the ledger shows the tasks, and a run
/// starts.
#[test]
fn nul_bytes_in_a_tasks_md_are_kept_as_text() {
    let project = Project::new();
    project.write_spec(
        "tasks.md",
        b"# Tasks\n\n- [x] 1. Parse\0tasks\n- [ ] 2. Extend\0\0 the parser\n",
    );
    let tasks = project.path(".spec-context/specs/demo/tasks.md");
    let ledger = facts(
        project.root(),
        &[
            OsStr::new("ledger"),
            tasks.as_os_str(),
            OsStr::new("--json"),
        ],
        b"",
    );
    ledger.exited(0);
    let ledger = ledger.json();
    assert_eq!(ledger["tasks"][0]["title"], "Parse\0tasks", "{ledger}");
    assert_eq!(ledger["active_task_id"], "2", "{ledger}");

    let replay = project.replay(&line(&init_run("2")));
    replay.exited(0);
}

/// requirements.md that is not UTF-8 does not stop a run: `init_run` warns that it cannot
/// be read, and the prompt goes without its criteria (`fallback_reason` names
/// `requirements_not_found`).
#[test]
fn a_requirements_md_that_is_not_utf8_does_not_stop_a_run() {
    let project = Project::new();
    project.write_spec(
        "tasks.md",
        b"# Tasks\n\n- [ ] 1. Parse\n  - _Requirements: 1.1_\n",
    );
    project.write_spec(
        "requirements.md",
        b"# Requirements\n\n### Requirement 1\n\n1. WHEN a line \xff is read THEN it parses\n",
    );
    let mut script = line(&init_run("1"));
    script.extend(line(
        &json!({"action": "compile_prompt", "run_id": "demo:1",
                               "role": "implementer", "task_id": "1"}),
    ));
    let replay = project.replay(&script);
    replay.exited(0);
    let answers = replay.lines();
    let warnings = answers[0]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{}", answers[0]);
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.starts_with("requirements.md cannot be read (") && warning.contains("UTF-8"),
        "{warning}"
    );
    let compiled = &answers[1];
    assert_eq!(compiled["ok"], true, "{compiled}");
    let reasons = compiled["fallback_reason"].as_str().unwrap();
    assert!(reasons.contains("requirements_not_found"), "{compiled}");
}

/// `facts mem archive`: a transcript on stdin that is not UTF-8 exits 2 naming the byte; one
/// with a raw NUL byte in a JSON string is an invalid transcript; neither loses the facts
/// stored before.
#[test]
fn mem_archive_of_a_transcript_with_invalid_utf8_or_nul_bytes_is_a_usage_error() {
    let project = Project::new();
    let db = project.path("memory.db");
    project.mem_add(&db, "user", "likes", "tea");

    let not_utf8 = project.mem(
        &db,
        &["archive", "--transcript", "-"],
        b"{\"role\": \"user\", \"content\": \"caf\xe9\"}\n",
    );
    not_utf8
        .exited(2)
        .says("facts: transcript stdin is not UTF-8 (invalid byte at offset 32)");

    let nul = project.mem(
        &db,
        &["archive", "--transcript", "-"],
        b"{\"role\": \"user\", \"content\": \"a\0b\"}\n",
    );
    nul.exited(2).says(
        "facts: the transcript holds no message (1 line(s) not read, the first: line 1: \
         control character (\\u0000-\\u001F) found while parsing a string at line 1 column 31)",
    );

    let nul_file = project.path("nul.jsonl");
    std::fs::write(&nul_file, b"\0\0\0\0").unwrap();
    project
        .mem(
            &db,
            &["archive", "--transcript", nul_file.to_str().unwrap()],
            b"",
        )
        .exited(2)
        .says("facts: the transcript holds no message (1 line(s) not read, the first: line 1: expected value");

    let list = project.mem(&db, &["list"], b"");
    list.exited(0);
    assert!(list.stdout().contains("tea"), "{}", list.stdout());
}

/// `facts mem archive --llm-cmd`: a model that answers bytes that are not UTF-8 is an LLM
/// error (exit 1) that says the episode is archived; one whose JSON holds a raw NUL byte is
/// archived without facts and a note saying why; the facts stored before stay.
#[test]
fn a_model_command_that_answers_invalid_utf8_or_nul_is_an_llm_error() {
    let project = Project::new();
    let db = project.path("memory.db");
    project.mem_add(&db, "user", "likes", "tea");
    let transcript = project.path("chat.jsonl");
    std::fs::write(
        &transcript,
        "{\"role\": \"user\", \"content\": \"Use pytest.\"}\n",
    )
    .unwrap();
    let archive = |reply: &[u8]| {
        let reply_file = project.path("reply");
        std::fs::write(&reply_file, reply).unwrap();
        let cmd = format!("cat > /dev/null; cat '{}'", reply_file.display());
        let transcript = transcript.to_str().unwrap();
        project.mem(
            &db,
            &["archive", "--transcript", transcript, "--llm-cmd", &cmd],
            b"",
        )
    };
    archive(b"{\"facts\": [], \"title\": \"caf\xe9\"}")
        .exited(1)
        .says("facts: LLM error (extraction_failed): episode ep_")
        .says("is archived, but extracting its facts failed: chunk 1 of 1: invalid reply: the command's output is not UTF-8");
    let nul = archive(b"{\"title\": \"t\", \"summary\": \"s\", \"facts\": [{\"subject\": \"us\0er\", \"predicate\": \"likes\", \"object\": \"tea\"}]}");
    nul.exited(0);
    let text = nul.stdout();
    assert!(
        text.contains("archived ep_") && text.contains("facts: none"),
        "{text}"
    );
    assert!(
        text.contains("note: llm.reply: the reply's JSON does not parse: control character"),
        "{text}"
    );
    let list = project.mem(&db, &["list"], b"");
    list.exited(0);
    assert!(list.stdout().contains("tea"), "{}", list.stdout());
}

/// MCP frames: one that is not UTF-8 gets the JSON-RPC parse error under its own id, one
/// with a raw NUL byte (or only NULs) the parse error under `id: null`, each logged on
/// stderr; the server answers the next request with the run it had.
#[test]
fn mcp_frames_with_invalid_utf8_or_nul_bytes_do_not_stop_the_server() {
    let project = Project::new();
    let mut mcp = project.mcp(None);
    mcp.ok("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    mcp.ok(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": output("Done.", "1", "src/parser.rs")}),
    );
    mcp.raw(b"{\"jsonrpc\": \"2.0\", \"id\": 900, \"method\": \"tools/list\", \"params\": {\"x\": \"\xff\"}}\n");
    let error = mcp.parse_error();
    assert_eq!(error["id"], 900, "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Parse error: the frame is not UTF-8: invalid utf-8 sequence"),
        "{message}"
    );
    mcp.raw(b"{\"jsonrpc\": \"2.0\", \"id\": 901, \"method\": \"tools/list\"}\0\n");
    let error = mcp.parse_error();
    assert_eq!(error["id"], Value::Null, "{error}");
    assert_eq!(
        error["error"]["message"],
        "Parse error: trailing characters at line 1 column 54"
    );
    mcp.raw(b"\0\0\0\n");
    assert_eq!(mcp.parse_error()["id"], Value::Null);
    let history = mcp.ok(
        "fact_history",
        json!({"spec_name": "demo", "subject": "src/parser.rs"}),
    );
    assert!(subjects_known(&history) > 0, "{history}");
    // An escaped NUL inside a tool's argument is data: stored and answered as it was sent.
    let init = mcp.call(
        "init_run",
        json!({"spec_name": "de\u{0}mo", "task_id": "1"}),
    );
    assert_eq!(init["isError"], true, "{init}");
    let stderr = mcp.close();
    stderr
        .exited(0)
        .says("line 5 answered with a parse error: Parse error: the frame is not UTF-8");
}

/// A NUL byte inside a memory fact, over MCP on SQLite: stored and read back byte for byte.
#[test]
fn an_escaped_nul_in_a_memory_fact_round_trips_through_sqlite() {
    let project = Project::new();
    let db = project.path("memory.db");
    let mut mcp = project.mcp(Some(&db));
    let added = mcp.ok(
        "memory_add",
        json!({"subject": "user", "relation": "likes", "object": "te\u{0}a"}),
    );
    assert_eq!(added["status"], "added", "{added}");
    let found = mcp.ok("memory_history", json!({"subject": "user"}));
    assert!(found.to_string().contains("te\\u0000a"), "{found}");
    mcp.close().exited(0);
    let list = project.mem(&db, &["list", "--json"], b"");
    list.exited(0);
    assert_eq!(list.json()["facts"][0]["object"], "te\u{0}a");
}

// ---------------------------------------------------------------------------------------
// Size and depth

/// An empty output is `marker_missing`; a 50 MB output is answered (with the limit on a
/// line raised past it; under the default 16 MiB it is `line_too_long`); the run goes on.
#[test]
fn replay_answers_an_empty_and_a_50_mb_output_and_goes_on() {
    let project = Project::new();
    let mut prose = "The implementer wrote a great deal. ".repeat(50 * 1024 * 1024 / 36);
    prose.push('\n');
    let big = output(&prose, "1", "src/big.rs");
    assert!(big.len() >= 50 * 1024 * 1024);
    let mut script = Vec::new();
    script.extend(line(&init_run("1")));
    script.extend(line(&ingest("1", "")));
    script.extend(line(&ingest("1", &big)));
    script.extend(line(&history("src/big.rs")));
    let refused = project.replay(&script);
    refused.exited(1).says("2 of 4 requests failed (line 2, 3)");
    assert_eq!(refused.lines()[2]["error"]["code"], "line_too_long");
    let root = project.root().to_str().unwrap();
    let replay = facts(
        project.root(),
        &[
            "replay",
            "-",
            "--project",
            root,
            "--max-request-bytes",
            "64MiB",
        ],
        &script,
    );
    replay.exited(1).says("1 of 4 requests failed (line 2)");
    let answers = replay.lines();
    assert_eq!(
        answers[1]["error"]["code"], "marker_missing",
        "{}",
        answers[1]
    );
    assert_eq!(answers[1]["next_action"], "halt_schema_invalid_terminal");
    assert_eq!(answers[2]["ok"], true, "{}", answers[2]);
    assert!(subjects_known(&answers[3]) > 0, "{}", answers[3]);
}

/// JSON nested 100,000 deep: as a replay line, and as the result block inside an output.
#[test]
fn replay_answers_json_nested_100000_deep_with_an_error() {
    let project = Project::new();
    let deep = nested(100_000);
    let mut script = Vec::new();
    script.extend(line(&init_run("1")));
    script.extend(format!("{{\"action\": \"get_telemetry\", \"x\": {deep}}}\n").into_bytes());
    let block = format!("Done.\nBEGIN_DISPATCH_RESULT\n{deep}\nEND_DISPATCH_RESULT\n");
    script.extend(line(&ingest("1", &block)));
    script.extend(line(&ingest("1", &output("Done.", "1", "src/parser.rs"))));
    let replay = project.replay(&script);
    replay.exited(1).says("2 of 4 requests failed (line 2, 3)");
    let answers = replay.lines();
    assert_eq!(
        answers[1]["error"]["code"], "invalid_json",
        "{}",
        answers[1]
    );
    assert!(
        answers[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("recursion limit exceeded"),
        "{}",
        answers[1]
    );
    assert_eq!(
        answers[2]["error"]["code"], "json_parse_failed",
        "{}",
        answers[2]
    );
    assert_eq!(
        answers[2]["error"]["message"],
        "the dispatch result is not valid JSON: recursion limit exceeded at line 1 column 128"
    );
    assert_eq!(answers[3]["ok"], true, "{}", answers[3]);
}

/// A 10 MB MCP request (one frame) is answered, and so is the next.
#[test]
fn mcp_answers_a_10_mb_request_and_the_next() {
    let project = Project::new();
    let mut mcp = project.mcp(None);
    mcp.ok("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    let prose = "x".repeat(10 * 1024 * 1024);
    let ingested = mcp.ok(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1",
               "output": output(&prose, "1", "src/big.rs")}),
    );
    assert_eq!(ingested["ok"], true, "{ingested}");
    let history = mcp.ok(
        "fact_history",
        json!({"spec_name": "demo", "subject": "src/big.rs"}),
    );
    assert!(subjects_known(&history) > 0, "{history}");
    mcp.close().exited(0);
}

/// A frame nested 100,000 deep gets the JSON-RPC parse error (`recursion limit exceeded`);
/// the same depth inside an agent's output is a tool error; the server goes on.
#[test]
fn mcp_survives_json_nested_100000_deep() {
    let project = Project::new();
    let mut mcp = project.mcp(None);
    mcp.ok("init_run", json!({"spec_name": "demo", "task_id": "1"}));
    let deep = nested(100_000);
    mcp.raw(
        format!(
            "{{\"jsonrpc\": \"2.0\", \"id\": 900, \"method\": \"tools/call\", \"params\": \
             {{\"name\": \"get_telemetry\", \"arguments\": {{\"x\": {deep}}}}}}}\n"
        )
        .as_bytes(),
    );
    let error = mcp.parse_error();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("recursion limit exceeded"), "{message}");
    // Inside a string the depth is only text, until the contract parser reads it.
    let block = format!("Done.\nBEGIN_DISPATCH_RESULT\n{deep}\nEND_DISPATCH_RESULT\n");
    let ingested = mcp.call(
        "ingest_output",
        json!({"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": block}),
    );
    assert_eq!(ingested["isError"], true, "{ingested}");
    let telemetry = mcp.ok("get_telemetry", json!({}));
    assert_eq!(telemetry["ok"], true);
    mcp.close().exited(0);
}

// ---------------------------------------------------------------------------------------
// Clients that go away

/// A client that closes stdin in the middle of a frame: the server exits 0, and the fact it
/// stored before is in the database.
#[test]
fn a_client_that_disconnects_mid_frame_leaves_the_server_exiting_cleanly() {
    let project = Project::new();
    let db = project.path("memory.db");
    let mut mcp = project.mcp(Some(&db));
    mcp.ok(
        "memory_add",
        json!({"subject": "user", "relation": "likes", "object": "tea"}),
    );
    mcp.raw(b"{\"jsonrpc\": \"2.0\", \"id\": 77, \"method\": \"tools/call\", \"params\": {\"name\": \"memory_add\", \"argu");
    mcp.close()
        .exited(0)
        .says("the client closed its input in the middle of a frame (line 4, 91 bytes): dropped");
    let list = project.mem(&db, &["list"], b"");
    list.exited(0);
    assert!(list.stdout().contains("tea"), "{}", list.stdout());
}

/// A client that sends a request and disconnects before its answer: the server carries
/// the request out (its fact is stored) and exits 0.
#[test]
fn a_client_that_disconnects_before_its_answer_still_has_the_request_carried_out() {
    let project = Project::new();
    let db = project.path("memory.db");
    let mut mcp = project.mcp(Some(&db));
    let add = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params":
        {"name": "memory_add", "arguments": {"subject": "user", "relation": "likes",
                                             "object": "tea"}}});
    mcp.raw(format!("{add}\n").as_bytes());
    mcp.close().exited(0);
    let list = project.mem(&db, &["list"], b"");
    list.exited(0);
    assert!(
        list.stdout().contains("user likes tea"),
        "{}",
        list.stdout()
    );
}

/// A client that stops reading (closes the server's stdout) and then sends a request,
/// keeping its end of stdin open: the server stores the fact, cannot answer, says so and
/// exits 0 without waiting for stdin to close.
#[test]
fn a_client_that_stops_reading_mid_request_leaves_the_database_intact() {
    let project = Project::new();
    let db = project.path("memory.db");
    let mut child = Command::new(BIN)
        .args(["mcp", "--db"])
        .arg(&db)
        .current_dir(project.root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {},
         "clientInfo": {"name": "hostile", "version": "0"}}});
    writeln!(stdin, "{initialize}").unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    assert!(answer.contains("\"serverInfo\""), "{answer}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    drop(stdout);
    let add = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params":
        {"name": "memory_add", "arguments": {"subject": "user", "relation": "likes",
                                             "object": "tea"}}});
    writeln!(stdin, "{add}").unwrap();
    stdin.flush().unwrap();
    // Stdin stays open until the server has exited (or the guard killed it).
    let status = wait_limited(&mut child, "facts mcp with stdout closed and stdin open");
    drop(stdin);
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(!stderr.contains("panicked at"), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("WARN facts::mcp::frames: cannot write to the client: Broken pipe"),
        "{stderr}"
    );
    let list = project.mem(&db, &["list"], b"");
    list.exited(0);
    assert!(list.stdout().contains("tea"), "{}", list.stdout());
}

// ---------------------------------------------------------------------------------------
// Databases that cannot be written

/// A tmpfs mounted for one test (as root, or through `sudo -n`), unmounted when dropped.
struct Tmpfs {
    dir: TempDir,
    /// Whether `mount` needs `sudo -n` (this process is not root).
    sudo: bool,
}

/// The output of `id FLAG` (`-u`, `-g`).
fn id(flag: &str) -> String {
    let output = Command::new("id").arg(flag).output().unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` owned by this user, as root or through `sudo -n`, or says
    /// why it cannot: the test prints the reason and passes, except under `CI=true`, where
    /// it fails.
    fn mount(size: &str, test: &str) -> Option<Tmpfs> {
        let dir = TempDir::new().unwrap();
        let sudo = id("-u") != "0";
        let tmpfs = Tmpfs { dir, sudo };
        let options = format!("size={size},uid={},gid={},mode=0755", id("-u"), id("-g"));
        let mounted = tmpfs
            .command("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(tmpfs.dir.path())
            .stderr(Stdio::piped())
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(tmpfs),
            other => {
                let why = match other {
                    Ok(output) => String::from_utf8_lossy(&output.stderr).into_owned(),
                    Err(e) => e.to_string(),
                };
                let message = format!("{test}: skipped, cannot mount a tmpfs: {}", why.trim());
                assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
                eprintln!("{message}");
                None
            }
        }
    }

    /// `program`, through `sudo -n` when this process is not root.
    fn command(&self, program: &str) -> Command {
        if self.sudo {
            let mut command = Command::new("sudo");
            command.args(["-n", program]);
            command
        } else {
            Command::new(program)
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Remounts with `options` (`ro`, `rw`, `size=…`).
    fn remount(&self, options: &str) {
        let status = self
            .command("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(self.dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "remount {options}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Not mounted (a failed mount): `umount` fails, and that is fine.
        let _ = self
            .command("umount")
            .arg("-l")
            .arg(self.dir.path())
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether this process may write a file whose permissions say it may not (root may).
fn permissions_bind() -> bool {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("probe");
    std::fs::write(&file, b"").unwrap();
    set_mode(&file, 0o444);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .is_err()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `facts mem --db DB ARGS…` as a user the file permissions bind: this process when they
/// bind, else (root) `nobody` through `setpriv`; `None` when neither is possible.
fn bound_by_permissions(dir: &Path, db: &Path) -> Option<impl Fn(&[&str]) -> Finished> {
    let as_nobody = !permissions_bind();
    if as_nobody && Command::new("setpriv").arg("--version").output().is_err() {
        let message = "read-only by permissions: skipped, running as root without setpriv";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        eprintln!("{message}");
        return None;
    }
    let dir = dir.to_path_buf();
    let db = db.to_path_buf();
    Some(move |args: &[&str]| {
        let mut command = if as_nobody {
            let mut command = Command::new("setpriv");
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
            command
        } else {
            Command::new(BIN)
        };
        command
            .arg("mem")
            .arg("--db")
            .arg(&db)
            .args(args)
            .current_dir(&dir)
            .env_remove("RUST_LOG")
            .env_remove("FACTMEM_DATABASE_URL")
            .env_remove("FACTMEM_EMBEDDER");
        run(command, b"")
    })
}

const ADD_TEA: [&str; 7] = [
    "add",
    "--subject",
    "user",
    "--relation",
    "likes",
    "--object",
    "tea",
];
const ADD_COFFEE: [&str; 7] = [
    "add",
    "--subject",
    "user",
    "--relation",
    "drinks",
    "--object",
    "coffee",
];

/// What a read-only database answers: opening it writes (the schema check, WAL mode), so
/// `add` and `list` alike exit 1 with an `io` store error that names the file and says
/// `why`; the file is left as it was (checked by the caller once it is writable again).
fn check_read_only(mem: impl Fn(&[&str]) -> Finished, why: &str) {
    for args in [ADD_COFFEE.as_slice(), &["list"]] {
        mem(args)
            .exited(1)
            .says("facts: store error (io): store I/O failed: ")
            .says(why);
    }
}

/// After a read-only spell: the database holds tea and not coffee.
fn check_intact(project: &Project, db: &Path) {
    let list = project.mem(db, &["list"], b"");
    list.exited(0);
    assert!(list.stdout().contains("tea"), "{}", list.stdout());
    assert!(!list.stdout().contains("coffee"), "{}", list.stdout());
}

/// A read-only database: by permissions (file 0444, folder 0555; as `nobody` when the test
/// runs as root, whom permissions do not bind), and on a read-only file system (a tmpfs
/// remounted `ro`, where the test may mount). `facts mcp --db` on it stops at start.
#[test]
fn a_read_only_database_is_an_io_error_and_is_left_intact() {
    let project = Project::new();
    set_mode(project.root(), 0o755);
    let dir = project.path("ro");
    std::fs::create_dir(&dir).unwrap();
    let db = dir.join("memory.db");
    if let Some(mem) = bound_by_permissions(project.root(), &db) {
        project.mem(&db, &ADD_TEA, b"").exited(0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            set_mode(&entry.unwrap().path(), 0o444);
        }
        set_mode(&dir, 0o555);
        check_read_only(mem, "memory.db: attempt to write a readonly database");
        set_mode(&dir, 0o755);
        set_mode(&db, 0o644);
        check_intact(&project, &db);
    }

    let Some(tmpfs) = Tmpfs::mount("16m", "a_read_only_database (read-only mount)") else {
        return;
    };
    let db = tmpfs.path().join("memory.db");
    project.mem(&db, &ADD_TEA, b"").exited(0);
    tmpfs.remount("ro");
    check_read_only(
        |args| project.mem(&db, args, b""),
        "memory.db: unable to open database file",
    );
    let served = facts(
        project.root(),
        &[OsStr::new("mcp"), OsStr::new("--db"), db.as_os_str()],
        b"",
    );
    served
        .exited(1)
        .says("facts: store error (io): store I/O failed: ")
        .says("memory.db: unable to open database file");
    tmpfs.remount("rw");
    check_intact(&project, &db);
}

/// A full disk (a 1 MiB tmpfs): `memory_add` fails with an `io` tool error saying the disk
/// is full, the server answers the next request, and every fact acknowledged before is in
/// the database once there is room again.
#[test]
fn a_full_disk_is_an_io_error_and_the_facts_stored_before_stay() {
    let Some(tmpfs) = Tmpfs::mount("1m", "a_full_disk") else {
        return;
    };
    let project = Project::new();
    let db = tmpfs.path().join("memory.db");
    let mut mcp = project.mcp(Some(&db));
    let mut stored = Vec::new();
    let mut full = None;
    for n in 0..20_000 {
        let subject = format!("blob:{n}");
        let result = mcp.call(
            "memory_add",
            json!({"subject": subject, "relation": "holds", "object": format!("{n} {}", "o".repeat(180)),
                   "statement": format!("Blob {n} holds {}", "s ".repeat(230))}),
        );
        if result["isError"] == true {
            full = Some(result);
            break;
        }
        stored.push(subject);
    }
    let full = full.expect("a 1 MiB tmpfs never filled up");
    let error = &full["structuredContent"]["error"];
    assert_eq!(error["code"], "io", "{full}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("database or disk is full"), "{message}");
    assert!(!stored.is_empty(), "nothing fitted at all");
    // The server is still there, and reads.
    let history = mcp.ok("memory_history", json!({"subject": "blob:0"}));
    assert!(history.to_string().contains("blob:0"), "{history}");
    mcp.close().exited(0);

    tmpfs.remount("size=64m");
    let list = project.mem(&db, &["list", "--json"], b"");
    list.exited(0);
    let listed: Vec<String> = list.json()["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fact| fact["subject"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, stored, "every acknowledged fact, and nothing else");
}

/// A full disk under `facts mem add` (a 256 KiB tmpfs, one process per fact): exit 1 with
/// an `io` store error saying the disk is full; every fact added before is listed.
#[test]
fn mem_add_on_a_full_disk_exits_1_and_the_facts_added_before_stay() {
    let Some(tmpfs) = Tmpfs::mount("256k", "mem_add_on_a_full_disk") else {
        return;
    };
    let project = Project::new();
    let db = tmpfs.path().join("memory.db");
    let mut stored = Vec::new();
    let mut full = None;
    for n in 0..1_000 {
        let subject = format!("blob:{n}");
        let object = format!("{n} {}", "o".repeat(180));
        let statement = format!("Blob {n} holds {}", "s ".repeat(230));
        let args = [
            "add",
            "--subject",
            &subject,
            "--relation",
            "holds",
            "--object",
            &object,
            "--statement",
            &statement,
        ];
        let added = project.mem(&db, &args, b"");
        if added.code != Some(0) {
            full = Some(added);
            break;
        }
        stored.push(subject);
    }
    let full = full.expect("a 256 KiB tmpfs never filled up");
    full.exited(1)
        .says("facts: store error (io): store I/O failed: ")
        .says("memory.db: database or disk is full");
    tmpfs.remount("size=64m");
    let list = project.mem(&db, &["list", "--json"], b"");
    list.exited(0);
    let listed: Vec<String> = list.json()["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fact| fact["subject"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, stored, "every acknowledged fact, and nothing else");
}

/// Holds `BEGIN EXCLUSIVE` on `db` from another process (python3's sqlite3) until dropped.
struct Locker {
    child: Child,
}

impl Locker {
    fn lock(db: &Path) -> Option<Locker> {
        let script = "import sqlite3, sys\n\
                      c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                      c.execute('BEGIN EXCLUSIVE')\n\
                      print('locked', flush=True)\n\
                      sys.stdin.read()\n\
                      c.execute('COMMIT')\n";
        let spawned = Command::new("python3")
            .args(["-c", script])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = spawned else {
            let message = "the locked database: skipped, python3 is not installed";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
            eprintln!("{message}");
            return None;
        };
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Some(Locker { child })
    }

    fn release(mut self) {
        drop(self.child.stdin.take());
        assert!(wait_limited(&mut self.child, "python3").success());
    }
}

impl Drop for Locker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database another process holds in an exclusive transaction past the busy timeout:
/// `facts mem add` exits 1 with `store error (busy): database is locked`, an MCP server
/// already running answers `memory_add` with a `busy` tool error and goes on; once the lock
/// is released both succeed, and nothing stored before is lost.
#[test]
fn a_database_locked_past_the_busy_timeout_is_busy_then_works_once_released() {
    let project = Project::new();
    let db = project.path("memory.db");
    let add = |object: &str| {
        project.mem(
            &db,
            &[
                "add",
                "--subject",
                "user",
                "--relation",
                "likes",
                "--object",
                object,
            ],
            b"",
        )
    };
    add("tea").exited(0);
    let mut mcp = project.mcp(Some(&db));
    let Some(locker) = Locker::lock(&db) else {
        return;
    };
    add("coffee")
        .exited(1)
        .says("facts: store error (busy): the database is busy (locked by another writer): database is locked");
    let busy = mcp.call(
        "memory_add",
        json!({"subject": "team", "relation": "uses", "object": "rust"}),
    );
    assert_eq!(busy["isError"], true, "{busy}");
    assert_eq!(busy["structuredContent"]["error"]["code"], "busy", "{busy}");
    locker.release();

    add("coffee").exited(0);
    mcp.ok(
        "memory_add",
        json!({"subject": "team", "relation": "uses", "object": "rust"}),
    );
    mcp.close().exited(0);
    let history = project.mem(&db, &["history", "user", "--json"], b"");
    history.exited(0);
    let history = history.json().to_string();
    assert!(
        history.contains("\"tea\"") && history.contains("\"coffee\""),
        "{history}"
    );
    let list = project.mem(&db, &["list"], b"");
    assert!(list.stdout().contains("rust"), "{}", list.stdout());
}

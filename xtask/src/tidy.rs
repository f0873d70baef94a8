//! Tidy tests: repository rules that `cargo test --workspace` enforces.
//!
//! Each rule is a pure function from data (a file's path and text, or the
//! crate graph) to a list of violation messages. Every message names the
//! file or crate, the rule, and how to fix it. For each rule there is one
//! test that applies it to the real workspace and asserts there are no
//! violations, and data-driven tests (in `tidy/tests.rs`) proving the
//! rule does fire.
//!
//! The rules:
//!
//! - **doc-header**: every `.rs` file under `crates/` and `xtask/` begins
//!   with a `//!` doc comment saying what the file is for.
//! - **whitespace**: no trailing whitespace in `.rs`, `.toml` and `.md`
//!   files, and no tab indentation in `.rs` files.
//! - **layering**: crate dependencies point down the layers
//!   `fact-model` < `fact-store`, `fact-extract`, `fact-retrieve`, `ledger`
//!   < `dispatch-runtime` < binaries, and storage splits into `fact-store` (the core)
//!   < `fact-store-sql` (the SQL rules) < `fact-store-sqlite`, `fact-store-postgres`
//!   (the backends), which only `dispatch-runtime` and `xtask` may name; see
//!   [`check_layering`].
//! - **import-circles**: no module of a workspace crate imports in a circle;
//!   see [`imports::check_import_circles`].
//! - **protocol-knowledge**: binaries (`crates/facts/src`) spell no protocol error code and
//!   no task status as a string literal; they ask `dispatch_runtime::protocol` and the
//!   ledger types, so the wire format is decided in one place.
//! - **injected-time**: library code never reads the system clock directly
//!   (`SystemTime::now`, `Instant::now`); it takes a `Clock`, whose only real
//!   implementation lives in `crates/fact-model/src/clock.rs`.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

mod imports;
mod tests;

/// The bottom layer: shared types, depends on no workspace crate.
const MODEL: &str = "fact-model";
/// Middle-layer crates: each may use `fact-model`, but only `dispatch-runtime`
/// may combine several of them.
const SERVICES: &[&str] = &[
    "fact-store",
    "fact-extract",
    "fact-retrieve",
    "factmem-ledger",
];
/// The crate that wires the services together.
const RUNTIME: &str = "dispatch-runtime";
/// The store's core: the traits, values and the in-memory engine. It knows no SQL and no
/// database driver.
const STORE: &str = "fact-store";
/// The SQL rules over a `Driver` trait, written once for every database backend.
const SQL_RULES: &str = "fact-store-sql";
/// The database backends: each implements `fact-store-sql`'s `Driver` for one database.
/// Only [`RUNTIME`] and [`XTASK`] may depend on them (layering rule 6).
const BACKENDS: &[&str] = &["fact-store-sqlite", "fact-store-postgres"];
/// This crate: tooling, never a dependency of product code.
const XTASK: &str = "xtask";
/// The only library file allowed to read the system clock.
const CLOCK_FILE: &str = "crates/fact-model/src/clock.rs";
/// Calls that read the system clock.
const CLOCK_READS: &[&str] = &["SystemTime::now", "Instant::now"];
/// Concrete implementations of the service traits (store, extractor, retriever, token
/// counter), by the crate that defines each. Only that crate and the [`COMPOSERS`] may name
/// them. `fact-model`'s clocks and its `CharsPerToken` estimate are values like `std`'s
/// time types: any crate may name them (a store's `Default` uses the system clock, a
/// retriever's the character estimate), and the injected-time rule keeps the reading of
/// the clock in [`CLOCK_FILE`].
const CONCRETE: &[(&str, &str)] = &[
    ("InMemorySessionFactStore", "fact-store"),
    ("InMemoryEpisodeStore", "fact-store"),
    ("SqliteFactStore", "fact-store-sqlite"),
    ("PgFactStore", "fact-store-postgres"),
    ("PgDatabase", "fact-store-postgres"),
    ("LlmFactExtractor", "fact-extract"),
    ("CommandLlm", "fact-extract"),
    ("OpenAiCompatibleLlm", "fact-extract"),
    ("RuleBasedFactExtractor", "fact-extract"),
    ("IndexRetriever", "fact-retrieve"),
    ("BpeTokenCounter", "fact-retrieve"),
];
/// The crates that choose implementations: the runtime and the binary on top of it.
const COMPOSERS: &[&str] = &[RUNTIME, "facts"];
/// The front ends: the crates users run or import (the `facts` command, the Python
/// package). Each has a library target (for its tests, the fuzz target, the Python
/// extension module), yet like a binary it depends on no workspace crate but
/// `dispatch-runtime` (layering rule 5).
const FRONT_ENDS: &[&str] = &["factmem-cli", "factmem-python"];
/// The one exception to layering rule 5, as `(front end, front end it carries)`: the
/// Python package runs the `facts` command in-process (its `facts` console script and
/// `python -m factmem`), so `pip install factmem` brings the command without a Rust
/// toolchain and with the very same flags, output and exit codes. The CLI is itself a
/// front end over `dispatch-runtime` alone, so the package still reaches no layer below
/// but through the runtime; no other front end, and no other crate, is allowed.
const CARRIED_FRONT_ENDS: &[(&str, &str)] = &[("factmem-python", "factmem-cli")];
/// Directories never searched for files.
const SKIPPED_DIRS: &[&str] = &["target", ".git"];

/// The sources of the binaries, which must keep no protocol knowledge.
const BINARY_SOURCES: &str = "crates/facts/src";
/// Task statuses as the protocol and tasks.md ledgers spell them.
const STATUS_NAMES: &[&str] = &["completed", "in_progress", "pending"];

// ---------------------------------------------------------------------------
// Rule: protocol-knowledge

/// Flags string literals in a binary's source that spell one of `words` (the protocol's
/// error codes and the task statuses): the binary should take them from the runtime. A
/// literal right after a `:` is a JSON value in an agent result the binary plays, and
/// passes.
fn check_protocol_knowledge(path: &str, text: &str, words: &[&str]) -> Vec<String> {
    if !path.starts_with(BINARY_SOURCES) {
        return Vec::new();
    }
    let mut violations = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for word in words {
            let literal = format!("\"{word}\"");
            // A JSON value the binary plays as an agent (`"status": "completed"` in a
            // `json!` result) is the agent's text, not the binary's protocol knowledge.
            let spelled = line.match_indices(&literal).any(|(at, _)| {
                !line
                    .get(..at)
                    .is_some_and(|before| before.trim_end().ends_with(':'))
            });
            if spelled {
                violations.push(format!(
                    "{path}:{}: the string literal \"{word}\" is protocol knowledge; \
                     [protocol-knowledge] take it from `dispatch_runtime::protocol` (error \
                     codes) or the ledger's `TaskStatus`",
                    number + 1
                ));
            }
        }
    }
    violations
}

// ---------------------------------------------------------------------------
// Rule: doc-header
// ---------------------------------------------------------------------------

/// A `.rs` file must begin with a `//!` inner doc comment on its first line.
fn check_file_header(path: &str, text: &str) -> Option<String> {
    if text.starts_with("//!") {
        return None;
    }
    Some(format!(
        "{path}:1: [doc-header] file does not begin with a `//!` doc comment; \
         fix: make the first line `//! <what this file is for>`"
    ))
}

// ---------------------------------------------------------------------------
// Rule: whitespace
// ---------------------------------------------------------------------------

/// No line may end in whitespace; `.rs` files may not indent with tabs.
fn check_whitespace(path: &str, text: &str) -> Vec<String> {
    let is_rust = path.ends_with(".rs");
    let mut violations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.ends_with(char::is_whitespace) {
            violations.push(format!(
                "{path}:{line_no}: [whitespace] trailing whitespace; \
                 fix: delete the spaces/tabs at the end of the line"
            ));
        }
        let mut indent = line.chars().take_while(|c| c.is_whitespace());
        if is_rust && indent.any(|c| c == '\t') {
            violations.push(format!(
                "{path}:{line_no}: [whitespace] tab used for indentation; \
                 fix: indent with spaces (`cargo fmt` does it for code)"
            ));
        }
    }
    violations
}

// ---------------------------------------------------------------------------
// Rule: injected-time
// ---------------------------------------------------------------------------

/// Whether `path` (relative, `/`-separated) is library source:
/// `crates/<crate>/src/**/*.rs`.
fn is_library_source(path: &str) -> bool {
    let mut parts = path.split('/');
    parts.next() == Some("crates")
        && parts.next().is_some()
        && parts.next() == Some("src")
        && parts.next().is_some()
        && path.ends_with(".rs")
}

/// Library source other than [`CLOCK_FILE`] must not read the system clock.
///
/// Comment lines are ignored so docs may name the forbidden calls. Tests,
/// benches and examples (outside `src/`) are exempt.
fn check_clock_use(path: &str, text: &str) -> Vec<String> {
    if !is_library_source(path) || path == CLOCK_FILE {
        return Vec::new();
    }
    let mut violations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        for call in CLOCK_READS.iter().filter(|call| line.contains(*call)) {
            violations.push(format!(
                "{path}:{}: [injected-time] library code calls `{call}`; \
                 fix: take the time from a `Clock` passed in by the caller \
                 (see {CLOCK_FILE}) so tests and replays control it",
                index + 1
            ));
        }
    }
    violations
}

// ---------------------------------------------------------------------------
// Rule: concrete implementations
// ---------------------------------------------------------------------------

/// Code of a crate other than the [`COMPOSERS`] names no concrete implementation of
/// another crate's service trait (see [`CONCRETE`]): it takes trait objects, and only the
/// composers pick implementations.
///
/// A file belongs to the crate whose directory it lies in: the whole component after
/// `crates/` (so `crates/fact-store-sqlite/src/..` is `fact-store-sqlite`, not
/// `fact-store`), matched exactly against the owners in [`CONCRETE`].
///
/// Comment lines are ignored so docs (and their examples) may name them, and so is
/// everything from a `#[cfg(test)]` line on, and `tests.rs` modules: tests may build
/// whatever they test against. Tests, benches and examples outside `src/` are exempt.
fn check_concrete_names(path: &str, text: &str) -> Vec<String> {
    let Some(krate) = path
        .strip_prefix("crates/")
        .and_then(|p| p.split('/').next())
    else {
        return Vec::new();
    };
    if !is_library_source(path) || COMPOSERS.contains(&krate) || path.ends_with("/tests.rs") {
        return Vec::new();
    }
    let mut violations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        for (name, owner) in CONCRETE {
            if *owner != krate && contains_word(line, name) {
                violations.push(format!(
                    "{path}:{}: [concrete] `{krate}` names `{name}`, an implementation \
                     from `{owner}`; fix: take the trait as `&dyn`/`Arc<dyn>` and let \
                     `{RUNTIME}` (or the caller) choose the implementation",
                    index + 1
                ));
            }
        }
    }
    violations
}

/// Whether `name` occurs in `line` as a whole identifier.
fn contains_word(line: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(at, _)| {
        let before = line.get(..at).and_then(|b| b.chars().next_back());
        let after = line.get(at + name.len()..).and_then(|a| a.chars().next());
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

// ---------------------------------------------------------------------------
// Rule: layering
// ---------------------------------------------------------------------------

/// How a crate depends on another, as `cargo metadata` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DepKind {
    /// `[dependencies]`
    Normal,
    /// `[dev-dependencies]`: only tests, examples and benches see it.
    Dev,
    /// `[build-dependencies]`
    Build,
}

impl DepKind {
    /// The word used in violation messages.
    fn label(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Dev => "dev",
            Self::Build => "build",
        }
    }
}

/// One dependency of a crate.
#[derive(Debug, Clone)]
struct Dep {
    /// Package name of the dependency (not its rename).
    name: String,
    /// Which dependency table it comes from.
    kind: DepKind,
}

/// A workspace crate, reduced to what the layering rules need.
#[derive(Debug, Clone)]
struct CrateInfo {
    /// Package name.
    name: String,
    /// Whether the package has a library target.
    is_lib: bool,
    /// All its dependencies, workspace crates or not.
    deps: Vec<Dep>,
}

/// Checks the crate graph against the layering rules:
///
/// 1. `fact-model` depends on no workspace crate (any kind).
/// 2. No library crate other than `dispatch-runtime` has a normal or build
///    dependency on more than one of [`SERVICES`]; dev-dependencies are fine.
/// 3. No crate among `fact-model`, [`SERVICES`], [`SQL_RULES`] and [`BACKENDS`] depends
///    on `dispatch-runtime` (any kind): only it and binaries above it may.
/// 4. No crate other than `xtask` depends on `xtask` (any kind).
/// 5. A binary-only crate (no library target, not `xtask`) and a front end
///    ([`FRONT_ENDS`]: the `facts` command, the Python package) has a normal or build
///    dependency on no workspace crate but `dispatch-runtime`: they reach the layers
///    below through it (its `reexports`), so the runtime stays the one composer. The
///    exception, [`CARRIED_FRONT_ENDS`]: the Python package may also depend on the `facts`
///    command's crate, which it runs in-process.
/// 6. Only `dispatch-runtime` and `xtask` may name a backend crate ([`BACKENDS`]): no
///    other crate has a dependency of any kind on one. That includes the store's core
///    ([`STORE`]), the SQL rules ([`SQL_RULES`]) and the backends themselves: one
///    backend never depends on another.
/// 7. Only the backends depend on [`SQL_RULES`] (any kind); `xtask` may have it as a
///    dev-dependency. In particular the core, [`STORE`], knows no SQL; [`SQL_RULES`]
///    itself depends on [`STORE`], whose traits it implements.
///
/// Rule 2 counts [`STORE`] alone among the storage crates, so a backend that depends on
/// both [`STORE`] and [`SQL_RULES`] combines no two services.
///
/// Dependencies on crates that are not in `crates` are ignored.
fn check_layering(crates: &[CrateInfo]) -> Vec<String> {
    let members: BTreeSet<&str> = crates.iter().map(|krate| krate.name.as_str()).collect();
    let mut violations = Vec::new();
    for krate in crates {
        let name = krate.name.as_str();
        let deps = krate
            .deps
            .iter()
            .filter(|dep| members.contains(dep.name.as_str()));
        for dep in deps.clone() {
            let (dep_name, kind) = (dep.name.as_str(), dep.kind.label());
            if name == MODEL {
                violations.push(format!(
                    "crate `{name}` has a {kind} dependency on `{dep_name}`; \
                     [layering 1] `{MODEL}` is the bottom layer and depends on no \
                     workspace crate; fix: move what it needs into `{MODEL}` or \
                     move the code that needs `{dep_name}` out of `{MODEL}`"
                ));
            } else if (SERVICES.contains(&name) || name == SQL_RULES || BACKENDS.contains(&name))
                && dep_name == RUNTIME
            {
                violations.push(format!(
                    "crate `{name}` has a {kind} dependency on `{RUNTIME}`; \
                     [layering 3] only `{RUNTIME}` and binaries above it may use \
                     `{RUNTIME}`; fix: remove the dependency and let `{RUNTIME}` \
                     call into `{name}` instead (tests that need the runtime \
                     belong in `{RUNTIME}`)"
                ));
            }
            if (!krate.is_lib || FRONT_ENDS.contains(&name))
                && name != XTASK
                && dep_name != RUNTIME
                && dep_name != XTASK
                && dep.kind != DepKind::Dev
                && !CARRIED_FRONT_ENDS.contains(&(name, dep_name))
            {
                violations.push(format!(
                    "binary or front-end crate `{name}` has a {kind} dependency on \
                     `{dep_name}`; [layering 5] binaries and front ends depend on \
                     `{RUNTIME}` alone; fix: use what \
                     `{RUNTIME}` re-exports (`dispatch_runtime::reexports`), adding the \
                     item there if it is missing"
                ));
            }
            if BACKENDS.contains(&dep_name) && name != RUNTIME && name != XTASK {
                let fix = if name == STORE || name == SQL_RULES || BACKENDS.contains(&name) {
                    format!(
                        "keep the arrow pointing down: move what both need into \
                         `{SQL_RULES}` (if it is SQL) or `{STORE}` (if it is not)"
                    )
                } else {
                    format!(
                        "take the store as a trait object (`Arc<dyn SessionFactStore>`) \
                         and let `{RUNTIME}` choose the backend behind its features"
                    )
                };
                violations.push(format!(
                    "crate `{name}` has a {kind} dependency on `{dep_name}`; \
                     [layering 6] only `{RUNTIME}` and `{XTASK}` may name a database \
                     backend; fix: {fix}"
                ));
            }
            if dep_name == SQL_RULES
                && !BACKENDS.contains(&name)
                && !(name == XTASK && dep.kind == DepKind::Dev)
            {
                let fix = if name == STORE {
                    format!(
                        "the core knows no SQL: move the code that needs `{SQL_RULES}` \
                         into `{SQL_RULES}` or a backend"
                    )
                } else {
                    format!(
                        "use the store traits of `{STORE}` and let `{RUNTIME}` wire a \
                         backend"
                    )
                };
                violations.push(format!(
                    "crate `{name}` has a {kind} dependency on `{SQL_RULES}`; \
                     [layering 7] only the database backends (`{}`) use the SQL rules; \
                     fix: {fix}",
                    BACKENDS.join("`, `")
                ));
            }
            if dep_name == XTASK && name != XTASK {
                violations.push(format!(
                    "crate `{name}` has a {kind} dependency on `{XTASK}`; \
                     [layering 4] `{XTASK}` is repository tooling, not a library; \
                     fix: remove the dependency and move shared code into a \
                     product crate"
                ));
            }
        }
        if krate.is_lib && name != RUNTIME {
            let combined: BTreeSet<&str> = deps
                .filter(|dep| dep.kind != DepKind::Dev && SERVICES.contains(&dep.name.as_str()))
                .map(|dep| dep.name.as_str())
                .collect();
            if combined.len() > 1 {
                let list: Vec<String> = combined.iter().map(|dep| format!("`{dep}`")).collect();
                violations.push(format!(
                    "library crate `{name}` has normal/build dependencies on {}; \
                     [layering 2] only `{RUNTIME}` may combine more than one of {}; \
                     fix: keep one, talk to the others through `{MODEL}` types \
                     wired up by `{RUNTIME}`, or make them dev-dependencies if \
                     only tests need them",
                    list.join(", "),
                    SERVICES.join(", ")
                ));
            }
        }
    }
    violations
}

/// Extracts the workspace crates from `cargo metadata --no-deps` output.
fn parse_metadata(metadata: &Value) -> Result<Vec<CrateInfo>, String> {
    const LIB_KINDS: &[&str] = &["lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"];
    let packages = metadata["packages"]
        .as_array()
        .ok_or("cargo metadata: no `packages` array")?;
    let mut crates = Vec::new();
    for package in packages {
        let name = package["name"]
            .as_str()
            .ok_or("cargo metadata: package without a name")?;
        let is_lib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|target| target["kind"].as_array().into_iter().flatten())
            .any(|kind| kind.as_str().is_some_and(|kind| LIB_KINDS.contains(&kind)));
        let mut deps = Vec::new();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().ok_or_else(|| {
                format!("cargo metadata: `{name}` has a dependency without a name")
            })?;
            let kind = match dep["kind"].as_str() {
                None => DepKind::Normal,
                Some("dev") => DepKind::Dev,
                Some("build") => DepKind::Build,
                Some(other) => {
                    return Err(format!("cargo metadata: unknown dependency kind `{other}`"));
                }
            };
            deps.push(Dep {
                name: dep_name.to_owned(),
                kind,
            });
        }
        crates.push(CrateInfo {
            name: name.to_owned(),
            is_lib,
            deps,
        });
    }
    Ok(crates)
}

// ---------------------------------------------------------------------------
// Reading the real workspace
// ---------------------------------------------------------------------------

/// The workspace root.
fn root() -> std::path::PathBuf {
    crate::cargo::workspace_root().expect("workspace root")
}

/// Every file under `root/dir` whose extension is one of `exts`, as
/// (`/`-separated path relative to `root`, text) pairs, sorted by path.
/// Skips [`SKIPPED_DIRS`]; a missing `dir` yields nothing.
fn read_files(root: &Path, dir: &str, exts: &[&str]) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, exts: &[&str], out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let entry = entry.expect("read directory entry");
            let path = entry.path();
            let file_type = entry.file_type().expect("file type");
            let file_name = entry.file_name();
            if file_type.is_dir() {
                if !SKIPPED_DIRS.iter().any(|skip| file_name == *skip) {
                    walk(root, &path, exts, out);
                }
            } else if file_type.is_file()
                && path
                    .extension()
                    .and_then(|ext| ext.to_str())
                    .is_some_and(|ext| exts.contains(&ext))
            {
                let bytes = std::fs::read(&path).expect("read file");
                let relative = path.strip_prefix(root).expect("path under the root");
                let relative: Vec<_> = relative.iter().map(|part| part.to_string_lossy()).collect();
                out.push((
                    relative.join("/"),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &root.join(dir), exts, &mut out);
    out.sort();
    out
}

/// Fails the test with every violation, one per line.
#[track_caller]
fn assert_clean(rule: &str, violations: &[String]) {
    assert!(
        violations.is_empty(),
        "{} {rule} violation(s):\n{}\n",
        violations.len(),
        violations.join("\n")
    );
}

#[test]
fn workspace_rust_files_have_doc_headers() {
    let root = root();
    let mut files = read_files(&root, "crates", &["rs"]);
    files.extend(read_files(&root, "xtask", &["rs"]));
    assert!(
        !files.is_empty(),
        "found no .rs files under {}",
        root.display()
    );
    let violations: Vec<String> = files
        .iter()
        .filter_map(|(path, text)| check_file_header(path, text))
        .collect();
    assert_clean("doc-header", &violations);
}

#[test]
fn workspace_has_no_bad_whitespace() {
    let files = read_files(&root(), "", &["rs", "toml", "md"]);
    let violations: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| check_whitespace(path, text))
        .collect();
    assert_clean("whitespace", &violations);
}

#[test]
fn workspace_library_code_does_not_read_the_clock() {
    let files = read_files(&root(), "crates", &["rs"]);
    let violations: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| check_clock_use(path, text))
        .collect();
    assert_clean("injected-time", &violations);
}

#[test]
fn workspace_library_code_names_no_other_crate_s_implementations() {
    let files = read_files(&root(), "crates", &["rs"]);
    let violations: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| check_concrete_names(path, text))
        .collect();
    assert_clean("concrete", &violations);
}

#[test]
fn binaries_keep_no_protocol_knowledge() {
    let mut words = dispatch_runtime::protocol::error_codes();
    words.extend(STATUS_NAMES);
    let files = read_files(&root(), BINARY_SOURCES, &["rs"]);
    assert!(!files.is_empty(), "no sources under {BINARY_SOURCES}");
    let violations: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| check_protocol_knowledge(path, text, &words))
        .collect();
    assert_clean("protocol-knowledge", &violations);
}

#[test]
fn workspace_crates_respect_layering() {
    let output = crate::cargo::command(&["metadata", "--format-version", "1", "--no-deps"])
        .expect("cargo command")
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata JSON");
    let crates = parse_metadata(&metadata).expect("parse cargo metadata");
    assert!(
        crates.iter().any(|krate| krate.name == XTASK),
        "cargo metadata did not list xtask: {crates:?}"
    );
    assert_clean("layering", &check_layering(&crates));
}

#[test]
fn workspace_modules_import_in_no_circle() {
    let root = root();
    let mut crates = vec![(XTASK.to_owned(), "xtask/src".to_owned())];
    for entry in std::fs::read_dir(root.join("crates")).expect("read crates/") {
        let entry = entry.expect("read crates/ entry");
        if entry.path().join("src").is_dir() {
            let dir = entry.file_name().to_string_lossy().into_owned();
            crates.push((dir.clone(), format!("crates/{dir}/src")));
        }
    }
    crates.sort();
    assert!(crates.len() > 1, "found no crates under {}", root.display());
    let violations: Vec<String> = crates
        .iter()
        .flat_map(|(name, src)| {
            imports::check_import_circles(name, &read_files(&root, src, &["rs"]))
        })
        .collect();
    assert_clean("import-circles", &violations);
}

//! `cargo xtask check`: the one command CI runs.
//!
//! Runs each step of [`STEPS`] in order from the workspace root, announcing
//! it with a `==> ...` line on stderr, and stops at the first failure. A
//! green `check` means formatting, lints (warnings are errors), unit,
//! integration, doc and tidy tests, documentation and benchmark builds are
//! all clean, every library crate's public API matches its snapshot, every
//! publishable crate packages and builds from its package alone, the lean
//! build of `facts` (`--no-default-features --features sqlite`) compiles
//! cleanly with no PostgreSQL, TLS, ONNX or OpenTelemetry crate in its tree, and the
//! dependency graph passes `cargo deny`. Every step that resolves
//! dependencies passes `--locked`, so a stale `Cargo.lock` fails instead of
//! being silently rewritten.
//!
//! Most steps are plain cargo invocations ([`Action::Cargo`]); one is a
//! check this binary runs itself ([`Action::Xtask`]: the public API
//! snapshots). A step that needs a tool cargo does not ship (`cargo deny`,
//! `cargo semver-checks`) has a [`Gate`], asked before it runs: it may skip
//! the step, saying why on the step's line, or fail the check. Whether a
//! missing tool skips or fails is the step's [`Missing`] policy: `.ci/run`
//! installs cargo-deny, so under `CI=true` a missing cargo-deny is an error,
//! while on a contributor's machine the step is skipped with the command
//! that installs it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::cargo;
use crate::error::Error;

/// One step of the check: what it runs, and what decides whether it runs here.
struct Step {
    /// What the step runs.
    action: Action,
    /// Asked before the step runs; `None` runs it always, as written.
    gate: Option<fn() -> Result<Gate, Error>>,
}

/// What a step runs.
enum Action {
    /// `cargo ARGS`, with extra environment for this step only.
    Cargo {
        /// Arguments passed to cargo.
        args: &'static [&'static str],
        /// Environment variables set for this step only.
        env: &'static [(&'static str, &'static str)],
    },
    /// A check of this binary's own, run in process.
    Xtask {
        /// How the progress line names it: the `cargo xtask` command that runs it alone.
        name: &'static str,
        /// Runs the check.
        run: fn() -> Result<(), Error>,
    },
}

/// A plain cargo step that always runs.
const fn cargo_step(args: &'static [&'static str]) -> Step {
    Step {
        action: Action::Cargo { args, env: &[] },
        gate: None,
    }
}

/// A cargo step of an external tool, run when `gate` says so.
const fn tool_step(args: &'static [&'static str], gate: fn() -> Result<Gate, Error>) -> Step {
    Step {
        action: Action::Cargo { args, env: &[] },
        gate: Some(gate),
    }
}

/// What a step's gate decided.
#[derive(Debug, PartialEq, Eq)]
enum Gate {
    /// Run the step, with these arguments after its own.
    Run(Vec<String>),
    /// Skip the step, for this reason.
    Skip(String),
}

/// What a missing external tool means for its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// Skipped everywhere: an optional check (`cargo semver-checks`).
    Skip,
    /// Skipped outside CI, an error under `CI=true`, where `.ci/run` installs the tool.
    FailInCi,
}

/// The steps, in the order they run. Cheap, common failures come first.
const STEPS: &[Step] = &[
    cargo_step(&["fmt", "--all", "--check"]),
    // The lean build of `facts` (SQLite alone) brings no PostgreSQL, TLS, ONNX or
    // OpenTelemetry crate...
    Step {
        action: Action::Xtask {
            name: "cargo tree -p factmem-cli --no-default-features --features sqlite \
                   (the lean build: no PostgreSQL, TLS, ONNX or OpenTelemetry crate)",
            run: lean_tree,
        },
        gate: None,
    },
    // The core crates build as Rust 1.89 would build them: no dependency of theirs
    // declares a newer rust-version (`msrv.rs`).
    Step {
        action: Action::Xtask {
            name: "cargo check of the core crates as Rust 1.89 (their rust-version)",
            run: crate::msrv::check,
        },
        gate: None,
    },
    cargo_step(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]),
    // ...and compiles without a warning (clippy checks it, so no separate `cargo check`).
    cargo_step(&[
        "clippy",
        "-p",
        "factmem-cli",
        "--no-default-features",
        "--features",
        "sqlite",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]),
    // Unit, integration and doc tests, including xtask's tidy tests, with every feature
    // (the default build is compiled by the benchmark step). The Python package links
    // libpython (its tests embed an interpreter): without one, outside CI, it is left out.
    Step {
        action: Action::Cargo {
            args: &["test", "--workspace", "--all-features", "--locked"],
            env: &[],
        },
        gate: Some(python_gate),
    },
    Step {
        action: Action::Cargo {
            args: &[
                "doc",
                "--workspace",
                "--no-deps",
                "--all-features",
                "--locked",
            ],
            env: &[("RUSTDOCFLAGS", "-D warnings")],
        },
        gate: None,
    },
    // Every library crate's public API against its committed snapshot.
    Step {
        action: Action::Xtask {
            name: "cargo xtask public-api",
            run: crate::public_api::check,
        },
        gate: None,
    },
    // Benchmarks must keep compiling; running them is not CI's job.
    Step {
        action: Action::Cargo {
            args: &["bench", "--workspace", "--no-run", "--locked"],
            env: &[],
        },
        gate: Some(python_gate),
    },
    // What earlier dry runs unpacked of this workspace's packages goes first: cargo never
    // unpacks a local registry's package again, so a dry run would build against them.
    Step {
        action: Action::Xtask {
            name: "remove the sources earlier publish dry runs unpacked \
                   ($CARGO_HOME/registry/src/-*/PACKAGE-VERSION)",
            run: clear_unpacked_packages,
        },
        gate: None,
    },
    // Every publishable package (xtask is `publish = false`) is packaged and built from its
    // package alone, against the others' packages: a file outside a package, a missing
    // `version` on a path dependency or a package that only builds inside the workspace fails
    // here. `--allow-dirty` so the check runs before a commit, as it does on a clean clone.
    cargo_step(&[
        "publish",
        "--workspace",
        "--dry-run",
        "--locked",
        "--allow-dirty",
    ]),
    // Licences, banned and duplicate crates, and sources of the lock file (`deny.toml`).
    tool_step(
        &["deny", "--locked", "check", "licenses", "bans", "sources"],
        deny_gate,
    ),
    // Advisories need the RustSec database, which lives on GitHub only: the gate fetches it
    // first and skips the step, saying so, when it cannot (cargo-deny would fail without it).
    tool_step(
        &["deny", "--locked", "check", "advisories"],
        advisories_gate,
    ),
    // The public API against the last release, when there is one to compare with.
    tool_step(
        &["semver-checks", "check-release", "--workspace"],
        semver_gate,
    ),
];

impl Step {
    /// The step as a shell-like command line, for progress and error messages.
    fn display(&self, extra: &[String]) -> String {
        match &self.action {
            Action::Cargo { args, env } => {
                let env = env.iter().map(|(key, value)| format!("{key}='{value}' "));
                let args = args.iter().copied().chain(extra.iter().map(String::as_str));
                format!(
                    "{}cargo {}",
                    env.collect::<String>(),
                    args.collect::<Vec<_>>().join(" ")
                )
            }
            Action::Xtask { name, .. } => (*name).to_owned(),
        }
    }

    /// Runs the step with `extra` arguments after its own, failing unless it succeeds.
    fn run(&self, extra: &[String]) -> Result<(), Error> {
        let (args, env) = match &self.action {
            Action::Cargo { args, env } => (args, env),
            Action::Xtask { run, .. } => return run(),
        };
        let name = self.display(extra);
        let mut command = cargo::command(args).map_err(Error::Failed)?;
        command.args(extra).envs(env.iter().copied());
        let status = command
            .status()
            .map_err(|err| Error::Failed(format!("step `{name}` could not start: {err}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Failed(format!("step `{name}` failed ({status})")))
        }
    }

    /// The cargo arguments of a cargo step; none for an in-process one.
    #[cfg(test)]
    fn args(&self) -> &'static [&'static str] {
        match self.action {
            Action::Cargo { args, .. } => args,
            Action::Xtask { .. } => &[],
        }
    }
}

/// Entry point of `cargo xtask check`; takes no arguments.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    crate::error::no_args("check", args)?;
    let start = Instant::now();
    let mut skipped = 0;
    for step in STEPS {
        let gate = match step.gate {
            Some(gate) => gate()?,
            None => Gate::Run(Vec::new()),
        };
        match gate {
            Gate::Run(extra) => {
                eprintln!("==> {}", step.display(&extra));
                let step_start = Instant::now();
                step.run(&extra)?;
                eprintln!("    ok ({:.1}s)", step_start.elapsed().as_secs_f64());
            }
            Gate::Skip(reason) => {
                eprintln!("==> {}", step.display(&[]));
                eprintln!("    skipped: {reason}");
                skipped += 1;
            }
        }
    }
    eprintln!(
        "==> {} of {} checks passed, {skipped} skipped ({:.1}s)",
        STEPS.len() - skipped,
        STEPS.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Removes what earlier `cargo publish --dry-run`s left of this workspace's packages.
///
/// The dry run verifies each package against the others' through a temporary local
/// registry, and cargo takes a registry's package to be immutable: it unpacks it once under
/// `$CARGO_HOME/registry/src/-HASH/NAME-VERSION` and never again while that directory is
/// there, and its build records no source file of the package (cargo tracks the files of
/// local packages only), so that build stays fresh. A later dry run of the same version
/// (the next commit) then builds against the earlier commit's sources, or reuses its
/// build: stop 40's CI verified `fact-store` against a `fact-model` without `Metadata`, on
/// a machine that had run the check before. So both go: this workspace's `NAME-VERSION`
/// directories of local registries (named `-HASH`; crates.io's stay), and in the target
/// directory the fingerprints of this workspace's packages that record no source file
/// (a build of the workspace's own files always records its `src/lib.rs`).
fn clear_unpacked_packages() -> Result<(), Error> {
    let output = cargo::command(&["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .map_err(Error::Failed)?
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::Failed(format!("cargo metadata could not start: {e}")))?;
    if !output.status.success() {
        return Err(Error::Failed(format!(
            "cargo metadata failed ({})",
            output.status
        )));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::Failed(format!("cargo metadata printed no JSON: {e}")))?;
    let packages: Vec<(&str, &str)> = metadata
        .get("packages")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|package| {
            Some((
                package.get("name")?.as_str()?,
                package.get("version")?.as_str()?,
            ))
        })
        .collect();
    let mut removed = 0;
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
    let registries =
        cargo_home.and_then(|home| fs::read_dir(home.join("registry").join("src")).ok());
    for registry in registries.into_iter().flatten().flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for (name, version) in &packages {
            removed += remove_dir(&registry.path().join(format!("{name}-{version}")))?;
        }
    }
    let target = metadata
        .get("target_directory")
        .and_then(serde_json::Value::as_str)
        .map(PathBuf::from);
    let profiles = target.and_then(|target| fs::read_dir(target).ok());
    for profile in profiles.into_iter().flatten().flatten() {
        let Ok(fingerprints) = fs::read_dir(profile.path().join(".fingerprint")) else {
            continue;
        };
        for unit in fingerprints.flatten() {
            let file_name = unit.file_name();
            let unit_name = file_name.to_string_lossy();
            let ours = packages.iter().any(|(name, _)| {
                unit_name
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('-'))
            });
            if ours && records_no_source(&unit.path()) {
                removed += remove_dir(&unit.path())?;
            }
        }
    }
    eprintln!("    removed {removed} unpacked sources and registry builds of this workspace");
    Ok(())
}

/// Whether the fingerprint directory `unit` records no Rust source file: a build from a
/// registry. Its dep-info files (`dep-*`) hold the paths a build read, as text in a binary
/// frame; a directory without one (a doc or a run of a test) is left alone.
fn records_no_source(unit: &Path) -> bool {
    let mut dep_infos = fs::read_dir(unit)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|file| file.file_name().to_string_lossy().starts_with("dep-"))
        .peekable();
    if dep_infos.peek().is_none() {
        return false;
    }
    dep_infos
        .all(|file| fs::read(file.path()).is_ok_and(|bytes| !bytes.windows(3).any(|w| w == b".rs")))
}

/// Removes `dir` when it is there; how many were removed (0 or 1).
fn remove_dir(dir: &Path) -> Result<usize, Error> {
    if !dir.is_dir() {
        return Ok(0);
    }
    fs::remove_dir_all(dir)
        .map(|()| 1)
        .map_err(|e| Error::Failed(format!("cannot remove {}: {e}", dir.display())))
}

/// The crates the lean build of `facts` (`-p factmem-cli --no-default-features --features
/// sqlite`) must not compile: the PostgreSQL backend, its client and its pool, rustls,
/// ONNX Runtime, the OpenTelemetry exporter and its HTTP client.
const NOT_LEAN: &[&str] = &[
    "fact-store-postgres",
    "postgres",
    "tokio-postgres",
    "postgres-types",
    "postgres-protocol",
    "r2d2",
    "rustls",
    "tokio-rustls",
    "ort",
    "ort-sys",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry-otlp",
    "tracing-opentelemetry",
    "reqwest",
];

/// Fails when the lean build's dependency tree (normal and build dependencies, for every
/// target) holds a crate of [`NOT_LEAN`], naming it and the command that shows why.
fn lean_tree() -> Result<(), Error> {
    let args = [
        "tree",
        "-p",
        "factmem-cli",
        "--no-default-features",
        "--features",
        "sqlite",
        "--locked",
        "--target",
        "all",
        "-e",
        "normal,build",
        "--prefix",
        "none",
    ];
    let output = cargo::command(&args)
        .map_err(Error::Failed)?
        .stderr(Stdio::inherit())
        .output()
        .map_err(|err| Error::Failed(format!("`cargo tree` could not start: {err}")))?;
    if !output.status.success() {
        return Err(Error::Failed(format!(
            "`cargo {}` failed ({})",
            args.join(" "),
            output.status
        )));
    }
    let found = not_lean(&String::from_utf8_lossy(&output.stdout));
    if found.is_empty() {
        return Ok(());
    }
    Err(Error::Failed(format!(
        "the lean build of facts (--no-default-features --features sqlite) compiles {}; \
         `cargo tree -p factmem-cli --no-default-features --features sqlite -e normal,build \
         -i CRATE` shows what brings it",
        found.join(", ")
    )))
}

/// The crates of [`NOT_LEAN`] that `cargo tree --prefix none` output names, each once.
fn not_lean(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| NOT_LEAN.contains(name))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Whether this run is CI's: `CI=true`, as `.ci/run` is run.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| value == "true")
}

/// Whether `cargo SUBCOMMAND --version` runs, i.e. the external tool is installed.
fn installed(subcommand: &str) -> bool {
    cargo::command(&[subcommand, "--version"]).is_ok_and(|mut command| {
        command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// The gate's answer for a tool that is not installed, under `policy`.
fn missing_tool(tool: &str, install: &str, policy: Missing, ci: bool) -> Result<Gate, Error> {
    match policy {
        Missing::FailInCi if ci => Err(Error::Failed(format!(
            "{tool} is not installed, and under CI=true this check must run \
             (.ci/run installs it: {install})"
        ))),
        _ => Ok(Gate::Skip(format!("{tool} is not installed ({install})"))),
    }
}

/// The package that links libpython: `crates/factmem-python`.
const PYTHON_PACKAGE: &str = "factmem-python";

/// Asks the Python that PyO3 builds with (`PYO3_PYTHON`, else `python3`) whether it has a
/// shared libpython to link against: its exit status.
const LIBPYTHON_PROBE: &str = "import os, sys, sysconfig\n\
    libdir = sysconfig.get_config_var('LIBDIR') or ''\n\
    library = sysconfig.get_config_var('LDLIBRARY') or ''\n\
    sys.exit(0 if library.endswith('.so') and os.path.exists(os.path.join(libdir, library)) else 1)\n";

/// Whether a Python with its shared library is there for PyO3 to link the Python
/// package's tests and benchmarks against.
fn libpython() -> bool {
    let python = std::env::var("PYO3_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    Command::new(python)
        .args(["-c", LIBPYTHON_PROBE])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The test and benchmark builds: with the Python package when libpython is there; without
/// it (`--exclude factmem-python`, said on stderr) outside CI; an error under `CI=true`,
/// where `.ci/run` installs it.
fn python_gate() -> Result<Gate, Error> {
    python_gate_for(libpython(), in_ci())
}

/// [`python_gate`] for a machine with (`found`) or without libpython, in CI or not.
fn python_gate_for(found: bool, ci: bool) -> Result<Gate, Error> {
    if found {
        return Ok(Gate::Run(Vec::new()));
    }
    if ci {
        return Err(Error::Failed(format!(
            "no Python 3 with a shared libpython (python3-dev) to link {PYTHON_PACKAGE}'s \
             tests against, and under CI=true they must run (.ci/run installs it)"
        )));
    }
    eprintln!(
        "    note: {PYTHON_PACKAGE} left out: no Python 3 with a shared libpython to link \
         against (install python3-dev, or set PYO3_PYTHON)"
    );
    Ok(Gate::Run(vec![
        "--exclude".to_owned(),
        PYTHON_PACKAGE.to_owned(),
    ]))
}

/// How cargo-deny is installed, as `.ci/run` does it.
const DENY_INSTALL: &str = "cargo install --locked cargo-deny --version 0.20.2";

/// `cargo deny check licenses bans sources`: runs when cargo-deny is installed.
fn deny_gate() -> Result<Gate, Error> {
    if installed("deny") {
        Ok(Gate::Run(Vec::new()))
    } else {
        missing_tool("cargo-deny", DENY_INSTALL, Missing::FailInCi, in_ci())
    }
}

/// How long fetching the advisory database may take before the step is skipped.
const ADVISORY_FETCH_TIMEOUT: Duration = Duration::from_secs(120);

/// `cargo deny check advisories`: runs when cargo-deny is installed and the RustSec
/// advisory database could be fetched (or updated) just now. The database is a git
/// repository on GitHub, and no package registry carries it; a machine that cannot reach
/// GitHub (as this project's CI cannot) skips the step and says so, in CI too, since no
/// install step could fix that.
fn advisories_gate() -> Result<Gate, Error> {
    if !installed("deny") {
        return missing_tool("cargo-deny", DENY_INSTALL, Missing::FailInCi, in_ci());
    }
    let mut command = cargo::command(&["deny", "fetch", "db"]).map_err(Error::Failed)?;
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    match run_with_timeout(command, ADVISORY_FETCH_TIMEOUT) {
        Ok(()) => Ok(Gate::Run(Vec::new())),
        Err(why) => Ok(Gate::Skip(format!(
            "advisories NOT checked: the RustSec advisory database (github.com/rustsec/advisory-db) \
             could not be fetched: {why}"
        ))),
    }
}

/// `cargo semver-checks`: runs when it is installed and there is a release to compare
/// with, the newest `v*` tag other than this version's own (`--baseline-rev`). The
/// registry is no baseline: nothing of this workspace is published yet, and two of its
/// package names (`ledger`, `facts`) belong to other crates there.
fn semver_gate() -> Result<Gate, Error> {
    if !installed("semver-checks") {
        return missing_tool(
            "cargo-semver-checks",
            "cargo install --locked cargo-semver-checks",
            Missing::Skip,
            in_ci(),
        );
    }
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let listed = Command::new("git")
        .args(["tag", "--list", "v*", "--sort=-v:refname"])
        .current_dir(root)
        .output();
    let output = match listed {
        Ok(output) if output.status.success() => output,
        _ => {
            return Ok(Gate::Skip(
                "no baseline: git could not list the release tags".into(),
            ));
        }
    };
    let tags = String::from_utf8_lossy(&output.stdout);
    Ok(semver_baseline(&tags, env!("CARGO_PKG_VERSION")))
}

/// The gate for `git tag --list v* --sort=-v:refname` output (newest first) and this
/// workspace's version: the newest tag that is not this version's.
fn semver_baseline(tags: &str, version: &str) -> Gate {
    let own = format!("v{version}");
    match tags
        .lines()
        .map(str::trim)
        .find(|tag| !tag.is_empty() && *tag != own)
    {
        Some(tag) => Gate::Run(vec!["--baseline-rev".into(), tag.into()]),
        None => Gate::Skip(format!(
            "no baseline: no release tag before {own} and nothing published to compare with"
        )),
    }
}

/// Runs `command` to completion within `timeout`: `Err` with the reason (its last line
/// of stderr, or the timeout) unless it exits successfully. A command still running at the
/// timeout is killed.
fn run_with_timeout(mut command: Command, timeout: Duration) -> Result<(), String> {
    let mut child = command
        .spawn()
        .map_err(|err| format!("could not start: {err}"))?;
    // Drain stderr on its own thread, so a chatty command never blocks on a full pipe.
    let stderr = child.stderr.take().map(|mut pipe| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
            text
        })
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", timeout.as_secs()));
            }
            Ok(None) => thread::sleep(Duration::from_millis(100)),
            Err(err) => return Err(format!("could not wait for it: {err}")),
        }
    };
    if status.success() {
        return Ok(());
    }
    let text = stderr
        .and_then(|handle| handle.join().ok())
        .unwrap_or_default();
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .unwrap_or("no message");
    Err(format!("{status}: {last}"))
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )]

    use super::*;

    #[test]
    fn only_fingerprints_that_record_no_source_are_registry_builds() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("fact-model-1");
        let path = dir.path().join("fact-model-2");
        let doc = dir.path().join("fact-model-3");
        for unit in [&registry, &path, &doc] {
            fs::create_dir(unit).unwrap();
        }
        // As cargo 1.95 writes them: a registry build's dep-info frame holds no path, a
        // path build's holds its sources.
        let empty: &[u8] = &[1, 0, 0, 0, 0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        fs::write(registry.join("dep-lib-fact_model"), empty).unwrap();
        fs::write(
            path.join("dep-lib-fact_model"),
            b"\x01\x00\x00\x00src/lib.rs\x00",
        )
        .unwrap();
        fs::write(doc.join("doc-lib-fact_model.json"), b"{}").unwrap();
        assert!(records_no_source(&registry));
        assert!(!records_no_source(&path));
        assert!(!records_no_source(&doc));
        assert_eq!(remove_dir(&registry).unwrap(), 1);
        assert_eq!(remove_dir(&registry).unwrap(), 0);
    }

    #[test]
    fn the_lean_tree_check_names_each_heavy_crate_once_and_nothing_else() {
        let tree = "factmem-cli v0.3.0 (/w/crates/facts)\n\
                    rustls v0.23.31\n\
                    postgres-native v1.0.0\n\
                    ort-sys v2.0.0-rc.10\n\
                    rustls v0.23.31 (*)\n\
                    rustls-pki-types v1.12.0\n\
                    tokio v1.47.1\n";
        assert_eq!(not_lean(tree), ["ort-sys", "rustls"]);
        assert!(not_lean("factmem-cli v0.3.0 (/w)\nrusqlite v0.37.0\nsort v1\n").is_empty());
        assert!(not_lean("").is_empty());
    }

    #[test]
    fn semver_baseline_is_the_newest_other_release_tag() {
        let tags = "v0.2.0\nv0.1.1\nv0.1.0\n";
        assert_eq!(
            semver_baseline(tags, "0.2.0"),
            Gate::Run(vec!["--baseline-rev".into(), "v0.1.1".into()])
        );
        assert_eq!(
            semver_baseline("v0.1.0\n", "0.2.0"),
            Gate::Run(vec!["--baseline-rev".into(), "v0.1.0".into()])
        );
    }

    #[test]
    fn semver_without_an_earlier_tag_is_skipped_with_the_reason() {
        for tags in ["", "\n", "v0.2.0\n"] {
            match semver_baseline(tags, "0.2.0") {
                Gate::Skip(reason) => {
                    assert!(reason.contains("no baseline"), "{reason}");
                    assert!(reason.contains("v0.2.0"), "{reason}");
                }
                other => panic!("tags {tags:?}: expected a skip, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_missing_deny_fails_only_under_ci() {
        let outside = missing_tool("cargo-deny", DENY_INSTALL, Missing::FailInCi, false);
        match outside {
            Ok(Gate::Skip(reason)) => assert!(reason.contains(DENY_INSTALL), "{reason}"),
            other => panic!("expected a skip outside CI, got {other:?}"),
        }
        match missing_tool("cargo-deny", DENY_INSTALL, Missing::FailInCi, true) {
            Err(Error::Failed(message)) => {
                assert!(message.contains("CI=true"), "{message}");
                assert!(message.contains(DENY_INSTALL), "{message}");
            }
            other => panic!("expected a failure under CI, got {other:?}"),
        }
        assert!(matches!(
            missing_tool("cargo-semver-checks", "x", Missing::Skip, true),
            Ok(Gate::Skip(_))
        ));
    }

    #[test]
    fn without_libpython_the_python_package_is_left_out_except_under_ci() {
        assert_eq!(python_gate_for(true, true).unwrap(), Gate::Run(Vec::new()));
        assert_eq!(python_gate_for(true, false).unwrap(), Gate::Run(Vec::new()));
        assert_eq!(
            python_gate_for(false, false).unwrap(),
            Gate::Run(vec!["--exclude".into(), "factmem-python".into()])
        );
        match python_gate_for(false, true) {
            Err(Error::Failed(message)) => {
                assert!(message.contains("CI=true"), "{message}");
                assert!(message.contains("python3-dev"), "{message}");
            }
            other => panic!("expected a failure under CI, got {other:?}"),
        }
        // The test and benchmark builds are the gated steps.
        for command in ["test", "bench"] {
            let step = STEPS
                .iter()
                .find(|step| step.args().first() == Some(&command))
                .expect("a step");
            let gate = step.gate.expect("a gated step");
            assert!(std::ptr::fn_addr_eq(
                gate,
                python_gate as fn() -> Result<Gate, Error>
            ));
        }
    }

    #[test]
    fn this_machine_s_python_probe_runs() {
        // The probe is valid Python: with python3 there, it answers (either way) rather
        // than failing to parse; the answer itself depends on the machine.
        let status = Command::new("python3")
            .args([
                "-c",
                &format!("compile({LIBPYTHON_PROBE:?}, 'probe', 'exec')"),
            ])
            .status();
        if let Ok(status) = status {
            assert!(status.success(), "the probe does not compile");
        }
    }

    #[test]
    fn a_failed_fetch_is_reported_by_its_last_line_of_stderr() {
        let shell = |script: &str| {
            let mut command = Command::new("sh");
            command.args(["-c", script]).stderr(Stdio::piped());
            command
        };
        let long = Duration::from_secs(600);
        assert_eq!(run_with_timeout(shell("exit 0"), long), Ok(()));
        let failed =
            "echo cloning >&2; echo 'Could not resolve host: github.com' >&2; echo >&2; exit 3";
        let why = run_with_timeout(shell(failed), long).unwrap_err();
        assert!(why.contains("Could not resolve host: github.com"), "{why}");
        assert!(why.contains('3'), "{why}");
        assert!(!why.contains("cloning"), "{why}");
    }

    #[test]
    fn a_gated_step_shows_its_extra_arguments() {
        let step = STEPS
            .iter()
            .find(|step| step.args().first() == Some(&"semver-checks"))
            .expect("a semver-checks step");
        assert_eq!(
            step.display(&["--baseline-rev".into(), "v0.1.0".into()]),
            "cargo semver-checks check-release --workspace --baseline-rev v0.1.0"
        );
    }

    #[test]
    fn every_step_that_resolves_dependencies_is_locked() {
        for step in STEPS {
            let args = step.args();
            let resolves = !matches!(args.first(), None | Some(&"fmt") | Some(&"semver-checks"));
            assert!(
                !resolves || args.contains(&"--locked"),
                "`{}` resolves dependencies without --locked",
                step.display(&[])
            );
        }
    }
}

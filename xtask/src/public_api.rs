//! `cargo xtask public-api [--bless] [CRATE...]`: the committed public API of each library
//! crate, so every API change is deliberate and visible in review.
//!
//! For each crate of [`CRATES`], with all its features, rustdoc writes its JSON description
//! of the crate (`cargo rustdoc --output-format json --lib`), and the `public-api`
//! library (that of `cargo public-api`) renders it as one line per public item: functions
//! and methods with their signatures, struct fields, enum variants, trait items, the impls
//! of traits on public types (derived and auto traits included, as `Send` and `Sync` are
//! promises too; blanket impls left out, as they follow from the others), re-exports at
//! their public paths. Items come sorted, grouped by path, so a changed item is a `-`/`+`
//! pair of adjacent lines. The result is compared with `xtask/public-api/<crate>.txt`;
//! `--bless` rewrites those files instead. [`check`] is the step `cargo xtask check` runs.
//!
//! The snapshots live beside the tool rather than in each crate's folder so they never
//! enter a published package, and one folder lists them all.
//!
//! rustdoc's JSON output (and cargo's option for it) is unstable, so on a stable toolchain
//! it is unlocked with `RUSTC_BOOTSTRAP=1`. That variable is part of every compilation's
//! fingerprint, so the step builds in a target directory of its own (`<target>/public-api`);
//! sharing the main one would rebuild every dependency twice per `cargo xtask check`. The
//! JSON format has a version; [`FORMAT_VERSION`] is the one the pinned `public-api` reads,
//! and another one (a newer or older toolchain) is reported as such rather than misread.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::cargo;
use crate::error::Error;

/// The library crates whose public API is committed, by library name (see [`package`]).
const CRATES: &[&str] = &[
    "fact-model",
    "fact-store",
    "fact-store-sql",
    "fact-store-sqlite",
    "fact-store-postgres",
    "fact-extract",
    "fact-retrieve",
    "ledger",
    "dispatch-runtime",
];

/// The snapshot folder, relative to the workspace root.
const SNAPSHOT_DIR: &str = "xtask/public-api";

/// The rustdoc JSON format version `public-api` 0.52.1 reads (through `rustdoc-types`
/// 0.57), which is what the stable toolchain 1.95 writes.
const FORMAT_VERSION: u64 = 57;

/// What to do after the rendering: compare with the snapshots or rewrite them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Fail listing the differences.
    Compare,
    /// Rewrite the snapshots.
    Bless,
}

/// Entry point of `cargo xtask public-api`.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let (mode, crates) = parse_args(args)?;
    match mode {
        Mode::Compare => compare(&crates),
        Mode::Bless => bless(&crates),
    }
}

/// The `cargo xtask check` step: every crate's public API equals its snapshot, and no
/// snapshot is left of a crate that is no longer listed.
pub(crate) fn check() -> Result<(), Error> {
    compare(CRATES)
}

/// Parses `[--bless] [CRATE...]`; no crate named means all of [`CRATES`].
fn parse_args(args: &[String]) -> Result<(Mode, Vec<&'static str>), Error> {
    let mut mode = Mode::Compare;
    let mut crates = Vec::new();
    for arg in args {
        if arg == "--bless" {
            mode = Mode::Bless;
        } else if let Some(name) = CRATES.iter().find(|name| **name == arg.as_str()) {
            if !crates.contains(name) {
                crates.push(*name);
            }
        } else {
            return Err(Error::Usage(format!(
                "`public-api` takes `--bless` and crate names ({}), got `{arg}`",
                CRATES.join(", ")
            )));
        }
    }
    if crates.is_empty() {
        crates = CRATES.to_vec();
    }
    Ok((mode, crates))
}

/// Compares the rendered API of `crates` with their snapshots; with all of [`CRATES`], also
/// fails on snapshot files no listed crate owns.
fn compare(crates: &[&str]) -> Result<(), Error> {
    let start = Instant::now();
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let target = target_dir()?;
    let mut problems = Vec::new();
    for krate in crates {
        let current = current_api(krate, &target)?;
        let path = snapshot_path(&root, krate);
        match std::fs::read_to_string(&path) {
            Ok(committed) => {
                if let Some(report) = report_changes(&snapshot_name(krate), &committed, &current) {
                    problems.push(report);
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => problems.push(format!(
                "{}: missing (the crate has {} public items)",
                snapshot_name(krate),
                current.lines().count() - header(krate).lines().count()
            )),
            Err(err) => {
                return Err(Error::Failed(format!(
                    "cannot read {}: {err}",
                    path.display()
                )));
            }
        }
    }
    if crates.len() == CRATES.len() {
        for stale in stale_snapshots(&root)? {
            problems.push(format!(
                "{SNAPSHOT_DIR}/{stale}: no crate of that name is listed; delete it \
                 (`--bless` does)"
            ));
        }
    }
    if problems.is_empty() {
        eprintln!(
            "public API of {} crate(s) matches {SNAPSHOT_DIR} ({:.1}s)",
            crates.len(),
            start.elapsed().as_secs_f64()
        );
        Ok(())
    } else {
        Err(Error::Failed(format!(
            "the public API differs from its snapshot:\n\n{}\n\nIf the change is intended, run \
             `cargo xtask public-api --bless` and commit {SNAPSHOT_DIR}.",
            problems.join("\n\n")
        )))
    }
}

/// Rewrites the snapshots of `crates`; with all of [`CRATES`], also deletes snapshot files
/// no listed crate owns.
fn bless(crates: &[&str]) -> Result<(), Error> {
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let target = target_dir()?;
    let dir = root.join(SNAPSHOT_DIR);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Failed(format!("cannot create {}: {e}", dir.display())))?;
    for krate in crates {
        let current = current_api(krate, &target)?;
        let path = snapshot_path(&root, krate);
        let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == current);
        if unchanged {
            eprintln!("{}: unchanged", snapshot_name(krate));
        } else {
            std::fs::write(&path, &current)
                .map_err(|e| Error::Failed(format!("cannot write {}: {e}", path.display())))?;
            eprintln!("{}: written", snapshot_name(krate));
        }
    }
    if crates.len() == CRATES.len() {
        for stale in stale_snapshots(&root)? {
            let path = dir.join(&stale);
            std::fs::remove_file(&path)
                .map_err(|e| Error::Failed(format!("cannot delete {}: {e}", path.display())))?;
            eprintln!("{SNAPSHOT_DIR}/{stale}: deleted (no crate of that name is listed)");
        }
    }
    Ok(())
}

/// The snapshot file of `krate`.
fn snapshot_path(root: &Path, krate: &str) -> PathBuf {
    root.join(SNAPSHOT_DIR).join(format!("{krate}.txt"))
}

/// The snapshot file of `krate` as messages name it, relative to the workspace root.
fn snapshot_name(krate: &str) -> String {
    format!("{SNAPSHOT_DIR}/{krate}.txt")
}

/// The `.txt` files of the snapshot folder that belong to no crate of [`CRATES`], sorted.
fn stale_snapshots(root: &Path) -> Result<Vec<String>, Error> {
    let dir = root.join(SNAPSHOT_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(Error::Failed(format!(
                "cannot read {}: {err}",
                dir.display()
            )));
        }
    };
    let mut stale = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| Error::Failed(format!("cannot read {}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let owned = name
            .strip_suffix(".txt")
            .is_some_and(|krate| CRATES.contains(&krate));
        if name.ends_with(".txt") && !owned {
            stale.push(name);
        }
    }
    stale.sort();
    Ok(stale)
}

/// The target directory of this step: `public-api` inside the workspace's target directory
/// (as `cargo metadata` reports it, so `CARGO_TARGET_DIR` and `build.target-dir` count).
fn target_dir() -> Result<PathBuf, Error> {
    let output = cargo::command(&["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .map_err(Error::Failed)?
        .output()
        .map_err(|e| Error::Failed(format!("cannot run `cargo metadata`: {e}")))?;
    if !output.status.success() {
        return Err(Error::Failed(format!(
            "`cargo metadata` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| Error::Failed(format!("`cargo metadata` printed invalid JSON: {e}")))?;
    let target = metadata
        .get("target_directory")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Failed("`cargo metadata` names no target_directory".into()))?;
    Ok(Path::new(target).join("public-api"))
}

/// The package of the library `krate`: its name, except where crates.io already had it.
fn package(krate: &str) -> &str {
    match krate {
        "ledger" => "factmem-ledger",
        other => other,
    }
}

/// Builds the rustdoc JSON of `krate` (all features) in `target` and renders it.
fn current_api(krate: &str, target: &Path) -> Result<String, Error> {
    let target_arg = target.to_str().ok_or_else(|| {
        Error::Failed(format!(
            "the target directory {} is not UTF-8",
            target.display()
        ))
    })?;
    // Cargo's own `--output-format json` (rather than passing it to rustdoc after `--`)
    // lets cargo know the output file, so an unchanged crate is not documented again.
    let args = [
        "rustdoc",
        "-Zunstable-options",
        "--output-format",
        "json",
        "--package",
        package(krate),
        "--lib",
        "--all-features",
        "--locked",
        "--target-dir",
        target_arg,
    ];
    let mut command = cargo::command(&args).map_err(Error::Failed)?;
    // Unlocks `--output-format json` on a stable toolchain. Flags from the caller's
    // environment would make the snapshot depend on who runs it, so none pass.
    command
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTDOCFLAGS")
        .env_remove("CARGO_ENCODED_RUSTDOCFLAGS");
    let status = command
        .status()
        .map_err(|e| Error::Failed(format!("cannot run `cargo rustdoc` for {krate}: {e}")))?;
    if !status.success() {
        return Err(Error::Failed(format!(
            "`RUSTC_BOOTSTRAP=1 cargo {}` failed ({status})",
            args.join(" ")
        )));
    }
    let json = target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    render(krate, &json).map_err(Error::Failed)
}

/// Renders the rustdoc JSON file `json` of `krate` as its snapshot text: two comment
/// lines, then one line per public item, each line ending in a newline.
fn render(krate: &str, json: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| format!("cannot read the rustdoc JSON {}: {e}", json.display()))?;
    let document: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not rustdoc JSON: {e}", json.display()))?;
    let format_version = document
        .get("format_version")
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            format!(
                "{} is not rustdoc JSON: no `format_version` number",
                json.display()
            )
        })?;
    if format_version != FORMAT_VERSION {
        return Err(format!(
            "{} has rustdoc JSON format version {format_version}, but the pinned `public-api` \
             reads version {FORMAT_VERSION} (what the stable toolchain 1.95 writes); run with \
             that toolchain, or move xtask's `public-api` dependency to a version that reads \
             {format_version}",
            json.display()
        ));
    }
    let api = public_api::Builder::from_rustdoc_json(json)
        .omit_blanket_impls(true)
        .build()
        .map_err(|e| format!("cannot read the public API in {}: {e}", json.display()))?;
    let mut out = header(krate);
    for item in api.items() {
        let line = item.to_string();
        out.push_str(&line);
        // A re-export of another crate's item is rendered by its path here alone; name what
        // it re-exports, so pointing it at another item is a visible change too.
        if line.starts_with("pub use ")
            && let Some(source) = reexport_source(&document, item.id().0)
        {
            out.push_str(" (from ");
            out.push_str(source);
            out.push(')');
        }
        out.push('\n');
    }
    Ok(out)
}

/// The comment lines a snapshot starts with.
fn header(krate: &str) -> String {
    format!(
        "# The public API of `{krate}` with all features, one item per line.\n\
         # Written by `cargo xtask public-api --bless`; `cargo xtask check` compares.\n"
    )
}

/// The path a `pub use` item names in the source (`fact_store::AddReport`), if the item
/// `id` of the rustdoc JSON `document` is a re-export.
fn reexport_source(document: &Value, id: u32) -> Option<&str> {
    document
        .get("index")?
        .get(id.to_string())?
        .get("inner")?
        .get("use")?
        .get("source")?
        .as_str()
}

/// One line of difference between a snapshot and the current API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change<'a> {
    /// In the snapshot, no longer in the API.
    Removed(&'a str),
    /// In the API, not yet in the snapshot.
    Added(&'a str),
}

impl std::fmt::Display for Change<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Removed(line) => write!(f, "-{line}"),
            Change::Added(line) => write!(f, "+{line}"),
        }
    }
}

/// `None` when `committed` and `current` have the same lines (line endings aside);
/// otherwise the report for `name`: a count, then the changed lines, `-` removed and
/// `+` added, in file order.
fn report_changes(name: &str, committed: &str, current: &str) -> Option<String> {
    let old: Vec<&str> = committed.lines().collect();
    let new: Vec<&str> = current.lines().collect();
    let changes = diff(&old, &new);
    if changes.is_empty() {
        return None;
    }
    let removed = changes
        .iter()
        .filter(|change| matches!(change, Change::Removed(_)))
        .count();
    let added = changes.len() - removed;
    let mut report = format!("{name}: {removed} line(s) removed, {added} added");
    for change in &changes {
        report.push('\n');
        report.push_str(&change.to_string());
    }
    Some(report)
}

/// Above this many cells (old lines x new lines, after the common head and tail are set
/// aside) the middle is reported as all removed then all added, not aligned line by line.
const MAX_DIFF_CELLS: usize = 4_000_000;

/// The lines to remove from `old` and add to make `new`, in order: a longest common
/// subsequence diff, a removal before the addition that replaces it.
fn diff<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Change<'a>> {
    let head = old
        .iter()
        .zip(new)
        .take_while(|(old, new)| old == new)
        .count();
    let (old, new) = (
        old.get(head..).unwrap_or(&[]),
        new.get(head..).unwrap_or(&[]),
    );
    let tail = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(old, new)| old == new)
        .count();
    let old = old.get(..old.len() - tail).unwrap_or(&[]);
    let new = new.get(..new.len() - tail).unwrap_or(&[]);
    if old.len().saturating_mul(new.len()) > MAX_DIFF_CELLS {
        let removed = old.iter().map(|line| Change::Removed(line));
        return removed
            .chain(new.iter().map(|line| Change::Added(line)))
            .collect();
    }
    // lcs[i * width + j]: the length of a longest common subsequence of old[i..] and new[j..].
    let width = new.len() + 1;
    let mut lcs = vec![0u32; (old.len() + 1) * width];
    let at = |lcs: &[u32], i: usize, j: usize| lcs.get(i * width + j).copied().unwrap_or(0);
    for (i, old_line) in old.iter().enumerate().rev() {
        for (j, new_line) in new.iter().enumerate().rev() {
            let value = if old_line == new_line {
                at(&lcs, i + 1, j + 1) + 1
            } else {
                at(&lcs, i + 1, j).max(at(&lcs, i, j + 1))
            };
            if let Some(cell) = lcs.get_mut(i * width + j) {
                *cell = value;
            }
        }
    }
    let mut changes = Vec::new();
    let (mut i, mut j) = (0, 0);
    while let (Some(old_line), Some(new_line)) = (old.get(i), new.get(j)) {
        if old_line == new_line {
            i += 1;
            j += 1;
        } else if at(&lcs, i + 1, j) >= at(&lcs, i, j + 1) {
            changes.push(Change::Removed(old_line));
            i += 1;
        } else {
            changes.push(Change::Added(new_line));
            j += 1;
        }
    }
    changes.extend(old.iter().skip(i).map(|line| Change::Removed(line)));
    changes.extend(new.iter().skip(j).map(|line| Change::Added(line)));
    changes
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )]

    use serde_json::{Value, json};

    use super::*;

    /// One item of the fixture crate `demo`, in rustdoc JSON format 57.
    fn item(id: u32, name: &str, inner: Value) -> Value {
        json!({
            "id": id, "crate_id": 0, "name": name, "span": null, "visibility": "public",
            "docs": null, "links": {}, "attrs": [], "deprecation": null, "inner": inner,
        })
    }

    /// `pub fn add(a: T, b: T) -> T` for the primitive `T`.
    fn add(primitive: &str) -> Value {
        let ty = json!({ "primitive": primitive });
        json!({ "function": {
            "sig": { "inputs": [["a", ty], ["b", ty]], "output": ty, "is_c_variadic": false },
            "generics": { "params": [], "where_predicates": [] },
            "header": { "is_const": false, "is_unsafe": false, "is_async": false, "abi": "Rust" },
            "has_body": true,
        }})
    }

    /// The rustdoc JSON of a crate `demo`: `pub fn add(a: T, b: T) -> T` and
    /// `pub struct Point { pub x: i32, y: i32 }` (the field `y` private), as rustdoc 1.95
    /// writes it with the impls left out.
    fn fixture(add_type: &str, format_version: u64) -> Value {
        let module =
            json!({ "module": { "is_crate": true, "items": [3, 0, 50], "is_stripped": false } });
        let point = json!({ "struct": {
            "kind": { "plain": { "fields": [1], "has_stripped_fields": true } },
            "generics": { "params": [], "where_predicates": [] },
            "impls": [],
        }});
        // `pub use core::cmp::Ordering;`: a re-export of another crate's item.
        let mut reexport = item(
            50,
            "",
            json!({ "use": {
                "source": "core::cmp::Ordering", "name": "Ordering", "id": 51, "is_glob": false,
            }}),
        );
        reexport["name"] = Value::Null;
        let path = |path: &[&str], kind: &str| json!({ "crate_id": 0, "path": path, "kind": kind });
        json!({
            "root": 45,
            "crate_version": "0.1.0",
            "includes_private": false,
            "index": {
                "0": item(0, "add", add(add_type)),
                "1": item(1, "x", json!({ "struct_field": { "primitive": "i32" } })),
                "3": item(3, "Point", point),
                "45": item(45, "demo", module),
                "50": reexport,
            },
            "paths": {
                "0": path(&["demo", "add"], "function"),
                "3": path(&["demo", "Point"], "struct"),
                "45": path(&["demo"], "module"),
                "51": { "crate_id": 1, "path": ["core", "cmp", "Ordering"], "kind": "enum" },
            },
            "external_crates": {
                "1": { "name": "core", "html_root_url": null, "path": "libcore.rmeta" },
            },
            "target": { "triple": "x86_64-unknown-linux-gnu", "target_features": [] },
            "format_version": format_version,
        })
    }

    /// Renders `json` as the snapshot of `demo`, through a file as the real step does.
    fn render_value(json: &Value) -> Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.json");
        std::fs::write(&path, json.to_string()).unwrap();
        render("demo", &path)
    }

    fn strs(lines: &[&'static str]) -> Vec<&'static str> {
        lines.to_vec()
    }

    #[test]
    fn render_lists_each_public_item_once_per_line_in_path_order() {
        let text = render_value(&fixture("u32", FORMAT_VERSION)).unwrap();
        assert_eq!(
            text,
            "# The public API of `demo` with all features, one item per line.\n\
             # Written by `cargo xtask public-api --bless`; `cargo xtask check` compares.\n\
             pub mod demo\n\
             pub use demo::Ordering (from core::cmp::Ordering)\n\
             pub struct demo::Point\n\
             pub demo::Point::x: i32\n\
             pub fn demo::add(u32, u32) -> u32\n"
        );
    }

    #[test]
    fn render_is_deterministic_and_independent_of_item_order() {
        let first = render_value(&fixture("u32", FORMAT_VERSION)).unwrap();
        let mut reordered = fixture("u32", FORMAT_VERSION);
        reordered["index"]["45"]["inner"]["module"]["items"] = json!([50, 0, 3]);
        assert_eq!(render_value(&reordered).unwrap(), first);
    }

    #[test]
    fn render_rejects_another_format_version_naming_both() {
        let error = render_value(&fixture("u32", 60)).unwrap_err();
        assert!(error.contains("format version 60"), "{error}");
        assert!(error.contains("reads version 57"), "{error}");
    }

    #[test]
    fn render_rejects_what_is_not_rustdoc_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("demo.json");
        std::fs::write(&path, "{\"format_version\": 57, \"index\": [").unwrap();
        let error = render("demo", &path).unwrap_err();
        assert!(error.contains("is not rustdoc JSON"), "{error}");

        std::fs::write(&path, "{\"format_version\": 57}").unwrap();
        let error = render("demo", &path).unwrap_err();
        assert!(error.contains("cannot read the public API"), "{error}");

        let error = render("demo", &dir.path().join("missing.json")).unwrap_err();
        assert!(error.contains("cannot read the rustdoc JSON"), "{error}");
    }

    #[test]
    fn a_changed_signature_is_reported_as_adjacent_removal_and_addition() {
        let old = render_value(&fixture("u32", FORMAT_VERSION)).unwrap();
        let new = render_value(&fixture("u64", FORMAT_VERSION)).unwrap();
        let report = report_changes("demo.txt", &old, &new).unwrap();
        assert_eq!(
            report,
            "demo.txt: 1 line(s) removed, 1 added\n\
             -pub fn demo::add(u32, u32) -> u32\n\
             +pub fn demo::add(u64, u64) -> u64"
        );
        assert_eq!(report_changes("demo.txt", &old, &old), None);
    }

    #[test]
    fn a_reexport_pointed_elsewhere_is_a_change() {
        let old = render_value(&fixture("u32", FORMAT_VERSION)).unwrap();
        let mut moved = fixture("u32", FORMAT_VERSION);
        moved["index"]["50"]["inner"]["use"]["source"] = json!("std::cmp::Ordering");
        let new = render_value(&moved).unwrap();
        assert_eq!(
            report_changes("demo.txt", &old, &new).unwrap(),
            "demo.txt: 1 line(s) removed, 1 added\n\
             -pub use demo::Ordering (from core::cmp::Ordering)\n\
             +pub use demo::Ordering (from std::cmp::Ordering)"
        );
    }

    #[test]
    fn line_endings_do_not_count_as_changes() {
        assert_eq!(report_changes("x", "a\r\nb\r\n", "a\nb\n"), None);
        assert_eq!(report_changes("x", "a\nb", "a\nb\n"), None);
    }

    #[test]
    fn diff_aligns_common_lines_and_keeps_file_order() {
        use Change::{Added, Removed};
        let old = strs(&["a", "b", "c", "d", "e"]);
        let new = strs(&["a", "c", "x", "d", "e", "f"]);
        assert_eq!(diff(&old, &new), vec![Removed("b"), Added("x"), Added("f")]);
        assert_eq!(diff(&old, &old), vec![]);
        assert_eq!(diff(&[], &strs(&["a", "b"])), vec![Added("a"), Added("b")]);
        assert_eq!(
            diff(&strs(&["a", "b"]), &[]),
            vec![Removed("a"), Removed("b")]
        );
        // A replaced line: the removal comes first.
        assert_eq!(
            diff(&strs(&["a", "b", "c"]), &strs(&["a", "B", "c"])),
            vec![Removed("b"), Added("B")]
        );
        // Repeated lines are counted, not merged.
        assert_eq!(
            diff(&strs(&["a", "a", "b"]), &strs(&["a", "b", "b"])),
            vec![Removed("a"), Added("b")]
        );
    }

    #[test]
    fn a_huge_middle_is_reported_whole_without_alignment() {
        let old: Vec<String> = (0..2_001).map(|i| format!("old {i}")).collect();
        let new: Vec<String> = (0..2_001).map(|i| format!("new {i}")).collect();
        let old: Vec<&str> = std::iter::once("head")
            .chain(old.iter().map(String::as_str))
            .chain(std::iter::once("tail"))
            .collect();
        let new: Vec<&str> = std::iter::once("head")
            .chain(new.iter().map(String::as_str))
            .chain(std::iter::once("tail"))
            .collect();
        let changes = diff(&old, &new);
        assert_eq!(changes.len(), 4_002);
        assert_eq!(changes[0], Change::Removed("old 0"));
        assert_eq!(changes[2_000], Change::Removed("old 2000"));
        assert_eq!(changes[2_001], Change::Added("new 0"));
        assert_eq!(changes[4_001], Change::Added("new 2000"));
    }

    #[test]
    fn arguments_select_the_mode_and_crates() {
        let args = |list: &[&str]| list.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(parse_args(&[]).unwrap(), (Mode::Compare, CRATES.to_vec()));
        assert_eq!(
            parse_args(&args(&["ledger", "--bless", "ledger"])).unwrap(),
            (Mode::Bless, vec!["ledger"])
        );
        match parse_args(&args(&["facts"])) {
            Err(Error::Usage(message)) => assert!(message.contains("`facts`"), "{message}"),
            other => panic!("expected a usage error, got {other:?}"),
        }
        assert!(matches!(
            parse_args(&args(&["--bles"])),
            Err(Error::Usage(_))
        ));
    }

    /// Every library crate under `crates/` has a snapshot, except the front ends' internal
    /// libraries: the `facts` binary's, and the Python package's extension module (its API
    /// is Python's, checked by its tests and stubs); a new crate cannot be left out by
    /// accident.
    #[test]
    fn every_library_crate_is_listed() {
        let root = cargo::workspace_root().unwrap();
        let mut libraries: Vec<String> = std::fs::read_dir(root.join("crates"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.join("src/lib.rs").is_file())
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|name| name != "facts" && name != "factmem-python")
            .collect();
        libraries.sort();
        let mut listed: Vec<&str> = CRATES.to_vec();
        listed.sort_unstable();
        assert_eq!(libraries, listed);
    }

    #[test]
    fn stale_snapshots_are_the_txt_files_of_no_listed_crate() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = dir.path().join(SNAPSHOT_DIR);
        assert_eq!(stale_snapshots(dir.path()).unwrap(), Vec::<String>::new());
        std::fs::create_dir_all(&snapshots).unwrap();
        for name in ["ledger.txt", "old-crate.txt", "README.md", "facts.txt"] {
            std::fs::write(snapshots.join(name), "").unwrap();
        }
        assert_eq!(
            stale_snapshots(dir.path()).unwrap(),
            vec!["facts.txt", "old-crate.txt"]
        );
    }
}

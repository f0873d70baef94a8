//! Ledger benchmarks: parsing a generated 1,000-task tasks.md, and a cache hit on an
//! unchanged file. Run with `cargo bench -p factmem-ledger`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use divan::Bencher;
use ledger::{Fingerprint, LedgerCache, ProgressLedger, parse_tasks};

fn main() {
    divan::main();
}

/// A tasks.md of `n` tasks shaped like the real ones: a metadata block and a long
/// `_Prompt:` per task, every tenth prompt in the multi-line `|` form with blank lines.
fn tasks_md(n: usize) -> String {
    let mut out = String::from("# Tasks: Generated\n\n");
    for i in 1..=n {
        let mark = match i % 3 {
            0 => "x",
            1 => " ",
            _ => "-",
        };
        out.push_str(&format!(
            "- [{mark}] {i}. Implement component number {i} of the generated spec\n"
        ));
        out.push_str(&format!(
            "  - File: src/generated/component_{i}.rs, src/generated/mod.rs\n"
        ));
        out.push_str("  - Add the component with its tests and wire it into the module\n");
        out.push_str(&format!("  - Purpose: Provide component {i}\n"));
        out.push_str("  - _Leverage: src/generated/mod.rs, src/core/types.rs_\n");
        out.push_str(&format!(
            "  - _Requirements: {}.1, {}.2_\n",
            i % 7 + 1,
            i % 5 + 1
        ));
        if i % 10 == 0 {
            out.push_str("  - _Prompt: |\n      Implement the task for spec generated, first call get-implementer-guide:\n\n");
            out.push_str("      Role: Rust Developer specializing in components\n\n");
            out.push_str(&format!(
                "      Task: Implement component {i} following the design document.\n\n"
            ));
            out.push_str(
                "      Restrictions: No new dependencies.\n\n      Success: All tests pass._\n\n",
            );
        } else {
            out.push_str(&format!(
                "  - _Prompt: Implement the task for spec generated, first call get-implementer-guide to load \
                 implementation rules then implement the task: Role: Rust Developer | Task: Implement component {i} \
                 following the design document, with tests first | Restrictions: No new dependencies, keep the public \
                 API small | Success: All tests pass and clippy is clean | Instructions: Mark this ONE task as [-] in \
                 tasks.md before starting, and [x] when done._\n\n"
            ));
        }
    }
    out
}

#[divan::bench(sample_count = 200)]
fn parse_1000_tasks(bencher: Bencher<'_, '_>) {
    let text = tasks_md(1_000);
    assert_eq!(parse_tasks(&text).0.len(), 1_000);
    bencher.bench_local(|| parse_tasks(divan::black_box(&text)));
}

#[divan::bench(sample_count = 200)]
fn compile_progress_ledger_1000_tasks(bencher: Bencher<'_, '_>) {
    let text = tasks_md(1_000);
    bencher.bench_local(|| {
        ProgressLedger::from_text(
            "generated",
            "tasks.md",
            divan::black_box(&text),
            Fingerprint::of(text.as_bytes(), None),
        )
    });
}

#[divan::bench(sample_count = 1000)]
fn cache_hit_unchanged_file(bencher: Bencher<'_, '_>) {
    let dir = std::env::temp_dir().join(format!("ledger-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tasks.md");
    std::fs::write(&path, tasks_md(1_000)).unwrap();
    // A file written a while ago: the cache trusts its size and mtime only once settled.
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let cache = LedgerCache::default();
    cache.load("generated", &path).unwrap();
    assert_eq!(
        cache.load("generated", &path).unwrap().1,
        ledger::Freshness::Hit
    );
    bencher.bench_local(|| cache.load("generated", divan::black_box(&path)));
    assert_eq!(cache.rebuilds(), 1, "every measured load was a hit");
    let _ = std::fs::remove_dir_all(&dir);
}

//! `cargo xtask bench-ref --facts N [--queries Q] [--runs R]`: our memory side by side with
//! the TypeScript reference tracker, on one workload, in one run (issue 12).
//!
//! ```sh
//! cargo xtask bench-ref --facts 10000             # 200 queries, medians of 3 runs
//! cargo xtask bench-ref --facts 100000 --runs 1
//! ```
//!
//! 1. The workload is written once into a temporary directory with
//!    `python3 ../shared/bench/dispatch_workload.py --facts N --queries Q` (relative to the
//!    workspace root; a clear error when python3 or the script is missing).
//! 2. Each run starts our harness, then the reference, on that same file:
//!    - **ours** (`factmem`) is this binary, optimized, in a process of its own (`bench-ref
//!      --harness WORKLOAD`, hidden), so its peak RSS is its own. It does what the
//!      reference's `bench.ts` does: parses every line first, outside the timing; extracts
//!      every result with the default rule extractor and adds its facts to an
//!      `InMemorySessionFactStore` with unbounded capacity and history and no automatic
//!      compaction (the reference's capacity is 1e9), timing the whole loop
//!      (`add_us_per_result` = total / results; the extraction's `settles` are not
//!      applied, as the reference has none); then retrieves and formats every query with
//!      the `IndexRetriever` defaults (BM25, at most 10 facts, 500 tokens), timing each
//!      (`p50_us`, `p95_us`: the sorted times at `len / 2` and `len * 0.95`, as the
//!      reference indexes them). `valid` is the store's valid facts, `chars` the total
//!      characters of the formatted `[Session Context]` sections. `heap_mb` is every heap
//!      byte the process holds right after ingest (the parsed workload too, as the
//!      reference's `heapUsed` includes it), counted by a global allocator that only
//!      counts in the harness; `store_heap_mb` is the part allocated since the store was
//!      created; `peak_rss_mb` is `VmHWM` of `/proc/self/status` at the end. MB are
//!      10^6 bytes, as the reference's. It also tells stderr how many versions the store
//!      holds and its heap per stored version. With `--harness WORKLOAD --no-heap` it does
//!      not count (the heap figures are null), to check what counting costs the timings
//!      (within run-to-run noise when this was written).
//!    - **the reference** (`ts-ref`) is `../shared/bench/ts-ref/run.sh WORKLOAD`, run under
//!      `/usr/bin/time -f %M` for its peak RSS (the last line of its stderr, KiB), or, when
//!      that is missing, under `python3` reading `getrusage(RUSAGE_CHILDREN)`. It is run
//!      once on a tiny workload first, so that installing and bundling it (on a first use)
//!      is neither timed nor counted in its RSS. When node or the script is missing, this
//!      says so and prints ours alone.
//! 3. Prints (stdout) one JSON line per system with the reference's keys (`system,
//!    results, valid, add_us_per_result, p50_us, p95_us, heap_mb, chars`) plus
//!    `peak_rss_mb` (ours also `store_heap_mb`), each figure the median over the runs;
//!    then one line of ratios: `extract_add_speedup`, `p50_speedup` and `p95_speedup`
//!    (reference time / ours), `rss_ratio` (our peak RSS / the reference's), the number
//!    of runs and how the reference's RSS was measured. Progress goes to stderr.
//!
//! A debug `cargo xtask` re-runs itself with `--release`, as `eval` does.

// The counting allocator below forwards to the system allocator; that takes `unsafe`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use fact_extract::{FactExtractor, RuleBasedFactExtractor};
use fact_model::{DispatchResult, ManualClock};
use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};
use serde_json::Value;

use crate::cargo;
use crate::error::Error;

/// Counts the bytes currently allocated, while [`COUNTING`] is on.
struct Counting;

/// Whether [`Counting`] counts: only in the harness process, so other subcommands pay one
/// relaxed load per allocation.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated minus bytes freed since counting started (differences are meaningful,
/// the absolute value only from the start of the harness).
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Adds `delta` bytes to [`LIVE`] while counting.
fn count(delta: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The generator, relative to the workspace root.
const WORKLOAD_SCRIPT: &str = "../shared/bench/dispatch_workload.py";
/// The reference's runner, relative to the workspace root.
const REFERENCE_SCRIPT: &str = "../shared/bench/ts-ref/run.sh";
/// GNU time, for the reference's peak RSS.
const GNU_TIME: &str = "/usr/bin/time";
/// The fallback: runs the command and prints the children's peak RSS (KiB) to stderr.
const RUSAGE_PY: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:])\n\
sys.stderr.write('%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
sys.exit(r.returncode)";

/// Keys of a system's line, in the reference's order, then ours.
const KEYS: &[&str] = &[
    "system",
    "results",
    "valid",
    "add_us_per_result",
    "p50_us",
    "p95_us",
    "heap_mb",
    "chars",
    "peak_rss_mb",
    "store_heap_mb",
];
/// The keys whose value is the median over the runs; the others come from the first run
/// (they are the same in every run).
const MEDIAN_KEYS: &[&str] = &[
    "add_us_per_result",
    "p50_us",
    "p95_us",
    "heap_mb",
    "peak_rss_mb",
    "store_heap_mb",
];

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Compare the two systems.
    Compare(Options),
    /// The hidden harness: measure ours on one workload file, print one JSON line; the
    /// flag is whether to count the heap (`--no-heap` turns it off, to see what counting
    /// costs the timings).
    Harness(PathBuf, bool),
}

/// The comparison's parameters.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    facts: usize,
    queries: usize,
    runs: usize,
}

fn parse(args: &[String]) -> Result<Mode, Error> {
    let usage = |message: String| Error::Usage(message);
    if let Some((first, rest)) = args.split_first()
        && first == "--harness"
    {
        return match rest {
            [path] => Ok(Mode::Harness(PathBuf::from(path), true)),
            [path, flag] if flag == "--no-heap" => Ok(Mode::Harness(PathBuf::from(path), false)),
            _ => Err(usage(
                "`bench-ref --harness WORKLOAD [--no-heap]` takes one path".into(),
            )),
        };
    }
    let mut facts = None;
    let mut options = Options {
        facts: 0,
        queries: 200,
        runs: 3,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--facts" => &mut options.facts,
            "--queries" => &mut options.queries,
            "--runs" => &mut options.runs,
            other => return Err(usage(format!("unknown flag `{other}`"))),
        };
        let value = args
            .next()
            .ok_or_else(|| usage(format!("`{flag}` needs a value")))?;
        *slot = value
            .replace('_', "")
            .parse::<usize>()
            .map_err(|_| usage(format!("`{flag}` takes a whole number, not `{value}`")))?;
        if flag == "--facts" {
            facts = Some(*slot);
        }
    }
    if facts.is_none() {
        return Err(usage("`bench-ref` needs `--facts N`".into()));
    }
    if options.facts == 0 || options.queries == 0 || options.runs == 0 {
        return Err(usage(
            "`--facts`, `--queries` and `--runs` must be at least 1".into(),
        ));
    }
    Ok(Mode::Compare(options))
}

/// Entry point of `cargo xtask bench-ref`.
pub(crate) fn run(args: &[String]) -> Result<(), Error> {
    let options = match parse(args)? {
        Mode::Harness(path, count_heap) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::Failed(format!("cannot read {}: {e}", path.display())))?;
            let line = harness(&text, count_heap)?;
            return print_line(&line);
        }
        Mode::Compare(options) => options,
    };
    if let Some(outcome) = cargo::rerun_in_release("bench-ref", args) {
        return outcome;
    }
    compare(&options)
}

/// Writes the workload, runs both systems `options.runs` times, prints the lines.
fn compare(options: &Options) -> Result<(), Error> {
    let root = cargo::workspace_root().map_err(Error::Failed)?;
    let dir = tempfile::TempDir::new()
        .map_err(|e| Error::Failed(format!("cannot make a temporary directory: {e}")))?;
    let workload = dir.path().join("workload.jsonl");
    eprintln!(
        "bench-ref: writing the workload (--facts {} --queries {})",
        options.facts, options.queries
    );
    write_workload(&root, options.facts, options.queries, &workload)?;

    let reference = reference_runner(&root);
    let reference = match reference {
        Ok(runner) => {
            eprintln!("bench-ref: warming the reference up on a tiny workload (install, bundle)");
            let tiny = dir.path().join("tiny.jsonl");
            write_workload(&root, 13, 1, &tiny)?;
            runner.run(&tiny)?;
            Some(runner)
        }
        Err(why) => {
            eprintln!("bench-ref: {why}; printing ours alone");
            None
        }
    };

    let me = std::env::current_exe()
        .map_err(|e| Error::Failed(format!("cannot find this executable: {e}")))?;
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for run in 1..=options.runs {
        eprintln!("bench-ref: run {run}/{}: factmem", options.runs);
        ours.push(run_ours(&me, &workload)?);
        if let Some(runner) = &reference {
            eprintln!("bench-ref: run {run}/{}: ts-ref", options.runs);
            theirs.push(runner.run(&workload)?);
        }
    }
    let ours = medians(&ours);
    print_line(&ours)?;
    if let Some(runner) = &reference {
        let theirs = medians(&theirs);
        print_line(&theirs)?;
        let mut line = ratios(&ours, &theirs);
        line.push(("runs", options.runs.into()));
        line.push(("reference_rss_by", runner.rss_by.label().into()));
        print_line(&line)?;
    }
    Ok(())
}

/// Runs the generator into `out`.
fn write_workload(root: &Path, facts: usize, queries: usize, out: &Path) -> Result<(), Error> {
    let script = root.join(WORKLOAD_SCRIPT);
    if !script.is_file() {
        return Err(Error::Failed(format!(
            "the workload generator {} is missing (it lives in ../shared/bench beside the \
             checkout)",
            script.display()
        )));
    }
    let file = std::fs::File::create(out)
        .map_err(|e| Error::Failed(format!("cannot create {}: {e}", out.display())))?;
    let status = Command::new("python3")
        .arg(&script)
        .args([
            "--facts",
            &facts.to_string(),
            "--queries",
            &queries.to_string(),
        ])
        .stdout(file)
        .status()
        .map_err(|e| {
            Error::Failed(format!(
                "cannot run python3 (needed for {WORKLOAD_SCRIPT}): {e}"
            ))
        })?;
    if !status.success() {
        return Err(Error::Failed(format!(
            "{WORKLOAD_SCRIPT} failed ({status})"
        )));
    }
    Ok(())
}

/// Our harness on `workload`, in a process of its own.
fn run_ours(me: &Path, workload: &Path) -> Result<Vec<(&'static str, Value)>, Error> {
    let output = Command::new(me)
        .arg("bench-ref")
        .arg("--harness")
        .arg(workload)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::Failed(format!("cannot start the harness: {e}")))?;
    if !output.status.success() {
        return Err(Error::Failed(format!(
            "the harness failed ({})",
            output.status
        )));
    }
    last_json_line(&output.stdout, "the harness")
}

/// How the reference's peak RSS is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RssBy {
    GnuTime,
    Rusage,
}

impl RssBy {
    fn label(self) -> &'static str {
        match self {
            RssBy::GnuTime => "/usr/bin/time -f %M",
            RssBy::Rusage => "python3 getrusage(RUSAGE_CHILDREN)",
        }
    }
}

/// The reference, ready to run.
struct Reference {
    script: PathBuf,
    rss_by: RssBy,
}

/// The reference's runner, or why it cannot run here.
fn reference_runner(root: &Path) -> Result<Reference, String> {
    let script = root.join(REFERENCE_SCRIPT);
    if !script.is_file() {
        return Err(format!("the reference {} is missing", script.display()));
    }
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !node.is_ok_and(|status| status.success()) {
        return Err("node is missing, so the TypeScript reference cannot run".into());
    }
    let rss_by = if Path::new(GNU_TIME).is_file() {
        RssBy::GnuTime
    } else {
        RssBy::Rusage
    };
    eprintln!("bench-ref: the reference's peak RSS by {}", rss_by.label());
    Ok(Reference { script, rss_by })
}

impl Reference {
    /// One run on `workload`: the reference's line plus `peak_rss_mb`.
    fn run(&self, workload: &Path) -> Result<Vec<(&'static str, Value)>, Error> {
        let mut command = match self.rss_by {
            RssBy::GnuTime => {
                let mut command = Command::new(GNU_TIME);
                command.args(["-f", "%M"]);
                command
            }
            RssBy::Rusage => {
                let mut command = Command::new("python3");
                command.args(["-c", RUSAGE_PY]);
                command
            }
        };
        let output = command
            .arg(&self.script)
            .arg(workload)
            .output()
            .map_err(|e| Error::Failed(format!("cannot start the reference: {e}")))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(Error::Failed(format!(
                "the reference failed ({}):\n{}",
                output.status,
                stderr.trim_end()
            )));
        }
        let mut line = last_json_line(&output.stdout, "the reference")?;
        let kib = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| l.trim().parse::<f64>().ok())
            .ok_or_else(|| {
                Error::Failed(format!(
                    "no peak RSS in the reference's stderr: {}",
                    stderr.trim_end()
                ))
            })?;
        line.push(("peak_rss_mb", round(kib * 1024.0 / 1e6, 2).into()));
        Ok(line)
    }
}

/// The last non-empty line of `stdout` as a JSON object, its keys in [`KEYS`] order.
fn last_json_line(stdout: &[u8], who: &str) -> Result<Vec<(&'static str, Value)>, Error> {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| Error::Failed(format!("{who} printed nothing")))?;
    let value: Value = serde_json::from_str(line)
        .map_err(|e| Error::Failed(format!("{who} printed `{line}`, not JSON: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| Error::Failed(format!("{who} printed `{line}`, not a JSON object")))?;
    Ok(KEYS
        .iter()
        .filter_map(|key| object.get(*key).map(|v| (*key, v.clone())))
        .collect())
}

/// One line from several runs' lines: the median of each of [`MEDIAN_KEYS`], the first
/// run's value of the others.
fn medians(runs: &[Vec<(&'static str, Value)>]) -> Vec<(&'static str, Value)> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .map(|(key, value)| {
            if !MEDIAN_KEYS.contains(key) {
                return (*key, value.clone());
            }
            let mut values: Vec<f64> = runs
                .iter()
                .filter_map(|run| get(run, key).and_then(Value::as_f64))
                .collect();
            if values.len() != runs.len() {
                return (*key, value.clone());
            }
            values.sort_by(f64::total_cmp);
            let mid = values.len() / 2;
            let median = if values.len() % 2 == 1 {
                values.get(mid).copied()
            } else {
                match (values.get(mid.wrapping_sub(1)), values.get(mid)) {
                    (Some(a), Some(b)) => Some((a + b) / 2.0),
                    _ => None,
                }
            };
            (*key, median.map_or(Value::Null, |m| round(m, 3).into()))
        })
        .collect()
}

/// The value of `key` in `line`.
fn get<'a>(line: &'a [(&'static str, Value)], key: &str) -> Option<&'a Value> {
    line.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// The ratios line: the reference's times over ours (speedups), our RSS over theirs.
fn ratios(
    ours: &[(&'static str, Value)],
    theirs: &[(&'static str, Value)],
) -> Vec<(&'static str, Value)> {
    let figure = |line: &[(&'static str, Value)], key: &str| get(line, key).and_then(Value::as_f64);
    let ratio = |top: Option<f64>, bottom: Option<f64>| match (top, bottom) {
        (Some(top), Some(bottom)) if bottom > 0.0 => round(top / bottom, 3).into(),
        _ => Value::Null,
    };
    let speedup = |key: &str| ratio(figure(theirs, key), figure(ours, key));
    vec![
        (
            "system",
            "ratios: ts-ref / factmem times, factmem / ts-ref RSS".into(),
        ),
        ("extract_add_speedup", speedup("add_us_per_result")),
        ("p50_speedup", speedup("p50_us")),
        ("p95_speedup", speedup("p95_us")),
        (
            "rss_ratio",
            ratio(figure(ours, "peak_rss_mb"), figure(theirs, "peak_rss_mb")),
        ),
    ]
}

/// Prints `line` as one JSON object, keys in the given order.
fn print_line(line: &[(&'static str, Value)]) -> Result<(), Error> {
    let text = render(line);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").map_err(|e| Error::Failed(format!("cannot write the result: {e}")))
}

/// `line` as one JSON object, keys in the given order.
fn render(line: &[(&'static str, Value)]) -> String {
    let fields: Vec<String> = line
        .iter()
        .map(|(key, value)| format!("{}:{value}", Value::from(*key)))
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// One parsed line of the workload.
enum Item {
    Result(String, DispatchResult),
    Query(FactQuery),
}

/// Parses the workload's JSON lines.
fn parse_workload(text: &str) -> Result<Vec<Item>, Error> {
    let mut items = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |what: String| Error::Failed(format!("workload line {}: {what}", number + 1));
        let mut value: Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let field =
            |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let task_id = field(&value, "task_id").ok_or_else(|| bad("no task_id".into()))?;
        let item = match (
            field(&value, "kind").as_deref(),
            field(&value, "role").as_deref(),
        ) {
            (Some("result"), Some(role)) => {
                let output = value
                    .get_mut("output")
                    .map(Value::take)
                    .ok_or_else(|| bad("a result without output".into()))?;
                match role {
                    "implementer" => Item::Result(
                        task_id,
                        DispatchResult::Implementer(
                            serde_json::from_value(output).map_err(|e| bad(e.to_string()))?,
                        ),
                    ),
                    "reviewer" => Item::Result(
                        task_id,
                        DispatchResult::Reviewer(
                            serde_json::from_value(output).map_err(|e| bad(e.to_string()))?,
                        ),
                    ),
                    other => return Err(bad(format!("unknown role `{other}`"))),
                }
            }
            (Some("query"), _) => {
                let text = field(&value, "task_description")
                    .ok_or_else(|| bad("a query without task_description".into()))?;
                Item::Query(FactQuery::new(task_id, text))
            }
            _ => return Err(bad("neither a result nor a query".into())),
        };
        items.push(item);
    }
    Ok(items)
}

/// Ours on a workload's text: our line (see the module docs), unrounded figures rounded.
fn harness(text: &str, count_heap: bool) -> Result<Vec<(&'static str, Value)>, Error> {
    COUNTING.store(count_heap, Ordering::SeqCst);
    let items = parse_workload(text)?;
    let before_store = LIVE.load(Ordering::SeqCst);

    let clock = Arc::new(ManualClock::default());
    let config = StoreConfig::default()
        .with_capacity(usize::MAX)
        .with_history_limit(usize::MAX)
        .with_auto_compact(false);
    let store: Arc<dyn SessionFactStore> =
        Arc::new(InMemorySessionFactStore::new(config, clock.clone()));
    let extractor = RuleBasedFactExtractor::with_defaults(clock.clone());
    let store_failed = |e: fact_store::StoreError| Error::Failed(format!("store: {e}"));
    let mut results = 0usize;
    let start = Instant::now();
    for item in &items {
        let extraction = match item {
            Item::Result(task, result) => extractor.extract(result, task),
            Item::Query(_) => continue,
        };
        store.add(extraction.facts).map_err(store_failed)?;
        results += 1;
        // Each result one second after the last, so versions are ordered as they came.
        clock.advance(Duration::from_secs(1));
    }
    let ingest = start.elapsed();
    let held = LIVE.load(Ordering::SeqCst);
    if results == 0 {
        return Err(Error::Failed("the workload has no results".into()));
    }

    let retriever = IndexRetriever::new(Arc::clone(&store));
    let mut times_us = Vec::new();
    let mut chars = 0usize;
    for item in &items {
        let Item::Query(query) = item else { continue };
        let start = Instant::now();
        let retrieval = retriever.retrieve(query).map_err(store_failed)?;
        times_us.push(start.elapsed().as_secs_f64() * 1e6);
        chars += retrieval.section.chars().count();
    }
    times_us.sort_by(f64::total_cmp);
    let at = |q: f64| {
        times_us
            .get(((times_us.len() as f64) * q) as usize)
            .map_or(Value::Null, |t| round(*t, 1).into())
    };
    let stored = store.stored_count().map_err(store_failed)?;
    let valid = store.valid_count().map_err(store_failed)?;
    eprintln!(
        "factmem: {stored} stored versions ({valid} valid); store heap {:.0} B per stored version",
        (held - before_store) as f64 / stored.max(1) as f64
    );
    let mb = |bytes: isize| {
        if count_heap {
            round(bytes as f64 / 1e6, 3).into()
        } else {
            Value::Null
        }
    };
    Ok(vec![
        ("system", "factmem".into()),
        ("results", results.into()),
        ("valid", valid.into()),
        (
            "add_us_per_result",
            round(ingest.as_secs_f64() * 1e6 / results as f64, 2).into(),
        ),
        ("p50_us", at(0.5)),
        ("p95_us", at(0.95)),
        ("heap_mb", mb(held)),
        ("chars", chars.into()),
        (
            "peak_rss_mb",
            peak_rss_mb().map_or(Value::Null, Value::from),
        ),
        ("store_heap_mb", mb(held - before_store)),
    ])
}

/// `VmHWM` of this process, in MB, when `/proc` tells.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(round(kib * 1024.0 / 1e6, 2))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use serde_json::json;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(
            parse(&args(&["--facts", "1_000"])).unwrap(),
            Mode::Compare(Options {
                facts: 1000,
                queries: 200,
                runs: 3
            })
        );
        assert_eq!(
            parse(&args(&["--runs", "1", "--facts", "10", "--queries", "5"])).unwrap(),
            Mode::Compare(Options {
                facts: 10,
                queries: 5,
                runs: 1
            })
        );
        assert_eq!(
            parse(&args(&["--harness", "w.jsonl"])).unwrap(),
            Mode::Harness("w.jsonl".into(), true)
        );
        assert_eq!(
            parse(&args(&["--harness", "w.jsonl", "--no-heap"])).unwrap(),
            Mode::Harness("w.jsonl".into(), false)
        );
        for bad in [
            &[][..],
            &["--queries", "5"],
            &["--facts"],
            &["--facts", "many"],
            &["--facts", "10", "--runs", "0"],
            &["--facts", "10", "--seed", "1"],
            &["--harness"],
            &["--harness", "a", "b"],
        ] {
            assert!(matches!(parse(&args(bad)), Err(Error::Usage(_))), "{bad:?}");
        }
    }

    #[test]
    fn ratios_and_medians() {
        let line = |add: f64, p50: f64, rss: f64| {
            vec![
                ("system", Value::from("x")),
                ("valid", 7.into()),
                ("add_us_per_result", add.into()),
                ("p50_us", p50.into()),
                ("p95_us", Value::Null),
                ("peak_rss_mb", rss.into()),
            ]
        };
        let ours = medians(&[
            line(40.0, 30.0, 6.0),
            line(30.0, 50.0, 5.0),
            line(35.0, 40.0, 9.0),
        ]);
        assert_eq!(ours, line(35.0, 40.0, 6.0));
        assert_eq!(
            medians(&[line(1.0, 2.0, 3.0), line(2.0, 4.0, 4.0)]),
            line(1.5, 3.0, 3.5)
        );
        let theirs = line(350.0, 4000.0, 60.0);
        let ratios = ratios(&ours, &theirs);
        assert_eq!(get(&ratios, "extract_add_speedup"), Some(&json!(10.0)));
        assert_eq!(get(&ratios, "p50_speedup"), Some(&json!(100.0)));
        assert_eq!(get(&ratios, "p95_speedup"), Some(&Value::Null));
        assert_eq!(get(&ratios, "rss_ratio"), Some(&json!(0.1)));
        assert_eq!(
            render(&[("a", 1.into()), ("b", "x".into())]),
            r#"{"a":1,"b":"x"}"#
        );
    }

    /// One task of the generator's shape, and two queries.
    fn tiny_workload() -> String {
        let implementer = json!({"task_id": "1", "status": "completed",
            "summary": "parser store index updated in src/parser/store_12.rs",
            "files_changed": ["src/parser/store_12.rs", "src/index/ledger_7.rs"],
            "tests": [{"command": "cargo test parser", "passed": true}],
            "follow_up_actions": ["cache the parser index", "format the ledger"]});
        let reviewer = json!({"task_id": "1", "assessment": "needs_changes", "strengths": [],
            "issues": [{"severity": "important", "file": "src/parser/store.rs",
                        "message": "naming convention parser store", "fix": "rename store"},
                       {"severity": "minor", "message": "ledger cache error", "fix": "cache"}],
            "required_fixes": ["rename the parser store"]});
        [
            json!({"kind": "result", "role": "implementer", "task_id": "1", "output": implementer}),
            json!({"kind": "result", "role": "reviewer", "task_id": "1", "output": reviewer}),
            json!({"kind": "query", "task_id": "2", "task_description": "parser store naming"}),
            json!({"kind": "query", "task_id": "3", "task_description": "ledger cache"}),
        ]
        .iter()
        .map(|line| format!("{line}\n"))
        .collect()
    }

    #[test]
    fn the_harness_prints_the_references_keys() {
        let line = harness(&tiny_workload(), true).unwrap();
        let keys: Vec<&str> = line.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, KEYS);
        assert_eq!(get(&line, "system"), Some(&json!("factmem")));
        assert_eq!(get(&line, "results"), Some(&json!(2)));
        assert!(get(&line, "valid").unwrap().as_u64().unwrap() >= 8);
        assert!(get(&line, "chars").unwrap().as_u64().unwrap() > 0);
        for key in [
            "add_us_per_result",
            "p50_us",
            "p95_us",
            "heap_mb",
            "peak_rss_mb",
        ] {
            assert!(get(&line, key).unwrap().as_f64().is_some(), "{key}");
        }
        let rendered: Value = serde_json::from_str(&render(&line)).unwrap();
        assert_eq!(rendered["system"], "factmem");
        assert!(matches!(
            harness("{\"kind\": \"query\"}", true),
            Err(Error::Failed(m)) if m.contains("line 1")
        ));
    }
}

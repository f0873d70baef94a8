//! A Rust port of `../shared/bench/dispatch_workload.py`: the same LCG, word list and
//! order, so figures compare with the reference implementation's on the same workload.
//!
//! Shared by the benchmarks through `#[path]`; `workload_matches_the_python_generator`
//! in `tests/it/workload.rs` checks the port against the script when `../shared` exists.

#![allow(dead_code)]

use fact_model::{
    Assessment, ImplementerResult, ImplementerStatus, ReviewIssue, ReviewerResult, Severity,
    TestRun,
};

const WORDS: &[&str] = &[
    "parser",
    "store",
    "index",
    "ledger",
    "retriever",
    "session",
    "fact",
    "token",
    "budget",
    "prompt",
    "compile",
    "reviewer",
    "implementer",
    "schema",
    "marker",
    "json",
    "config",
    "cache",
    "graph",
    "stall",
    "replan",
    "snapshot",
    "telemetry",
    "dispatch",
    "runtime",
    "format",
    "extract",
    "rule",
    "convention",
    "naming",
    "error",
    "test",
    "file",
    "module",
    "service",
    "handler",
    "router",
    "model",
];

/// The generator's linear congruential generator.
pub(crate) struct Lcg(u64);

impl Lcg {
    pub(crate) fn new(seed: u64) -> Self {
        Lcg(seed)
    }

    pub(crate) fn next(&mut self) -> f64 {
        self.0 = (self.0.wrapping_mul(1_103_515_245).wrapping_add(12_345)) & 0x7FFF_FFFF;
        self.0 as f64 / f64::from(0x7FFF_FFFFu32)
    }

    pub(crate) fn pick(&mut self) -> &'static str {
        let i = (self.next() * WORDS.len() as f64) as usize;
        WORDS.get(i).copied().unwrap_or("model")
    }

    pub(crate) fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.pick())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn number(&mut self, below: f64) -> u64 {
        (self.next() * below) as u64
    }
}

/// One task's pair of results.
pub(crate) struct Task {
    pub(crate) implementer: ImplementerResult,
    pub(crate) reviewer: ReviewerResult,
}

/// The workload for `--facts facts --queries queries --seed seed`.
pub(crate) struct Workload {
    pub(crate) tasks: Vec<Task>,
    /// `(task_id, task_description)` of each query.
    pub(crate) queries: Vec<(String, String)>,
}

pub(crate) fn generate(facts: usize, queries: usize, seed: u64) -> Workload {
    let mut r = Lcg::new(seed);
    let task_count = (facts / 13).max(1);
    let mut tasks = Vec::with_capacity(task_count);
    for t in 1..=task_count {
        let task_id = t.to_string();
        let summary = r.sentence(18);
        let files_changed = (0..5)
            .map(|_| {
                let (a, b) = (r.pick(), r.pick());
                format!("src/{a}/{b}_{}.rs", r.number(5000.0))
            })
            .collect();
        let command = format!("cargo test {}", r.pick());
        let passed = r.next() > 0.2;
        let follow_up_actions = vec![r.sentence(8), r.sentence(8)];
        let implementer = ImplementerResult {
            task_id: task_id.clone(),
            status: ImplementerStatus::Completed,
            summary,
            files_changed,
            tests: vec![TestRun {
                command,
                passed,
                failures: Vec::new(),
            }],
            follow_up_actions,
        };
        let file1 = format!("src/{}/{}.rs", r.pick(), r.pick());
        let message1 = format!("naming convention {}", r.sentence(10));
        let fix1 = r.sentence(6);
        let message2 = r.sentence(12);
        let fix2 = r.sentence(5);
        let file3 = format!("src/{}.rs", r.pick());
        let message3 = r.sentence(12);
        let fix3 = r.sentence(5);
        let required_fixes = vec![r.sentence(8), r.sentence(8)];
        let issue = |severity, file: Option<String>, message: String, fix: String| ReviewIssue {
            severity,
            file,
            message,
            fix,
        };
        let reviewer = ReviewerResult {
            task_id,
            assessment: Assessment::NeedsChanges,
            strengths: Vec::new(),
            issues: vec![
                issue(Severity::Important, Some(file1), message1, fix1),
                issue(Severity::Minor, None, message2, fix2),
                issue(Severity::Critical, Some(file3), message3, fix3),
            ],
            required_fixes,
        };
        tasks.push(Task {
            implementer,
            reviewer,
        });
    }
    let queries = (0..queries)
        .map(|q| ((task_count + 1 + q).to_string(), r.sentence(40)))
        .collect();
    Workload { tasks, queries }
}

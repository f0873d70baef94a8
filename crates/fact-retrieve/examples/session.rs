//! A dispatch session end to end: run it with `cargo run -p fact-retrieve --example session`.
//!
//! Three tasks report results as implementer and reviewer agents would; the rule extractor
//! turns each result into facts, the store keeps them (invalidating what a later result
//! supersedes), and the retriever picks the few that matter for task 4, within a token
//! budget, as the `[Session Context]` section of task 4's prompt.

#![allow(clippy::print_stdout)]

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use fact_extract::{FactExtractor, RuleBasedFactExtractor};
use fact_model::{DispatchResult, ManualClock};
use fact_retrieve::{FactQuery, FactRetriever, IndexRetriever};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};

/// What the agents reported, in order: (role, JSON result).
const RESULTS: &[(&str, &str)] = &[
    (
        "implementer",
        r#"{"task_id": "1", "status": "completed",
        "summary": "Added the tasks.md parser in src/ledger/parse.rs with fixtures in tests/fixtures/",
        "files_changed": ["src/ledger/parse.rs", "src/ledger/mod.rs"],
        "tests": [{"command": "cargo test -p ledger", "passed": true}],
        "follow_up_actions": ["Benchmark the parser on a 1,000-task file"]}"#,
    ),
    (
        "reviewer",
        r#"{"task_id": "1", "assessment": "needs_changes",
        "issues": [{"severity": "important", "file": "src/ledger/parse.rs",
                    "message": "Prompt sections use camelCase keys; the naming convention is snake_case",
                    "fix": "Rename the keys to snake_case"}],
        "required_fixes": ["Rename prompt section keys to snake_case"]}"#,
    ),
    (
        "implementer",
        r#"{"task_id": "1", "status": "completed",
        "summary": "Renamed prompt section keys to snake_case", "files_changed": ["src/ledger/parse.rs"]}"#,
    ),
    ("reviewer", r#"{"task_id": "1", "assessment": "approved"}"#),
    (
        "implementer",
        r#"{"task_id": "2", "status": "blocked",
        "summary": "The ledger cache needs the file's mtime, which the runtime does not pass",
        "files_changed": ["src/ledger/cache.rs"],
        "follow_up_actions": ["Pass file metadata from the runtime to the ledger cache"]}"#,
    ),
    (
        "implementer",
        r#"{"task_id": "3", "status": "completed",
        "summary": "Stall detection counts non-progress outcomes per task",
        "files_changed": ["src/ledger/stall.rs"],
        "tests": [{"command": "cargo test -p ledger stall", "passed": false,
                   "failures": ["stall::review_loop_is_flagged: left 1, right 2"]}]}"#,
    ),
];

fn main() -> Result<(), Box<dyn Error>> {
    let clock = Arc::new(ManualClock::new("2026-11-22T09:00:00Z".parse()?));
    let store: Arc<dyn SessionFactStore> = Arc::new(InMemorySessionFactStore::new(
        StoreConfig::default(),
        clock.clone(),
    ));
    let extractor = RuleBasedFactExtractor::with_defaults(clock.clone());

    for (role, json) in RESULTS {
        clock.advance(Duration::from_secs(300));
        let result = if *role == "implementer" {
            DispatchResult::Implementer(serde_json::from_str(json)?)
        } else {
            DispatchResult::Reviewer(serde_json::from_str(json)?)
        };
        let extraction = extractor.extract(&result, result.task_id());
        let facts = extraction.facts.len();
        let report = store.add(extraction.facts)?;
        println!(
            "{role:<11} result: {facts:>2} facts extracted, {} added, {} invalidated -> {} valid",
            report.added.len(),
            report.invalidated.len(),
            store.valid_count()?
        );
    }

    let description = "Wire the ledger cache into the runtime: the parser output, file metadata \
                       and stall detection must reach compile_prompt";
    let query = FactQuery::new("4", description).with_max_tokens(200);
    let retrieval = IndexRetriever::new(store).retrieve(&query)?;
    println!("\nTask 4: {description}\n");
    println!("{}\n", retrieval.section);
    println!(
        "{} facts chosen, {} tokens of a {}-token budget",
        retrieval.facts.len(),
        retrieval.tokens_used,
        query.max_tokens
    );
    Ok(())
}

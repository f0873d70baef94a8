//! A dispatch session, told through the store: run it with
//! `cargo run -p fact-store --example store_session`.
//!
//! Three tasks go through implementer and reviewer; each result's facts are one batch.
//! The example prints what is valid after each result, then the history of a file and of a
//! task, what was valid at an earlier instant, a compaction, and a snapshot roundtrip.

#![allow(clippy::print_stdout)]

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use fact_model::{Clock, ManualClock, SessionFact, SourceRole, Tag};
use fact_store::{InMemorySessionFactStore, SessionFactStore, StoreConfig};

/// One dispatch result: (task, role, [(subject, relation, object, tag)]).
type Result_ = (
    &'static str,
    SourceRole,
    &'static [(&'static str, &'static str, &'static str, Tag)],
);

const SESSION: &[Result_] = &[
    (
        "1",
        SourceRole::Implementer,
        &[
            ("task:1", "completed_with", "completed", Tag::Decision),
            ("src/parser.rs", "modified_by", "task:1", Tag::FileChange),
            (
                "task:1",
                "requires",
                "document the grammar",
                Tag::Dependency,
            ),
            ("task:1", "requires", "add fuzz tests", Tag::Dependency),
        ],
    ),
    (
        "1",
        SourceRole::Reviewer,
        &[
            ("task:1", "reviewed_as", "needs_changes", Tag::Decision),
            (
                "src/parser.rs",
                "convention",
                "use snake_case for rule names",
                Tag::Convention,
            ),
        ],
    ),
    (
        "1",
        SourceRole::Implementer,
        &[
            ("task:1", "completed_with", "completed", Tag::Decision),
            ("task:1", "requires", "add fuzz tests", Tag::Dependency),
        ],
    ),
    (
        "1",
        SourceRole::Reviewer,
        &[("task:1", "reviewed_as", "approved", Tag::Decision)],
    ),
    (
        "2",
        SourceRole::Implementer,
        &[
            ("task:2", "completed_with", "blocked", Tag::Decision),
            ("src/parser.rs", "modified_by", "task:2", Tag::FileChange),
            (
                "task:2",
                "blocked_by",
                "schema for the AST is undecided",
                Tag::Error,
            ),
        ],
    ),
    (
        "2",
        SourceRole::Implementer,
        &[
            ("task:2", "completed_with", "completed", Tag::Decision),
            ("src/ast.rs", "modified_by", "task:2", Tag::FileChange),
        ],
    ),
];

fn line(fact: &SessionFact) -> String {
    let until = fact.valid_to().map_or("now".to_owned(), |t| t.to_string());
    format!(
        "{} {} {}  [task:{}, {} .. {until}]",
        fact.subject(),
        fact.relation(),
        fact.object(),
        fact.source_task_id(),
        fact.valid_from()
    )
}

fn main() -> Result<(), Box<dyn Error>> {
    let clock = Arc::new(ManualClock::new("2026-11-22T09:00:00Z".parse()?));
    let store: Arc<dyn SessionFactStore> = Arc::new(InMemorySessionFactStore::new(
        StoreConfig::default(),
        clock.clone(),
    ));

    let mut before_task_2 = None;
    for (task, role, facts) in SESSION {
        if *task == "2" && before_task_2.is_none() {
            before_task_2 = Some(clock.now());
        }
        clock.advance(Duration::from_secs(300));
        let batch = facts
            .iter()
            .map(|(s, r, o, tag)| {
                SessionFact::builder(*s, *r, *o)
                    .tag(*tag)
                    .source(*task, *role)
                    .valid_from(clock.now())
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let report = store.add(batch)?;
        println!(
            "task {task} {role}: {} added, {} refreshed, {} invalidated -> {} valid",
            report.added.len(),
            report.refreshed.len(),
            report.invalidated.len(),
            store.valid_count()?
        );
    }

    println!("\nValid now:");
    for fact in store.valid_facts()? {
        println!("  {}", line(&fact));
    }
    for subject in ["src/parser.rs", "task:1"] {
        println!("\nHistory of {subject}:");
        for fact in store.history(subject)? {
            println!("  {}", line(&fact));
        }
    }
    if let Some(at) = before_task_2 {
        println!("\nValid at {at}, before task 2 began:");
        for fact in store.valid_at(at)? {
            println!("  {}", line(&fact));
        }
    }

    let report = store.compact(5)?;
    println!(
        "\nCompacted to 5 valid facts: {} merged into {} summaries, {} dropped",
        report.merged,
        report.summaries.len(),
        report.dropped_valid.len()
    );
    for fact in store.valid_facts()? {
        println!("  {}", line(&fact));
    }

    let json = store.export_snapshot()?.to_json();
    let (copy, import) =
        InMemorySessionFactStore::from_snapshot_json(&json, StoreConfig::default(), clock)?;
    println!(
        "\nSnapshot: {} bytes of JSON, {} versions imported, equal after roundtrip: {}",
        json.len(),
        import.imported,
        copy.export_snapshot()? == store.export_snapshot()?
    );
    Ok(())
}

//! What a result settles and the result's own facts are one store write (issue 23, item
//! 1): a failure of the second half settles nothing, no other writer comes between them,
//! and the same result retried after an unknown outcome is applied once.

use std::path::Path;
use std::sync::Arc;

use dispatch_runtime::{DispatchRuntimeManager, IngestOutputRequest, InitRunRequest};
use fact_model::{ManualClock, SessionFact, SourceRole, Tag};
use fact_store::SessionFactStore;
use serde_json::{Value, json};
use tempfile::TempDir;

fn project() -> TempDir {
    let dir = TempDir::new().unwrap();
    let folder = dir.path().join(".spec-context/specs/demo");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("tasks.md"),
        "- [ ] 1. Task 1\n  - _Prompt: Do task 1_\n- [ ] 2. Task 2\n  - _Prompt: Do task 2_\n",
    )
    .unwrap();
    dir
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new("2026-11-22T09:00:00Z".parse().unwrap()))
}

fn output(result: &Value) -> String {
    format!("Done.\nBEGIN_DISPATCH_RESULT\n{result}\nEND_DISPATCH_RESULT\n")
}

fn review(assessment: &str, issue: &str) -> String {
    output(
        &json!({"task_id": "1", "assessment": assessment, "required_fixes": [],
        "issues": [{"severity": "important", "message": issue, "file": "src/a.rs"}]}),
    )
}

fn approval() -> String {
    output(&json!({"task_id": "1", "assessment": "approved", "required_fixes": [], "issues": []}))
}

/// The objects of the valid `issue` facts of spec `demo`.
fn open_issues(runtime: &DispatchRuntimeManager) -> Vec<String> {
    let mut issues: Vec<String> = runtime
        .fact_history("demo", "src/a.rs")
        .unwrap()
        .into_iter()
        .filter(|f| f.relation() == "issue" && f.is_valid())
        .map(|f| f.object().to_owned())
        .collect();
    issues.sort();
    issues
}

fn ingest(runtime: &DispatchRuntimeManager, run: &str, output: String) -> Result<(), String> {
    runtime
        .ingest_output(IngestOutputRequest::new(
            run,
            SourceRole::Reviewer,
            "1",
            output,
        ))
        .map(|_| ())
        .map_err(|e| e.code().to_owned())
}

#[test]
fn the_same_result_retried_is_applied_once() {
    let dir = project();
    let runtime = DispatchRuntimeManager::builder().clock(clock()).build();
    let run = runtime
        .init_run(InitRunRequest::new("demo", "1").with_project_path(dir.path().to_owned()))
        .unwrap()
        .run_id;
    let first = runtime
        .ingest_output(IngestOutputRequest::new(
            run.clone(),
            SourceRole::Reviewer,
            "1",
            review("needs_changes", "No tests"),
        ))
        .unwrap();
    assert!(first.facts_added > 0);
    let again = runtime
        .ingest_output(IngestOutputRequest::new(
            run,
            SourceRole::Reviewer,
            "1",
            review("needs_changes", "No tests"),
        ))
        .unwrap();
    assert_eq!((again.facts_added, again.facts_invalidated), (0, 0));
    assert_eq!(runtime.fact_history("demo", "task:1").unwrap().len(), 1);
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use dispatch_runtime::durable;
    use fact_store::StoreConfig;
    use fact_store_sqlite::SqliteFactStore;

    fn runtime(dir: &Path, db: &Path) -> (DispatchRuntimeManager, String) {
        let runtime = DispatchRuntimeManager::builder()
            .clock(clock())
            .stores(durable::sqlite_stores(db, StoreConfig::default()))
            .build();
        let run = runtime
            .init_run(InitRunRequest::new("demo", "1").with_project_path(dir.to_owned()))
            .unwrap()
            .run_id;
        (runtime, run)
    }

    #[test]
    fn an_approval_that_cannot_be_stored_settles_nothing() {
        let dir = project();
        let db = dir.path().join("facts.db");
        let (runtime, run) = runtime(dir.path(), &db);
        ingest(&runtime, &run, review("needs_changes", "No tests")).unwrap();
        assert_eq!(open_issues(&runtime), ["[important] No tests"]);
        // The database refuses the approval's own fact: the second half of the write.
        let raw = rusqlite::Connection::open(&db).unwrap();
        raw.execute_batch(
            "CREATE TRIGGER refuse_approval BEFORE INSERT ON facts
             WHEN NEW.relation = 'reviewed_as' AND NEW.object = 'approved'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
        let code = ingest(&runtime, &run, approval()).unwrap_err();
        assert!(code.starts_with("store_"), "{code}");
        assert_eq!(
            open_issues(&runtime),
            ["[important] No tests"],
            "the issue is not settled by an approval that was not recorded"
        );
        // Once the database takes it, the same approval settles the issue.
        raw.execute_batch("DROP TRIGGER refuse_approval;").unwrap();
        ingest(&runtime, &run, approval()).unwrap();
        assert!(open_issues(&runtime).is_empty());
    }

    #[test]
    fn no_other_writer_comes_between_the_settles_and_the_result() {
        let dir = project();
        let db = dir.path().join("facts.db");
        let (runtime, run) = runtime(dir.path(), &db);
        ingest(&runtime, &run, review("needs_changes", "No tests")).unwrap();
        // Another process adds issues of task 1 while the approval goes in.
        let other = SqliteFactStore::open(
            &db,
            &durable::spec_scope("demo"),
            StoreConfig::default(),
            clock(),
        )
        .unwrap();
        let writer = std::thread::spawn(move || {
            for n in 0..200 {
                // Each about a file of its own: issues of one file would supersede each other.
                let issue = SessionFact::builder(format!("src/f{n}.rs"), "issue", "[minor] n")
                    .tag(Tag::Error)
                    .source("1", SourceRole::Reviewer)
                    .valid_from("2026-11-22T09:00:00Z".parse().unwrap())
                    .build()
                    .unwrap();
                other.add(vec![issue]).unwrap();
            }
        });
        ingest(&runtime, &run, approval()).unwrap();
        writer.join().unwrap();
        // Every issue stored before the approval's batch is settled; those after stay.
        let store = SqliteFactStore::open(
            &db,
            &durable::spec_scope("demo"),
            StoreConfig::default(),
            clock(),
        )
        .unwrap();
        let records = store.export_snapshot().unwrap().records;
        let approved = records
            .iter()
            .find(|r| r.fact.relation() == "reviewed_as" && r.fact.object() == "approved")
            .map(|r| r.batch)
            .unwrap();
        for record in records.iter().filter(|r| r.fact.relation() == "issue") {
            assert_eq!(
                record.fact.is_valid(),
                record.batch > approved,
                "{:?} of batch {} beside the approval of batch {approved}",
                record.fact.object(),
                record.batch
            );
        }
    }
}

/// A durable store keeps every version unless a limit is configured (issue 23, item 2).
#[cfg(feature = "sqlite")]
#[test]
fn a_durable_store_keeps_its_history_unless_a_limit_is_given() {
    use dispatch_runtime::durable;
    use fact_model::Timestamp;
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("facts.db");
    let status = |n: i64| {
        SessionFact::builder("task:1", "completed_with", format!("attempt {n}"))
            .tag(Tag::Decision)
            .source("1", SourceRole::Implementer)
            .valid_from(Timestamp::from_unix_secs(1_800_000_000 + n).unwrap())
            .build()
            .unwrap()
    };
    let open = |limit: Option<usize>| {
        let factory = durable::sqlite_stores(&db, durable::retained(None, limit));
        factory(if limit.is_some() { "limited" } else { "kept" }, clock()).unwrap()
    };
    let kept = open(None);
    for n in 0..600 {
        kept.add(vec![status(n)]).unwrap();
    }
    assert_eq!(kept.history("task:1").unwrap().len(), 600);
    assert_eq!(kept.valid_count().unwrap(), 1);
    let limited = open(Some(10));
    for n in 0..600 {
        limited.add(vec![status(n)]).unwrap();
    }
    assert_eq!(limited.history("task:1").unwrap().len(), 11);
}

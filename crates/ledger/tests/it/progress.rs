//! Progress ledgers: totals, the active task, and typed errors.

use ledger::{Fingerprint, LedgerError, ProgressLedger};

use super::temp_dir;

fn ledger(text: &str) -> Result<ProgressLedger, LedgerError> {
    ProgressLedger::from_text(
        "spec",
        "tasks.md",
        text,
        Fingerprint::of(text.as_bytes(), None),
    )
}

#[test]
fn totals_and_the_active_task() {
    let cases = [
        (
            "- [x] 1. a\n- [-] 2. b\n- [ ] 3. c\n- [-] 4. d\n",
            (4, 1, 2, 1),
            Some("2"),
        ),
        (
            "- [x] 1. a\n- [ ] 2. b\n- [ ] 3. c\n",
            (3, 1, 0, 2),
            Some("2"),
        ),
        ("- [x] 1. a\n- [X] 2. b\n", (2, 2, 0, 0), None),
    ];
    for (text, (total, completed, in_progress, pending), active) in cases {
        let ledger = ledger(text).unwrap();
        let t = ledger.totals();
        assert_eq!(
            (t.total, t.completed, t.in_progress, t.pending),
            (total, completed, in_progress, pending),
            "{text:?}"
        );
        assert_eq!(ledger.active_task().map(|t| t.id()), active, "{text:?}");
    }
}

#[test]
fn a_file_without_tasks_is_a_typed_error_with_its_diagnostics() {
    let err = ledger("# Tasks\n\n- [ ] no id here\n").unwrap_err();
    let LedgerError::NoTasks { diagnostics, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].line, 3);
    assert!(err.to_string().contains("has no tasks"));
}

#[test]
fn load_names_the_missing_or_undecodable_file() {
    let dir = temp_dir();
    let missing = dir.path().join("tasks.md");
    let err = ProgressLedger::load("spec", &missing).unwrap_err();
    assert!(
        matches!(&err, LedgerError::MissingTasksFile { path } if *path == missing),
        "{err:?}"
    );

    std::fs::write(&missing, b"- [ ] 1. ok\n\xff\xfe").unwrap();
    let err = ProgressLedger::load("spec", &missing).unwrap_err();
    assert!(
        matches!(
            err,
            LedgerError::NotUtf8 {
                valid_up_to: 12,
                ..
            }
        ),
        "{err:?}"
    );

    std::fs::write(&missing, "- [ ] 1. First\n").unwrap();
    let ok = ProgressLedger::load("spec", &missing).unwrap();
    assert_eq!(ok.fingerprint().size, 15);
    assert_eq!(ok.fingerprint().hash, blake3_hex(b"- [ ] 1. First\n"));
    assert!(ok.fingerprint().mtime.is_some());
    assert_eq!(
        (ok.spec_name(), ok.source_path()),
        ("spec", missing.as_path())
    );
}

fn blake3_hex(bytes: &[u8]) -> String {
    Fingerprint::of(bytes, None).hash
}

/// The keys of a JSON object, sorted.
fn keys(value: &serde_json::Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[test]
fn json_shape_names_the_active_task_by_id_and_exposes_no_index() {
    let text = "# Tasks\n- [x] 1. a\n- [x] 1.1 b\n- [-] 2.3 c\n- [ ] 4. d\n- [ ] e\n";
    let ledger = ledger(text).unwrap();
    let json = serde_json::to_value(&ledger).unwrap();
    let documented = [
        "spec_name",
        "source_path",
        "fingerprint",
        "active_task_id",
        "totals",
        "tasks",
        "diagnostics",
    ];
    let mut sorted = documented;
    sorted.sort_unstable();
    assert_eq!(keys(&json), sorted);
    // Written in the documented order.
    let rendered = serde_json::to_string(&ledger).unwrap();
    let at: Vec<usize> = documented
        .iter()
        .map(|key| rendered.find(&format!("\"{key}\":")).unwrap())
        .collect();
    assert!(at.is_sorted(), "{rendered}");
    // The id, not the position (which would be 2).
    assert_eq!(json["active_task_id"], "2.3");
    assert_eq!(json["spec_name"], "spec");
    assert_eq!(json["source_path"], "tasks.md");
    assert_eq!(
        json["totals"],
        serde_json::json!({"total": 4, "completed": 2, "in_progress": 1, "pending": 1})
    );
    assert_eq!(keys(&json["fingerprint"]), ["hash", "mtime", "size"]);
    let tasks = json["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4);
    for (value, task) in tasks.iter().zip(ledger.tasks()) {
        assert_eq!(*value, serde_json::to_value(task).unwrap());
    }
    assert_eq!(tasks[2]["id"], "2.3");
    assert_eq!(tasks[2]["status"], "in_progress");
    let diagnostics = json["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(keys(&diagnostics[0]), ["line", "message"]);
    assert_eq!(diagnostics[0]["line"], 6);
    // No internal index anywhere in the document.
    assert!(!rendered.contains("\"active\""), "{rendered}");
}

#[test]
fn json_active_task_id_is_null_when_every_task_is_completed() {
    let json = serde_json::to_value(ledger("- [x] 1. a\n- [X] 2. b\n").unwrap()).unwrap();
    assert!(json["active_task_id"].is_null(), "{json}");
    assert!(json.get("active").is_none(), "{json}");
}

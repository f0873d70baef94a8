//! Hostile tasks.md files through `parse_tasks` and `ProgressLedger::load`: 100,000 tasks,
//! a single 10 MB line (a task title, a checkbox without an id, a near miss), NUL bytes,
//! invalid UTF-8. Each is parsed (or refused with a typed error) without a panic, in
//! time linear in its size, and no diagnostic echoes megabytes of the file back.

use std::fmt::Write as _;

use ledger::{LedgerError, ProgressLedger, TaskStatus, parse_tasks};

/// The longest diagnostic message these files may produce: a diagnostic names a line,
/// it does not copy it.
const MAX_MESSAGE_BYTES: usize = 1_024;

const TEN_MB: usize = 10 * 1024 * 1024;

fn hundred_thousand_tasks() -> String {
    let mut text = String::with_capacity(6_000_000);
    for n in 1..=100_000 {
        let marker = match n % 3 {
            0 => 'x',
            1 => ' ',
            _ => '-',
        };
        writeln!(text, "- [{marker}] {n}. Task number {n}").unwrap();
        writeln!(text, "  - _Prompt: Do task {n}_").unwrap();
    }
    text
}

#[test]
fn a_tasks_file_of_100_000_tasks_is_parsed_whole() {
    let text = hundred_thousand_tasks();
    let started = std::time::Instant::now();
    let (tasks, diagnostics) = parse_tasks(&text);
    let took = started.elapsed();
    assert!(diagnostics.is_empty(), "{:?}", diagnostics.first());
    assert_eq!(tasks.len(), 100_000);
    let last = &tasks[99_999];
    assert_eq!((last.id(), last.title()), ("100000", "Task number 100000"));
    assert_eq!(last.prompt(), Some("Do task 100000"));
    assert_eq!(last.line(), 199_999);
    let ledger =
        ProgressLedger::from_text("big", "tasks.md", &text, ledger::Fingerprint::of(b"", None))
            .unwrap();
    let totals = ledger.totals();
    assert_eq!(
        (
            totals.total,
            totals.completed,
            totals.in_progress,
            totals.pending
        ),
        (100_000, 33_333, 33_333, 33_334)
    );
    assert_eq!(ledger.active_task().map(|t| t.id()), Some("2"));
    assert!(ledger.task("77777").is_some());
    eprintln!(
        "parse_tasks of 100,000 tasks ({} bytes): {took:?}",
        text.len()
    );
}

#[test]
fn a_single_10_mb_task_line_is_one_task() {
    let title = "a".repeat(TEN_MB);
    let text = format!("- [ ] 1. {title}");
    let (tasks, diagnostics) = parse_tasks(&text);
    assert!(diagnostics.is_empty());
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].title().len(), TEN_MB);
    assert_eq!(tasks[0].status(), TaskStatus::Pending);
}

#[test]
fn a_single_10_mb_line_that_is_not_a_task_gives_a_short_diagnostic() {
    let filler = "b".repeat(TEN_MB);
    for text in [
        // Prose: no task, no diagnostic.
        filler.clone(),
        // A checkbox without an id.
        format!("- [ ] {filler}"),
        // A near miss: the wrong bullet.
        format!("+ [ ] 1. {filler}"),
        // An unknown checkbox as long as the line.
        format!("- [{filler}] 1. title"),
        // A duplicate id after a real task, then a 10 MB id-like run.
        format!(
            "- [ ] 1. first\n- [ ] 1. {filler}\n- [ ] {}. x",
            "1.".repeat(TEN_MB / 2)
        ),
    ] {
        let (tasks, diagnostics) = parse_tasks(&text);
        assert!(tasks.len() <= 3);
        for diagnostic in &diagnostics {
            assert!(
                diagnostic.message.len() <= MAX_MESSAGE_BYTES,
                "line {}: a diagnostic of {} bytes: {}",
                diagnostic.line,
                diagnostic.message.len(),
                fact_model::clip(&diagnostic.message, 200)
            );
        }
    }
}

#[test]
fn nul_bytes_in_tasks_md_are_text_not_terminators() {
    let text = "- [ ] 1. Parse\0the file\n  - _Prompt: Read \0 bytes_\n\0- [ ] 2. Not a task\n- [x] 3\0. Glued\n- [ ] 4. After\n";
    let (tasks, diagnostics) = parse_tasks(text);
    let ids: Vec<&str> = tasks.iter().map(|t| t.id()).collect();
    assert_eq!(ids, ["1", "4"], "{diagnostics:?}");
    assert_eq!(tasks[0].title(), "Parse\0the file");
    assert_eq!(tasks[0].prompt(), Some("Read \0 bytes"));
    assert_eq!(tasks[1].line(), 5);
    for diagnostic in &diagnostics {
        assert!(diagnostic.message.len() <= MAX_MESSAGE_BYTES);
    }
}

#[test]
fn a_tasks_file_that_is_not_utf8_is_a_typed_error_naming_the_offset() {
    let dir = crate::temp_dir();
    let path = dir.path().join("tasks.md");
    let mut bytes = b"- [ ] 1. Fine\n- [ ] 2. Bad \xff\xfe here\n".to_vec();
    std::fs::write(&path, &bytes).unwrap();
    let err = ProgressLedger::load("spec", &path).unwrap_err();
    assert!(
        matches!(
            err,
            LedgerError::NotUtf8 {
                valid_up_to: 27,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("is not UTF-8 (first invalid byte at offset 27)")
    );
    // A NUL-only file has no tasks: a typed error, not an empty ledger.
    bytes = vec![0; 4096];
    std::fs::write(&path, &bytes).unwrap();
    let err = ProgressLedger::load("spec", &path).unwrap_err();
    assert!(matches!(err, LedgerError::NoTasks { .. }), "{err:?}");
}

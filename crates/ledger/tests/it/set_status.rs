//! `set_task_status` and `set_task_status_in_text`: exactly one marker byte changes, every
//! other byte (line endings, trailing blanks, BOM, missing final newline) stays, the file is
//! replaced atomically, and failures are typed.

use std::path::Path;

use ledger::{
    LedgerError, SetStatusOutcome, TaskStatus, parse_tasks, set_task_status,
    set_task_status_in_text,
};
use proptest::prelude::*;

use super::temp_dir;

/// The statuses of the tasks of `text`, by id, in file order.
fn statuses(text: &str) -> Vec<(String, TaskStatus)> {
    parse_tasks(text)
        .0
        .iter()
        .map(|t| (t.id().to_owned(), t.status()))
        .collect()
}

#[test]
fn rewrites_only_the_marker_of_that_task() {
    let text = "\u{feff}# Tasks  \r\n\r\n- [x] 1. First \t\r\n  - _Requirements: 1_\r\n\t* [ ] 1.1\\. Nested, escaped  \r\n- [-] 2 Second\n  - _Prompt: |\r\n      Role: A [ ]\r\n      Task: B_\r\n- [X] 3. Last, no final newline   ";
    let (out, outcome) = set_task_status_in_text(text, "1.1", TaskStatus::Completed).unwrap();
    assert_eq!(
        out,
        text.replace("* [ ] 1.1", "* [x] 1.1"),
        "only the box of 1.1 changes"
    );
    assert_eq!(
        outcome,
        SetStatusOutcome {
            task_id: "1.1".to_owned(),
            line: 5,
            previous: TaskStatus::Pending,
            status: TaskStatus::Completed,
            changed: true,
        }
    );
    let (out, outcome) = set_task_status_in_text(text, "3", TaskStatus::Pending).unwrap();
    assert_eq!(out, text.replace("- [X] 3.", "- [ ] 3."));
    assert_eq!(
        (outcome.previous, outcome.line),
        (TaskStatus::Completed, 10)
    );
    let (out, _) = set_task_status_in_text(text, "2", TaskStatus::Pending).unwrap();
    assert_eq!(out, text.replace("- [-] 2", "- [ ] 2"));
    assert_eq!(
        statuses(&out),
        [
            ("1".to_owned(), TaskStatus::Completed),
            ("1.1".to_owned(), TaskStatus::Pending),
            ("2".to_owned(), TaskStatus::Pending),
            ("3".to_owned(), TaskStatus::Completed),
        ]
    );
}

#[test]
fn the_same_status_changes_nothing() {
    let text = "- [X] 1. Capital X stays\n- [ ] 2. Pending\n";
    for (id, status) in [("1", TaskStatus::Completed), ("2", TaskStatus::Pending)] {
        let (out, outcome) = set_task_status_in_text(text, id, status).unwrap();
        assert_eq!(out, text);
        assert_eq!((outcome.previous, outcome.status), (status, status));
        assert!(!outcome.changed);
    }
}

#[test]
fn a_duplicate_id_edits_the_first_task_with_it_as_the_ledger_reads_it() {
    let text = "- [ ] 1. First\n- [ ] 1. Again\n";
    let (out, outcome) = set_task_status_in_text(text, "1", TaskStatus::InProgress).unwrap();
    assert_eq!(out, "- [-] 1. First\n- [ ] 1. Again\n");
    assert_eq!(outcome.line, 1);
}

#[test]
fn unknown_ids_are_not_found() {
    let text = "- [ ] 1. One\n- [~] 2. A near miss is not a task\n  - [ ] 3x. a sub-item\n";
    for id in ["2", "3", "3x", "1.", "01", "", "4"] {
        assert!(
            set_task_status_in_text(text, id, TaskStatus::Completed).is_none(),
            "{id:?}"
        );
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_file_is_rewritten_in_place_without_leftovers() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    let text = "- [ ] 1. One\r\n- [ ] 2. Two  ";
    std::fs::write(&path, text).unwrap();
    let outcome = set_task_status(&path, "2", TaskStatus::InProgress).unwrap();
    assert!(outcome.changed);
    assert_eq!(outcome.previous, TaskStatus::Pending);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "- [ ] 1. One\r\n- [-] 2. Two  "
    );
    assert_eq!(names(dir.path()), ["tasks.md"]);
    // Setting it again: nothing to do, nothing written.
    let again = set_task_status(&path, "2", TaskStatus::InProgress).unwrap();
    assert!(!again.changed);
    assert_eq!(again.previous, TaskStatus::InProgress);
}

#[cfg(unix)]
#[test]
fn permissions_symlinks_and_no_write_when_unchanged() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    std::fs::write(&path, "- [ ] 1. One\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    set_task_status(&path, "1", TaskStatus::Completed).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);

    // Unchanged: the file is not replaced (same inode).
    set_task_status(&path, "1", TaskStatus::Completed).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), meta.ino());

    // Through a symlink: the target is rewritten, the link stays a link.
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    set_task_status(&link, "1", TaskStatus::InProgress).unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "- [-] 1. One\n");
    assert_eq!(names(dir.path()), ["link.md", "tasks.md"]);
}

#[test]
fn failures_are_typed_and_leave_the_file_alone() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");

    let err = set_task_status(&path, "1", TaskStatus::Completed).unwrap_err();
    assert!(
        matches!(&err, LedgerError::MissingTasksFile { path: p } if *p == path),
        "{err:?}"
    );

    let err = set_task_status(dir.path(), "1", TaskStatus::Completed).unwrap_err();
    assert!(matches!(&err, LedgerError::Io { .. }), "{err:?}");

    std::fs::write(&path, b"- [ ] 1. ok\n\xff").unwrap();
    let err = set_task_status(&path, "1", TaskStatus::Completed).unwrap_err();
    assert!(
        matches!(
            &err,
            LedgerError::NotUtf8 {
                valid_up_to: 12,
                ..
            }
        ),
        "{err:?}"
    );

    std::fs::write(&path, "- [ ] 1. One\n").unwrap();
    let err = set_task_status(&path, "7", TaskStatus::Completed).unwrap_err();
    let LedgerError::TaskNotFound { task_id, path: p } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((task_id.as_str(), p.as_path()), ("7", path.as_path()));
    assert!(err.to_string().contains("no task 7 in"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "- [ ] 1. One\n");
    assert_eq!(names(dir.path()), ["tasks.md"]);
}

#[test]
fn a_cached_ledger_sees_the_new_status() {
    let dir = temp_dir();
    let path = dir.path().join("tasks.md");
    std::fs::write(&path, "- [-] 1. One\n- [ ] 2. Two\n").unwrap();
    let cache = ledger::LedgerCache::default();
    let (before, _) = cache.load("spec", &path).unwrap();
    assert_eq!(before.active_task().map(ledger::Task::id), Some("1"));
    set_task_status(&path, "1", TaskStatus::Completed).unwrap();
    // Same size, new file: the cache compiles it again.
    let (after, freshness) = cache.load("spec", &path).unwrap();
    assert_eq!(freshness, ledger::Freshness::Rebuilt);
    assert_eq!(after.active_task().map(ledger::Task::id), Some("2"));
}

/// One task with the lines under it, in forms the parser accepts, and noise that is no
/// task; `n` makes its id unique.
fn task_block(n: usize) -> impl Strategy<Value = Vec<String>> {
    let indent = prop::sample::select(vec!["", "  ", "\t", "    ", " "]);
    let bullet = prop::sample::select(vec!["- ", "* ", "-\t"]);
    let marker = prop::sample::select(vec![' ', '-', 'x', 'X']);
    let id = prop::sample::select(vec!["{n}", "{n}.", "{n}\\.", "{n}.1", "{n}.2."]);
    let title = prop::sample::select(vec![
        "",
        " Title",
        " Mark [x] when done",
        " - [ ] 9. looks like a task",
        " Café 日本",
    ]);
    let under = prop::collection::vec(
        prop::sample::select(vec![
            "  - _Requirements: 1.1, 2_",
            "  - File: `src/a.rs`",
            "  Purpose: p",
            "  - _Prompt: Role: A | Task: mark [-] then [x]_",
            "  - _Prompt: |\n      Role: A\n\n      + [ ] 99. a near-miss shape is prompt text\n      Task: B_",
            "  - [ ] a sub-item without an id",
            "  - A detail [x]",
            "",
            "  + [x] 77. a near miss",
            "Prose [ ] with a box",
        ]),
        0..4,
    );
    (indent, bullet, marker, id, title, under).prop_map(
        move |(indent, bullet, marker, id, title, under)| {
            let id = id.replace("{n}", &n.to_string());
            let mut lines = vec![format!("{indent}{bullet}[{marker}] {id}{title}")];
            lines.extend(under.iter().flat_map(|u| u.split('\n')).map(str::to_owned));
            lines
        },
    )
}

/// A tasks.md: optional BOM, a preamble, 1 to 8 tasks, each line ended by `\n` or `\r\n`
/// with optional trailing blanks, and maybe no final newline.
fn tasks_file() -> impl Strategy<Value = String> {
    (1usize..=8)
        .prop_flat_map(|count| (0..count).map(|i| task_block(i + 1)).collect::<Vec<_>>())
        .prop_flat_map(|blocks| {
            let lines: Vec<String> = std::iter::once("# Tasks [x]".to_owned())
                .chain(blocks.into_iter().flatten())
                .collect();
            let count = lines.len();
            (
                Just(lines),
                prop::collection::vec(
                    (
                        any::<bool>(),
                        prop::sample::select(vec!["", " ", "\t ", "  "]),
                    ),
                    count,
                ),
                any::<bool>(),
                any::<bool>(),
            )
        })
        .prop_map(|(lines, endings, bom, final_newline)| {
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            let last = lines.len() - 1;
            for (i, (line, (crlf, trailing))) in lines.iter().zip(endings).enumerate() {
                text.push_str(line);
                text.push_str(trailing);
                if i < last || final_newline {
                    text.push_str(if crlf { "\r\n" } else { "\n" });
                }
            }
            text
        })
}

fn status() -> impl Strategy<Value = TaskStatus> {
    prop::sample::select(TaskStatus::ALL.to_vec())
}

proptest! {
    #[test]
    fn only_the_one_marker_byte_changes(text in tasks_file(), pick in any::<prop::sample::Index>(), status in status()) {
        let (tasks, diagnostics) = parse_tasks(&text);
        prop_assert!(!tasks.is_empty());
        let target = pick.get(&tasks);
        let before = statuses(&text);
        let (out, outcome) = set_task_status_in_text(&text, target.id(), status).unwrap();
        prop_assert_eq!(&outcome.task_id, target.id());
        prop_assert_eq!(outcome.line, target.line());
        prop_assert_eq!(outcome.previous, target.status());
        prop_assert_eq!(outcome.status, status);
        prop_assert_eq!(outcome.changed, target.status() != status);
        prop_assert_eq!(out.len(), text.len());
        let differing: Vec<usize> = (0..text.len()).filter(|&i| text.as_bytes()[i] != out.as_bytes()[i]).collect();
        if outcome.changed {
            prop_assert_eq!(differing.len(), 1, "{:?}", differing);
            let at = differing[0];
            prop_assert_eq!(char::from(out.as_bytes()[at]), status.marker());
            prop_assert_eq!(TaskStatus::from_marker(char::from(text.as_bytes()[at])), Some(target.status()));
            // On the task's line.
            let line = text.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            prop_assert_eq!(line, target.line());
        } else {
            prop_assert!(differing.is_empty());
        }
        let after = statuses(&out);
        prop_assert_eq!(after.len(), before.len());
        for ((id_before, s_before), (id_after, s_after)) in before.iter().zip(&after) {
            prop_assert_eq!(id_before, id_after);
            let expected = if id_before == target.id() { status } else { *s_before };
            prop_assert_eq!(*s_after, expected, "task {}", id_before);
        }
        // Nothing else about the parse moved.
        let (tasks_after, diagnostics_after) = parse_tasks(&out);
        prop_assert_eq!(diagnostics_after, diagnostics);
        for (a, b) in tasks.iter().zip(&tasks_after) {
            prop_assert_eq!((a.line(), a.title(), a.depth(), a.prompt()), (b.line(), b.title(), b.depth(), b.prompt()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_file_gets_exactly_the_text_edit(text in tasks_file(), pick in any::<prop::sample::Index>(), status in status()) {
        let dir = temp_dir();
        let path = dir.path().join("tasks.md");
        std::fs::write(&path, &text).unwrap();
        let id = pick.get(&parse_tasks(&text).0).id().to_owned();
        let (expected, expected_outcome) = set_task_status_in_text(&text, &id, status).unwrap();
        let outcome = set_task_status(&path, &id, status).unwrap();
        prop_assert_eq!(outcome, expected_outcome);
        prop_assert_eq!(std::fs::read(&path).unwrap(), expected.into_bytes());
        prop_assert_eq!(names(dir.path()), ["tasks.md"]);
    }
}

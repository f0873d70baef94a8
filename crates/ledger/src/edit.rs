//! Editing a tasks.md in place: [`set_task_status`] rewrites one task's checkbox marker,
//! and [`set_task_status_in_text`] does the same on text.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::progress::{decode, io_error};
use crate::{LedgerError, TaskStatus, parse_tasks};

/// What [`set_task_status`] or [`set_task_status_in_text`] did to a task.
///
/// Its serde form is an object with these fields, e.g.
/// `{"task_id":"2","line":7,"previous":"pending","status":"in_progress","changed":true}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetStatusOutcome {
    /// The task's id, as [`Task::id`](crate::Task::id) gives it.
    pub task_id: String,
    /// The 1-based line of the task in the file.
    pub line: usize,
    /// The status the task had.
    pub previous: TaskStatus,
    /// The status it has now.
    pub status: TaskStatus,
    /// Whether the marker was rewritten: `false` when the task already had the status
    /// (a `[X]` counts as completed and is left as it is), in which case nothing was
    /// written.
    pub changed: bool,
}

/// `text` with the checkbox marker of task `task_id` set to `status`, and what changed;
/// `None` when no task of `text` has that id.
///
/// The task is found as [`parse_tasks`] reads the text, by its canonical id (`3` for a
/// line written `- [ ] 3\. Title`; `1.2`, never `1.2.`); with a duplicated id, the first
/// task that has it, as [`ProgressLedger::task`](crate::ProgressLedger::task) finds it.
/// Lines that are not tasks, such as near misses or task-like lines inside a prompt,
/// are never touched.
///
/// Only the one character between the task's brackets changes, to
/// [`TaskStatus::marker`]; every other byte stays as it was (line endings, trailing
/// blanks, a byte order mark, a missing final newline). When the task already has the
/// status the text is returned unchanged, `[X]` included.
///
/// ```
/// use ledger::{TaskStatus, set_task_status_in_text};
///
/// let text = "- [x] 1. Parse\r\n- [ ] 2. Index  \r\n- [ ] 3. Search";
/// let (edited, outcome) = set_task_status_in_text(text, "2", TaskStatus::InProgress)
///     .expect("task 2 exists");
/// assert_eq!(edited, "- [x] 1. Parse\r\n- [-] 2. Index  \r\n- [ ] 3. Search");
/// assert_eq!((outcome.previous, outcome.changed), (TaskStatus::Pending, true));
/// assert!(set_task_status_in_text(text, "4", TaskStatus::Completed).is_none());
/// ```
#[must_use]
pub fn set_task_status_in_text(
    text: &str,
    task_id: &str,
    status: TaskStatus,
) -> Option<(String, SetStatusOutcome)> {
    let (tasks, _) = parse_tasks(text);
    let task = tasks.iter().find(|task| task.id() == task_id)?;
    // The parser reads the text without its byte order mark.
    let bom = text.len() - text.strip_prefix('\u{feff}').unwrap_or(text).len();
    let at = bom + task.marker;
    // The marker is one ASCII byte; check it is the one the parser read.
    let written = char::from(*text.as_bytes().get(at)?);
    if TaskStatus::from_marker(written) != Some(task.status()) {
        return None;
    }
    let changed = task.status() != status;
    let edited = if changed {
        let mut edited = String::with_capacity(text.len());
        edited.push_str(text.get(..at)?);
        edited.push(status.marker());
        edited.push_str(text.get(at + 1..)?);
        edited
    } else {
        text.to_owned()
    };
    let outcome = SetStatusOutcome {
        task_id: task.id().to_owned(),
        line: task.line(),
        previous: task.status(),
        status,
        changed,
    };
    Some((edited, outcome))
}

/// Sets the status of task `task_id` in the tasks.md at `path`, in place: rewrites that
/// task's checkbox marker and nothing else, as [`set_task_status_in_text`] does.
///
/// The file is replaced atomically: the new content is written to a temporary file in
/// the same directory, flushed to disk, given the original file's permissions, then
/// renamed over the original, so a reader sees either the old file or the new one, never
/// a partial write, and a failure leaves the original untouched (and no temporary file
/// behind). A symlink is followed: its target is rewritten and the link stays. When the
/// task already has the status, nothing is written.
///
/// Writers are not coordinated: an edit another process makes to the file between this
/// function's read and its rename is lost.
///
/// ```
/// use ledger::{TaskStatus, set_task_status};
///
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("tasks.md");
/// std::fs::write(&path, "- [x] 1. Parse\n- [ ] 2. Index\n")?;
/// let outcome = set_task_status(&path, "2", TaskStatus::Completed)?;
/// assert_eq!(outcome.previous, TaskStatus::Pending);
/// assert!(outcome.changed);
/// assert_eq!(std::fs::read_to_string(&path)?, "- [x] 1. Parse\n- [x] 2. Index\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// - [`LedgerError::TaskNotFound`] when no task of the file has that id (the file is
///   left as it is);
/// - [`LedgerError::MissingTasksFile`] when there is no file at `path`;
/// - [`LedgerError::NotUtf8`] when the file is not UTF-8;
/// - [`LedgerError::Io`] when reading the file fails;
/// - [`LedgerError::Write`] when replacing it fails (it is then left as it was).
pub fn set_task_status(
    path: &Path,
    task_id: &str,
    status: TaskStatus,
) -> Result<SetStatusOutcome, LedgerError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    let text = decode(path, &bytes)?;
    let (edited, outcome) = set_task_status_in_text(text, task_id, status).ok_or_else(|| {
        LedgerError::TaskNotFound {
            task_id: task_id.to_owned(),
            path: path.to_owned(),
        }
    })?;
    if outcome.changed {
        replace_atomically(path, edited.as_bytes()).map_err(|e| LedgerError::Write {
            path: path.to_owned(),
            source: Arc::new(e),
        })?;
    }
    Ok(outcome)
}

/// Replaces the file at `path` (its target, for a symlink) with `content` by writing a
/// temporary file next to it and renaming it over the file.
fn replace_atomically(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let dir = target.parent().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no parent")
    })?;
    let permissions = std::fs::metadata(&target)?.permissions();
    let mut temp = tempfile::Builder::new()
        .prefix(".tasks.md.")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(content)?;
    std::fs::set_permissions(temp.path(), permissions)?;
    temp.as_file().sync_all()?;
    // On failure the temporary file is dropped, which removes it.
    temp.persist(&target).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// Flushes the directory entry of the rename to disk where the platform allows it; best
/// effort, since the new content is already in place.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = std::fs::File::open(dir) {
        // A failure here loses durability only, not the edit.
        dir.sync_all().ok();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

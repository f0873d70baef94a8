//! [`Task`]: one task line of a tasks.md with the metadata lines under it.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Where a task stands, from its checkbox: `[ ]`, `[-]`, `[x]`/`[X]`.
///
/// The names (`pending`, `in_progress`, `completed`) are the protocol's and the serde
/// form; [`TaskStatus::marker`] is the character written between the brackets of
/// tasks.md. Binaries should go through these rather than spell either out.
///
/// ```
/// use ledger::TaskStatus;
///
/// let status: TaskStatus = "in_progress".parse()?;
/// assert_eq!(status, TaskStatus::InProgress);
/// assert_eq!(status.marker(), '-');
/// assert_eq!(status.to_string(), "in_progress");
/// assert_eq!(TaskStatus::from_name("done"), None);
/// assert_eq!(TaskStatus::from_marker('X'), Some(TaskStatus::Completed));
/// # Ok::<(), ledger::UnknownTaskStatus>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// `[ ]`
    Pending,
    /// `[-]`
    InProgress,
    /// `[x]` or `[X]`
    Completed,
}

impl TaskStatus {
    /// Every status, in the order a task goes through them.
    pub const ALL: [TaskStatus; 3] = [
        TaskStatus::Pending,
        TaskStatus::InProgress,
        TaskStatus::Completed,
    ];

    /// The snake_case name: `pending`, `in_progress` or `completed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
        }
    }

    /// The status named `name` exactly as [`TaskStatus::as_str`] spells it, else `None`.
    /// [`str::parse`] does the same with an error that lists the names.
    #[must_use]
    pub fn from_name(name: &str) -> Option<TaskStatus> {
        TaskStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    /// The checkbox character of tasks.md, between the brackets: `'x'` completed, `'-'`
    /// in progress, `' '` pending.
    #[must_use]
    pub fn marker(self) -> char {
        match self {
            TaskStatus::Pending => ' ',
            TaskStatus::InProgress => '-',
            TaskStatus::Completed => 'x',
        }
    }

    /// The status of a checkbox character as the parser reads it: `' '`, `'-'`, and
    /// `'x'` or `'X'`; any other character is not a checkbox state.
    #[must_use]
    pub fn from_marker(marker: char) -> Option<TaskStatus> {
        match marker {
            ' ' => Some(TaskStatus::Pending),
            '-' => Some(TaskStatus::InProgress),
            'x' | 'X' => Some(TaskStatus::Completed),
            _ => None,
        }
    }
}

impl fmt::Display for TaskStatus {
    /// The snake_case name, as [`TaskStatus::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskStatus {
    type Err = UnknownTaskStatus;

    /// The status with this exact snake_case name.
    fn from_str(name: &str) -> Result<TaskStatus, UnknownTaskStatus> {
        TaskStatus::from_name(name).ok_or_else(|| UnknownTaskStatus {
            input: fact_model::clip(name, 64).into_owned(),
        })
    }
}

/// A task status name that is none of `pending`, `in_progress`, `completed`; the message
/// lists them.
///
/// ```
/// let err = "done".parse::<ledger::TaskStatus>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"unknown task status "done"; allowed: pending, in_progress, completed"#,
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown task status {input:?}; allowed: pending, in_progress, completed")]
pub struct UnknownTaskStatus {
    /// The rejected text, clipped to 64 characters.
    pub input: String,
}

/// A piece of a task's text: a span of the file it was parsed from, or text the parser
/// had to assemble (joined lines, an unescaped id, a multi-line prompt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text {
    /// Bytes `start..end` of the task's source.
    Span(usize, usize),
    /// Assembled text.
    Owned(Box<str>),
}

/// Turns slices of one source text into [`Text`] spans without copying them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spanner {
    base: usize,
    len: usize,
}

impl Spanner {
    /// A spanner over `source`.
    pub(crate) fn new(source: &str) -> Self {
        Spanner {
            base: source.as_ptr() as usize,
            len: source.len(),
        }
    }

    /// The byte offset of `slice` in the source, when it lies within it.
    pub(crate) fn offset(self, slice: &str) -> Option<usize> {
        let start = (slice.as_ptr() as usize).checked_sub(self.base)?;
        (start.checked_add(slice.len())? <= self.len).then_some(start)
    }

    /// `slice` as a span when it lies within the source, else as owned text.
    pub(crate) fn text(self, slice: &str) -> Text {
        let start = (slice.as_ptr() as usize).wrapping_sub(self.base);
        match start.checked_add(slice.len()) {
            Some(end) if start <= self.len && end <= self.len => Text::Span(start, end),
            _ => Text::Owned(slice.into()),
        }
    }
}

/// One task of a tasks.md, in file order, with everything written under it.
///
/// Its texts are spans of the file's text, shared by all the tasks of a parse, so parsing
/// copies almost nothing.
#[derive(Clone)]
pub struct Task {
    pub(crate) source: Arc<str>,
    pub(crate) id: Text,
    pub(crate) title: Text,
    pub(crate) status: TaskStatus,
    /// The byte offset of the checkbox marker (between the brackets) in `source`.
    pub(crate) marker: usize,
    pub(crate) depth: usize,
    pub(crate) line: usize,
    pub(crate) requirements: Vec<Text>,
    pub(crate) leverage: Option<Text>,
    pub(crate) files: Vec<Text>,
    pub(crate) purpose: Option<Text>,
    pub(crate) details: Vec<Text>,
    pub(crate) prompt: Option<Text>,
}

impl Task {
    /// The text of `text`.
    pub(crate) fn resolve<'s>(&'s self, text: &'s Text) -> &'s str {
        match text {
            Text::Span(start, end) => self.source.get(*start..*end).unwrap_or_default(),
            Text::Owned(owned) => owned,
        }
    }

    fn resolve_all<'s>(&'s self, texts: &'s [Text]) -> Vec<&'s str> {
        texts.iter().map(|t| self.resolve(t)).collect()
    }

    /// The task's id as written, without a trailing `.` or escape: `1`, `1.2`, `3.4.1`.
    #[must_use]
    pub fn id(&self) -> &str {
        self.resolve(&self.id)
    }

    /// The title after the id.
    #[must_use]
    pub fn title(&self) -> &str {
        self.resolve(&self.title)
    }

    /// The checkbox state.
    #[must_use]
    pub fn status(&self) -> TaskStatus {
        self.status
    }

    /// The nesting level: 0 for a top-level bullet, 1 for one indented under it, …
    #[must_use]
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The 1-based line of the task in the file.
    #[must_use]
    pub fn line(&self) -> usize {
        self.line
    }

    /// Requirement ids from `_Requirements: 1.1, 2_`.
    #[must_use]
    pub fn requirements(&self) -> Vec<&str> {
        self.resolve_all(&self.requirements)
    }

    /// The text of `_Leverage: …_`.
    #[must_use]
    pub fn leverage(&self) -> Option<&str> {
        self.leverage.as_ref().map(|t| self.resolve(t))
    }

    /// Paths from `File:` / `Files:` lines.
    #[must_use]
    pub fn files(&self) -> Vec<&str> {
        self.resolve_all(&self.files)
    }

    /// The text of `Purpose: …`.
    #[must_use]
    pub fn purpose(&self) -> Option<&str> {
        self.purpose.as_ref().map(|t| self.resolve(t))
    }

    /// Other bullets under the task: implementation details.
    #[must_use]
    pub fn details(&self) -> Vec<&str> {
        self.resolve_all(&self.details)
    }

    /// The whole `_Prompt: …_` text, over as many lines (blank ones included) as it takes.
    #[must_use]
    pub fn prompt(&self) -> Option<&str> {
        self.prompt.as_ref().map(|t| self.resolve(t))
    }

    /// The prompt's `|`-separated `Key: value` sections (Role, Task, Restrictions,
    /// Success, Instructions, …), in order; empty when the prompt has none.
    ///
    /// Computed from the prompt on each call (linear in its length), so parsing a file
    /// does not pay for sections nobody reads.
    #[must_use]
    pub fn prompt_sections(&self) -> Vec<(&str, &str)> {
        let prompt = self.prompt().unwrap_or_default();
        crate::prompt::prompt_sections(prompt)
            .into_iter()
            .filter_map(|(key, value)| Some((prompt.get(key)?, prompt.get(value)?)))
            .collect()
    }

    /// The value of the prompt section named `key` (case-insensitive).
    #[must_use]
    pub fn prompt_section(&self, key: &str) -> Option<&str> {
        self.prompt_sections()
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    }
}

impl PartialEq for Task {
    /// Tasks are equal when everything they say is equal, wherever their text lives.
    fn eq(&self, other: &Self) -> bool {
        (self.status, self.depth, self.line) == (other.status, other.depth, other.line)
            && self.id() == other.id()
            && self.title() == other.title()
            && self.requirements() == other.requirements()
            && self.leverage() == other.leverage()
            && self.files() == other.files()
            && self.purpose() == other.purpose()
            && self.details() == other.details()
            && self.prompt() == other.prompt()
    }
}

impl Eq for Task {}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id())
            .field("title", &self.title())
            .field("status", &self.status)
            .field("depth", &self.depth)
            .field("line", &self.line)
            .field("requirements", &self.requirements())
            .field("leverage", &self.leverage())
            .field("files", &self.files())
            .field("purpose", &self.purpose())
            .field("details", &self.details())
            .field("prompt", &self.prompt())
            .finish()
    }
}

impl Serialize for Task {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Task", 11)?;
        s.serialize_field("id", self.id())?;
        s.serialize_field("title", self.title())?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("depth", &self.depth)?;
        s.serialize_field("line", &self.line)?;
        s.serialize_field("requirements", &self.requirements())?;
        s.serialize_field("leverage", &self.leverage())?;
        s.serialize_field("files", &self.files())?;
        s.serialize_field("purpose", &self.purpose())?;
        s.serialize_field("details", &self.details())?;
        s.serialize_field("prompt", &self.prompt())?;
        s.end()
    }
}

/// A problem in a tasks.md that does not stop parsing, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The line it concerns.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

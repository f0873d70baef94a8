//! [`Task`]: one task line of a tasks.md with the metadata lines under it.

use serde::Serialize;

/// Where a task stands, from its checkbox: `[ ]`, `[-]`, `[x]`/`[X]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
    /// The snake_case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
        }
    }
}

/// One task of a tasks.md, in file order, with everything written under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) status: TaskStatus,
    pub(crate) depth: usize,
    pub(crate) line: usize,
    pub(crate) requirements: Vec<String>,
    pub(crate) leverage: Option<String>,
    pub(crate) files: Vec<String>,
    pub(crate) purpose: Option<String>,
    pub(crate) details: Vec<String>,
    pub(crate) prompt: Option<String>,
    /// `(key, value)` byte ranges into `prompt`: sections borrow the prompt's text.
    #[serde(skip)]
    pub(crate) prompt_sections: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

impl Task {
    /// The task's id as written, without a trailing `.` or escape: `1`, `1.2`, `3.4.1`.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The title after the id.
    #[must_use]
    pub fn title(&self) -> &str {
        &self.title
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
    pub fn requirements(&self) -> &[String] {
        &self.requirements
    }

    /// The text of `_Leverage: …_`.
    #[must_use]
    pub fn leverage(&self) -> Option<&str> {
        self.leverage.as_deref()
    }

    /// Paths from `File:` / `Files:` lines.
    #[must_use]
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// The text of `Purpose: …`.
    #[must_use]
    pub fn purpose(&self) -> Option<&str> {
        self.purpose.as_deref()
    }

    /// Other bullets under the task: implementation details.
    #[must_use]
    pub fn details(&self) -> &[String] {
        &self.details
    }

    /// The whole `_Prompt: …_` text, over as many lines (blank ones included) as it takes.
    #[must_use]
    pub fn prompt(&self) -> Option<&str> {
        self.prompt.as_deref()
    }

    /// The prompt's `|`-separated `Key: value` sections (Role, Task, Restrictions,
    /// Success, Instructions, …), in order; empty when the prompt has none.
    #[must_use]
    pub fn prompt_sections(&self) -> Vec<(&str, &str)> {
        let prompt = self.prompt.as_deref().unwrap_or_default();
        self.prompt_sections
            .iter()
            .filter_map(|(key, value)| Some((prompt.get(key.clone())?, prompt.get(value.clone())?)))
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

/// A problem in a tasks.md that does not stop parsing, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The line it concerns.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

//! The dispatch contract: what implementer and reviewer agents report, as serde types.
//!
//! These are plain data, deserialized leniently: a missing list, or a `null` where a list
//! belongs, becomes an empty list, and a missing text becomes an empty string, so that
//! extraction can take what a result offers. Strict schema validation (required fields,
//! field paths in errors) belongs to the runtime that receives raw agent output.

use serde::{Deserialize, Deserializer, Serialize};

use crate::SourceRole;

/// Deserializes `null` as the type's default value.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// The outcome an implementer reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImplementerStatus {
    /// The task is done.
    Completed,
    /// The task cannot proceed until something else happens.
    Blocked,
    /// The attempt failed.
    Failed,
}

impl ImplementerStatus {
    /// The snake_case wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ImplementerStatus::Completed => "completed",
            ImplementerStatus::Blocked => "blocked",
            ImplementerStatus::Failed => "failed",
        }
    }
}

/// One test command an implementer ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRun {
    /// The command, e.g. `cargo test -p fact-store`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub command: String,
    /// Whether it passed.
    #[serde(default, deserialize_with = "null_as_default")]
    pub passed: bool,
    /// Failure lines, when it did not pass.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub failures: Vec<String>,
}

/// What an implementer agent reports at the end of a dispatch.
///
/// `files_changed` is also accepted under its older name `files_modified`.
///
/// ```
/// use fact_model::{ImplementerResult, ImplementerStatus};
///
/// let result: ImplementerResult = serde_json::from_str(r#"{
///     "task_id": "2", "status": "completed", "summary": "Added the parser",
///     "files_modified": ["src/parser.rs"], "tests": null
/// }"#)?;
/// assert_eq!(result.status, ImplementerStatus::Completed);
/// assert_eq!(result.files_changed, ["src/parser.rs"]);
/// assert!(result.tests.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImplementerResult {
    /// The task this result answers.
    pub task_id: String,
    /// The outcome.
    pub status: ImplementerStatus,
    /// What was done, in prose.
    #[serde(default, deserialize_with = "null_as_default")]
    pub summary: String,
    /// Paths of the files created or modified.
    #[serde(
        default,
        alias = "files_modified",
        deserialize_with = "null_as_default"
    )]
    pub files_changed: Vec<String>,
    /// Test commands run, with their outcome.
    #[serde(default, deserialize_with = "null_as_default")]
    pub tests: Vec<TestRun>,
    /// What still has to happen.
    #[serde(default, deserialize_with = "null_as_default")]
    pub follow_up_actions: Vec<String>,
}

/// A reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Assessment {
    /// The work is accepted.
    Approved,
    /// The implementer must fix the listed issues.
    NeedsChanges,
    /// The task cannot proceed.
    Blocked,
}

impl Assessment {
    /// The snake_case wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Assessment::Approved => "approved",
            Assessment::NeedsChanges => "needs_changes",
            Assessment::Blocked => "blocked",
        }
    }
}

/// How serious a review issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Must be fixed before anything else.
    Critical,
    /// Should be fixed in this task.
    Important,
    /// Worth fixing.
    Minor,
}

impl Severity {
    /// The snake_case wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Important => "important",
            Severity::Minor => "minor",
        }
    }
}

/// One problem a reviewer found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewIssue {
    /// How serious it is.
    pub severity: Severity,
    /// The file it concerns, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What is wrong.
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: String,
    /// How to fix it.
    #[serde(default, deserialize_with = "null_as_default")]
    pub fix: String,
}

/// What a reviewer agent reports at the end of a dispatch.
///
/// ```
/// use fact_model::{Assessment, ReviewerResult, Severity};
///
/// let result: ReviewerResult = serde_json::from_str(r#"{
///     "task_id": "2", "assessment": "needs_changes",
///     "issues": [{"severity": "critical", "file": "src/api.rs",
///                 "message": "Missing validation", "fix": "Validate the body"}],
///     "required_fixes": ["Validate the body"]
/// }"#)?;
/// assert_eq!(result.assessment, Assessment::NeedsChanges);
/// assert_eq!(result.issues[0].severity, Severity::Critical);
/// assert!(result.strengths.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewerResult {
    /// The task this review answers.
    pub task_id: String,
    /// The verdict.
    pub assessment: Assessment,
    /// What was done well.
    #[serde(default, deserialize_with = "null_as_default")]
    pub strengths: Vec<String>,
    /// Problems found.
    #[serde(default, deserialize_with = "null_as_default")]
    pub issues: Vec<ReviewIssue>,
    /// Fixes the implementer must make.
    #[serde(default, deserialize_with = "null_as_default")]
    pub required_fixes: Vec<String>,
}

/// A dispatch result of either agent: the one value the extractor, the task ledger and the
/// runtime pass around, so none of them matches on the agent more than it must.
///
/// It serializes as the result itself (no wrapper): the agent is known from the fields.
///
/// ```
/// use fact_model::{DispatchResult, ReviewerResult, SourceRole};
///
/// let review: ReviewerResult = serde_json::from_str(
///     r#"{"task_id": "2", "assessment": "approved"}"#,
/// )?;
/// let result = DispatchResult::from(review);
/// assert_eq!(result.role(), SourceRole::Reviewer);
/// assert_eq!(result.task_id(), "2");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DispatchResult {
    /// An implementer's result.
    Implementer(ImplementerResult),
    /// A reviewer's result.
    Reviewer(ReviewerResult),
}

impl DispatchResult {
    /// The agent that produced it: [`SourceRole::Implementer`] or [`SourceRole::Reviewer`].
    #[must_use]
    pub fn role(&self) -> SourceRole {
        match self {
            DispatchResult::Implementer(_) => SourceRole::Implementer,
            DispatchResult::Reviewer(_) => SourceRole::Reviewer,
        }
    }

    /// The task the result reports on.
    #[must_use]
    pub fn task_id(&self) -> &str {
        match self {
            DispatchResult::Implementer(result) => &result.task_id,
            DispatchResult::Reviewer(result) => &result.task_id,
        }
    }
}

impl From<ImplementerResult> for DispatchResult {
    fn from(result: ImplementerResult) -> Self {
        DispatchResult::Implementer(result)
    }
}

impl From<ReviewerResult> for DispatchResult {
    fn from(result: ReviewerResult) -> Self {
        DispatchResult::Reviewer(result)
    }
}

//! The relations the default rules write, by name, so code that reads or settles their
//! facts (the runtime invalidates `must_fix`, `blocked_by` and `issue` facts a result
//! settles) names the same string the rules write.

/// `task:{id} completed_with {status}`.
pub const COMPLETED_WITH: &str = "completed_with";
/// `task:{id} summary {summary}`.
pub const SUMMARY: &str = "summary";
/// `{path} modified_by task:{id}`.
pub const MODIFIED_BY: &str = "modified_by";
/// `{path} mentioned_by task:{id}`.
pub const MENTIONED_BY: &str = "mentioned_by";
/// `task:{id} requires {follow-up}`.
pub const REQUIRES: &str = "requires";
/// `task:{id} blocked_by {follow-up}`, for a blocked or failed task.
pub const BLOCKED_BY: &str = "blocked_by";
/// `{command} passed_in task:{id}`.
pub const PASSED_IN: &str = "passed_in";
/// `{command} failed_in task:{id}`.
pub const FAILED_IN: &str = "failed_in";
/// `{command} failure {failure line}`.
pub const FAILURE: &str = "failure";
/// `task:{id} reviewed_as {assessment}`.
pub const REVIEWED_AS: &str = "reviewed_as";
/// `{file or task:{id}} issue [{severity}] {message}`.
pub const ISSUE: &str = "issue";
/// `task:{id} must_fix {fix}`.
pub const MUST_FIX: &str = "must_fix";
/// `{file or task:{id}} convention {message}`.
pub const CONVENTION: &str = "convention";

/// The relation constant equal to `name`, if `name` is one of the above: facts of the
/// default rules share the static text instead of copying it.
pub(crate) fn known(name: &str) -> Option<&'static str> {
    [
        COMPLETED_WITH,
        SUMMARY,
        MODIFIED_BY,
        MENTIONED_BY,
        REQUIRES,
        BLOCKED_BY,
        PASSED_IN,
        FAILED_IN,
        FAILURE,
        REVIEWED_AS,
        ISSUE,
        MUST_FIX,
        CONVENTION,
    ]
    .into_iter()
    .find(|known| *known == name)
}

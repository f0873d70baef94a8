//! The default rules: one struct per row of the rule table.
//!
//! | rule | subject | relation | object | tags |
//! |---|---|---|---|---|
//! | [`Status`] | `task:{id}` | `completed_with` | status | decision |
//! | [`Summary`] | `task:{id}` | `summary` | summary, clipped to 120 chars | decision |
//! | [`FilesChanged`] | each changed path | `modified_by` | `task:{id}` | file_change |
//! | [`MentionedPaths`] | each path named in the summary but not changed | `mentioned_by` | `task:{id}` | file_change |
//! | [`FollowUps`] | `task:{id}` | `requires` | each follow-up action, clipped | dependency |
//! | [`Blockers`] | `task:{id}` (status blocked or failed) | `blocked_by` | each follow-up action, clipped | error |
//! | [`TestRuns`] | each test command | `passed_in` / `failed_in` | `task:{id}` | test |
//! | [`TestFailures`] | each test command | `failure` | each failure line, clipped | test, error |
//! | [`Assessment`] | `task:{id}` | `reviewed_as` | assessment | decision |
//! | [`Issues`] | the issue's file, else `task:{id}` | `issue` | `[{severity}] {message}`, clipped | error |
//! | [`RequiredFixes`] | `task:{id}` | `must_fix` | each fix, clipped | convention |
//! | [`Conventions`] | the issue's file, else `task:{id}` | `convention` | the message, clipped | convention |
//!
//! [`Conventions`] applies to issues whose message or fix mentions a convention:
//! a word starting with `convention`, `pattern`, `naming`, `style`, `camelcase`,
//! `snake_case`, `pascalcase` or `format`, in any case.

mod implementer;
mod reviewer;

use fact_model::{ImplementerResult, ReviewerResult};

use crate::ExtractionRule;

pub use self::implementer::{
    Blockers, FilesChanged, FollowUps, MentionedPaths, Status, Summary, TestFailures, TestRuns,
};
pub use self::reviewer::{Assessment, Conventions, Issues, RequiredFixes};

/// The default implementer rules, in table order.
#[must_use]
pub fn implementer_defaults() -> Vec<Box<dyn ExtractionRule<ImplementerResult>>> {
    vec![
        Box::new(Status),
        Box::new(Summary),
        Box::new(FilesChanged),
        Box::new(MentionedPaths),
        Box::new(FollowUps),
        Box::new(Blockers),
        Box::new(TestRuns),
        Box::new(TestFailures),
    ]
}

/// The default reviewer rules, in table order.
#[must_use]
pub fn reviewer_defaults() -> Vec<Box<dyn ExtractionRule<ReviewerResult>>> {
    vec![
        Box::new(Assessment),
        Box::new(Issues),
        Box::new(RequiredFixes),
        Box::new(Conventions),
    ]
}

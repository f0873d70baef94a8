//! The default rules: one [`FnRule`](crate::FnRule) constant per row of the rule table.
//!
//! | rule | subject | relation | object | tags |
//! |---|---|---|---|---|
//! | [`STATUS`] | `task:{id}` | `completed_with` | status | decision |
//! | [`SUMMARY`] | `task:{id}` | `summary` | summary, clipped to 120 chars | decision |
//! | [`FILES_CHANGED`] | each changed path | `modified_by` | `task:{id}` | file_change |
//! | [`MENTIONED_PATHS`] | each path named in the summary but not changed | `mentioned_by` | `task:{id}` | file_change |
//! | [`FOLLOW_UPS`] | `task:{id}` | `requires` | each follow-up action, clipped | dependency |
//! | [`BLOCKERS`] | `task:{id}` (status blocked or failed) | `blocked_by` | each follow-up action, clipped | error |
//! | [`TEST_RUNS`] | each test command | `passed_in` / `failed_in` | `task:{id}` | test |
//! | [`TEST_FAILURES`] | each test command | `failure` | each failure line, clipped | test, error |
//! | [`ASSESSMENT`] | `task:{id}` | `reviewed_as` | assessment | decision |
//! | [`ISSUES`] | the issue's file, else `task:{id}` | `issue` | `[{severity}] {message}`, clipped | error |
//! | [`REQUIRED_FIXES`] | `task:{id}` | `must_fix` | each fix, clipped | convention |
//! | [`CONVENTIONS`] | the issue's file, else `task:{id}` | `convention` | the message, clipped | convention |
//!
//! [`CONVENTIONS`] applies to issues whose message or fix mentions a convention:
//! a word starting with `convention`, `pattern`, `naming`, `style`, `camelcase`,
//! `snake_case`, `pascalcase` or `format`, in any case.

mod implementer;
mod reviewer;

use fact_model::{ImplementerResult, ReviewerResult};

use crate::rule::ExtractionRule;

pub use self::implementer::{
    BLOCKERS, FILES_CHANGED, FOLLOW_UPS, MENTIONED_PATHS, STATUS, SUMMARY, TEST_FAILURES, TEST_RUNS,
};
pub use self::reviewer::{ASSESSMENT, CONVENTIONS, ISSUES, REQUIRED_FIXES};

/// The default implementer rules, in table order.
#[must_use]
pub fn implementer_defaults() -> Vec<Box<dyn ExtractionRule<ImplementerResult>>> {
    [
        STATUS,
        SUMMARY,
        FILES_CHANGED,
        MENTIONED_PATHS,
        FOLLOW_UPS,
        BLOCKERS,
        TEST_RUNS,
        TEST_FAILURES,
    ]
    .into_iter()
    .map(|rule| Box::new(rule) as Box<dyn ExtractionRule<ImplementerResult>>)
    .collect()
}

/// The default reviewer rules, in table order.
#[must_use]
pub fn reviewer_defaults() -> Vec<Box<dyn ExtractionRule<ReviewerResult>>> {
    [ASSESSMENT, ISSUES, REQUIRED_FIXES, CONVENTIONS]
        .into_iter()
        .map(|rule| Box::new(rule) as Box<dyn ExtractionRule<ReviewerResult>>)
        .collect()
}

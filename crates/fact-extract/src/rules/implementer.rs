//! Rules for implementer results.

use fact_model::{FactSelector, ImplementerResult, ImplementerStatus, Tag};

use crate::paths::paths_in;
use crate::relation;
use crate::rule::{FnRule, RuleContext, RuleError, RuleOutput};
use crate::text::trim;

/// `task:{id} completed_with {status}` (decision); a completed task settles its
/// `blocked_by` facts.
pub const STATUS: FnRule<ImplementerResult> = FnRule::new("implementer.status", status);

fn status(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    ctx.add_task_word(
        out,
        relation::COMPLETED_WITH,
        result.status.as_str(),
        &[Tag::Decision],
    )?;
    if result.status == ImplementerStatus::Completed {
        out.settles
            .push(FactSelector::key(ctx.task_subject(), relation::BLOCKED_BY));
    }
    Ok(())
}

/// `task:{id} summary {summary, clipped}` (decision).
pub const SUMMARY: FnRule<ImplementerResult> = FnRule::new("implementer.summary", summary);

fn summary(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    ctx.add(
        out,
        ctx.task_subject(),
        relation::SUMMARY,
        trim(&result.summary),
        &[Tag::Decision],
    )?;
    Ok(())
}

/// `{path} modified_by task:{id}` for each changed file (file_change).
pub const FILES_CHANGED: FnRule<ImplementerResult> =
    FnRule::new("implementer.files_changed", files_changed);

fn files_changed(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for path in &result.files_changed {
        ctx.add(
            out,
            trim(path),
            relation::MODIFIED_BY,
            ctx.task_subject(),
            &[Tag::FileChange],
        )?;
    }
    Ok(())
}

/// `{path} mentioned_by task:{id}` for each path the summary names that is not among the
/// changed files (file_change). Detection is [`paths_in`].
pub const MENTIONED_PATHS: FnRule<ImplementerResult> =
    FnRule::new("implementer.mentioned_paths", mentioned_paths);

fn mentioned_paths(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for path in paths_in(&result.summary) {
        if !result
            .files_changed
            .iter()
            .any(|changed| trim(changed) == path)
        {
            ctx.add(
                out,
                path,
                relation::MENTIONED_BY,
                ctx.task_subject(),
                &[Tag::FileChange],
            )?;
        }
    }
    Ok(())
}

/// `task:{id} requires {action, clipped}` for each follow-up action (dependency).
pub const FOLLOW_UPS: FnRule<ImplementerResult> = FnRule::new("implementer.follow_ups", follow_ups);

fn follow_ups(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for action in &result.follow_up_actions {
        ctx.add(
            out,
            ctx.task_subject(),
            relation::REQUIRES,
            trim(action),
            &[Tag::Dependency],
        )?;
    }
    Ok(())
}

/// `task:{id} blocked_by {action, clipped}` for each follow-up action of a blocked or
/// failed result (error).
pub const BLOCKERS: FnRule<ImplementerResult> = FnRule::new("implementer.blockers", blockers);

fn blockers(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    if result.status != ImplementerStatus::Completed {
        for action in &result.follow_up_actions {
            ctx.add(
                out,
                ctx.task_subject(),
                relation::BLOCKED_BY,
                trim(action),
                &[Tag::Error],
            )?;
        }
    }
    Ok(())
}

/// `{command} passed_in task:{id}` or `{command} failed_in task:{id}` for each test run
/// (test).
pub const TEST_RUNS: FnRule<ImplementerResult> = FnRule::new("implementer.test_runs", test_runs);

fn test_runs(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for run in &result.tests {
        let relation = if run.passed {
            relation::PASSED_IN
        } else {
            relation::FAILED_IN
        };
        ctx.add(
            out,
            trim(&run.command),
            relation,
            ctx.task_subject(),
            &[Tag::Test],
        )?;
    }
    Ok(())
}

/// `{command} failure {line, clipped}` for each failure line of each test run (test, error).
pub const TEST_FAILURES: FnRule<ImplementerResult> =
    FnRule::new("implementer.test_failures", test_failures);

fn test_failures(
    result: &ImplementerResult,
    ctx: &RuleContext<'_>,
    out: &mut RuleOutput,
) -> Result<(), RuleError> {
    for run in &result.tests {
        for failure in &run.failures {
            ctx.add(
                out,
                trim(&run.command),
                relation::FAILURE,
                trim(failure),
                &[Tag::Test, Tag::Error],
            )?;
        }
    }
    Ok(())
}

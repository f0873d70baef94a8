//! Rules for implementer results.

use fact_model::{ImplementerResult, ImplementerStatus, Tag};

use crate::{ExtractionRule, RuleContext, RuleError, RuleOutput, paths_in};

/// `task:{id} completed_with {status}` (decision).
#[derive(Debug, Clone, Copy, Default)]
pub struct Status;

impl ExtractionRule<ImplementerResult> for Status {
    fn name(&self) -> &str {
        "implementer.status"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        out.push(ctx.fact(
            ctx.task_subject(),
            "completed_with",
            result.status.as_str(),
            &[Tag::Decision],
        )?);
        Ok(out)
    }
}

/// `task:{id} summary {summary, clipped}` (decision).
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary;

impl ExtractionRule<ImplementerResult> for Summary {
    fn name(&self) -> &str {
        "implementer.summary"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        out.push(ctx.fact(
            ctx.task_subject(),
            "summary",
            result.summary.trim(),
            &[Tag::Decision],
        )?);
        Ok(out)
    }
}

/// `{path} modified_by task:{id}` for each changed file (file_change).
#[derive(Debug, Clone, Copy, Default)]
pub struct FilesChanged;

impl ExtractionRule<ImplementerResult> for FilesChanged {
    fn name(&self) -> &str {
        "implementer.files_changed"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        for path in &result.files_changed {
            out.push(ctx.fact(
                path.trim(),
                "modified_by",
                ctx.task_subject(),
                &[Tag::FileChange],
            )?);
        }
        Ok(out)
    }
}

/// `{path} mentioned_by task:{id}` for each path the summary names that is not among the
/// changed files (file_change). Detection is [`paths_in`].
#[derive(Debug, Clone, Copy, Default)]
pub struct MentionedPaths;

impl ExtractionRule<ImplementerResult> for MentionedPaths {
    fn name(&self) -> &str {
        "implementer.mentioned_paths"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        for path in paths_in(&result.summary) {
            if !result
                .files_changed
                .iter()
                .any(|changed| changed.trim() == path)
            {
                out.push(ctx.fact(path, "mentioned_by", ctx.task_subject(), &[Tag::FileChange])?);
            }
        }
        Ok(out)
    }
}

/// `task:{id} requires {action, clipped}` for each follow-up action (dependency).
#[derive(Debug, Clone, Copy, Default)]
pub struct FollowUps;

impl ExtractionRule<ImplementerResult> for FollowUps {
    fn name(&self) -> &str {
        "implementer.follow_ups"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        for action in &result.follow_up_actions {
            out.push(ctx.fact(
                ctx.task_subject(),
                "requires",
                action.trim(),
                &[Tag::Dependency],
            )?);
        }
        Ok(out)
    }
}

/// `task:{id} blocked_by {action, clipped}` for each follow-up action of a blocked or
/// failed result (error).
#[derive(Debug, Clone, Copy, Default)]
pub struct Blockers;

impl ExtractionRule<ImplementerResult> for Blockers {
    fn name(&self) -> &str {
        "implementer.blockers"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        if result.status != ImplementerStatus::Completed {
            for action in &result.follow_up_actions {
                out.push(ctx.fact(
                    ctx.task_subject(),
                    "blocked_by",
                    action.trim(),
                    &[Tag::Error],
                )?);
            }
        }
        Ok(out)
    }
}

/// `{command} passed_in task:{id}` or `{command} failed_in task:{id}` for each test run
/// (test).
#[derive(Debug, Clone, Copy, Default)]
pub struct TestRuns;

impl ExtractionRule<ImplementerResult> for TestRuns {
    fn name(&self) -> &str {
        "implementer.test_runs"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        for run in &result.tests {
            let relation = if run.passed { "passed_in" } else { "failed_in" };
            out.push(ctx.fact(
                run.command.trim(),
                relation,
                ctx.task_subject(),
                &[Tag::Test],
            )?);
        }
        Ok(out)
    }
}

/// `{command} failure {line, clipped}` for each failure line of each test run (test, error).
#[derive(Debug, Clone, Copy, Default)]
pub struct TestFailures;

impl ExtractionRule<ImplementerResult> for TestFailures {
    fn name(&self) -> &str {
        "implementer.test_failures"
    }

    fn extract(
        &self,
        result: &ImplementerResult,
        ctx: &RuleContext<'_>,
    ) -> Result<RuleOutput, RuleError> {
        let mut out = RuleOutput::default();
        for run in &result.tests {
            for failure in &run.failures {
                out.push(ctx.fact(
                    run.command.trim(),
                    "failure",
                    failure.trim(),
                    &[Tag::Test, Tag::Error],
                )?);
            }
        }
        Ok(out)
    }
}

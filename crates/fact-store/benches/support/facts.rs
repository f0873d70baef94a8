//! Typical dispatch facts for the store benchmarks, shaped like the rule extractor's
//! output for the workload's results (subjects `task:N` and file paths, clipped texts).

#![allow(dead_code)]

use fact_model::{SessionFact, SourceRole, Tag, Timestamp, clip};

use super::workload::Task;

fn fact(
    subject: &str,
    relation: &str,
    object: &str,
    tag: Tag,
    task: &str,
    role: SourceRole,
    at: Timestamp,
) -> Option<SessionFact> {
    SessionFact::builder(subject, relation, clip(object, 120))
        .tag(tag)
        .source(task, role)
        .valid_from(at)
        .build()
        .ok()
}

/// A batch of six facts from one task's implementer result: status, summary, three
/// changed files and a follow-up action.
pub(crate) fn batch_of_six(task: &Task, at: Timestamp) -> Vec<SessionFact> {
    let result = &task.implementer;
    let id = result.task_id.as_str();
    let subject = format!("task:{id}");
    let role = SourceRole::Implementer;
    let mut facts = vec![
        fact(
            &subject,
            "completed_with",
            result.status.as_str(),
            Tag::Decision,
            id,
            role,
            at,
        ),
        fact(
            &subject,
            "summary",
            &result.summary,
            Tag::Decision,
            id,
            role,
            at,
        ),
    ];
    facts.extend(
        result
            .files_changed
            .iter()
            .take(3)
            .map(|path| fact(path, "modified_by", &subject, Tag::FileChange, id, role, at)),
    );
    facts.extend(
        result
            .follow_up_actions
            .iter()
            .take(1)
            .map(|action| fact(&subject, "requires", action, Tag::Dependency, id, role, at)),
    );
    facts.into_iter().flatten().collect()
}

/// The facts of both results of a task, as two batches (implementer, reviewer).
pub(crate) fn task_batches(task: &Task, at: Timestamp) -> [Vec<SessionFact>; 2] {
    let id = task.implementer.task_id.as_str();
    let subject = format!("task:{id}");
    let implementer = &task.implementer;
    let role = SourceRole::Implementer;
    let mut first = batch_of_six(task, at);
    first.extend(
        implementer
            .files_changed
            .iter()
            .skip(3)
            .filter_map(|path| fact(path, "modified_by", &subject, Tag::FileChange, id, role, at)),
    );
    first.extend(implementer.tests.iter().filter_map(|run| {
        let relation = if run.passed { "passed_in" } else { "failed_in" };
        fact(&run.command, relation, &subject, Tag::Test, id, role, at)
    }));
    let reviewer = &task.reviewer;
    let role = SourceRole::Reviewer;
    let mut second = vec![fact(
        &subject,
        "reviewed_as",
        reviewer.assessment.as_str(),
        Tag::Decision,
        id,
        role,
        at,
    )];
    for issue in &reviewer.issues {
        let on = issue.file.as_deref().unwrap_or(&subject);
        second.push(fact(
            on,
            "issue",
            &format!("[{}] {}", issue.severity.as_str(), issue.message),
            Tag::Error,
            id,
            role,
            at,
        ));
        if issue.message.contains("convention") {
            second.push(fact(
                on,
                "convention",
                &issue.message,
                Tag::Convention,
                id,
                role,
                at,
            ));
        }
    }
    second.extend(
        reviewer
            .required_fixes
            .iter()
            .map(|fix| fact(&subject, "must_fix", fix, Tag::Convention, id, role, at)),
    );
    [first, second.into_iter().flatten().collect()]
}

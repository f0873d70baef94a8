//! The pieces of a compiled prompt: the stable prefix per role, the guide instruction, the
//! ledger-first task prompt, and acceptance criteria taken from requirements.md.

use crate::Role;

/// The implementer's stable prefix: the contract, byte-identical on every compile.
pub const IMPLEMENTER_PREFIX: &str = "\
You are the implementer of one task of a spec. Work on that task only.
When you finish, end your reply with exactly one result block, valid JSON with exactly these keys:
BEGIN_DISPATCH_RESULT
{\"task_id\": \"<the task id>\", \"status\": \"completed|blocked|failed\", \"summary\": \"<what you did>\", \
\"files_changed\": [\"<path>\"], \"tests\": [{\"command\": \"<command>\", \"passed\": true, \"failures\": [\"<line>\"]}], \
\"follow_up_actions\": [\"<what still has to happen>\"]}
END_DISPATCH_RESULT
Prose before the block is ignored; a missing or malformed block ends the dispatch.";

/// The reviewer's stable prefix: the contract, byte-identical on every compile.
pub const REVIEWER_PREFIX: &str = "\
You are the reviewer of one task of a spec. Review the implementer's work on that task only.
When you finish, end your reply with exactly one result block, valid JSON with exactly these keys:
BEGIN_DISPATCH_RESULT
{\"task_id\": \"<the task id>\", \"assessment\": \"approved|needs_changes|blocked\", \"strengths\": [\"<strength>\"], \
\"issues\": [{\"severity\": \"critical|important|minor\", \"file\": \"<path>\", \"message\": \"<problem>\", \"fix\": \"<fix>\"}], \
\"required_fixes\": [\"<fix the implementer must make>\"]}
END_DISPATCH_RESULT
Prose before the block is ignored; a missing or malformed block ends the dispatch.";

/// The stable prefix of `role`.
#[must_use]
pub fn stable_prefix(role: Role) -> &'static str {
    match role {
        Role::Implementer => IMPLEMENTER_PREFIX,
        Role::Reviewer => REVIEWER_PREFIX,
    }
}

/// The guide instruction: in full on a role's first compile in a run, then compact.
#[must_use]
pub fn guide_instruction(role: Role, full: bool) -> &'static str {
    match (role, full) {
        (Role::Implementer, true) => {
            "Guide (full): write the tests first and see them fail; make the smallest change \
            that passes them; keep to the files the task names; run the project's checks before you report; \
            report blockers instead of guessing."
        }
        (Role::Reviewer, true) => {
            "Guide (full): check the work against the task's acceptance criteria and the \
            project's conventions; run the tests; name each problem with its severity, file and fix; approve only \
            when nothing critical or important remains."
        }
        (Role::Implementer, false) => {
            "Guide (compact): follow the implementer guide given under this cache key."
        }
        (Role::Reviewer, false) => {
            "Guide (compact): follow the reviewer guide given under this cache key."
        }
    }
}

/// The acceptance criteria of `requirements.md` named by `ids`, as `- {id}: {text}` lines.
///
/// `### Requirement N` headings number requirements; the numbered lines under them are
/// their criteria, `N.1`, `N.2`, …; an id `N` names all of requirement N's criteria.
/// Returns the lines found and the ids that matched nothing.
#[must_use]
pub fn acceptance_criteria(requirements_md: &str, ids: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut current: Option<String> = None;
    let mut found: Vec<(String, String)> = Vec::new();
    for line in requirements_md.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("### Requirement") {
            current = rest
                .trim_start()
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .filter(|n| !n.is_empty())
                .map(str::to_owned);
            continue;
        }
        if trimmed.starts_with('#') && !trimmed.starts_with("####") {
            current = None;
            continue;
        }
        let Some(requirement) = &current else {
            continue;
        };
        if let Some((number, text)) = trimmed.split_once(". ")
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
        {
            found.push((format!("{requirement}.{number}"), text.trim().to_owned()));
        }
    }
    let mut lines = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        let matching: Vec<&(String, String)> = found
            .iter()
            .filter(|(criterion, _)| {
                criterion == id
                    || criterion
                        .strip_prefix(id)
                        .is_some_and(|r| r.starts_with('.'))
            })
            .collect();
        if matching.is_empty() {
            missing.push((*id).to_owned());
        }
        for (criterion, text) in matching {
            lines.push(format!("- {criterion}: {text}"));
        }
    }
    (lines, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIREMENTS: &str = "# Requirements\n\n### Requirement 1: Extraction\n\n#### Acceptance Criteria\n\n\
        1. WHEN a result arrives THEN facts are extracted.\n2. WHEN a rule fails THEN others run.\n\n\
        ### Requirement 2: Store\n\n#### Acceptance Criteria\n\n1. WHEN facts are added THEN old ones are invalidated.\n\n\
        ## Non-Functional Requirements\n\n1. Not a criterion.\n";

    #[test]
    fn criteria_are_found_by_exact_id_or_requirement() {
        let (lines, missing) = acceptance_criteria(REQUIREMENTS, &["1.2", "2", "9.9"]);
        assert_eq!(
            lines,
            [
                "- 1.2: WHEN a rule fails THEN others run.",
                "- 2.1: WHEN facts are added THEN old ones are invalidated."
            ]
        );
        assert_eq!(missing, ["9.9"]);
        assert!(acceptance_criteria("", &["1"]).0.is_empty());
    }

    #[test]
    fn prefixes_differ_by_role_and_name_the_markers() {
        assert_ne!(
            stable_prefix(Role::Implementer),
            stable_prefix(Role::Reviewer)
        );
        for role in [Role::Implementer, Role::Reviewer] {
            assert!(stable_prefix(role).contains("BEGIN_DISPATCH_RESULT"));
            assert!(stable_prefix(role).contains("END_DISPATCH_RESULT"));
        }
    }
}

//! The pieces of a compiled prompt: the stable prefix per role, the guide instruction, the
//! ledger-first task prompt, and acceptance criteria taken from requirements.md.

use fact_model::SourceRole;

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

/// The stable prefix of `role`; `None` unless it is a
/// [dispatch agent](SourceRole::is_dispatch_agent).
#[must_use]
pub fn stable_prefix(role: SourceRole) -> Option<&'static str> {
    match role {
        SourceRole::Implementer => Some(IMPLEMENTER_PREFIX),
        SourceRole::Reviewer => Some(REVIEWER_PREFIX),
        _ => None,
    }
}

/// The guide instruction: in full on a role's first compile in a run, then compact; `None`
/// unless `role` is a [dispatch agent](SourceRole::is_dispatch_agent).
#[must_use]
pub fn guide_instruction(role: SourceRole, full: bool) -> Option<&'static str> {
    let guide = match (role, full) {
        (SourceRole::Implementer, true) => {
            "Guide (full): write the tests first and see them fail; make the smallest change \
            that passes them; keep to the files the task names; run the project's checks before you report; \
            report blockers instead of guessing."
        }
        (SourceRole::Reviewer, true) => {
            "Guide (full): check the work against the task's acceptance criteria and the \
            project's conventions; run the tests; name each problem with its severity, file and fix; approve only \
            when nothing critical or important remains."
        }
        (SourceRole::Implementer, false) => {
            "Guide (compact): follow the implementer guide given under this cache key."
        }
        (SourceRole::Reviewer, false) => {
            "Guide (compact): follow the reviewer guide given under this cache key."
        }
        _ => return None,
    };
    Some(guide)
}

/// The acceptance criteria of `requirements.md` named by `ids`, as `- {id}: {text}` lines.
///
/// A `### Requirement N` heading (`### Requirement 3: Creation`) opens requirement `N`;
/// any other heading of level 1 to 3 closes it. Under it, a criterion is a line in one of
/// two forms:
///
/// - **numbered list**, as the spec corpus writes them: `1. WHEN …`, `2. IF …`; the item
///   numbered `k` is criterion `N.k`;
/// - **explicit id**, a dotted id of two or more parts before the text, bare or bold,
///   after an optional `-`, `*` or `+` bullet or list number, with an optional `.` or
///   `:` after it: `3.3 WHEN …`, `- 3.3 WHEN …`, `**3.3** WHEN …`, `- **3.3** WHEN …`,
///   `3.3. WHEN …`, `3.3: WHEN …`, `**3.3:** WHEN …`, `1. 3.4.1 WHEN …`. The id must
///   start with the requirement's number (`3.` under `### Requirement 3`), so a line
///   such as `- 2.5 seconds at most` is not taken for criterion 2.5.
///
/// Both forms may be mixed; when a list position and an explicit id give the same id, the
/// explicit one wins (`2. WHEN a` then `- **3.2** WHEN b` under requirement 3 make 3.2
/// `WHEN b`). Lines outside a requirement (`## Non-Functional Requirements`) are never
/// criteria.
///
/// An id names the criterion with exactly that id and those under it: `3.3` names `3.3`
/// and `3.3.1`, `3` names every criterion of requirement 3 (never `3.33`). Returns the
/// lines found, in the order of `ids` and then of the file, and the ids that matched
/// nothing.
///
/// ```
/// use dispatch_runtime::prompt::acceptance_criteria;
///
/// let md = "### Requirement 3: Creation\n\n#### Acceptance Criteria\n\n\
///           1. WHEN POST /todos is called THEN a todo SHALL be created\n\
///           - **3.3** WHEN the title is empty THEN the server SHALL answer 400\n";
/// let (lines, missing) = acceptance_criteria(md, &["3.1", "3.3", "3.4"]);
/// assert_eq!(
///     lines,
///     [
///         "- 3.1: WHEN POST /todos is called THEN a todo SHALL be created",
///         "- 3.3: WHEN the title is empty THEN the server SHALL answer 400",
///     ]
/// );
/// assert_eq!(missing, ["3.4"]);
/// ```
#[must_use]
pub fn acceptance_criteria(requirements_md: &str, ids: &[&str]) -> (Vec<String>, Vec<String>) {
    let found = criteria(requirements_md);
    let mut lines = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        let matching: Vec<&Criterion> = found
            .iter()
            .filter(|c| c.id == *id || c.id.strip_prefix(id).is_some_and(|r| r.starts_with('.')))
            .collect();
        if matching.is_empty() {
            missing.push((*id).to_owned());
        }
        for criterion in matching {
            lines.push(format!("- {}: {}", criterion.id, criterion.text));
        }
    }
    (lines, missing)
}

/// One acceptance criterion of requirements.md.
struct Criterion {
    id: String,
    text: String,
    /// Written with its id, rather than numbered by its list position.
    explicit: bool,
}

/// Every criterion of `requirements_md` in file order, without the list positions that
/// an explicit id overrides.
fn criteria(requirements_md: &str) -> Vec<Criterion> {
    let mut current: Option<&str> = None;
    let mut found: Vec<Criterion> = Vec::new();
    for line in requirements_md.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("### Requirement") {
            let rest = rest.trim_start();
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            current = rest.get(..digits).filter(|n| !n.is_empty());
            continue;
        }
        if trimmed.starts_with('#') && !trimmed.starts_with("####") {
            current = None;
            continue;
        }
        let Some(requirement) = current else {
            continue;
        };
        let criterion = if let Some((id, text)) = explicit_criterion(trimmed)
            && id
                .strip_prefix(requirement)
                .is_some_and(|r| r.starts_with('.'))
        {
            Criterion {
                id: id.to_owned(),
                text: text.to_owned(),
                explicit: true,
            }
        } else if let Some((number, text)) = trimmed.split_once(". ")
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
        {
            Criterion {
                id: format!("{requirement}.{number}"),
                text: text.trim().to_owned(),
                explicit: false,
            }
        } else {
            continue;
        };
        found.push(criterion);
    }
    // An explicit id wins over a list position giving the same id.
    let explicit: Vec<String> = found
        .iter()
        .filter(|c| c.explicit)
        .map(|c| c.id.clone())
        .collect();
    found.retain(|c| c.explicit || !explicit.contains(&c.id));
    found
}

/// The text after the blanks that start `text`; `None` when it does not start with one.
fn after_blank(text: &str) -> Option<&str> {
    let rest = text.trim_start_matches([' ', '\t']);
    (rest.len() < text.len()).then_some(rest)
}

/// The id and text of a line written with an explicit criterion id (see
/// [`acceptance_criteria`]): `3.3 WHEN …`, `- **3.3:** WHEN …`, `1. 3.3. WHEN …`.
fn explicit_criterion(line: &str) -> Option<(&str, &str)> {
    // An optional bullet or list number, followed by a blank.
    let mut rest = line;
    if let Some(after) = rest.strip_prefix(['-', '*', '+']).and_then(after_blank) {
        rest = after;
    } else {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0
            && let Some(after) = rest
                .get(digits..)
                .and_then(|r| r.strip_prefix(['.', ')']))
                .and_then(after_blank)
        {
            rest = after;
        }
    }
    let bold = rest.strip_prefix("**");
    rest = bold.unwrap_or(rest);
    // The id: digit groups joined by single dots, two groups at least.
    let mut len = 0;
    let mut groups = 0;
    loop {
        let digits = rest
            .get(len..)?
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            return None;
        }
        len += digits;
        groups += 1;
        match rest.get(len..)?.strip_prefix('.') {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => len += 1,
            _ => break,
        }
    }
    if groups < 2 {
        return None;
    }
    let id = rest.get(..len)?;
    rest = rest.get(len..)?;
    rest = rest.strip_prefix(['.', ':']).unwrap_or(rest);
    if bold.is_some() {
        rest = rest.strip_prefix("**")?;
        rest = rest.strip_prefix(['.', ':']).unwrap_or(rest);
    }
    let text = after_blank(rest)?.trim_end();
    (!text.is_empty()).then_some((id, text))
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
            stable_prefix(SourceRole::Implementer),
            stable_prefix(SourceRole::Reviewer)
        );
        for role in SourceRole::ALL {
            assert_eq!(stable_prefix(*role).is_some(), role.is_dispatch_agent());
            assert_eq!(
                guide_instruction(*role, true).is_some(),
                role.is_dispatch_agent()
            );
        }
        for role in SourceRole::DISPATCH_AGENTS {
            let prefix = stable_prefix(*role).unwrap();
            assert!(prefix.contains("BEGIN_DISPATCH_RESULT"));
            assert!(prefix.contains("END_DISPATCH_RESULT"));
        }
    }
}

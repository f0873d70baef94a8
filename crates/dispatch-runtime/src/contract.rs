//! The dispatch contract on the wire: what an agent's raw output must contain, checked in
//! the order the runtime reports failures.
//!
//! 1. Exactly one block between [`BEGIN_MARKER`] and [`END_MARKER`]; prose before and after
//!    is ignored, and marker text inside a JSON string value is not a marker
//!    (`marker_missing` otherwise).
//! 2. The block is JSON (`json_parse_failed`).
//! 3. The JSON has the role's schema: required fields, enum values, types, and a `task_id`
//!    equal to the run's task (`schema_invalid`, naming the field path, e.g.
//!    `$.issues[1].severity`).
//! 4. The block fits the output token budget, counted on the block alone, not on the prose
//!    around it (`output_token_budget_exceeded`).

use fact_model::{DispatchResult, SourceRole, TokenCounter};
use serde_json::Value;

/// The line that opens a dispatch result.
pub const BEGIN_MARKER: &str = "BEGIN_DISPATCH_RESULT";
/// The line that closes a dispatch result.
pub const END_MARKER: &str = "END_DISPATCH_RESULT";
/// The default output token budget of a dispatch result.
pub const DEFAULT_MAX_OUTPUT_TOKENS: usize = 1200;

/// Why an output breaks the contract. Each variant has a stable [`code`](Self::code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContractError {
    /// Not exactly one complete marked block.
    #[error("expected exactly one {BEGIN_MARKER} … {END_MARKER} block: {detail}")]
    MarkerMissing {
        /// What was found instead.
        detail: String,
    },
    /// The block is not JSON.
    #[error("the dispatch result is not valid JSON: {message}")]
    JsonParseFailed {
        /// serde_json's message, with line and column inside the block.
        message: String,
    },
    /// The JSON does not follow the role's schema.
    #[error("schema violation at {path}: {message}")]
    SchemaInvalid {
        /// The failing field, as a JSON path (`$.status`, `$.issues[0].severity`).
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The role is not a dispatch agent: only implementers and reviewers report results.
    #[error("{role} is not a dispatch agent; expected implementer or reviewer")]
    NotADispatchRole {
        /// The role given.
        role: SourceRole,
    },
    /// The block costs more tokens than allowed.
    #[error("the dispatch result costs {tokens} tokens; the budget is {budget}")]
    OutputTokenBudgetExceeded {
        /// What the block costs.
        tokens: usize,
        /// The budget.
        budget: usize,
    },
}

impl ContractError {
    /// The stable error code: `marker_missing`, `json_parse_failed`, `schema_invalid` or
    /// `output_token_budget_exceeded`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            ContractError::MarkerMissing { .. } => "marker_missing",
            ContractError::JsonParseFailed { .. } => "json_parse_failed",
            ContractError::SchemaInvalid { .. } => "schema_invalid",
            ContractError::OutputTokenBudgetExceeded { .. } => "output_token_budget_exceeded",
            ContractError::NotADispatchRole { .. } => "not_a_dispatch_role",
        }
    }

    /// Every code [`code`](Self::code) can return, for references.
    pub const CODES: &'static [&'static str] = &[
        "marker_missing",
        "json_parse_failed",
        "schema_invalid",
        "output_token_budget_exceeded",
        "not_a_dispatch_role",
    ];
}

fn missing(detail: impl Into<String>) -> ContractError {
    ContractError::MarkerMissing {
        detail: detail.into(),
    }
}

/// The text between the one [`BEGIN_MARKER`] and its [`END_MARKER`], trimmed, without a
/// Markdown code fence around it.
///
/// A begin marker counts only at the start of a line (after optional whitespace), so prose
/// that mentions the markers ("I will wrap the result in BEGIN_DISPATCH_RESULT …") is
/// ignored, before and after the block. Inside the block, double-quoted JSON strings (with
/// `\` escapes) are skipped when looking for the end marker, so a marker quoted in a value
/// does not end the block; the end marker may follow the JSON on its last line.
///
/// Quotes are tracked only inside a JSON object, from a `{` to its matching `}`: a stray
/// `"` in prose before the JSON (on the begin marker's line or the lines after it) or after
/// it does not open a string. And since a JSON string holds no raw newline, a string still
/// open at the end of a line was opened by a stray quote and ends there: a marker at the
/// start of a line always counts. (A root array's strings are not tracked; it fails the
/// schema anyway.)
///
/// # Errors
///
/// [`ContractError::MarkerMissing`] for no block, an unterminated block, or several blocks
/// (a second begin marker at the start of a line, inside the block or after it).
///
/// ```
/// use dispatch_runtime::extract_block;
///
/// let output = "I wrap results in BEGIN_DISPATCH_RESULT blocks.\n\
///     BEGIN_DISPATCH_RESULT\n{\"note\": \"END_DISPATCH_RESULT\"}\nEND_DISPATCH_RESULT\nBye";
/// assert_eq!(extract_block(output)?, "{\"note\": \"END_DISPATCH_RESULT\"}");
/// assert_eq!(extract_block("no block").unwrap_err().code(), "marker_missing");
/// # Ok::<(), dispatch_runtime::ContractError>(())
/// ```
pub fn extract_block(output: &str) -> Result<&str, ContractError> {
    let Some(begin) = line_start_markers(output, BEGIN_MARKER).next() else {
        return Err(missing(format!(
            "no {BEGIN_MARKER} marker at the start of a line"
        )));
    };
    let body = output.get(begin + BEGIN_MARKER.len()..).unwrap_or_default();
    let several = || missing("more than one block; send exactly one");
    // How many `{` of a JSON object are open: quotes count only inside one.
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    // Whether only whitespace precedes this char on its line; the body starts mid-line.
    let mut line_start = false;
    let mut end = None;
    for (at, c) in body.char_indices() {
        if c == '\n' {
            // No JSON string spans a line break: one still open was opened by a stray quote.
            (in_string, escaped, line_start) = (false, false, true);
            continue;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        let rest = body.get(at..).unwrap_or_default();
        if rest.starts_with(END_MARKER) {
            end = Some(at);
            break;
        }
        if line_start && rest.starts_with(BEGIN_MARKER) {
            return Err(several());
        }
        match c {
            '"' if depth > 0 => in_string = true,
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !c.is_whitespace() {
            line_start = false;
        }
    }
    let Some(end) = end else {
        return Err(missing(format!(
            "{BEGIN_MARKER} without a matching {END_MARKER}"
        )));
    };
    let after = body.get(end + END_MARKER.len()..).unwrap_or_default();
    if line_start_markers(after, BEGIN_MARKER).next().is_some() {
        return Err(several());
    }
    Ok(strip_fence(body.get(..end).unwrap_or_default().trim()))
}

/// Byte offsets of `marker` where only whitespace precedes it on its line.
fn line_start_markers<'t>(text: &'t str, marker: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(marker).map(|(at, _)| at).filter(|&at| {
        let before = text.get(..at).unwrap_or_default();
        let line = before.rsplit('\n').next().unwrap_or_default();
        line.chars().all(char::is_whitespace)
    })
}

/// `text` without a Markdown code fence around it (a first line starting with three
/// backticks and a last line of three backticks), trimmed.
fn strip_fence(text: &str) -> &str {
    let Some(opened) = text.strip_prefix("```") else {
        return text;
    };
    let Some((_, inner)) = opened.split_once('\n') else {
        return text;
    };
    inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
}

/// Walks a JSON value, naming the path of the first violation.
struct Check<'v> {
    value: &'v Value,
    path: String,
}

impl<'v> Check<'v> {
    fn root(value: &'v Value) -> Self {
        Check {
            value,
            path: "$".to_owned(),
        }
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, ContractError> {
        Err(ContractError::SchemaInvalid {
            path: self.path.clone(),
            message: message.into(),
        })
    }

    fn object(&self) -> Result<&'v serde_json::Map<String, Value>, ContractError> {
        self.value.as_object().map_or_else(
            || self.fail(format!("expected an object, got {}", kind(self.value))),
            Ok,
        )
    }

    /// The field `name`: `None` when absent or null.
    fn field(&self, name: &str) -> Result<Option<Check<'v>>, ContractError> {
        let object = self.object()?;
        Ok(object
            .get(name)
            .filter(|v| !v.is_null())
            .map(|value| Check {
                value,
                path: format!("{}.{name}", self.path),
            }))
    }

    fn required(&self, name: &str) -> Result<Check<'v>, ContractError> {
        self.field(name)?.map_or_else(
            || {
                Err(ContractError::SchemaInvalid {
                    path: format!("{}.{name}", self.path),
                    message: "required field is missing".to_owned(),
                })
            },
            Ok,
        )
    }

    fn string(&self) -> Result<&'v str, ContractError> {
        self.value.as_str().map_or_else(
            || self.fail(format!("expected a string, got {}", kind(self.value))),
            Ok,
        )
    }

    fn one_of(&self, allowed: &[&str]) -> Result<&'v str, ContractError> {
        let value = self.string()?;
        if allowed.contains(&value) {
            Ok(value)
        } else {
            self.fail(format!("{value:?} is not one of {}", allowed.join(", ")))
        }
    }

    fn boolean(&self) -> Result<bool, ContractError> {
        self.value.as_bool().map_or_else(
            || self.fail(format!("expected true or false, got {}", kind(self.value))),
            Ok,
        )
    }

    fn items(&self) -> Result<Vec<Check<'v>>, ContractError> {
        let list = self.value.as_array().map_or_else(
            || self.fail(format!("expected an array, got {}", kind(self.value))),
            Ok,
        )?;
        Ok(list
            .iter()
            .enumerate()
            .map(|(i, value)| Check {
                value,
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    fn strings(&self) -> Result<(), ContractError> {
        for item in self.items()? {
            item.string()?;
        }
        Ok(())
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks `value` against the schema of `role`'s result for task `task_id`.
///
/// Implementer: `task_id`, `status` (`completed`, `blocked`, `failed`) and `summary` are
/// required; `files_changed` (or `files_modified`) and `follow_up_actions` are arrays of
/// strings; `tests` is an array of `{command, passed, failures?}`. Reviewer: `task_id` and
/// `assessment` (`approved`, `needs_changes`, `blocked`) are required; `strengths` and
/// `required_fixes` are arrays of strings; `issues` is an array of `{severity (critical,
/// important, minor), file?, message, fix?}`. Optional fields may be absent or null; other
/// fields are ignored.
///
/// # Errors
///
/// [`ContractError::SchemaInvalid`] naming the first failing field.
pub fn validate_schema(
    role: SourceRole,
    value: &Value,
    task_id: &str,
) -> Result<(), ContractError> {
    if !role.is_dispatch_agent() {
        return Err(ContractError::NotADispatchRole { role });
    }
    let root = Check::root(value);
    let id = root.required("task_id")?;
    if id.string()? != task_id {
        return id.fail(format!("expected the run's task {task_id:?}"));
    }
    if role == SourceRole::Implementer {
        root.required("status")?
            .one_of(&["completed", "blocked", "failed"])?;
        root.required("summary")?.string()?;
        for name in ["files_changed", "files_modified", "follow_up_actions"] {
            if let Some(list) = root.field(name)? {
                list.strings()?;
            }
        }
        // `files_modified` is the older name of `files_changed`: one list, not two.
        if root.field("files_changed")?.is_some()
            && let Some(older) = root.field("files_modified")?
        {
            return older
                .fail("files_modified is the older name of files_changed; give one of them");
        }
        if let Some(tests) = root.field("tests")? {
            for test in tests.items()? {
                test.required("command")?.string()?;
                test.required("passed")?.boolean()?;
                if let Some(failures) = test.field("failures")? {
                    failures.strings()?;
                }
            }
        }
    } else {
        root.required("assessment")?
            .one_of(&["approved", "needs_changes", "blocked"])?;
        for name in ["strengths", "required_fixes"] {
            if let Some(list) = root.field(name)? {
                list.strings()?;
            }
        }
        if let Some(issues) = root.field("issues")? {
            for issue in issues.items()? {
                issue
                    .required("severity")?
                    .one_of(&["critical", "important", "minor"])?;
                issue.required("message")?.string()?;
                for name in ["file", "fix"] {
                    if let Some(text) = issue.field(name)? {
                        text.string()?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Reads `role`'s raw output for task `task_id`: the block, its JSON, its schema, then its
/// token cost under `counter` against `max_output_tokens`; returns the result and the
/// block's token cost.
///
/// # Errors
///
/// The first [`ContractError`] in that order.
///
/// ```
/// use dispatch_runtime::parse_output;
/// use fact_model::{CharsPerToken, DispatchResult, SourceRole};
///
/// let output = "I am done.\nBEGIN_DISPATCH_RESULT\n{\"task_id\": \"2\", \"status\": \"completed\", \
///               \"summary\": \"Added the parser\"}\nEND_DISPATCH_RESULT";
/// let (result, tokens) = parse_output(SourceRole::Implementer, output, "2", 1200, &CharsPerToken::default())?;
/// assert!(matches!(result, DispatchResult::Implementer(r) if r.summary == "Added the parser"));
/// assert!(tokens < 30);
/// let err = parse_output(SourceRole::Implementer, output, "3", 1200, &CharsPerToken::default()).unwrap_err();
/// assert_eq!((err.code(), err.to_string().contains("$.task_id")), ("schema_invalid", true));
/// # Ok::<(), dispatch_runtime::ContractError>(())
/// ```
pub fn parse_output(
    role: SourceRole,
    output: &str,
    task_id: &str,
    max_output_tokens: usize,
    counter: &dyn TokenCounter,
) -> Result<(DispatchResult, usize), ContractError> {
    if !role.is_dispatch_agent() {
        return Err(ContractError::NotADispatchRole { role });
    }
    let block = extract_block(output)?;
    let value: Value = serde_json::from_str(block).map_err(|e| ContractError::JsonParseFailed {
        message: e.to_string(),
    })?;
    validate_schema(role, &value, task_id)?;
    let tokens = counter.count(block);
    if tokens > max_output_tokens {
        return Err(ContractError::OutputTokenBudgetExceeded {
            tokens,
            budget: max_output_tokens,
        });
    }
    let schema_error = |e: serde_json::Error| ContractError::SchemaInvalid {
        path: "$".to_owned(),
        message: e.to_string(),
    };
    let result = if role == SourceRole::Implementer {
        DispatchResult::Implementer(serde_json::from_value(value).map_err(schema_error)?)
    } else {
        DispatchResult::Reviewer(serde_json::from_value(value).map_err(schema_error)?)
    };
    Ok((result, tokens))
}

//! [`parse_reply`]: finds and reads the JSON object in a model's reply, leniently and
//! without panicking on any input.

use serde_json::{Map, Value};

/// How many `{` a reply may open before [`parse_reply`] stops looking for its JSON object;
/// bounds the work on replies full of braces.
const MAX_CANDIDATES: usize = 64;

/// A model's reply, read: the conversation's title and summary, and its facts as the
/// model wrote them (not yet checked against categories or confidence limits).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedReply {
    /// The `title`, trimmed; `None` when missing, blank or not a string.
    pub title: Option<String>,
    /// The `summary`, trimmed; `None` when missing, blank or not a string.
    pub summary: Option<String>,
    /// The well-formed entries of `facts`, in order.
    pub facts: Vec<ReplyFact>,
    /// One note per entry of `facts` that could not be read, naming it by its position
    /// (counted from 1), e.g. `fact 2: missing "object"`.
    pub rejected: Vec<String>,
}

/// One fact as the model wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyFact {
    /// `subject`, as written.
    pub subject: String,
    /// `predicate` (or `relation`), as written, not yet normalised.
    pub predicate: String,
    /// `object`; a number or boolean is taken as its JSON text.
    pub object: String,
    /// `statement` (or `content`, `fact_text`), when given as a string.
    pub statement: Option<String>,
    /// `category` (or `fact_type`), as written.
    pub category: String,
    /// `confidence`, a number or a numeric string; `None` when missing or `null`.
    pub confidence: Option<f64>,
    /// The fact's position in `facts`, counted from 1.
    pub position: usize,
}

/// Why a reply holds no usable JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// There is no balanced `{...}` in the reply at all.
    #[error("no JSON object in the reply")]
    NoJson,
    /// Balanced `{...}` spans exist, but none is valid JSON; the error of the first.
    #[error("the reply's JSON does not parse: {0}")]
    Invalid(String),
    /// A JSON object was found, but none with a `facts` array.
    #[error("the reply's JSON object has no \"facts\" array")]
    NoFacts,
}

/// Reads a model's reply: the first JSON object in `text` that has a `facts` array.
///
/// The object may stand alone, sit inside a ```` ``` ```` or ```` ```json ```` code fence,
/// or follow prose: the parser tries each balanced top-level `{...}` span in order (skipping
/// braces inside JSON strings) and takes the first that parses and has `facts`. Within it,
/// fields are read leniently (see [`ReplyFact`]); an entry of `facts` that is not an object
/// with string `subject`, `predicate`, `object` and `category` is listed in
/// [`ParsedReply::rejected`] and the others are kept. Never panics.
///
/// # Errors
///
/// A [`ReplyError`] when no JSON object with a `facts` array is found.
///
/// ```
/// use fact_extract::{ReplyError, parse_reply};
///
/// let reply = parse_reply(r#"Here you go:
/// ```json
/// {"title": "Testing", "facts": [
///   {"subject": "user", "predicate": "prefers_test_framework", "object": "pytest",
///    "category": "preference", "confidence": 0.9},
///   {"subject": "user"}
/// ]}
/// ```"#)?;
/// assert_eq!(reply.title.as_deref(), Some("Testing"));
/// assert_eq!(reply.facts[0].object, "pytest");
/// assert_eq!(reply.rejected, [r#"fact 2: missing string "predicate""#]);
///
/// assert_eq!(parse_reply("I found nothing."), Err(ReplyError::NoJson));
/// # Ok::<(), ReplyError>(())
/// ```
pub fn parse_reply(text: &str) -> Result<ParsedReply, ReplyError> {
    let mut first_error = None;
    let mut found_object = false;
    let mut from = 0;
    for _ in 0..MAX_CANDIDATES {
        let Some(start) = text
            .get(from..)
            .and_then(|rest| rest.find('{'))
            .map(|at| from + at)
        else {
            break;
        };
        let Some(end) = balanced_end(text, start) else {
            // Unbalanced from here; a later brace may still open a balanced object.
            from = start + 1;
            continue;
        };
        let candidate = text.get(start..end).unwrap_or_default();
        match serde_json::from_str::<Value>(candidate) {
            Ok(Value::Object(object)) => {
                if let Some(reply) = read_reply(&object) {
                    return Ok(reply);
                }
                found_object = true;
                // An object without facts (an example in prose, say): look inside and after.
                from = start + 1;
            }
            Ok(_) => from = start + 1,
            Err(error) => {
                first_error.get_or_insert_with(|| error.to_string());
                from = start + 1;
            }
        }
    }
    if found_object {
        Err(ReplyError::NoFacts)
    } else if let Some(error) = first_error {
        Err(ReplyError::Invalid(error))
    } else {
        Err(ReplyError::NoJson)
    }
}

/// The byte offset just past the `}` that closes the `{` at `start`, skipping braces in
/// JSON strings; `None` when it never closes.
fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, byte) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The reply in `object`, when it has a `facts` array.
fn read_reply(object: &Map<String, Value>) -> Option<ParsedReply> {
    let Some(Value::Array(facts)) = object.get("facts") else {
        return None;
    };
    let mut reply = ParsedReply {
        title: text_field(object, &["title"]),
        summary: text_field(object, &["summary"]),
        ..ParsedReply::default()
    };
    for (index, fact) in facts.iter().enumerate() {
        let position = index + 1;
        match read_fact(fact, position) {
            Ok(fact) => reply.facts.push(fact),
            Err(problem) => reply.rejected.push(format!("fact {position}: {problem}")),
        }
    }
    Some(reply)
}

/// The first of `names` that holds a non-blank string, trimmed.
fn text_field(object: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| match object.get(*name) {
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        _ => None,
    })
}

fn read_fact(fact: &Value, position: usize) -> Result<ReplyFact, String> {
    let Value::Object(fact) = fact else {
        return Err("not a JSON object".to_owned());
    };
    let required = |names: &[&str]| -> Result<String, String> {
        names
            .iter()
            .find_map(|name| match fact.get(*name) {
                Some(Value::String(text)) => Some(text.clone()),
                _ => None,
            })
            .ok_or_else(|| format!("missing string {:?}", names.first().unwrap_or(&"")))
    };
    let subject = required(&["subject"])?;
    let predicate = required(&["predicate", "relation"])?;
    let object = match fact.get("object") {
        Some(Value::String(text)) => text.clone(),
        Some(value @ (Value::Number(_) | Value::Bool(_))) => value.to_string(),
        _ => return Err(r#"missing string "object""#.to_owned()),
    };
    let category = required(&["category", "fact_type"])?;
    let confidence = match fact.get("confidence") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => number.as_f64(),
        Some(Value::String(text)) => Some(
            text.trim()
                .parse::<f64>()
                .map_err(|_| format!("confidence {text:?} is not a number"))?,
        ),
        Some(other) => return Err(format!("confidence {other} is not a number")),
    };
    Ok(ReplyFact {
        subject,
        predicate,
        object,
        statement: ["statement", "content", "fact_text"]
            .iter()
            .find_map(|name| match fact.get(*name) {
                Some(Value::String(text)) => Some(text.clone()),
                _ => None,
            }),
        category,
        confidence,
        position,
    })
}

#[cfg(test)]
mod tests {
    use super::balanced_end;

    #[test]
    fn balanced_end_skips_braces_in_strings() {
        for (text, expect) in [
            ("{}", Some(2)),
            (r#"{"a": "}"}"#, Some(10)),
            (r#"{"a": "\"}"} tail"#, Some(12)),
            ("{{}", None),
            ("{ é }", Some(6)),
        ] {
            assert_eq!(balanced_end(text, 0), expect, "{text}");
        }
    }
}

//! [`parse_reply`]: finds and reads the JSON object in a model's reply, every section of
//! the reply contract, leniently and without panicking on any input.

use fact_model::{ProfileField, clip};
use serde_json::{Map, Value};

/// How many `{` a reply may open before [`parse_reply`] stops looking for its JSON object;
/// bounds the work on replies full of braces.
const MAX_CANDIDATES: usize = 64;

/// How many unknown fields of one profile section are noted; the rest are ignored
/// silently.
const MAX_UNKNOWN_NOTES: usize = 8;

/// The sections of a reply; an object with at least one of them (of the right JSON type)
/// is the reply.
pub const REPLY_SECTIONS: [&str; 5] = [
    "facts",
    "facts_to_remove",
    "aliases",
    "user_context",
    "history",
];

/// A model's reply, read: every section as the model wrote it (not yet checked against
/// the transcript, the known facts, categories or confidence limits).
///
/// A section the reply leaves out is empty here, and changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedReply {
    /// The `title`, trimmed; `None` when missing, blank or not a string.
    pub title: Option<String>,
    /// The `summary`, trimmed; `None` when missing, blank or not a string.
    pub summary: Option<String>,
    /// The well-formed entries of `facts`, in order.
    pub facts: Vec<ReplyFact>,
    /// One note per entry of `facts` that could not be read, naming it by its position
    /// (counted from 1), e.g. `fact 2: missing string "predicate"`; the entry is dropped.
    pub rejected: Vec<String>,
    /// The string entries of `facts_to_remove`, trimmed, in order: ids of known facts the
    /// conversation shows are no longer true.
    pub facts_to_remove: Vec<String>,
    /// The entries of `aliases` as `(alias, entity)`, as written.
    pub aliases: Vec<(String, String)>,
    /// The fields of `user_context` given as non-blank strings (trimmed), in
    /// [`ProfileField`] order: [`Work`](ProfileField::Work),
    /// [`Personal`](ProfileField::Personal), [`TopOfMind`](ProfileField::TopOfMind).
    pub user_context: Vec<(ProfileField, String)>,
    /// The fields of `history` given as non-blank strings (trimmed), in [`ProfileField`]
    /// order: [`RecentMonths`](ProfileField::RecentMonths),
    /// [`EarlierContext`](ProfileField::EarlierContext),
    /// [`LongTermBackground`](ProfileField::LongTermBackground).
    pub history: Vec<(ProfileField, String)>,
    /// One note per other part of the reply that was passed over, e.g.
    /// `facts_to_remove 2: not a string`, `fact 1: supersedes 1: not a string`,
    /// `user_context: unknown field "mood"`.
    pub notes: Vec<String>,
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
    /// `turn`: the index of the message the fact comes from, a non-negative integer (or a
    /// string of one); `None` when missing or `null`.
    pub turn: Option<u64>,
    /// The string entries of `supersedes` (a lone string counts as one), trimmed: ids of
    /// known facts this fact replaces.
    pub supersedes: Vec<String>,
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
    /// JSON objects were found, but none with any of the [`REPLY_SECTIONS`]: a `facts`,
    /// `facts_to_remove` or `aliases` array, a `user_context` or `history` object.
    #[error(
        "the reply's JSON object has none of \"facts\", \"facts_to_remove\", \"aliases\" \
         (arrays), \"user_context\", \"history\" (objects)"
    )]
    NoSections,
}

/// Reads a model's reply: the first JSON object in `text` that has any of the
/// [`REPLY_SECTIONS`].
///
/// The object may stand alone, sit inside a ```` ``` ```` or ```` ```json ```` code fence,
/// or follow prose: the parser tries each balanced top-level `{...}` span in order (skipping
/// braces inside JSON strings) and takes the first that parses and has a section. Within
/// it, fields are read leniently (see [`ParsedReply`] and [`ReplyFact`]): an entry of
/// `facts` that is not an object with string `subject`, `predicate`, `object` and
/// `category`, or whose `confidence` or `turn` is unreadable, is listed in
/// [`ParsedReply::rejected`] and the others are kept; anything else that cannot be read
/// is a [note](ParsedReply::notes). Never panics; the work is bounded (at most 64 opening
/// braces are tried, each span scanned once more).
///
/// # Errors
///
/// A [`ReplyError`] when no JSON object with a section is found.
///
/// ```
/// use fact_extract::{ReplyError, parse_reply};
/// use fact_model::ProfileField;
///
/// let reply = parse_reply(r#"Here you go:
/// ```json
/// {"title": "Moving", "facts": [
///   {"subject": "user", "predicate": "lives_in", "object": "Berlin",
///    "content": "User moved to Berlin", "category": "context", "confidence": 0.9,
///    "turn": 3, "supersedes": ["a1b2c3d4"]},
///   {"subject": "user"}
/// ], "user_context": {"personal": "Lives in Berlin", "mood": "happy"}}
/// ```"#)?;
/// assert_eq!(reply.title.as_deref(), Some("Moving"));
/// assert_eq!(reply.facts[0].object, "Berlin");
/// assert_eq!(reply.facts[0].turn, Some(3));
/// assert_eq!(reply.facts[0].supersedes, ["a1b2c3d4"]);
/// assert_eq!(reply.rejected, [r#"fact 2: missing string "predicate""#]);
/// assert_eq!(reply.user_context, [(ProfileField::Personal, "Lives in Berlin".to_owned())]);
/// assert_eq!(reply.notes.len(), 1); // "mood" is no field
///
/// assert_eq!(parse_reply("I found nothing."), Err(ReplyError::NoJson));
/// assert_eq!(parse_reply(r#"{"title": "x"}"#), Err(ReplyError::NoSections));
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
                // An object without sections (an example in prose, say): look inside and
                // after.
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
        Err(ReplyError::NoSections)
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

/// Whether `object` holds any section, with its JSON type.
fn has_section(object: &Map<String, Value>) -> bool {
    REPLY_SECTIONS.iter().any(|name| {
        matches!(
            (*name, object.get(*name)),
            (
                "facts" | "facts_to_remove" | "aliases",
                Some(Value::Array(_))
            ) | ("user_context" | "history", Some(Value::Object(_)))
        )
    })
}

/// The reply in `object`, when it has a section.
fn read_reply(object: &Map<String, Value>) -> Option<ParsedReply> {
    if !has_section(object) {
        return None;
    }
    let mut reply = ParsedReply {
        title: text_field(object, &["title"]),
        summary: text_field(object, &["summary"]),
        ..ParsedReply::default()
    };
    match object.get("facts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(facts)) => {
            for (index, fact) in facts.iter().enumerate() {
                let position = index + 1;
                match read_fact(fact, position, &mut reply.notes) {
                    Ok(fact) => reply.facts.push(fact),
                    Err(problem) => reply.rejected.push(format!("fact {position}: {problem}")),
                }
            }
        }
        Some(other) => reply
            .notes
            .push(format!("facts: expected an array, found {}", kind(other))),
    }
    reply.facts_to_remove = strings(
        object.get("facts_to_remove"),
        "facts_to_remove",
        &mut reply.notes,
    );
    read_aliases(object.get("aliases"), &mut reply);
    reply.user_context = profile(
        object,
        &["user_context", "userContext"],
        &[
            (ProfileField::Work, &["work"]),
            (ProfileField::Personal, &["personal"]),
            (ProfileField::TopOfMind, &["top_of_mind", "topOfMind"]),
        ],
        &mut reply.notes,
    );
    reply.history = profile(
        object,
        &["history"],
        &[
            (
                ProfileField::RecentMonths,
                &["recent_months", "recentMonths"],
            ),
            (
                ProfileField::EarlierContext,
                &["earlier_context", "earlierContext"],
            ),
            (
                ProfileField::LongTermBackground,
                &["long_term_background", "longTermBackground"],
            ),
        ],
        &mut reply.notes,
    );
    Some(reply)
}

/// What kind of JSON value `value` is, for notes.
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

/// The string entries of a list of ids (a lone string counts as a list of one), trimmed
/// and non-blank; a note, named `what`, per other entry. Missing or `null`: none.
fn strings(value: Option<&Value>, what: &str, notes: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut take = |entry: &Value, label: String, notes: &mut Vec<String>| match entry {
        Value::String(text) if !text.trim().is_empty() => out.push(text.trim().to_owned()),
        Value::String(_) => notes.push(format!("{label}: blank")),
        other => notes.push(format!("{label}: expected a string, found {}", kind(other))),
    };
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Array(entries)) => {
            for (index, entry) in entries.iter().enumerate() {
                take(entry, format!("{what} {}", index + 1), notes);
            }
        }
        Some(entry @ Value::String(_)) => take(entry, what.to_owned(), notes),
        Some(other) => notes.push(format!("{what}: expected an array, found {}", kind(other))),
    }
    out
}

/// Reads `aliases`: objects with string `alias` and `entity`.
fn read_aliases(value: Option<&Value>, reply: &mut ParsedReply) {
    let entries = match value {
        None | Some(Value::Null) => return,
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            reply
                .notes
                .push(format!("aliases: expected an array, found {}", kind(other)));
            return;
        }
    };
    for (index, entry) in entries.iter().enumerate() {
        let pair = match entry {
            Value::Object(alias) => match (alias.get("alias"), alias.get("entity")) {
                (Some(Value::String(alias)), Some(Value::String(entity))) => {
                    Some((alias.clone(), entity.clone()))
                }
                _ => None,
            },
            _ => None,
        };
        match pair {
            Some(pair) => reply.aliases.push(pair),
            None => reply.notes.push(format!(
                r#"aliases {}: expected {{"alias": "...", "entity": "..."}} with two strings"#,
                index + 1
            )),
        }
    }
}

/// The fields of the profile section named by any of `names` (the first present):
/// non-blank strings, trimmed, in the order of `fields`; notes for the rest.
fn profile(
    object: &Map<String, Value>,
    names: &[&str],
    fields: &[(ProfileField, &[&str])],
    notes: &mut Vec<String>,
) -> Vec<(ProfileField, String)> {
    let Some((name, value)) = names
        .iter()
        .find_map(|name| object.get(*name).map(|value| (*name, value)))
    else {
        return Vec::new();
    };
    let section = match value {
        Value::Null => return Vec::new(),
        Value::Object(section) => section,
        other => {
            notes.push(format!("{name}: expected an object, found {}", kind(other)));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (field, keys) in fields {
        let Some((key, value)) = keys
            .iter()
            .find_map(|key| section.get(*key).map(|value| (*key, value)))
        else {
            continue;
        };
        match value {
            Value::String(text) if !text.trim().is_empty() => {
                out.push((*field, text.trim().to_owned()));
            }
            // Blank or null: the model has nothing to say about the field.
            Value::String(_) | Value::Null => {}
            other => notes.push(format!(
                "{name}.{key}: expected a string, found {}",
                kind(other)
            )),
        }
    }
    let known = |key: &str| fields.iter().any(|(_, keys)| keys.contains(&key));
    for key in section
        .keys()
        .filter(|key| !known(key))
        .take(MAX_UNKNOWN_NOTES)
    {
        let allowed: Vec<&str> = fields
            .iter()
            .filter_map(|(_, keys)| keys.first().copied())
            .collect();
        notes.push(format!(
            "{name}: unknown field {:?}; allowed: {}",
            clip(key, 40),
            allowed.join(", ")
        ));
    }
    out
}

/// The first of `names` that holds a non-blank string, trimmed.
fn text_field(object: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| match object.get(*name) {
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        _ => None,
    })
}

fn read_fact(fact: &Value, position: usize, notes: &mut Vec<String>) -> Result<ReplyFact, String> {
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
                .map_err(|_| format!("confidence {:?} is not a number", clip(text, 40)))?,
        ),
        Some(other) => {
            return Err(format!(
                "confidence {} is not a number",
                clip(&other.to_string(), 40)
            ));
        }
    };
    let turn = match fact.get("turn") {
        None | Some(Value::Null) => None,
        Some(value) => Some(read_turn(value).ok_or_else(|| {
            format!(
                "turn {} is not a message number (a non-negative integer)",
                clip(&value.to_string(), 40)
            )
        })?),
    };
    let supersedes = strings(
        fact.get("supersedes"),
        &format!("fact {position}: supersedes"),
        notes,
    );
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
        turn,
        supersedes,
        position,
    })
}

/// A turn: a non-negative integer, as a JSON number (`3`, `3.0`) or a string (`"3"`).
fn read_turn(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64().or_else(|| {
            let float = number.as_f64()?;
            // Whole floats below 2^53 are exact integers.
            (float.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&float))
                .then_some(float as u64)
        }),
        Value::String(text) => text.trim().parse::<u64>().ok(),
        _ => None,
    }
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

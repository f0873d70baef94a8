//! Conversation transcripts: reading [`Message`]s from JSON Lines (leniently with
//! [`parse_transcript`], strictly and with every message dated by [`read_transcript`]),
//! rendering them for a prompt with their turn numbers, and splitting them into chunks
//! that fit one.

use std::fmt::Write as _;
use std::ops::Range;
use std::time::Duration;

use fact_model::{Message, Timestamp, TimestampError, char_len, clip};
use serde_json::{Map, Value};

use crate::extraction::Diagnostic;

/// The largest transcript [`read_transcript`] reads by default, in bytes: 8 MiB, the
/// size of the largest reply a [`CommandLlm`](crate::CommandLlm) accepts. A transcript
/// over the limit is refused before any of it is parsed.
pub const MAX_TRANSCRIPT_BYTES: usize = 8 * 1024 * 1024;

/// How far past `now` a time may lie before [`read_transcript`] refuses it: one day, so
/// clocks a few hours apart (time zones written wrong, a skewed machine) still agree.
const FUTURE_TOLERANCE: Duration = Duration::from_secs(86_400);

/// Longest time value quoted in a [`TranscriptError::InvalidTimestamp`], in characters.
const MAX_QUOTED_VALUE_CHARS: usize = 64;

/// The names a message's time may have on the wire, in the order they are looked up.
const TIME_FIELDS: [&str; 3] = ["timestamp", "time", "created_at"];

/// How [`read_transcript`] reads a transcript.
///
/// ```
/// use fact_extract::{MAX_TRANSCRIPT_BYTES, TranscriptOptions};
/// use fact_model::Timestamp;
///
/// let now: Timestamp = "2026-03-02T00:00:00Z".parse()?;
/// let options = TranscriptOptions::new(now)
///     .with_session_time("2026-03-01T09:00:00Z".parse::<Timestamp>()?)
///     .with_max_bytes(1 << 20);
/// assert_eq!(options.now, now);
/// assert_eq!(options.max_bytes, 1 << 20);
/// assert_eq!(TranscriptOptions::new(now).max_bytes, MAX_TRANSCRIPT_BYTES);
/// # Ok::<(), fact_model::TimestampError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TranscriptOptions {
    /// When the session took place, for the messages before the first one that carries a
    /// time; `None` when the caller does not know. Default `None`.
    pub session_time: Option<Timestamp>,
    /// The current time, passed in (the transcript reader never reads a clock): the time
    /// of messages when nothing else dates them, and the reference for times in the
    /// future.
    pub now: Timestamp,
    /// The largest transcript read, in bytes. Default [`MAX_TRANSCRIPT_BYTES`].
    pub max_bytes: usize,
}

impl TranscriptOptions {
    /// Options for reading at `now`: no session time, [`MAX_TRANSCRIPT_BYTES`].
    #[must_use]
    pub fn new(now: Timestamp) -> Self {
        TranscriptOptions {
            session_time: None,
            now,
            max_bytes: MAX_TRANSCRIPT_BYTES,
        }
    }

    /// Dates the messages before the first timed one at `session_time`.
    #[must_use]
    pub fn with_session_time(mut self, session_time: impl Into<Option<Timestamp>>) -> Self {
        self.session_time = session_time.into();
        self
    }

    /// Refuses transcripts longer than `max_bytes` bytes.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// A transcript as [`read_transcript`] read it: every message dated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    /// The messages in order, each with `timestamp: Some(..)`.
    pub messages: Vec<Message>,
    /// One diagnostic (rule `transcript`) per non-blank line that is not a message.
    pub diagnostics: Vec<Diagnostic>,
}

/// Why [`read_transcript`] refused a transcript.
///
/// Each variant has a stable [`code`](Self::code) for callers that report errors by
/// code (a CLI's exit message, a protocol's error object).
///
/// ```
/// use fact_extract::TranscriptError;
///
/// let err = TranscriptError::TooLarge { bytes: 9_000_000, limit: 8_388_608 };
/// assert_eq!(err.code(), "transcript_too_large");
/// assert_eq!(
///     err.to_string(),
///     "the transcript is 9000000 bytes, over the limit of 8388608 bytes; split it into \
///      several sessions or raise the limit",
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// A message's `timestamp` (or `time`, `created_at`) is not an RFC 3339 date-time.
    #[error(
        "line {line}: the time {value:?} is not an RFC 3339 date-time ({reason}); write it \
         like \"2026-03-01T09:00:00Z\" or leave it out"
    )]
    InvalidTimestamp {
        /// The line, counted from 1.
        line: usize,
        /// The value as written (a non-string as its JSON text), clipped to 64 characters.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A message's time, or the session time, lies more than one day after `now`.
    #[error("{}", future_message(*line, *at, *now))]
    FutureTimestamp {
        /// The line of the message, counted from 1; 0 for the session time.
        line: usize,
        /// The time refused.
        at: Timestamp,
        /// The current time it was compared with.
        now: Timestamp,
    },
    /// The transcript is longer than [`TranscriptOptions::max_bytes`]; nothing was read.
    #[error(
        "the transcript is {bytes} bytes, over the limit of {limit} bytes; split it into \
         several sessions or raise the limit"
    )]
    TooLarge {
        /// The transcript's length, in bytes.
        bytes: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// No line of the transcript is a message.
    #[error(
        "the transcript holds no message ({detail}); write one JSON object per line, like \
         {{\"role\": \"user\", \"content\": \"...\"}}"
    )]
    Empty {
        /// Why: the text is blank, or what was wrong with its first line.
        detail: String,
    },
}

impl TranscriptError {
    /// A stable code for the error: `invalid_timestamp`, `future_timestamp`,
    /// `transcript_too_large` or `empty_transcript`.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            TranscriptError::InvalidTimestamp { .. } => "invalid_timestamp",
            TranscriptError::FutureTimestamp { .. } => "future_timestamp",
            TranscriptError::TooLarge { .. } => "transcript_too_large",
            TranscriptError::Empty { .. } => "empty_transcript",
        }
    }
}

fn future_message(line: usize, at: Timestamp, now: Timestamp) -> String {
    let what = if line == 0 {
        "the session time".to_owned()
    } else {
        format!("line {line}: the time")
    };
    format!(
        "{what} {at} is more than one day after now ({now}); correct the time (is its offset \
         right?) or leave it out"
    )
}

/// Why one line is not read as a message.
enum LineProblem {
    /// The line is not a message object; the text says why.
    NotMessage(String),
    /// The line is a message whose time does not parse.
    BadTime {
        /// The value, clipped.
        value: String,
        /// Why it does not parse.
        reason: String,
    },
}

/// Reads one line: a JSON object with `role` and `content`, and a time under any of the
/// [`TIME_FIELDS`] (the first present and not `null`), read by hand so that a bad time
/// is told apart from a line that is no message.
fn read_line(line: &str) -> Result<Message, LineProblem> {
    let mut object: Map<String, Value> = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(object)) => object,
        Ok(_) => {
            return Err(LineProblem::NotMessage(
                "expected a JSON object with \"role\" and \"content\"".to_owned(),
            ));
        }
        Err(error) => return Err(LineProblem::NotMessage(error.to_string())),
    };
    // Every time field is taken out, so that serde sees none of them.
    let times: Vec<Value> = TIME_FIELDS
        .iter()
        .filter_map(|name| object.remove(*name))
        .collect();
    let time = times.into_iter().find(|value| !value.is_null());
    let mut message: Message = serde_json::from_value(Value::Object(object))
        .map_err(|error| LineProblem::NotMessage(error.to_string()))?;
    message.timestamp = match time {
        None => None,
        Some(Value::String(text)) => Some(text.parse().map_err(|error| LineProblem::BadTime {
            value: clip(&text, MAX_QUOTED_VALUE_CHARS).into_owned(),
            reason: match error {
                TimestampError::Syntax { reason, .. } => reason.to_owned(),
                other => other.to_string(),
            },
        })?),
        Some(other) => {
            return Err(LineProblem::BadTime {
                value: clip(&other.to_string(), MAX_QUOTED_VALUE_CHARS).into_owned(),
                reason: format!("expected a string, found {}", json_kind(&other)),
            });
        }
    };
    Ok(message)
}

/// What kind of JSON value `value` is, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn line_diagnostic(line: usize, problem: &str) -> Diagnostic {
    Diagnostic {
        rule: "transcript".to_owned(),
        message: format!("line {line}: {problem}"),
    }
}

/// Reads a transcript in JSON Lines leniently: one `{"role": "user", "content": "..."}`
/// object per line, with an optional time.
///
/// Blank lines are skipped. A line that is not such an object becomes a [`Diagnostic`]
/// (rule `transcript`) naming its line number, counted from 1, and the other lines are
/// still read. A message's time is its `timestamp` (or `time`, `created_at`: the first
/// present and not `null`), RFC 3339; a message without one keeps `timestamp: None`,
/// and a line whose time does not parse is a diagnostic too. Other fields are ignored.
///
/// [`read_transcript`] is the strict reader: it refuses bad times and dates every
/// message.
///
/// ```
/// use fact_extract::{MessageRole, parse_transcript};
///
/// let text = r#"{"role": "user", "content": "I switched to pytest.", "time": "2026-03-01T09:00:00Z"}
///
/// {"role": "robot", "content": "?"}
/// {"role": "assistant", "content": "Noted."}
/// {"role": "user", "content": "Thanks", "timestamp": "yesterday"}
/// "#;
/// let (messages, diagnostics) = parse_transcript(text);
/// assert_eq!(messages.len(), 2);
/// assert_eq!(messages[0].timestamp, Some("2026-03-01T09:00:00Z".parse()?));
/// assert_eq!(messages[1].role, MessageRole::Assistant);
/// assert_eq!(messages[1].timestamp, None);
/// assert_eq!(diagnostics.len(), 2);
/// assert!(diagnostics[0].message.starts_with("line 3: "), "{}", diagnostics[0].message);
/// assert!(diagnostics[1].message.starts_with("line 5: the time \"yesterday\""));
/// # Ok::<(), fact_model::TimestampError>(())
/// ```
#[must_use]
pub fn parse_transcript(text: &str) -> (Vec<Message>, Vec<Diagnostic>) {
    let mut messages = Vec::new();
    let mut diagnostics = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match read_line(line) {
            Ok(message) => messages.push(message),
            Err(LineProblem::NotMessage(problem)) => {
                diagnostics.push(line_diagnostic(index + 1, &problem));
            }
            Err(LineProblem::BadTime { value, reason }) => {
                diagnostics.push(line_diagnostic(
                    index + 1,
                    &format!("the time {value:?} is not an RFC 3339 date-time ({reason})"),
                ));
            }
        }
    }
    (messages, diagnostics)
}

/// Reads a transcript in JSON Lines strictly, and dates every message.
///
/// Lines are read as [`parse_transcript`] reads them (blank lines skipped; a line that is
/// not a message object is a [`Diagnostic`], rule `transcript`, naming the line), but:
///
/// - a transcript longer than [`max_bytes`](TranscriptOptions::max_bytes) is refused
///   before it is parsed ([`TranscriptError::TooLarge`]);
/// - a session time more than one day after [`now`](TranscriptOptions::now) is refused
///   ([`TranscriptError::FutureTimestamp`], line 0);
/// - a message time that does not parse is refused ([`TranscriptError::InvalidTimestamp`]),
///   and so is one more than one day after `now` (`FutureTimestamp`, with its line);
/// - a transcript without any message is refused ([`TranscriptError::Empty`]).
///
/// Every message of the result has a time: its own; else the time of the message before
/// it, as resolved; and for the messages before the first one with a time, the session
/// time, else that first time, else `now`.
///
/// # Errors
///
/// The [`TranscriptError`] of the first problem found, in the order above.
///
/// ```
/// use fact_extract::{TranscriptError, TranscriptOptions, read_transcript};
/// use fact_model::Timestamp;
///
/// let t = |text: &str| text.parse::<Timestamp>().unwrap();
/// let options = TranscriptOptions::new(t("2026-03-10T00:00:00Z"));
/// let text = r#"{"role": "user", "content": "Hi"}
/// {"role": "user", "content": "I moved to Berlin.", "created_at": "2026-03-01T09:00:00Z"}
/// {"role": "assistant", "content": "Noted."}
/// "#;
/// let transcript = read_transcript(text, &options.with_session_time(t("2026-02-28T20:00:00Z")))?;
/// let times: Vec<_> = transcript.messages.iter().map(|m| m.timestamp).collect();
/// assert_eq!(times, [
///     Some(t("2026-02-28T20:00:00Z")), // before the first time: the session time
///     Some(t("2026-03-01T09:00:00Z")),
///     Some(t("2026-03-01T09:00:00Z")), // the time before it
/// ]);
///
/// let future = r#"{"role": "user", "content": "Hi", "time": "2026-03-12T00:00:00Z"}"#;
/// let err = read_transcript(future, &options).unwrap_err();
/// assert_eq!(err.code(), "future_timestamp");
/// assert!(matches!(err, TranscriptError::FutureTimestamp { line: 1, .. }));
/// # Ok::<(), TranscriptError>(())
/// ```
pub fn read_transcript(
    text: &str,
    options: &TranscriptOptions,
) -> Result<Transcript, TranscriptError> {
    if text.len() > options.max_bytes {
        return Err(TranscriptError::TooLarge {
            bytes: text.len(),
            limit: options.max_bytes,
        });
    }
    let now = options.now;
    let latest = now.checked_add(FUTURE_TOLERANCE).unwrap_or(Timestamp::MAX);
    if let Some(at) = options.session_time
        && at > latest
    {
        return Err(TranscriptError::FutureTimestamp { line: 0, at, now });
    }
    let mut messages = Vec::new();
    let mut diagnostics = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        match read_line(line) {
            Ok(message) => {
                if let Some(at) = message.timestamp
                    && at > latest
                {
                    return Err(TranscriptError::FutureTimestamp {
                        line: number,
                        at,
                        now,
                    });
                }
                messages.push(message);
            }
            Err(LineProblem::NotMessage(problem)) => {
                diagnostics.push(line_diagnostic(number, &problem));
            }
            Err(LineProblem::BadTime { value, reason }) => {
                return Err(TranscriptError::InvalidTimestamp {
                    line: number,
                    value,
                    reason,
                });
            }
        }
    }
    if messages.is_empty() {
        let detail = match diagnostics.first() {
            Some(first) => format!(
                "{} line(s) not read, the first: {}",
                diagnostics.len(),
                first.message
            ),
            None => "the text is blank".to_owned(),
        };
        return Err(TranscriptError::Empty { detail });
    }
    let first_time = messages.iter().find_map(|message| message.timestamp);
    let mut current = options.session_time.or(first_time).unwrap_or(now);
    for message in &mut messages {
        match message.timestamp {
            Some(at) => current = at,
            None => message.timestamp = Some(current),
        }
    }
    Ok(Transcript {
        messages,
        diagnostics,
    })
}

/// Characters a rendered message adds to its content: `[{turn}] {role}`, ` (YYYY-MM-DD)`
/// when it has a time, `: ` and the newline.
fn overhead_chars(turn: usize, message: &Message) -> usize {
    let date = if message.timestamp.is_some() { 13 } else { 0 };
    digits(turn) + message.role.as_str().len() + date + 6
}

/// The number of decimal digits of `n`.
fn digits(n: usize) -> usize {
    let mut count = 1;
    let mut rest = n / 10;
    while rest > 0 {
        count += 1;
        rest /= 10;
    }
    count
}

/// The length of [`render_turn`]'s text, in characters, without rendering.
fn rendered_chars(turn: usize, message: &Message) -> usize {
    overhead_chars(turn, message) + char_len(&message.content)
}

/// Appends message `turn` as a prompt shows it: `[3] user (2026-03-01): text` and a
/// newline; the date (UTC) is left out when the message has no time.
fn render_turn(turn: usize, message: &Message, out: &mut String) {
    // Writing to a String cannot fail.
    let _ = write!(out, "[{turn}] {}", message.role);
    if let Some(at) = message.timestamp {
        let _ = write!(out, " ({})", date(at));
    }
    out.push_str(": ");
    out.push_str(&message.content);
    out.push('\n');
}

/// The UTC date of `at`, `YYYY-MM-DD`.
pub(crate) fn date(at: Timestamp) -> String {
    let text = at.to_string();
    // Years are always four digits, so the date is the first ten characters.
    text.get(..10).unwrap_or(&text).to_owned()
}

/// The messages as a prompt shows them, numbered from turn 0: each
/// `[{turn}] {role} ({date}): {content}` and a newline, the date left out for a message
/// without a time.
///
/// ```
/// use fact_extract::{Message, MessageRole, render_transcript};
///
/// let messages = [
///     Message::new(MessageRole::User, "Which test framework?")
///         .at("2026-03-01T09:00:00Z".parse()?),
///     Message::new(MessageRole::Assistant, "pytest."),
/// ];
/// assert_eq!(
///     render_transcript(&messages),
///     "[0] user (2026-03-01): Which test framework?\n[1] assistant: pytest.\n",
/// );
/// # Ok::<(), fact_model::TimestampError>(())
/// ```
#[must_use]
pub fn render_transcript(messages: &[Message]) -> String {
    render_from(0, messages)
}

fn render_from(first_turn: usize, messages: &[Message]) -> String {
    let mut out = String::new();
    for (turn, message) in (first_turn..).zip(messages) {
        render_turn(turn, message, &mut out);
    }
    out
}

/// A run of consecutive messages of a transcript, one prompt's worth, with the turn
/// number of its first message in the whole transcript.
///
/// Message `i` of the chunk is turn `first_turn + i`. A piece of a message too long for
/// one chunk keeps the turn of the message it comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranscriptChunk {
    /// The turn of the first message: its index in the whole transcript, from 0.
    pub first_turn: usize,
    /// The messages (or pieces of messages), in order.
    pub messages: Vec<Message>,
}

impl TranscriptChunk {
    /// A chunk of `messages`, the first of them turn `first_turn`.
    #[must_use]
    pub fn new(first_turn: usize, messages: Vec<Message>) -> Self {
        TranscriptChunk {
            first_turn,
            messages,
        }
    }

    /// The turns of the chunk's messages.
    #[must_use]
    pub fn turns(&self) -> Range<usize> {
        self.first_turn..self.first_turn.saturating_add(self.messages.len())
    }

    /// The message of turn `turn`, when it is in the chunk.
    #[must_use]
    pub fn message(&self, turn: usize) -> Option<&Message> {
        self.messages.get(turn.checked_sub(self.first_turn)?)
    }

    /// The chunk as a prompt shows it: as [`render_transcript`] writes it, numbered from
    /// [`first_turn`](Self::first_turn).
    #[must_use]
    pub fn render(&self) -> String {
        render_from(self.first_turn, &self.messages)
    }

    /// The length of [`render`](Self::render), in characters, without rendering.
    #[must_use]
    pub fn rendered_chars(&self) -> usize {
        (self.first_turn..)
            .zip(&self.messages)
            .map(|(turn, message)| rendered_chars(turn, message))
            .sum()
    }
}

/// The smallest chunk [`chunk_transcript`] makes, in characters: room for the longest
/// message header (a 20-digit turn, `assistant`, a date) and 16 characters of text. A
/// smaller limit is raised to it.
pub const MIN_CHUNK_CHARS: usize = 64;

/// Splits a transcript into chunks whose [`render`](TranscriptChunk::render) is at most
/// `max_chars` characters (at least [`MIN_CHUNK_CHARS`]).
///
/// Chunks break between messages: each takes as many whole messages, in order, as fit. A
/// message too long for a chunk of its own is split on `char` boundaries into pieces with
/// the same role, time and turn, each filling one chunk (the last may share its chunk with
/// the messages that follow). Concatenating the chunks' messages gives back every
/// message's text, in order; the turns are the messages' indexes in `messages`; an empty
/// transcript gives no chunks.
///
/// ```
/// use fact_extract::{Message, MessageRole, chunk_transcript};
///
/// let messages = [
///     Message::new(MessageRole::User, "a".repeat(29)),
///     Message::new(MessageRole::Assistant, "ok"),
///     Message::new(MessageRole::User, "b".repeat(150)),
/// ];
/// let chunks = chunk_transcript(&messages, 70);
/// assert!(chunks.iter().all(|chunk| chunk.render().chars().count() <= 70));
/// assert_eq!(chunks[0].messages.len(), 2); // the first two messages share a chunk
/// assert_eq!(chunks.len(), 4);             // the long one is split in three
/// assert_eq!(chunks[3].first_turn, 2);     // and every piece is turn 2
/// ```
#[must_use]
pub fn chunk_transcript(messages: &[Message], max_chars: usize) -> Vec<TranscriptChunk> {
    let max_chars = max_chars.max(MIN_CHUNK_CHARS);
    let mut chunks = Vec::new();
    let mut current = TranscriptChunk::default();
    let mut used = 0;
    for (turn, message) in messages.iter().enumerate() {
        let len = rendered_chars(turn, message);
        if used + len <= max_chars {
            if current.messages.is_empty() {
                current.first_turn = turn;
            }
            current.messages.push(message.clone());
            used += len;
            continue;
        }
        if !current.messages.is_empty() {
            chunks.push(std::mem::take(&mut current));
        }
        current.first_turn = turn;
        if len <= max_chars {
            current.messages.push(message.clone());
            used = len;
            continue;
        }
        // Too long for any chunk: full pieces each make a chunk, the rest opens the next.
        let overhead = overhead_chars(turn, message);
        let capacity = max_chars.saturating_sub(overhead);
        let mut pieces = split_chars(&message.content, capacity);
        let last = pieces.pop().unwrap_or_default();
        chunks.extend(
            pieces
                .into_iter()
                .map(|piece| TranscriptChunk::new(turn, vec![piece_of(message, piece)])),
        );
        used = overhead + char_len(&last);
        current.messages.push(piece_of(message, last));
    }
    if !current.messages.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// A piece of `message`'s content, with its role and time.
fn piece_of(message: &Message, content: String) -> Message {
    Message {
        role: message.role,
        content,
        timestamp: message.timestamp,
    }
}

/// `text` cut into pieces of `capacity` characters (the last may be shorter); at least
/// one piece, none empty unless `text` is.
fn split_chars(text: &str, capacity: usize) -> Vec<String> {
    let capacity = capacity.max(1);
    let mut pieces = Vec::new();
    let mut piece = String::new();
    let mut count = 0;
    for c in text.chars() {
        if count == capacity {
            pieces.push(std::mem::take(&mut piece));
            count = 0;
        }
        piece.push(c);
        count += 1;
    }
    pieces.push(piece);
    pieces
}

#[cfg(test)]
mod tests {
    use fact_model::MessageRole;

    use super::*;

    #[test]
    fn overhead_matches_render() {
        let at: Timestamp = "2026-03-01T09:00:00Z".parse().unwrap_or(Timestamp::MIN);
        for role in MessageRole::ALL {
            for turn in [0, 9, 10, 12_345, usize::MAX] {
                for message in [Message::new(role, "héllo"), Message::new(role, "").at(at)] {
                    let mut out = String::new();
                    render_turn(turn, &message, &mut out);
                    assert_eq!(rendered_chars(turn, &message), char_len(&out), "{out:?}");
                    // Room for text beside the longest header.
                    assert!(overhead_chars(turn, &message) + 16 <= MIN_CHUNK_CHARS);
                }
            }
        }
        assert_eq!(digits(usize::MAX), 20);
    }

    #[test]
    fn split_chars_cuts_on_char_boundaries() {
        assert_eq!(split_chars("", 3), [""]);
        assert_eq!(split_chars("abc", 3), ["abc"]);
        assert_eq!(split_chars("ééééé", 2), ["éé", "éé", "é"]);
    }
}

//! Conversation transcripts: reading [`Message`]s from JSON Lines, rendering them for a
//! prompt, and splitting them into chunks that fit one.

use fact_model::{Message, MessageRole, char_len};

use crate::Diagnostic;

/// Characters a rendered message adds to its content: `{role}: ` and the newline.
fn overhead_chars(role: MessageRole) -> usize {
    role.as_str().len() + 3
}

/// Reads a transcript in JSON Lines: one `{"role": "user", "content": "..."}` object per
/// line.
///
/// Blank lines are skipped. A line that is not such an object becomes a [`Diagnostic`]
/// (rule `transcript`) naming its line number, counted from 1, and the other lines are
/// still read. Fields other than `role` and `content` are ignored.
///
/// ```
/// use fact_extract::{MessageRole, parse_transcript};
///
/// let text = r#"{"role": "user", "content": "I switched to pytest."}
///
/// {"role": "robot", "content": "?"}
/// {"role": "assistant", "content": "Noted."}
/// "#;
/// let (messages, diagnostics) = parse_transcript(text);
/// assert_eq!(messages.len(), 2);
/// assert_eq!(messages[1].role, MessageRole::Assistant);
/// assert_eq!(diagnostics.len(), 1);
/// assert!(diagnostics[0].message.starts_with("line 3: "), "{}", diagnostics[0].message);
/// ```
#[must_use]
pub fn parse_transcript(text: &str) -> (Vec<Message>, Vec<Diagnostic>) {
    let mut messages = Vec::new();
    let mut diagnostics = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(message) => messages.push(message),
            Err(problem) => diagnostics.push(Diagnostic {
                rule: "transcript".to_owned(),
                message: format!("line {}: {problem}", index + 1),
            }),
        }
    }
    (messages, diagnostics)
}

/// One line of a transcript: a JSON object (serde alone would also take an array).
fn parse_line(line: &str) -> Result<Message, String> {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(value @ serde_json::Value::Object(_)) => {
            serde_json::from_value(value).map_err(|error| error.to_string())
        }
        Ok(_) => Err("expected a JSON object with \"role\" and \"content\"".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}

/// The messages as they appear in a prompt: each [`Message::render`]ed, in order.
///
/// ```
/// use fact_extract::{Message, MessageRole, render_transcript};
///
/// let messages = [
///     Message::new(MessageRole::User, "Which test framework?"),
///     Message::new(MessageRole::Assistant, "pytest."),
/// ];
/// assert_eq!(render_transcript(&messages), "user: Which test framework?\nassistant: pytest.\n");
/// ```
#[must_use]
pub fn render_transcript(messages: &[Message]) -> String {
    messages.iter().map(Message::render).collect()
}

/// The smallest chunk [`chunk_transcript`] makes: room for the longest role header and
/// some text. A smaller limit is raised to it.
pub const MIN_CHUNK_CHARS: usize = 32;

/// Splits a transcript into chunks whose [`render_transcript`] is at most `max_chars`
/// characters (at least [`MIN_CHUNK_CHARS`]).
///
/// Chunks break between messages: each takes as many whole messages, in order, as fit. A
/// message too long for a chunk of its own is split on `char` boundaries into pieces with
/// the same role, each filling one chunk (the last may share its chunk with the messages
/// that follow). Concatenating the chunks' messages gives back every message's text, in
/// order; an empty transcript gives no chunks.
///
/// ```
/// use fact_extract::{Message, MessageRole, chunk_transcript, render_transcript};
///
/// let messages = [
///     Message::new(MessageRole::User, "a".repeat(29)),
///     Message::new(MessageRole::Assistant, "ok"),
///     Message::new(MessageRole::User, "b".repeat(100)),
/// ];
/// let chunks = chunk_transcript(&messages, 50);
/// assert!(chunks.iter().all(|chunk| render_transcript(chunk).chars().count() <= 50));
/// assert_eq!(chunks[0].len(), 2); // the first two messages share a chunk
/// assert_eq!(chunks.len(), 4);    // the long one is split in three
/// ```
#[must_use]
pub fn chunk_transcript(messages: &[Message], max_chars: usize) -> Vec<Vec<Message>> {
    let max_chars = max_chars.max(MIN_CHUNK_CHARS);
    let mut chunks = Vec::new();
    let mut current: Vec<Message> = Vec::new();
    let mut used = 0;
    for message in messages {
        let len = message.rendered_chars();
        if used + len <= max_chars {
            current.push(message.clone());
            used += len;
            continue;
        }
        if !current.is_empty() {
            chunks.push(std::mem::take(&mut current));
        }
        if len <= max_chars {
            current.push(message.clone());
            used = len;
            continue;
        }
        // Too long for any chunk: full pieces each make a chunk, the rest opens the next.
        let capacity = max_chars - overhead_chars(message.role);
        let mut pieces = split_chars(&message.content, capacity);
        let last = pieces.pop().unwrap_or_default();
        chunks.extend(
            pieces
                .into_iter()
                .map(|piece| vec![piece_of(message, piece)]),
        );
        used = overhead_chars(message.role) + char_len(&last);
        current.push(piece_of(message, last));
    }
    if !current.is_empty() {
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
    use super::*;

    #[test]
    fn overhead_matches_render() {
        for role in [
            MessageRole::User,
            MessageRole::Assistant,
            MessageRole::System,
            MessageRole::Tool,
        ] {
            let message = Message::new(role, "héllo");
            assert_eq!(message.rendered_chars(), char_len(&message.render()));
            // Room for at least one char of text beside the longest header.
            assert!(overhead_chars(role) < MIN_CHUNK_CHARS);
        }
    }

    #[test]
    fn split_chars_cuts_on_char_boundaries() {
        assert_eq!(split_chars("", 3), [""]);
        assert_eq!(split_chars("abc", 3), ["abc"]);
        assert_eq!(split_chars("ééééé", 2), ["éé", "éé", "é"]);
    }
}

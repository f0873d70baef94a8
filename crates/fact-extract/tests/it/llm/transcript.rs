//! Transcripts: reading JSON Lines, and splitting into chunks that fit a prompt.

use fact_extract::{
    MIN_CHUNK_CHARS, Message, MessageRole, chunk_transcript, parse_transcript, render_transcript,
};
use proptest::prelude::*;

/// Parses `text` and compares the messages (as `role: content`) and diagnostics.
fn check(text: &str, messages: &[&str], diagnostics: &[&str]) {
    let (parsed, problems) = parse_transcript(text);
    let parsed: Vec<String> = parsed
        .iter()
        .map(|m| format!("{}: {}", m.role, m.content))
        .collect();
    let problems: Vec<String> = problems
        .iter()
        .map(|d| format!("{}: {}", d.rule, d.message))
        .collect();
    assert_eq!(parsed, messages, "messages of {text:?}");
    assert_eq!(problems, diagnostics, "diagnostics of {text:?}");
}

#[test]
fn reads_json_lines_and_reports_bad_lines_by_number() {
    check("", &[], &[]);
    check(
        concat!(
            r#"{"role": "system", "content": "Be brief."}"#,
            "\n\n   \n",
            r#"{"role": "user", "content": "Hi\nthere", "ts": 3}"#,
            "\r\n",
            r#"{"role": "tool", "content": ""}"#,
            "\n",
            r#"{"role": "assistant", "content": "Hello."}"#,
        ),
        &[
            "system: Be brief.",
            "user: Hi\nthere",
            "tool: ",
            "assistant: Hello.",
        ],
        &[],
    );
    check(
        concat!(
            r#"{"role": "user", "content": "one"}"#,
            "\nnot json\n",
            r#"{"role": "bot", "content": "x"}"#,
            "\n",
            r#"{"role": "user"}"#,
            "\n",
            r#"["user", "x"]"#,
            "\n",
            r#"{"role": "assistant", "content": "two"}"#,
        ),
        &["user: one", "assistant: two"],
        &[
            "transcript: line 2: expected ident at line 1 column 2",
            "transcript: line 3: unknown variant `bot`, expected one of `user`, `assistant`, `system`, `tool`",
            "transcript: line 4: missing field `content`",
            r#"transcript: line 5: expected a JSON object with "role" and "content""#,
        ],
    );
}

#[test]
fn roles_are_snake_case_on_the_wire() {
    let message = Message::new(MessageRole::Assistant, "ok");
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        r#"{"role":"assistant","content":"ok"}"#
    );
}

#[test]
fn chunks_break_between_messages_and_split_only_giant_ones() {
    let m = |role, text: &str| Message::new(role, text);
    let messages = [
        m(MessageRole::User, "aaaaaaaaaa"),      // 17 chars rendered
        m(MessageRole::Assistant, "bbbbbbbbbb"), // 22: 39 with the first
        m(MessageRole::User, "cccccccccc"),      // 17: a chunk of its own
        m(MessageRole::User, &"d".repeat(70)),   // 77: pieces of 33, 33 and 4
        m(MessageRole::Tool, "e"),               // 8: joins the last piece
    ];
    let chunks = chunk_transcript(&messages, 40);
    let rendered: Vec<String> = chunks.iter().map(|c| render_transcript(c)).collect();
    assert_eq!(
        rendered,
        [
            "user: aaaaaaaaaa\nassistant: bbbbbbbbbb\n".to_owned(),
            "user: cccccccccc\n".to_owned(),
            format!("user: {}\n", "d".repeat(33)),
            format!("user: {}\n", "d".repeat(33)),
            "user: dddd\ntool: e\n".to_owned(),
        ]
    );
    assert!(chunk_transcript(&[], 100).is_empty());
    // A limit below the minimum is raised to it.
    let tiny = chunk_transcript(&messages, 1);
    assert!(
        tiny.iter()
            .all(|c| render_transcript(c).chars().count() <= MIN_CHUNK_CHARS)
    );
}

fn role() -> impl Strategy<Value = MessageRole> {
    prop_oneof![
        Just(MessageRole::User),
        Just(MessageRole::Assistant),
        Just(MessageRole::System),
        Just(MessageRole::Tool),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let content = prop_oneof![
        3 => any::<String>(),
        1 => "[a-z é日\n]{0,300}",
        1 => (any::<char>(), 0usize..2_000).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
        1 => Just(String::new()),
    ];
    (role(), content).prop_map(|(role, content)| Message { role, content })
}

proptest! {
    #[test]
    fn every_transcript_splits_into_chunks_that_fit_and_keep_all_text_in_order(
        messages in proptest::collection::vec(message(), 0..12),
        max_chars in MIN_CHUNK_CHARS..600,
    ) {
        let chunks = chunk_transcript(&messages, max_chars);
        for chunk in &chunks {
            prop_assert!(!chunk.is_empty());
            prop_assert!(render_transcript(chunk).chars().count() <= max_chars);
        }
        // Walk the original messages, consuming pieces: each message is one or more
        // consecutive pieces with its role whose texts concatenate to its text (an empty
        // message is exactly one empty piece).
        let mut pieces = chunks.iter().flatten();
        for message in &messages {
            let mut text = String::new();
            loop {
                let piece = pieces.next();
                prop_assert!(piece.is_some(), "pieces ran out before {:?}", message);
                let piece = piece.unwrap();
                prop_assert_eq!(piece.role, message.role);
                prop_assert!(message.content.is_empty() || !piece.content.is_empty());
                text.push_str(&piece.content);
                prop_assert!(message.content.starts_with(&text));
                if text.len() == message.content.len() {
                    break;
                }
            }
        }
        prop_assert!(pieces.next().is_none(), "pieces left over");
    }
}

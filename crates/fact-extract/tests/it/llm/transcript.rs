//! Transcripts: reading JSON Lines leniently (`parse_transcript`) and strictly with every
//! message dated (`read_transcript`, each of its errors), rendering with turns and dates,
//! and splitting into chunks that fit a prompt.

use fact_extract::{
    MAX_TRANSCRIPT_BYTES, MIN_CHUNK_CHARS, Message, MessageRole, TranscriptChunk, TranscriptError,
    TranscriptOptions, chunk_transcript, parse_transcript, read_transcript, render_transcript,
};
use fact_model::Timestamp;
use proptest::prelude::*;

use super::t;

/// A message as `role: content`, with ` @ time` after the role when it has one.
fn line(message: &Message) -> String {
    match message.timestamp {
        Some(at) => format!("{} @ {at}: {}", message.role, message.content),
        None => format!("{}: {}", message.role, message.content),
    }
}

/// Parses `text` leniently and compares the messages (as [`line`]s) and diagnostics.
fn check(text: &str, messages: &[&str], diagnostics: &[&str]) {
    let (parsed, problems) = parse_transcript(text);
    let parsed: Vec<String> = parsed.iter().map(line).collect();
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
fn the_lenient_reader_reads_times_under_every_name_and_reports_bad_ones() {
    check(
        concat!(
            r#"{"role": "user", "content": "a", "timestamp": "2026-03-01T09:00:00+01:00"}"#,
            "\n",
            r#"{"role": "user", "content": "b", "time": "2026-03-01T09:00:00Z"}"#,
            "\n",
            r#"{"role": "user", "content": "c", "created_at": "2026-03-01T09:00:00.5Z"}"#,
            "\n",
            r#"{"role": "user", "content": "d", "time": null}"#,
            "\n",
            // The first name present wins; null counts as absent.
            r#"{"role": "user", "content": "e", "timestamp": null, "time": "2026-03-02T00:00:00Z", "created_at": "junk"}"#,
            "\n",
            r#"{"role": "user", "content": "f", "timestamp": "yesterday"}"#,
            "\n",
            r#"{"role": "user", "content": "g", "time": 1767225600}"#,
            "\n",
            r#"{"role": "user", "content": "h", "created_at": "2026-13-01T00:00:00Z"}"#,
        ),
        &[
            "user @ 2026-03-01T08:00:00Z: a",
            "user @ 2026-03-01T09:00:00Z: b",
            "user @ 2026-03-01T09:00:00.500Z: c",
            "user: d",
            "user @ 2026-03-02T00:00:00Z: e",
        ],
        &[
            r#"transcript: line 6: the time "yesterday" is not an RFC 3339 date-time (year must be four digits)"#,
            r#"transcript: line 7: the time "1767225600" is not an RFC 3339 date-time (expected a string, found a number)"#,
            r#"transcript: line 8: the time "2026-13-01T00:00:00Z" is not an RFC 3339 date-time (month out of range)"#,
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

const NOW: &str = "2026-03-10T12:00:00Z";

fn options() -> TranscriptOptions {
    TranscriptOptions::new(t(NOW))
}

/// A JSON line of a message by the user saying `content`, at `time` when given.
fn msg(content: &str, time: Option<&str>) -> String {
    match time {
        Some(time) => {
            format!(r#"{{"role": "user", "content": "{content}", "timestamp": "{time}"}}"#)
        }
        None => format!(r#"{{"role": "user", "content": "{content}"}}"#),
    }
}

/// Reads `lines` (joined by newlines) strictly and compares the messages' resolved times,
/// as `content @ time`.
fn check_times(options: &TranscriptOptions, lines: &[String], expect: &[&str]) {
    let text = lines.join("\n");
    let transcript = read_transcript(&text, options).unwrap();
    let got: Vec<String> = transcript
        .messages
        .iter()
        .map(|m| format!("{} @ {}", m.content, m.timestamp.unwrap()))
        .collect();
    assert_eq!(got, expect, "times of {text}");
}

#[test]
fn every_message_is_dated_by_its_own_time_the_one_before_or_the_session() {
    let session = options().with_session_time(t("2026-03-01T08:00:00Z"));
    // Nothing dated: the session time, else now.
    let undated = [msg("a", None), msg("b", None)];
    check_times(
        &session,
        &undated,
        &["a @ 2026-03-01T08:00:00Z", "b @ 2026-03-01T08:00:00Z"],
    );
    check_times(
        &options(),
        &undated,
        &[&format!("a @ {NOW}"), &format!("b @ {NOW}")],
    );
    // Before the first timed message: the session time, else that first time.
    let late_time = [
        msg("a", None),
        msg("b", None),
        msg("c", Some("2026-03-02T09:00:00Z")),
        msg("d", None),
    ];
    check_times(
        &session,
        &late_time,
        &[
            "a @ 2026-03-01T08:00:00Z",
            "b @ 2026-03-01T08:00:00Z",
            "c @ 2026-03-02T09:00:00Z",
            "d @ 2026-03-02T09:00:00Z",
        ],
    );
    check_times(
        &options(),
        &late_time,
        &[
            "a @ 2026-03-02T09:00:00Z",
            "b @ 2026-03-02T09:00:00Z",
            "c @ 2026-03-02T09:00:00Z",
            "d @ 2026-03-02T09:00:00Z",
        ],
    );
    // After a timed message: the one before, as resolved, even when times go backwards.
    check_times(
        &session,
        &[
            msg("a", Some("2026-03-03T00:00:00Z")),
            msg("b", None),
            msg("c", Some("2026-03-02T00:00:00Z")),
            msg("d", None),
            msg("e", None),
        ],
        &[
            "a @ 2026-03-03T00:00:00Z",
            "b @ 2026-03-03T00:00:00Z",
            "c @ 2026-03-02T00:00:00Z",
            "d @ 2026-03-02T00:00:00Z",
            "e @ 2026-03-02T00:00:00Z",
        ],
    );
    // Lines that are not messages are diagnostics and do not break the chain.
    let transcript = read_transcript(
        &[
            msg("a", Some("2026-03-03T00:00:00Z")),
            "oops".to_owned(),
            String::new(),
            msg("b", None),
        ]
        .join("\n"),
        &options(),
    )
    .unwrap();
    assert_eq!(transcript.messages.len(), 2);
    assert_eq!(
        transcript.messages[1].timestamp,
        Some(t("2026-03-03T00:00:00Z"))
    );
    assert_eq!(transcript.diagnostics.len(), 1);
    assert!(transcript.diagnostics[0].message.starts_with("line 2: "));
    assert_eq!(transcript.diagnostics[0].rule, "transcript");
}

/// Reads `text` strictly and compares the error, its code and its message.
fn check_error(text: &str, options: &TranscriptOptions, expect: TranscriptError, message: &str) {
    let err = read_transcript(text, options).unwrap_err();
    assert_eq!(err, expect, "{text:?}");
    assert_eq!(err.to_string(), message);
    let code = match &expect {
        TranscriptError::InvalidTimestamp { .. } => "invalid_timestamp",
        TranscriptError::FutureTimestamp { .. } => "future_timestamp",
        TranscriptError::TooLarge { .. } => "transcript_too_large",
        TranscriptError::Empty { .. } => "empty_transcript",
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(err.code(), code);
}

#[test]
fn a_time_that_does_not_parse_is_an_error_naming_line_value_and_reason() {
    let text = [
        msg("a", Some("2026-03-01T09:00:00Z")),
        String::new(),
        msg("b", Some("2026-03-01 9am")),
    ]
    .join("\n");
    check_error(
        &text,
        &options(),
        TranscriptError::InvalidTimestamp {
            line: 3,
            value: "2026-03-01 9am".to_owned(),
            reason: "hour must be two digits".to_owned(),
        },
        r#"line 3: the time "2026-03-01 9am" is not an RFC 3339 date-time (hour must be two digits); write it like "2026-03-01T09:00:00Z" or leave it out"#,
    );
    // A non-string, and a long value clipped to 64 characters.
    check_error(
        r#"{"role": "user", "content": "x", "created_at": [2026, 3, 1]}"#,
        &options(),
        TranscriptError::InvalidTimestamp {
            line: 1,
            value: "[2026,3,1]".to_owned(),
            reason: "expected a string, found an array".to_owned(),
        },
        r#"line 1: the time "[2026,3,1]" is not an RFC 3339 date-time (expected a string, found an array); write it like "2026-03-01T09:00:00Z" or leave it out"#,
    );
    let long = "9".repeat(500);
    let err = read_transcript(&msg("x", Some(&long)), &options()).unwrap_err();
    let TranscriptError::InvalidTimestamp { value, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(value.chars().count(), 64);
    assert!(value.ends_with("..."));
}

#[test]
fn a_time_more_than_a_day_ahead_is_an_error() {
    // Exactly one day ahead is still accepted: clocks and offsets may be off by hours.
    check_times(
        &options(),
        &[msg("a", Some("2026-03-11T12:00:00Z"))],
        &["a @ 2026-03-11T12:00:00Z"],
    );
    check_error(
        &[
            msg("a", None),
            msg("b", Some("2026-03-11T12:00:00.000001Z")),
        ]
        .join("\n"),
        &options(),
        TranscriptError::FutureTimestamp {
            line: 2,
            at: t("2026-03-11T12:00:00.000001Z"),
            now: t(NOW),
        },
        "line 2: the time 2026-03-11T12:00:00.000001Z is more than one day after now \
         (2026-03-10T12:00:00Z); correct the time (is its offset right?) or leave it out",
    );
    // The session time is line 0.
    check_error(
        &msg("a", None),
        &options().with_session_time(t("2027-01-01T00:00:00Z")),
        TranscriptError::FutureTimestamp {
            line: 0,
            at: t("2027-01-01T00:00:00Z"),
            now: t(NOW),
        },
        "the session time 2027-01-01T00:00:00Z is more than one day after now \
         (2026-03-10T12:00:00Z); correct the time (is its offset right?) or leave it out",
    );
    // Near the end of time nothing overflows.
    let end = TranscriptOptions::new(Timestamp::MAX);
    assert!(read_transcript(&msg("a", Some("9999-12-31T23:59:59Z")), &end).is_ok());
}

#[test]
fn a_transcript_over_the_limit_is_refused_before_parsing() {
    assert_eq!(options().max_bytes, MAX_TRANSCRIPT_BYTES);
    assert_eq!(MAX_TRANSCRIPT_BYTES, 8 * 1024 * 1024);
    let text = msg("hello", None);
    let bytes = text.len();
    assert!(read_transcript(&text, &options().with_max_bytes(bytes)).is_ok());
    // Even garbage and future times: the size is checked first.
    let garbage = format!(
        "{}\n{}",
        "x".repeat(100),
        msg("a", Some("2999-01-01T00:00:00Z"))
    );
    check_error(
        &garbage,
        &options().with_max_bytes(100),
        TranscriptError::TooLarge {
            bytes: garbage.len(),
            limit: 100,
        },
        &format!(
            "the transcript is {} bytes, over the limit of 100 bytes; split it into several \
             sessions or raise the limit",
            garbage.len()
        ),
    );
    let big = "x".repeat(MAX_TRANSCRIPT_BYTES + 1);
    let err = read_transcript(&big, &options()).unwrap_err();
    assert_eq!(err.code(), "transcript_too_large");
}

#[test]
fn a_transcript_without_messages_is_refused() {
    for blank in ["", "\n\n", "  \r\n\t"] {
        check_error(
            blank,
            &options(),
            TranscriptError::Empty {
                detail: "the text is blank".to_owned(),
            },
            r#"the transcript holds no message (the text is blank); write one JSON object per line, like {"role": "user", "content": "..."}"#,
        );
    }
    check_error(
        "\nnot json\n[1]\n",
        &options(),
        TranscriptError::Empty {
            detail: "2 line(s) not read, the first: line 2: expected ident at line 1 column 2"
                .to_owned(),
        },
        r#"the transcript holds no message (2 line(s) not read, the first: line 2: expected ident at line 1 column 2); write one JSON object per line, like {"role": "user", "content": "..."}"#,
    );
}

#[test]
fn messages_render_with_turns_and_dates() {
    let messages = [
        Message::new(MessageRole::User, "Hi").at(t("2026-03-01T23:59:59Z")),
        Message::new(MessageRole::Assistant, "Hello"),
    ];
    assert_eq!(
        render_transcript(&messages),
        "[0] user (2026-03-01): Hi\n[1] assistant: Hello\n"
    );
    let chunk = TranscriptChunk::new(41, messages.to_vec());
    assert_eq!(
        chunk.render(),
        "[41] user (2026-03-01): Hi\n[42] assistant: Hello\n"
    );
    assert_eq!(chunk.rendered_chars(), chunk.render().chars().count());
    assert_eq!(chunk.turns(), 41..43);
    assert_eq!(chunk.message(42).map(|m| m.content.as_str()), Some("Hello"));
    assert_eq!(chunk.message(40), None);
    assert_eq!(chunk.message(43), None);
}

#[test]
fn chunks_break_between_messages_and_split_only_giant_ones() {
    let m = |role, text: &str| Message::new(role, text);
    let messages = [
        m(MessageRole::User, "aaaaaaaaaa"), // 21 chars rendered: "[0] user: " + 10 + "\n"
        m(MessageRole::Assistant, "bbbbbbbbbb"), // 26: 47 with the first
        m(MessageRole::User, "c".repeat(50).as_str()), // 61: a chunk of its own
        m(MessageRole::User, &"d".repeat(150)), // 161: pieces of 59, 59 and 32
        m(MessageRole::Tool, "e"),          // 12: joins the last piece
    ];
    let chunks = chunk_transcript(&messages, 70);
    let rendered: Vec<String> = chunks.iter().map(TranscriptChunk::render).collect();
    assert_eq!(
        rendered,
        [
            "[0] user: aaaaaaaaaa\n[1] assistant: bbbbbbbbbb\n".to_owned(),
            format!("[2] user: {}\n", "c".repeat(50)),
            format!("[3] user: {}\n", "d".repeat(59)),
            format!("[3] user: {}\n", "d".repeat(59)),
            format!("[3] user: {}\n[4] tool: e\n", "d".repeat(32)),
        ]
    );
    let firsts: Vec<usize> = chunks.iter().map(|c| c.first_turn).collect();
    assert_eq!(firsts, [0, 2, 3, 3, 3]);
    assert!(chunk_transcript(&[], 100).is_empty());
    // A limit below the minimum is raised to it.
    let tiny = chunk_transcript(&messages, 1);
    assert!(tiny.iter().all(|c| c.rendered_chars() <= MIN_CHUNK_CHARS));
}

fn role() -> impl Strategy<Value = MessageRole> {
    proptest::sample::select(MessageRole::ALL.to_vec())
}

fn message() -> impl Strategy<Value = Message> {
    let content = prop_oneof![
        3 => any::<String>(),
        1 => "[a-z é日\n]{0,300}",
        1 => (any::<char>(), 0usize..2_000).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
        1 => Just(String::new()),
    ];
    let time = proptest::option::of(
        (0i64..4_000_000_000).prop_map(|secs| Timestamp::from_unix_secs(secs).unwrap()),
    );
    (role(), content, time).prop_map(|(role, content, timestamp)| Message {
        role,
        content,
        timestamp,
    })
}

proptest! {
    #[test]
    fn every_transcript_splits_into_chunks_that_fit_and_keep_all_text_and_turns(
        messages in proptest::collection::vec(message(), 0..12),
        first_turn_padding in 0usize..3,
        max_chars in MIN_CHUNK_CHARS..600,
    ) {
        // Padding with empty messages moves the turns into two and three digits.
        let mut all = vec![Message::new(MessageRole::User, ""); first_turn_padding * 50];
        all.extend(messages);
        let chunks = chunk_transcript(&all, max_chars);
        for chunk in &chunks {
            prop_assert!(!chunk.messages.is_empty());
            prop_assert!(chunk.render().chars().count() <= max_chars);
            prop_assert_eq!(chunk.rendered_chars(), chunk.render().chars().count());
        }
        // Walk the original messages, consuming pieces with their turns: each message is
        // one or more consecutive pieces with its role, time and turn whose texts
        // concatenate to its text (an empty message is exactly one empty piece).
        let mut pieces = chunks
            .iter()
            .flat_map(|chunk| chunk.turns().zip(&chunk.messages));
        for (turn, message) in all.iter().enumerate() {
            let mut text = String::new();
            loop {
                let piece = pieces.next();
                prop_assert!(piece.is_some(), "pieces ran out before {:?}", message);
                let (piece_turn, piece) = piece.unwrap();
                prop_assert_eq!(piece_turn, turn);
                prop_assert_eq!(piece.role, message.role);
                prop_assert_eq!(piece.timestamp, message.timestamp);
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

    #[test]
    fn read_transcript_never_panics(text in any::<String>()) {
        let _ = read_transcript(&text, &options());
    }

    #[test]
    fn read_transcript_dates_every_message_from_its_own_or_an_earlier_time(
        lines in proptest::collection::vec(
            // Up to NOW, so no time is in the future.
            (proptest::option::of(0i64..1_773_144_000), "[a-z ]{0,10}", any::<bool>()),
            0..10,
        ),
        session in proptest::option::of(0i64..1_773_144_000),
    ) {
        let text: Vec<String> = lines
            .iter()
            .map(|(secs, content, noise)| match (secs, noise) {
                (_, true) => "not a message".to_owned(),
                (Some(secs), false) => format!(
                    r#"{{"role": "user", "content": "{content}", "time": "{}"}}"#,
                    Timestamp::from_unix_secs(*secs).unwrap()
                ),
                (None, false) => format!(r#"{{"role": "user", "content": "{content}"}}"#),
            })
            .collect();
        let options = match session {
            Some(secs) => options().with_session_time(Timestamp::from_unix_secs(secs).unwrap()),
            None => options(),
        };
        let given: Vec<Option<Timestamp>> = lines
            .iter()
            .filter(|(_, _, noise)| !noise)
            .map(|(secs, _, _)| secs.map(|s| Timestamp::from_unix_secs(s).unwrap()))
            .collect();
        match read_transcript(&text.join("\n"), &options) {
            Err(err) => {
                prop_assert!(given.is_empty(), "{err}");
                prop_assert_eq!(err.code(), "empty_transcript");
            }
            Ok(transcript) => {
                prop_assert_eq!(transcript.messages.len(), given.len());
                let first = given.iter().flatten().next().copied();
                let mut previous = options.session_time.or(first).unwrap_or(options.now);
                for (message, given) in transcript.messages.iter().zip(&given) {
                    let expect = given.unwrap_or(previous);
                    prop_assert_eq!(message.timestamp, Some(expect));
                    previous = expect;
                }
            }
        }
    }
}

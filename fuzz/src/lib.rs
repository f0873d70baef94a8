//! What the fuzz targets share: structured inputs (`arbitrary`) that render to the text a
//! parser reads (documents from a vocabulary of the format's own tokens, JSON with hostile
//! strings and numbers), and the runtime every request-handling target starts from.
//!
//! The renderers write text by hand rather than through `serde_json::Value`, so they can
//! write what a `Value` cannot hold: `NaN`, `1e309`, `-0`, integers beyond 64 bits, and
//! keys given twice.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use dispatch_runtime::DispatchRuntimeManager;
use dispatch_runtime::reexports::{Clock, ManualClock, Timestamp};

/// Picks `vocab[index % len]`; an empty vocabulary gives the empty string.
fn pick<'a>(vocab: &[&'a str], index: u8) -> &'a str {
    if vocab.is_empty() {
        ""
    } else {
        vocab[usize::from(index) % vocab.len()]
    }
}

/// A piece of a text document: a token of the format, free text, or a hostile shape.
#[derive(Arbitrary, Debug, Clone)]
pub enum Piece {
    /// A token of the target's vocabulary.
    Word(u8),
    /// Any text.
    Free(String),
    /// A line break (`\n`, `\r\n` or a lone `\r`).
    Newline(u8),
    /// Up to 15 spaces or tabs.
    Blank(u8),
    /// A number, as digits.
    Digits(u32),
    /// A dotted id such as `3.4.1`.
    Dotted(Vec<u8>),
    /// `a` and up to 255 combining acute accents.
    Combining(u8),
    /// A NUL byte.
    Nul,
    /// One token repeated up to 255 times.
    Repeat(u8, u8),
}

/// A text document: pieces written one after another.
#[derive(Arbitrary, Debug, Clone, Default)]
pub struct Doc(pub Vec<Piece>);

impl Doc {
    /// The document's text, with `vocab` for its [`Piece::Word`]s.
    pub fn render(&self, vocab: &[&str]) -> String {
        let mut out = String::new();
        self.render_into(vocab, &mut out);
        out
    }

    /// Appends the document's text to `out`.
    pub fn render_into(&self, vocab: &[&str], out: &mut String) {
        for piece in &self.0 {
            match piece {
                Piece::Word(i) => out.push_str(pick(vocab, *i)),
                Piece::Free(text) => out.push_str(text),
                Piece::Newline(kind) => out.push_str(match kind % 3 {
                    0 => "\n",
                    1 => "\r\n",
                    _ => "\r",
                }),
                Piece::Blank(n) => {
                    for k in 0..(n % 16) {
                        out.push(if k % 3 == 2 { '\t' } else { ' ' });
                    }
                }
                Piece::Digits(n) => out.push_str(&n.to_string()),
                Piece::Dotted(parts) => {
                    let parts: Vec<String> = parts.iter().take(6).map(u8::to_string).collect();
                    out.push_str(&parts.join("."));
                }
                Piece::Combining(n) => {
                    out.push('a');
                    out.extend(std::iter::repeat_n('\u{301}', usize::from(*n)));
                }
                Piece::Nul => out.push('\0'),
                Piece::Repeat(i, n) => {
                    let word = pick(vocab, *i);
                    for _ in 0..*n {
                        out.push_str(word);
                    }
                }
            }
        }
    }
}

/// Hostile number lexemes: what JSON forbids, what overflows, what is exactly at a limit.
const NUMBER_LEXEMES: &[&str] = &[
    "NaN",
    "Infinity",
    "-Infinity",
    "1e308",
    "1e309",
    "-1e309",
    "-0",
    "-0.0",
    "0.0",
    "1e-400",
    "5e-324",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "1",
    "0",
    "0.5",
    "1.0000000000000002",
    "0.9999999999999999",
    "2",
    "-1",
    "1e2",
    "01",
    "1.",
    ".5",
    "+1",
    "0x10",
    "4294967296",
    "100000000000000000000000000000",
];

/// A JSON number, or something in a number's place.
#[derive(Arbitrary, Debug, Clone)]
pub enum Num {
    /// An integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float, written with Rust's shortest round-trip form (`NaN` and `inf` included).
    Float(f64),
    /// One of [`NUMBER_LEXEMES`].
    Lexeme(u8),
}

impl Num {
    fn render_into(&self, out: &mut String) {
        match self {
            Num::Int(n) => out.push_str(&n.to_string()),
            Num::UInt(n) => out.push_str(&n.to_string()),
            Num::Float(x) => out.push_str(&format!("{x:?}")),
            Num::Lexeme(i) => out.push_str(pick(NUMBER_LEXEMES, *i)),
        }
    }
}

/// A JSON string's content.
#[derive(Arbitrary, Debug, Clone)]
pub enum Str {
    /// A word of the target's string vocabulary.
    Known(u8),
    /// Any text.
    Free(String),
    /// A document rendered with the target's text vocabulary.
    Doc(Doc),
    /// `a` and up to 65,535 combining accents: a subject of 10,000 combining characters.
    Combining(u16),
    /// Up to 255 bytes of whitespace.
    Blank(u8),
}

impl Str {
    /// The string's text.
    pub fn text(&self, vocab: &Vocab) -> String {
        match self {
            Str::Known(i) => pick(vocab.strings, *i).to_owned(),
            Str::Free(text) => text.clone(),
            Str::Doc(doc) => doc.render(vocab.text),
            Str::Combining(n) => {
                let mut out = String::from("a");
                out.extend(std::iter::repeat_n('\u{301}', usize::from(*n)));
                out
            }
            Str::Blank(n) => " \t\n".chars().cycle().take(usize::from(*n)).collect(),
        }
    }
}

/// An object key.
#[derive(Arbitrary, Debug, Clone)]
pub enum Key {
    /// A key of the target's key vocabulary.
    Known(u8),
    /// Any key.
    Free(String),
}

impl Key {
    /// The key's text.
    pub fn text(&self, vocab: &Vocab) -> String {
        match self {
            Key::Known(i) => pick(vocab.keys, *i).to_owned(),
            Key::Free(text) => text.clone(),
        }
    }
}

/// A JSON value, rendered as text (so it can hold what JSON forbids).
#[derive(Arbitrary, Debug, Clone)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number or a hostile lexeme.
    Num(Num),
    /// A string.
    Str(Str),
    /// An array.
    Array(Vec<Json>),
    /// An object; keys may repeat.
    Object(Vec<(Key, Json)>),
    /// Up to 255 arrays opened (and, unless `closed` is false, closed) around a value.
    Nested {
        /// How deep.
        depth: u8,
        /// Whether the brackets are closed.
        closed: bool,
        /// The innermost value.
        inner: Box<Json>,
    },
    /// Raw text in a value's place.
    Raw(String),
}

/// The words a target's structured inputs draw from.
#[derive(Debug, Clone, Copy)]
pub struct Vocab {
    /// Object keys.
    pub keys: &'static [&'static str],
    /// String values.
    pub strings: &'static [&'static str],
    /// Tokens of the text documents inside strings.
    pub text: &'static [&'static str],
}

impl Json {
    /// The value as JSON text (or almost JSON, where it holds a hostile lexeme or raw text).
    pub fn render(&self, vocab: &Vocab) -> String {
        let mut out = String::new();
        self.render_into(vocab, &mut out);
        out
    }

    /// Appends the value's text to `out`.
    pub fn render_into(&self, vocab: &Vocab, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => n.render_into(out),
            Json::Str(s) => push_string(out, &s.text(vocab)),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.render_into(vocab, out);
                }
                out.push(']');
            }
            Json::Object(fields) => render_object(fields, vocab, out),
            Json::Nested {
                depth,
                closed,
                inner,
            } => {
                out.extend(std::iter::repeat_n('[', usize::from(*depth)));
                inner.render_into(vocab, out);
                if *closed {
                    out.extend(std::iter::repeat_n(']', usize::from(*depth)));
                }
            }
            Json::Raw(text) => out.push_str(text),
        }
    }
}

/// Writes `{"key": value, …}`.
pub fn render_object(fields: &[(Key, Json)], vocab: &Vocab, out: &mut String) {
    out.push('{');
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_string(out, &key.text(vocab));
        out.push(':');
        value.render_into(vocab, out);
    }
    out.push('}');
}

/// Appends `text` as a JSON string literal.
pub fn push_string(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).expect("a string serializes"));
}

/// The tasks.md of the fixture spec `s`: two tasks, the first with requirements.
pub const FIXTURE_TASKS: &str = "# Tasks\n\n- [ ] 1. Add the parser\n  - File: src/parse.rs\n  \
    - _Requirements: 1.1, 2_\n  - _Prompt: Role: Rust developer | Task: parse it | \
    Success: tests pass_\n- [ ] 2. Add the printer\n  - _Requirements: 2.1_\n";

/// The requirements.md of the fixture spec `s`.
pub const FIXTURE_REQUIREMENTS: &str = "# Requirements\n\n### Requirement 1: Parsing\n\n\
    1. WHEN input is valid THEN the parser SHALL accept it\n\n### Requirement 2: Printing\n\n\
    - **2.1** WHEN asked THEN the printer SHALL print\n";

/// A project folder (one per process) holding the spec `s`, whose tasks.md
/// [`fresh_runtime`] writes anew before every input: requests may change it.
pub fn fixture_project() -> &'static Path {
    static PROJECT: OnceLock<PathBuf> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("factmem-fuzz-{}", std::process::id()));
        let spec = dir.join(".spec-context").join("specs").join("s");
        std::fs::create_dir_all(&spec).expect("fixture folder");
        std::fs::write(spec.join("requirements.md"), FIXTURE_REQUIREMENTS).expect("fixture");
        dir
    })
}

/// A runtime in memory on the fixture project, with a manual clock (so an input runs the
/// same way every time), after resetting the fixture's tasks.md.
pub fn fresh_runtime() -> DispatchRuntimeManager {
    let project = fixture_project();
    let tasks = project.join(".spec-context/specs/s/tasks.md");
    std::fs::write(tasks, FIXTURE_TASKS).expect("fixture tasks.md");
    let start: Timestamp = "2025-01-01T00:00:00Z".parse().expect("a timestamp");
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(start));
    DispatchRuntimeManager::builder()
        .clock(clock)
        .project_root(project)
        .build()
}

/// The protocol's request field names, for the request-handling targets.
pub const REQUEST_KEYS: &[&str] = &[
    "spec_name",
    "task_id",
    "run_id",
    "role",
    "output",
    "max_output_tokens",
    "task_prompt",
    "status",
    "rebind",
    "subject",
    "query",
    "limit",
    "tags",
    "as_of",
    "include_invalid",
    "id",
    "relation",
    "object",
    "text",
    "project_path",
    "task_description",
    "max_facts",
    "verbose",
];

/// String values the protocol's requests know.
pub const REQUEST_STRINGS: &[&str] = &[
    "s",
    "1",
    "2",
    "3",
    "implementer",
    "reviewer",
    "pending",
    "in_progress",
    "completed",
    "run-1",
    "run_1",
    "s:1",
    "task:1",
    "src/parse.rs",
    "parser",
    "",
    " ",
    "..",
    "a/b",
    "\u{0}",
    "2025-01-01T00:00:00Z",
    "file_change",
    "decision",
    "error",
];

/// A dispatch output's text vocabulary: markers and the contract's JSON.
pub const OUTPUT_TEXT: &[&str] = &[
    "BEGIN_DISPATCH_RESULT",
    "END_DISPATCH_RESULT",
    "\n",
    "{",
    "}",
    "\"",
    "```json",
    "```",
    "{\"task_id\": \"1\", \"status\": \"completed\", \"summary\": \"done\"}",
    "{\"task_id\": \"1\", \"assessment\": \"approved\", \"summary\": \"ok\"}",
    "\"files_changed\": [\"src/a.rs\"]",
    "src/parse.rs",
    "error[E0308]: mismatched types",
    "test result: ok",
    "FAILED",
    "Decision:",
    "Convention:",
];

/// Whether `text` is JSON holding, at any depth, a `project_path` other than the fixture
/// project. Request-handling targets never send such text: a request may rewrite the
/// tasks.md of the project it names, and a fuzzer must not write into a real project.
pub fn names_other_project(text: &[u8]) -> bool {
    fn scan(value: &serde_json::Value, project: &str) -> bool {
        match value {
            serde_json::Value::Object(map) => map.iter().any(|(key, value)| {
                (key == "project_path" && value.as_str() != Some(project)) || scan(value, project)
            }),
            serde_json::Value::Array(items) => items.iter().any(|item| scan(item, project)),
            _ => false,
        }
    }
    let project = fixture_project().display().to_string();
    // Any line of it (the MCP target sends several frames in one piece of text).
    text.split(|&b| b == b'\n').any(|line| {
        serde_json::from_slice::<serde_json::Value>(line.trim_ascii())
            .is_ok_and(|value| scan(&value, &project))
    })
}

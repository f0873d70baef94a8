//! Tests of conversation extraction: transcripts, prompts, replies, the LLM extractor
//! against a scripted client (the reply contract in `contract`), and the real clients (a
//! shell command, an HTTP server).

mod command;
mod contract;
mod extractor;
#[cfg(feature = "openai")]
mod openai;
mod prompt;
mod reply;
mod transcript;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fact_extract::{
    ConversationExtraction, ConversationExtractor, KnownMemory, LlmClient, LlmError,
    LlmExtractorConfig, LlmFactExtractor, Message, MessageRole,
};
use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};

use super::at;

/// A client that answers with scripted replies, in order, and records every prompt.
/// Once the script is spent it answers `{"facts": []}`.
#[derive(Debug, Default)]
pub(crate) struct Scripted {
    replies: Mutex<VecDeque<Result<String, LlmError>>>,
    prompts: Mutex<Vec<String>>,
}

impl Scripted {
    pub(crate) fn new<'a>(replies: impl IntoIterator<Item = &'a str>) -> Arc<Self> {
        Self::results(replies.into_iter().map(|reply| Ok(reply.to_owned())))
    }

    pub(crate) fn results(
        replies: impl IntoIterator<Item = Result<String, LlmError>>,
    ) -> Arc<Self> {
        Arc::new(Scripted {
            replies: Mutex::new(replies.into_iter().collect()),
            prompts: Mutex::default(),
        })
    }

    pub(crate) fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }
}

impl LlmClient for Scripted {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        self.prompts.lock().unwrap().push(prompt.to_owned());
        self.replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Ok(r#"{"facts": []}"#.to_owned()))
    }
}

pub(crate) fn extractor(client: Arc<Scripted>, config: LlmExtractorConfig) -> LlmFactExtractor {
    LlmFactExtractor::new(client, Arc::new(ManualClock::new(at())), config)
}

/// A short conversation.
pub(crate) fn conversation() -> Vec<Message> {
    vec![
        Message::new(
            MessageRole::User,
            "Let's write the tests with pytest, not unittest.",
        ),
        Message::new(
            MessageRole::Assistant,
            "Done: tests/test_parser.py uses pytest.",
        ),
    ]
}

/// `text` as a timestamp.
pub(crate) fn t(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// A conversation whose messages carry times, some of them: a move from Paris to Berlin,
/// a car sold, a nickname. Turns 0 to 5.
pub(crate) fn dated_conversation() -> Vec<Message> {
    vec![
        Message::new(MessageRole::User, "Hi! Quick update on my life.")
            .at(t("2026-03-01T09:00:00Z")),
        Message::new(MessageRole::Assistant, "Sure, go ahead."),
        Message::new(MessageRole::User, "I moved from Paris to Berlin last week.")
            .at(t("2026-03-02T10:00:00Z")),
        Message::new(MessageRole::Assistant, "Congratulations on the move!"),
        Message::new(
            MessageRole::User,
            "Also, I sold my car. Mel helped me move.",
        )
        .at(t("2026-03-03T11:00:00Z")),
        Message::new(MessageRole::User, "Melanie is my sister."),
    ]
}

/// A known fact about the user, from an earlier session.
pub(crate) fn known_fact(relation: &str, object: &str, statement: &str) -> SessionFact {
    SessionFact::builder("user", relation, object)
        .tag(Tag::Context)
        .source("ep_0", SourceRole::Extractor)
        .statement(statement)
        .valid_from(t("2026-01-10T08:00:00Z"))
        .build()
        .unwrap()
}

/// What memory knows before [`dated_conversation`]: where the user lives, their car and
/// editor, and the predicates in use.
pub(crate) fn known() -> KnownMemory {
    KnownMemory::new(
        vec![
            known_fact("lives_in", "Paris", "User lives in Paris"),
            known_fact("owns_car", "a Volvo", "User owns a Volvo"),
            known_fact("prefers_editor", "vim", "User prefers vim"),
        ],
        vec![(
            "user".to_owned(),
            vec![
                "lives_in".to_owned(),
                "owns_car".to_owned(),
                "prefers_editor".to_owned(),
            ],
        )],
    )
}

/// The facts as `subject | relation | object | tags | confidence` lines, with
/// ` | statement` when there is one.
pub(crate) fn fact_lines(extraction: &ConversationExtraction) -> Vec<String> {
    extraction
        .facts
        .iter()
        .map(|f| &f.fact)
        .map(|f| {
            let tags: Vec<&str> = f.tags().as_slice().iter().map(|t| t.as_str()).collect();
            let mut line = format!(
                "{} | {} | {} | {} | {}",
                f.subject(),
                f.relation(),
                f.object(),
                tags.join(","),
                f.confidence()
            );
            if let Some(statement) = f.statement() {
                line.push_str(" | ");
                line.push_str(statement);
            }
            line
        })
        .collect()
}

/// The diagnostics as `rule: message` lines.
pub(crate) fn diagnostic_lines(extraction: &ConversationExtraction) -> Vec<String> {
    extraction
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.rule, d.message))
        .collect()
}

/// Extracts from [`conversation`] with one scripted `reply` and the default config, and
/// compares facts and diagnostics.
pub(crate) fn check(reply: &str, facts: &[&str], diagnostics: &[&str]) -> ConversationExtraction {
    let client = Scripted::new([reply]);
    let extraction = extractor(client.clone(), LlmExtractorConfig::default())
        .extract_conversation(&conversation(), "chat-1", &KnownMemory::default())
        .unwrap();
    assert_eq!(fact_lines(&extraction), facts, "facts of {reply}");
    assert_eq!(
        diagnostic_lines(&extraction),
        diagnostics,
        "diagnostics of {reply}"
    );
    assert_eq!(client.prompts().len(), 1);
    extraction
}

/// Extracts from `transcript` with one scripted `reply`, knowing `known`, with the
/// default config; returns the extraction and the prompt the model was sent.
pub(crate) fn extract_with(
    known: &KnownMemory,
    transcript: &[Message],
    reply: &str,
) -> (ConversationExtraction, String) {
    let client = Scripted::new([reply]);
    let extraction = extractor(client.clone(), LlmExtractorConfig::default())
        .extract_conversation(transcript, "chat-2", known)
        .unwrap();
    let prompts = client.prompts();
    assert_eq!(prompts.len(), 1);
    (extraction, prompts.into_iter().next().unwrap())
}

//! Tests of conversation extraction: transcripts, replies, the LLM extractor against a
//! scripted client, and the real clients (a shell command, an HTTP server).

mod command;
mod extractor;
#[cfg(feature = "openai")]
mod openai;
mod reply;
mod transcript;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fact_extract::{
    ConversationExtraction, ConversationExtractor, LlmClient, LlmError, LlmExtractorConfig,
    LlmFactExtractor, Message, MessageRole,
};
use fact_model::ManualClock;

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

/// The facts as `subject | relation | object | tags | confidence` lines, with
/// ` | statement` when there is one.
pub(crate) fn fact_lines(extraction: &ConversationExtraction) -> Vec<String> {
    extraction
        .facts
        .iter()
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
        .extract_conversation(&conversation(), "chat-1")
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

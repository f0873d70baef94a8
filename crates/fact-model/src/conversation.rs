//! Conversations as values: [`Message`] and its [`MessageRole`], the unit that long-term
//! memory archives, searches and dates facts by.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Timestamp, char_len};

/// Who wrote a message of a conversation; snake_case on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The person.
    User,
    /// The assistant answering them.
    Assistant,
    /// A system prompt or notice.
    System,
    /// The output of a tool the assistant called.
    Tool,
}

impl MessageRole {
    /// Every role, in wire order.
    pub const ALL: [MessageRole; 4] = [
        MessageRole::User,
        MessageRole::Assistant,
        MessageRole::System,
        MessageRole::Tool,
    ];

    /// The wire name: `user`, `assistant`, `system` or `tool`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::System => "system",
            MessageRole::Tool => "tool",
        }
    }
}

impl fmt::Display for MessageRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for MessageRole {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        MessageRole::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unknown role {:?}; allowed: user, assistant, system, tool",
                    crate::clip(text, 32)
                )
            })
    }
}

/// One message of a conversation, with the time it was said when known.
///
/// On the wire the time is `timestamp` (RFC 3339); `time` and `created_at` are read as
/// well, as transcripts of other tools name it.
///
/// ```
/// use fact_model::{Message, MessageRole, Timestamp};
///
/// let message: Message = serde_json::from_str(
///     r#"{"role": "user", "content": "I moved to Berlin.", "time": "2026-03-01T09:00:00Z"}"#,
/// )?;
/// assert_eq!(message.role, MessageRole::User);
/// assert_eq!(message.timestamp, Some("2026-03-01T09:00:00Z".parse()?));
/// assert_eq!(message.render(), "user: I moved to Berlin.\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: MessageRole,
    /// What they wrote.
    pub content: String,
    /// When it was said; `None` when the transcript does not say.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "time",
        alias = "created_at"
    )]
    pub timestamp: Option<Timestamp>,
}

impl Message {
    /// A message by `role`, without a time.
    #[must_use]
    pub fn new(role: MessageRole, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            timestamp: None,
        }
    }

    /// The same message, said at `at`.
    #[must_use]
    pub fn at(mut self, at: Timestamp) -> Self {
        self.timestamp = Some(at);
        self
    }

    /// The message as it appears in a prompt: `{role}: {content}` and a newline.
    #[must_use]
    pub fn render(&self) -> String {
        format!("{}: {}\n", self.role, self.content)
    }

    /// The length of [`render`](Self::render), in characters, without rendering.
    #[must_use]
    pub fn rendered_chars(&self) -> usize {
        self.role.as_str().len() + 3 + char_len(&self.content)
    }
}

//! The [`LlmClient`] contract every model client implements, and the [`LlmError`] a client
//! fails with.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

/// Longest tail of a command's stderr or an HTTP error body kept in an [`LlmError`], in
/// characters.
pub const ERROR_TAIL_CHARS: usize = 500;

/// A language model that completes a prompt: the one thing the extractor needs from it.
///
/// Object safe: [`LlmFactExtractor`](crate::LlmFactExtractor) holds an
/// `Arc<dyn LlmClient>`. Implementations block until the reply is complete (or their
/// timeout passes); they must not panic.
///
/// ```
/// use fact_extract::{LlmClient, LlmError};
///
/// /// Answers every prompt with an empty reply.
/// #[derive(Debug)]
/// struct Silent;
///
/// impl LlmClient for Silent {
///     fn complete(&self, _prompt: &str) -> Result<String, LlmError> {
///         Ok(r#"{"facts": []}"#.to_owned())
///     }
/// }
///
/// let client: Box<dyn LlmClient> = Box::new(Silent);
/// assert_eq!(client.complete("hello")?, r#"{"facts": []}"#);
/// # Ok::<(), LlmError>(())
/// ```
pub trait LlmClient: Send + Sync + Debug {
    /// The model's reply to `prompt`, as text.
    ///
    /// # Errors
    ///
    /// An [`LlmError`] when the model could not be reached, failed, timed out or sent
    /// something that is not a reply.
    fn complete(&self, prompt: &str) -> Result<String, LlmError>;
}

impl<C: LlmClient + ?Sized> LlmClient for &C {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        (**self).complete(prompt)
    }
}

impl<C: LlmClient + ?Sized> LlmClient for Box<C> {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        (**self).complete(prompt)
    }
}

impl<C: LlmClient + ?Sized> LlmClient for Arc<C> {
    fn complete(&self, prompt: &str) -> Result<String, LlmError> {
        (**self).complete(prompt)
    }
}

/// Why a language model gave no usable reply.
///
/// `Clone`, so a caller can keep or report it: I/O errors are shared through an `Arc`.
///
/// ```
/// use std::time::Duration;
/// use fact_extract::LlmError;
///
/// let err = LlmError::Timeout { after: Duration::from_millis(200) };
/// assert_eq!(err.to_string(), "no reply within 200ms");
/// let err = LlmError::InChunk { chunk: 2, chunks: 3, source: Box::new(err) };
/// assert_eq!(err.to_string(), "chunk 2 of 3: no reply within 200ms");
/// assert!(matches!(err.innermost(), LlmError::Timeout { .. }));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The command could not be started (no shell, no permission, too many processes).
    #[error("could not start `{command}`: {source}")]
    Spawn {
        /// The command line, clipped to 200 characters.
        command: String,
        /// Why the operating system refused.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The command ran but exited unsuccessfully.
    #[error("command exited with {}: {stderr_tail}", exit_label(*.code))]
    Exit {
        /// The exit code; `None` when a signal ended the process.
        code: Option<i32>,
        /// The last [`ERROR_TAIL_CHARS`] characters of its stderr (lossy UTF-8).
        stderr_tail: String,
    },
    /// No complete reply arrived within the configured time; a command is killed.
    #[error("no reply within {after:?}")]
    Timeout {
        /// The configured timeout.
        after: Duration,
    },
    /// Talking to a child process failed.
    #[error("I/O error: {0}")]
    Io(#[source] Arc<std::io::Error>),
    /// The HTTP endpoint answered with an error status (429, 500, ...).
    #[error("HTTP status {status}: {body_tail}")]
    Http {
        /// The status code.
        status: u16,
        /// The last [`ERROR_TAIL_CHARS`] characters of the response body.
        body_tail: String,
    },
    /// The HTTP request failed before a status arrived (connection refused, DNS, TLS).
    #[error("transport error: {0}")]
    Transport(String),
    /// The environment variable meant to hold the API key is unset, empty or not Unicode.
    #[error("environment variable `{var}` holds no API key")]
    MissingApiKey {
        /// The variable's name.
        var: String,
    },
    /// The model answered, but not with a usable reply (not UTF-8, not the expected JSON,
    /// too long).
    #[error("invalid reply: {0}")]
    InvalidReply(String),
    /// An error of one chunk of a long conversation:
    /// [`LlmFactExtractor`](crate::LlmFactExtractor) wraps every client error in this
    /// variant, so the message names the chunk.
    #[error("chunk {chunk} of {chunks}: {source}")]
    InChunk {
        /// The chunk that failed, counted from 1.
        chunk: usize,
        /// How many chunks the conversation was split into.
        chunks: usize,
        /// The client's error.
        #[source]
        source: Box<LlmError>,
    },
}

impl LlmError {
    /// The error itself, or for [`LlmError::InChunk`] the client's error inside it: what
    /// to match on to decide, say, whether to retry.
    #[must_use]
    pub fn innermost(&self) -> &LlmError {
        let mut error = self;
        while let LlmError::InChunk { source, .. } = error {
            error = source;
        }
        error
    }

    pub(crate) fn io(error: std::io::Error) -> Self {
        LlmError::Io(Arc::new(error))
    }
}

fn exit_label(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("code {code}"),
        None => "a signal".to_owned(),
    }
}

/// The last `max_chars` characters of `text`, marked with a leading `...` when cut; the
/// mirror image of [`fact_model::clip`], counting `char`s, never bytes.
pub(crate) fn clip_tail(text: &str, max_chars: usize) -> String {
    let marker = fact_model::ELLIPSIS;
    let marker_chars = fact_model::char_len(marker);
    if fact_model::char_len(text) <= max_chars || max_chars < marker_chars {
        // Fits, or too short for any text beside the marker: `clip` decides.
        return fact_model::clip(text, max_chars).into_owned();
    }
    let keep = max_chars - marker_chars;
    let tail = match keep.checked_sub(1) {
        // The char `keep` places from the end starts the tail.
        Some(back) => text
            .char_indices()
            .nth_back(back)
            .and_then(|(at, _)| text.get(at..))
            .unwrap_or_default(),
        None => "",
    };
    format!("{marker}{tail}")
}

#[cfg(test)]
mod tests {
    use super::clip_tail;

    #[test]
    fn clip_tail_keeps_the_end_on_char_boundaries() {
        for (text, max, expect) in [
            ("short", 10, "short"),
            ("exactly10!", 10, "exactly10!"),
            ("a longer sentence", 10, "...entence"),
            ("ééééééé", 5, "...éé"),
            ("abcdef", 3, "..."),
            ("abcdef", 2, ".."),
            ("", 0, ""),
        ] {
            assert_eq!(clip_tail(text, max), expect, "{text:?} {max}");
        }
    }
}

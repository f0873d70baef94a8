//! [`TokenCounter`]: how many tokens a text costs, injected so budgets are deterministic.

use std::fmt::Debug;

/// Counts the tokens of a text. Object safe; retrievers hold an `Arc<dyn TokenCounter>`.
pub trait TokenCounter: Send + Sync + Debug {
    /// The number of tokens `text` costs.
    fn count(&self, text: &str) -> usize;
}

impl<C: TokenCounter + ?Sized> TokenCounter for &C {
    fn count(&self, text: &str) -> usize {
        (**self).count(text)
    }
}

impl<C: TokenCounter + ?Sized> TokenCounter for std::sync::Arc<C> {
    fn count(&self, text: &str) -> usize {
        (**self).count(text)
    }
}

/// The seed's estimate: one token per `chars_per_token` characters, rounded up.
///
/// ```
/// use fact_retrieve::{CharsPerToken, TokenCounter};
///
/// let counter = CharsPerToken::default();
/// assert_eq!(counter.count(""), 0);
/// assert_eq!(counter.count("abcd"), 1);
/// assert_eq!(counter.count("abcde"), 2);
/// assert_eq!(counter.count("éééé"), 1); // characters, not bytes
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CharsPerToken {
    chars_per_token: usize,
}

impl CharsPerToken {
    /// A counter of one token per `chars_per_token` characters (at least 1).
    #[must_use]
    pub fn new(chars_per_token: usize) -> Self {
        CharsPerToken {
            chars_per_token: chars_per_token.max(1),
        }
    }
}

impl Default for CharsPerToken {
    /// Four characters per token, the seed's estimate.
    fn default() -> Self {
        CharsPerToken::new(4)
    }
}

impl TokenCounter for CharsPerToken {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(self.chars_per_token)
    }
}

/// Exact counts with an OpenAI BPE encoding, through `tiktoken-rs` (feature `tiktoken`).
///
/// Text is encoded as ordinary text: a fact that contains `<|endoftext|>` costs what
/// its characters cost.
#[cfg(feature = "tiktoken")]
pub struct BpeTokenCounter {
    name: &'static str,
    bpe: tiktoken_rs::CoreBPE,
}

/// Why a BPE encoding could not be loaded.
#[cfg(feature = "tiktoken")]
#[derive(Debug, thiserror::Error)]
#[error("cannot load the {encoding} BPE encoding: {message}")]
pub struct BpeLoadError {
    /// The encoding's name.
    pub encoding: &'static str,
    /// What tiktoken-rs reported.
    pub message: String,
}

#[cfg(feature = "tiktoken")]
impl BpeTokenCounter {
    /// The `o200k_base` encoding (GPT-4o and later).
    ///
    /// # Errors
    ///
    /// [`BpeLoadError`] when the bundled encoding cannot be parsed.
    pub fn o200k_base() -> Result<Self, BpeLoadError> {
        Self::load("o200k_base", tiktoken_rs::o200k_base)
    }

    /// The `cl100k_base` encoding (GPT-4, GPT-3.5).
    ///
    /// # Errors
    ///
    /// [`BpeLoadError`] when the bundled encoding cannot be parsed.
    pub fn cl100k_base() -> Result<Self, BpeLoadError> {
        Self::load("cl100k_base", tiktoken_rs::cl100k_base)
    }

    fn load<E: std::fmt::Display>(
        name: &'static str,
        load: fn() -> Result<tiktoken_rs::CoreBPE, E>,
    ) -> Result<Self, BpeLoadError> {
        load()
            .map(|bpe| BpeTokenCounter { name, bpe })
            .map_err(|e| BpeLoadError {
                encoding: name,
                message: e.to_string(),
            })
    }
}

#[cfg(feature = "tiktoken")]
impl Debug for BpeTokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BpeTokenCounter").field(&self.name).finish()
    }
}

#[cfg(feature = "tiktoken")]
impl TokenCounter for BpeTokenCounter {
    fn count(&self, text: &str) -> usize {
        self.bpe.count_ordinary(text)
    }
}

//! [`TokenCounter`]: how many tokens a text costs, injected so budgets are deterministic.
//!
//! It lives beside [`Clock`](crate::Clock) for the same reason: every crate that measures a
//! budget (the contract parser, the retriever, the prompt compiler) takes one, and none of
//! them should import another to get it. Exact BPE counts are `fact_retrieve::BpeTokenCounter`.

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
/// use fact_model::{CharsPerToken, TokenCounter};
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

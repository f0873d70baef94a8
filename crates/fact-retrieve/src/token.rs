//! [`BpeTokenCounter`]: exact token counts with an OpenAI BPE encoding (feature `tiktoken`).
//!
//! The [`TokenCounter`] trait and the character estimate live in `fact-model`, beside the clock.

use std::fmt::Debug;

use fact_model::TokenCounter;

/// Exact counts with an OpenAI BPE encoding, through `tiktoken-rs` (feature `tiktoken`).
///
/// Text is encoded as ordinary text: a fact that contains `<|endoftext|>` costs what
/// its characters cost.
pub struct BpeTokenCounter {
    name: &'static str,
    bpe: tiktoken_rs::CoreBPE,
}

/// Why a BPE encoding could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the {encoding} BPE encoding: {message}")]
pub struct BpeLoadError {
    /// The encoding's name.
    pub encoding: &'static str,
    /// What tiktoken-rs reported.
    pub message: String,
}

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

impl Debug for BpeTokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BpeTokenCounter").field(&self.name).finish()
    }
}

impl TokenCounter for BpeTokenCounter {
    fn count(&self, text: &str) -> usize {
        self.bpe.count_ordinary(text)
    }
}

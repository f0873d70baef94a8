//! Extraction of facts from conversations by a language model: the [`LlmClient`] contract,
//! its [`LlmError`], and the pieces around it.
//!
//! - `client.rs`: [`LlmClient`] and [`LlmError`].
//! - `transcript.rs`: [`read_transcript`] (strict, every message dated) and
//!   [`parse_transcript`] (lenient), [`chunk_transcript`] into [`TranscriptChunk`]s.
//! - `known.rs`: [`KnownMemory`], the facts memory already holds, with short ids.
//! - `prompt.rs`: [`extraction_prompt`], the instructions the model receives.
//! - `reply.rs`: [`parse_reply`], the lenient reader of the model's JSON.
//! - `extractor.rs`: [`LlmFactExtractor`], the [`ConversationExtractor`] that ties them
//!   together.
//! - `command.rs`: [`CommandLlm`], a client that runs a shell command.
//! - `openai.rs` (feature `openai`): `OpenAiCompatibleLlm`, a chat-completions client.

mod client;
mod command;
mod extractor;
mod known;
#[cfg(feature = "openai")]
mod openai;
mod prompt;
mod reply;
mod transcript;

pub use self::client::{ERROR_TAIL_CHARS, LlmClient, LlmError};
pub use self::command::CommandLlm;
pub use self::extractor::{
    ConversationExtraction, ConversationExtractor, DEFAULT_CATEGORIES, ExtractedAlias,
    ExtractedFact, LlmExtractorConfig, LlmFactExtractor, MAX_PROFILE_CHARS, MAX_SUMMARY_CHARS,
    MAX_TITLE_CHARS,
};
pub use self::known::{KnownMemory, MIN_SHORT_ID_CHARS};
#[cfg(feature = "openai")]
pub use self::openai::{OpenAiCompatibleLlm, OpenAiConfig};
pub use self::prompt::{EXTRACTION_GUIDE, EXTRACTION_REPLY_SHAPE, extraction_prompt};
pub use self::reply::{ParsedReply, REPLY_SECTIONS, ReplyError, ReplyFact, parse_reply};
pub use self::transcript::{
    MAX_TRANSCRIPT_BYTES, MIN_CHUNK_CHARS, Transcript, TranscriptChunk, TranscriptError,
    TranscriptOptions, chunk_transcript, parse_transcript, read_transcript, render_transcript,
};

//! Pluggable extraction of temporal facts: rules for dispatch results, an LLM for
//! conversations.
//!
//! **Dispatch results**, rule-based, no LLM, no I/O:
//!
//! - [`FactExtractor`] is the object-safe contract the runtime holds
//!   (`Box<dyn FactExtractor>`); it never fails and never panics: it returns an
//!   [`Extraction`], the facts it could make plus [`Diagnostic`]s for what went wrong.
//! - [`ExtractionRule`] is one rule, for one kind of result. New rules are *registered*
//!   ([`RuleBasedFactExtractor::with_implementer_rule`]), never added by editing others.
//! - [`RuleBasedFactExtractor`] runs its rules in order, isolating each: a rule that
//!   returns an error or panics becomes a diagnostic and a `tracing` warning, and the
//!   other rules still run.
//!
//! The default rules ([`rules`]) implement the rule table of seed 001 and issue 3.
//!
//! **Conversations**, by a language model (seeds 002 and 004):
//!
//! - [`ConversationExtractor`] is the object-safe contract; [`LlmFactExtractor`] implements
//!   it by prompting an [`LlmClient`] ([`extraction_prompt`]) chunk by chunk
//!   ([`chunk_transcript`]), with the facts memory already holds ([`KnownMemory`]) listed
//!   by short id, reading replies leniently ([`parse_reply`]) and checking every fact's
//!   category, confidence and turn and every id it names; what it skips becomes a
//!   [`Diagnostic`]. Besides new facts, a conversation yields the known facts it
//!   supersedes or removes, aliases and profile texts ([`ConversationExtraction`]);
//!   `docs/extraction-contract.md` is the contract with the model in full.
//! - Clients: [`CommandLlm`] runs a shell command; `OpenAiCompatibleLlm` (feature
//!   `openai`) calls a chat-completions endpoint. Failures are [`LlmError`]s.
//! - [`read_transcript`] reads a conversation from JSON Lines into dated [`Message`]s,
//!   refusing bad input with a [`TranscriptError`]; [`parse_transcript`] is its lenient
//!   sibling.
//!
//! ```
//! use std::sync::Arc;
//! use fact_extract::{FactExtractor, RuleBasedFactExtractor};
//! use fact_model::{DispatchResult, ImplementerResult, ManualClock};
//!
//! let extractor = RuleBasedFactExtractor::with_defaults(Arc::new(ManualClock::default()));
//! let result: ImplementerResult = serde_json::from_str(r#"{
//!     "task_id": "3", "status": "completed",
//!     "summary": "Added the lexer in src/lexer.rs",
//!     "files_changed": ["src/lexer.rs", "src/lib.rs"]
//! }"#)?;
//! let extraction = extractor.extract(&DispatchResult::Implementer(result), "3");
//! let lines: Vec<String> = extraction.facts.iter()
//!     .map(|f| format!("{} {} {}", f.subject(), f.relation(), f.object()))
//!     .collect();
//! assert_eq!(lines, [
//!     "task:3 completed_with completed",
//!     "task:3 summary Added the lexer in src/lexer.rs",
//!     "src/lexer.rs modified_by task:3",
//!     "src/lib.rs modified_by task:3",
//! ]);
//! assert!(extraction.diagnostics.is_empty());
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! # Features
//!
//! | feature | adds |
//! |---|---|
//! | `openai` | `OpenAiCompatibleLlm`: an [`LlmClient`] for OpenAI-compatible chat-completions endpoints (ureq, rustls) |

#![forbid(unsafe_code)]

mod extraction;
mod extractor;
mod llm;
mod paths;
pub mod relation;
mod rule;
pub mod rules;
mod text;

pub use crate::extraction::{Diagnostic, Extraction, FactExtractor};
pub use crate::extractor::RuleBasedFactExtractor;
pub use crate::llm::{
    CommandLlm, ConversationExtraction, ConversationExtractor, DEFAULT_CATEGORIES,
    ERROR_TAIL_CHARS, EXTRACTION_GUIDE, EXTRACTION_REPLY_SHAPE, ExtractedAlias, ExtractedFact,
    KnownMemory, LlmClient, LlmError, LlmExtractorConfig, LlmFactExtractor, MAX_PROFILE_CHARS,
    MAX_SUMMARY_CHARS, MAX_TITLE_CHARS, MAX_TRANSCRIPT_BYTES, MIN_CHUNK_CHARS, MIN_SHORT_ID_CHARS,
    ParsedReply, REPLY_SECTIONS, ReplyError, ReplyFact, Transcript, TranscriptChunk,
    TranscriptError, TranscriptOptions, chunk_transcript, extraction_prompt, parse_reply,
    parse_transcript, read_transcript, render_transcript,
};
#[cfg(feature = "openai")]
pub use crate::llm::{OpenAiCompatibleLlm, OpenAiConfig};
pub use crate::paths::paths_in;
pub use crate::rule::{
    ExtractionRule, FnRule, MAX_TEXT_CHARS, RuleContext, RuleError, RuleFn, RuleOutput,
};
pub use fact_model::{Message, MessageRole};

//! [`LlmFactExtractor`]: a [`ConversationExtractor`] that asks a language model for the
//! facts of a conversation, chunk by chunk, and checks every fact it returns.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use fact_model::{
    Clock, FactId, MAX_OBJECT_CHARS, MAX_RELATION_CHARS, MAX_SOURCE_TASK_ID_CHARS,
    MAX_STATEMENT_CHARS, MAX_SUBJECT_CHARS, SessionFact, SourceRole, Tag, Timestamp, char_len,
    clip, fold_statement,
};
use serde::Serialize;

use super::prompt::extraction_prompt;
use super::reply::{ReplyFact, parse_reply};
use fact_model::Message;

use super::transcript::chunk_transcript;
use super::{LlmClient, LlmError};
use crate::{Diagnostic, one_line};

/// Turns a conversation into facts. Object safe: hold it as `Arc<dyn ConversationExtractor>`.
///
/// Unlike [`FactExtractor`](crate::FactExtractor), it can fail: the model behind it may be
/// unreachable. Problems with single facts or replies do not fail it; they become
/// [`Diagnostic`]s.
pub trait ConversationExtractor: Send + Sync + Debug {
    /// The facts of `transcript`, attributed to `source_id` (a session or conversation id)
    /// with [`SourceRole::Extractor`].
    ///
    /// # Errors
    ///
    /// The [`LlmError`] of the first model call that failed.
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
    ) -> Result<ConversationExtraction, LlmError>;
}

impl<E: ConversationExtractor + ?Sized> ConversationExtractor for &E {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
    ) -> Result<ConversationExtraction, LlmError> {
        (**self).extract_conversation(transcript, source_id)
    }
}

impl<E: ConversationExtractor + ?Sized> ConversationExtractor for Box<E> {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
    ) -> Result<ConversationExtraction, LlmError> {
        (**self).extract_conversation(transcript, source_id)
    }
}

impl<E: ConversationExtractor + ?Sized> ConversationExtractor for Arc<E> {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
    ) -> Result<ConversationExtraction, LlmError> {
        (**self).extract_conversation(transcript, source_id)
    }
}

/// What a conversation yielded: facts, a title and summary, and what went wrong.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConversationExtraction {
    /// The facts, one batch: deduplicated, all valid from the same instant.
    pub facts: Vec<SessionFact>,
    /// The summaries of the chunks, joined by blank lines; `None` when no reply had one.
    pub summary: Option<String>,
    /// The first title a reply gave.
    pub title: Option<String>,
    /// Replies that could not be read and facts that were skipped, with the reason.
    pub diagnostics: Vec<Diagnostic>,
}

/// The categories [`LlmExtractorConfig::default`] allows: seed 002's memory categories,
/// then seed 004's fact types.
pub const DEFAULT_CATEGORIES: &[Tag] = &[
    Tag::Preference,
    Tag::Knowledge,
    Tag::Context,
    Tag::Behavior,
    Tag::Goal,
    Tag::Correction,
    Tag::Decision,
    Tag::Relationship,
    Tag::Technical,
    Tag::Observation,
];

/// Longest title kept, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest summary kept from one chunk's reply, in characters.
pub const MAX_SUMMARY_CHARS: usize = 2_000;

/// How [`LlmFactExtractor`] works.
///
/// ```
/// use fact_extract::LlmExtractorConfig;
///
/// let config = LlmExtractorConfig::default().with_min_confidence(0.7);
/// assert_eq!(config.min_confidence, 0.7);
/// assert_eq!(config.max_prompt_chars, 24_000);
/// assert_eq!(config.categories.len(), 10);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlmExtractorConfig {
    /// Facts with a lower confidence are skipped (logged, and reported as a diagnostic).
    /// Default 0.5 (seed 002).
    pub min_confidence: f64,
    /// Longest prompt, in characters; longer conversations are split into chunks. When it
    /// leaves less than [`MIN_CHUNK_CHARS`](crate::MIN_CHUNK_CHARS) for the transcript
    /// after the instructions, chunks of that size are used and prompts exceed it.
    /// Default 24,000.
    pub max_prompt_chars: usize,
    /// The categories the prompt offers and the extractor accepts; a fact in any other is
    /// skipped. Default [`DEFAULT_CATEGORIES`].
    pub categories: Vec<Tag>,
}

impl Default for LlmExtractorConfig {
    fn default() -> Self {
        LlmExtractorConfig {
            min_confidence: 0.5,
            max_prompt_chars: 24_000,
            categories: DEFAULT_CATEGORIES.to_vec(),
        }
    }
}

impl LlmExtractorConfig {
    /// Skips facts whose confidence is below `min_confidence`.
    #[must_use]
    pub fn with_min_confidence(mut self, min_confidence: f64) -> Self {
        self.min_confidence = min_confidence;
        self
    }

    /// Splits conversations so a prompt stays within `max_prompt_chars` characters.
    #[must_use]
    pub fn with_max_prompt_chars(mut self, max_prompt_chars: usize) -> Self {
        self.max_prompt_chars = max_prompt_chars;
        self
    }

    /// Offers and accepts only the categories `categories`.
    #[must_use]
    pub fn with_categories(mut self, categories: Vec<Tag>) -> Self {
        self.categories = categories;
        self
    }
}

/// A [`ConversationExtractor`] backed by an [`LlmClient`].
///
/// For each conversation it:
///
/// 1. splits the transcript into chunks ([`chunk_transcript`](crate::chunk_transcript)) so
///    every prompt ([`extraction_prompt`](crate::extraction_prompt)) stays within
///    [`max_prompt_chars`](LlmExtractorConfig::max_prompt_chars);
/// 2. asks the model once per chunk, in order; the first failure is returned as
///    [`LlmError::InChunk`], naming the chunk;
/// 3. reads each reply with [`parse_reply`](crate::parse_reply); a reply without a usable
///    JSON object is a diagnostic and yields nothing;
/// 4. turns each reply fact into a [`SessionFact`]: the subject, the predicate normalised
///    into the relation (trimmed, lowercased, whitespace runs to `_`), the object, the
///    statement, the category's [`Tag`], the confidence (1.0 when the reply gives none),
///    source `(source_id, extractor)`, valid from the clock's one reading for the whole
///    conversation. Text is folded onto one line and clipped to the model's limits
///    (`MAX_*_CHARS`), never dropped for length. A fact in an unknown category, with a
///    confidence outside `0..=1` or below the threshold, or still invalid, is skipped with
///    a diagnostic (low confidence also with a `tracing` info event);
/// 5. merges the facts of all chunks: a fact with the same triple, or the same statement
///    after [`fold_statement`], as an earlier one is merged into it, keeping whichever has
///    the higher confidence.
///
/// Diagnostics use the rules `llm.reply` (a reply) and `llm.fact` (one fact), and name the
/// chunk when there are several.
///
/// ```
/// use std::sync::Arc;
/// use fact_extract::{
///     ConversationExtractor, LlmClient, LlmError, LlmExtractorConfig, LlmFactExtractor,
///     Message, MessageRole,
/// };
/// use fact_model::{ManualClock, Tag};
///
/// #[derive(Debug)]
/// struct Canned;
///
/// impl LlmClient for Canned {
///     fn complete(&self, _prompt: &str) -> Result<String, LlmError> {
///         Ok(r#"{"title": "Tests", "summary": "Chose a test framework.", "facts": [
///             {"subject": "user", "predicate": "Prefers Test Framework", "object": "pytest",
///              "statement": "User prefers pytest over unittest", "category": "preference",
///              "confidence": 0.9},
///             {"subject": "user", "predicate": "likes", "object": "clean code",
///              "category": "preference", "confidence": 0.2}
///         ]}"#.to_owned())
///     }
/// }
///
/// let extractor = LlmFactExtractor::new(
///     Arc::new(Canned),
///     Arc::new(ManualClock::default()),
///     LlmExtractorConfig::default(),
/// );
/// let transcript = [Message::new(MessageRole::User, "Use pytest, not unittest.")];
/// let extraction = extractor.extract_conversation(&transcript, "chat-7")?;
/// let fact = &extraction.facts[0];
/// assert_eq!((fact.subject(), fact.relation(), fact.object()), ("user", "prefers_test_framework", "pytest"));
/// assert_eq!(fact.tags().as_slice(), &[Tag::Preference]);
/// assert_eq!(fact.source_task_id(), "chat-7");
/// assert_eq!(extraction.facts.len(), 1); // the 0.2 fact is below the 0.5 threshold
/// assert_eq!(extraction.title.as_deref(), Some("Tests"));
/// assert!(extraction.diagnostics[0].message.contains("confidence 0.2 is below 0.5"));
/// # Ok::<(), LlmError>(())
/// ```
#[derive(Debug)]
pub struct LlmFactExtractor {
    client: Arc<dyn LlmClient>,
    clock: Arc<dyn Clock>,
    config: LlmExtractorConfig,
}

impl LlmFactExtractor {
    /// An extractor that asks `client`, dates facts by `clock`, and works as `config` says.
    #[must_use]
    pub fn new(
        client: Arc<dyn LlmClient>,
        clock: Arc<dyn Clock>,
        config: LlmExtractorConfig,
    ) -> Self {
        LlmFactExtractor {
            client,
            clock,
            config,
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &LlmExtractorConfig {
        &self.config
    }

    /// The chunks `transcript` is split into, one prompt each.
    fn chunks(&self, transcript: &[Message]) -> Vec<Vec<Message>> {
        let overhead = char_len(&extraction_prompt(&self.config.categories, &[]));
        let budget = self.config.max_prompt_chars.saturating_sub(overhead);
        chunk_transcript(transcript, budget)
    }
}

impl ConversationExtractor for LlmFactExtractor {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
    ) -> Result<ConversationExtraction, LlmError> {
        let chunks = self.chunks(transcript);
        let count = chunks.len();
        let mut merged = Merged::default();
        let mut summaries = Vec::new();
        let mut out = ConversationExtraction::default();
        let ctx = Context {
            at: self.clock.now(),
            source_id: clip(source_id, MAX_SOURCE_TASK_ID_CHARS).into_owned(),
            config: &self.config,
        };
        for (index, chunk) in chunks.iter().enumerate() {
            let label = if count > 1 {
                format!("chunk {} of {count}: ", index + 1)
            } else {
                String::new()
            };
            let prompt = extraction_prompt(&self.config.categories, chunk);
            let text = self.client.complete(&prompt).map_err(|error| {
                tracing::warn!(chunk = index + 1, chunks = count, %error, "LLM call failed");
                LlmError::InChunk {
                    chunk: index + 1,
                    chunks: count,
                    source: Box::new(error),
                }
            })?;
            let reply = match parse_reply(&text) {
                Ok(reply) => reply,
                Err(error) => {
                    tracing::warn!(chunk = index + 1, chunks = count, %error, "unreadable LLM reply");
                    out.diagnostics
                        .push(diagnostic("llm.reply", format!("{label}{error}")));
                    continue;
                }
            };
            if out.title.is_none() {
                out.title = reply
                    .title
                    .map(|title| clip(&one_line(&title), MAX_TITLE_CHARS).into_owned());
            }
            summaries.extend(
                reply
                    .summary
                    .map(|summary| clip(&summary, MAX_SUMMARY_CHARS).into_owned()),
            );
            for note in reply.rejected {
                out.diagnostics
                    .push(diagnostic("llm.fact", format!("{label}{note}")));
            }
            for fact in &reply.facts {
                match ctx.fact(fact) {
                    Ok(fact) => merged.add(fact),
                    Err(problem) => out.diagnostics.push(diagnostic(
                        "llm.fact",
                        format!("{label}fact {}: {problem}", fact.position),
                    )),
                }
            }
        }
        out.facts = merged.into_facts();
        if !summaries.is_empty() {
            out.summary = Some(summaries.join("\n\n"));
        }
        Ok(out)
    }
}

fn diagnostic(rule: &str, message: String) -> Diagnostic {
    Diagnostic {
        rule: rule.to_owned(),
        message,
    }
}

/// What every fact of one conversation shares.
struct Context<'a> {
    at: Timestamp,
    source_id: String,
    config: &'a LlmExtractorConfig,
}

impl Context<'_> {
    /// The fact a reply describes, or why it is skipped.
    fn fact(&self, fact: &ReplyFact) -> Result<SessionFact, String> {
        let subject = one_line(&fact.subject);
        let relation = normalise_predicate(&fact.predicate);
        let object = one_line(&fact.object);
        let triple = format!(
            "({} {} {})",
            clip(&subject, 60),
            clip(&relation, 60),
            clip(&object, 60)
        );
        let category = fact.category.trim().to_lowercase();
        let tag = category
            .parse::<Tag>()
            .ok()
            .filter(|tag| self.config.categories.contains(tag))
            .ok_or_else(|| {
                let allowed: Vec<&str> =
                    self.config.categories.iter().map(|t| t.as_str()).collect();
                format!(
                    "{triple}: unknown category {:?}; allowed: {}",
                    clip(&fact.category, 64),
                    allowed.join(", ")
                )
            })?;
        // A reply without a confidence states the fact outright.
        let confidence = fact.confidence.unwrap_or(1.0);
        if !(confidence.is_finite() && (0.0..=1.0).contains(&confidence)) {
            return Err(format!("{triple}: confidence {confidence} is not in 0..=1"));
        }
        if confidence < self.config.min_confidence {
            tracing::info!(
                subject = %subject,
                relation = %relation,
                confidence,
                min_confidence = self.config.min_confidence,
                "skipped a low-confidence fact"
            );
            return Err(format!(
                "{triple}: confidence {confidence} is below {}",
                self.config.min_confidence
            ));
        }
        let mut builder = SessionFact::builder(
            clip(&subject, MAX_SUBJECT_CHARS),
            clip(&relation, MAX_RELATION_CHARS),
            clip(&object, MAX_OBJECT_CHARS),
        )
        .tag(tag)
        .confidence(confidence)
        .source(self.source_id.as_str(), SourceRole::Extractor)
        .valid_from(self.at);
        if let Some(statement) = fact.statement.as_deref().map(one_line)
            && !statement.is_empty()
        {
            builder = builder.statement(clip(&statement, MAX_STATEMENT_CHARS));
        }
        builder
            .build()
            .map_err(|error| format!("{triple}: {error}"))
    }
}

/// A predicate as a relation name: trimmed, lowercased, every run of whitespace one `_`.
fn normalise_predicate(predicate: &str) -> String {
    predicate
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("_")
}

/// Facts merged across chunks: one per triple and per folded statement, the most
/// confident kept, in order of first appearance.
#[derive(Default)]
struct Merged {
    facts: Vec<Option<SessionFact>>,
    by_id: HashMap<FactId, usize>,
    by_statement: HashMap<String, usize>,
}

impl Merged {
    fn add(&mut self, fact: SessionFact) {
        let statement = fact.statement().map(fold_statement);
        let mut matches: Vec<usize> = self
            .by_id
            .get(&fact.id())
            .into_iter()
            .chain(statement.as_ref().and_then(|s| self.by_statement.get(s)))
            .copied()
            .collect();
        matches.sort_unstable();
        matches.dedup();
        let Some((&slot, others)) = matches.split_first() else {
            self.index(&fact, self.facts.len());
            self.facts.push(Some(fact));
            return;
        };
        // Merge the new fact and every fact it matches into the earliest slot.
        let mut best = fact;
        for index in &matches {
            if let Some(old) = self.facts.get_mut(*index).and_then(Option::take)
                && old.confidence() >= best.confidence()
            {
                best = old;
            }
        }
        // Every key of a merged fact now leads to the slot, so later matches merge there too.
        for at in self
            .by_id
            .values_mut()
            .chain(self.by_statement.values_mut())
        {
            if others.contains(at) {
                *at = slot;
            }
        }
        self.index(&best, slot);
        if let Some(entry) = self.facts.get_mut(slot) {
            *entry = Some(best);
        }
    }

    fn index(&mut self, fact: &SessionFact, slot: usize) {
        self.by_id.insert(fact.id(), slot);
        if let Some(statement) = fact.statement() {
            self.by_statement.insert(fold_statement(statement), slot);
        }
    }

    fn into_facts(self) -> Vec<SessionFact> {
        self.facts.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::normalise_predicate;

    #[test]
    fn predicates_are_normalised() {
        for (predicate, expect) in [
            ("prefers_test_framework", "prefers_test_framework"),
            ("  Prefers Test\tFramework ", "prefers_test_framework"),
            ("ÜBER  Rust", "über_rust"),
            ("   ", ""),
        ] {
            assert_eq!(normalise_predicate(predicate), expect, "{predicate:?}");
        }
    }
}

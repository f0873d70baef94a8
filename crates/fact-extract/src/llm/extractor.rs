//! [`LlmFactExtractor`]: a [`ConversationExtractor`] that asks a language model for the
//! facts of a conversation, chunk by chunk, with the facts memory already holds, and
//! checks everything it returns against the transcript and those facts.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::sync::Arc;

use fact_model::{
    Clock, FactId, MAX_OBJECT_CHARS, MAX_RELATION_CHARS, MAX_SOURCE_TASK_ID_CHARS,
    MAX_STATEMENT_CHARS, MAX_SUBJECT_CHARS, Message, ProfileField, SessionFact, SourceRole, Tag,
    Timestamp, clip, fold_statement, normalize_entity,
};
use serde::Serialize;

use super::client::{LlmClient, LlmError};
use super::known::{KnownIds, KnownMemory};
use super::prompt::{chunk_prompt, instructions, overhead_chars};
use super::reply::{ParsedReply, ReplyFact, parse_reply};
use super::transcript::{TranscriptChunk, chunk_transcript};
use crate::extraction::Diagnostic;
use crate::text::one_line;

/// Turns a conversation into facts and changes to long-term memory. Object safe: hold it
/// as `Arc<dyn ConversationExtractor>`.
///
/// Unlike [`FactExtractor`](crate::FactExtractor), it can fail: the model behind it may be
/// unreachable. Problems with single facts, ids or replies do not fail it; they become
/// [`Diagnostic`]s.
pub trait ConversationExtractor: Send + Sync + Debug {
    /// The facts of `transcript`, attributed to `source_id` (a session or conversation id)
    /// with [`SourceRole::Extractor`], and what they change in `known`, the current facts
    /// related to the conversation (the only facts the result may name).
    ///
    /// # Errors
    ///
    /// The [`LlmError`] of the first model call that failed.
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
        known: &KnownMemory,
    ) -> Result<ConversationExtraction, LlmError>;
}

impl<E: ConversationExtractor + ?Sized> ConversationExtractor for &E {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
        known: &KnownMemory,
    ) -> Result<ConversationExtraction, LlmError> {
        (**self).extract_conversation(transcript, source_id, known)
    }
}

impl<E: ConversationExtractor + ?Sized> ConversationExtractor for Box<E> {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
        known: &KnownMemory,
    ) -> Result<ConversationExtraction, LlmError> {
        (**self).extract_conversation(transcript, source_id, known)
    }
}

impl<E: ConversationExtractor + ?Sized> ConversationExtractor for Arc<E> {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
        known: &KnownMemory,
    ) -> Result<ConversationExtraction, LlmError> {
        (**self).extract_conversation(transcript, source_id, known)
    }
}

/// What a conversation yielded: new facts, the known facts it ends, aliases, profile
/// texts, a title and summary, and what went wrong.
///
/// Every id in it is the id of a fact of the [`KnownMemory`] the extraction was given.
/// Applying it is the caller's business (the store): `facts` are added, each ending the
/// facts of its `supersedes` at its `valid_from`; `remove` ends facts at the
/// conversation's time, without a successor (never a deletion).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConversationExtraction {
    /// The new facts, deduplicated, in order of first appearance.
    pub facts: Vec<ExtractedFact>,
    /// Known facts the conversation shows are no longer true, with no new fact replacing
    /// them (`facts_to_remove`), in order, without repeats; an id that a new fact
    /// supersedes is left to that fact.
    pub remove: Vec<FactId>,
    /// Other names for entities, deduplicated.
    pub aliases: Vec<ExtractedAlias>,
    /// The user-context and history fields the replies gave, in [`ProfileField`] order,
    /// each on one line and at most [`MAX_PROFILE_CHARS`] characters; a later chunk's
    /// text replaces an earlier one's. A field not given is not here, and changes nothing.
    pub profile: Vec<(ProfileField, String)>,
    /// The summaries of the chunks, joined by blank lines; `None` when no reply had one.
    pub summary: Option<String>,
    /// The first title a reply gave.
    pub title: Option<String>,
    /// Replies that could not be read, and facts, ids, aliases and fields that were
    /// skipped, with the reason.
    pub diagnostics: Vec<Diagnostic>,
}

/// A new fact, with the message it comes from and the known facts it replaces.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtractedFact {
    /// The fact: valid from the time of its message, recorded at the clock's reading.
    pub fact: SessionFact,
    /// The turn (index in the whole transcript) of the message the fact comes from;
    /// `None` when the reply named none.
    pub turn: Option<usize>,
    /// Known facts this fact replaces, to end at its `valid_from` (whatever their
    /// relation), without repeats and never the fact's own id.
    pub supersedes: Vec<FactId>,
}

/// Another name for an entity: `alias` names `entity`. Both are
/// [`normalize_entity`]d, non-blank and different.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ExtractedAlias {
    /// The other name ("mel").
    pub alias: String,
    /// The entity it names ("melanie").
    pub entity: String,
}

/// Longest profile text kept per field, in characters: a few sentences, as the prompt
/// asks.
pub const MAX_PROFILE_CHARS: usize = 1_000;

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
/// 1. writes the instructions once ([`extraction_prompt`](crate::extraction_prompt)): the
///    guide, the categories, the reply shape, the known facts one per line with their
///    [short ids](KnownMemory::short_ids), and the predicates in use;
/// 2. splits the transcript into chunks ([`chunk_transcript`](crate::chunk_transcript))
///    so every prompt, instructions included, stays within
///    [`max_prompt_chars`](LlmExtractorConfig::max_prompt_chars); each message is shown
///    with its turn (its index in the whole transcript) and date;
/// 3. asks the model once per chunk, in order; the first failure is returned as
///    [`LlmError::InChunk`], naming the chunk;
/// 4. reads each reply with [`parse_reply`](crate::parse_reply); a reply without a usable
///    JSON object is a diagnostic and yields nothing, and what the reader passed over is
///    a diagnostic too;
/// 5. turns each reply fact into a [`SessionFact`]: the subject [`normalize_entity`]d,
///    the predicate normalised into the relation (trimmed, lowercased, whitespace runs to
///    `_`), the object, the statement, the category's [`Tag`], the confidence (1.0 when
///    the reply gives none), source `(source_id, extractor)`, valid from the time of the
///    message of its `turn` (the clock's reading when that message has no time; the last
///    message of the chunk when the fact names no turn), recorded at the clock's one
///    reading for the conversation. Text is folded onto one line and clipped to the
///    model's limits (`MAX_*_CHARS`), never dropped for length. A fact in an unknown
///    category, with a confidence outside `0..=1` or below the threshold, or still
///    invalid, is skipped with a diagnostic (low confidence also with a `tracing` info
///    event); so is a fact whose turn is not a message of its chunk;
/// 6. resolves the ids of each fact's `supersedes` and of `facts_to_remove` against the
///    known facts (a short id, or a longer prefix up to the full 16 hex digits,
///    [`KnownMemory::resolve`]); any other id is a diagnostic and dropped, and nothing
///    changes because of it. A fact never supersedes itself, and an id a new fact
///    supersedes is not removed as well;
/// 7. keeps the aliases whose alias and entity, [`normalize_entity`]d, are non-blank and
///    different, and the profile fields (`user_context`, `history`) on one line, clipped
///    to [`MAX_PROFILE_CHARS`], a later chunk's replacing an earlier one's;
/// 8. merges the facts of all chunks: a fact with the same triple, or the same statement
///    after [`fold_statement`], as an earlier one is merged into it, keeping whichever has
///    the higher confidence (with its turn) and the union of their `supersedes`.
///
/// Diagnostics use the rules `llm.reply` (a reply or a part of it), `llm.fact` (one
/// fact), `llm.turn` (a fact's turn), `llm.id` (an id the prompt did not list) and
/// `llm.alias` (an alias), and name the chunk when there are several.
///
/// ```
/// use std::sync::Arc;
/// use fact_extract::{
///     ConversationExtractor, KnownMemory, LlmClient, LlmError, LlmExtractorConfig,
///     LlmFactExtractor, Message, MessageRole,
/// };
/// use fact_model::{ManualClock, SessionFact, SourceRole, Tag, Timestamp};
///
/// #[derive(Debug)]
/// struct Canned;
///
/// impl LlmClient for Canned {
///     fn complete(&self, prompt: &str) -> Result<String, LlmError> {
///         // The prompt lists the known fact by its short id; the model names it.
///         let short = prompt.split("- [").nth(1).and_then(|rest| rest.split(']').next()).unwrap_or("");
///         Ok(format!(r#"{{"title": "Moving", "facts": [
///             {{"subject": "User", "predicate": "Lives In", "object": "Berlin",
///              "content": "User moved to Berlin", "category": "context",
///              "confidence": 0.9, "turn": 1, "supersedes": ["{short}", "deadbeefdeadbeef"]}},
///             {{"subject": "user", "predicate": "likes", "object": "clean code",
///              "category": "preference", "confidence": 0.2}}
///         ], "user_context": {{"personal": "Lives in Berlin since March"}}}}"#))
///     }
/// }
///
/// let t = |text: &str| text.parse::<Timestamp>().unwrap();
/// let paris = SessionFact::builder("user", "lives_in", "Paris")
///     .tag(Tag::Context)
///     .source("chat-1", SourceRole::Extractor)
///     .valid_from(t("2026-01-10T00:00:00Z"))
///     .build()?;
/// let known = KnownMemory::new(vec![paris.clone()], vec![]);
/// let extractor = LlmFactExtractor::new(
///     Arc::new(Canned),
///     Arc::new(ManualClock::new(t("2026-03-05T00:00:00Z"))),
///     LlmExtractorConfig::default(),
/// );
/// let transcript = [
///     Message::new(MessageRole::Assistant, "Where do you live now?").at(t("2026-03-01T09:00:00Z")),
///     Message::new(MessageRole::User, "I moved to Berlin.").at(t("2026-03-01T09:01:00Z")),
/// ];
/// let extraction = extractor.extract_conversation(&transcript, "chat-7", &known)?;
/// let berlin = &extraction.facts[0];
/// assert_eq!(
///     (berlin.fact.subject(), berlin.fact.relation(), berlin.fact.object()),
///     ("user", "lives_in", "Berlin"),
/// );
/// assert_eq!(berlin.fact.valid_from(), t("2026-03-01T09:01:00Z")); // said in turn 1
/// assert_eq!(berlin.fact.recorded_at(), Some(t("2026-03-05T00:00:00Z")));
/// assert_eq!(berlin.turn, Some(1));
/// assert_eq!(berlin.supersedes, [paris.id()]); // the unknown id is dropped
/// assert_eq!(extraction.facts.len(), 1); // the 0.2 fact is below the 0.5 threshold
/// assert_eq!(extraction.profile.len(), 1);
/// let rules: Vec<&str> = extraction.diagnostics.iter().map(|d| d.rule.as_str()).collect();
/// assert_eq!(rules, ["llm.id", "llm.fact"]); // the unknown id, the weak fact
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LlmFactExtractor {
    client: Arc<dyn LlmClient>,
    clock: Arc<dyn Clock>,
    config: LlmExtractorConfig,
}

impl LlmFactExtractor {
    /// An extractor that asks `client`, dates facts by `clock` (when their messages have
    /// no time, and as their recording time), and works as `config` says.
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
}

impl ConversationExtractor for LlmFactExtractor {
    fn extract_conversation(
        &self,
        transcript: &[Message],
        source_id: &str,
        known: &KnownMemory,
    ) -> Result<ConversationExtraction, LlmError> {
        let ids = KnownIds::new(&known.facts);
        let instructions = instructions(&self.config.categories, known, &ids);
        let budget = self
            .config
            .max_prompt_chars
            .saturating_sub(overhead_chars(&instructions));
        let chunks = chunk_transcript(transcript, budget);
        let count = chunks.len();
        let mut run = Run {
            ctx: Context {
                now: self.clock.now(),
                source_id: clip(source_id, MAX_SOURCE_TASK_ID_CHARS).into_owned(),
                config: &self.config,
                ids: &ids,
            },
            merged: Merged::default(),
            remove: Vec::new(),
            aliases: Vec::new(),
            alias_set: HashSet::new(),
            profile: BTreeMap::new(),
            summaries: Vec::new(),
            out: ConversationExtraction::default(),
        };
        for (index, chunk) in chunks.iter().enumerate() {
            let label = if count > 1 {
                format!("chunk {} of {count}: ", index + 1)
            } else {
                String::new()
            };
            let prompt = chunk_prompt(&instructions, chunk);
            let text = self.client.complete(&prompt).map_err(|error| {
                tracing::warn!(chunk = index + 1, chunks = count, %error, "LLM call failed");
                LlmError::InChunk {
                    chunk: index + 1,
                    chunks: count,
                    source: Box::new(error),
                }
            })?;
            match parse_reply(&text) {
                Ok(reply) => run.reply(reply, chunk, &label),
                Err(error) => {
                    tracing::warn!(chunk = index + 1, chunks = count, %error, "unreadable LLM reply");
                    run.out
                        .diagnostics
                        .push(diagnostic("llm.reply", format!("{label}{error}")));
                }
            }
        }
        Ok(run.finish())
    }
}

fn diagnostic(rule: &str, message: String) -> Diagnostic {
    Diagnostic {
        rule: rule.to_owned(),
        message,
    }
}

/// Longest id quoted in a diagnostic, in characters.
const MAX_QUOTED_ID_CHARS: usize = 40;

/// One extraction in progress: what the chunks so far yielded.
struct Run<'a> {
    ctx: Context<'a>,
    merged: Merged,
    remove: Vec<FactId>,
    aliases: Vec<ExtractedAlias>,
    alias_set: HashSet<ExtractedAlias>,
    profile: BTreeMap<ProfileField, String>,
    summaries: Vec<String>,
    out: ConversationExtraction,
}

impl Run<'_> {
    /// Takes in one chunk's reply.
    fn reply(&mut self, reply: ParsedReply, chunk: &TranscriptChunk, label: &str) {
        if self.out.title.is_none() {
            self.out.title = reply
                .title
                .map(|title| clip(&one_line(&title), MAX_TITLE_CHARS).into_owned());
        }
        self.summaries.extend(
            reply
                .summary
                .map(|summary| clip(&summary, MAX_SUMMARY_CHARS).into_owned()),
        );
        for note in reply.rejected {
            self.note("llm.fact", format!("{label}{note}"));
        }
        for note in reply.notes {
            self.note("llm.reply", format!("{label}{note}"));
        }
        for fact in &reply.facts {
            let prefix = format!("{label}fact {}: ", fact.position);
            match self.ctx.fact(fact, chunk) {
                Ok((built, turn)) => {
                    let supersedes = self.supersedes(fact, &built, &prefix);
                    self.merged.add(ExtractedFact {
                        fact: built,
                        turn,
                        supersedes,
                    });
                }
                Err((rule, problem)) => self.note(rule, format!("{prefix}{problem}")),
            }
        }
        for (index, id) in reply.facts_to_remove.iter().enumerate() {
            match self.ctx.ids.resolve(id) {
                Some(id) => {
                    if !self.remove.contains(&id) {
                        self.remove.push(id);
                    }
                }
                None => self.note(
                    "llm.id",
                    format!("{label}facts_to_remove {}: {}", index + 1, unknown_id(id)),
                ),
            }
        }
        for (index, (alias, entity)) in reply.aliases.iter().enumerate() {
            let alias_name = clip(&normalize_entity(alias), MAX_SUBJECT_CHARS).into_owned();
            let entity_name = clip(&normalize_entity(entity), MAX_SUBJECT_CHARS).into_owned();
            let problem = if alias_name.is_empty() || entity_name.is_empty() {
                Some("the alias and the entity must not be blank".to_owned())
            } else if alias_name == entity_name {
                Some(format!(
                    "{:?} is the entity's own name",
                    clip(&alias_name, MAX_QUOTED_ID_CHARS)
                ))
            } else {
                None
            };
            match problem {
                Some(problem) => {
                    self.note(
                        "llm.alias",
                        format!("{label}alias {}: {problem}", index + 1),
                    );
                }
                None => {
                    let alias = ExtractedAlias {
                        alias: alias_name,
                        entity: entity_name,
                    };
                    if self.alias_set.insert(alias.clone()) {
                        self.aliases.push(alias);
                    }
                }
            }
        }
        for (field, text) in reply.user_context.iter().chain(&reply.history) {
            let text = clip(&one_line(text), MAX_PROFILE_CHARS).into_owned();
            if !text.is_empty() {
                self.profile.insert(*field, text);
            }
        }
    }

    /// The known facts `fact`'s `supersedes` names, without repeats and without `built`
    /// itself; a diagnostic per other id.
    fn supersedes(&mut self, fact: &ReplyFact, built: &SessionFact, prefix: &str) -> Vec<FactId> {
        let mut ids = Vec::new();
        for (index, id) in fact.supersedes.iter().enumerate() {
            let position = index + 1;
            match self.ctx.ids.resolve(id) {
                Some(id) if id == built.id() => self.note(
                    "llm.id",
                    format!("{prefix}supersedes {position}: the fact cannot supersede itself"),
                ),
                Some(id) => {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                None => self.note(
                    "llm.id",
                    format!("{prefix}supersedes {position}: {}", unknown_id(id)),
                ),
            }
        }
        ids
    }

    fn note(&mut self, rule: &str, message: String) {
        self.out.diagnostics.push(diagnostic(rule, message));
    }

    fn finish(mut self) -> ConversationExtraction {
        self.out.facts = self.merged.into_facts();
        let superseded: HashSet<FactId> = self
            .out
            .facts
            .iter()
            .flat_map(|fact| fact.supersedes.iter().copied())
            .collect();
        self.remove.retain(|id| !superseded.contains(id));
        self.out.remove = self.remove;
        self.out.aliases = self.aliases;
        self.out.profile = self.profile.into_iter().collect();
        if !self.summaries.is_empty() {
            self.out.summary = Some(self.summaries.join("\n\n"));
        }
        self.out
    }
}

/// Why an id is dropped.
fn unknown_id(id: &str) -> String {
    format!(
        "{:?} is not the id of a known fact listed in the prompt; ignored",
        clip(id, MAX_QUOTED_ID_CHARS)
    )
}

/// What every fact of one conversation shares.
struct Context<'a> {
    /// The clock's one reading: the recording time, and the time of undated messages.
    now: Timestamp,
    source_id: String,
    config: &'a LlmExtractorConfig,
    ids: &'a KnownIds,
}

impl Context<'_> {
    /// The fact a reply describes and its turn, or the rule and reason it is skipped.
    fn fact(
        &self,
        fact: &ReplyFact,
        chunk: &TranscriptChunk,
    ) -> Result<(SessionFact, Option<usize>), (&'static str, String)> {
        let subject = normalize_entity(&fact.subject);
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
                (
                    "llm.fact",
                    format!(
                        "{triple}: unknown category {:?}; allowed: {}",
                        clip(&fact.category, 64),
                        allowed.join(", ")
                    ),
                )
            })?;
        // A reply without a confidence states the fact outright.
        let confidence = fact.confidence.unwrap_or(1.0);
        if !(confidence.is_finite() && (0.0..=1.0).contains(&confidence)) {
            return Err((
                "llm.fact",
                format!("{triple}: confidence {confidence} is not in 0..=1"),
            ));
        }
        if confidence < self.config.min_confidence {
            tracing::info!(
                subject = %subject,
                relation = %relation,
                confidence,
                min_confidence = self.config.min_confidence,
                "skipped a low-confidence fact"
            );
            return Err((
                "llm.fact",
                format!(
                    "{triple}: confidence {confidence} is below {}",
                    self.config.min_confidence
                ),
            ));
        }
        let (turn, message) = match fact.turn {
            Some(turn) => {
                let message = usize::try_from(turn)
                    .ok()
                    .and_then(|turn| Some((turn, chunk.message(turn)?)));
                match message {
                    Some((turn, message)) => (Some(turn), Some(message)),
                    None => return Err(("llm.turn", bad_turn(&triple, turn, chunk))),
                }
            }
            None => (None, chunk.messages.last()),
        };
        let valid_from = message
            .and_then(|message| message.timestamp)
            .unwrap_or(self.now);
        let mut builder = SessionFact::builder(
            clip(&subject, MAX_SUBJECT_CHARS),
            clip(&relation, MAX_RELATION_CHARS),
            clip(&object, MAX_OBJECT_CHARS),
        )
        .tag(tag)
        .confidence(confidence)
        .source(self.source_id.as_str(), SourceRole::Extractor)
        .valid_from(valid_from)
        .recorded_at(self.now);
        if let Some(statement) = fact.statement.as_deref().map(one_line)
            && !statement.is_empty()
        {
            builder = builder.statement(clip(&statement, MAX_STATEMENT_CHARS));
        }
        let built = builder
            .build()
            .map_err(|error| ("llm.fact", format!("{triple}: {error}")))?;
        Ok((built, turn))
    }
}

/// Why `turn` is not a turn of `chunk`.
fn bad_turn(triple: &str, turn: u64, chunk: &TranscriptChunk) -> String {
    let turns = chunk.turns();
    match turns.end.checked_sub(1) {
        Some(last) if !turns.is_empty() => format!(
            "{triple}: turn {turn} is not a message of the transcript shown (turns {} to \
             {last}); fact skipped",
            turns.start
        ),
        _ => {
            format!("{triple}: turn {turn} is not a message of the transcript shown; fact skipped")
        }
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
/// confident kept (with its turn) and the `supersedes` of all united, in order of first
/// appearance.
#[derive(Default)]
struct Merged {
    facts: Vec<Option<ExtractedFact>>,
    by_id: HashMap<FactId, usize>,
    by_statement: HashMap<String, usize>,
}

impl Merged {
    fn add(&mut self, fact: ExtractedFact) {
        let statement = fact.fact.statement().map(fold_statement);
        let mut matches: Vec<usize> = self
            .by_id
            .get(&fact.fact.id())
            .into_iter()
            .chain(statement.as_ref().and_then(|s| self.by_statement.get(s)))
            .copied()
            .collect();
        matches.sort_unstable();
        matches.dedup();
        let Some((&slot, others)) = matches.split_first() else {
            self.index(&fact.fact, self.facts.len());
            self.facts.push(Some(fact));
            return;
        };
        // Merge the new fact and every fact it matches into the earliest slot.
        let mut entries: Vec<ExtractedFact> = matches
            .iter()
            .filter_map(|index| self.facts.get_mut(*index).and_then(Option::take))
            .collect();
        let mut union: Vec<FactId> = Vec::new();
        for id in entries
            .iter()
            .chain(std::iter::once(&fact))
            .flat_map(|entry| &entry.supersedes)
        {
            if !union.contains(id) {
                union.push(*id);
            }
        }
        let mut best = fact;
        for old in entries.drain(..) {
            if old.fact.confidence() >= best.fact.confidence() {
                best = old;
            }
        }
        let own = best.fact.id();
        union.retain(|id| *id != own);
        best.supersedes = union;
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
        self.index(&best.fact, slot);
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

    fn into_facts(self) -> Vec<ExtractedFact> {
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

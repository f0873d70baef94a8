//! [`Episode`]: an archived conversation, and [`EpisodeStore`], where episodes are kept and
//! their messages searched.

use std::fmt;

use fact_model::{Message, Metadata, Timestamp};
use serde::{Deserialize, Serialize};

use crate::{StoreResult, TermWeighting};

/// The most results any episode or message search returns, whatever limit it is given.
pub const MAX_SEARCH_LIMIT: usize = 1_000;

/// An archived conversation (seed 004): what happened, beside the facts of what is known.
///
/// The conversation is kept once, as its messages, each with the time it was said (the
/// time the transcript gave it, or the one its archive resolved: see
/// `fact_extract::read_transcript`). Every message is searchable through the store's own
/// index ([`EpisodeStore::search_messages`]).
///
/// The id is a content address (`ep_` and 16 hex digits of the BLAKE3 hash of the
/// archive time and the messages), so archiving the same transcript at the same instant
/// twice names one episode. Facts extracted from an episode name it as their
/// `source_task_id`.
///
/// ```
/// use fact_model::{Message, MessageRole, Timestamp};
/// use fact_store::Episode;
///
/// let said: Timestamp = "2026-03-01T09:00:00Z".parse()?;
/// let archived: Timestamp = "2026-11-26T10:00:00Z".parse()?;
/// let messages = vec![Message::new(MessageRole::User, "I moved to Berlin.").at(said)];
/// let episode = Episode::new("Moving", "", messages, archived);
/// assert!(episode.id.starts_with("ep_"));
/// assert_eq!(episode.id.len(), 19);
/// assert_eq!(episode.started_at(), said);
/// assert_eq!(
///     episode.transcript(),
///     "{\"role\":\"user\",\"content\":\"I moved to Berlin.\",\"timestamp\":\"2026-03-01T09:00:00Z\"}\n"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// `ep_` and 16 hex digits.
    pub id: String,
    /// A short title.
    pub title: String,
    /// A paragraph that says what the conversation decided.
    pub summary: String,
    /// The conversation, in order; turn `n` is `messages[n]`.
    pub messages: Vec<Message>,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// When it was archived (the time it was recorded, not the time it was said).
    pub created_at: Timestamp,
    /// When facts were last extracted from it; `None` until then (`facts mem backfill`
    /// picks those up).
    #[serde(default)]
    pub extracted_at: Option<Timestamp>,
    /// What the caller said about the conversation (`project`, `channel`); every fact
    /// extracted from it carries it too.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Episode {
    /// An episode of `messages` archived at `created_at`, with its content-addressed id.
    pub fn new(
        title: impl Into<String>,
        summary: impl Into<String>,
        messages: Vec<Message>,
        created_at: Timestamp,
    ) -> Episode {
        Episode {
            id: Episode::id_for(&messages, created_at),
            title: title.into(),
            summary: summary.into(),
            messages,
            tags: Vec::new(),
            created_at,
            extracted_at: None,
            metadata: Metadata::new(),
        }
    }

    /// The episode with `metadata` (its id does not change: it names the conversation).
    #[must_use]
    pub fn with_metadata(mut self, metadata: Metadata) -> Episode {
        self.metadata = metadata;
        self
    }

    /// The id of the episode of `messages` archived at `created_at`: the BLAKE3 hash of
    /// the length-prefixed archive time and, for each message, its role, content and
    /// time (empty when it has none).
    #[must_use]
    pub fn id_for(messages: &[Message], created_at: Timestamp) -> String {
        let mut hasher = blake3::Hasher::new();
        let mut part = |text: &str| {
            hasher.update(&(text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        };
        part(&created_at.to_string());
        for message in messages {
            part(message.role.as_str());
            part(&message.content);
            part(
                &message
                    .timestamp
                    .map(|at| at.to_string())
                    .unwrap_or_default(),
            );
        }
        let hex = hasher.finalize().to_hex();
        format!("ep_{}", hex.get(..16).unwrap_or_default())
    }

    /// When the conversation started: its first message's time, else the archive time.
    #[must_use]
    pub fn started_at(&self) -> Timestamp {
        self.messages
            .iter()
            .find_map(|m| m.timestamp)
            .unwrap_or(self.created_at)
    }

    /// The conversation as JSON Lines, one message per line (the transcript format).
    #[must_use]
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for message in &self.messages {
            if let Ok(line) = serde_json::to_string(message) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

/// What to search episodes' messages for; see [`EpisodeStore::search_messages`].
///
/// ```
/// use fact_store::MessageQuery;
///
/// let query = MessageQuery::new("where does she live?", 5).with_context(2, 0.25);
/// assert_eq!((query.limit, query.context, query.context_weight), (5, 2, 0.25));
/// assert!(query.as_of.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct MessageQuery<'a> {
    /// The query text; the store analyzes it as it analyzes messages.
    pub text: &'a str,
    /// The most messages to return (at most [`MAX_SEARCH_LIMIT`]).
    pub limit: usize,
    /// How many neighbouring messages on each side of a message, in its episode, lend it
    /// their score (default [`DEFAULT_MESSAGE_CONTEXT`]): an answer often shares no word
    /// with the question its neighbour asked.
    pub context: usize,
    /// The share of a neighbour's own score a message receives (default
    /// [`DEFAULT_CONTEXT_WEIGHT`]); 0 scores every message alone.
    pub context_weight: f64,
    /// Search only messages said at or before this instant.
    pub as_of: Option<Timestamp>,
}

/// The default [`MessageQuery::context`].
pub const DEFAULT_MESSAGE_CONTEXT: usize = 2;
/// The default [`MessageQuery::context_weight`].
pub const DEFAULT_CONTEXT_WEIGHT: f64 = 0.3;

impl<'a> MessageQuery<'a> {
    /// A query for the `limit` best messages matching `text`, with the default context.
    #[must_use]
    pub fn new(text: &'a str, limit: usize) -> Self {
        MessageQuery {
            text,
            limit,
            context: DEFAULT_MESSAGE_CONTEXT,
            context_weight: DEFAULT_CONTEXT_WEIGHT,
            as_of: None,
        }
    }

    /// Lets up to `context` neighbours on each side lend a message `weight` of their
    /// score.
    #[must_use]
    pub fn with_context(mut self, context: usize, weight: f64) -> Self {
        self.context = context;
        self.context_weight = weight;
        self
    }

    /// Searches only messages said at or before `as_of`.
    #[must_use]
    pub fn with_as_of(mut self, as_of: Timestamp) -> Self {
        self.as_of = Some(as_of);
        self
    }

    /// Returns at most `limit` messages.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// A message an [`EpisodeStore::search_messages`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageHit {
    /// The episode it belongs to.
    pub episode_id: String,
    /// That episode's title.
    pub episode_title: String,
    /// That episode's summary (empty when it has none).
    pub episode_summary: String,
    /// Its position in the episode (`messages[turn]`), from 0.
    pub turn: usize,
    /// The message, with its time.
    pub message: Message,
    /// Its score: its own relevance plus what its neighbours lent it; greater than zero.
    pub score: f64,
}

/// Where episodes are kept: one scope's episodes, like a fact store holds one scope's facts.
///
/// Object safe, `Send + Sync`; every operation can fail, because a durable store reads and
/// writes storage. Every backend ranks alike: the conformance suite holds them to it.
pub trait EpisodeStore: Send + Sync + fmt::Debug {
    /// Stores an episode and indexes its messages; an episode with the same id is
    /// replaced.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot write.
    fn put_episode(&self, episode: &Episode) -> StoreResult<()>;

    /// The episode with this id, if there is one.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
    fn episode(&self, id: &str) -> StoreResult<Option<Episode>>;

    /// Every episode, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
    fn episodes(&self) -> StoreResult<Vec<Episode>>;

    /// Up to `limit` (at most [`MAX_SEARCH_LIMIT`]) episodes whose title or summary
    /// shares a term with `query`, best first (more distinct query terms, then newer).
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>>;

    /// The messages that answer `query`, best first, scored by `weighting` (BM25 in
    /// practice) over every message of the scope's episodes, each message a document:
    ///
    /// - a message's own score is the sum over the distinct query terms it holds of
    ///   `term_weight(df, messages, query terms) × tf_weight(tf, length, average length)`,
    ///   the statistics counting every stored message;
    /// - each message then receives `context_weight ×` the own score of each of up to
    ///   `context` neighbours on either side in its episode (a message no query term
    ///   reaches may so be found beside one that holds them);
    /// - messages are ordered by that score, then by newer episode, then by turn; only
    ///   messages scoring above zero (and said by `as_of`, when given) are returned.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot read.
    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>>;

    /// Deletes the episode with this id and its messages, from the index too; returns
    /// whether there was one.
    ///
    /// # Errors
    ///
    /// A [`StoreError`](crate::StoreError) when a durable store cannot write.
    fn delete_episode(&self, id: &str) -> StoreResult<bool>;

    /// Records that facts were extracted from episode `id` at `at`.
    ///
    /// # Errors
    ///
    /// [`StoreError::EpisodeNotFound`](crate::StoreError::EpisodeNotFound), or the error of a durable store that cannot write.
    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()>;

    /// The episodes no facts were extracted from yet, oldest first. Provided.
    ///
    /// # Errors
    ///
    /// As [`episodes`](Self::episodes).
    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        let mut episodes = self.episodes()?;
        episodes.retain(|e| e.extracted_at.is_none());
        Ok(episodes)
    }
}

/// That facts were extracted from an episode: when, and the title and summary the model
/// gave (`None` keeps the episode's).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EpisodeExtracted {
    /// The episode.
    pub id: String,
    /// A new title.
    pub title: Option<String>,
    /// A new summary.
    pub summary: Option<String>,
    /// When the facts were extracted.
    pub at: Timestamp,
}

impl EpisodeExtracted {
    /// Marks episode `id` extracted at `at`, keeping its title and summary.
    #[must_use]
    pub fn new(id: impl Into<String>, at: Timestamp) -> Self {
        EpisodeExtracted {
            id: id.into(),
            title: None,
            summary: None,
            at,
        }
    }

    /// Gives the episode `title`.
    #[must_use]
    pub fn with_title(mut self, title: Option<String>) -> Self {
        self.title = title;
        self
    }

    /// Gives the episode `summary`.
    #[must_use]
    pub fn with_summary(mut self, summary: Option<String>) -> Self {
        self.summary = summary;
        self
    }
}

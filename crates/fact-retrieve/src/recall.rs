//! [`recall`]: the current facts and the episodes that answer a question, rendered as the
//! `## Relevant Facts` and `## Related Episodes` sections of seed 004, within a token budget.

use fact_model::{Filter, MAX_STATEMENT_CHARS, SessionFact, Timestamp, clip};
use fact_store::{
    EpisodeStore, MessageHit, MessageQuery, Recency, ScoredFact, SessionFactStore, StoreResult,
    TermQuery,
};
use serde::Serialize;

use fact_model::TokenCounter;

use crate::expand::{Expansion, expand};
use crate::{Bm25, ExpandedFact, query_text};

/// The heading of the facts section.
pub const RELEVANT_FACTS_HEADER: &str = "## Relevant Facts";
/// The heading of the episodes section.
pub const RELATED_EPISODES_HEADER: &str = "## Related Episodes";
/// Longest episode summary in a recall line, in characters.
pub const MAX_EPISODE_SUMMARY_CHARS: usize = 200;

/// What to recall.
///
/// ```
/// use fact_retrieve::RecallQuery;
///
/// let query = RecallQuery::new("which test framework?").with_max_tokens(300);
/// assert_eq!((query.limit, query.max_tokens), (10, 300));
/// assert!(query.as_of.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RecallQuery<'a> {
    /// The question or topic.
    pub text: &'a str,
    /// The most facts, and separately the most episode messages and the most episodes
    /// found by title, to consider (default 10).
    pub limit: usize,
    /// The most tokens the rendered text may cost (default 2000, seed 002's budget).
    pub max_tokens: usize,
    /// Recall as of this instant (valid time): the facts valid then, and the messages said
    /// by then. `None`: what is valid now.
    pub as_of: Option<Timestamp>,
    /// How many neighbouring messages on each side lend a message their score, and what
    /// share of it (see [`MessageQuery::context`]; default
    /// [`DEFAULT_MESSAGE_CONTEXT`](fact_store::DEFAULT_MESSAGE_CONTEXT) and
    /// [`DEFAULT_CONTEXT_WEIGHT`](fact_store::DEFAULT_CONTEXT_WEIGHT)).
    pub message_context: (usize, f64),
    /// Recall only the facts this filter holds for (applied where the store ranks, so
    /// `limit` facts come back when that many match). A filter tests facts: a filtered
    /// recall leaves the episodes out, since a message has no subject, relation or
    /// category to test.
    pub filter: Option<&'a Filter>,
    /// Rank the facts by scores decayed with their age ([`Recency`]); `None`: by
    /// relevance alone (the default).
    pub recency: Option<Recency>,
    /// How many hops to expand the best facts by: 0 (the default) adds nothing; 1 (or
    /// more, read as 1) adds up to `limit` of their one-hop neighbours, the facts that
    /// share a subject or object with one of them ([`ExpandedFact`]), after them and
    /// within the same `max_tokens`.
    pub expand: usize,
}

impl<'a> RecallQuery<'a> {
    /// A query with the default limit and budget, as of now.
    #[must_use]
    pub fn new(text: &'a str) -> Self {
        RecallQuery {
            text,
            limit: 10,
            max_tokens: 2000,
            as_of: None,
            message_context: (
                fact_store::DEFAULT_MESSAGE_CONTEXT,
                fact_store::DEFAULT_CONTEXT_WEIGHT,
            ),
            filter: None,
            recency: None,
            expand: 0,
        }
    }

    /// Adds the one-hop neighbours of the best facts when `hops` is 1 (0: none).
    #[must_use]
    pub fn with_expand(mut self, hops: usize) -> Self {
        self.expand = hops;
        self
    }

    /// Ranks the facts by scores decayed with `recency`.
    #[must_use]
    pub fn with_recency(mut self, recency: Option<Recency>) -> Self {
        self.recency = recency;
        self
    }

    /// Recalls only the facts `filter` holds for, and no episode.
    #[must_use]
    pub fn with_filter(mut self, filter: Option<&'a Filter>) -> Self {
        self.filter = filter;
        self
    }

    /// Lets up to `context` neighbouring messages on each side lend a message `weight` of
    /// their score.
    #[must_use]
    pub fn with_message_context(mut self, context: usize, weight: f64) -> Self {
        self.message_context = (context, weight);
        self
    }

    /// Considers at most `limit` facts, and separately `limit` messages and episodes.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Lets the rendered text cost at most `max_tokens` tokens.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Recalls what was valid, and said, at `as_of`.
    #[must_use]
    pub fn with_as_of(mut self, as_of: Option<Timestamp>) -> Self {
        self.as_of = as_of;
        self
    }

    /// The message search of this recall, over `text` (the analyzed prefix of the
    /// question).
    pub(crate) fn messages<'t>(&self, text: &'t str) -> MessageQuery<'t> {
        let (context, weight) = self.message_context;
        let query = MessageQuery::new(text, self.limit).with_context(context, weight);
        match self.as_of {
            Some(as_of) => query.with_as_of(as_of),
            None => query,
        }
    }

    /// The expansion of this recall's best facts, over `text`; `None` without one.
    pub(crate) fn expansion<'t>(&self, text: &'t str) -> Option<Expansion<'t>>
    where
        'a: 't,
    {
        (self.expand > 0).then_some(Expansion {
            text,
            as_of: self.as_of,
            filter: self.filter,
            limit: self.limit,
        })
    }

    /// The fact search of this recall, over `text`.
    pub(crate) fn facts<'t>(&self, text: &'t str) -> TermQuery<'t>
    where
        'a: 't,
    {
        let mut query = TermQuery::new(text, self.limit).with_recency(self.recency);
        query.filter = self.filter;
        match self.as_of {
            Some(as_of) => query.with_as_of(as_of),
            None => query,
        }
    }
}

/// An episode a recall found: by the messages that answered (best first), or by its
/// title and summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelatedEpisode {
    /// The episode's id (`ep_…`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it took place: the time of its earliest message shown, else of its first
    /// message.
    pub at: Timestamp,
    /// Its summary (empty when it has none).
    pub summary: String,
    /// The messages that answered, best first, as many as the budget allowed to render;
    /// empty for an episode found by its title or summary alone.
    pub messages: Vec<MessageHit>,
}

/// What [`recall`] found, and the text it rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Recall {
    /// The facts that match, best first (relevance, then recency, then confidence), as
    /// many as the budget allowed to render.
    pub facts: Vec<ScoredFact>,
    /// With [`RecallQuery::expand`], the neighbours of `facts` that the budget allowed to
    /// render after them, in their order ([`ExpandedFact`]); empty otherwise.
    pub expanded: Vec<ExpandedFact>,
    /// The episodes whose messages (or else title or summary) match, best first, with
    /// the messages that fit.
    pub episodes: Vec<RelatedEpisode>,
    /// The `## Relevant Facts` and `## Related Episodes` sections; empty when nothing
    /// matched or nothing fits.
    pub text: String,
    /// What `text` costs, by the counter used.
    pub tokens: usize,
}

/// The facts of `facts` and the episodes of `episodes` that answer `query`.
///
/// The question is analyzed up to [`MAX_QUERY_BYTES`](crate::MAX_QUERY_BYTES) and
/// [`MAX_QUERY_TERMS`](crate::MAX_QUERY_TERMS) ([`query_text`]), for the facts and the
/// episodes alike.
/// Facts are scored by BM25 over the store's own terms and ordered by score, then newer
/// `valid_from`, then higher confidence; only facts valid now (or at `query.as_of`) are
/// recalled. Episodes come from their messages ([`EpisodeStore::search_messages`], BM25,
/// neighbouring messages lending each other score), grouped by episode in the order of
/// their best message, then from their titles and summaries. Lines are added best first
/// while the text stays within `query.max_tokens`; a line that does not fit is left out
/// whole, never cut (message lines are clipped to [`MAX_MESSAGE_LINE_CHARS`] first).
///
/// ```
/// use fact_model::{Message, MessageRole, SessionFact, SourceRole, Tag, Timestamp};
/// use fact_model::CharsPerToken;
/// use fact_retrieve::{RecallQuery, recall};
/// use fact_store::{Episode, EpisodeStore, InMemoryEpisodeStore, InMemorySessionFactStore, SessionFactStore};
///
/// let said: Timestamp = "2026-02-15T10:00:00Z".parse()?;
/// let store = InMemorySessionFactStore::default();
/// let fact = SessionFact::builder("user", "prefers_test_framework", "pytest")
///     .tag(Tag::Preference)
///     .statement("User prefers pytest over unittest")
///     .source("ep_1", SourceRole::Extractor)
///     .valid_from(said)
///     .build()?;
/// store.add(vec![fact])?;
/// let episodes = InMemoryEpisodeStore::default();
/// let messages = vec![
///     Message::new(MessageRole::User, "Which test framework should we use?").at(said),
///     Message::new(MessageRole::Assistant, "pytest: fixtures beat setUp.").at(said),
/// ];
/// let episode = Episode::new("Testing", "", messages, "2026-11-26T00:00:00Z".parse()?);
/// episodes.put_episode(&episode)?;
/// let found = recall(&store, &episodes,
///     &RecallQuery::new("which test framework?"), &CharsPerToken::default())?;
/// assert_eq!(found.text, format!("## Relevant Facts\n\
///     - [preference] User prefers pytest over unittest (from 2026-02-15)\n\n## Related Episodes\n\
///     - Testing on 2026-02-15 (entry: {})\n\
///     \x20 > [2026-02-15] user: Which test framework should we use?\n\
///     \x20 > [2026-02-15] assistant: pytest: fixtures beat setUp.", episode.id));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// The [`fact_store::StoreError`] of a fact or episode store that cannot read.
pub fn recall(
    facts: &dyn SessionFactStore,
    episodes: &dyn EpisodeStore,
    query: &RecallQuery<'_>,
    counter: &dyn TokenCounter,
) -> StoreResult<Recall> {
    // A long question is cut as a dispatch query is (see `query_text`).
    let text = query_text(facts.analyzer(), query.text);
    let mut found = facts.search(&query.facts(text), &Bm25::default())?;
    found.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.fact.valid_from().cmp(&a.fact.valid_from()))
            .then(b.fact.confidence().total_cmp(&a.fact.confidence()))
    });
    let expanded = query.expansion(text).map_or(Ok(Vec::new()), |expansion| {
        expand(facts, &found, &expansion)
    })?;
    let related = related_episodes(episodes, query, text)?;
    Ok(render(found, expanded, related, query.max_tokens, counter))
}

/// The episodes that answer `query` (over its analyzed prefix `text`): by their messages
/// first, grouped by episode in the order of their best message, then by title and
/// summary.
pub(crate) fn related_episodes(
    episodes: &dyn EpisodeStore,
    query: &RecallQuery<'_>,
    text: &str,
) -> StoreResult<Vec<RelatedEpisode>> {
    // A filter tests facts; an episode has nothing it could test.
    if query.filter.is_some() {
        return Ok(Vec::new());
    }
    let hits = episodes.search_messages(&query.messages(text), &Bm25::default())?;
    let mut related: Vec<RelatedEpisode> = Vec::new();
    for hit in hits {
        let at = hit.message.timestamp;
        match related.iter_mut().find(|e| e.id == hit.episode_id) {
            Some(episode) => {
                if let Some(at) = at {
                    episode.at = episode.at.min(at);
                }
                episode.messages.push(hit);
            }
            None => related.push(RelatedEpisode {
                id: hit.episode_id.clone(),
                title: hit.episode_title.clone(),
                at: at.unwrap_or(Timestamp::UNIX_EPOCH),
                // A summary was written knowing the whole conversation: not as of an earlier
                // instant.
                summary: if query.as_of.is_some() {
                    String::new()
                } else {
                    hit.episode_summary.clone()
                },
                messages: vec![hit],
            }),
        }
    }
    if query.as_of.is_none() {
        for episode in episodes.search_episodes(text, query.limit)? {
            if related.iter().any(|e| e.id == episode.id) {
                continue;
            }
            related.push(RelatedEpisode {
                at: episode.started_at(),
                id: episode.id,
                title: episode.title,
                summary: episode.summary,
                messages: Vec::new(),
            });
        }
    }
    Ok(related)
}

/// One fact as a recall line: `- [category] statement (from YYYY-MM-DD)`; a fact without
/// a statement shows its triple.
///
/// ```
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// let fact = SessionFact::builder("src/a.rs", "modified_by", "task:3")
///     .tag(Tag::FileChange).source("3", SourceRole::Implementer)
///     .valid_from("2026-11-22T09:00:00Z".parse()?).build()?;
/// assert_eq!(fact_retrieve::recall_fact_line(&fact),
///     "- [file_change] src/a.rs modified_by task:3 (from 2026-11-22)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn recall_fact_line(fact: &SessionFact) -> String {
    let category = fact
        .tags()
        .as_slice()
        .first()
        .map_or("fact", |tag| tag.as_str());
    let text = match fact.statement() {
        Some(statement) => clip(statement, MAX_STATEMENT_CHARS).into_owned(),
        None => format!("{} {} {}", fact.subject(), fact.relation(), fact.object()),
    };
    format!("- [{category}] {} (from {})", one_line(&text), day(fact))
}

/// The longest message line of `## Related Episodes`, in characters (the text after the
/// date and role is clipped to fit).
pub const MAX_MESSAGE_LINE_CHARS: usize = 200;

/// The head line of an episode in `## Related Episodes`:
/// `- title on YYYY-MM-DD (entry: ep_…)`, then `: summary` when it has one.
#[must_use]
pub fn recall_episode_line(episode: &RelatedEpisode) -> String {
    let summary = clip(&one_line(&episode.summary), MAX_EPISODE_SUMMARY_CHARS).into_owned();
    let title = one_line(&episode.title);
    let mut line = format!("- {title} on {} (entry: {})", date(episode.at), episode.id);
    if !summary.is_empty() {
        line.push_str(": ");
        line.push_str(&summary);
    }
    line
}

/// A message line under its episode: `  > [YYYY-MM-DD] role: text`, at most
/// [`MAX_MESSAGE_LINE_CHARS`] characters.
///
/// ```
/// use fact_model::{Message, MessageRole};
/// use fact_store::MessageHit;
///
/// let hit = MessageHit {
///     episode_id: "ep_1".into(),
///     episode_title: "Moving".into(),
///     episode_summary: String::new(),
///     turn: 2,
///     message: Message::new(MessageRole::User, "Berlin!\nThe flat is ours.")
///         .at("2026-03-01T09:00:00Z".parse()?),
///     score: 1.0,
/// };
/// assert_eq!(fact_retrieve::recall_message_line(&hit), "  > [2026-03-01] user: Berlin! The flat is ours.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use]
pub fn recall_message_line(hit: &MessageHit) -> String {
    let head = match hit.message.timestamp {
        Some(at) => format!("  > [{}] {}: ", date(at), hit.message.role),
        None => format!("  > {}: ", hit.message.role),
    };
    let room = MAX_MESSAGE_LINE_CHARS.saturating_sub(fact_model::char_len(&head));
    format!("{head}{}", clip(&one_line(&hit.message.content), room))
}

/// `YYYY-MM-DD` of an instant.
fn date(at: Timestamp) -> String {
    let text = at.to_string();
    text.get(..10).unwrap_or(&text).to_owned()
}

fn day(fact: &SessionFact) -> String {
    date(fact.valid_from())
}

/// Text on one line: runs of whitespace (newlines included) become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn render(
    facts: Vec<ScoredFact>,
    expanded: Vec<ExpandedFact>,
    episodes: Vec<RelatedEpisode>,
    max_tokens: usize,
    counter: &dyn TokenCounter,
) -> Recall {
    let mut text = String::new();
    let mut kept_facts = Vec::new();
    let mut kept_expanded = Vec::new();
    let mut kept_episodes: Vec<RelatedEpisode> = Vec::new();
    // `text` with `lines` appended, the first under `header` when it opens the section.
    let extended = |text: &str, header: Option<&str>, lines: &[&str]| -> String {
        let mut candidate = text.to_owned();
        if let Some(header) = header {
            if !candidate.is_empty() {
                candidate.push_str("\n\n");
            }
            candidate.push_str(header);
        }
        for line in lines {
            candidate.push('\n');
            candidate.push_str(line);
        }
        candidate
    };
    let fits = |candidate: &str| counter.count(candidate) <= max_tokens;
    for fact in facts {
        let header = kept_facts.is_empty().then_some(RELEVANT_FACTS_HEADER);
        let candidate = extended(&text, header, &[&recall_fact_line(&fact.fact)]);
        if fits(&candidate) {
            text = candidate;
            kept_facts.push(fact);
        }
    }
    for neighbour in expanded {
        let opens = kept_facts.is_empty() && kept_expanded.is_empty();
        let header = opens.then_some(RELEVANT_FACTS_HEADER);
        let candidate = extended(&text, header, &[&recall_fact_line(&neighbour.fact)]);
        if fits(&candidate) {
            text = candidate;
            kept_expanded.push(neighbour);
        }
    }
    for mut episode in episodes {
        let hits = std::mem::take(&mut episode.messages);
        let lines: Vec<String> = hits.iter().map(recall_message_line).collect();
        let header = kept_episodes.is_empty().then_some(RELATED_EPISODES_HEADER);
        // The episode's line goes in with its first message line, or alone when it was
        // found by title.
        let head = recall_episode_line(&episode);
        let opening: Vec<&str> = std::iter::once(head.as_str())
            .chain(lines.first().map(String::as_str))
            .collect();
        let candidate = extended(&text, header, &opening);
        if !fits(&candidate) {
            continue;
        }
        text = candidate;
        for (at, (line, hit)) in lines.iter().zip(hits).enumerate() {
            if at == 0 {
                episode.messages.push(hit);
                continue;
            }
            let candidate = extended(&text, None, &[line]);
            if fits(&candidate) {
                text = candidate;
                episode.messages.push(hit);
            }
        }
        kept_episodes.push(episode);
    }
    let tokens = counter.count(&text);
    Recall {
        facts: kept_facts,
        expanded: kept_expanded,
        episodes: kept_episodes,
        text,
        tokens,
    }
}

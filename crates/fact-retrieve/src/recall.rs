//! [`recall`]: the current facts and the episodes that answer a question, rendered as the
//! `## Relevant Facts` and `## Related Episodes` sections of seed 004, within a token budget.

use fact_model::{MAX_STATEMENT_CHARS, SessionFact, clip};
use fact_store::{Episode, EpisodeStore, ScoredFact, SessionFactStore, StoreResult, TermQuery};

use fact_model::TokenCounter;

use crate::{Bm25, query_text};

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
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecallQuery<'a> {
    /// The question or topic.
    pub text: &'a str,
    /// The most facts, and separately the most episodes, to consider (default 10).
    pub limit: usize,
    /// The most tokens the rendered text may cost (default 2000, seed 002's budget).
    pub max_tokens: usize,
}

impl<'a> RecallQuery<'a> {
    /// A query with the default limit and budget.
    #[must_use]
    pub fn new(text: &'a str) -> Self {
        RecallQuery {
            text,
            limit: 10,
            max_tokens: 2000,
        }
    }

    /// Considers at most `limit` facts, and separately `limit` episodes.
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
}

/// What [`recall`] found, and the text it rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Recall {
    /// The current facts that match, best first (relevance, then recency, then
    /// confidence), as many as the budget allowed to render.
    pub facts: Vec<ScoredFact>,
    /// The episodes whose title or summary match, best first, as many as fit.
    pub episodes: Vec<Episode>,
    /// The `## Relevant Facts` and `## Related Episodes` sections; empty when nothing
    /// matched or nothing fits.
    pub text: String,
    /// What `text` costs, by the counter used.
    pub tokens: usize,
}

/// The current facts of `facts` and the episodes of `episodes` that answer `query`.
///
/// The question is analyzed up to [`MAX_QUERY_BYTES`](crate::MAX_QUERY_BYTES) and
/// [`MAX_QUERY_TERMS`](crate::MAX_QUERY_TERMS) ([`query_text`]), for the facts and the
/// episodes alike.
/// Facts are scored by BM25 over the store's own terms and ordered by score, then newer
/// `valid_from`, then higher confidence; only valid (not superseded) facts are recalled.
/// Lines are added best first while the text stays within `query.max_tokens`; a line
/// that does not fit is left out whole, never cut.
///
/// ```
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
/// use fact_model::CharsPerToken;
/// use fact_retrieve::{RecallQuery, recall};
/// use fact_store::{InMemoryEpisodeStore, InMemorySessionFactStore, SessionFactStore};
///
/// let store = InMemorySessionFactStore::default();
/// let fact = SessionFact::builder("user", "prefers_test_framework", "pytest")
///     .tag(Tag::Preference)
///     .statement("User prefers pytest over unittest")
///     .source("ep_1", SourceRole::Extractor)
///     .valid_from("2026-02-15T10:00:00Z".parse()?)
///     .build()?;
/// store.add(vec![fact])?;
/// let found = recall(&store, &InMemoryEpisodeStore::default(),
///     &RecallQuery::new("which test framework?"), &CharsPerToken::default())?;
/// assert_eq!(found.text, "## Relevant Facts\n\
///     - [preference] User prefers pytest over unittest (from 2026-02-15)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// The [`fact_store::StoreError`] of an episode store that cannot read.
pub fn recall(
    facts: &dyn SessionFactStore,
    episodes: &dyn EpisodeStore,
    query: &RecallQuery<'_>,
    counter: &dyn TokenCounter,
) -> StoreResult<Recall> {
    // A long question is cut as a dispatch query is (see `query_text`).
    let text = query_text(facts.analyzer(), query.text);
    let term_query = TermQuery::new(text, query.limit);
    let mut found = facts.search(&term_query, &Bm25::default());
    found.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.fact.valid_from().cmp(&a.fact.valid_from()))
            .then(b.fact.confidence().total_cmp(&a.fact.confidence()))
    });
    let related = episodes.search_episodes(text, query.limit)?;
    Ok(render(found, related, query.max_tokens, counter))
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

/// One episode as a recall line: `- title on YYYY-MM-DD (entry: ep_…): summary`.
#[must_use]
pub fn recall_episode_line(episode: &Episode) -> String {
    let date = episode.created_at.to_string();
    let summary = clip(&one_line(&episode.summary), MAX_EPISODE_SUMMARY_CHARS).into_owned();
    let title = one_line(&episode.title);
    let mut line = format!(
        "- {title} on {} (entry: {})",
        date.get(..10).unwrap_or(&date),
        episode.id
    );
    if !summary.is_empty() {
        line.push_str(": ");
        line.push_str(&summary);
    }
    line
}

fn day(fact: &SessionFact) -> String {
    let at = fact.valid_from().to_string();
    at.get(..10).unwrap_or(&at).to_owned()
}

/// Text on one line: runs of whitespace (newlines included) become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn render(
    facts: Vec<ScoredFact>,
    episodes: Vec<Episode>,
    max_tokens: usize,
    counter: &dyn TokenCounter,
) -> Recall {
    let mut text = String::new();
    let mut kept_facts = Vec::new();
    let mut kept_episodes = Vec::new();
    let fits = |candidate: &str| counter.count(candidate) <= max_tokens;
    // Appends `line` under `header` (written before the first line) when it fits.
    let push = |text: &mut String, header: &str, first: bool, line: &str| -> bool {
        let mut candidate = text.clone();
        if first {
            if !candidate.is_empty() {
                candidate.push_str("\n\n");
            }
            candidate.push_str(header);
        }
        candidate.push('\n');
        candidate.push_str(line);
        let ok = fits(&candidate);
        if ok {
            *text = candidate;
        }
        ok
    };
    for fact in facts {
        if push(
            &mut text,
            RELEVANT_FACTS_HEADER,
            kept_facts.is_empty(),
            &recall_fact_line(&fact.fact),
        ) {
            kept_facts.push(fact);
        }
    }
    for episode in episodes {
        if push(
            &mut text,
            RELATED_EPISODES_HEADER,
            kept_episodes.is_empty(),
            &recall_episode_line(&episode),
        ) {
            kept_episodes.push(episode);
        }
    }
    let tokens = counter.count(&text);
    Recall {
        facts: kept_facts,
        episodes: kept_episodes,
        text,
        tokens,
    }
}

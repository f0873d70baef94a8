//! [`InMemoryEpisodeStore`]: the episodes of one session in memory, their messages indexed
//! and ranked with the code every [`EpisodeStore`] shares (`messages.rs`).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{PoisonError, RwLock};

use fact_model::{Message, Timestamp};
use indexmap::IndexMap;

use crate::episode::{
    Episode, EpisodeExtracted, EpisodeStore, MAX_SEARCH_LIMIT, MessageHit, MessageQuery,
};
use crate::messages::{self, Candidate, MessageKey, MessageStats};
use crate::{Analyzer, AnalyzerConfig, StoreError, StoreResult, TermWeighting};

/// An [`EpisodeStore`] in memory, for tests and for runs without a database.
///
/// Titles, summaries and messages are analyzed with the default [`Analyzer`]; messages are
/// kept in an inverted index.
///
/// ```
/// use fact_model::{Message, MessageRole, Timestamp};
/// use fact_store::{Episode, EpisodeStore, InMemoryEpisodeStore, MessageQuery};
/// # #[derive(Debug)] struct Bm25;
/// # impl fact_store::TermWeighting for Bm25 {
/// #     fn term_weight(&self, df: usize, n: usize, _: usize) -> f64 { (1.0 + (n as f64 - df as f64 + 0.5) / (df as f64 + 0.5)).ln() }
/// #     fn tf_weight(&self, tf: u32, _: u32, _: f64) -> f64 { f64::from(tf) }
/// # }
///
/// let store = InMemoryEpisodeStore::default();
/// let at = Timestamp::from_unix_secs(1_800_000_000)?;
/// let messages = vec![
///     Message::new(MessageRole::User, "Which test framework should we use?"),
///     Message::new(MessageRole::Assistant, "pytest, with fixtures."),
/// ];
/// store.put_episode(&Episode::new("Testing", "The user chose pytest.", messages, at))?;
/// assert_eq!(store.search_episodes("which test framework? pytest", 5)?.len(), 1);
/// let hits = store.search_messages(&MessageQuery::new("fixtures", 5), &Bm25)?;
/// assert_eq!((hits[0].turn, hits[1].turn), (1, 0)); // the question rides on its answer
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InMemoryEpisodeStore {
    analyzer: Analyzer,
    inner: RwLock<Inner>,
}

/// The episodes and their message index.
#[derive(Default)]
struct Inner {
    /// Episodes by id, with the number they were first stored under (insertion order,
    /// as the SQL stores' row numbers).
    episodes: IndexMap<String, (u64, Episode)>,
    /// Episode number → id.
    by_number: HashMap<u64, String>,
    next_number: u64,
    /// Term → every message holding it, with its term frequency.
    postings: HashMap<String, Vec<(MessageKey, u32)>>,
    /// Message → its length in terms.
    lengths: HashMap<MessageKey, u32>,
    stats: MessageStats,
}

impl Default for InMemoryEpisodeStore {
    fn default() -> Self {
        InMemoryEpisodeStore {
            analyzer: Analyzer::new(AnalyzerConfig::default()),
            inner: RwLock::new(Inner::default()),
        }
    }
}

impl fmt::Debug for InMemoryEpisodeStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("InMemoryEpisodeStore")
            .field("episodes", &inner.episodes.len())
            .field("messages", &inner.stats.messages)
            .finish()
    }
}

impl Inner {
    /// Takes the messages of episode `number` out of the index.
    fn unindex(&mut self, number: u64, episode: &Episode, analyzer: &Analyzer) {
        for (turn, message) in episode.messages.iter().enumerate() {
            let key = MessageKey::new(number, turn);
            let terms = messages::message_terms(analyzer, message);
            for term in messages::term_counts(&terms).keys() {
                if let Some(list) = self.postings.get_mut(*term) {
                    list.retain(|(k, _)| *k != key);
                    if list.is_empty() {
                        self.postings.remove(*term);
                    }
                }
            }
            self.lengths.remove(&key);
            self.stats.remove(&terms);
        }
    }

    fn index(&mut self, number: u64, episode: &Episode, analyzer: &Analyzer) {
        for (turn, message) in episode.messages.iter().enumerate() {
            let key = MessageKey::new(number, turn);
            let terms = messages::message_terms(analyzer, message);
            for (term, tf) in messages::term_counts(&terms) {
                self.postings
                    .entry(term.to_owned())
                    .or_default()
                    .push((key, tf));
            }
            self.lengths
                .insert(key, u32::try_from(terms.len()).unwrap_or(u32::MAX));
            self.stats.add(&terms);
        }
    }

    fn message(&self, key: MessageKey) -> Option<(&Episode, &Message)> {
        let id = self.by_number.get(&key.episode)?;
        let (_, episode) = self.episodes.get(id)?;
        let message = episode.messages.get(key.turn_index())?;
        Some((episode, message))
    }
}

impl InMemoryEpisodeStore {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl InMemoryEpisodeStore {
    /// Erases every episode and its messages (`LongTermStore::erase`): the index is
    /// replaced by a new one, so no map of it keeps an entry. How many episodes and
    /// messages it held.
    pub(crate) fn erase(&self) -> (usize, usize) {
        let erased = std::mem::take(&mut *self.write());
        let messages = usize::try_from(erased.stats.messages).unwrap_or(usize::MAX);
        (erased.episodes.len(), messages)
    }

    /// Marks an episode extracted, with the title and summary `extracted` gives.
    pub(crate) fn mark_extracted_with(&self, extracted: &EpisodeExtracted) -> StoreResult<()> {
        let mut inner = self.write();
        let (_, episode) =
            inner
                .episodes
                .get_mut(&extracted.id)
                .ok_or_else(|| StoreError::EpisodeNotFound {
                    id: extracted.id.clone(),
                })?;
        episode.extracted_at = Some(extracted.at);
        if let Some(title) = &extracted.title {
            episode.title.clone_from(title);
        }
        if let Some(summary) = &extracted.summary {
            episode.summary.clone_from(summary);
        }
        Ok(())
    }
}

impl EpisodeStore for InMemoryEpisodeStore {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        let mut inner = self.write();
        let number = match inner.episodes.get(&episode.id) {
            Some((number, old)) => {
                let (number, old) = (*number, old.clone());
                inner.unindex(number, &old, &self.analyzer);
                number
            }
            None => {
                let number = inner.next_number;
                inner.next_number += 1;
                inner.by_number.insert(number, episode.id.clone());
                number
            }
        };
        inner.index(number, episode, &self.analyzer);
        inner
            .episodes
            .insert(episode.id.clone(), (number, episode.clone()));
        Ok(())
    }

    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        Ok(self.read().episodes.get(id).map(|(_, e)| e.clone()))
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        let inner = self.read();
        let mut all: Vec<(u64, Episode)> = inner.episodes.values().cloned().collect();
        all.sort_by_key(|(number, e)| (e.created_at, *number));
        Ok(all.into_iter().map(|(_, e)| e).collect())
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        let terms: HashSet<String> = self.analyzer.analyze(query).into_iter().collect();
        let inner = self.read();
        let scored = inner
            .episodes
            .values()
            .filter_map(|(number, episode)| {
                let text = format!("{} {}", episode.title, episode.summary);
                let held: HashSet<String> = self.analyzer.analyze(&text).into_iter().collect();
                let score = terms.intersection(&held).count();
                (score > 0).then(|| (score, *number, episode.clone()))
            })
            .collect();
        Ok(messages::rank_episodes(scored, limit))
    }

    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>> {
        let terms = messages::query_terms(&self.analyzer, query.text);
        let inner = self.read();
        let mut candidates: HashMap<MessageKey, Candidate> = HashMap::new();
        let mut df = Vec::with_capacity(terms.len());
        for (position, term) in terms.iter().enumerate() {
            let postings = inner.postings.get(term.as_str());
            df.push(postings.map_or(0, Vec::len));
            for &(key, tf) in postings.into_iter().flatten() {
                let Some((_, message)) = inner.message(key) else {
                    continue;
                };
                let entry = candidates.entry(key).or_insert_with(|| Candidate {
                    key,
                    at: message.timestamp,
                    doc_len: inner.lengths.get(&key).copied().unwrap_or(0),
                    tfs: vec![0; terms.len()],
                });
                if let Some(slot) = entry.tfs.get_mut(position) {
                    *slot = tf;
                }
            }
        }
        let ranked = messages::rank(
            query,
            weighting,
            &df,
            inner.stats,
            candidates.into_values().collect(),
        );
        let mut hits = Vec::new();
        for (key, score) in ranked {
            if hits.len() >= query.limit.min(MAX_SEARCH_LIMIT) {
                break;
            }
            let Some((episode, message)) = inner.message(key) else {
                continue;
            };
            if !messages::said_by(message, query.as_of) {
                continue;
            }
            hits.push(MessageHit {
                episode_id: episode.id.clone(),
                episode_title: episode.title.clone(),
                episode_summary: episode.summary.clone(),
                turn: key.turn_index(),
                message: message.clone(),
                score,
            });
        }
        Ok(hits)
    }

    fn delete_episode(&self, id: &str) -> StoreResult<bool> {
        let mut inner = self.write();
        let Some((number, episode)) = inner.episodes.shift_remove(id) else {
            return Ok(false);
        };
        inner.unindex(number, &episode, &self.analyzer);
        inner.by_number.remove(&number);
        Ok(true)
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        let mut inner = self.write();
        let (_, episode) = inner
            .episodes
            .get_mut(id)
            .ok_or_else(|| StoreError::EpisodeNotFound { id: id.to_owned() })?;
        episode.extracted_at = Some(at);
        Ok(())
    }
}

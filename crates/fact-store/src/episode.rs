//! [`Episode`]: an archived conversation, and [`EpisodeStore`], where episodes are kept.

use std::collections::HashSet;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use fact_model::Timestamp;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::{Analyzer, AnalyzerConfig, StoreError, StoreResult};

/// An archived conversation (seed 004): what happened, beside the facts of what is known.
///
/// The id is a content address (`ep_` and 16 hex digits of the BLAKE3 hash of the creation
/// time and transcript), so archiving the same transcript at the same instant twice names
/// one episode. Facts extracted from an episode name it as their `source_task_id`.
///
/// ```
/// use fact_model::Timestamp;
/// use fact_store::Episode;
///
/// let at = Timestamp::from_unix_secs(1_800_000_000)?;
/// let episode = Episode::new("Test framework", "Chose pytest.", "user: pytest please", at);
/// assert!(episode.id.starts_with("ep_"));
/// assert_eq!(episode.id.len(), 19);
/// assert!(episode.extracted_at.is_none());
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
    /// The conversation itself (JSON Lines of `{"role", "content"}`).
    pub transcript: String,
    /// Free-form labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// When it was archived.
    pub created_at: Timestamp,
    /// When facts were last extracted from it; `None` until then (`facts mem backfill`
    /// picks those up).
    #[serde(default)]
    pub extracted_at: Option<Timestamp>,
}

impl Episode {
    /// An episode archived at `created_at`, with its content-addressed id.
    pub fn new(
        title: impl Into<String>,
        summary: impl Into<String>,
        transcript: impl Into<String>,
        created_at: Timestamp,
    ) -> Episode {
        let transcript = transcript.into();
        Episode {
            id: Episode::id_for(&transcript, created_at),
            title: title.into(),
            summary: summary.into(),
            transcript,
            tags: Vec::new(),
            created_at,
            extracted_at: None,
        }
    }

    /// The id of the episode of `transcript` archived at `created_at`.
    #[must_use]
    pub fn id_for(transcript: &str, created_at: Timestamp) -> String {
        let mut hasher = blake3::Hasher::new();
        let at = created_at.to_string();
        for part in [at.as_str(), transcript] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        let hex = hasher.finalize().to_hex();
        format!("ep_{}", hex.get(..16).unwrap_or_default())
    }
}

/// Where episodes are kept: one scope's episodes, like a fact store holds one scope's facts.
///
/// Object safe, `Send + Sync`; every operation can fail, because a durable store reads and
/// writes storage.
pub trait EpisodeStore: Send + Sync + fmt::Debug {
    /// Stores an episode; an episode with the same id is replaced.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot write.
    fn put_episode(&self, episode: &Episode) -> StoreResult<()>;

    /// The episode with this id, if there is one.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn episode(&self, id: &str) -> StoreResult<Option<Episode>>;

    /// Every episode, oldest first.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn episodes(&self) -> StoreResult<Vec<Episode>>;

    /// Up to `limit` episodes whose title or summary shares a term with `query`, best
    /// first (more distinct query terms, then newer).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when a durable store cannot read.
    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>>;

    /// Records that facts were extracted from episode `id` at `at`.
    ///
    /// # Errors
    ///
    /// [`StoreError::EpisodeNotFound`], or the error of a durable store that cannot write.
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

/// An [`EpisodeStore`] in memory, for tests and for runs without a database.
///
/// Search analyzes titles and summaries with the default [`Analyzer`] and ranks by the
/// number of distinct query terms an episode holds.
///
/// ```
/// use fact_model::Timestamp;
/// use fact_store::{Episode, EpisodeStore, InMemoryEpisodeStore};
///
/// let store = InMemoryEpisodeStore::default();
/// let at = Timestamp::from_unix_secs(1_800_000_000)?;
/// store.put_episode(&Episode::new("Testing", "The user chose pytest.", "...", at))?;
/// assert_eq!(store.search_episodes("which test framework? pytest", 5)?.len(), 1);
/// assert!(store.search_episodes("databases", 5)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InMemoryEpisodeStore {
    analyzer: Analyzer,
    episodes: RwLock<IndexMap<String, Episode>>,
}

impl Default for InMemoryEpisodeStore {
    fn default() -> Self {
        InMemoryEpisodeStore {
            analyzer: Analyzer::new(AnalyzerConfig::default()),
            episodes: RwLock::new(IndexMap::new()),
        }
    }
}

impl fmt::Debug for InMemoryEpisodeStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self
            .episodes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("InMemoryEpisodeStore")
            .field("episodes", &count)
            .finish()
    }
}

impl EpisodeStore for InMemoryEpisodeStore {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        self.episodes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(episode.id.clone(), episode.clone());
        Ok(())
    }

    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        let episodes = self.episodes.read().unwrap_or_else(PoisonError::into_inner);
        Ok(episodes.get(id).cloned())
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        let episodes = self.episodes.read().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<Episode> = episodes.values().cloned().collect();
        all.sort_by_key(|e| e.created_at);
        Ok(all)
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        let terms: HashSet<String> = self.analyzer.analyze(query).into_iter().collect();
        let episodes = self.episodes.read().unwrap_or_else(PoisonError::into_inner);
        let mut scored: Vec<(usize, &Episode)> = episodes
            .values()
            .filter_map(|episode| {
                let text = format!("{} {}", episode.title, episode.summary);
                let held: HashSet<String> = self.analyzer.analyze(&text).into_iter().collect();
                let score = terms.intersection(&held).count();
                (score > 0).then_some((score, episode))
            })
            .collect();
        scored.sort_by(|(a, x), (b, y)| b.cmp(a).then(y.created_at.cmp(&x.created_at)));
        Ok(scored
            .into_iter()
            .take(limit)
            .map(|(_, e)| e.clone())
            .collect())
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        let mut episodes = self
            .episodes
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let episode = episodes
            .get_mut(id)
            .ok_or_else(|| StoreError::EpisodeNotFound { id: id.to_owned() })?;
        episode.extracted_at = Some(at);
        Ok(())
    }
}

//! The [`MemoryService`] itself: what one service holds. Its methods live beside what they
//! do: CRUD, search and recall in `mod.rs`, archiving in `archive.rs`, the known facts of
//! an extraction prompt in `known.rs`.

use std::sync::Arc;

use fact_extract::ConversationExtractor;
use fact_model::{Clock, TokenCounter};
use fact_retrieve::HybridRetriever;
use fact_store::LongTermStore;

use super::budget::KnownBudget;

/// Long-term memory over one scope: CRUD, search, history, recall, formatting, the user's
/// context and history, aliases, archiving conversations, backfilling and forgetting.
///
/// ```
/// use std::sync::Arc;
/// use dispatch_runtime::{MemoryService, NewMemory, ReadOptions};
/// use fact_model::{Filter, ManualClock, Tag};
/// use fact_store::InMemoryLongTermStore;
///
/// let clock = Arc::new(ManualClock::default());
/// let memory = MemoryService::new(Arc::new(InMemoryLongTermStore::default()), clock);
/// let mut fact = NewMemory::new("User", "prefers_test_framework", "pytest");
/// fact.statement = Some("User prefers pytest over unittest".into());
/// fact.category = Tag::Preference;
/// assert_eq!(memory.add(fact)?.fact.subject(), "user");
/// let found = memory.recall("what test framework does the user like?", 10, 500, &ReadOptions::default())?;
/// assert!(found.text.contains("[preference] User prefers pytest over unittest"));
/// // The same, narrowed to preferences by a filter.
/// let filter = Filter::parse_where("category = preference")?;
/// let read = ReadOptions::default().with_filter(Some(filter));
/// assert_eq!(memory.search("pytest", 10, &read)?.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct MemoryService {
    pub(super) store: Arc<dyn LongTermStore>,
    pub(super) extractor: Option<Arc<dyn ConversationExtractor>>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) counter: Arc<dyn TokenCounter>,
    /// Set by [`with_embedder`](Self::with_embedder): recall is hybrid and new facts are
    /// embedded as they are stored.
    pub(super) hybrid: Option<Arc<HybridRetriever>>,
    pub(super) budget: KnownBudget,
    /// Neighbouring messages lending their score in recall: (how many, what share).
    pub(super) message_context: Option<(usize, f64)>,
}

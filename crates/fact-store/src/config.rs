//! [`StoreConfig`]: how a store bounds itself and analyzes text, and the
//! [`CompactionPolicy`] it compacts by. Every backend reads it, so it lives below all of
//! them, beside no engine.

use crate::AnalyzerConfig;

/// The relation of the summary fact that [`CompactionPolicy::MergeBySubject`] writes.
pub const COMPACTED_RELATION: &str = "compacted";

/// How a store over capacity chooses what to give up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactionPolicy {
    /// Seed 000, requirement 2.3: merge the valid facts of the least recently touched
    /// subjects into one summary fact per subject (the newest batch is never merged); only
    /// when nothing is left to merge, drop the oldest valid facts.
    ///
    /// A summary keeps the subject, has the relation `compacted`, and as object the merged
    /// `relation object` pairs, oldest first, joined by `; ` and clipped to 200 characters.
    /// It takes the first three distinct tags, the newest `valid_from` and source, and the
    /// lowest confidence of the facts it replaces; those facts are removed.
    #[default]
    MergeBySubject,
    /// Seed 002: drop the lowest-confidence valid facts first (the oldest among equals).
    LowestConfidenceFirst,
}

/// How a store bounds itself: its capacity, its history, how it compacts and how it
/// analyzes text. Every backend takes one when it is opened.
///
/// ```
/// use fact_store::{CompactionPolicy, StoreConfig};
///
/// let config = StoreConfig::default().with_capacity(1_000).with_auto_compact(false);
/// assert_eq!((config.capacity, config.history_limit), (1_000, 500));
/// assert_eq!(config.policy, CompactionPolicy::MergeBySubject);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// The most valid facts the store keeps when compacting automatically (default 500).
    pub capacity: usize,
    /// The most invalidated versions kept as history (default 500); compaction drops the
    /// oldest beyond it.
    pub history_limit: usize,
    /// What compaction gives up first.
    pub policy: CompactionPolicy,
    /// Whether `add`, `invalidate` and `import_snapshot` compact when the store goes over
    /// `capacity` or `history_limit` (default true). Without it, only `compact` calls do.
    pub auto_compact: bool,
    /// How the term index analyzes fact text (and queries must be analyzed).
    pub analyzer: AnalyzerConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            capacity: 500,
            history_limit: 500,
            policy: CompactionPolicy::MergeBySubject,
            auto_compact: true,
            analyzer: AnalyzerConfig::default(),
        }
    }
}

impl StoreConfig {
    /// Keeps at most `capacity` valid facts when compacting automatically.
    #[must_use]
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Keeps at most `history_limit` invalidated versions as history.
    #[must_use]
    pub fn with_history_limit(mut self, history_limit: usize) -> Self {
        self.history_limit = history_limit;
        self
    }

    /// Gives up facts by `policy` when over capacity.
    #[must_use]
    pub fn with_policy(mut self, policy: CompactionPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Compacts on every write that goes over a limit (`true`), or only on `compact` calls.
    #[must_use]
    pub fn with_auto_compact(mut self, auto_compact: bool) -> Self {
        self.auto_compact = auto_compact;
        self
    }

    /// Analyzes fact text (and queries) with `analyzer`.
    #[must_use]
    pub fn with_analyzer(mut self, analyzer: AnalyzerConfig) -> Self {
        self.analyzer = analyzer;
        self
    }
}

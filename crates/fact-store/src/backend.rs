//! The parts a storage backend is built from: the term index and its top-k, the vector
//! index, message ranking, heap accounting and compaction summaries.
//!
//! The in-memory store is made of them, and so are the SQL backends
//! (`fact-store-sqlite`, `fact-store-postgres`, through `fact-store-sql`): each backend
//! reads and writes its own rows, and ranks, scores, summarizes and measures with the code
//! here, so every backend answers alike. Applications do not need this module; it is
//! public for backend crates, and its items may change with any release.

pub use crate::compaction::summarize;
pub use crate::heap::{chunk, map_bytes};
pub use crate::index::{Slot, TermIndex, TopK, distinct, rank_order, scan_positions, scan_scores};
pub use crate::meta::{MetaIndex, RecordSet};
pub use crate::vector::{VectorIndex, check_token_model, unit_query, unit_vector};

/// Messages of episodes: their terms, statistics, candidates and ranking, shared by every
/// [`EpisodeStore`](crate::EpisodeStore).
pub mod messages {
    pub use crate::messages::*;
}

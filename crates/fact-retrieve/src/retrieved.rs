//! [`RetrievedFact`]: one fact a retrieval found, with its score.

use fact_model::SessionFact;
use serde::Serialize;

/// A retrieved fact and its relevance score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrievedFact {
    /// The fact.
    pub fact: SessionFact,
    /// Its score under the retriever's scorer, above zero.
    pub score: f64,
}

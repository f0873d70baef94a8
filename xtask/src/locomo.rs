//! What the LoCoMo evaluations (`eval.rs`, `eval_frontier.rs`, `eval_memory.rs`) share:
//! the recall cut-offs, the ranker type, the fact an item becomes and a fresh scope per
//! sample.

use std::time::{SystemTime, UNIX_EPOCH};

use fact_model::{SessionFact, SourceRole, Tag, Timestamp, clip};
use fact_retrieve::{FactQuery, RetrievedFact};

use crate::error::Error;

/// The cut-offs recall is measured at: recall@1, @5, @10 and @20.
pub(crate) const KS: [usize; 4] = [1, 5, 10, 20];
/// The deepest cut-off of [`KS`]: how many facts each query ranks.
pub(crate) const MAX_K: usize = 20;

/// Ranks the facts of one sample's store for a query: the lexical or the hybrid retriever.
pub(crate) type Ranker = dyn Fn(&FactQuery) -> Result<Vec<RetrievedFact>, Error>;

/// A fact for one item: `speaker said text`, the whole text as statement when clipped.
pub(crate) fn fact(speaker: &str, text: &str) -> Option<SessionFact> {
    fact_at(speaker, text, Timestamp::UNIX_EPOCH)
}

/// [`fact`], valid from `at`.
pub(crate) fn fact_at(speaker: &str, text: &str, at: Timestamp) -> Option<SessionFact> {
    let mut builder = SessionFact::builder(clip(speaker, 200), "said", clip(text, 200))
        .tag(Tag::Observation)
        .source("locomo", SourceRole::User)
        .valid_from(at);
    if text.chars().count() > 200 {
        builder = builder.statement(clip(text, 500));
    }
    builder.build().ok()
}

/// A scope no other run (of this process or another) uses: `eval:` and the process id,
/// the time and `sample`.
pub(crate) fn fresh_scope(sample: usize) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("eval:{}:{nanos}:{sample}", std::process::id())
}

//! Compaction logic that does not depend on how a store keeps its facts: the summary fact
//! of [`CompactionPolicy::MergeBySubject`](crate::CompactionPolicy::MergeBySubject),
//! shared by every backend so they write the same summaries.

use fact_model::{MAX_OBJECT_CHARS, SessionFact, Tag, clip};

use crate::COMPACTED_RELATION;

/// The summary fact that replaces the valid facts of one subject (oldest first).
pub fn summarize(facts: &[&SessionFact]) -> Option<SessionFact> {
    let first = facts.first()?;
    let newest = facts.iter().max_by_key(|fact| fact.valid_from())?;
    let mut object = String::new();
    let mut tags: Vec<Tag> = Vec::new();
    for fact in facts {
        if !object.is_empty() {
            object.push_str("; ");
        }
        object.push_str(fact.relation());
        object.push(' ');
        object.push_str(fact.object());
        for tag in fact.tags().as_slice() {
            if tags.len() < fact_model::MAX_TAGS && !tags.contains(tag) {
                tags.push(*tag);
            }
        }
        if object.len() > MAX_OBJECT_CHARS * 4 {
            break;
        }
    }
    let confidence = facts
        .iter()
        .map(|fact| fact.confidence())
        .fold(1.0, f64::min);
    SessionFact::builder(
        first.subject(),
        COMPACTED_RELATION,
        clip(&object, MAX_OBJECT_CHARS),
    )
    .tags(tags)
    .valid_from(newest.valid_from())
    .source(newest.source_task_id(), newest.source_role())
    .confidence(confidence)
    .build()
    .ok()
}

//! What memory operations answer as JSON, shared by `facts mem --json` and the MCP memory
//! tools so both speak the same shapes.

use dispatch_runtime::AddOutcome;
use dispatch_runtime::reexports::{Episode, FactId, Recall, ScoredFact, SessionFact, SkipReason};
use serde_json::{Value, json};

/// What happened to the one fact of an `add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AddSummary {
    /// `added`, `already_current`, `arrived_superseded`, `duplicate` or `skipped`.
    pub(crate) status: &'static str,
    /// The offered fact's id.
    pub(crate) id: FactId,
    /// For a duplicate: the current fact that already holds the statement.
    pub(crate) existing: Option<FactId>,
    /// The current facts the new one superseded.
    pub(crate) superseded: Vec<FactId>,
}

impl AddSummary {
    /// Reads the store's report on a batch of one fact.
    pub(crate) fn of(outcome: &AddOutcome) -> AddSummary {
        let id = outcome.fact.id();
        let report = &outcome.report;
        let mut existing = None;
        let status = if report.added.contains(&id) {
            "added"
        } else if report.refreshed.contains(&id) {
            "already_current"
        } else if report.arrived_superseded.contains(&id) {
            "arrived_superseded"
        } else {
            match report
                .skipped
                .iter()
                .find(|s| s.id == id)
                .map(|s| &s.reason)
            {
                Some(SkipReason::DuplicateStatement { existing: held }) => {
                    existing = Some(*held);
                    "duplicate"
                }
                _ => "skipped",
            }
        };
        AddSummary {
            status,
            id,
            existing,
            superseded: report.invalidated.clone(),
        }
    }
}

/// An `add`: `{"status", "id", "existing_id", "superseded", "fact"}`.
pub(crate) fn add(outcome: &AddOutcome) -> Value {
    let summary = AddSummary::of(outcome);
    json!({
        "status": summary.status,
        "id": summary.id,
        "existing_id": summary.existing,
        "superseded": summary.superseded,
        "fact": outcome.fact,
    })
}

/// Facts with their search scores, best first.
pub(crate) fn scored(found: &[ScoredFact]) -> Value {
    found
        .iter()
        .map(|s| json!({"score": s.score, "fact": s.fact}))
        .collect()
}

/// An episode without its transcript: `{"id", "title", "summary", "tags", "created_at",
/// "extracted_at"}`.
pub(crate) fn episode(episode: &Episode) -> Value {
    json!({
        "id": episode.id,
        "title": episode.title,
        "summary": episode.summary,
        "tags": episode.tags,
        "created_at": episode.created_at,
        "extracted_at": episode.extracted_at,
    })
}

/// A recall: `{"query", "text", "tokens", "facts", "episodes"}`.
pub(crate) fn recall(query: &str, recall: &Recall) -> Value {
    json!({
        "query": query,
        "text": recall.text,
        "tokens": recall.tokens,
        "facts": scored(&recall.facts),
        "episodes": recall.episodes.iter().map(episode).collect::<Vec<_>>(),
    })
}

/// Every version of a subject's facts, oldest first: `{"subject", "versions"}`; a
/// superseded version has `valid_to` and `superseded_by`.
pub(crate) fn history(subject: &str, versions: &[SessionFact]) -> Value {
    json!({"subject": subject, "versions": versions})
}

/// A failure: `{"code", "message"}`.
pub(crate) fn error(code: &str, message: &str) -> Value {
    json!({"code": code, "message": message})
}

//! What store operations report back: [`AddReport`], [`CompactionReport`], [`ImportReport`].

use fact_model::FactId;
use serde::Serialize;

/// What one [`add`](crate::SessionFactStore::add) did with its batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AddReport {
    /// Facts stored as new versions.
    pub added: Vec<FactId>,
    /// Facts that were already valid and stay as they were.
    pub refreshed: Vec<FactId>,
    /// Facts of earlier batches that this batch superseded.
    pub invalidated: Vec<FactId>,
    /// Facts stored already superseded: they arrived with a `valid_from` older than the
    /// valid fact of their `(subject, relation)`, which stays current.
    pub arrived_superseded: Vec<FactId>,
    /// Facts not stored, with the reason.
    pub skipped: Vec<Skipped>,
    /// The automatic compaction this add triggered, if any.
    pub compaction: Option<CompactionReport>,
}

/// A fact of a batch that was not stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// Its position in the batch.
    pub index: usize,
    /// Its id.
    pub id: FactId,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// Why a fact of a batch was not stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum SkipReason {
    /// It arrived with `valid_to` set; only valid facts are added.
    ArrivedInvalidated,
    /// The same triple appeared earlier in the same batch.
    DuplicateInBatch,
    /// A valid fact already has the same statement (after case and whitespace folding).
    DuplicateStatement {
        /// The valid fact with that statement.
        existing: FactId,
    },
}

/// What a compaction removed and merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompactionReport {
    /// Invalidated versions dropped, oldest first, to keep history within its limit.
    pub dropped_history: usize,
    /// Valid facts merged into subject summaries.
    pub merged: usize,
    /// The summary facts created, one per merged subject.
    pub summaries: Vec<FactId>,
    /// Valid facts dropped outright (oldest first, or lowest confidence first).
    pub dropped_valid: Vec<FactId>,
}

/// What an [`import`](crate::SessionFactStore::import) or
/// [`import_snapshot`](crate::SessionFactStore::import_snapshot) did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Versions imported.
    pub imported: usize,
    /// Valid facts that imported versions invalidated.
    pub invalidated: Vec<FactId>,
    /// Records not imported, with the reason.
    pub skipped: Vec<ImportDiagnostic>,
    /// Versions the store held already (the same fact, valid over the same interval),
    /// left as they were.
    pub unchanged: usize,
}

/// What a [`LongTermStore::import_from`](crate::LongTermStore::import_from) did. Its
/// facts' diagnostics name the lines of the export.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MemoryImportReport {
    /// What was done with the facts' versions.
    pub facts: ImportReport,
    /// Episodes stored (new, or replacing one with their id that differed).
    pub episodes: usize,
    /// Aliases set (new, or naming another entity than before).
    pub aliases: usize,
    /// Profile versions stored.
    pub profile_versions: usize,
    /// Records of every kind the store held already, left as they were: a file imported
    /// twice changes nothing the second time.
    pub unchanged: usize,
}

impl ImportReport {
    /// Adds the diagnostics of records that did not parse (indexed in the JSON document)
    /// to a report whose diagnostics are indexed in the parsed snapshot, which lacks them:
    /// afterwards every index names a position in the JSON document.
    pub(crate) fn merge_unparsed(&mut self, mut unparsed: Vec<ImportDiagnostic>) {
        if unparsed.is_empty() {
            return;
        }
        unparsed.sort_by_key(|d| d.index);
        for diagnostic in &mut self.skipped {
            // The n-th parsed record sits at position n plus the unparsed records before it.
            let mut index = diagnostic.index;
            for gap in &unparsed {
                if gap.index <= index {
                    index += 1;
                } else {
                    break;
                }
            }
            diagnostic.index = index;
        }
        self.skipped.extend(unparsed);
        self.skipped.sort_by_key(|d| d.index);
    }
}

/// A snapshot record that was not imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportDiagnostic {
    /// Its position in the snapshot's `records`.
    pub index: usize,
    /// What was wrong with it.
    pub message: String,
}

/// What [`LongTermStore::erase`](crate::LongTermStore::erase) deleted: the rows (or, in memory, the entries) the scope
/// held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct EraseReport {
    /// Fact versions, valid and past.
    pub versions: usize,
    /// Embeddings (one per fact and model).
    pub embeddings: usize,
    /// Token vectors (one per fact and model).
    pub token_vectors: usize,
    /// Episodes.
    pub episodes: usize,
    /// Their messages.
    pub messages: usize,
    /// Entity aliases.
    pub aliases: usize,
    /// Profile versions.
    pub profile_versions: usize,
    /// The keys of applied transactions (`Transaction::with_key`).
    pub keys: usize,
}

impl EraseReport {
    /// Whether the scope held nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == EraseReport::default()
    }
}

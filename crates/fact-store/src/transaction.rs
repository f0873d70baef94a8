//! [`Transaction`]: several writes of one store that commit together or not at all.
//!
//! A dispatch result that settles issues and records an approval, or a conversation whose
//! turns change a fact twice, is more than one batch: its parts must not be seen (or
//! lost) one without the other. A transaction is a list of [`Step`]s applied in order,
//! on a durable store in one database transaction; the automatic compaction of the store
//! runs once, after the last step. [`Transaction`] says how its batches supersede.

use fact_model::{FactId, FactSelector, SessionFact, Timestamp};
use serde::Serialize;

use crate::{AddReport, CompactionReport};

/// One write of a [`Transaction`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Step {
    /// Adds a batch, with the rule of [`add`](crate::SessionFactStore::add) (but no
    /// compaction until the transaction ends).
    Add(Vec<SessionFact>),
    /// Ends the valid facts `selector` picks, now (the store's clock), naming no
    /// successor: [`invalidate_matching`](crate::SessionFactStore::invalidate_matching).
    EndMatching(FactSelector),
    /// Ends the valid version of `id` at `at`; with `by`, names `by` as its successor
    /// (`superseded_by`), even when `by` has another subject or relation.
    ///
    /// Nothing happens, and the report says why ([`NotEndedReason`]), when `id` has no
    /// valid version, when `by` has none (after the earlier steps), or when the valid
    /// version became valid after `at` (a newer truth is never ended by an older
    /// statement).
    End {
        /// The fact to end.
        id: FactId,
        /// When it stops being valid.
        at: Timestamp,
        /// The fact that replaces it, if one does.
        by: Option<FactId>,
    },
    /// Deletes every version of `id`, with its embeddings:
    /// [`delete`](crate::SessionFactStore::delete). An id with no version fails the whole
    /// transaction with [`StoreError::NotFound`](crate::StoreError::NotFound).
    Delete(FactId),
}

/// Steps that commit together: a list of [`Step`]s applied in order, on a durable store in
/// one database transaction, with the store's automatic compaction once, after the last
/// step.
///
/// # Ordered batches
///
/// Each [`Step::Add`] is one batch, with the rule of
/// [`add`](crate::SessionFactStore::add): a fact of a later batch supersedes the valid
/// fact of its `(subject, relation)` that an earlier batch stored, *within one
/// transaction as across transactions*, while the facts of one batch never invalidate
/// each other. So the facts a conversation yields, grouped by the turn that said them and
/// added as one batch per turn in turn order, supersede in turn order ("lives in Paris" at
/// turn 2, "moved to Berlin" at turn 7: Berlin is current, Paris ended at turn 7's time),
/// and the facts of one turn stay together. A batch dated before the current truth of its
/// key still arrives superseded, so an old conversation archived late never overturns
/// what a newer one said.
///
/// ```
/// use fact_model::{FactSelector, SessionFact, SourceRole, Tag, Timestamp};
/// use fact_store::{InMemorySessionFactStore, SessionFactStore, Transaction};
///
/// # let at = |s| Timestamp::from_unix_secs(s).unwrap();
/// let said = |object: &str, secs| SessionFact::builder("user", "lives_in", object)
///     .tag(Tag::Context).source("ep_1", SourceRole::Extractor).valid_from(at(secs)).build();
/// let store = InMemorySessionFactStore::default();
/// // One conversation, two turns: Paris at turn 2, Berlin at turn 7.
/// let report = store.apply(Transaction::new().add(vec![said("Paris", 20)?]).add(vec![said("Berlin", 70)?]))?;
/// assert_eq!(report.steps.len(), 2);
/// let valid = store.valid_facts()?;
/// assert_eq!((valid.len(), valid[0].object()), (1, "Berlin"));
/// assert_eq!(store.history("user")?[0].valid_to(), Some(at(70)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Transaction {
    /// The steps, applied in order.
    pub steps: Vec<Step>,
    /// Makes the transaction apply at most once per scope; see
    /// [`with_key`](Self::with_key).
    pub key: Option<String>,
}

impl Transaction {
    /// An empty transaction.
    #[must_use]
    pub fn new() -> Self {
        Transaction::default()
    }

    /// Appends [`Step::Add`] of `batch`.
    // A builder step named after the store's `add`, not an arithmetic `Add`.
    #[allow(clippy::should_implement_trait)]
    #[must_use]
    pub fn add(mut self, batch: Vec<SessionFact>) -> Self {
        self.steps.push(Step::Add(batch));
        self
    }

    /// Appends [`Step::EndMatching`] of `selector`.
    #[must_use]
    pub fn end_matching(mut self, selector: FactSelector) -> Self {
        self.steps.push(Step::EndMatching(selector));
        self
    }

    /// Appends [`Step::End`] of `id` at `at`, replaced by `by` when given.
    #[must_use]
    pub fn end(mut self, id: FactId, at: Timestamp, by: Option<FactId>) -> Self {
        self.steps.push(Step::End { id, at, by });
        self
    }

    /// Appends [`Step::Delete`] of `id`.
    #[must_use]
    pub fn delete(mut self, id: FactId) -> Self {
        self.steps.push(Step::Delete(id));
        self
    }

    /// Applies the transaction at most once per scope: a transaction whose key the store
    /// has committed before changes nothing and reports
    /// [`replayed`](TransactionReport::replayed).
    ///
    /// This is what to do with an [`io`](crate::StoreError::Io) error, whose write may or
    /// may not have committed (a server that restarted after the commit but before its
    /// reply): apply the same keyed transaction again. Its effect is then the effect of one
    /// application, whatever happened the first time. The store keeps a 16-byte digest of
    /// every key it committed.
    ///
    /// ```
    /// # use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
    /// use fact_store::{InMemorySessionFactStore, SessionFactStore, Transaction};
    /// # let fact = SessionFact::builder("task:1", "completed_with", "completed").tag(Tag::Decision)
    /// #     .source("1", SourceRole::Implementer).valid_from(Timestamp::UNIX_EPOCH).build()?;
    /// let store = InMemorySessionFactStore::default();
    /// let write = Transaction::new().add(vec![fact]).with_key("run-7:task-1:implementer");
    /// assert!(!store.apply(write.clone())?.replayed);
    /// let again = store.apply(write)?; // a retry after an unknown outcome
    /// assert!(again.replayed && again.steps.is_empty());
    /// assert_eq!(store.stored_count()?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The digest a store keeps of the key, if there is one.
    pub fn key_digest(&self) -> Option<[u8; 16]> {
        self.key.as_deref().map(key_digest)
    }

    /// Appends a step.
    pub fn push(&mut self, step: Step) {
        self.steps.push(step);
    }

    /// Whether the transaction has no step.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// Why a [`Step::End`] ended nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotEndedReason {
    /// The fact has no valid version (unknown, deleted or already ended).
    NotValid,
    /// The named successor has no valid version.
    SuccessorNotValid,
    /// The valid version became valid after the end time: it is newer than what would
    /// end it.
    NewerThanEnd,
}

impl NotEndedReason {
    /// The wire name (`not_valid`, `successor_not_valid`, `newer_than_end`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            NotEndedReason::NotValid => "not_valid",
            NotEndedReason::SuccessorNotValid => "successor_not_valid",
            NotEndedReason::NewerThanEnd => "newer_than_end",
        }
    }
}

/// What one [`Step`] did, in the order of the steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "step")]
#[non_exhaustive]
pub enum StepReport {
    /// A [`Step::Add`]: the batch's report (its `compaction` is always `None`; the
    /// transaction's is in [`TransactionReport::compaction`]).
    Added(AddReport),
    /// A [`Step::EndMatching`] or a [`Step::End`] that ended facts: their ids.
    Ended {
        /// The facts whose validity ended.
        ids: Vec<FactId>,
    },
    /// A [`Step::End`] that ended nothing.
    NotEnded {
        /// The fact named.
        id: FactId,
        /// Why.
        reason: NotEndedReason,
    },
    /// A [`Step::Delete`]: how many versions went.
    Deleted {
        /// The fact deleted.
        id: FactId,
        /// Its versions.
        versions: usize,
    },
}

/// What a [`Transaction`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TransactionReport {
    /// One report per step, in order (none when [`replayed`](Self::replayed)).
    pub steps: Vec<StepReport>,
    /// The automatic compaction that ran after the last step, if one did.
    pub compaction: Option<CompactionReport>,
    /// The transaction's key was committed before: nothing was applied this time.
    pub replayed: bool,
}

impl TransactionReport {
    /// The report of a keyed transaction applied before.
    pub fn of_replay() -> Self {
        TransactionReport {
            replayed: true,
            ..TransactionReport::default()
        }
    }
}

/// The 16 bytes a store keeps of a transaction key: the start of its BLAKE3 hash.
pub(crate) fn key_digest(key: &str) -> [u8; 16] {
    let hash = blake3::hash(key.as_bytes());
    let mut digest = [0u8; 16];
    digest.copy_from_slice(hash.as_bytes().get(..16).unwrap_or(&[0u8; 16]));
    digest
}

impl TransactionReport {
    /// The facts the transaction ended, by any step, in order.
    #[must_use]
    pub fn ended(&self) -> Vec<FactId> {
        let mut ended = Vec::new();
        for step in &self.steps {
            match step {
                StepReport::Added(report) => ended.extend(&report.invalidated),
                StepReport::Ended { ids } => ended.extend(ids),
                _ => {}
            }
        }
        ended
    }
}

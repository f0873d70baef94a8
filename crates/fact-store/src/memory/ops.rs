//! The store's operations over its [`State`]: the temporal rule of `add` and `import`,
//! explicit invalidation, updates, compaction and search. Every rule is the one the
//! conformance suite describes; only the representation is the compact one.

use fact_model::{FactId, FactSelector, FactUpdate, SessionFact, Timestamp, fold_statement};

use super::records::Record;
use super::state::{Scratch, State, texts_of};
use super::symbols::NIL;
use super::table::IntMap;
use crate::compaction::summarize;
use crate::config::{CompactionPolicy, StoreConfig};
use crate::index::{Recency, TopK, scan_positions};
use crate::meta::RecordSet;
use crate::{
    AddReport, CompactionReport, ImportDiagnostic, ImportReport, NotEndedReason, ScoredFact,
    SkipReason, Skipped, SnapshotRecord, StepReport, StoreError, StoreResult, TermQuery,
    TermWeighting,
};

impl State {
    pub(super) fn add_batch(&mut self, batch: Vec<SessionFact>) -> AddReport {
        self.last_batch += 1;
        let this_batch = self.last_batch;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.index(&batch);
        self.prepare(batch.iter(), false, &mut scratch.keys);
        let Scratch {
            ids,
            repeats,
            keys,
            members,
            earlier,
        } = &mut scratch;
        let in_batch = |id: FactId| ids.binary_search_by(|(other, _)| other.cmp(&id)).is_ok();
        let mut report = AddReport::default();
        for (index, fact) in batch.into_iter().enumerate() {
            let id = fact.id();
            let skip = |reason| Skipped { index, id, reason };
            if !fact.is_valid() {
                report.skipped.push(skip(SkipReason::ArrivedInvalidated));
                continue;
            }
            if repeats.get(index).copied().unwrap_or(false) {
                report.skipped.push(skip(SkipReason::DuplicateInBatch));
                continue;
            }
            let refresh = self.valid_version(id);
            if refresh.is_none()
                && let Some(statement) = fact.statement()
                && let Some(existing) = self.find_statement(&fold_statement(statement), None)
            {
                report
                    .skipped
                    .push(skip(SkipReason::DuplicateStatement { existing }));
                continue;
            }
            // The facts of earlier batches with this key, except those this batch re-adds:
            // they are refreshed when their turn comes, whatever the order.
            let key = keys.get(index).copied().unwrap_or((NIL, NIL));
            members.clear();
            self.key_members_into(key, members);
            earlier.clear();
            for &rid in members.iter() {
                let Some(r) = self.record(rid) else { continue };
                if self.batch_of(rid) != this_batch && !in_batch(r.id) {
                    earlier.push((rid, r.id, r.valid_from));
                }
            }
            // Out of order: a fact older than the current truth of its key arrives
            // already superseded by the newest of them, and ends nothing.
            if refresh.is_none()
                && let Some(&(_, newest, newest_from)) =
                    earlier.iter().max_by_key(|(rid, _, from)| (*from, *rid))
                && newest_from > fact.valid_from()
            {
                self.insert(&fact, key, this_batch, Some((newest_from, Some(newest))));
                report.arrived_superseded.push(id);
                continue;
            }
            for &(rid, _, _) in earlier.iter() {
                if let Some(ended) = self.end_validity(rid, fact.valid_from(), Some(id)) {
                    report.invalidated.push(ended);
                }
            }
            match refresh {
                Some(rid) => {
                    self.set_batch(rid, this_batch);
                    report.refreshed.push(id);
                }
                None => {
                    self.insert(&fact, key, this_batch, None);
                    report.added.push(id);
                }
            }
        }
        self.scratch = scratch;
        report
    }

    /// Imports `records` (each with the index its diagnostics name), their batches
    /// counted from `base`.
    pub(super) fn import(
        &mut self,
        records: impl IntoIterator<Item = (usize, SnapshotRecord)>,
        base: u64,
    ) -> ImportReport {
        /// Records prepared together (see [`State::prepare`]).
        const GROUP: usize = 32;
        let mut report = ImportReport::default();
        // Versions stored before the import: a record stored already is one of them (a
        // store may hold two equal versions, which an import into an empty store keeps).
        let before = u32::try_from(self.records.len()).unwrap_or(u32::MAX);
        let mut records = records.into_iter().peekable();
        self.reserve(records.size_hint().0);
        let mut keys = Vec::with_capacity(GROUP);
        let mut members = Vec::new();
        let mut group = Vec::with_capacity(GROUP);
        while records.peek().is_some() {
            group.clear();
            group.extend(records.by_ref().take(GROUP));
            self.prepare(group.iter().map(|(_, r)| &r.fact), true, &mut keys);
            for ((index, record), &key) in group.drain(..).zip(keys.iter()) {
                let at = Place {
                    index,
                    base,
                    key,
                    before,
                };
                self.import_one(at, record, &mut members, &mut report);
            }
        }
        report
    }

    /// Imports a record of a snapshot at `at`.
    fn import_one(
        &mut self,
        at: Place,
        record: SnapshotRecord,
        members: &mut Vec<u32>,
        report: &mut ImportReport,
    ) {
        let Place {
            index,
            base,
            key,
            before,
        } = at;
        let mut skip = |message: String| report.skipped.push(ImportDiagnostic { index, message });
        let batch = base.saturating_add(record.batch);
        let fact = record.fact;
        // A version stored already (the same fact, from the same instant to the same
        // end) is left as it is: importing a file twice changes nothing.
        let stored = self.versions_of(fact.id()).into_iter().any(|rid| {
            rid < before
                && self.record(rid).is_some_and(|r| {
                    r.valid_from == fact.valid_from() && r.valid_to() == fact.valid_to()
                })
        });
        if stored {
            report.unchanged += 1;
            return;
        }
        self.last_batch = self.last_batch.max(batch);
        if !fact.is_valid() {
            self.insert(&fact, key, batch, None);
            report.imported += 1;
            return;
        }
        if self.valid_version(fact.id()).is_some() {
            skip(format!("fact {} is already valid in the store", fact.id()));
            return;
        }
        if let Some(statement) = fact.statement()
            && let Some(existing) = self.find_statement(&fold_statement(statement), None)
        {
            skip(format!(
                "fact {} repeats the statement of valid fact {existing}",
                fact.id()
            ));
            return;
        }
        // The latest batch wins a key, as in `add`.
        members.clear();
        self.key_members_into(key, members);
        let mut superseded = None;
        for &rid in members.iter() {
            let Some(&existing) = self.record(rid) else {
                continue;
            };
            let existing_batch = self.batch_of(rid);
            if existing_batch < batch {
                let ended = self.end_validity(rid, fact.valid_from(), Some(fact.id()));
                report.invalidated.extend(ended);
            } else if existing_batch > batch {
                superseded = Some((existing.valid_from, existing.id));
            }
        }
        let end = superseded.map(|(at, by)| (at.max(fact.valid_from()), Some(by)));
        self.insert(&fact, key, batch, end);
        report.imported += 1;
    }

    /// Ends the validity of the valid facts `selector` picks, at `now`, in the order of
    /// their key (with a subject) or of the store (without).
    pub(super) fn invalidate_selected(
        &mut self,
        selector: &FactSelector,
        now: Timestamp,
    ) -> Vec<FactId> {
        let candidates: Vec<u32> = match &selector.subject {
            Some(subject) => self.valid_for_key(subject, &selector.relation),
            None => self
                .live()
                .filter(|(_, r)| r.is_valid())
                .map(|(rid, _)| rid)
                .collect(),
        };
        let relation = self.symbols.lookup(&selector.relation);
        let subject = selector.subject.as_deref().map(|s| self.symbols.lookup(s));
        let task = selector
            .source_task_id
            .as_deref()
            .map(|t| self.symbols.lookup(t));
        let matches = |r: &Record| {
            Some(r.relation) == relation
                && subject.is_none_or(|s| s == Some(r.subject))
                && task.is_none_or(|t| t == Some(r.task))
        };
        let picked: Vec<u32> = candidates
            .into_iter()
            .filter(|rid| self.record(*rid).is_some_and(matches))
            .collect();
        picked
            .into_iter()
            .filter_map(|rid| self.end_validity(rid, now, None))
            .collect()
    }

    /// [`Step::End`](crate::Step::End): ends the valid version of `id` at `at`, naming
    /// `by`, unless a rule of the step says otherwise.
    pub(super) fn end_one(&mut self, id: FactId, at: Timestamp, by: Option<FactId>) -> StepReport {
        let not_ended = |reason| StepReport::NotEnded { id, reason };
        let Some(rid) = self.valid_version(id) else {
            return not_ended(NotEndedReason::NotValid);
        };
        if by.is_some_and(|by| self.valid_version(by).is_none()) {
            return not_ended(NotEndedReason::SuccessorNotValid);
        }
        if self.record(rid).is_some_and(|r| r.valid_from > at) {
            return not_ended(NotEndedReason::NewerThanEnd);
        }
        StepReport::Ended {
            ids: self.end_validity(rid, at, by).into_iter().collect(),
        }
    }

    pub(super) fn update(&mut self, id: FactId, update: &FactUpdate) -> StoreResult<SessionFact> {
        let rid = self.latest_version(id).ok_or(StoreError::NotFound { id })?;
        let old = self.fact(rid).ok_or(StoreError::NotFound { id })?;
        let new = old
            .updated(update)
            .map_err(|source| StoreError::InvalidUpdate { id, source })?;
        let valid = old.is_valid();
        if valid
            && let Some(statement) = new.statement()
            && let Some(existing) = self.find_statement(&fold_statement(statement), Some(id))
        {
            return Err(StoreError::DuplicateStatement { id, existing });
        }
        if valid {
            // The updated fact leaves its key and rejoins it as the newest member, and
            // its statement and terms follow the new text.
            self.unlink_key(rid);
            if let Some(statement) = old.statement() {
                let tag = self.statement_tag(&fold_statement(statement));
                self.statements.remove(tag, rid);
            }
            if old.statement() != new.statement()
                && let Some(&r) = self.record(rid)
            {
                let before = self
                    .terms
                    .counts_of(texts_of(&self.symbols, &r), &self.analyzer);
                let texts = [
                    Some(new.subject()),
                    Some(new.relation()),
                    Some(new.object()),
                    new.statement(),
                ];
                self.terms.replace(rid, before, texts, &self.analyzer);
            }
        }
        let statement = new.statement().map_or(NIL, |s| self.symbols.push(s));
        if let Some(record) = self.records.get_mut(rid) {
            record.statement = statement;
            record.set_tags(new.tags());
            record.confidence = new.confidence();
        }
        self.set_metadata(rid, new.metadata());
        if valid {
            self.link_key(rid);
            if let Some(statement) = new.statement() {
                let tag = self.statement_tag(&fold_statement(statement));
                self.statements.insert(tag, rid);
            }
        }
        Ok(new)
    }

    pub(super) fn compact(&mut self, max_valid: usize, config: &StoreConfig) -> CompactionReport {
        let mut report = CompactionReport::default();
        if self.valid > max_valid {
            match config.policy {
                CompactionPolicy::MergeBySubject => {
                    self.merge_subjects(max_valid, &mut report);
                    self.drop_valid(max_valid, |_| 0.0, &mut report);
                }
                CompactionPolicy::LowestConfidenceFirst => {
                    self.drop_valid(max_valid, |r| r.confidence, &mut report);
                }
            }
        }
        // Last, because a summary may invalidate an older summary of its subject.
        let excess_history = self.history_len().saturating_sub(config.history_limit);
        if excess_history > 0 {
            let oldest: Vec<u32> = self
                .live()
                .filter(|(_, r)| !r.is_valid())
                .map(|(rid, _)| rid)
                .take(excess_history)
                .collect();
            report.dropped_history = oldest.len();
            self.remove(&oldest);
        }
        report
    }

    /// Merges subjects, least recently touched first, until `max_valid` is met.
    fn merge_subjects(&mut self, max_valid: usize, report: &mut CompactionReport) {
        let protected = self.newest_input_batch;
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let mut group_of: IntMap<u32, usize> = IntMap::default();
        for (rid, r) in self.live() {
            if r.is_valid() && self.batch_of(rid) != protected {
                let at = *group_of.entry(r.subject).or_insert(groups.len());
                match groups.get_mut(at) {
                    Some(group) => group.push(rid),
                    None => groups.push(vec![rid]),
                }
            }
        }
        groups.retain(|rids| rids.len() > 1);
        groups.sort_by_key(|rids| rids.last().copied());
        for rids in groups {
            if self.valid <= max_valid {
                break;
            }
            let facts: Vec<SessionFact> = rids.iter().filter_map(|rid| self.fact(*rid)).collect();
            let Some(summary) = summarize(&facts.iter().collect::<Vec<_>>()) else {
                continue;
            };
            report.merged += rids.len();
            self.remove(&rids);
            report.summaries.push(summary.id());
            self.add_batch(vec![summary]);
        }
    }

    /// Drops valid facts in ascending `rank`, then age, until `max_valid` is met.
    fn drop_valid(
        &mut self,
        max_valid: usize,
        rank: impl Fn(&Record) -> f64,
        report: &mut CompactionReport,
    ) {
        let excess = self.valid.saturating_sub(max_valid);
        if excess == 0 {
            return;
        }
        let mut candidates: Vec<((f64, Timestamp, u32), FactId)> = self
            .live()
            .filter(|(_, r)| r.is_valid())
            .map(|(rid, r)| ((rank(r), r.valid_from, rid), r.id))
            .collect();
        candidates.sort_by(|(a, _), (b, _)| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        candidates.truncate(excess);
        let rids: Vec<u32> = candidates.iter().map(|((_, _, rid), _)| *rid).collect();
        self.remove(&rids);
        report
            .dropped_valid
            .extend(candidates.into_iter().map(|(_, id)| id));
    }

    pub(super) fn search(
        &self,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> Vec<ScoredFact> {
        if query.limit == 0 {
            return Vec::new();
        }
        let mut top = TopK::new(query.limit);
        match query.as_of {
            None => {
                // A task the store never saw excludes nothing.
                let excluded = query
                    .exclude_source_task
                    .map(|task| self.symbols.lookup(task));
                // A metadata equality the filter requires: the records holding its value,
                // as bits, reject the others before their record is read.
                let allowed = query.filter.and_then(|filter| {
                    let rids = self.metadata.candidates(filter.conjuncts().into_iter())?;
                    Some(RecordSet::of(&rids, self.records.len()))
                });
                let each = |rid: u32, score: f64| {
                    // Most candidates lose on score alone, without touching their record
                    // (recency only lowers a score).
                    if !top.may_admit(score) {
                        return;
                    }
                    if allowed.as_ref().is_some_and(|set| !set.contains(rid)) {
                        return;
                    }
                    let Some(r) = self.record(rid) else { return };
                    let score = Recency::apply(query.recency.as_ref(), score, r.valid_from);
                    if score <= 0.0 {
                        return;
                    }
                    if query.tags.is_some_and(|wanted| !r.has_any_tag(wanted))
                        || !top.admits(score, r.valid_from, r.id)
                        || excluded.is_some_and(|task| task == Some(r.task))
                        || !self.passes(query.filter, rid)
                    {
                        return;
                    }
                    top.push(score, r.valid_from, r.id, u64::from(rid));
                };
                self.terms
                    .score(query.text, &self.analyzer, weighting, each);
                top.into_sorted()
                    .into_iter()
                    .filter_map(|(score, rid)| {
                        let fact = self.fact(u32::try_from(rid).ok()?)?;
                        Some(ScoredFact { fact, score })
                    })
                    .collect()
            }
            Some(at) => {
                let facts = self.facts_where(|r| r.is_valid_at(at));
                // Each version valid at `at` is ranked as itself, under its position (two
                // versions of an id can overlap: an older fact that arrived late).
                for (at, fact, score) in
                    scan_positions(&self.analyzer, facts.iter(), query.text, weighting)
                {
                    let tags_match = query
                        .tags
                        .is_none_or(|wanted| fact.tags().contains_any(wanted));
                    let excluded = query.exclude_source_task == Some(fact.source_task_id());
                    if tags_match
                        && !excluded
                        && query.filter.is_none_or(|filter| filter.matches(fact))
                    {
                        let score =
                            Recency::apply(query.recency.as_ref(), score, fact.valid_from());
                        if score > 0.0 {
                            top.push(score, fact.valid_from(), fact.id(), at as u64);
                        }
                    }
                }
                top.into_sorted()
                    .into_iter()
                    .filter_map(|(score, at)| {
                        let fact = facts.get(usize::try_from(at).ok()?)?.clone();
                        Some(ScoredFact { fact, score })
                    })
                    .collect()
            }
        }
    }
}

/// Where a record of an import goes: its index in the snapshot (which its diagnostic
/// names), the batch its batches count from, its subject and relation interned, and the
/// number of records stored before the import.
#[derive(Debug, Clone, Copy)]
struct Place {
    index: usize,
    base: u64,
    key: (u32, u32),
    before: u32,
}

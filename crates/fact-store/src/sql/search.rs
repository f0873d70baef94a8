//! What the SQL stores' `search` shares: the in-process cache of a scope's term index,
//! the filters, and the scoring of a candidate from its stored term document.
//!
//! Every path scores exactly as `InMemorySessionFactStore` does (same statistics, same
//! terms in the same order, same [`TopK`] tie-breaking), so every backend returns the
//! same results, score for score:
//!
//! - **Cache path**: the scope's index held in memory as a `TermIndex`, tagged with the
//!   scope's generation (a counter every write bumps). A search reads the generation in
//!   the same read transaction that fetches its results; the store's own writes update
//!   the cache as they commit ([`SearchCache::apply`]), and the writes of another
//!   connection or process (generations the cache did not see) are replayed from the rows
//!   they stamped with their generation ([`SearchCache::insert`], [`SearchCache::remove`],
//!   [`SearchCache::advance`]); only deletions the rows cannot show make the next search
//!   reload the scope. So a search never answers from stale data.
//! - **Database path**: the database's full-text index finds the valid facts holding a
//!   query term, and [`Scorer`] scores each from its stored term document with the
//!   scope's counters (document count, total length) and the terms' document frequencies.
//! - An `as_of` search scans the versions valid at that instant ([`scan`]), as the
//!   in-memory store does.

use std::collections::HashMap;

use fact_model::{FactId, SessionFact, Tag, Timestamp};

use super::codec::{parse_term, tags_from_sql};
use super::error::DbResult;
use super::rules::{IndexEvent, Outcome};
use crate::index::{TermIndex, TopK, scan_scores};
use crate::{Analyzer, TermQuery, TermWeighting};

/// The scope's term index in memory, valid for one generation of the scope.
#[derive(Debug)]
pub(crate) struct SearchCache {
    generation: i64,
    index: TermIndex,
    /// Seq → slot in `index`, for the valid facts.
    slots: HashMap<u64, u32>,
    /// Seq → source task, for the source-task exclusion without a lookup.
    tasks: HashMap<u64, Box<str>>,
}

/// A seq as the index keys it.
pub(crate) fn seq_key(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// An index key as a seq.
pub(crate) fn seq_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl SearchCache {
    /// An empty cache of a scope at `generation`; fill it with [`insert`](Self::insert).
    pub(crate) fn new(generation: i64) -> Self {
        SearchCache {
            generation,
            index: TermIndex::default(),
            slots: HashMap::new(),
            tasks: HashMap::new(),
        }
    }

    /// The generation of the scope this cache mirrors.
    pub(crate) fn generation(&self) -> i64 {
        self.generation
    }

    /// How many valid facts it holds.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Indexes the valid version in `seq` (replacing what the cache held for it).
    pub(crate) fn insert(&mut self, seq: i64, fact: &SessionFact, analyzer: &Analyzer) {
        let key = seq_key(seq);
        self.remove(seq);
        let slot = self.index.insert(key, fact, analyzer);
        self.slots.insert(key, slot);
        self.tasks.insert(key, fact.source_task_id().into());
    }

    /// Drops the version in `seq` from the cache (it is no longer valid, or gone).
    pub(crate) fn remove(&mut self, seq: i64) {
        let key = seq_key(seq);
        if let Some(slot) = self.slots.remove(&key) {
            self.index.remove(slot);
        }
        self.tasks.remove(&key);
    }

    /// Marks the cache as mirroring `generation`, after the caller replayed every change
    /// up to it with [`insert`](Self::insert) and [`remove`](Self::remove).
    pub(crate) fn advance(&mut self, generation: i64) {
        if self.index.wants_rebuild() {
            self.slots = self.index.rebuild().into_iter().collect();
        }
        self.generation = generation;
    }

    /// Replays a committed transaction that started at this cache's generation; returns
    /// `false` when it cannot (the cache must be dropped).
    pub(crate) fn apply(&mut self, outcome: Outcome, analyzer: &Analyzer) -> bool {
        if outcome.from_generation != self.generation {
            return false;
        }
        let Some(events) = outcome.events else {
            return outcome.to_generation == self.generation;
        };
        for event in events {
            match event {
                IndexEvent::Insert(seq, fact) => self.insert(seq, &fact, analyzer),
                IndexEvent::Remove(seq) => self.remove(seq),
            }
        }
        if self.index.wants_rebuild() {
            self.slots = self.index.rebuild().into_iter().collect();
        }
        self.generation = outcome.to_generation;
        true
    }

    /// Scores the query against the cached index into `top`.
    pub(crate) fn search(
        &self,
        analyzer: &Analyzer,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
        top: &mut TopK,
    ) {
        let filters = Filters::of(query);
        for (slot, score) in self.index.score(query.text, analyzer, weighting) {
            // Most candidates lose on score alone, without touching their slot.
            if !top.may_admit(score) {
                continue;
            }
            let Some(entry) = self.index.entry(slot) else {
                continue;
            };
            if !filters.tags_match(entry.tags.as_slice())
                || !top.admits(score, entry.valid_from, entry.id)
            {
                continue;
            }
            if let Some(task) = self.tasks.get(&entry.seq)
                && !filters.excluded(task)
            {
                top.push(score, entry.valid_from, entry.id, entry.seq);
            }
        }
    }
}

/// What every search path needs besides its index: the query's tag filter and
/// source-task exclusion.
pub(crate) struct Filters<'q> {
    tags: Option<&'q [Tag]>,
    exclude: Option<&'q str>,
}

impl<'q> Filters<'q> {
    /// The filters of `query`.
    pub(crate) fn of(query: &TermQuery<'q>) -> Self {
        Filters {
            tags: query.tags,
            exclude: query.exclude_source_task,
        }
    }

    /// Whether the query filters by tag at all.
    pub(crate) fn by_tags(&self) -> bool {
        self.tags.is_some()
    }

    /// Whether a fact with `tags` passes the tag filter.
    pub(crate) fn tags_match(&self, tags: &[Tag]) -> bool {
        self.tags
            .is_none_or(|wanted| wanted.iter().any(|tag| tags.contains(tag)))
    }

    /// Whether a fact from `task` is excluded.
    pub(crate) fn excluded(&self, task: &str) -> bool {
        self.exclude == Some(task)
    }
}

/// Offers a candidate of the database path, with its `score`, to `top`: its identity
/// (seq, id, `valid_from`) is read only when the score could rank, its tags only when the
/// query filters by tag, then its source task for the exclusion.
pub(crate) fn offer(
    top: &mut TopK,
    filters: &Filters<'_>,
    score: f64,
    identity: impl FnOnce() -> DbResult<(i64, FactId, Timestamp)>,
    tags: impl FnOnce() -> DbResult<String>,
    task: impl FnOnce() -> DbResult<String>,
) -> DbResult<()> {
    if score <= 0.0 || !top.may_admit(score) {
        return Ok(());
    }
    let (seq, id, from) = identity()?;
    if !top.admits(score, from, id) {
        return Ok(());
    }
    if filters.by_tags() && !filters.tags_match(&tags_from_sql(&tags()?)?) {
        return Ok(());
    }
    if !filters.excluded(&task()?) {
        top.push(score, from, id, seq_key(seq));
    }
    Ok(())
}

/// Scores candidates of the database path from their stored term documents.
pub(crate) struct Scorer {
    /// The query's terms the scope's valid facts hold, in query order, with their weights.
    known: Vec<(i64, f64)>,
    avg: f64,
    counts: Vec<u32>,
}

impl Scorer {
    /// A scorer for the query terms `found` (term id and document frequency, in query
    /// order) among `docs` valid facts of `total_len` terms in all; `query_terms` is the
    /// number of distinct terms in the query.
    pub(crate) fn new(
        found: impl IntoIterator<Item = (i64, usize)>,
        docs: usize,
        total_len: i64,
        query_terms: usize,
        weighting: &dyn TermWeighting,
    ) -> Self {
        let known: Vec<(i64, f64)> = found
            .into_iter()
            .filter(|(_, df)| *df > 0)
            .map(|(id, df)| (id, weighting.term_weight(df, docs, query_terms)))
            .collect();
        let avg = if docs == 0 {
            0.0
        } else {
            total_len as f64 / docs as f64
        };
        let counts = vec![0; known.len()];
        Scorer { known, avg, counts }
    }

    /// Whether no query term is held by any valid fact (nothing can score).
    pub(crate) fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The ids of the known query terms, in query order.
    pub(crate) fn term_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.known.iter().map(|(id, _)| *id)
    }

    /// The score of a candidate with this term `document` (`t12 t7 t12`) of `len` terms.
    pub(crate) fn score(
        &mut self,
        document: Option<&str>,
        len: i64,
        weighting: &dyn TermWeighting,
    ) -> DbResult<f64> {
        self.counts.iter_mut().for_each(|count| *count = 0);
        for token in document.unwrap_or_default().split_ascii_whitespace() {
            let id = parse_term(token)?;
            if let Some(at) = self.known.iter().position(|(known, _)| *known == id)
                && let Some(count) = self.counts.get_mut(at)
            {
                *count += 1;
            }
        }
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let mut score = 0.0;
        for ((_, weight), &tf) in self.known.iter().zip(&self.counts) {
            if tf > 0 {
                score += weight * weighting.tf_weight(tf, len, self.avg);
            }
        }
        Ok(score)
    }
}

/// An `as_of` search over `facts` (the versions valid at the instant, by seq), as in the
/// in-memory store.
pub(crate) fn scan(
    facts: &[(u64, SessionFact)],
    analyzer: &Analyzer,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    top: &mut TopK,
) {
    let filters = Filters::of(query);
    // As in the in-memory store: an id valid in two versions at once maps to the later.
    let seqs: HashMap<FactId, u64> = facts.iter().map(|(seq, f)| (f.id(), *seq)).collect();
    let scored = scan_scores(
        analyzer,
        facts.iter().map(|(_, f)| f),
        query.text,
        weighting,
    );
    for (fact, score) in scored {
        if filters.tags_match(fact.tags().as_slice())
            && !filters.excluded(fact.source_task_id())
            && let Some(seq) = seqs.get(&fact.id())
        {
            top.push(score, fact.valid_from(), fact.id(), *seq);
        }
    }
}

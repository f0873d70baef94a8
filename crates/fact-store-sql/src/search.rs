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
//!   reload the scope. So a search never answers from stale data. The cache lives in a
//!   slot charged to the store's [`CacheBudget`](crate::CacheBudget)
//!   ([`crate::cache`]), which may empty it between operations: the store is then as
//!   before its first search, and loads the scope again.
//! - **Database path**: the database's full-text index finds the valid facts holding a
//!   query term, and [`Scorer`] scores each from its stored term document with the
//!   scope's counters (document count, total length) and the terms' document frequencies.
//!   When the weighting bounds its tf part ([`TermWeighting::max_tf_weight`]), the
//!   candidates are read in [`Rounds`], rarest terms first, and the facts that hold only
//!   terms too common to lift them into the results are never read (max-score pruning:
//!   the results are exactly those of reading every candidate).
//! - An `as_of` search scans the versions valid at that instant ([`scan`]), as the
//!   in-memory store does.

use std::any::Any;
use std::collections::{HashMap, HashSet};

use fact_model::{
    FactId, Filter, FilterField, FilterTarget, MetaValue, Metadata, SessionFact, Tag, Timestamp,
};

use super::codec::{parse_term, tags_from_sql};
use super::error::DbResult;
use super::rules::{IndexEvent, Outcome};
use crate::cache::Measure;
use fact_store::backend::{MetaIndex, RecordSet, chunk, map_bytes};
use fact_store::backend::{Slot, TermIndex, TopK, rank_order, scan_positions};
use fact_store::{Analyzer, Recency, TermQuery, TermWeighting};

/// The scope's term index in memory, valid for one generation of the scope.
#[derive(Debug)]
pub struct SearchCache {
    generation: i64,
    index: TermIndex,
    /// Seq → slot in `index`, for the valid facts.
    slots: HashMap<u64, u32>,
    /// Seq → what a filter reads of the fact that its slot does not hold.
    facts: HashMap<u64, Cached>,
    /// The metadata of the valid facts by slot, and the slots holding each `(key, value)`:
    /// a filter's metadata equality rejects the other candidates by a bit.
    meta: MetaIndex,
    /// The heap of the texts in `facts`, as `fact_store::backend`'s heap model counts it
    /// (metadata is shared with the facts it came from, and not counted).
    tasks_heap: usize,
}

/// What the cache keeps of a valid fact beside its slot: its source task (for the
/// source-task exclusion) and confidence; with its metadata (in [`SearchCache::meta`]),
/// what most filters read, so they are decided in process ([`decidable`]).
#[derive(Debug)]
struct Cached {
    task: Box<str>,
    confidence: f64,
}

/// A cached fact as a filter reads it. Only the fields [`decidable`] allows are read:
/// the others are not cached, and answer empty.
struct CachedFact<'c> {
    slot: &'c Slot,
    cached: &'c Cached,
    metadata: Option<&'c Metadata>,
}

impl FilterTarget for CachedFact<'_> {
    fn subject(&self) -> &str {
        ""
    }
    fn relation(&self) -> &str {
        ""
    }
    fn object(&self) -> &str {
        ""
    }
    fn tags(&self) -> &[Tag] {
        self.slot.tags.as_slice()
    }
    fn source(&self) -> &str {
        &self.cached.task
    }
    fn confidence(&self) -> f64 {
        self.cached.confidence
    }
    fn valid_from(&self) -> Timestamp {
        self.slot.valid_from
    }
    fn valid_to(&self) -> Option<Timestamp> {
        // The cache holds valid facts only.
        None
    }
    fn recorded_at(&self) -> Option<Timestamp> {
        None
    }
    fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.metadata?.get(key)
    }
}

/// Whether the cache decides `filter` by itself: it reads no field the cache does not
/// keep (the triple's texts, `recorded_at`).
fn decidable(filter: &Filter) -> bool {
    filter.conditions().iter().all(|c| {
        !matches!(
            c.field(),
            FilterField::Subject
                | FilterField::Relation
                | FilterField::Object
                | FilterField::RecordedAt
        )
    })
}

/// How many candidates the first database check of a filtered cached search reads,
/// per result asked for (at least [`FIRST_CHECK_MIN`]); each later check reads four
/// times as many as the one before.
const FIRST_CHECK_PER_RESULT: usize = 4;
/// The fewest candidates the first database check reads.
const FIRST_CHECK_MIN: usize = 64;

/// A seq as the index keys it.
pub fn seq_key(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

/// An index key as a seq.
pub fn seq_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl SearchCache {
    /// An empty cache of a scope at `generation`; fill it with [`insert`](Self::insert).
    pub fn new(generation: i64) -> Self {
        SearchCache {
            generation,
            index: TermIndex::default(),
            slots: HashMap::new(),
            facts: HashMap::new(),
            meta: MetaIndex::default(),
            tasks_heap: 0,
        }
    }

    /// The heap the cache holds, as `fact_store::backend`'s heap model counts it: what a
    /// [`CacheBudget`](crate::CacheBudget) is charged for it.
    pub fn heap_bytes(&self) -> usize {
        self.index.heap_bytes()
            + map_bytes::<u64, u32>(self.slots.capacity())
            + map_bytes::<u64, Cached>(self.facts.capacity())
            + self.tasks_heap
            + self.meta.heap_bytes()
    }

    /// The generation of the scope this cache mirrors.
    pub fn generation(&self) -> i64 {
        self.generation
    }

    /// How many valid facts it holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether it holds no valid fact.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Indexes the valid version in `seq` (replacing what the cache held for it).
    pub fn insert(&mut self, seq: i64, fact: &SessionFact, analyzer: &Analyzer) {
        let key = seq_key(seq);
        self.remove(seq);
        let slot = self.index.insert(key, fact, analyzer);
        self.slots.insert(key, slot);
        self.meta.set(slot, fact.metadata());
        let task: Box<str> = fact.source_task_id().into();
        self.tasks_heap += chunk(task.len());
        let cached = Cached {
            task,
            confidence: fact.confidence(),
        };
        self.facts.insert(key, cached);
    }

    /// Drops the version in `seq` from the cache (it is no longer valid, or gone).
    pub fn remove(&mut self, seq: i64) {
        let key = seq_key(seq);
        if let Some(slot) = self.slots.remove(&key) {
            self.index.remove(slot);
            self.meta.remove(slot);
        }
        if let Some(cached) = self.facts.remove(&key) {
            self.tasks_heap = self.tasks_heap.saturating_sub(chunk(cached.task.len()));
        }
    }

    /// Marks the cache as mirroring `generation`, after the caller replayed every change
    /// up to it with [`insert`](Self::insert) and [`remove`](Self::remove).
    pub fn advance(&mut self, generation: i64) {
        if self.index.wants_rebuild() {
            self.rebuild();
        }
        self.generation = generation;
    }

    /// Compacts the term index, which numbers the slots anew, and moves the metadata of
    /// each slot to its new number.
    fn rebuild(&mut self) {
        let slots: HashMap<u64, u32> = self.index.rebuild().into_iter().collect();
        let mut meta = MetaIndex::default();
        for (seq, slot) in &slots {
            if let Some(metadata) = self.slots.get(seq).and_then(|old| self.meta.get(*old)) {
                meta.set(*slot, metadata);
            }
        }
        self.meta = meta;
        self.slots = slots;
    }

    /// Replays a committed transaction that started at this cache's generation; returns
    /// `false` when it cannot (the cache must be dropped).
    pub fn apply(&mut self, outcome: Outcome, analyzer: &Analyzer) -> bool {
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
            self.rebuild();
        }
        self.generation = outcome.to_generation;
        true
    }

    /// Scores the query against the cached index into `top`.
    ///
    /// A filter the cache decides by itself (one that reads no text of the triple and no
    /// `recorded_at`) is tested as candidates are ranked, as the tag filter is, and the
    /// answer is complete. Any other filter is the database's to test: the candidates
    /// that pass everything else come back as [`Deferred`], for [`Deferred::check`]
    /// (with the cache's lock released: it reads the database).
    pub fn search(
        &self,
        analyzer: &Analyzer,
        query: &TermQuery<'_>,
        weighting: &dyn TermWeighting,
        top: &mut TopK,
    ) -> Deferred {
        let filters = Filters::of(query);
        let scored = self.index.score(query.text, analyzer, weighting);
        let (here, deferred) = match query.filter {
            Some(filter) if !decidable(filter) => (None, true),
            filter => (filter, false),
        };
        // A metadata equality the filter requires: the slots holding its value, as bits,
        // reject the other candidates before their slot is read.
        let allowed = query.filter.and_then(|filter| {
            let slots = self.meta.candidates(filter.conjuncts().into_iter())?;
            let len = slots.last().map_or(0, |last| *last as usize + 1);
            Some(RecordSet::of(&slots, len))
        });
        // What passes every test the cache can make, as `(score, valid_from, id, seq)`.
        let passes = |slot: u32, score: f64, top: Option<&TopK>| {
            if allowed.as_ref().is_some_and(|set| !set.contains(slot)) {
                return None;
            }
            let entry = self.index.entry(slot)?;
            let cached = self.facts.get(&entry.seq)?;
            let score = filters.decayed(score, entry.valid_from);
            let keep = score > 0.0
                && filters.tags_match(entry.tags.as_slice())
                && top.is_none_or(|top| top.admits(score, entry.valid_from, entry.id))
                && !filters.excluded(&cached.task)
                && here.is_none_or(|filter| {
                    filter.matches(&CachedFact {
                        slot: entry,
                        cached,
                        metadata: self.meta.get(slot),
                    })
                });
            keep.then_some((score, entry.valid_from, entry.id, entry.seq))
        };
        if deferred {
            let candidates = scored
                .into_iter()
                .filter_map(|(slot, score)| passes(slot, score, None))
                .collect();
            return Deferred {
                candidates,
                first: query
                    .limit
                    .saturating_mul(FIRST_CHECK_PER_RESULT)
                    .max(FIRST_CHECK_MIN),
            };
        }
        for (slot, score) in scored {
            // Most candidates lose on score alone, without touching their slot.
            if !top.may_admit(score) {
                continue;
            }
            if let Some((score, from, id, seq)) = passes(slot, score, Some(top)) {
                top.push(score, from, id, seq);
            }
        }
        Deferred::default()
    }
}

/// The candidates of a cached search whose filter the database must test, as
/// `(score, valid_from, id, seq)`; none when the cache answered by itself.
#[derive(Debug, Default)]
#[must_use = "the candidates must be checked, or the search answers nothing"]
pub struct Deferred {
    candidates: Vec<(f64, Timestamp, FactId, u64)>,
    first: usize,
}

impl Deferred {
    /// Pushes into `top` the candidates that `check` passes, best first: `check` is given
    /// the seqs of a batch of candidates and answers those whose fact the filter holds
    /// for. It is asked about the best candidates first, in batches that grow fourfold
    /// until `top` is full, so that a search returns its `limit` whenever that many facts
    /// match, however few do, and reads few rows when many do.
    ///
    /// # Errors
    ///
    /// `check`'s.
    pub fn check<E>(
        self,
        top: &mut TopK,
        mut check: impl FnMut(&[i64]) -> DbResult<Vec<i64>, E>,
    ) -> DbResult<(), E> {
        let Deferred {
            mut candidates,
            first,
        } = self;
        let order = |a: &(f64, Timestamp, FactId, u64), b: &(f64, Timestamp, FactId, u64)| {
            rank_order((a.0, a.1, a.2), (b.0, b.1, b.2))
        };
        let mut start = 0;
        let mut size = first.max(1);
        while start < candidates.len() && !top.is_full() {
            let rest = candidates.get_mut(start..).unwrap_or_default();
            let take = size.min(rest.len());
            if take < rest.len() {
                // The best `take` of the rest first, then in order.
                rest.select_nth_unstable_by(take.saturating_sub(1), order);
            }
            let batch = rest.get_mut(..take).unwrap_or_default();
            batch.sort_unstable_by(order);
            let seqs: Vec<i64> = batch.iter().map(|c| seq_sql(c.3)).collect();
            let passed: HashSet<i64> = check(&seqs)?.into_iter().collect();
            for &(score, from, id, seq) in batch.iter() {
                if passed.contains(&seq_sql(seq)) {
                    top.push(score, from, id, seq);
                }
            }
            start += take;
            size = size.saturating_mul(4);
        }
        Ok(())
    }
}

/// A store's search cache as its [`CacheBudget`](crate::CacheBudget) sees it: `None`
/// until a search loads the scope, and again once the budget evicts it.
impl Measure for Option<SearchCache> {
    fn heap_bytes(&self) -> usize {
        self.as_ref().map_or(0, SearchCache::heap_bytes)
    }

    fn evict(&mut self) -> Box<dyn Any + Send> {
        Box::new(self.take())
    }
}

/// What every search path needs besides its index: the query's tag filter, source-task
/// exclusion and recency.
pub struct Filters<'q> {
    tags: Option<&'q [Tag]>,
    exclude: Option<&'q str>,
    recency: Option<Recency>,
}

impl<'q> Filters<'q> {
    /// The filters of `query`.
    pub fn of(query: &TermQuery<'q>) -> Self {
        Filters {
            tags: query.tags,
            exclude: query.exclude_source_task,
            recency: query.recency,
        }
    }

    /// `score` with the query's recency applied to a fact true from `valid_from`.
    pub fn decayed(&self, score: f64, valid_from: Timestamp) -> f64 {
        Recency::apply(self.recency.as_ref(), score, valid_from)
    }

    /// Whether the query filters by tag at all.
    pub fn by_tags(&self) -> bool {
        self.tags.is_some()
    }

    /// Whether a fact with `tags` passes the tag filter.
    pub fn tags_match(&self, tags: &[Tag]) -> bool {
        self.tags
            .is_none_or(|wanted| wanted.iter().any(|tag| tags.contains(tag)))
    }

    /// Whether a fact from `task` is excluded.
    pub fn excluded(&self, task: &str) -> bool {
        self.exclude == Some(task)
    }
}

/// Offers a candidate of the database path, with its `score`, to `top`: its identity
/// (seq, id, `valid_from`) is read only when the score could rank, its tags only when the
/// query filters by tag, then its source task for the exclusion.
pub fn offer<E>(
    top: &mut TopK,
    filters: &Filters<'_>,
    score: f64,
    identity: impl FnOnce() -> DbResult<(i64, FactId, Timestamp), E>,
    tags: impl FnOnce() -> DbResult<String, E>,
    task: impl FnOnce() -> DbResult<String, E>,
) -> DbResult<(), E> {
    if score <= 0.0 || !top.may_admit(score) {
        return Ok(());
    }
    let (seq, id, from) = identity()?;
    // Recency only lowers a score: the raw one bounded it above.
    let score = filters.decayed(score, from);
    if score <= 0.0 || !top.admits(score, from, id) {
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
pub struct Scorer {
    /// The query's terms the scope's valid facts hold, in query order, with their weights.
    known: Vec<(i64, f64)>,
    avg: f64,
    counts: Vec<u32>,
}

impl Scorer {
    /// A scorer for the query terms `found` (term id and document frequency, in query
    /// order) among `docs` valid facts of `total_len` terms in all; `query_terms` is the
    /// number of distinct terms in the query.
    pub fn new(
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
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The score of a candidate with this term `document` (`t12 t7 t12`) of `len` terms.
    pub fn score<E>(
        &mut self,
        document: Option<&str>,
        len: i64,
        weighting: &dyn TermWeighting,
    ) -> DbResult<f64, E> {
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

/// How many rounds of a bounded database search read the candidates of one term, before
/// one round reads the rest: each round is a query, and a long query (a task prompt of
/// hundreds of terms) must not become hundreds of them.
const SINGLE_TERM_ROUNDS: usize = 4;

/// Single-term rounds are for questions: with more terms worth reading than this, the
/// rest are read in one round at once. The terms of a long query together outweigh any
/// result, so nothing could be left out, and separate rounds only cost (a 40-word query
/// at 100,000 facts took 87 ms in rounds, 71 ms in one).
const SINGLE_TERM_ROUNDS_UP_TO: usize = 8;

/// The rounds in which a database path reads candidates: without a bound on the tf part,
/// the facts holding any query term, in one round; with one, the facts of the terms with
/// the highest bound (the rarest) first, one term per round for a few rounds (when a few
/// terms are worth reading), then those of every term still worth reading at once. Before each round, the longest run of the
/// least valuable unread terms whose bounds together cannot reach the results so far is
/// left out: a fact holding only those terms cannot rank. Facts holding a term of an
/// earlier round were read then, and are left out of later rounds.
#[derive(Debug)]
pub struct Rounds {
    /// The known query terms with the most each can add to a score, highest first.
    terms: Vec<(i64, f64)>,
    bounded: bool,
    read: usize,
    single: usize,
}

/// A round: the ids of the terms whose facts to read, and of those whose facts were read.
pub type Round = (Vec<i64>, Vec<i64>);

impl Rounds {
    /// The rounds of `scorer`'s terms under `weighting`.
    pub fn new(scorer: &Scorer, weighting: &dyn TermWeighting) -> Self {
        match weighting.max_tf_weight() {
            Some(max) if max.is_finite() && max >= 0.0 => {
                let mut terms: Vec<(i64, f64)> = scorer
                    .known
                    .iter()
                    .map(|(id, weight)| (*id, weight.max(0.0) * max))
                    .collect();
                // Stable: equal bounds keep the query's order.
                terms.sort_by(|a, b| b.1.total_cmp(&a.1));
                Rounds {
                    terms,
                    bounded: true,
                    read: 0,
                    single: 0,
                }
            }
            _ => Rounds {
                terms: scorer.known.iter().map(|(id, _)| (*id, 0.0)).collect(),
                bounded: false,
                read: 0,
                single: 0,
            },
        }
    }

    /// The next round, or `None` when no fact left unread could rank in `top`.
    pub fn next(&mut self, top: &TopK) -> Option<Round> {
        let rest = self.terms.get(self.read..).unwrap_or_default();
        if rest.is_empty() {
            return None;
        }
        let mut worth = rest.len();
        if self.bounded {
            let mut tail = 0.0;
            while let Some((_, bound)) = worth.checked_sub(1).and_then(|at| rest.get(at)) {
                let with = tail + bound;
                // A margin for rounding: a score sums the same products in another order.
                if with > 0.0 && top.may_admit(with + with * 1e-9) {
                    break;
                }
                tail = with;
                worth -= 1;
            }
        }
        if worth == 0 {
            return None;
        }
        let single = self.single < SINGLE_TERM_ROUNDS && worth <= SINGLE_TERM_ROUNDS_UP_TO;
        let take = if self.bounded && single {
            self.single += 1;
            1
        } else {
            worth
        };
        let ids = |terms: &[(i64, f64)]| terms.iter().map(|(id, _)| *id).collect::<Vec<_>>();
        let now = ids(rest.get(..take).unwrap_or_default());
        let before = ids(self.terms.get(..self.read).unwrap_or_default());
        self.read += take;
        Some((now, before))
    }
}

/// An `as_of` search over `facts` (the versions valid at the instant, by seq), as in the
/// in-memory store.
pub fn scan(
    facts: &[(u64, SessionFact)],
    analyzer: &Analyzer,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    top: &mut TopK,
) {
    let filters = Filters::of(query);
    // As in the in-memory store: each version valid at the instant is ranked as itself.
    let scored = scan_positions(
        analyzer,
        facts.iter().map(|(_, f)| f),
        query.text,
        weighting,
    );
    for (at, fact, score) in scored {
        let score = filters.decayed(score, fact.valid_from());
        if score > 0.0
            && filters.tags_match(fact.tags().as_slice())
            && !filters.excluded(fact.source_task_id())
            && query.filter.is_none_or(|filter| filter.matches(fact))
            && let Some((seq, _)) = facts.get(at)
        {
            top.push(score, fact.valid_from(), fact.id(), *seq);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use fact_model::{FactId, Timestamp};

    use super::{Rounds, Scorer};
    use fact_store::TermWeighting;
    use fact_store::backend::TopK;

    /// Weight 1 per term, tf part at most `max`.
    #[derive(Debug)]
    struct Flat(Option<f64>);

    impl TermWeighting for Flat {
        fn term_weight(&self, df: usize, _: usize, _: usize) -> f64 {
            // Rarer terms weigh more: 10 / df.
            10.0 / df as f64
        }
        fn tf_weight(&self, _: u32, _: u32, _: f64) -> f64 {
            1.0
        }
        fn max_tf_weight(&self) -> Option<f64> {
            self.0
        }
    }

    fn rounds(weighting: &Flat) -> Rounds {
        // Terms 1, 2, 3 in query order, held by 10, 1 and 5 facts: weights 1, 10, 2.
        let scorer = Scorer::new([(1, 10), (2, 1), (3, 5)], 100, 400, 3, weighting);
        Rounds::new(&scorer, weighting)
    }

    fn full_top(worst: f64) -> TopK {
        let mut top = TopK::new(1);
        top.push(
            worst,
            Timestamp::UNIX_EPOCH,
            FactId::for_triple("s", "r", "o"),
            1,
        );
        top
    }

    #[test]
    fn without_a_bound_every_candidate_is_read_in_one_round() {
        let weighting = Flat(None);
        let mut rounds = rounds(&weighting);
        assert_eq!(rounds.next(&full_top(100.0)), Some((vec![1, 2, 3], vec![])));
        assert_eq!(rounds.next(&full_top(0.0)), None);
    }

    #[test]
    fn with_a_bound_the_rarest_terms_come_first_and_hopeless_ones_never() {
        let weighting = Flat(Some(1.0));
        let mut rounds = rounds(&weighting);
        // Nothing ranked yet: every term is worth reading; the rarest first.
        assert_eq!(rounds.next(&TopK::new(1)), Some((vec![2], vec![])));
        // The results so far need more than 3 (terms 3 and 1 together): nothing is left.
        assert_eq!(rounds.next(&full_top(3.5)), None);
        let mut rounds = self::rounds(&weighting);
        rounds.next(&TopK::new(1));
        // More than 1 but at most 3: term 3 is worth a round, term 1 alone is not.
        assert_eq!(rounds.next(&full_top(2.5)), Some((vec![3], vec![2])));
        assert_eq!(rounds.next(&full_top(2.5)), None);
    }

    #[test]
    fn metadata_filters_follow_the_slots_when_the_index_is_rebuilt() {
        use fact_model::{Filter, MetaValue, Metadata, SessionFact, SourceRole, Tag};
        use fact_store::{Analyzer, TermQuery};

        let analyzer = Analyzer::default();
        let fact = |n: i64| {
            let metadata =
                Metadata::from_pairs([("n", MetaValue::Number((n % 10) as f64))]).unwrap();
            SessionFact::builder(format!("s{n}"), "said", format!("tea number {n}"))
                .tag(Tag::Knowledge)
                .source("chat", SourceRole::User)
                .valid_from(Timestamp::from_unix_secs(n).unwrap())
                .build()
                .unwrap()
                .with_metadata(metadata)
        };
        let mut cache = super::SearchCache::new(0);
        for n in 1..=3000 {
            cache.insert(n, &fact(n), &analyzer);
        }
        // Most facts go: the index has more dead postings than live ones, and renumbers
        // its slots when the cache advances.
        for n in 1..=2500 {
            cache.remove(n);
        }
        cache.advance(1);
        let heap = cache.heap_bytes();
        let filter = Filter::parse_where("metadata.n = 3").unwrap();
        let query = TermQuery::new("tea", 100).with_filter(&filter);
        let mut top = TopK::new(query.limit);
        let deferred = cache.search(&analyzer, &query, &Flat(None), &mut top);
        assert!(deferred.candidates.is_empty());
        let mut seqs: Vec<u64> = top.into_sorted().into_iter().map(|(_, seq)| seq).collect();
        seqs.sort_unstable();
        let want: Vec<u64> = (2501..=3000).filter(|n| n % 10 == 3).collect();
        assert_eq!(seqs, want);
        // The metadata left with the facts removed.
        for n in 2501..=3000 {
            cache.remove(n);
        }
        assert!(cache.heap_bytes() < heap);
        let mut top = TopK::new(10);
        let _ = cache.search(&analyzer, &query, &Flat(None), &mut top);
        assert!(top.into_sorted().is_empty());
    }

    #[test]
    fn a_long_query_is_read_in_one_round() {
        let weighting = Flat(Some(1.0));
        let found: Vec<(i64, usize)> = (1..=9)
            .map(|id| (id, usize::try_from(id).unwrap()))
            .collect();
        let scorer = Scorer::new(found, 100, 400, 9, &weighting);
        let mut rounds = Rounds::new(&scorer, &weighting);
        assert_eq!(
            rounds.next(&TopK::new(1)),
            Some(((1..=9).collect(), vec![]))
        );
        assert_eq!(rounds.next(&TopK::new(1)), None);
    }
}

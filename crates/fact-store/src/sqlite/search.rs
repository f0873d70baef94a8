//! `search` over SQLite: the database's own term index, and an in-process cache of it.
//!
//! Both paths score exactly as `InMemorySessionFactStore` does (same statistics, same
//! terms in the same order, same [`TopK`] tie-breaking), so every backend returns the same
//! results, score for score:
//!
//! - **Database path** ([`SqliteOptions::search_cache`](super::SqliteOptions) off): the
//!   query's terms are looked up in `terms` (ids and document frequencies), FTS5 finds
//!   the valid facts holding any of them (`MATCH 't12 OR t7'`), and each candidate's term
//!   frequencies and length come from its stored term document; the scope's counters
//!   give the document count and average length.
//! - **Cache path** (the default): the same index held in memory as a `TermIndex`, tagged
//!   with the scope's generation. Every search reads the generation in the same read
//!   transaction that fetches the results; this store's own writes update the cache as
//!   they commit, and a write by another connection or process (a generation the cache
//!   did not see) makes the next search reload it from the database. So a search never
//!   answers from stale data, in any process sharing the file.
//!
//! An `as_of` search scans the versions valid at that instant, as the in-memory store does.

use std::collections::HashMap;

use fact_model::{FactId, SessionFact, Tag, Timestamp};
use rusqlite::{Connection, Transaction, params};

use super::codec::{FACT_COLUMNS, id_from_sql, read_fact, tags_from_sql, time_from_sql};
use super::error::DbResult;
use super::writer::{IndexEvent, Outcome, parse_term, select_fact_sql};
use crate::index::{TermIndex, TopK, distinct, scan_scores};
use crate::{Analyzer, ScoredFact, TermQuery, TermWeighting};

/// The scope's term index in memory, valid for one generation of the scope.
#[derive(Debug)]
pub(super) struct SearchCache {
    generation: i64,
    index: TermIndex,
    /// Seq → slot in `index`, for the valid facts.
    slots: HashMap<u64, u32>,
    /// Seq → source task, for the source-task exclusion without a lookup.
    tasks: HashMap<u64, Box<str>>,
}

fn seq_key(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

fn seq_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl SearchCache {
    /// The generation of the scope this cache mirrors.
    pub(super) fn generation(&self) -> i64 {
        self.generation
    }

    /// Reads the scope's valid facts and indexes them.
    fn load(
        tx: &Transaction<'_>,
        scope: i64,
        analyzer: &Analyzer,
        generation: i64,
    ) -> DbResult<Self> {
        let mut cache = SearchCache {
            generation,
            index: TermIndex::default(),
            slots: HashMap::new(),
            tasks: HashMap::new(),
        };
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT seq, {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND valid_to IS NULL \
             ORDER BY seq"
        ))?;
        let mut rows = stmt.query([scope])?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let fact = read_fact(row, 1)?;
            cache.insert(seq, &fact, analyzer);
        }
        Ok(cache)
    }

    fn insert(&mut self, seq: i64, fact: &SessionFact, analyzer: &Analyzer) {
        let key = seq_key(seq);
        self.remove(seq);
        let slot = self.index.insert(key, fact, analyzer);
        self.slots.insert(key, slot);
        self.tasks.insert(key, fact.source_task_id().into());
    }

    fn remove(&mut self, seq: i64) {
        let key = seq_key(seq);
        if let Some(slot) = self.slots.remove(&key) {
            self.index.remove(slot);
        }
        self.tasks.remove(&key);
    }

    /// Replays a committed transaction that started at this cache's generation; returns
    /// `false` when it cannot (the cache must be dropped).
    pub(super) fn apply(&mut self, outcome: Outcome, analyzer: &Analyzer) -> bool {
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
}

/// What every search path needs besides its index.
struct Filters<'q> {
    tags: Option<&'q [Tag]>,
    exclude: Option<&'q str>,
}

impl Filters<'_> {
    fn tags_match(&self, tags: &[Tag]) -> bool {
        self.tags
            .is_none_or(|wanted| wanted.iter().any(|tag| tags.contains(tag)))
    }

    fn excluded(&self, task: &str) -> bool {
        self.exclude == Some(task)
    }
}

/// Answers `search` for `scope`; `cache` is used (and filled) when `use_cache`.
pub(super) fn search(
    conn: &mut Connection,
    scope: i64,
    analyzer: &Analyzer,
    cache: &mut Option<SearchCache>,
    use_cache: bool,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
) -> DbResult<Vec<ScoredFact>> {
    if query.limit == 0 {
        return Ok(Vec::new());
    }
    let filters = Filters {
        tags: query.tags,
        exclude: query.exclude_source_task,
    };
    // One read transaction: the statistics, the candidates and the facts fetched at the
    // end all come from one snapshot of the database.
    let tx = conn.transaction()?;
    let mut top = TopK::new(query.limit);
    match query.as_of {
        Some(at) => scan(
            &tx, scope, analyzer, at, query, weighting, &filters, &mut top,
        )?,
        None if use_cache => {
            let generation: i64 = tx
                .prepare_cached("SELECT generation FROM scopes WHERE id = ?1")?
                .query_row([scope], |row| row.get(0))?;
            if cache.as_ref().map(SearchCache::generation) != Some(generation) {
                *cache = None;
                *cache = Some(SearchCache::load(&tx, scope, analyzer, generation)?);
            }
            if let Some(cache) = cache.as_ref() {
                from_cache(cache, analyzer, query, weighting, &filters, &mut top);
            }
        }
        None => from_database(&tx, scope, analyzer, query, weighting, &filters, &mut top)?,
    }
    let mut results = Vec::new();
    let mut stmt = tx.prepare_cached(&select_fact_sql())?;
    for (score, seq) in top.into_sorted() {
        let mut rows = stmt.query(params![seq_sql(seq), scope])?;
        if let Some(row) = rows.next()? {
            results.push(ScoredFact {
                fact: read_fact(row, 0)?,
                score,
            });
        }
    }
    drop(stmt);
    tx.commit()?;
    Ok(results)
}

fn from_cache(
    cache: &SearchCache,
    analyzer: &Analyzer,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    filters: &Filters<'_>,
    top: &mut TopK,
) {
    for (slot, score) in cache.index.score(query.text, analyzer, weighting) {
        // Most candidates lose on score alone, without touching their slot.
        if !top.may_admit(score) {
            continue;
        }
        let Some(entry) = cache.index.entry(slot) else {
            continue;
        };
        if !filters.tags_match(entry.tags.as_slice())
            || !top.admits(score, entry.valid_from, entry.id)
        {
            continue;
        }
        if let Some(task) = cache.tasks.get(&entry.seq)
            && !filters.excluded(task)
        {
            top.push(score, entry.valid_from, entry.id, entry.seq);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn from_database(
    tx: &Transaction<'_>,
    scope: i64,
    analyzer: &Analyzer,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    filters: &Filters<'_>,
    top: &mut TopK,
) -> DbResult<()> {
    let (docs, total_len): (i64, i64) = tx
        .prepare_cached("SELECT valid_count, total_len FROM scopes WHERE id = ?1")?
        .query_row([scope], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let docs = usize::try_from(docs).unwrap_or(0);
    let analyzed = analyzer.analyze(query.text);
    let terms = distinct(&analyzed);
    // The query's terms the scope's valid facts hold, in query order, with their weights.
    let mut known: Vec<(i64, f64)> = Vec::new();
    {
        let mut lookup =
            tx.prepare_cached("SELECT id, df FROM terms WHERE scope = ?1 AND term = ?2")?;
        for term in &terms {
            let mut rows = lookup.query(params![scope, term])?;
            if let Some(row) = rows.next()? {
                let (id, df): (i64, i64) = (row.get(0)?, row.get(1)?);
                let df = usize::try_from(df).unwrap_or(0);
                if df > 0 {
                    known.push((id, weighting.term_weight(df, docs, terms.len())));
                }
            }
        }
    }
    if known.is_empty() {
        return Ok(());
    }
    let avg = if docs == 0 {
        0.0
    } else {
        total_len as f64 / docs as f64
    };
    let mut expression = String::new();
    for (id, _) in &known {
        if !expression.is_empty() {
            expression.push_str(" OR ");
        }
        expression.push('t');
        expression.push_str(&id.to_string());
    }
    let mut stmt = tx.prepare_cached(
        "SELECT f.seq, f.id, f.valid_from, f.tags, f.source_task_id, f.doc_len, f.terms \
         FROM fact_fts CROSS JOIN facts AS f ON f.seq = fact_fts.rowid \
         WHERE fact_fts MATCH ?1 AND f.scope = ?2 AND f.valid_to IS NULL",
    )?;
    let mut rows = stmt.query(params![expression, scope])?;
    let mut counts = vec![0u32; known.len()];
    while let Some(row) = rows.next()? {
        counts.iter_mut().for_each(|count| *count = 0);
        let document: Option<String> = row.get(6)?;
        for token in document
            .as_deref()
            .unwrap_or_default()
            .split_ascii_whitespace()
        {
            let id = parse_term(token)?;
            if let Some(at) = known.iter().position(|(known, _)| *known == id)
                && let Some(count) = counts.get_mut(at)
            {
                *count += 1;
            }
        }
        let len: i64 = row.get(5)?;
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let mut score = 0.0;
        for ((_, weight), &tf) in known.iter().zip(&counts) {
            if tf > 0 {
                score += weight * weighting.tf_weight(tf, len, avg);
            }
        }
        if score <= 0.0 || !top.may_admit(score) {
            continue;
        }
        let (seq, id, from): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let (id, from) = (id_from_sql(id)?, time_from_sql(from)?);
        if !top.admits(score, from, id) {
            continue;
        }
        if filters.tags.is_some() {
            let tags: String = row.get(3)?;
            if !filters.tags_match(&tags_from_sql(&tags)?) {
                continue;
            }
        }
        let task: String = row.get(4)?;
        if !filters.excluded(&task) {
            top.push(score, from, id, seq_key(seq));
        }
    }
    Ok(())
}

/// An `as_of` search: a scan of the versions valid at `at`, as in the in-memory store.
#[allow(clippy::too_many_arguments)]
fn scan(
    tx: &Transaction<'_>,
    scope: i64,
    analyzer: &Analyzer,
    at: Timestamp,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    filters: &Filters<'_>,
    top: &mut TopK,
) -> DbResult<()> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT seq, {FACT_COLUMNS} FROM facts WHERE scope = ?1 AND valid_from <= ?2 \
         AND (valid_to IS NULL OR ?2 < valid_to) ORDER BY seq"
    ))?;
    let mut rows = stmt.query(params![scope, at.unix_micros()])?;
    let mut facts: Vec<(u64, SessionFact)> = Vec::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let fact = read_fact(row, 1)?;
        if fact.is_valid_at(at) {
            facts.push((seq_key(seq), fact));
        }
    }
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
    Ok(())
}

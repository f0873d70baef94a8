//! `search` over SQLite: the database's own term index (FTS5 over term documents), and
//! the shared in-process cache of it ([`crate::sql::search`] says how both score).

use fact_model::SessionFact;
use rusqlite::{Connection, Transaction, params};

use super::codec::read_fact;
use super::rows::select_fact_sql;
use crate::index::{TopK, distinct};
use crate::sql::codec::{FACT_COLUMNS, id_from_sql, time_from_sql};
use crate::sql::error::DbResult;
use crate::sql::search::{Filters, Scorer, SearchCache, offer, scan, seq_key, seq_sql};
use crate::{Analyzer, ScoredFact, TermQuery, TermWeighting};

/// Reads the scope's valid facts into a cache at `generation`.
fn load(
    tx: &Transaction<'_>,
    scope: i64,
    analyzer: &Analyzer,
    generation: i64,
) -> DbResult<SearchCache> {
    let mut cache = SearchCache::new(generation);
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
    // One read transaction: the statistics, the candidates and the facts fetched at the
    // end all come from one snapshot of the database.
    let tx = conn.transaction()?;
    let mut top = TopK::new(query.limit);
    match query.as_of {
        Some(at) => {
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
            scan(&facts, analyzer, query, weighting, &mut top);
        }
        None if use_cache => {
            let generation: i64 = tx
                .prepare_cached("SELECT generation FROM scopes WHERE id = ?1")?
                .query_row([scope], |row| row.get(0))?;
            if cache.as_ref().map(SearchCache::generation) != Some(generation) {
                *cache = None;
                *cache = Some(load(&tx, scope, analyzer, generation)?);
            }
            if let Some(cache) = cache.as_ref() {
                cache.search(analyzer, query, weighting, &mut top);
            }
        }
        None => from_database(&tx, scope, analyzer, query, weighting, &mut top)?,
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

/// FTS5 finds the valid facts holding a query term (`MATCH 't12 OR t7'`); each is scored
/// from its stored term document.
fn from_database(
    tx: &Transaction<'_>,
    scope: i64,
    analyzer: &Analyzer,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    top: &mut TopK,
) -> DbResult<()> {
    let (docs, total_len): (i64, i64) = tx
        .prepare_cached("SELECT valid_count, total_len FROM scopes WHERE id = ?1")?
        .query_row([scope], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let analyzed = analyzer.analyze(query.text);
    let terms = distinct(&analyzed);
    let mut found: Vec<(i64, usize)> = Vec::new();
    {
        let mut lookup =
            tx.prepare_cached("SELECT id, df FROM terms WHERE scope = ?1 AND term = ?2")?;
        for term in &terms {
            let mut rows = lookup.query(params![scope, term])?;
            if let Some(row) = rows.next()? {
                let (id, df): (i64, i64) = (row.get(0)?, row.get(1)?);
                found.push((id, usize::try_from(df).unwrap_or(0)));
            }
        }
    }
    let docs = usize::try_from(docs).unwrap_or(0);
    let mut scorer = Scorer::new(found, docs, total_len, terms.len(), weighting);
    if scorer.is_empty() {
        return Ok(());
    }
    let expression = scorer
        .term_ids()
        .map(|id| format!("t{id}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    let filters = Filters::of(query);
    let mut stmt = tx.prepare_cached(
        "SELECT f.seq, f.id, f.valid_from, f.tags, f.source_task_id, f.doc_len, f.terms \
         FROM fact_fts CROSS JOIN facts AS f ON f.seq = fact_fts.rowid \
         WHERE fact_fts MATCH ?1 AND f.scope = ?2 AND f.valid_to IS NULL",
    )?;
    let mut rows = stmt.query(params![expression, scope])?;
    while let Some(row) = rows.next()? {
        let document: Option<String> = row.get(6)?;
        let score = scorer.score(document.as_deref(), row.get(5)?, weighting)?;
        offer(
            top,
            &filters,
            score,
            || {
                let (seq, id, from): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
                Ok((seq, id_from_sql(id)?, time_from_sql(from)?))
            },
            || Ok(row.get(3)?),
            || Ok(row.get(4)?),
        )?;
    }
    Ok(())
}

//! `search` over SQLite: the database's own term index (FTS5 over term documents), and
//! the shared in-process cache of it ([`fact_store_sql::search`] says how both score).
//!
//! The cache follows the scope: a search reads the scope's generations in its read
//! transaction; a cache at the scope's generation answers as it is; a cache a few
//! generations behind (another connection wrote) reads only the rows stamped with a
//! newer `changed_generation` (schema version 5) and replays them; only a deletion the
//! rows cannot show (`deleted_generation` after the cache's) or a write by a build that
//! does not stamp rows (`stamped_generation` behind) needs the whole scope again, and
//! what then happens is the caller's choice ([`Cold`]).

use fact_model::SessionFact;
use rusqlite::types::Value;
use rusqlite::{Connection, Transaction, params, params_from_iter};

use super::codec::read_fact;
use super::rows::select_fact_sql;
use crate::error::DbResult;
use fact_store::backend::{TopK, distinct};
use fact_store::{Analyzer, ScoredFact, TermQuery, TermWeighting};
use fact_store_sql::cache::Pinned;
use fact_store_sql::codec::{FACT_COLUMNS, id_from_sql, time_from_sql};
use fact_store_sql::filter::{Dialect, SqlValue, compile};
use fact_store_sql::search::{Filters, Rounds, Scorer, SearchCache, offer, scan, seq_key, seq_sql};

/// What a cached search does when its cache cannot follow the scope row by row (there
/// is none yet, or rows it may hold were deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cold {
    /// Load the whole scope into the cache in this read transaction.
    Load,
    /// Answer this query from the database's index, leaving the cache as it is.
    Database,
    /// Answers nothing (no [`Searched::results`]): the caller loads the cache elsewhere.
    Return,
}

/// What [`search`] answered.
#[derive(Debug)]
pub(super) struct Searched {
    /// The results; `None` only for [`Cold::Return`].
    pub(super) results: Option<Vec<ScoredFact>>,
    /// The facts it loaded into the cache when it loaded the whole scope
    /// ([`Cold::Load`]).
    pub(super) loaded: Option<usize>,
}

/// The scope's row as the search cache reads it.
#[derive(Debug, Clone, Copy)]
struct Generations {
    /// Bumped by every write.
    generation: i64,
    /// The newest generation a row a cache may hold was deleted at.
    deleted: i64,
    /// The generation of the last write that stamped its rows.
    stamped: i64,
}

impl Generations {
    fn read(tx: &Transaction<'_>, scope: i64) -> DbResult<Generations> {
        Ok(tx
            .prepare_cached(
                "SELECT generation, deleted_generation, stamped_generation FROM scopes \
                 WHERE id = ?1",
            )?
            .query_row([scope], |row| {
                Ok(Generations {
                    generation: row.get(0)?,
                    deleted: row.get(1)?,
                    stamped: row.get(2)?,
                })
            })?)
    }

    /// Whether a cache at `cached` can reach this generation with the rows changed since.
    fn followable_from(&self, cached: i64) -> bool {
        self.stamped == self.generation && self.deleted <= cached && cached < self.generation
    }
}

/// Reads the scope's valid facts into a cache, at the generation of `tx`'s snapshot.
pub(super) fn load(tx: &Transaction<'_>, scope: i64, analyzer: &Analyzer) -> DbResult<SearchCache> {
    let generation = Generations::read(tx, scope)?.generation;
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

/// Replays on `cache` the rows changed after its generation, and moves it to `to`.
fn follow(
    tx: &Transaction<'_>,
    scope: i64,
    analyzer: &Analyzer,
    cache: &mut SearchCache,
    to: i64,
) -> DbResult<()> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT seq, valid_to IS NULL, {FACT_COLUMNS} FROM facts \
         WHERE scope = ?1 AND changed_generation > ?2"
    ))?;
    let mut rows = stmt.query(params![scope, cache.generation()])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let valid: bool = row.get(1)?;
        if valid {
            cache.insert(seq, &read_fact(row, 2)?, analyzer);
        } else {
            cache.remove(seq);
        }
    }
    cache.advance(to);
    Ok(())
}

/// Answers `search` for `scope`: from `cache` when given (brought to the scope's
/// generation first, or handled as `Cold` says when it cannot follow), else from FTS5.
pub(super) fn search(
    conn: &mut Connection,
    scope: i64,
    analyzer: &Analyzer,
    cache: Option<(&Pinned<'_, Option<SearchCache>>, Cold)>,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
) -> DbResult<Searched> {
    let mut loaded = None;
    if query.limit == 0 {
        return Ok(Searched {
            results: Some(Vec::new()),
            loaded,
        });
    }
    // One read transaction: the statistics, the candidates and the facts fetched at the
    // end all come from one snapshot of the database.
    let tx = conn.transaction()?;
    let mut top = TopK::new(query.limit);
    match (query.as_of, cache) {
        (Some(at), _) => {
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
        (None, Some((pinned, cold))) => {
            let now = Generations::read(&tx, scope)?;
            // Most searches: the cache is at the snapshot's generation and is only read,
            // beside the other searches of the store.
            let read = pinned.read();
            if let Some(current) = read.as_ref()
                && current.generation() == now.generation
            {
                let deferred = current.search(analyzer, query, weighting, &mut top);
                drop(read);
                deferred.check(&mut top, passing(&tx, scope, query))?;
                return finish(tx, scope, top, loaded);
            }
            drop(read);
            // Otherwise one search at a time brings it to the snapshot (and others wait
            // to read it there), or answers from the database.
            let mut cache = pinned.lock();
            let warm = match cache.as_mut() {
                Some(current) if current.generation() == now.generation => true,
                Some(current) if now.followable_from(current.generation()) => {
                    follow(&tx, scope, analyzer, current, now.generation)?;
                    true
                }
                // A write of this store committed (and reached the cache) after this
                // search's snapshot began: the database answers for the snapshot, and the
                // cache stays where it is.
                Some(current) if current.generation() > now.generation => false,
                _ => match cold {
                    Cold::Load => {
                        *cache = None;
                        let fresh = load(&tx, scope, analyzer)?;
                        loaded = Some(fresh.len());
                        *cache = Some(fresh);
                        true
                    }
                    Cold::Database => false,
                    Cold::Return => {
                        return Ok(Searched {
                            results: None,
                            loaded,
                        });
                    }
                },
            };
            match cache.as_ref() {
                Some(current) if warm => {
                    let deferred = current.search(analyzer, query, weighting, &mut top);
                    drop(cache);
                    deferred.check(&mut top, passing(&tx, scope, query))?;
                }
                _ => {
                    drop(cache);
                    from_database(&tx, scope, analyzer, query, weighting, &mut top)?;
                }
            }
        }
        (None, None) => from_database(&tx, scope, analyzer, query, weighting, &mut top)?,
    }
    finish(tx, scope, top, loaded)
}

/// The facts of the ranked seqs, read in the search's transaction, which then ends.
fn finish(tx: Transaction<'_>, scope: i64, top: TopK, loaded: Option<usize>) -> DbResult<Searched> {
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
    Ok(Searched {
        results: Some(results),
        loaded,
    })
}

/// FTS5 finds the valid facts holding a query term (`MATCH 't12 OR t7'`), in
/// [`Rounds`] (`MATCH 't7 NOT (t12)'` once `t12`'s facts were read); each is scored from
/// its stored term document.
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
    let filters = Filters::of(query);
    // The query's filter, in the query: FTS5 finds the candidates, the filter narrows
    // them as they are read.
    let filter = query
        .filter
        .map(|filter| compile(filter, Dialect::Sqlite, 3));
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT f.seq, f.id, f.valid_from, f.tags, f.source_task_id, f.doc_len, f.terms \
         FROM fact_fts CROSS JOIN facts AS f ON f.seq = fact_fts.rowid \
         WHERE fact_fts MATCH ?1 AND f.scope = ?2 AND f.valid_to IS NULL AND {}",
        filter.as_ref().map_or("TRUE", |f| f.sql.as_str())
    ))?;
    let any = |ids: &[i64]| {
        ids.iter()
            .map(|id| format!("t{id}"))
            .collect::<Vec<_>>()
            .join(" OR ")
    };
    let mut rounds = Rounds::new(&scorer, weighting);
    while let Some((now, before)) = rounds.next(top) {
        let expression = if before.is_empty() {
            any(&now)
        } else {
            format!("({}) NOT ({})", any(&now), any(&before))
        };
        let mut values = vec![Value::Text(expression), Value::Integer(scope)];
        values.extend(filter.iter().flat_map(|f| f.params.iter().map(bind)));
        let mut rows = stmt.query(params_from_iter(values))?;
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
    }
    Ok(())
}

/// A compiled filter's parameter as SQLite binds it.
pub(super) fn bind(value: &SqlValue) -> Value {
    match value {
        SqlValue::Text(text) => Value::Text(text.clone()),
        SqlValue::Real(number) => Value::Real(*number),
        SqlValue::Int(number) => Value::Integer(*number),
        SqlValue::Bool(flag) => Value::Integer(i64::from(*flag)),
        SqlValue::Json(json) => Value::Text(json.to_string()),
    }
}

/// The database's test of a cached search's filter (see [`SearchCache::search`]): which
/// of the given seqs hold a version of `scope` the query's filter holds for, read in the
/// search's transaction.
fn passing<'t>(
    tx: &'t Transaction<'_>,
    scope: i64,
    query: &TermQuery<'_>,
) -> impl FnMut(&[i64]) -> DbResult<Vec<i64>> + 't {
    let filter = query
        .filter
        .map(|filter| compile(filter, Dialect::Sqlite, 3));
    move |seqs: &[i64]| {
        let Some(filter) = &filter else {
            return Ok(seqs.to_vec());
        };
        let list: Vec<String> = seqs.iter().map(i64::to_string).collect();
        let mut values = vec![
            Value::Integer(scope),
            Value::Text(format!("[{}]", list.join(","))),
        ];
        values.extend(filter.params.iter().map(bind));
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT f.seq FROM facts AS f \
             WHERE f.seq IN (SELECT value FROM json_each(?2)) AND f.scope = ?1 AND {}",
            filter.sql
        ))?;
        let mut rows = stmt.query(params_from_iter(values))?;
        let mut passed = Vec::new();
        while let Some(row) = rows.next()? {
            passed.push(row.get(0)?);
        }
        Ok(passed)
    }
}

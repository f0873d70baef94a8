//! `search` over PostgreSQL: the GIN index over the valid facts' `tsvector`s, and the
//! shared in-process cache of the scope's term index ([`crate::sql::search`] says how
//! both score).

use fact_model::SessionFact;
use postgres::IsolationLevel;

use super::codec::read_fact;
use super::pool::Connection;
use super::rows::prepared;
use crate::index::{TopK, distinct};
use crate::sql::codec::{FACT_COLUMNS, id_from_sql, time_from_sql};
use crate::sql::error::DbResult;
use crate::sql::search::{Filters, Rounds, Scorer, SearchCache, offer, scan, seq_key, seq_sql};
use crate::{Analyzer, ScoredFact, TermQuery, TermWeighting};

/// Answers `search` for `scope`; `cache` is used (and filled) when given.
pub(super) fn search(
    conn: &mut Connection,
    scope: i64,
    analyzer: &Analyzer,
    cache: Option<&mut Option<SearchCache>>,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
) -> DbResult<Vec<ScoredFact>> {
    if query.limit == 0 {
        return Ok(Vec::new());
    }
    let Connection { client, statements } = conn;
    // One snapshot: the statistics, the candidates and the facts fetched at the end.
    let mut tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let mut top = TopK::new(query.limit);
    match (query.as_of, cache) {
        (Some(at), _) => {
            let sql = format!(
                "SELECT seq, {FACT_COLUMNS} FROM facts WHERE scope = $1 AND valid_from <= $2 \
                 AND (valid_to IS NULL OR $2 < valid_to) ORDER BY seq"
            );
            let statement = prepared(&mut tx, statements, &sql)?;
            let mut facts: Vec<(u64, SessionFact)> = Vec::new();
            for row in tx.query(&statement, &[&scope, &at.unix_micros()])? {
                let seq: i64 = row.try_get(0)?;
                let fact = read_fact(&row, 1)?;
                if fact.is_valid_at(at) {
                    facts.push((seq_key(seq), fact));
                }
            }
            scan(&facts, analyzer, query, weighting, &mut top);
        }
        (None, Some(cache)) => {
            refresh(&mut tx, statements, scope, analyzer, cache)?;
            if let Some(cache) = cache.as_ref() {
                cache.search(analyzer, query, weighting, &mut top);
            }
        }
        (None, None) => from_database(
            &mut tx, statements, scope, analyzer, query, weighting, &mut top,
        )?,
    }
    let ranked = top.into_sorted();
    let mut results = Vec::with_capacity(ranked.len());
    if !ranked.is_empty() {
        let seqs: Vec<i64> = ranked.iter().map(|(_, seq)| seq_sql(*seq)).collect();
        let sql =
            format!("SELECT seq, {FACT_COLUMNS} FROM facts WHERE scope = $1 AND seq = ANY($2)");
        let statement = prepared(&mut tx, statements, &sql)?;
        let mut found = std::collections::HashMap::with_capacity(seqs.len());
        for row in tx.query(&statement, &[&scope, &seqs])? {
            let seq: i64 = row.try_get(0)?;
            found.insert(seq, read_fact(&row, 1)?);
        }
        // A seq may rank twice (an `as_of` search over two versions of one id), as in the
        // other stores.
        for (score, seq) in ranked {
            if let Some(fact) = found.get(&seq_sql(seq)) {
                results.push(ScoredFact {
                    fact: fact.clone(),
                    score,
                });
            }
        }
    }
    tx.commit()?;
    Ok(results)
}

/// Brings `cache` to the scope's generation in `tx`'s snapshot: nothing to do when it is
/// there; the rows changed since its generation when only inserts and changes happened
/// (other processes writing the scope); a full reload after deletions, or without a cache.
fn refresh(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut super::rows::Statements,
    scope: i64,
    analyzer: &Analyzer,
    cache: &mut Option<SearchCache>,
) -> DbResult<()> {
    let statement = prepared(
        tx,
        statements,
        "SELECT generation, deleted_generation FROM scopes WHERE id = $1",
    )?;
    let row = tx.query_one(&statement, &[&scope])?;
    let (generation, deleted): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    match cache.as_mut() {
        Some(current) if current.generation() == generation => Ok(()),
        Some(current) if deleted <= current.generation() && current.generation() < generation => {
            let sql = format!(
                "SELECT seq, valid_to IS NULL, {FACT_COLUMNS} FROM facts \
                 WHERE scope = $1 AND changed_generation > $2"
            );
            let statement = prepared(tx, statements, &sql)?;
            for row in tx.query(&statement, &[&scope, &current.generation()])? {
                let seq: i64 = row.try_get(0)?;
                let valid: bool = row.try_get(1)?;
                if valid {
                    current.insert(seq, &read_fact(&row, 2)?, analyzer);
                } else {
                    current.remove(seq);
                }
            }
            current.advance(generation);
            Ok(())
        }
        _ => {
            *cache = None;
            let mut fresh = SearchCache::new(generation);
            let sql = format!(
                "SELECT seq, {FACT_COLUMNS} FROM facts WHERE scope = $1 \
                 AND valid_to IS NULL ORDER BY seq"
            );
            let statement = prepared(tx, statements, &sql)?;
            for row in tx.query(&statement, &[&scope])? {
                fresh.insert(row.try_get(0)?, &read_fact(&row, 1)?, analyzer);
            }
            *cache = Some(fresh);
            Ok(())
        }
    }
}

/// The GIN index finds the valid facts holding a query term (`terms_tsv @@ 't12 | t7'`),
/// in [`Rounds`] (`'t7 & !(t12)'` once `t12`'s facts were read); each is scored from its
/// stored term document.
fn from_database(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut super::rows::Statements,
    scope: i64,
    analyzer: &Analyzer,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    top: &mut TopK,
) -> DbResult<()> {
    let statement = prepared(
        tx,
        statements,
        "SELECT valid_count, total_len FROM scopes WHERE id = $1",
    )?;
    let row = tx.query_one(&statement, &[&scope])?;
    let (docs, total_len): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    let analyzed = analyzer.analyze(query.text);
    let terms = distinct(&analyzed);
    let statement = prepared(
        tx,
        statements,
        "SELECT id, df FROM terms WHERE scope = $1 AND hashtextextended(term, 0) = \
         hashtextextended($2, 0) AND term = $2",
    )?;
    let mut found: Vec<(i64, usize)> = Vec::new();
    for term in &terms {
        if let Some(row) = tx.query_opt(&statement, &[&scope, term])? {
            let (id, df): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            found.push((id, usize::try_from(df).unwrap_or(0)));
        }
    }
    let docs = usize::try_from(docs).unwrap_or(0);
    let mut scorer = Scorer::new(found, docs, total_len, terms.len(), weighting);
    if scorer.is_empty() {
        return Ok(());
    }
    let filters = Filters::of(query);
    let statement = prepared(
        tx,
        statements,
        "SELECT seq, id, valid_from, tags, source_task_id, doc_len, terms FROM facts \
         WHERE scope = $1 AND valid_to IS NULL AND terms_tsv @@ to_tsquery('simple', $2)",
    )?;
    let any = |ids: &[i64]| {
        ids.iter()
            .map(|id| format!("t{id}"))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let mut rounds = Rounds::new(&scorer, weighting);
    while let Some((now, before)) = rounds.next(top) {
        let expression = if before.is_empty() {
            any(&now)
        } else {
            format!("({}) & !({})", any(&now), any(&before))
        };
        for row in tx.query(&statement, &[&scope, &expression])? {
            let document: Option<String> = row.try_get(6)?;
            let len: Option<i64> = row.try_get(5)?;
            let score = scorer.score(document.as_deref(), len.unwrap_or(0), weighting)?;
            offer(
                top,
                &filters,
                score,
                || {
                    let (seq, id, from): (i64, i64, i64) =
                        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                    Ok((seq, id_from_sql(id)?, time_from_sql(from)?))
                },
                || Ok(row.try_get(3)?),
                || Ok(row.try_get(4)?),
            )?;
        }
    }
    Ok(())
}

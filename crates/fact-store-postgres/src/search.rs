//! `search` over PostgreSQL: the GIN index over the valid facts' `tsvector`s, and the
//! shared in-process cache of the scope's term index ([`fact_store_sql::search`] says how
//! both score), locked only for work in memory: rows travel with the lock released.

use std::any::Any;

use fact_model::SessionFact;
use postgres::IsolationLevel;
use postgres::types::ToSql;

use crate::codec::read_fact;
use crate::database::PgDatabase;
use crate::error::DbResult;
use crate::error::store_error;
use crate::pool::Connection;
use crate::statements::{Statements, bind, prepared};
use fact_store::backend::{TopK, distinct};
use fact_store::{Analyzer, AnalyzerConfig, ScoredFact, StoreResult, TermQuery, TermWeighting};
use fact_store_sql::cache::{Cached, Handle, Measure, Pinned, ReloadPermit};
use fact_store_sql::codec::{FACT_COLUMNS, id_from_sql, time_from_sql};
use fact_store_sql::filter::{Dialect, compile};
use fact_store_sql::search::{
    Deferred, Filters, Rounds, Scorer, SearchCache, offer, scan, seq_key, seq_sql,
};

/// The store's search cache and whether a search is loading it whole.
#[derive(Debug, Default)]
pub(super) struct CacheSlot {
    /// The scope's term index at the generation it names, when there is one.
    pub(super) cache: Option<SearchCache>,
    /// A search is loading the whole index (with the lock released); other searches
    /// answer from the database meanwhile instead of loading it too.
    loading: bool,
}

/// The slot as its [`CacheBudget`](fact_store_sql::CacheBudget) sees it: evicted, the index goes
/// (the next search loads it again).
impl Measure for CacheSlot {
    fn heap_bytes(&self) -> usize {
        self.cache.heap_bytes()
    }

    fn evict(&mut self) -> Box<dyn Any + Send> {
        self.cache.evict()
    }
}

/// The cache slot of a search, pinned for the search's whole length: the budget never
/// evicts it meanwhile, so rows fetched with its lock released still apply.
type Slot<'p, 'c> = &'p Pinned<'c, CacheSlot>;

/// Clears [`CacheSlot::loading`] when a load ends, whether it succeeded or failed.
struct Loading<'p, 'c>(Slot<'p, 'c>);

impl Drop for Loading<'_, '_> {
    fn drop(&mut self) {
        self.0.lock().loading = false;
    }
}

/// What a search does next with the cache, decided under its lock.
enum Step {
    /// Fetch the rows changed since this generation.
    Changes(i64),
    /// Load the scope's valid facts whole.
    Load,
}

/// Answers `search` for `scope`; `cache` is used (and filled) when given.
pub(super) fn search(
    conn: &mut Connection,
    scope: i64,
    analyzer: &Analyzer,
    cache: Option<Slot<'_, '_>>,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
) -> DbResult<Vec<ScoredFact>> {
    if query.limit == 0 {
        return Ok(Vec::new());
    }
    let Connection {
        client, statements, ..
    } = conn;
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
        (None, Some(slot)) => {
            let statement = prepared(
                &mut tx,
                statements,
                "SELECT generation, deleted_generation FROM scopes WHERE id = $1",
            )?;
            let row = tx.query_one(&statement, &[&scope])?;
            let at = Generation {
                now: row.try_get(0)?,
                deleted: row.try_get(1)?,
            };
            let answered = from_cache(
                &mut tx, statements, scope, analyzer, slot, at, query, weighting, &mut top,
            )?;
            match answered {
                // The cache's lock is released: the filter's test reads the database.
                Some(deferred) => {
                    deferred.check(&mut top, |seqs| {
                        passing(&mut tx, statements, scope, query, seqs)
                    })?;
                }
                None => from_database(
                    &mut tx, statements, scope, analyzer, query, weighting, &mut top,
                )?,
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

/// The scope's generation in a search's snapshot, and the last one that deleted rows.
#[derive(Debug, Clone, Copy)]
struct Generation {
    now: i64,
    deleted: i64,
}

/// Scores the query against the cache once it mirrors the snapshot's generation, first
/// bringing it there: nothing to do when it is there; the rows changed since its
/// generation when only inserts and changes happened (other processes writing the
/// scope); a whole load after deletions, or without a cache.
///
/// The lock is held only to look at the cache, change it, or search it in memory; the
/// rows are fetched with it released, and applied only if the cache is still where it was
/// when they were asked for, so a search stalled on the network never holds up another.
/// `None` when the cache cannot answer for this snapshot (it is newer, or another search
/// is loading it whole): the database answers then, with the same results. Otherwise the
/// candidates whose filter the database must still test ([`Deferred`]).
#[allow(clippy::too_many_arguments)]
fn from_cache(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut Statements,
    scope: i64,
    analyzer: &Analyzer,
    slot: Slot<'_, '_>,
    at: Generation,
    query: &TermQuery<'_>,
    weighting: &dyn TermWeighting,
    top: &mut TopK,
) -> DbResult<Option<Deferred>> {
    // Each round answers, or brings the cache to the snapshot's generation unless
    // another search moved it meanwhile; three rounds are plenty.
    for _ in 0..3 {
        let step = {
            let mut held = slot.lock();
            match held.cache.as_ref() {
                Some(cache) if cache.generation() == at.now => {
                    return Ok(Some(cache.search(analyzer, query, weighting, top)));
                }
                Some(cache) if cache.generation() > at.now => return Ok(None),
                Some(cache) if at.deleted <= cache.generation() => {
                    Step::Changes(cache.generation())
                }
                _ if held.loading => return Ok(None),
                _ => {
                    // The old index goes now: one index in memory at a time.
                    held.cache = None;
                    held.loading = true;
                    Step::Load
                }
            }
        };
        match step {
            Step::Changes(since) => {
                let changes = changed_since(tx, statements, scope, since)?;
                let mut held = slot.lock();
                if let Some(cache) = held.cache.as_mut()
                    && cache.generation() == since
                {
                    for (seq, fact) in changes {
                        match fact {
                            Some(fact) => cache.insert(seq, &fact, analyzer),
                            None => cache.remove(seq),
                        }
                    }
                    cache.advance(at.now);
                }
            }
            Step::Load => {
                let _loading = Loading(slot);
                let fresh = load(tx, statements, scope, analyzer, at.now)?;
                tracing::debug!(scope, facts = fresh.len(), "search cache loaded the scope");
                let mut held = slot.lock();
                if held
                    .cache
                    .as_ref()
                    .is_none_or(|cache| cache.generation() < at.now)
                {
                    held.cache = Some(fresh);
                }
            }
        }
    }
    Ok(None)
}

/// Which of `seqs` hold a version of `scope` that the query's filter holds for (all of
/// them without a filter), read in the search's snapshot.
fn passing(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut Statements,
    scope: i64,
    query: &TermQuery<'_>,
    seqs: &[i64],
) -> DbResult<Vec<i64>> {
    let Some(filter) = query.filter else {
        return Ok(seqs.to_vec());
    };
    let compiled = compile(filter, Dialect::Postgres, 3);
    let sql = format!(
        "SELECT f.seq FROM facts AS f WHERE f.scope = $1 AND f.seq = ANY($2) AND {}",
        compiled.sql
    );
    let seqs = seqs.to_vec();
    let mut values: Vec<Box<dyn ToSql + Sync>> = vec![Box::new(scope), Box::new(seqs)];
    values.extend(bind(&compiled.params));
    let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(AsRef::as_ref).collect();
    let statement = prepared(tx, statements, &sql)?;
    let mut passed = Vec::new();
    for row in tx.query(&statement, &refs)? {
        passed.push(row.try_get(0)?);
    }
    Ok(passed)
}

/// The versions of the scope changed since generation `since`: each seq with its fact
/// when the version is valid, `None` when it no longer is.
fn changed_since(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut Statements,
    scope: i64,
    since: i64,
) -> DbResult<Vec<(i64, Option<SessionFact>)>> {
    let sql = format!(
        "SELECT seq, valid_to IS NULL, {FACT_COLUMNS} FROM facts \
         WHERE scope = $1 AND changed_generation > $2"
    );
    let statement = prepared(tx, statements, &sql)?;
    let mut changes = Vec::new();
    for row in tx.query(&statement, &[&scope, &since])? {
        let seq: i64 = row.try_get(0)?;
        let valid: bool = row.try_get(1)?;
        let fact = if valid {
            Some(read_fact(&row, 2)?)
        } else {
            None
        };
        changes.push((seq, fact));
    }
    Ok(changes)
}

/// The scope's valid facts as a cache of `generation`.
fn load(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut Statements,
    scope: i64,
    analyzer: &Analyzer,
    generation: i64,
) -> DbResult<SearchCache> {
    let mut fresh = SearchCache::new(generation);
    let sql = format!(
        "SELECT seq, {FACT_COLUMNS} FROM facts WHERE scope = $1 \
         AND valid_to IS NULL ORDER BY seq"
    );
    let statement = prepared(tx, statements, &sql)?;
    for row in tx.query(&statement, &[&scope])? {
        fresh.insert(row.try_get(0)?, &read_fact(&row, 1)?, analyzer);
    }
    Ok(fresh)
}

/// The GIN index finds the valid facts holding a query term (`terms_tsv @@ 't12 | t7'`),
/// in [`Rounds`] (`'t7 & !(t12)'` once `t12`'s facts were read); each is scored from its
/// stored term document.
fn from_database(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut Statements,
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
    // The query's filter, in the query: the GIN index finds the candidates, the filter
    // narrows them as they are read.
    let filter = query
        .filter
        .map(|filter| compile(filter, Dialect::Postgres, 3));
    let statement = prepared(
        tx,
        statements,
        &format!(
            "SELECT f.seq, f.id, f.valid_from, f.tags, f.source_task_id, f.doc_len, f.terms \
             FROM facts AS f WHERE f.scope = $1 AND f.valid_to IS NULL \
             AND f.terms_tsv @@ to_tsquery('simple', $2) AND {}",
            filter.as_ref().map_or("TRUE", |f| f.sql.as_str())
        ),
    )?;
    let filter_values = filter.as_ref().map(|f| bind(&f.params)).unwrap_or_default();
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
        let mut refs: Vec<&(dyn ToSql + Sync)> = vec![&scope, &expression];
        refs.extend(filter_values.iter().map(AsRef::as_ref));
        for row in tx.query(&statement, &refs)? {
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

/// What a search does about an evicted cache: [`evicted`].
pub(super) enum Evicted {
    /// The cache was not evicted (or is back): search with it.
    No,
    /// Answer from the GIN index; the cache is reloading already, or the budget's
    /// reloads are all taken (a later search tries again).
    Answer,
    /// Answer from the GIN index, then start this reload.
    Reload(Reload),
}

/// Whether `cache` was evicted, and if so the reload this search starts once it answered.
pub(super) fn evicted(
    database: &PgDatabase,
    scope: i64,
    analyzer: &Analyzer,
    cache: &Cached<CacheSlot>,
) -> Evicted {
    if !cache.evicted() {
        return Evicted::No;
    }
    let pinned = cache.pin();
    let mut held = pinned.lock();
    if held.cache.is_some() {
        return Evicted::No;
    }
    if held.loading {
        return Evicted::Answer;
    }
    let Some(permit) = cache.budget().reload_permit() else {
        return Evicted::Answer;
    };
    held.loading = true;
    Evicted::Reload(Reload {
        job: Some((
            database.clone(),
            scope,
            analyzer.config(),
            cache.handle(),
            permit,
        )),
    })
}

/// An evicted cache to load again on a thread of its own; dropped unstarted, it lets the
/// next search try.
pub(super) struct Reload {
    job: Option<(
        PgDatabase,
        i64,
        AnalyzerConfig,
        Handle<CacheSlot>,
        ReloadPermit,
    )>,
}

impl Drop for Reload {
    fn drop(&mut self) {
        if let Some((_, _, _, handle, _)) = &self.job {
            handle.with(|slot| slot.loading = false);
        }
    }
}

impl Reload {
    /// Loads the scope on a pooled connection in a thread of its own, and installs the
    /// cache (charged to the budget) unless a newer one is there by then.
    pub(super) fn start(mut self) {
        let Some((database, scope, config, handle, permit)) = self.job.take() else {
            return;
        };
        let on_failure = handle.clone();
        let reload = move || {
            let loaded = load_now(&database, scope, &Analyzer::new(config));
            {
                let pinned = handle.pin();
                let mut held = pinned.lock();
                held.loading = false;
                match loaded {
                    Ok(fresh) => {
                        tracing::debug!(
                            scope,
                            facts = fresh.len(),
                            "evicted search cache reloaded"
                        );
                        if held
                            .cache
                            .as_ref()
                            .is_none_or(|cache| cache.generation() < fresh.generation())
                        {
                            held.cache = Some(fresh);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(scope, %error, "reloading the search cache failed");
                    }
                }
                // The lock's release charges the cache to the budget (evicting others).
            }
            // Released only once the cache is in place and charged (or failed), so a
            // budget with no reload running has settled, as on SQLite.
            drop(permit);
        };
        if let Err(error) = std::thread::Builder::new()
            .name("factmem-cache-reload".to_owned())
            .spawn(reload)
        {
            tracing::warn!(scope, %error, "no thread to reload the search cache");
            on_failure.with(|slot| slot.loading = false);
        }
    }
}

/// The scope's cache, read whole on a pooled connection in one snapshot.
fn load_now(database: &PgDatabase, scope: i64, analyzer: &Analyzer) -> StoreResult<SearchCache> {
    let mut pooled = database.connection()?;
    let conn = database.held(&mut pooled)?;
    let run = |conn: &mut Connection| -> DbResult<SearchCache> {
        let Connection {
            client, statements, ..
        } = conn;
        let mut tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let statement = prepared(
            &mut tx,
            statements,
            "SELECT generation FROM scopes WHERE id = $1",
        )?;
        let generation: i64 = tx.query_one(&statement, &[&scope])?.try_get(0)?;
        let fresh = load(&mut tx, statements, scope, analyzer, generation)?;
        tx.commit()?;
        Ok(fresh)
    };
    run(conn).map_err(|e| e.into_store_with(database.location(), store_error))
}

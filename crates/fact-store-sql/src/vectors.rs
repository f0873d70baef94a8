//! What the SQL stores' [`FactVectors`](fact_store::FactVectors) share: the encoding of an
//! embedding in a row, the validation of a `put_embeddings` call, and the in-process
//! index a store object searches ([`VectorCache`]).
//!
//! # Rows
//!
//! Each store keeps an `embeddings` table: `(scope, model, fact)` is the key, `dimension`
//! the vector's length and `vector` its values as little-endian `f32` bytes (unit length,
//! normalized before they are stored), and `seq` a number that grows with every row
//! written (an insert or a replacement), so a reader that has seen every row up to `seq`
//! fetches only the rows after it. Deleting a fact's every version deletes its rows in
//! the same transaction.
//!
//! # The cache
//!
//! A [`VectorCache`] holds one [`VectorIndex`] per model a search asked for, loaded at
//! that model's first search and brought up to date at each later one with the rows whose
//! `seq` is newer than the newest it holds. So a search sees every embedding committed
//! before it began, whichever process or store object wrote it.
//!
//! The index ranks candidates; whether a candidate may be returned is decided by the
//! database after that load, for all candidates of a round in one query
//! ([`VectorReads::candidates`]): the fact must be valid now and pass the query's
//! filters, and its embedding row must still exist. A row that is gone (its fact was
//! deleted) is dropped from the index then, so deletions need no reload: a vector that
//! never ranks costs memory, never a wrong answer. When too few candidates of a round
//! pass, the next round asks the index for twice as many.
//!
//! # Token vectors
//!
//! Each store also keeps a `token_vectors` table: `(scope, fact, model)` is the key (a
//! fact's rows found by `(scope, fact)` when its last version is deleted, in the same
//! transaction as its embeddings) and `tokens` the bytes of [`TokenVectors::as_bytes`].
//! No index in memory: a late-interaction scorer reads the token vectors of the few
//! candidates a search returned, all in one query, and [`TokenRows`] checks a write and
//! puts what was read back in the caller's order.

use std::any::Any;
use std::collections::{HashMap, HashSet};

use fact_model::{FactId, SessionFact};

use super::codec::{id_from_sql, id_to_sql};
use super::error::{DbError, DbResult};
use crate::cache::Measure;
use fact_store::backend::{VectorIndex, check_token_model, unit_query, unit_vector};
use fact_store::backend::{chunk, map_bytes};
use fact_store::{
    ScoredFact, StoreError, StoreResult, TokenVectorStats, TokenVectors, VectorQuery,
};

/// What receives the embedding rows a backend reads: `(seq, fact id as stored, vector
/// bytes)`.
pub type EachRow<'a, E> = dyn FnMut(i64, i64, &[u8]) -> DbResult<(), E> + 'a;

/// The reads of one read transaction that a vector search needs from a backend.
pub trait VectorReads<E> {
    /// Calls `each` with `(seq, fact id as stored, vector bytes)` for every embedding of
    /// `model` in the scope whose `seq` is greater than `after`, in `seq` order.
    fn embeddings_after(
        &mut self,
        model: &str,
        after: i64,
        each: &mut EachRow<'_, E>,
    ) -> DbResult<(), E>;

    /// For each of `ids` (as stored) that still has an embedding by `model` in the scope:
    /// the id and its valid version (`None` when no version of it is valid).
    fn candidates(
        &mut self,
        model: &str,
        ids: &[i64],
    ) -> DbResult<Vec<(i64, Option<SessionFact>)>, E>;
}

/// One model's index and the newest row it holds.
#[derive(Debug)]
pub struct Loaded {
    /// `None` until the model's first row (which fixes the dimension).
    index: Option<VectorIndex>,
    /// The greatest `seq` loaded (0: none).
    seen: i64,
}

impl Loaded {
    /// An index of no rows.
    fn empty() -> Self {
        Loaded {
            index: None,
            seen: 0,
        }
    }

    /// Adds the rows `reads` gives after the newest this index holds.
    fn read<E>(&mut self, reads: &mut dyn VectorReads<E>, model: &str) -> DbResult<(), E> {
        let mut unit = Vec::new();
        let after = self.seen;
        reads.embeddings_after(model, after, &mut |seq, id, bytes| {
            let dimension = bytes.len() / 4;
            decode(bytes, dimension, &mut unit)?;
            self.add(seq, id_from_sql(id)?, &unit);
            Ok(())
        })
    }

    /// Adds the row `seq` (newer than every row the index holds): `id`'s unit vector.
    fn add(&mut self, seq: i64, id: FactId, unit: &[f32]) {
        // Another dimension than the index's: every earlier vector of the model was
        // deleted (a stored dimension binds every later vector), so start afresh.
        let index = match self.index.as_mut() {
            Some(index) if index.dimension() == unit.len() => index,
            _ => self.index.insert(VectorIndex::new(unit.len())),
        };
        index.upsert(id, unit);
        self.seen = self.seen.max(seq);
    }
}

/// A model's rows read after the newest a [`VectorCache`] held, with no lock held, to be
/// applied to it by [`VectorCache::merge`].
#[derive(Debug)]
pub enum Fetched {
    /// Every row: the cache held none (an index built whole, so a first load never
    /// holds every row twice).
    Whole(Loaded),
    /// The rows after `after`, in `seq` order: `(seq, id, unit vector)`.
    After {
        /// The newest `seq` the cache held.
        after: i64,
        /// The rows after it.
        rows: Vec<(i64, FactId, Vec<f32>)>,
    },
}

/// A store object's in-process vector indexes, one per model searched so far.
#[derive(Debug, Default)]
pub struct VectorCache {
    models: HashMap<String, Loaded>,
}

/// The first round's candidates for a search of `limit`: enough that a few invalid or
/// filtered facts among the nearest rarely need a second round.
fn first_round(limit: usize) -> usize {
    limit.saturating_mul(3).saturating_add(16)
}

/// A store's vector indexes as its [`CacheBudget`](crate::CacheBudget) sees them:
/// evicted, every model's index goes, and the next search of a model loads it whole.
impl Measure for VectorCache {
    fn heap_bytes(&self) -> usize {
        map_bytes::<String, Loaded>(self.models.capacity())
            + self
                .models
                .iter()
                .map(|(model, loaded)| {
                    chunk(model.capacity())
                        + loaded.index.as_ref().map_or(0, VectorIndex::heap_bytes)
                })
                .sum::<usize>()
    }

    fn evict(&mut self) -> Box<dyn Any + Send> {
        Box::new(std::mem::take(&mut self.models))
    }
}

impl VectorCache {
    /// Brings `model`'s index up to date with the rows `reads` sees.
    fn refresh<E>(&mut self, reads: &mut dyn VectorReads<E>, model: &str) -> DbResult<(), E> {
        self.models
            .entry(model.to_owned())
            .or_insert_with(Loaded::empty)
            .read(reads, model)
    }

    /// The newest row of `model` the cache holds (0: none), after which
    /// [`fetch`](Self::fetch) reads.
    pub fn seen(&self, model: &str) -> i64 {
        self.models.get(model).map_or(0, |loaded| loaded.seen)
    }

    /// Reads `model`'s rows after `after` (what [`seen`](Self::seen) said), for a caller
    /// that holds no lock on the cache meanwhile.
    pub fn fetch<E>(
        reads: &mut dyn VectorReads<E>,
        model: &str,
        after: i64,
    ) -> DbResult<Fetched, E> {
        if after == 0 {
            let mut whole = Loaded::empty();
            whole.read(reads, model)?;
            return Ok(Fetched::Whole(whole));
        }
        let mut rows = Vec::new();
        reads.embeddings_after(model, after, &mut |seq, id, bytes| {
            let mut unit = Vec::new();
            decode(bytes, bytes.len() / 4, &mut unit)?;
            rows.push((seq, id_from_sql(id)?, unit));
            Ok(())
        })?;
        Ok(Fetched::After { after, rows })
    }

    /// Applies what [`fetch`](Self::fetch) read, as far as it is newer than what the
    /// cache holds now (another search may have brought it further meanwhile): rows are
    /// a prefix in `seq` order, so the newest seen decides.
    pub fn merge(&mut self, model: &str, fetched: Fetched) {
        match fetched {
            Fetched::Whole(whole) => match self.models.get_mut(model) {
                Some(loaded) if loaded.seen >= whole.seen => {}
                Some(loaded) => *loaded = whole,
                None => {
                    self.models.insert(model.to_owned(), whole);
                }
            },
            Fetched::After { after, rows } => {
                // Rows after `after` extend only an index that holds every row up to it.
                if let Some(loaded) = self.models.get_mut(model)
                    && loaded.seen >= after
                {
                    for (seq, id, unit) in rows {
                        if seq > loaded.seen {
                            loaded.add(seq, id, &unit);
                        }
                    }
                }
            }
        }
    }

    /// The `wanted` nearest ids of `model`'s index to `query`, best first; `None` when the
    /// model has no index or the query another dimension.
    pub fn rank(&self, query: &VectorQuery<'_>, wanted: usize) -> Option<Vec<(FactId, f32)>> {
        let index = self.models.get(query.model)?.index.as_ref()?;
        let unit = unit_query(query.vector, index.dimension())?;
        Some(index.nearest(&unit, wanted, &mut |_| true))
    }

    /// Drops from `model`'s index the ids whose rows are gone.
    pub fn forget(&mut self, model: &str, gone: &[FactId]) {
        if let Some(index) = self
            .models
            .get_mut(model)
            .and_then(|loaded| loaded.index.as_mut())
        {
            for id in gone {
                index.remove(*id);
            }
        }
    }

    /// The valid facts nearest `query`, best first, as
    /// [`FactVectors::nearest`](fact_store::FactVectors::nearest) answers: the index brought
    /// up to date, then [`rounds`] over it (for a caller that holds the cache throughout).
    pub fn nearest<E>(
        &mut self,
        reads: &mut dyn VectorReads<E>,
        query: &VectorQuery<'_>,
    ) -> DbResult<Vec<ScoredFact>, E> {
        if query.limit == 0 {
            return Ok(Vec::new());
        }
        self.refresh(reads, query.model)?;
        let (found, gone) = rounds(query, &mut |wanted| self.rank(query, wanted), reads)?;
        self.forget(query.model, &gone);
        Ok(found)
    }
}

/// The rounds of a vector search: `rank` gives the nearest `wanted` ids of the index
/// (`None`: nothing to search), `reads` checks the candidates in the database, and the
/// next round asks for twice as many until enough pass. Returns the results and the ids
/// whose rows are gone (for [`VectorCache::forget`]).
pub fn rounds<E>(
    query: &VectorQuery<'_>,
    rank: &mut dyn FnMut(usize) -> Option<Vec<(FactId, f32)>>,
    reads: &mut dyn VectorReads<E>,
) -> DbResult<(Vec<ScoredFact>, Vec<FactId>), E> {
    // Facts fetched so far: `Some` when the candidate may be returned.
    let mut decided: HashMap<FactId, Option<SessionFact>> = HashMap::new();
    let mut gone: Vec<FactId> = Vec::new();
    let mut wanted = first_round(query.limit);
    loop {
        let Some(ranked) = rank(wanted) else {
            return Ok((Vec::new(), gone));
        };
        let fetch: Vec<i64> = ranked
            .iter()
            .filter(|(id, _)| !decided.contains_key(id))
            .map(|(id, _)| id_to_sql(*id))
            .collect();
        if !fetch.is_empty() {
            let mut present = HashSet::with_capacity(fetch.len());
            for (id, fact) in reads.candidates(query.model, &fetch)? {
                let id = id_from_sql(id)?;
                present.insert(id);
                let fact = fact.filter(|fact| fact.is_valid() && accepts(query, fact));
                decided.insert(id, fact);
            }
            for id in fetch {
                let id = id_from_sql(id)?;
                if !present.contains(&id) {
                    // The row is gone: its fact was deleted.
                    decided.insert(id, None);
                    gone.push(id);
                }
            }
        }
        let results: Vec<ScoredFact> = ranked
            .iter()
            .filter_map(|(id, score)| {
                decided
                    .get(id)
                    .and_then(Option::as_ref)
                    .map(|fact| ScoredFact {
                        fact: fact.clone(),
                        score: f64::from(*score),
                    })
            })
            .take(query.limit)
            .collect();
        if results.len() >= query.limit || ranked.len() < wanted {
            return Ok((results, gone));
        }
        wanted = wanted.saturating_mul(2);
    }
}

/// The embeddings of a `put_embeddings` call, validated and encoded.
#[derive(Debug, PartialEq)]
pub struct Prepared {
    /// `(id as stored, little-endian unit vector)`, one per id (a later vector of an id
    /// replaces an earlier one), in the order of first appearance.
    pub rows: Vec<(i64, Vec<u8>)>,
    /// The dimension every vector has (0 when there are none).
    pub dimension: usize,
    /// The first fact of the call, which a dimension mismatch names.
    first: Option<FactId>,
}

impl Prepared {
    /// Validates and normalizes every vector of a call before anything is stored: the
    /// model identity, each vector's values, and that all share the first one's
    /// dimension.
    pub fn new(model: &str, embeddings: Vec<(FactId, Vec<f32>)>) -> StoreResult<Self> {
        let mut dimension = None;
        let mut rows: Vec<(i64, Vec<u8>)> = Vec::with_capacity(embeddings.len());
        let mut at: HashMap<FactId, usize> = HashMap::with_capacity(embeddings.len());
        let first = embeddings.first().map(|(id, _)| *id);
        for (id, vector) in embeddings {
            let unit = unit_vector(model, id, &vector, dimension)?;
            dimension = Some(unit.len());
            let bytes = encode(&unit);
            match at.get(&id).and_then(|&slot| rows.get_mut(slot)) {
                Some(earlier) => earlier.1 = bytes,
                None => {
                    at.insert(id, rows.len());
                    rows.push((id_to_sql(id), bytes));
                }
            }
        }
        Ok(Prepared {
            rows,
            dimension: dimension.unwrap_or(0),
            first,
        })
    }

    /// Checks the vectors against the dimension of `model`'s vectors already stored in
    /// the scope (read in the writing transaction; `None`: none yet).
    pub fn check_dimension(&self, model: &str, stored: Option<usize>) -> StoreResult<()> {
        match (self.first, stored) {
            (Some(id), Some(expected)) if expected != self.dimension => {
                Err(StoreError::InvalidEmbedding {
                    id,
                    reason: format!(
                        "model `{model}` has {expected}-dimensional embeddings, this one has {}",
                        self.dimension
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// The dimension as a column value.
    // SQLite binds it; PostgreSQL casts in SQL.
    pub fn dimension_sql(&self) -> i64 {
        i64::try_from(self.dimension).unwrap_or(i64::MAX)
    }
}

/// A vector as stored: its values as little-endian `f32` bytes.
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector of `dimension` values, into `out`.
pub fn decode<E>(bytes: &[u8], dimension: usize, out: &mut Vec<f32>) -> DbResult<(), E> {
    if dimension == 0 || bytes.len() != dimension.saturating_mul(4) {
        return Err(DbError::Corrupt(format!(
            "a stored embedding of {} bytes where {dimension} values were expected",
            bytes.len()
        )));
    }
    out.clear();
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap_or([0; 4]))),
    );
    if out.iter().any(|x| !x.is_finite()) {
        return Err(DbError::Corrupt(
            "a stored embedding holds a value that is not finite".into(),
        ));
    }
    Ok(())
}

/// The token vectors of a `put_token_vectors` call, checked and encoded.
#[derive(Debug, PartialEq)]
pub struct TokenRows {
    /// `(id as stored, bytes)`, one per id (a later value of an id replaces an earlier
    /// one), in the order of first appearance.
    pub rows: Vec<(i64, Vec<u8>)>,
}

impl TokenRows {
    /// Checks the model identity (as the in-memory store does, before anything is
    /// stored) and keeps one value per id.
    pub fn new(model: &str, tokens: Vec<(FactId, TokenVectors)>) -> StoreResult<Self> {
        if let Some((id, _)) = tokens.first() {
            check_token_model(model, *id)?;
        }
        let mut rows: Vec<(i64, Vec<u8>)> = Vec::with_capacity(tokens.len());
        let mut at: HashMap<FactId, usize> = HashMap::with_capacity(tokens.len());
        for (id, vectors) in tokens {
            let bytes = vectors.into_bytes();
            match at.get(&id).and_then(|&slot| rows.get_mut(slot)) {
                Some(earlier) => earlier.1 = bytes,
                None => {
                    at.insert(id, rows.len());
                    rows.push((id_to_sql(id), bytes));
                }
            }
        }
        Ok(TokenRows { rows })
    }

    /// `ids` as stored, each once, in their order: what a `token_vectors` read asks for.
    pub fn wanted(ids: &[FactId]) -> Vec<i64> {
        let mut seen = HashSet::with_capacity(ids.len());
        ids.iter()
            .filter(|id| seen.insert(**id))
            .map(|id| id_to_sql(*id))
            .collect()
    }

    /// The rows read for `wanted` (`(id as stored, bytes)`, in any order), decoded, in the
    /// order of `wanted`; bytes that are not token vectors are a corrupt row.
    pub fn in_order<E>(
        wanted: &[i64],
        read: Vec<(i64, Vec<u8>)>,
    ) -> DbResult<Vec<(FactId, TokenVectors)>, E> {
        let mut read: HashMap<i64, Vec<u8>> = read.into_iter().collect();
        wanted
            .iter()
            .filter_map(|id| Some((*id, read.remove(id)?)))
            .map(|(id, bytes)| {
                let id = id_from_sql(id)?;
                let vectors = TokenVectors::from_bytes(bytes).map_err(|e| {
                    DbError::Corrupt(format!("stored token vectors of fact {id}: {}", e.reason()))
                })?;
                Ok((id, vectors))
            })
            .collect()
    }

    /// The stats of `facts` rows holding `bytes` bytes, as the database counted them.
    pub fn stats(facts: i64, bytes: i64) -> TokenVectorStats {
        TokenVectorStats::new(count(facts), u64::try_from(bytes).unwrap_or(0))
    }
}

/// A count from the database as a `usize`.
pub fn count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// Whether `fact` passes the filters of `query` (validity is the caller's).
fn accepts(query: &VectorQuery<'_>, fact: &SessionFact) -> bool {
    query
        .tags
        .is_none_or(|wanted| fact.tags().contains_any(wanted))
        && query.exclude_source_task != Some(fact.source_task_id())
        && query.filter.is_none_or(|filter| filter.matches(fact))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    use fact_model::{SourceRole, Tag, Timestamp};

    /// Rows and valid facts in memory, counting the candidate queries.
    #[derive(Default)]
    struct Fake {
        rows: Vec<(i64, i64, Vec<u8>)>,
        valid: HashMap<i64, SessionFact>,
        queries: usize,
    }

    impl VectorReads<()> for Fake {
        fn embeddings_after(
            &mut self,
            _: &str,
            after: i64,
            each: &mut EachRow<'_, ()>,
        ) -> DbResult<(), ()> {
            for (seq, id, bytes) in self.rows.iter().filter(|row| row.0 > after) {
                each(*seq, *id, bytes)?;
            }
            Ok(())
        }

        fn candidates(
            &mut self,
            _: &str,
            ids: &[i64],
        ) -> DbResult<Vec<(i64, Option<SessionFact>)>, ()> {
            self.queries += 1;
            Ok(ids
                .iter()
                .filter(|id| self.rows.iter().any(|row| row.1 == **id))
                .map(|id| (*id, self.valid.get(id).cloned()))
                .collect())
        }
    }

    fn fact(n: usize) -> SessionFact {
        SessionFact::builder(format!("s{n}"), "r", "o")
            .tag(Tag::Decision)
            .source("1", SourceRole::Implementer)
            .valid_from(Timestamp::from_unix_secs(0).unwrap())
            .build()
            .unwrap()
    }

    #[test]
    fn rounds_grow_until_enough_valid_facts_and_gone_rows_leave_the_index() {
        // 100 vectors, the nearer the query the smaller `n`; only the 5 farthest are valid.
        let mut reads = Fake::default();
        for n in 0..100 {
            let id = id_to_sql(fact(n).id());
            let y = n as f32 / 10.0;
            let norm = (1.0 + y * y).sqrt();
            reads
                .rows
                .push((n as i64 + 1, id, encode(&[1.0 / norm, y / norm])));
            if n >= 95 {
                reads.valid.insert(id, fact(n));
            }
        }
        let mut cache = VectorCache::default();
        let query = VectorQuery::new("m", &[1.0, 0.0], 3);
        let found = cache.nearest(&mut reads, &query).unwrap();
        let subjects: Vec<&str> = found.iter().map(|s| s.fact.subject()).collect();
        assert_eq!(subjects, ["s95", "s96", "s97"]);
        assert_eq!(reads.queries, 3, "25, 50, then 100 candidates");
        // The row of `s95` is deleted: it is not found, and leaves the index.
        let gone = id_to_sql(fact(95).id());
        reads.rows.retain(|row| row.1 != gone);
        let found = cache.nearest(&mut reads, &query).unwrap();
        let subjects: Vec<&str> = found.iter().map(|s| s.fact.subject()).collect();
        assert_eq!(subjects, ["s96", "s97", "s98"]);
        let index = cache
            .models
            .get("m")
            .and_then(|m| m.index.as_ref())
            .unwrap();
        assert_eq!(index.len(), 99);
        // A query of another dimension finds nothing.
        let other = VectorQuery::new("m", &[1.0, 0.0, 0.0], 3);
        assert!(cache.nearest(&mut reads, &other).unwrap().is_empty());
    }

    #[test]
    fn token_rows_keep_one_value_per_id_and_read_back_in_the_order_asked() {
        use fact_store::TokenEncoding;

        let a = FactId::for_triple("a", "b", "c");
        let b = FactId::for_triple("d", "e", "f");
        let one = TokenVectors::encode(TokenEncoding::Int8, 2, &[1.0, 0.0]).unwrap();
        let two = TokenVectors::encode(TokenEncoding::Binary, 2, &[0.0, 1.0]).unwrap();
        let rows = TokenRows::new(
            "m",
            vec![(a, one.clone()), (b, one.clone()), (a, two.clone())],
        )
        .unwrap();
        assert_eq!(
            rows.rows,
            [
                (id_to_sql(a), two.as_bytes().to_vec()),
                (id_to_sql(b), one.as_bytes().to_vec())
            ]
        );
        let err = TokenRows::new("", vec![(a, one.clone())]).unwrap_err();
        assert_eq!(err.code(), "invalid_embedding");
        assert!(TokenRows::new("", Vec::new()).unwrap().rows.is_empty());

        let wanted = TokenRows::wanted(&[b, a, b]);
        assert_eq!(wanted, [id_to_sql(b), id_to_sql(a)]);
        let read = vec![
            (id_to_sql(a), two.as_bytes().to_vec()),
            (id_to_sql(b), one.as_bytes().to_vec()),
        ];
        assert_eq!(
            TokenRows::in_order::<()>(&wanted, read).unwrap(),
            [(b, one), (a, two)]
        );
        let corrupt = TokenRows::in_order::<()>(&wanted, vec![(id_to_sql(a), vec![1, 2])]);
        assert!(matches!(corrupt, Err(DbError::Corrupt(_))));
        assert_eq!(TokenRows::stats(2, 30), TokenVectorStats::new(2, 30));
    }

    #[test]
    fn vectors_round_trip_through_their_bytes() {
        let vector = [0.6_f32, -0.8, 0.0];
        let bytes = encode(&vector);
        assert_eq!(bytes.len(), 12);
        let mut out = Vec::new();
        decode::<()>(&bytes, 3, &mut out).unwrap();
        assert_eq!(out, vector);
        assert!(decode::<()>(&bytes, 4, &mut out).is_err());
        assert!(decode::<()>(&encode(&[f32::NAN]), 1, &mut out).is_err());
    }

    #[test]
    fn prepare_checks_everything_and_keeps_one_vector_per_id() {
        let a = FactId::for_triple("a", "b", "c");
        let b = FactId::for_triple("d", "e", "f");
        let prepared = Prepared::new(
            "m",
            vec![
                (a, vec![3.0, 4.0]),
                (b, vec![1.0, 0.0]),
                (a, vec![0.0, 2.0]),
            ],
        )
        .unwrap();
        assert_eq!(prepared.dimension, 2);
        assert_eq!(
            prepared.rows,
            [
                (id_to_sql(a), encode(&[0.0, 1.0])),
                (id_to_sql(b), encode(&[1.0, 0.0]))
            ]
        );
        assert!(prepared.check_dimension("m", Some(2)).is_ok());
        assert!(prepared.check_dimension("m", None).is_ok());
        let err = prepared.check_dimension("m", Some(3)).unwrap_err();
        assert_eq!(err.code(), "invalid_embedding");
        let err = Prepared::new("m", vec![(a, vec![1.0]), (b, vec![1.0, 2.0])]).unwrap_err();
        assert_eq!(err.code(), "invalid_embedding");
        let err = Prepared::new("", vec![(a, vec![1.0])]).unwrap_err();
        assert_eq!(err.code(), "invalid_embedding");
    }
}

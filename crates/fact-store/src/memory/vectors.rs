//! [`FactVectors`] for the in-memory store: the embeddings live in the state's
//! [`ModelIndexes`](crate::vector::ModelIndexes), under the store's one lock, keyed by
//! fact id; the search's filter reads the id's valid record (no fact is built for a
//! candidate that loses).

use fact_model::{FactId, SessionFact, Timestamp};

use super::InMemorySessionFactStore;
use super::state::State;
use crate::vector::{VectorIndex, check_token_model, unit_query, unit_vector};
use crate::{FactVectors, ScoredFact, StoreResult, TokenVectorStats, TokenVectors, VectorQuery};

impl FactVectors for InMemorySessionFactStore {
    fn put_embeddings(
        &self,
        model: &str,
        embeddings: Vec<(FactId, Vec<f32>)>,
    ) -> StoreResult<usize> {
        let mut state = self.write();
        // Every vector is checked before any is stored; the first vector of a new model
        // fixes the dimension for the rest of the call.
        let mut dimension = state.vectors.dimension(model);
        let mut units = Vec::with_capacity(embeddings.len());
        for (id, vector) in &embeddings {
            let unit = unit_vector(model, *id, vector, dimension)?;
            dimension = Some(unit.len());
            units.push((*id, unit));
        }
        let mut stored = 0;
        for (id, unit) in units {
            if state.latest_version(id).is_some() {
                state.vectors.upsert(model, id, &unit);
                stored += 1;
            }
        }
        Ok(stored)
    }

    fn unembedded(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let state = self.read();
        let index = state.vectors.get(model);
        Ok(oldest_valid(&state, limit, |id| {
            index.is_some_and(|index| index.contains(id))
        }))
    }

    fn embedded_count(&self, model: &str) -> StoreResult<usize> {
        Ok(self.read().vectors.get(model).map_or(0, VectorIndex::len))
    }

    fn nearest(&self, query: &VectorQuery<'_>) -> StoreResult<Vec<ScoredFact>> {
        let state = self.read();
        let Some(index) = state.vectors.get(query.model) else {
            return Ok(Vec::new());
        };
        let Some(unit) = unit_query(query.vector, index.dimension()) else {
            return Ok(Vec::new());
        };
        // A task the store never saw excludes nothing.
        let excluded = query
            .exclude_source_task
            .and_then(|task| state.symbols.lookup(task));
        let mut accept = |id: FactId| accepts(&state, query, excluded, id).is_some();
        Ok(index
            .nearest(&unit, query.limit, &mut accept)
            .into_iter()
            .filter_map(|(id, score)| {
                let fact = state.fact(accepts(&state, query, excluded, id)?)?;
                let score = f64::from(score).clamp(-1.0, 1.0);
                Some(ScoredFact { fact, score })
            })
            .collect())
    }

    fn put_token_vectors(
        &self,
        model: &str,
        tokens: Vec<(FactId, TokenVectors)>,
    ) -> StoreResult<usize> {
        if let Some((id, _)) = tokens.first() {
            check_token_model(model, *id)?;
        }
        let mut state = self.write();
        let mut stored = 0;
        for (id, vectors) in tokens {
            if state.latest_version(id).is_some() {
                state.vectors.put_tokens(model, id, vectors);
                stored += 1;
            }
        }
        Ok(stored)
    }

    fn token_vectors(
        &self,
        model: &str,
        ids: &[FactId],
    ) -> StoreResult<Vec<(FactId, TokenVectors)>> {
        let state = self.read();
        let Some(tokens) = state.vectors.tokens(model) else {
            return Ok(Vec::new());
        };
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| Some((*id, tokens.get(id)?.clone())))
            .collect())
    }

    fn untokenized(&self, model: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let state = self.read();
        let tokens = state.vectors.tokens(model);
        Ok(oldest_valid(&state, limit, |id| {
            tokens.is_some_and(|tokens| tokens.contains_key(&id))
        }))
    }

    fn token_vector_stats(&self, model: &str) -> StoreResult<TokenVectorStats> {
        let state = self.read();
        let Some(tokens) = state.vectors.tokens(model) else {
            return Ok(TokenVectorStats::default());
        };
        let bytes = tokens.values().map(|t| t.as_bytes().len() as u64).sum();
        Ok(TokenVectorStats::new(tokens.len(), bytes))
    }
}

/// Up to `limit` valid facts for which `has` is false, oldest first (then by id).
fn oldest_valid(state: &State, limit: usize, has: impl Fn(FactId) -> bool) -> Vec<SessionFact> {
    let mut missing: Vec<(Timestamp, FactId, u32)> = state
        .live()
        .filter(|(_, r)| r.is_valid() && !has(r.id))
        .map(|(rid, r)| (r.valid_from, r.id, rid))
        .collect();
    if missing.len() > limit {
        missing.select_nth_unstable(limit);
        missing.truncate(limit);
    }
    missing.sort_unstable();
    missing
        .into_iter()
        .filter_map(|(_, _, rid)| state.fact(rid))
        .collect()
}

/// The valid record of `id`, if it passes the tag filter and the filter of `query` and
/// its source task is not the symbol `excluded` (as the SQL stores filter their facts, on the record).
fn accepts(
    state: &State,
    query: &VectorQuery<'_>,
    excluded: Option<u32>,
    id: FactId,
) -> Option<u32> {
    let rid = state.valid_version(id)?;
    let r = state.record(rid)?;
    let tags_match = query.tags.is_none_or(|wanted| r.has_any_tag(wanted));
    (tags_match && excluded != Some(r.task) && state.passes(query.filter, rid)).then_some(rid)
}

//! [`expand`]: the one-hop neighbours of a recall's best facts (`RecallQuery::expand`),
//! ranked by what they share with the question.

use std::collections::{HashMap, HashSet};

use fact_model::{FactId, Filter, SessionFact, Timestamp};
use fact_store::{EdgeQuery, ScoredFact, SessionFactStore, StoreResult};
use serde::Serialize;

/// How many edges an expansion reads per best fact, at most: a busy entity (the user, a
/// project) touches thousands of facts, and a recall reads a bounded share of them.
pub const EXPAND_EDGES_PER_FACT: usize = 50;

/// A fact a recall added because it shares an entity with one of its best facts
/// ([`RecallQuery::expand`](crate::RecallQuery::expand)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpandedFact {
    /// The fact.
    pub fact: SessionFact,
    /// The best fact it was reached from: the best-ranked one whose subject or object is
    /// this fact's subject or object.
    pub via: FactId,
    /// The share of the question's distinct terms the fact holds (`0..=1`): what orders
    /// the neighbours, before the rank of the fact they were reached from.
    pub score: f64,
}

/// What [`expand`] reads: the neighbours valid now (or at `as_of`) that `filter` holds
/// for, at most `limit`, ranked against `text`, the question as analyzed for the search
/// ([`query_text`](crate::query_text)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expansion<'a> {
    pub(crate) text: &'a str,
    pub(crate) as_of: Option<Timestamp>,
    pub(crate) filter: Option<&'a Filter>,
    pub(crate) limit: usize,
}

/// The one-hop neighbours of `best` (ranked, best first): the facts valid now (or at
/// `query.as_of`), that `query.filter` holds for, whose subject or object is the subject
/// or object of one of `best`, other than `best` themselves. At most `query.limit`,
/// ordered by the share of the question's terms they hold, then by the rank of the fact
/// they were reached from, then newer first.
pub(crate) fn expand(
    store: &dyn SessionFactStore,
    best: &[ScoredFact],
    query: &Expansion<'_>,
) -> StoreResult<Vec<ExpandedFact>> {
    if best.is_empty() || query.limit == 0 {
        return Ok(Vec::new());
    }
    // Each entity of the best facts, with the rank of the first fact that names it.
    let mut entities: Vec<&str> = Vec::new();
    let mut reached_from: HashMap<&str, usize> = HashMap::new();
    for (rank, found) in best.iter().enumerate() {
        for entity in [found.fact.subject(), found.fact.object()] {
            if !reached_from.contains_key(entity) {
                reached_from.insert(entity, rank);
                entities.push(entity);
            }
        }
    }
    let edges = store.touching(
        &EdgeQuery::new(&entities)
            .with_as_of(query.as_of)
            .with_filter(query.filter)
            .with_limit(best.len().saturating_mul(EXPAND_EDGES_PER_FACT)),
    )?;
    let analyzer = store.analyzer();
    let wanted: HashSet<String> = analyzer.analyze(query.text).into_iter().collect();
    let known: HashSet<(FactId, Timestamp)> = best
        .iter()
        .map(|found| (found.fact.id(), found.fact.valid_from()))
        .collect();
    let mut expanded: Vec<(usize, ExpandedFact)> = Vec::new();
    for fact in edges {
        if known.contains(&(fact.id(), fact.valid_from())) {
            continue;
        }
        let rank = [fact.subject(), fact.object()]
            .iter()
            .filter_map(|entity| reached_from.get(entity).copied())
            .min();
        let Some((rank, seed)) = rank.and_then(|rank| Some((rank, best.get(rank)?))) else {
            continue;
        };
        let held: HashSet<String> = analyzer.analyze_fact(&fact).into_iter().collect();
        let score = if wanted.is_empty() {
            0.0
        } else {
            wanted.intersection(&held).count() as f64 / wanted.len() as f64
        };
        expanded.push((
            rank,
            ExpandedFact {
                via: seed.fact.id(),
                fact,
                score,
            },
        ));
    }
    expanded.sort_by(|(rank_a, a), (rank_b, b)| {
        b.score
            .total_cmp(&a.score)
            .then(rank_a.cmp(rank_b))
            .then(b.fact.valid_from().cmp(&a.fact.valid_from()))
            .then(a.fact.id().cmp(&b.fact.id()))
    });
    expanded.truncate(query.limit);
    Ok(expanded.into_iter().map(|(_, fact)| fact).collect())
}

//! [`MemoryService::neighbours`]: the facts around an entity, one or two hops out, with
//! the path that reached each: the triples as a graph, walked from a node.

use std::collections::HashSet;

use fact_model::{FactId, SessionFact, Timestamp};
use fact_store::EdgeQuery;
use serde::Serialize;

use super::{MemoryError, MemoryService, ReadOptions};

/// The deepest walk [`MemoryService::neighbours`] takes.
pub const MAX_NEIGHBOUR_DEPTH: usize = 2;

/// A fact [`MemoryService::neighbours`] reached.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    /// How far: 1 for a fact whose subject or object is the entity, 2 for a fact about an
    /// entity a depth-1 fact leads to.
    pub depth: usize,
    /// The entities walked, from the one asked about: `["user"]` at depth 1,
    /// `["user", "project:rlm"]` at depth 2 (reached through `project:rlm`).
    pub path: Vec<String>,
    /// The depth-1 fact it was reached through; `None` at depth 1.
    pub via: Option<FactId>,
    /// The fact.
    pub fact: SessionFact,
}

impl MemoryService {
    /// The facts around `entity` (normalized, resolved through the aliases, its aliases
    /// included): at depth 1 the current facts (or those valid at `read.as_of`) whose
    /// subject or object is the entity; at depth 2 also the facts about the entities those
    /// lead to (the other end of each depth-1 fact), each with the path that reached it.
    /// `read.filter` narrows every hop: a depth-2 fact is reached only through a depth-1
    /// fact the filter holds for. At most `limit` facts, depth 1 first, each once; within
    /// a depth, oldest first. The store reads each hop through its indexes and stops at
    /// the limit ([`SessionFactStore::touching`](fact_store::SessionFactStore::touching)),
    /// so a walk from a busy entity costs what it returns.
    ///
    /// # Errors
    ///
    /// [`MemoryError::InvalidDepth`] for a depth other than 1 or 2, or the store's read
    /// error.
    pub fn neighbours(
        &self,
        entity: &str,
        depth: usize,
        limit: usize,
        read: &ReadOptions,
    ) -> Result<Vec<Neighbour>, MemoryError> {
        if !(1..=MAX_NEIGHBOUR_DEPTH).contains(&depth) {
            return Err(MemoryError::InvalidDepth { depth });
        }
        let entities = self.entities()?;
        let start = entities.resolve(entity);
        let names = entities.names_of(entity);
        let edges = |names: &[&str], limit: usize| {
            self.store.touching(
                &EdgeQuery::new(names)
                    .with_as_of(read.as_of)
                    .with_filter(read.filter.as_ref())
                    .with_limit(limit),
            )
        };
        let mut found: Vec<Neighbour> = Vec::new();
        let mut seen: HashSet<(FactId, Timestamp)> = HashSet::new();
        // The entity each depth-1 fact leads to, in the order of the facts.
        let mut leads: Vec<(String, FactId)> = Vec::new();
        for fact in edges(&as_strs(&names), limit)? {
            if !seen.insert((fact.id(), fact.valid_from())) {
                continue;
            }
            let other = if names.iter().any(|n| n == fact.subject()) {
                fact.object()
            } else {
                fact.subject()
            };
            if !names.iter().any(|n| n == other) {
                leads.push((other.to_owned(), fact.id()));
            }
            found.push(Neighbour {
                depth: 1,
                path: vec![start.clone()],
                via: None,
                fact,
            });
        }
        if depth < 2 || found.len() >= limit {
            found.truncate(limit);
            return Ok(found);
        }
        // Every name of every entity a depth-1 fact leads to, and which lead it was.
        let mut next: Vec<(String, usize)> = Vec::new();
        for (at, (other, _)) in leads.iter().enumerate() {
            for name in entities.names_of(other) {
                if !next.iter().any(|(n, _)| *n == name) && !names.contains(&name) {
                    next.push((name, at));
                }
            }
        }
        let next_names: Vec<&str> = next.iter().map(|(n, _)| n.as_str()).collect();
        // A depth-1 fact comes back again when it also touches a depth-2 entity: `limit`
        // edges leave room for every one of them and still fill the limit.
        for fact in edges(&next_names, limit)? {
            if found.len() >= limit {
                break;
            }
            if seen.contains(&(fact.id(), fact.valid_from())) {
                continue;
            }
            // The first lead (in depth-1 order) whose entity this fact is about.
            let lead = next
                .iter()
                .filter(|(name, _)| name == fact.subject() || name == fact.object())
                .map(|(_, at)| *at)
                .min();
            let Some((other, via)) = lead.and_then(|at| leads.get(at)) else {
                continue;
            };
            seen.insert((fact.id(), fact.valid_from()));
            found.push(Neighbour {
                depth: 2,
                path: vec![start.clone(), entities.resolve(other)],
                via: Some(*via),
                fact,
            });
        }
        Ok(found)
    }
}

fn as_strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

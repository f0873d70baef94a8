//! What the extraction prompt is told memory already holds ([`KnownMemory`]): the current
//! facts related to a conversation, within a [`KnownBudget`], and the predicates already in
//! use for their subjects, so the model judges updates against them and reuses the
//! predicates.

use std::collections::HashSet;

use fact_extract::KnownMemory;
use fact_model::{FactId, Message, SessionFact, USER_ENTITY};
use fact_retrieve::{Bm25, query_text};
use fact_store::TermQuery;

use super::budget::KnownBudget;
use super::error::MemoryError;
use super::service::MemoryService;

/// The most predicates listed per subject.
const MAX_PREDICATES: usize = 30;
/// The most distinct terms of a conversation its related facts are searched with.
const MAX_SEARCH_TERMS: usize = 256;

impl MemoryService {
    /// The current facts related to a conversation, for its extraction prompt: first the
    /// best matches of its text (BM25, the names of the entities it mentions included),
    /// then the newest facts about the user and about every entity it names, each listed
    /// once, while the budget lasts; and for the subjects listed, the predicates their
    /// current facts use.
    ///
    /// # Errors
    ///
    /// The store's read error.
    pub fn known_memory(&self, messages: &[Message]) -> Result<KnownMemory, MemoryError> {
        let entities = self.entities()?;
        let analyzer = self.store.analyzer();
        let text: String = messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let text = bounded(analyzer, query_text(analyzer, &text));
        let expanded = entities.expand_query(analyzer, &text);
        let hits = self.store.search(
            &TermQuery::new(&expanded, self.budget.facts.saturating_mul(2)),
            &Bm25::default(),
        )?;
        let mut subjects = vec![USER_ENTITY.to_owned()];
        for name in entities.mentioned(analyzer, &text) {
            if !subjects.contains(&name) {
                subjects.push(name);
            }
        }
        let mut picked = Picked::new(self.budget);
        for hit in hits {
            picked.offer(hit.fact, &*self.counter);
        }
        for subject in &subjects {
            if picked.full() {
                break;
            }
            for fact in self.store.valid_about(subject, self.budget.facts)? {
                picked.offer(fact, &*self.counter);
            }
        }
        let mut predicates: Vec<(String, Vec<String>)> = Vec::new();
        for fact in &picked.facts {
            if predicates.iter().any(|(s, _)| s == fact.subject()) {
                continue;
            }
            let relations = self.store.relations_of(fact.subject(), MAX_PREDICATES)?;
            predicates.push((fact.subject().to_owned(), relations));
        }
        Ok(KnownMemory {
            facts: picked.facts,
            predicates,
        })
    }
}

/// `text` up to the word that would bring its [`MAX_SEARCH_TERMS`]+1-th distinct term.
fn bounded(analyzer: &fact_store::Analyzer, text: &str) -> String {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = String::new();
    for word in text.split_whitespace() {
        for term in analyzer.analyze(word) {
            seen.insert(term);
        }
        if seen.len() > MAX_SEARCH_TERMS {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The facts picked so far and what their lines cost.
struct Picked {
    budget: KnownBudget,
    facts: Vec<SessionFact>,
    ids: HashSet<FactId>,
    tokens: usize,
}

impl Picked {
    fn new(budget: KnownBudget) -> Self {
        Picked {
            budget,
            facts: Vec::new(),
            ids: HashSet::new(),
            tokens: 0,
        }
    }

    fn full(&self) -> bool {
        self.facts.len() >= self.budget.facts || self.tokens >= self.budget.tokens
    }

    /// Lists `fact` when it is new and its line fits the budget.
    fn offer(&mut self, fact: SessionFact, counter: &dyn fact_model::TokenCounter) {
        if self.facts.len() >= self.budget.facts || self.ids.contains(&fact.id()) {
            return;
        }
        let cost = counter.count(&line(&fact));
        if self.tokens + cost > self.budget.tokens {
            return;
        }
        self.tokens += cost;
        self.ids.insert(fact.id());
        self.facts.push(fact);
    }
}

/// About the line a known fact takes in the prompt: short id, triple, statement, date.
fn line(fact: &SessionFact) -> String {
    let date = fact.valid_from().to_string();
    format!(
        "- [{}] {} {} {}: \"{}\" (since {})",
        fact.id().to_string().get(..8).unwrap_or_default(),
        fact.subject(),
        fact.relation(),
        fact.object(),
        fact.statement().unwrap_or_default(),
        date.get(..10).unwrap_or(&date)
    )
}

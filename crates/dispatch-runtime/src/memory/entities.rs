//! [`Entities`]: the alias table as one operation reads it: a name's entity, an entity's
//! names, and a query widened to the other names of the entities it mentions.

use std::collections::HashSet;

use fact_model::normalize_entity;
use fact_store::{Alias, Analyzer, MAX_ALIAS_DEPTH};

/// The aliases of a scope, read once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Entities {
    aliases: Vec<Alias>,
}

impl Entities {
    pub(crate) fn new(aliases: Vec<Alias>) -> Self {
        Entities { aliases }
    }

    /// Every alias, in the order set.
    pub(crate) fn aliases(&self) -> &[Alias] {
        &self.aliases
    }

    /// What `alias` (as stored) names directly, if it is an alias.
    pub(crate) fn entity_of(&self, alias: &str) -> Option<String> {
        self.aliases
            .iter()
            .find(|a| a.alias == alias)
            .map(|a| a.entity.clone())
    }

    /// Sets `alias` to name `entity` from `at`, as a commit of it will.
    pub(crate) fn push(&mut self, alias: &str, entity: &str, at: fact_model::Timestamp) {
        self.aliases.retain(|a| a.alias != alias);
        self.aliases.push(Alias {
            alias: alias.to_owned(),
            entity: entity.to_owned(),
            at,
        });
    }

    /// The entity `name` stands for: normalized, then followed through the aliases (at
    /// most [`MAX_ALIAS_DEPTH`] steps; the store refuses cycles).
    pub(crate) fn resolve(&self, name: &str) -> String {
        let mut at = normalize_entity(name);
        for _ in 0..MAX_ALIAS_DEPTH {
            match self.aliases.iter().find(|a| a.alias == at) {
                Some(alias) => at = alias.entity.clone(),
                None => break,
            }
        }
        at
    }

    /// The entity `name` stands for and every alias that leads to it, entity first; the
    /// name as given (trimmed) too when it differs, so that facts stored before names
    /// were normalized are found.
    pub(crate) fn names_of(&self, name: &str) -> Vec<String> {
        let entity = self.resolve(name);
        let mut names = vec![entity.clone()];
        for alias in &self.aliases {
            if self.resolve(&alias.alias) == entity && !names.contains(&alias.alias) {
                names.push(alias.alias.clone());
            }
        }
        let given = name.trim();
        if !given.is_empty() && !names.iter().any(|n| n == given) {
            names.push(given.to_owned());
        }
        names
    }

    /// The entities `text` names by one of their names (an alias, or an entity that has
    /// aliases), in alias order.
    pub(crate) fn mentioned(&self, analyzer: &Analyzer, text: &str) -> Vec<String> {
        let terms: HashSet<String> = analyzer.analyze(text).into_iter().collect();
        let mentions = |name: &str| {
            let name_terms = analyzer.analyze(name);
            !name_terms.is_empty() && name_terms.iter().all(|t| terms.contains(t))
        };
        let mut out: Vec<String> = Vec::new();
        for alias in &self.aliases {
            let entity = self.resolve(&alias.alias);
            if (mentions(&alias.alias) || mentions(&entity)) && !out.contains(&entity) {
                out.push(entity);
            }
        }
        out
    }

    /// `query`, followed by the other names of every entity it names by one of its names
    /// (an alias or the entity, each of whose terms the query holds), so that a search
    /// for "Mel" finds what is stored about "melanie".
    pub(crate) fn expand_query(&self, analyzer: &Analyzer, query: &str) -> String {
        if self.aliases.is_empty() {
            return query.to_owned();
        }
        let terms: HashSet<String> = analyzer.analyze(query).into_iter().collect();
        let mentions = |name: &str| {
            let name_terms = analyzer.analyze(name);
            !name_terms.is_empty() && name_terms.iter().all(|t| terms.contains(t))
        };
        let mut extra: Vec<String> = Vec::new();
        for alias in &self.aliases {
            let entity = self.resolve(&alias.alias);
            if mentions(&alias.alias) || mentions(&entity) {
                for name in self.names_of(&entity) {
                    if !mentions(&name) && !extra.contains(&name) {
                        extra.push(name);
                    }
                }
            }
        }
        if extra.is_empty() {
            return query.to_owned();
        }
        format!("{query} {}", extra.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use fact_model::Timestamp;
    use fact_store::AnalyzerConfig;

    use super::*;

    fn entities() -> Entities {
        let alias = |alias: &str, entity: &str| Alias {
            alias: alias.into(),
            entity: entity.into(),
            at: Timestamp::UNIX_EPOCH,
        };
        Entities::new(vec![alias("mel", "melanie"), alias("mellie", "mel")])
    }

    #[test]
    fn names_resolve_through_chains_and_normalization() {
        let e = entities();
        assert_eq!(e.resolve(" Mellie "), "melanie");
        assert_eq!(e.resolve("I"), "user");
        assert_eq!(e.resolve("Caroline"), "caroline");
        assert_eq!(e.names_of("MEL"), ["melanie", "mel", "mellie", "MEL"]);
    }

    #[test]
    fn a_query_naming_an_alias_also_names_its_entity() {
        let e = entities();
        let analyzer = Analyzer::new(AnalyzerConfig::default());
        assert_eq!(
            e.expand_query(&analyzer, "where does Mel live?"),
            "where does Mel live? melanie mellie"
        );
        assert_eq!(e.expand_query(&analyzer, "no one"), "no one");
    }
}

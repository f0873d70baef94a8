//! [`EdgeQuery`]: what [`SessionFactStore::touching`](crate::SessionFactStore::touching)
//! reads, the edges of the fact graph at some of its nodes.

use fact_model::{Filter, Timestamp};

/// The facts whose subject or object is one of `entities`: the edges of the fact graph at
/// those nodes, oldest first, as
/// [`SessionFactStore::touching`](crate::SessionFactStore::touching) reads them.
///
/// ```
/// use fact_model::Filter;
/// use fact_store::EdgeQuery;
///
/// let decisions = Filter::parse_where("category = decision").unwrap();
/// let query = EdgeQuery::new(&["user", "project:rlm"])
///     .with_filter(Some(&decisions))
///     .with_limit(20);
/// assert_eq!((query.entities.len(), query.limit), (2, 20));
/// assert!(query.as_of.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct EdgeQuery<'a> {
    /// The nodes: subjects and objects, compared as stored, byte for byte.
    pub entities: &'a [&'a str],
    /// The facts valid at this instant; `None`: the facts valid now.
    pub as_of: Option<Timestamp>,
    /// Only the facts this filter holds for, tested where the store reads, so that
    /// `limit` facts come back whenever that many match.
    pub filter: Option<&'a Filter>,
    /// The most facts to return, the oldest ones (default: every edge).
    pub limit: usize,
}

impl<'a> EdgeQuery<'a> {
    /// Every valid edge at `entities`, unfiltered.
    #[must_use]
    pub fn new(entities: &'a [&'a str]) -> Self {
        EdgeQuery {
            entities,
            as_of: None,
            filter: None,
            limit: usize::MAX,
        }
    }

    /// Reads the edges valid at `as_of` (`None`: now).
    #[must_use]
    pub fn with_as_of(mut self, as_of: Option<Timestamp>) -> Self {
        self.as_of = as_of;
        self
    }

    /// Keeps only the edges `filter` holds for (`None`: every edge).
    #[must_use]
    pub fn with_filter(mut self, filter: Option<&'a Filter>) -> Self {
        self.filter = filter;
        self
    }

    /// Returns at most `limit` edges, the oldest.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Whether `fact` is one of these edges, leaving the validity and the limit aside:
    /// its subject or object is one of the entities and the filter holds for it.
    #[must_use]
    pub fn touches(&self, fact: &fact_model::SessionFact) -> bool {
        (self.entities.contains(&fact.subject()) || self.entities.contains(&fact.object()))
            && self.filter.is_none_or(|f| f.matches(fact))
    }
}

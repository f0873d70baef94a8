//! [`ReadOptions`]: what narrows a read of memory, the same for every read that takes it.

use std::time::Duration;

use fact_model::{Filter, Timestamp};
use fact_store::Recency;

/// What narrows a read of memory ([`list`](crate::MemoryService::list),
/// [`search`](crate::MemoryService::search), [`recall`](crate::MemoryService::recall),
/// [`history`](crate::MemoryService::history), [`format`](crate::MemoryService::format)):
/// the instant it reads at and a filter, and for search and recall an opt-in recency. The
/// default reads what is valid now, unfiltered, ranked by relevance alone.
///
/// ```
/// use dispatch_runtime::ReadOptions;
/// use dispatch_runtime::reexports::Filter;
///
/// let filter = Filter::parse_where(r#"metadata.project = "rlm""#).unwrap();
/// let read = ReadOptions::default().with_filter(Some(filter));
/// assert!(read.as_of.is_none() && read.filter.is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Read what was valid at this instant (valid time); `None`: what is valid now.
    pub as_of: Option<Timestamp>,
    /// Read only the facts this filter holds for, applied where the store ranks (a
    /// search returns its limit whenever that many facts match).
    pub filter: Option<Filter>,
    /// Search and recall only, opt-in: rank by scores that halve with every half-life of
    /// a fact's age (from its `valid_from` to `reference_date`).
    pub recency_half_life: Option<Duration>,
    /// The instant ages are measured to: default `as_of`, else now.
    pub reference_date: Option<Timestamp>,
    /// Recall only: 1 adds the one-hop neighbours of the best facts (the facts that share
    /// a subject or object with one of them) within the same budget; 0, the default, adds
    /// none. See [`fact_retrieve::RecallQuery::expand`].
    pub expand: usize,
}

impl ReadOptions {
    /// A read of what was valid at `as_of` (`None`: now), unfiltered.
    #[must_use]
    pub fn as_of(as_of: Option<Timestamp>) -> Self {
        ReadOptions {
            as_of,
            ..ReadOptions::default()
        }
    }

    /// Reads at `as_of` (`None`: now).
    #[must_use]
    pub fn with_as_of(mut self, as_of: Option<Timestamp>) -> Self {
        self.as_of = as_of;
        self
    }

    /// Reads only the facts `filter` holds for (`None`: every fact).
    #[must_use]
    pub fn with_filter(mut self, filter: Option<Filter>) -> Self {
        self.filter = filter;
        self
    }

    /// Ranks search and recall by scores that halve every `half_life` of a fact's age
    /// before `reference_date` (default `as_of`, else now); `None` turns recency off.
    #[must_use]
    pub fn with_recency(
        mut self,
        half_life: Option<Duration>,
        reference_date: Option<Timestamp>,
    ) -> Self {
        self.recency_half_life = half_life;
        self.reference_date = reference_date;
        self
    }

    /// Recall only: adds the one-hop neighbours of the best facts when `hops` is 1.
    #[must_use]
    pub fn with_expand(mut self, hops: usize) -> Self {
        self.expand = hops;
        self
    }

    /// The recency of this read, with `now` as the reference when none is given.
    pub(crate) fn recency(&self, now: Timestamp) -> Option<Recency> {
        let half_life = self.recency_half_life?;
        let reference = self.reference_date.or(self.as_of).unwrap_or(now);
        Recency::new(half_life.as_secs().max(1), reference)
    }
}

//! [`ReadOptions`]: what narrows a read of memory, the same for every read that takes it.

use fact_model::{Filter, Timestamp};

/// What narrows a read of memory ([`list`](crate::MemoryService::list),
/// [`search`](crate::MemoryService::search), [`recall`](crate::MemoryService::recall),
/// [`history`](crate::MemoryService::history), [`format`](crate::MemoryService::format)):
/// the instant it reads at and a filter. The default reads what is valid now, unfiltered.
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
}

impl ReadOptions {
    /// A read of what was valid at `as_of` (`None`: now), unfiltered.
    #[must_use]
    pub fn as_of(as_of: Option<Timestamp>) -> Self {
        ReadOptions {
            as_of,
            filter: None,
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
}

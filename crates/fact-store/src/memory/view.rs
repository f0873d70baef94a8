//! A stored record as a filter reads it ([`RecordView`]): the store's own columns behind
//! [`FilterTarget`], so that a search, a selection or a nearest-neighbour search tests
//! its candidates without building a fact for each.

use fact_model::{Filter, FilterTarget, MetaValue, SessionFact, Tag, Tags, Timestamp};

use crate::EdgeQuery;

use super::records::Record;
use super::state::State;

/// Record `rid` of a state, as [`FilterTarget`].
pub(super) struct RecordView<'s> {
    state: &'s State,
    rid: u32,
    record: &'s Record,
    tags: Tags,
}

impl<'s> RecordView<'s> {
    /// The view of record `rid`, if the state has it.
    pub(super) fn of(state: &'s State, rid: u32) -> Option<Self> {
        let record = state.record(rid)?;
        Some(RecordView {
            state,
            rid,
            record,
            tags: record.tags(),
        })
    }
}

impl FilterTarget for RecordView<'_> {
    fn subject(&self) -> &str {
        self.state.symbols.get(self.record.subject)
    }
    fn relation(&self) -> &str {
        self.state.symbols.get(self.record.relation)
    }
    fn object(&self) -> &str {
        self.state.symbols.get(self.record.object)
    }
    fn tags(&self) -> &[Tag] {
        self.tags.as_slice()
    }
    fn source(&self) -> &str {
        self.state.symbols.get(self.record.task)
    }
    fn confidence(&self) -> f64 {
        self.record.confidence
    }
    fn valid_from(&self) -> Timestamp {
        self.record.valid_from
    }
    fn valid_to(&self) -> Option<Timestamp> {
        self.record.valid_to()
    }
    fn recorded_at(&self) -> Option<Timestamp> {
        self.state.recorded_at(self.rid, self.record)
    }
    fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.state.metadata_of(self.rid, self.record)?.get(key)
    }
}

impl State {
    /// Whether `filter` (if any) holds for record `rid`.
    pub(super) fn passes(&self, filter: Option<&Filter>, rid: u32) -> bool {
        filter.is_none_or(|filter| {
            RecordView::of(self, rid).is_some_and(|view| filter.matches(&view))
        })
    }

    /// The versions `keep` accepts that `filter` holds for, as facts, oldest first: from
    /// the metadata index when the filter requires a metadata equality, else from every
    /// live record.
    pub(super) fn select(
        &self,
        filter: &Filter,
        keep: impl Fn(&Record) -> bool,
    ) -> Vec<SessionFact> {
        let test = |rid: u32, r: &Record| keep(r) && self.passes(Some(filter), rid);
        match self.metadata.candidates(filter.conjuncts().into_iter()) {
            Some(rids) => rids
                .into_iter()
                .filter_map(|rid| Some((rid, self.record(rid)?)))
                .filter(|(rid, r)| !r.is_removed() && test(*rid, r))
                .filter_map(|(rid, r)| self.fact_at(rid, r))
                .collect(),
            None => self
                .live()
                .filter(|(rid, r)| test(*rid, r))
                .filter_map(|(rid, r)| self.fact_at(rid, r))
                .collect(),
        }
    }
}

impl State {
    /// The versions `keep` accepts that are edges of `query` (their subject or object is
    /// one of its entities, its filter holds), as facts, oldest first, at most
    /// `query.limit`: one pass over the records comparing symbols (subjects and short
    /// objects are interned), and texts only for the objects of longer names; the pass
    /// stops at the limit, and only the edges returned are built as facts.
    pub(super) fn touching(
        &self,
        query: &EdgeQuery<'_>,
        keep: impl Fn(&Record) -> bool,
    ) -> Vec<SessionFact> {
        let mut symbols: Vec<u32> = query
            .entities
            .iter()
            .filter_map(|name| self.symbols.lookup(name))
            .collect();
        symbols.sort_unstable();
        symbols.dedup();
        let long: Vec<&str> = query
            .entities
            .iter()
            .copied()
            .filter(|name| !super::state::is_interned_object(name))
            .collect();
        if query.limit == 0 || (symbols.is_empty() && long.is_empty()) {
            return Vec::new();
        }
        let named = |sym: u32| symbols.binary_search(&sym).is_ok();
        self.live()
            .filter(|(rid, r)| {
                keep(r)
                    && (named(r.subject)
                        || named(r.object)
                        || (!long.is_empty() && long.contains(&self.symbols.get(r.object))))
                    && self.passes(query.filter, *rid)
            })
            .take(query.limit)
            .filter_map(|(rid, r)| self.fact_at(rid, r))
            .collect()
    }
}

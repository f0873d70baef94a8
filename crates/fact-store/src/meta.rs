//! Metadata by record number, and its index: from a key and a value to the records
//! holding it, which answers the metadata equalities of a filter
//! ([`MetaIndex::candidates`]) without a pass over every record. The in-memory store
//! numbers its records; the SQL backends' search caches number their slots.
//!
//! A record without metadata costs nothing here; a record with some costs its entry in
//! `by_record` (the `Metadata`, shared with the facts built from it) and four bytes in
//! each of its values' postings.

use std::collections::HashMap;

use fact_model::{Condition, FilterField, MetaValue, Metadata, Operand, Operator};

use crate::heap::{chunk, map_bytes};
use crate::memory::table::IntMap;

/// A metadata value as the index keys it: numbers by their bits (with `-0` as `0`, so
/// that equal numbers share a key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ValueKey {
    Text(Box<str>),
    Number(u64),
    Bool(bool),
}

impl ValueKey {
    fn number(number: f64) -> ValueKey {
        // -0.0 == 0.0: one key for both.
        let number = if number == 0.0 { 0.0 } else { number };
        ValueKey::Number(number.to_bits())
    }

    fn of_value(value: &MetaValue) -> ValueKey {
        match value {
            MetaValue::String(text) => ValueKey::Text(text.as_str().into()),
            MetaValue::Number(number) => ValueKey::number(*number),
            MetaValue::Bool(flag) => ValueKey::Bool(*flag),
        }
    }

    /// The key an operand of `metadata.KEY eq` looks up; `None` for an operand no
    /// metadata value can equal.
    fn of_operand(operand: &Operand) -> Option<ValueKey> {
        match operand {
            Operand::Text(text) => Some(ValueKey::Text(text.as_str().into())),
            Operand::Number(number) => Some(ValueKey::number(*number)),
            Operand::Bool(flag) => Some(ValueKey::Bool(*flag)),
            Operand::Time(_) | Operand::Tag(_) => None,
        }
    }
}

/// Each record's metadata, by record number, and the postings of every `(key, value)`.
#[derive(Debug, Default)]
pub struct MetaIndex {
    by_record: IntMap<u32, Metadata>,
    /// `(key, value)` → the records holding it, ascending.
    postings: HashMap<(Box<str>, ValueKey), Vec<u32>>,
    /// The heap of the postings' keys and record lists, kept as they change.
    postings_heap: usize,
}

impl MetaIndex {
    /// The metadata of record `rid`, if it has some.
    pub fn get(&self, rid: u32) -> Option<&Metadata> {
        self.by_record.get(&rid)
    }

    /// Gives record `rid` this metadata, replacing what it had (none when empty).
    pub fn set(&mut self, rid: u32, metadata: &Metadata) {
        self.remove(rid);
        if metadata.is_empty() {
            return;
        }
        for (key, value) in metadata.iter() {
            let posting = (Box::<str>::from(key), ValueKey::of_value(value));
            if !self.postings.contains_key(&posting) {
                self.postings_heap += posting_heap(&posting);
            }
            self.postings_heap += size_of::<u32>();
            let rids = self.postings.entry(posting).or_default();
            // Records are mostly added in ascending order: an append.
            match rids.last() {
                Some(&last) if last >= rid => {
                    if let Err(at) = rids.binary_search(&rid) {
                        rids.insert(at, rid);
                    }
                }
                _ => rids.push(rid),
            }
        }
        self.by_record.insert(rid, metadata.clone());
    }

    /// Drops record `rid`'s metadata and postings.
    pub fn remove(&mut self, rid: u32) {
        let Some(metadata) = self.by_record.remove(&rid) else {
            return;
        };
        for (key, value) in metadata.iter() {
            let posting = (Box::<str>::from(key), ValueKey::of_value(value));
            if let Some(rids) = self.postings.get_mut(&posting) {
                if let Ok(at) = rids.binary_search(&rid) {
                    rids.remove(at);
                    self.postings_heap = self.postings_heap.saturating_sub(size_of::<u32>());
                }
                if rids.is_empty() {
                    self.postings.remove(&posting);
                    self.postings_heap = self.postings_heap.saturating_sub(posting_heap(&posting));
                }
            }
        }
    }

    /// The heap it holds, as [`backend`](crate::backend)'s heap model counts it: the maps,
    /// the postings' keys and four bytes per record in a posting (the `Metadata` values
    /// are shared with the facts they came from, and not counted).
    pub fn heap_bytes(&self) -> usize {
        map_bytes::<u32, Metadata>(self.by_record.capacity())
            + map_bytes::<(Box<str>, ValueKey), Vec<u32>>(self.postings.capacity())
            + self.postings_heap
    }

    /// The records holding `key` with one of `values`, ascending.
    fn holding(&self, key: &str, values: &[Operand]) -> Vec<u32> {
        let mut rids: Vec<u32> = Vec::new();
        for value in values.iter().filter_map(ValueKey::of_operand) {
            if let Some(found) = self.postings.get(&(key.into(), value)) {
                rids.extend_from_slice(found);
            }
        }
        if values.len() > 1 {
            rids.sort_unstable();
            rids.dedup();
        }
        rids
    }

    /// The records that may satisfy a filter of which `conjuncts` must all hold, when
    /// one of them is a metadata equality (`eq` or `in`): the smallest set of records
    /// holding one of its values, ascending. `None` when no conjunct is one (every record
    /// is a candidate).
    pub fn candidates<'f>(
        &self,
        conjuncts: impl Iterator<Item = &'f Condition>,
    ) -> Option<Vec<u32>> {
        let mut best: Option<Vec<u32>> = None;
        for condition in conjuncts {
            let FilterField::Metadata(key) = condition.field() else {
                continue;
            };
            if !matches!(condition.op(), Operator::Eq | Operator::In) {
                continue;
            }
            let rids = self.holding(key, condition.operands());
            if best.as_ref().is_none_or(|best| rids.len() < best.len()) {
                best = Some(rids);
            }
        }
        best
    }
}

/// The heap of a posting's key (its list is counted by the records in it).
fn posting_heap((key, value): &(Box<str>, ValueKey)) -> usize {
    let text = match value {
        ValueKey::Text(text) => chunk(text.len()),
        ValueKey::Number(_) | ValueKey::Bool(_) => 0,
    };
    chunk(key.len()) + text
}

/// A set of record numbers as bits: what [`MetaIndex::candidates`] found, tested in
/// constant time while a search scores.
#[derive(Debug)]
pub struct RecordSet {
    bits: Vec<u64>,
}

impl RecordSet {
    /// The set of `rids`, for records numbered below `len`.
    pub fn of(rids: &[u32], len: usize) -> RecordSet {
        let mut bits = vec![0u64; len.div_ceil(64)];
        for &rid in rids {
            if let Some(word) = bits.get_mut(rid as usize / 64) {
                *word |= 1 << (rid % 64);
            }
        }
        RecordSet { bits }
    }

    /// Whether `rid` is in the set.
    pub fn contains(&self, rid: u32) -> bool {
        self.bits
            .get(rid as usize / 64)
            .is_some_and(|word| word & (1 << (rid % 64)) != 0)
    }
}

//! [`Record`]: one stored version of a fact in 80 bytes, and [`Records`], the chunked
//! array of them indexed by record number.
//!
//! A record holds what a `SessionFact` holds, with every text as a symbol of the store's
//! [`Symbols`](super::symbols::Symbols), plus the links of three chains that replace the
//! per-key vectors of a map-of-vectors index:
//!
//! - `prev_version`: the previous version of the same fact id (newest first from the head
//!   in the version table);
//! - `prev_subject`: the previous record about the same subject (newest first from the
//!   subject's symbol), for `history`;
//! - `next_key`: the next valid record of the same `(subject, relation)`, while valid.
//!
//! Record numbers (`rid`) are positions: records are appended in insertion order, so
//! iterating them is iterating the store oldest first, and a record number is also the
//! fact's slot in the term index. Removed records stay as holes (flag `REMOVED`) until the
//! store rebuilds itself (see `State::maintain`).
//!
//! | field | bytes | encoding |
//! |---|---|---|
//! | `id`, `superseded_by` | 8 + 8 | `superseded_by` meaningful with flag `SUPERSEDED` |
//! | `valid_from`, `valid_to` | 8 + 8 | microseconds; `valid_to` [`NO_TIME`] while valid |
//! | `confidence` | 8 | the `f64` itself, so bit for bit |
//! | `subject` … `statement` | 5 × 4 | symbols; `statement` [`NIL`] when absent |
//! | `batch` | 4 | the batch, or an index into a side map when flag `BIG_BATCH` |
//! | chains | 3 × 4 | record numbers or [`NIL`] |
//! | `meta` | 4 | tags (count and three 4-bit indexes), source role, flags |
//!
//! `recorded_at`, metadata and batches beyond 32 bits live in side maps of the store, by
//! record number, flagged in `meta`: a record without them pays nothing for them.

use fact_model::{FactId, Metadata, SourceRole, Tag, Tags, Timestamp};

use super::symbols::NIL;

/// `valid_to` of a valid record (below every representable instant).
pub(super) const NO_TIME: i64 = i64::MIN;

/// The record has `superseded_by`.
const SUPERSEDED: u32 = 1 << 18;
/// The record's batch does not fit 32 bits: it lives in the store's side map.
pub(super) const BIG_BATCH: u32 = 1 << 19;
/// The record was removed (a hole until the next rebuild).
const REMOVED: u32 = 1 << 20;
/// The record has a `recorded_at`, kept in the store's side map (most dispatch facts do
/// not, so it costs them nothing).
const RECORDED: u32 = 1 << 21;
/// The record has metadata, kept in the store's side map (a fact without metadata costs
/// nothing).
const HAS_METADATA: u32 = 1 << 22;

/// Tag and role indexes fit 4 bits each in `meta`.
const _: () = assert!(Tag::ALL.len() <= 16 && SourceRole::ALL.len() <= 16);

/// One version of a fact; see the module docs for the layout.
#[derive(Debug, Clone, Copy)]
pub(super) struct Record {
    pub(super) id: FactId,
    superseded_by: FactId,
    pub(super) valid_from: Timestamp,
    valid_to: i64,
    pub(super) confidence: f64,
    pub(super) subject: u32,
    pub(super) relation: u32,
    pub(super) object: u32,
    pub(super) task: u32,
    pub(super) statement: u32,
    pub(super) batch: u32,
    pub(super) prev_version: u32,
    pub(super) prev_subject: u32,
    pub(super) next_key: u32,
    meta: u32,
}

/// The parts of a record that are not symbols or links.
#[derive(Debug, Clone)]
pub(super) struct Plain {
    pub(super) id: FactId,
    pub(super) tags: Tags,
    pub(super) role: SourceRole,
    pub(super) valid_from: Timestamp,
    pub(super) valid_to: Option<Timestamp>,
    pub(super) superseded_by: Option<FactId>,
    pub(super) confidence: f64,
    pub(super) recorded_at: Option<Timestamp>,
    pub(super) metadata: Metadata,
}

fn encode_tags(tags: &Tags) -> u32 {
    let slice = tags.as_slice();
    let mut meta = slice.len() as u32 & 3;
    for (i, tag) in slice.iter().enumerate() {
        meta |= (*tag as u32 & 15) << (2 + 4 * i);
    }
    meta
}

impl Record {
    /// A record of `plain` with these symbols, linked to nothing.
    pub(super) fn new(plain: &Plain, syms: [u32; 5], batch: u32, big_batch: bool) -> Record {
        let [subject, relation, object, task, statement] = syms;
        let mut meta = encode_tags(&plain.tags) | ((plain.role as u32 & 15) << 14);
        if big_batch {
            meta |= BIG_BATCH;
        }
        let mut record = Record {
            id: plain.id,
            superseded_by: plain.id,
            valid_from: plain.valid_from,
            valid_to: plain.valid_to.map_or(NO_TIME, Timestamp::unix_micros),
            confidence: plain.confidence,
            subject,
            relation,
            object,
            task,
            statement,
            batch,
            prev_version: NIL,
            prev_subject: NIL,
            next_key: NIL,
            meta,
        };
        if let Some(by) = plain.superseded_by {
            record.superseded_by = by;
            record.meta |= SUPERSEDED;
        }
        if plain.recorded_at.is_some() {
            record.meta |= RECORDED;
        }
        if !plain.metadata.is_empty() {
            record.meta |= HAS_METADATA;
        }
        record
    }

    /// The plain parts; `recorded_at` and the metadata are the store's to fill in (see
    /// [`Self::has_recorded_at`] and [`Self::has_metadata`]).
    pub(super) fn plain(&self) -> Plain {
        Plain {
            id: self.id,
            tags: self.tags(),
            role: self.role(),
            valid_from: self.valid_from,
            valid_to: self.valid_to(),
            superseded_by: self.superseded_by(),
            confidence: self.confidence,
            recorded_at: None,
            metadata: Metadata::new(),
        }
    }

    /// Whether the store's side map holds the record's metadata.
    pub(super) fn has_metadata(&self) -> bool {
        self.meta & HAS_METADATA != 0
    }

    /// Marks whether the record has metadata.
    pub(super) fn set_has_metadata(&mut self, has: bool) {
        if has {
            self.meta |= HAS_METADATA;
        } else {
            self.meta &= !HAS_METADATA;
        }
    }

    /// Whether the store's side map holds the record's `recorded_at`.
    pub(super) fn has_recorded_at(&self) -> bool {
        self.meta & RECORDED != 0
    }

    pub(super) fn is_valid(&self) -> bool {
        self.valid_to == NO_TIME
    }

    pub(super) fn valid_to(&self) -> Option<Timestamp> {
        (self.valid_to != NO_TIME)
            .then(|| Timestamp::from_unix_micros(self.valid_to).ok())
            .flatten()
    }

    /// Whether the record was valid at `at`: `valid_from <= at < valid_to`.
    pub(super) fn is_valid_at(&self, at: Timestamp) -> bool {
        self.valid_from <= at && (self.valid_to == NO_TIME || at.unix_micros() < self.valid_to)
    }

    /// Ends the validity at `at`, naming the successor if there is one.
    pub(super) fn end(&mut self, at: Timestamp, by: Option<FactId>) {
        self.valid_to = at.unix_micros();
        if let Some(by) = by {
            self.superseded_by = by;
            self.meta |= SUPERSEDED;
        }
    }

    pub(super) fn superseded_by(&self) -> Option<FactId> {
        (self.meta & SUPERSEDED != 0).then_some(self.superseded_by)
    }

    /// The tags, rebuilt as the validated list they were made from.
    pub(super) fn tag_list(&self) -> impl Iterator<Item = Tag> + Clone + use<> {
        let meta = self.meta;
        (0..(meta & 3) as usize)
            .filter_map(move |i| Tag::ALL.get(((meta >> (2 + 4 * i)) & 15) as usize).copied())
    }

    pub(super) fn tags(&self) -> Tags {
        Tags::new(self.tag_list()).unwrap_or(Tags::one(Tag::Decision))
    }

    /// Whether any of `wanted` is among the tags (without building a `Tags`).
    pub(super) fn has_any_tag(&self, wanted: &[Tag]) -> bool {
        self.tag_list().any(|tag| wanted.contains(&tag))
    }

    pub(super) fn set_tags(&mut self, tags: &Tags) {
        self.meta = (self.meta & !0x3FFF) | encode_tags(tags);
    }

    pub(super) fn role(&self) -> SourceRole {
        SourceRole::ALL
            .get(((self.meta >> 14) & 15) as usize)
            .copied()
            .unwrap_or(SourceRole::Implementer)
    }

    pub(super) fn has_big_batch(&self) -> bool {
        self.meta & BIG_BATCH != 0
    }

    pub(super) fn set_big_batch(&mut self, big: bool) {
        if big {
            self.meta |= BIG_BATCH;
        } else {
            self.meta &= !BIG_BATCH;
        }
    }

    pub(super) fn is_removed(&self) -> bool {
        self.meta & REMOVED != 0
    }

    pub(super) fn set_removed(&mut self) {
        self.meta |= REMOVED;
    }
}

/// Records per chunk: 4096 × 80 bytes = 320 KiB.
const SHIFT: u32 = 12;
const CHUNK: usize = 1 << SHIFT;

/// Every record, by record number, in chunks of [`CHUNK`]: appending never moves the
/// records already stored, and a large store never holds a doubled buffer. The first
/// chunk grows by doubling, so a small store stays small.
#[derive(Debug, Default)]
pub(super) struct Records {
    chunks: Vec<Vec<Record>>,
    len: usize,
}

impl Records {
    /// How many records, holes included.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, rid: u32) -> Option<&Record> {
        self.chunks
            .get((rid >> SHIFT) as usize)?
            .get(rid as usize & (CHUNK - 1))
    }

    pub(super) fn get_mut(&mut self, rid: u32) -> Option<&mut Record> {
        self.chunks
            .get_mut((rid >> SHIFT) as usize)?
            .get_mut(rid as usize & (CHUNK - 1))
    }

    /// Appends a record; returns its number.
    pub(super) fn push(&mut self, record: Record) -> u32 {
        let rid = u32::try_from(self.len).unwrap_or(NIL);
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            // The first chunk grows from small; later ones are allocated whole.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        if let Some(chunk) = self.chunks.last_mut() {
            if chunk.len() == chunk.capacity() {
                let want = (chunk.capacity() * 2).clamp(16, CHUNK);
                chunk.reserve_exact(want - chunk.len());
            }
            chunk.push(record);
            self.len += 1;
        }
        rid
    }

    /// Every record with its number, holes included, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &Record)> + Clone {
        self.chunks
            .iter()
            .flatten()
            .enumerate()
            .map(|(rid, record)| (u32::try_from(rid).unwrap_or(NIL), record))
    }
}

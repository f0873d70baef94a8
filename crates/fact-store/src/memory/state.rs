//! [`State`]: what an [`InMemorySessionFactStore`](super::InMemorySessionFactStore) holds
//! behind its lock, and the primitives every operation is built from (lookups, chains,
//! inserting, ending and removing versions, materializing facts, rebuilding).
//!
//! Layout (see each module for its own):
//!
//! - `records` ([`Records`]): every version, 80 bytes each, by record number (`rid`), in
//!   insertion order; removed versions are holes until the next rebuild;
//! - `symbols` ([`Symbols`]): every text; subjects, relations, task ids and short objects
//!   once (interned), sentences as they come; per symbol also the head of the subject's
//!   chain of records;
//! - `versions` ([`Table`]): fact id → its newest record; older versions follow the
//!   records' `prev_version` links;
//! - `keys` ([`Table`]): `(subject, relation)` → the valid record that joined the key
//!   last; the others follow `next_key` (the chain holds exactly the key's valid records,
//!   newest joined first);
//! - `statements` ([`Table`], a multimap): folded statement → valid records with it;
//! - `terms` ([`Terms`]): the inverted index, slot = record number;
//! - `metadata` ([`MetaIndex`]): the metadata of the records that have some, and the
//!   records holding each `(key, value)`;
//! - `vectors` ([`ModelIndexes`]): the embeddings, by model and fact id (not by record
//!   number: an embedding belongs to the id, whichever of its versions is valid). They
//!   are dropped when the last version of their id is removed, and carried over as they
//!   are by a rebuild.
//!
//! Removed versions (deleted, merged, dropped by compaction) leave holes; once the holes
//! outnumber the live records, [`State::maintain`] rebuilds the whole state from the live
//! records (same order, same answers), which also drops the texts only removed versions
//! held. In a large store each lookup of these tables is a cache miss; `add` and `import`
//! first touch the slots a batch will probe ([`State::prepare`]), so the misses overlap.
//!
//! Nothing here stores a `SessionFact`: one is built from a record (through the
//! `SessionFact` builder, so through its one validation path) only when a caller is
//! given one.

use std::hash::{BuildHasher, RandomState};

use fact_model::{FactId, Metadata, SessionFact, Timestamp, fold_statement};

use super::records::{Plain, Record, Records};
use super::symbols::{NIL, Symbols};
use super::table::{IntMap, Table, hash_bytes, hash_u64};
use super::terms::{Terms, Texts};
use crate::Analyzer;
use crate::meta::MetaIndex;
use crate::vector::ModelIndexes;

/// Objects up to this many bytes are interned (paths, ids, statuses repeat); longer ones
/// (sentences) and statements are only appended to the arena.
const INTERNED_OBJECT_BYTES: usize = 32;

/// Whether an object of this text is interned (so that its symbol names it).
pub(super) fn is_interned_object(text: &str) -> bool {
    text.len() <= INTERNED_OBJECT_BYTES
}

/// Removed records the store tolerates before it rebuilds itself (at least; more while
/// the holes are fewer than the live records).
pub(super) const MIN_HOLES_BEFORE_REBUILD: usize = 4096;

/// The store's private state; see the module docs.
#[derive(Debug)]
pub(in crate::memory) struct State {
    pub(super) last_batch: u64,
    /// The batch of the latest `add` (summaries written by compaction do not count), which
    /// compaction never merges.
    pub(super) newest_input_batch: u64,
    pub(super) records: Records,
    /// Removed records (holes in `records`).
    pub(super) removed: usize,
    /// Valid records.
    pub(super) valid: usize,
    /// How many times the state was rebuilt (record numbers change then).
    pub(super) generation: u64,
    pub(super) symbols: Symbols,
    /// Fact id → the newest record of the id.
    pub(super) versions: Table,
    /// `(subject, relation)` → the valid record that joined the key last.
    pub(super) keys: Table,
    /// Folded statement → each valid record with it (a multimap).
    pub(super) statements: Table,
    /// Batches that do not fit a record's 32 bits, by record number.
    big_batches: IntMap<u32, u64>,
    /// `recorded_at` (µs) of the records that have one, by record number.
    recorded: IntMap<u32, i64>,
    /// The metadata of the records that have some, by record number, and its index.
    pub(super) metadata: MetaIndex,
    /// The digests of the transaction keys applied (`Transaction::with_key`).
    pub(super) applied: std::collections::HashSet<[u8; 16]>,
    pub(super) analyzer: Analyzer,
    pub(super) terms: Terms,
    /// The embeddings of the stored fact ids, by model.
    pub(super) vectors: ModelIndexes,
    seed: u64,
    /// Buffers `add` reuses.
    pub(super) scratch: Scratch,
}

impl State {
    /// An empty state.
    pub(super) fn new(analyzer: Analyzer) -> State {
        let seed = RandomState::new().hash_one(0x5eed_u64);
        State {
            last_batch: 0,
            newest_input_batch: 0,
            records: Records::default(),
            removed: 0,
            valid: 0,
            generation: 0,
            symbols: Symbols::new(seed),
            versions: Table::default(),
            keys: Table::default(),
            statements: Table::default(),
            big_batches: IntMap::default(),
            recorded: IntMap::default(),
            metadata: MetaIndex::default(),
            applied: std::collections::HashSet::new(),
            analyzer,
            terms: Terms::new(seed),
            vectors: ModelIndexes::default(),
            seed,
            scratch: Scratch::default(),
        }
    }

    /// Stored versions, valid and invalidated.
    pub(super) fn live_count(&self) -> usize {
        self.records.len() - self.removed
    }

    pub(super) fn history_len(&self) -> usize {
        self.live_count().saturating_sub(self.valid)
    }

    fn id_tag(&self, id: FactId) -> u32 {
        hash_u64(self.seed, u64::from_le_bytes(*id.as_bytes()))
    }

    fn key_tag(&self, subject: u32, relation: u32) -> u32 {
        hash_u64(
            self.seed ^ 1,
            (u64::from(subject) << 32) | u64::from(relation),
        )
    }

    pub(super) fn statement_tag(&self, folded: &str) -> u32 {
        hash_bytes(self.seed ^ 2, folded.as_bytes())
    }

    pub(super) fn record(&self, rid: u32) -> Option<&Record> {
        self.records.get(rid)
    }

    /// Every stored version with its record number, oldest first.
    pub(super) fn live(&self) -> impl Iterator<Item = (u32, &Record)> + Clone {
        self.records.iter().filter(|(_, r)| !r.is_removed())
    }

    /// The batch of record `rid`.
    pub(super) fn batch_of(&self, rid: u32) -> u64 {
        match self.records.get(rid) {
            Some(r) if r.has_big_batch() => self.big_batches.get(&rid).copied().unwrap_or(0),
            Some(r) => u64::from(r.batch),
            None => 0,
        }
    }

    pub(super) fn set_batch(&mut self, rid: u32, batch: u64) {
        let small = u32::try_from(batch).ok();
        if let Some(r) = self.records.get_mut(rid) {
            r.batch = small.unwrap_or(0);
            r.set_big_batch(small.is_none());
        }
        match small {
            Some(_) => self.big_batches.remove(&rid),
            None => self.big_batches.insert(rid, batch),
        };
    }

    /// When record `rid` was recorded, if it says.
    pub(super) fn recorded_at(&self, rid: u32, r: &Record) -> Option<Timestamp> {
        if !r.has_recorded_at() {
            return None;
        }
        let micros = self.recorded.get(&rid).copied()?;
        Timestamp::from_unix_micros(micros).ok()
    }

    /// The metadata of record `rid` (empty unless it has some).
    pub(super) fn metadata_of(&self, rid: u32, r: &Record) -> Option<&Metadata> {
        if !r.has_metadata() {
            return None;
        }
        self.metadata.get(rid)
    }

    /// Gives record `rid` this metadata (none when empty).
    pub(super) fn set_metadata(&mut self, rid: u32, metadata: &Metadata) {
        if let Some(record) = self.records.get_mut(rid) {
            record.set_has_metadata(!metadata.is_empty());
        }
        self.metadata.set(rid, metadata);
    }

    /// The plain parts of record `rid`, its `recorded_at` and metadata included.
    pub(super) fn plain_of(&self, rid: u32, r: &Record) -> Plain {
        Plain {
            recorded_at: self.recorded_at(rid, r),
            metadata: self.metadata_of(rid, r).cloned().unwrap_or_default(),
            ..r.plain()
        }
    }

    /// The fact record `rid` stores, built through the `SessionFact` builder.
    pub(super) fn fact_at(&self, rid: u32, r: &Record) -> Option<SessionFact> {
        let mut fact = self.fact_of(r)?;
        if let Some(at) = self.recorded_at(rid, r) {
            fact = fact.recorded(at);
        }
        if let Some(metadata) = self.metadata_of(rid, r) {
            fact = fact.with_metadata(metadata.clone());
        }
        Some(fact)
    }

    /// The fact a record stores, without its `recorded_at` ([`fact_at`](Self::fact_at)
    /// adds it), built through the `SessionFact` builder.
    fn fact_of(&self, r: &Record) -> Option<SessionFact> {
        let text = |sym| self.symbols.get(sym);
        let mut builder = SessionFact::builder(text(r.subject), text(r.relation), text(r.object))
            .tags(r.tag_list())
            .valid_from(r.valid_from)
            .source(text(r.task), r.role())
            .confidence(r.confidence);
        if r.statement != NIL {
            builder = builder.statement(text(r.statement));
        }
        if let Some(to) = r.valid_to() {
            builder = builder.valid_to(to);
        }
        if let Some(by) = r.superseded_by() {
            builder = builder.superseded_by(by);
        }
        builder
            .build()
            .inspect_err(|e| tracing::error!(id = %r.id, "a stored version did not rebuild: {e}"))
            .ok()
    }

    pub(super) fn fact(&self, rid: u32) -> Option<SessionFact> {
        self.fact_at(rid, self.records.get(rid)?)
    }

    /// The stored versions `keep` accepts, as facts, oldest first.
    pub(super) fn facts_where(&self, keep: impl Fn(&Record) -> bool) -> Vec<SessionFact> {
        self.live()
            .filter(|(_, r)| keep(r))
            .filter_map(|(rid, r)| self.fact_at(rid, r))
            .collect()
    }

    /// Follows `link` from `head`: the records of a chain, in chain order.
    fn chain(&self, head: u32, link: fn(&Record) -> u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = head;
        // A chain never holds more records than the store; the bound only guards a bug.
        for _ in 0..=self.records.len() {
            let Some(r) = self.records.get(at) else { break };
            out.push(at);
            at = link(r);
        }
        out
    }

    /// The newest record of `id`.
    fn version_head(&self, id: FactId) -> Option<u32> {
        self.versions.find(self.id_tag(id), |rid| {
            self.records.get(rid).is_some_and(|r| r.id == id)
        })
    }

    /// Every version of `id`, newest first.
    pub(super) fn versions_of(&self, id: FactId) -> Vec<u32> {
        self.version_head(id)
            .map(|head| self.chain(head, |r| r.prev_version))
            .unwrap_or_default()
    }

    /// The valid version of `id`, if any (at most one version of an id is valid).
    pub(super) fn valid_version(&self, id: FactId) -> Option<u32> {
        let mut at = self.version_head(id)?;
        for _ in 0..=self.records.len() {
            let r = self.records.get(at)?;
            if r.is_valid() {
                return Some(at);
            }
            at = r.prev_version;
        }
        None
    }

    /// The latest version of `id`: its valid version if it has one, else the newest. (An
    /// ended version imported while the id is valid is newer, but only history.)
    pub(super) fn latest_version(&self, id: FactId) -> Option<u32> {
        self.valid_version(id).or_else(|| self.version_head(id))
    }

    /// Every version about `subject`, oldest first.
    pub(super) fn history(&self, subject: &str) -> Vec<u32> {
        let Some(sym) = self.symbols.lookup(subject) else {
            return Vec::new();
        };
        let mut rids = self.chain(self.symbols.subject_head(sym), |r| r.prev_subject);
        rids.reverse();
        rids
    }

    /// The valid versions about `subject`, newest first, at most `limit`; and, with
    /// `relations`, the distinct relations of every valid version (not only the first
    /// `limit`), in the order they first appear, at most `limit`.
    pub(super) fn valid_about(&self, subject: &str, limit: usize) -> Vec<u32> {
        let Some(sym) = self.symbols.lookup(subject) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut at = self.symbols.subject_head(sym);
        for _ in 0..=self.records.len() {
            if out.len() >= limit {
                break;
            }
            let Some(r) = self.records.get(at) else { break };
            if r.is_valid() && !r.is_removed() {
                out.push(at);
            }
            at = r.prev_subject;
        }
        out
    }

    /// The distinct relations of the valid versions about `subject`, oldest first, at most
    /// `limit`.
    pub(super) fn relations_of(&self, subject: &str, limit: usize) -> Vec<String> {
        let mut relations: Vec<u32> = Vec::new();
        for rid in self.history(subject) {
            if relations.len() >= limit {
                break;
            }
            if let Some(r) = self.records.get(rid)
                && r.is_valid()
                && !relations.contains(&r.relation)
            {
                relations.push(r.relation);
            }
        }
        relations
            .into_iter()
            .map(|sym| self.symbols.get(sym).to_owned())
            .collect()
    }

    /// The valid record of the key `(subject, relation)` that joined it last.
    fn key_head(&self, subject: u32, relation: u32) -> Option<u32> {
        self.keys.find(self.key_tag(subject, relation), |rid| {
            self.records
                .get(rid)
                .is_some_and(|r| r.subject == subject && r.relation == relation)
        })
    }

    /// The valid records of a key chain starting at `head`, in the order they joined it.
    pub(super) fn key_members(&self, head: u32) -> Vec<u32> {
        let mut rids = self.chain(head, |r| r.next_key);
        rids.reverse();
        rids
    }

    /// Appends the valid records of the key `(subject, relation)` (symbols) to `out`, in
    /// the order they joined the key.
    pub(super) fn key_members_into(&self, key: (u32, u32), out: &mut Vec<u32>) {
        let Some(mut at) = self.key_head(key.0, key.1) else {
            return;
        };
        let from = out.len();
        for _ in 0..=self.records.len() {
            let Some(r) = self.records.get(at) else { break };
            out.push(at);
            at = r.next_key;
        }
        if let Some(added) = out.get_mut(from..) {
            added.reverse();
        }
    }

    /// The valid records of `(subject, relation)`, in the order they joined the key.
    pub(super) fn valid_for_key(&self, subject: &str, relation: &str) -> Vec<u32> {
        let (Some(s), Some(r)) = (self.symbols.lookup(subject), self.symbols.lookup(relation))
        else {
            return Vec::new();
        };
        self.key_head(s, r)
            .map(|head| self.key_members(head))
            .unwrap_or_default()
    }

    /// The valid fact whose folded statement is `folded`, other than `except`.
    pub(super) fn find_statement(&self, folded: &str, except: Option<FactId>) -> Option<FactId> {
        let rid = self.statements.find(self.statement_tag(folded), |rid| {
            self.records.get(rid).is_some_and(|r| {
                Some(r.id) != except
                    && r.statement != NIL
                    && fold_statement(self.symbols.get(r.statement)) == folded
            })
        })?;
        self.records.get(rid).map(|r| r.id)
    }

    /// Appends a version (interning its texts) and links it into its version and subject
    /// chains; the caller links a valid one into its key and indexes.
    fn insert_parts(
        &mut self,
        key: (u32, u32),
        texts: [&str; 2],
        statement: Option<&str>,
        plain: &Plain,
        batch: u64,
    ) -> u32 {
        let (subject, relation) = key;
        let [object, task] = texts;
        let object = if object.len() <= INTERNED_OBJECT_BYTES {
            self.symbols.intern(object)
        } else {
            self.symbols.push(object)
        };
        let task = self.symbols.intern(task);
        let statement = statement.map_or(NIL, |s| self.symbols.push(s));
        let small = u32::try_from(batch).ok();
        let mut record = Record::new(
            plain,
            [subject, relation, object, task, statement],
            small.unwrap_or(0),
            small.is_none(),
        );
        let head = self.version_head(plain.id);
        record.prev_version = head.unwrap_or(NIL);
        record.prev_subject = self.symbols.subject_head(subject);
        let rid = self.records.push(record);
        let tag = self.id_tag(plain.id);
        match head {
            Some(head) => {
                self.versions.replace(tag, head, rid);
            }
            None => self.versions.insert(tag, rid),
        }
        self.symbols.set_subject_head(subject, rid);
        if small.is_none() {
            self.big_batches.insert(rid, batch);
        }
        if let Some(at) = plain.recorded_at {
            self.recorded.insert(rid, at.unix_micros());
        }
        if !plain.metadata.is_empty() {
            self.metadata.set(rid, &plain.metadata);
        }
        rid
    }

    /// Interns the subject and relation of `facts` into `keys` (of the valid ones only
    /// unless `all`; `(NIL, NIL)` for the others), touching on the way the table slots
    /// each fact will probe (its id, its short object, its key), so that the cache misses
    /// of a large store overlap instead of following one another; see [`Table::touch`].
    pub(super) fn prepare<'f>(
        &mut self,
        facts: impl Iterator<Item = &'f SessionFact> + Clone,
        all: bool,
        keys: &mut Vec<(u32, u32)>,
    ) {
        let mut sink = 0u64;
        for fact in facts.clone().filter(|fact| all || fact.is_valid()) {
            sink ^= self.versions.touch(self.id_tag(fact.id()));
            sink ^= self.symbols.touch(fact.subject());
            if fact.object().len() <= INTERNED_OBJECT_BYTES {
                sink ^= self.symbols.touch(fact.object());
            }
        }
        keys.clear();
        for fact in facts {
            let key = if all || fact.is_valid() {
                let key = self.key_of(fact);
                sink ^= self.keys.touch(self.key_tag(key.0, key.1));
                key
            } else {
                (NIL, NIL)
            };
            keys.push(key);
        }
        std::hint::black_box(sink);
    }

    /// Makes room for `more` versions of as many facts, so a large import does not grow
    /// its id table step by step (each step rehashes and touches fresh memory). Tables
    /// whose size the versions do not tell (keys, texts) grow as they fill.
    pub(super) fn reserve(&mut self, more: usize) {
        self.versions.reserve(more);
    }

    /// The symbols of a fact's subject and relation, interned.
    pub(super) fn key_of(&mut self, fact: &SessionFact) -> (u32, u32) {
        (
            self.symbols.intern(fact.subject()),
            self.symbols.intern(fact.relation()),
        )
    }

    /// Stores a version of `fact`, whose subject and relation are the symbols `key`,
    /// ended at `end` if given (at, successor), and indexes it if it is valid.
    pub(super) fn insert(
        &mut self,
        fact: &SessionFact,
        key: (u32, u32),
        batch: u64,
        end: Option<(Timestamp, Option<FactId>)>,
    ) -> u32 {
        let mut plain = Plain::of(fact);
        if let Some((at, by)) = end {
            plain.valid_to = Some(at);
            plain.superseded_by = by;
        }
        let texts = [fact.object(), fact.source_task_id()];
        let rid = self.insert_parts(key, texts, fact.statement(), &plain, batch);
        if plain.valid_to.is_none() {
            self.link_key(rid);
            let texts = [
                Some(fact.subject()),
                Some(fact.relation()),
                Some(fact.object()),
                fact.statement(),
            ];
            self.index_valid(rid, texts);
        }
        rid
    }

    /// Makes a valid record its key's newest member.
    pub(super) fn link_key(&mut self, rid: u32) {
        let Some(&r) = self.records.get(rid) else {
            return;
        };
        let tag = self.key_tag(r.subject, r.relation);
        let head = self.key_head(r.subject, r.relation);
        if let Some(record) = self.records.get_mut(rid) {
            record.next_key = head.unwrap_or(NIL);
        }
        match head {
            Some(head) => {
                self.keys.replace(tag, head, rid);
            }
            None => self.keys.insert(tag, rid),
        }
    }

    /// Takes a record out of its key's chain.
    pub(super) fn unlink_key(&mut self, rid: u32) {
        let Some(&r) = self.records.get(rid) else {
            return;
        };
        let Some(head) = self.key_head(r.subject, r.relation) else {
            return;
        };
        if head == rid {
            let tag = self.key_tag(r.subject, r.relation);
            if r.next_key == NIL {
                self.keys.remove(tag, rid);
            } else {
                self.keys.replace(tag, rid, r.next_key);
            }
        } else {
            let mut prev = head;
            for _ in 0..=self.records.len() {
                let Some(next) = self.records.get(prev).map(|p| p.next_key) else {
                    break;
                };
                if next == rid {
                    if let Some(p) = self.records.get_mut(prev) {
                        p.next_key = r.next_key;
                    }
                    break;
                }
                if next == NIL {
                    break;
                }
                prev = next;
            }
        }
        if let Some(record) = self.records.get_mut(rid) {
            record.next_key = NIL;
        }
    }

    /// Counts a valid record and indexes its statement and terms (`texts` are its texts).
    fn index_valid(&mut self, rid: u32, texts: Texts<'_>) {
        if let Some(statement) = texts.get(3).copied().flatten() {
            let tag = self.statement_tag(&fold_statement(statement));
            self.statements.insert(tag, rid);
        }
        self.valid += 1;
        self.terms.insert(rid, texts, &self.analyzer);
    }

    /// Undoes [`link_key`](Self::link_key) and [`index_valid`](Self::index_valid).
    fn unlink_valid(&mut self, rid: u32) {
        self.unlink_key(rid);
        let Some(&r) = self.records.get(rid) else {
            return;
        };
        if r.statement != NIL {
            let tag = self.statement_tag(&fold_statement(self.symbols.get(r.statement)));
            self.statements.remove(tag, rid);
        }
        self.valid = self.valid.saturating_sub(1);
        let texts = texts_of(&self.symbols, &r);
        self.terms.remove(rid, texts, &self.analyzer);
    }

    /// Ends the validity of a valid version at `at`, or at its `valid_from` if `at` is
    /// earlier (input out of time order), so `valid_to` is never before `valid_from`;
    /// `by` is the fact that superseded it, if one did.
    pub(super) fn end_validity(
        &mut self,
        rid: u32,
        at: Timestamp,
        by: Option<FactId>,
    ) -> Option<FactId> {
        let r = *self.records.get(rid)?;
        if !r.is_valid() || r.is_removed() {
            return None;
        }
        self.unlink_valid(rid);
        let record = self.records.get_mut(rid)?;
        record.end(at.max(r.valid_from), by);
        Some(r.id)
    }

    /// Removes versions and every index entry pointing at them. Their records stay as
    /// holes until [`maintain`](Self::maintain) rebuilds the store.
    pub(super) fn remove(&mut self, rids: &[u32]) {
        let mut ids = Vec::with_capacity(rids.len());
        let mut subjects = Vec::with_capacity(rids.len());
        for &rid in rids {
            let Some(&r) = self.records.get(rid) else {
                continue;
            };
            if r.is_removed() {
                continue;
            }
            if r.is_valid() {
                self.unlink_valid(rid);
            }
            if let Some(record) = self.records.get_mut(rid) {
                record.set_removed();
            }
            self.big_batches.remove(&rid);
            self.recorded.remove(&rid);
            self.metadata.remove(rid);
            self.removed += 1;
            ids.push(r.id);
            subjects.push(r.subject);
        }
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let Some(head) = self.version_head(id) else {
                continue;
            };
            let new = self.splice(head, |r| &mut r.prev_version);
            let tag = self.id_tag(id);
            if new == NIL {
                // The id's last version is gone: so are its embeddings.
                self.vectors.remove(id);
                self.versions.remove(tag, head);
            } else if new != head {
                self.versions.replace(tag, head, new);
            }
        }
        subjects.sort_unstable();
        subjects.dedup();
        for subject in subjects {
            let head = self.symbols.subject_head(subject);
            let new = self.splice(head, |r| &mut r.prev_subject);
            self.symbols.set_subject_head(subject, new);
        }
    }

    /// Drops removed records from the chain that starts at `head` and follows `link`;
    /// returns the new head.
    fn splice(&mut self, head: u32, link: fn(&mut Record) -> &mut u32) -> u32 {
        let mut new_head = NIL;
        let mut last: Option<u32> = None;
        let mut at = head;
        for _ in 0..=self.records.len() {
            let Some(r) = self.records.get_mut(at) else {
                break;
            };
            let next = *link(r);
            if !r.is_removed() {
                match last.and_then(|l| self.records.get_mut(l)) {
                    Some(kept) => *link(kept) = at,
                    None => new_head = at,
                }
                last = Some(at);
            }
            at = next;
        }
        if let Some(kept) = last.and_then(|l| self.records.get_mut(l)) {
            *link(kept) = NIL;
        }
        new_head
    }

    /// Housekeeping after every write: rebuilds the whole state once removed records
    /// outnumber live ones (so the arena, the tables and the index drop what removed
    /// versions held), else drops dead postings once they outnumber live ones.
    pub(super) fn maintain(&mut self) {
        if self.removed > self.live_count().max(MIN_HOLES_BEFORE_REBUILD) {
            self.rebuild();
        } else if self.terms.wants_rebuild() {
            self.terms.drop_dead();
        }
    }

    /// A state holding exactly the live records of this one, in the same order, with the
    /// same key order and term statistics: what the store answers does not change.
    pub(super) fn rebuild(&mut self) {
        let mut fresh = State::new(self.analyzer.clone());
        fresh.last_batch = self.last_batch;
        fresh.newest_input_batch = self.newest_input_batch;
        fresh.generation = self.generation + 1;
        fresh.vectors = std::mem::take(&mut self.vectors);
        fresh.applied = std::mem::take(&mut self.applied);
        let old = std::mem::replace(self, fresh);
        let mut renumber = vec![NIL; old.records.len()];
        for (rid, r) in old.live() {
            let text = |sym| old.symbols.get(sym);
            let statement = (r.statement != NIL).then(|| text(r.statement));
            let key = (
                self.symbols.intern(text(r.subject)),
                self.symbols.intern(text(r.relation)),
            );
            let texts = [text(r.object), text(r.task)];
            let plain = old.plain_of(rid, r);
            let new = self.insert_parts(key, texts, statement, &plain, old.batch_of(rid));
            if r.is_valid() {
                self.index_valid(new, texts_of(&old.symbols, r));
            }
            if let Some(slot) = renumber.get_mut(rid as usize) {
                *slot = new;
            }
        }
        // Keys are rejoined in the order their members joined them.
        for head in old.keys.values() {
            for rid in old.key_members(head) {
                if let Some(&new) = renumber.get(rid as usize) {
                    self.link_key(new);
                }
            }
        }
    }
}

/// The texts the term index holds for a record.
pub(super) fn texts_of<'s>(symbols: &'s Symbols, r: &Record) -> Texts<'s> {
    let text = |sym| Some(symbols.get(sym));
    [
        text(r.subject),
        text(r.relation),
        text(r.object),
        (r.statement != NIL).then(|| symbols.get(r.statement)),
    ]
}

impl Plain {
    pub(super) fn of(fact: &SessionFact) -> Plain {
        Plain {
            id: fact.id(),
            tags: *fact.tags(),
            role: fact.source_role(),
            valid_from: fact.valid_from(),
            valid_to: fact.valid_to(),
            superseded_by: fact.superseded_by(),
            confidence: fact.confidence(),
            recorded_at: fact.recorded_at(),
            metadata: fact.metadata().clone(),
        }
    }
}

/// Buffers `add` reuses from one batch to the next, so a batch allocates nothing of its
/// own but its report.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// The `(id, position)` of the batch's valid facts, sorted: whether an id is in the
    /// batch, and which facts repeat an earlier one.
    pub(super) ids: Vec<(FactId, usize)>,
    /// By position: the fact repeats an earlier valid fact of the batch.
    pub(super) repeats: Vec<bool>,
    /// By position: the symbols of the fact's subject and relation.
    pub(super) keys: Vec<(u32, u32)>,
    /// The valid records of a key.
    pub(super) members: Vec<u32>,
    /// The valid records of a key the current fact supersedes.
    pub(super) earlier: Vec<(u32, FactId, Timestamp)>,
}

impl Scratch {
    /// Fills `ids` and `repeats` for `batch`: O(n log n) for any batch size, no hashing.
    pub(super) fn index(&mut self, batch: &[SessionFact]) {
        self.ids.clear();
        self.ids.extend(
            batch
                .iter()
                .enumerate()
                .filter(|(_, fact)| fact.is_valid())
                .map(|(index, fact)| (fact.id(), index)),
        );
        self.ids.sort_unstable();
        self.repeats.clear();
        self.repeats.resize(batch.len(), false);
        for pair in self.ids.windows(2) {
            if let [(a, _), (b, later)] = pair
                && a == b
                && let Some(flag) = self.repeats.get_mut(*later)
            {
                *flag = true;
            }
        }
    }
}

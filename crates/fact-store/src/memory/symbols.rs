//! [`Symbols`]: the store's string arena and interner. Every text a fact holds (subject,
//! relation, object, source task, statement) lives in an arena of byte chunks and is named
//! by a `u32` symbol. Subjects, relations, task ids and short objects are interned (kept
//! once, found through `table`): a repeated path, relation or task id costs a record 4
//! bytes. Long objects and statements (sentences, which rarely repeat) are only appended
//! ([`Symbols::push`]): interning them would cost a table probe, a cache miss in a large
//! store, per fact, and a table entry each, to save almost nothing.
//!
//! Layout: `chunks` are `String`s of at most [`CHUNK`] bytes, filled one after another (a
//! chunk grows by doubling until it reaches [`CHUNK`], so a small store holds a small
//! arena and a large one wastes at most the unused tail of each chunk, never half of one
//! big buffer); a text never spans two chunks. A text of 64 KiB or more (which no valid
//! fact field reaches) gets a chunk of its own in `big`. `entries` holds, per symbol, where
//! its text is (8 bytes) and the newest record about it as a subject (kept here because a
//! dense array is cheaper than another map). `table` finds an interned text's symbol.

use super::table::{Table, hash_bytes};

/// Bytes per arena chunk: offsets within a chunk fit a `u16`.
const CHUNK: usize = 1 << 16;

/// No symbol, no record, no term.
pub(super) const NIL: u32 = u32::MAX;

/// Where a symbol's text lives, and what the store attaches to it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Index into `chunks`, or into `big` when `len` is `u16::MAX`.
    chunk: u32,
    offset: u16,
    len: u16,
    /// The newest record whose subject is this text, or [`NIL`].
    subject_head: u32,
}

/// The interner; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Symbols {
    seed: u64,
    chunks: Vec<String>,
    big: Vec<Box<str>>,
    entries: Vec<Entry>,
    table: Table,
}

impl Symbols {
    /// An empty interner hashing with `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Symbols {
            seed,
            ..Symbols::default()
        }
    }

    /// How many symbols there are.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The text of `sym` (empty for [`NIL`]).
    pub(super) fn get(&self, sym: u32) -> &str {
        self.entries
            .get(sym as usize)
            .and_then(|e| self.text(e))
            .unwrap_or_default()
    }

    fn text(&self, e: &Entry) -> Option<&str> {
        if e.len == u16::MAX {
            return self.big.get(e.chunk as usize).map(|b| &**b);
        }
        let start = usize::from(e.offset);
        self.chunks
            .get(e.chunk as usize)?
            .get(start..start + usize::from(e.len))
    }

    /// The symbol of `text`, if it was interned.
    pub(super) fn lookup(&self, text: &str) -> Option<u32> {
        let tag = hash_bytes(self.seed, text.as_bytes());
        self.table.find(tag, |sym| {
            self.entries
                .get(sym as usize)
                .and_then(|e| self.text(e))
                .is_some_and(|t| t == text)
        })
    }

    /// Touches the table slot of `text` (see [`Table::touch`]).
    pub(super) fn touch(&self, text: &str) -> u64 {
        self.table.touch(hash_bytes(self.seed, text.as_bytes()))
    }

    /// The symbol of `text`, interned on first sight.
    pub(super) fn intern(&mut self, text: &str) -> u32 {
        let tag = hash_bytes(self.seed, text.as_bytes());
        let Symbols {
            chunks,
            big,
            entries,
            table,
            ..
        } = self;
        let found = table.find(tag, |sym| {
            entries.get(sym as usize).is_some_and(|e| {
                let t = if e.len == u16::MAX {
                    big.get(e.chunk as usize).map(|b| &**b)
                } else {
                    let start = usize::from(e.offset);
                    chunks
                        .get(e.chunk as usize)
                        .and_then(|c| c.get(start..start + usize::from(e.len)))
                };
                t == Some(text)
            })
        });
        if let Some(sym) = found {
            return sym;
        }
        let sym = self.push(text);
        self.table.insert(tag, sym);
        sym
    }

    /// A new symbol for `text`, without interning it: [`lookup`](Self::lookup) and
    /// [`intern`](Self::intern) will not find it.
    pub(super) fn push(&mut self, text: &str) -> u32 {
        let sym = u32::try_from(self.entries.len()).unwrap_or(NIL);
        let entry = self.push_text(text);
        self.entries.push(entry);
        sym
    }

    /// Appends `text` to the arena.
    fn push_text(&mut self, text: &str) -> Entry {
        let new = |chunk: usize, offset: usize, len: u16| Entry {
            chunk: u32::try_from(chunk).unwrap_or(NIL),
            offset: u16::try_from(offset).unwrap_or(0),
            len,
            subject_head: NIL,
        };
        // Texts of 64 KiB or more (no valid fact field is that long) get their own box.
        let len = match u16::try_from(text.len()) {
            Ok(len) if len < u16::MAX => len,
            _ => {
                self.big.push(text.into());
                return new(self.big.len() - 1, 0, u16::MAX);
            }
        };
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.len() + text.len() <= CHUNK);
        if !fits {
            // The first chunk grows from small; later ones are allocated whole.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(String::with_capacity(capacity));
        }
        let index = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            return new(0, 0, 0);
        };
        if chunk.capacity() - chunk.len() < text.len() {
            // Grow by doubling up to a full chunk, so small stores stay small.
            let want = (chunk.capacity() * 2)
                .max(chunk.len() + text.len())
                .clamp(256, CHUNK);
            chunk.reserve_exact(want - chunk.len());
        }
        let offset = chunk.len();
        chunk.push_str(text);
        new(index, offset, len)
    }

    /// The newest record about the subject `sym`, or [`NIL`].
    pub(super) fn subject_head(&self, sym: u32) -> u32 {
        self.entries
            .get(sym as usize)
            .map_or(NIL, |e| e.subject_head)
    }

    pub(super) fn set_subject_head(&mut self, sym: u32, rid: u32) {
        if let Some(e) = self.entries.get_mut(sym as usize) {
            e.subject_head = rid;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn interning_is_idempotent_and_texts_round_trip() {
        let mut symbols = Symbols::new(7);
        let texts: Vec<String> = (0..5_000)
            .map(|i| format!("src/module_{}/file_{i}.rs", i % 37))
            .chain(["", "é", "task:1"].map(String::from))
            .chain([
                "x".repeat(usize::from(u16::MAX) - 1),
                "y".repeat(usize::from(u16::MAX)),
                "z".repeat(70_000),
            ])
            .collect();
        let syms: Vec<u32> = texts.iter().map(|t| symbols.intern(t)).collect();
        for (text, sym) in texts.iter().zip(&syms) {
            assert_eq!(symbols.intern(text), *sym);
            assert_eq!(symbols.lookup(text), Some(*sym));
            assert_eq!(symbols.get(*sym), text);
        }
        assert_eq!(symbols.len(), texts.len());
        assert_eq!(symbols.lookup("absent"), None);
        let pushed = symbols.push("task:1");
        assert_ne!(pushed, symbols.intern("task:1"));
        assert_eq!(symbols.get(pushed), "task:1");
        assert_eq!(symbols.get(NIL), "");
    }
}

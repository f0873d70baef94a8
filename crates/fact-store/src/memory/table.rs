//! [`Table`]: the one hash table of the in-memory store, an open-addressing table of `u32`
//! values whose keys live elsewhere; and the seeded hash functions that feed it.
//!
//! Every index of the store maps something (a string, a fact id, a `(subject, relation)`
//! pair) to a `u32` (a symbol or a record number), and the key can always be read back
//! from the value: a symbol's text is in the arena, a record holds its id and its key.
//! Storing keys again in a `HashMap` would cost 16 to 40 bytes per entry; here an entry is
//! 8 bytes, the 32-bit hash (the *tag*) beside the value, and a lookup confirms a tag match
//! by asking the caller to compare the real key (a hash collision costs a comparison, never
//! a wrong answer).
//!
//! Linear probing in a power-of-two array kept at most 7/8 full; the home slot of an entry
//! is its tag masked, so growing and deleting (backward shift, no tombstones) never need
//! the key. The table is also a multimap: equal tags may repeat, and [`Table::find`] walks
//! them all until the caller's comparison accepts one.

/// An empty slot: a value of `u32::MAX` is never stored.
const EMPTY: u64 = u64::MAX;

/// An open-addressing table of `(tag, value)` entries; see the module docs.
#[derive(Debug, Default, Clone)]
pub(super) struct Table {
    /// `tag << 32 | value`, or [`EMPTY`]; the length is zero or a power of two.
    slots: Vec<u64>,
    len: usize,
}

fn entry(tag: u32, value: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(value)
}

fn tag_of(entry: u64) -> u32 {
    (entry >> 32) as u32
}

fn value_of(entry: u64) -> u32 {
    entry as u32
}

impl Table {
    /// How many entries the table holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// The first value with this tag that `accept` accepts, probing in slot order.
    pub(super) fn find(&self, tag: u32, accept: impl FnMut(u32) -> bool) -> Option<u32> {
        self.position(tag, accept)
            .and_then(|at| self.slots.get(at))
            .map(|e| value_of(*e))
    }

    /// The slot of the first entry with this tag whose value `accept` accepts.
    fn position(&self, tag: u32, mut accept: impl FnMut(u32) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut at = tag as usize & mask;
        loop {
            let e = *self.slots.get(at)?;
            if e == EMPTY {
                return None;
            }
            if tag_of(e) == tag && accept(value_of(e)) {
                return Some(at);
            }
            at = (at + 1) & mask;
        }
    }

    /// Reads the home slot of `tag` and nothing else: a lookup that follows soon finds
    /// its cache line loaded. Several touches in a row overlap their cache misses, where
    /// the lookups themselves would wait for one miss after another.
    pub(super) fn touch(&self, tag: u32) -> u64 {
        self.slots
            .get(tag as usize & self.mask())
            .copied()
            .unwrap_or(0)
    }

    /// Makes room for `more` entries without growing.
    pub(super) fn reserve(&mut self, more: usize) {
        while (self.len + more) * 8 > self.slots.len() * 7 {
            self.grow();
        }
    }

    /// Adds an entry (equal tags, even equal entries, may repeat).
    pub(super) fn insert(&mut self, tag: u32, value: u32) {
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            self.grow();
        }
        let mask = self.mask();
        let mut at = tag as usize & mask;
        while let Some(slot) = self.slots.get_mut(at) {
            if *slot == EMPTY {
                *slot = entry(tag, value);
                self.len += 1;
                return;
            }
            at = (at + 1) & mask;
        }
    }

    /// Replaces the value of the entry `(tag, old)` with `new`; false if there is none.
    pub(super) fn replace(&mut self, tag: u32, old: u32, new: u32) -> bool {
        match self
            .position(tag, |value| value == old)
            .and_then(|at| self.slots.get_mut(at))
        {
            Some(slot) => {
                *slot = entry(tag, new);
                true
            }
            None => false,
        }
    }

    /// Removes the entry `(tag, value)`; false if there is none.
    pub(super) fn remove(&mut self, tag: u32, value: u32) -> bool {
        let Some(mut hole) = self.position(tag, |v| v == value) else {
            return false;
        };
        let mask = self.mask();
        // Backward shift: move every later entry of the cluster that may live in the hole
        // (the hole lies on its probe path) into it, so lookups never stop early.
        let mut at = (hole + 1) & mask;
        while let Some(&e) = self.slots.get(at) {
            if e == EMPTY {
                break;
            }
            let home = tag_of(e) as usize & mask;
            if at.wrapping_sub(home) & mask >= at.wrapping_sub(hole) & mask {
                if let Some(slot) = self.slots.get_mut(hole) {
                    *slot = e;
                }
                hole = at;
            }
            at = (at + 1) & mask;
        }
        if let Some(slot) = self.slots.get_mut(hole) {
            *slot = EMPTY;
        }
        self.len -= 1;
        true
    }

    /// Every value, in slot order.
    pub(super) fn values(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .filter(|e| **e != EMPTY)
            .map(|e| value_of(*e))
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; capacity]);
        let mask = self.mask();
        for e in old.into_iter().filter(|e| *e != EMPTY) {
            let mut at = tag_of(e) as usize & mask;
            while let Some(slot) = self.slots.get_mut(at) {
                if *slot == EMPTY {
                    *slot = e;
                    break;
                }
                at = (at + 1) & mask;
            }
        }
    }
}

/// Hashes integer keys (record numbers, symbols, fact ids) with one multiply per word,
/// FxHash style, for the few `HashMap`s the store keeps beside its [`Table`]s. Every key it
/// sees is either internal or already a uniform hash, so SipHash's protection against
/// chosen keys would buy nothing here.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u32(&mut self, word: u32) {
        self.write_u64(u64::from(word));
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A `HashMap` with integer keys, hashed by [`IntHasher`].
pub(crate) type IntMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IntHasher>>;

/// Multiplies and folds the 128-bit product: the mixing step of the hashes below (the
/// construction of wyhash and foldhash).
fn fold_mul(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

const K0: u64 = 0x243F_6A88_85A3_08D3;
const K1: u64 = 0x1319_8A2E_0370_7344;
const K2: u64 = 0xA409_3822_299F_31D0;

/// The 8 bytes at `at` as a little-endian integer (0 past the end).
fn read8(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes)
}

/// The 4 bytes at `at` as a little-endian integer (0 past the end).
fn read4(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
}

/// A seeded hash of `bytes`, 16 bytes per multiplication (short inputs are read as two
/// overlapping words, as wyhash does). Not cryptographic: the seed is random per store, so
/// inputs cannot be chosen offline to collide, which is all a hash table needs; the store
/// never trusts a hash without comparing the key.
pub(super) fn hash_bytes(seed: u64, bytes: &[u8]) -> u32 {
    let len = bytes.len();
    let mut h = seed ^ (len as u64).wrapping_mul(K0);
    let (a, b) = match len {
        0 => (0, 0),
        1..=3 => {
            let byte = |at: usize| u64::from(bytes.get(at).copied().unwrap_or(0));
            ((byte(0) << 16) | (byte(len / 2) << 8) | byte(len - 1), 0)
        }
        4..=7 => (read4(bytes, 0), read4(bytes, len - 4)),
        8..=16 => (read8(bytes, 0), read8(bytes, len - 8)),
        _ => {
            let mut chunks = bytes.chunks_exact(16);
            for chunk in &mut chunks {
                h = fold_mul(read8(chunk, 0) ^ K1, read8(chunk, 8) ^ h);
            }
            // The last 16 bytes, overlapping what the loop read when `len` is not a
            // multiple of 16.
            (read8(bytes, len - 16), read8(bytes, len - 8))
        }
    };
    fold32(fold_mul(a ^ K2 ^ h, b ^ K1 ^ len as u64))
}

/// A seeded hash of one integer key (a fact id, a pair of symbols).
pub(super) fn hash_u64(seed: u64, key: u64) -> u32 {
    fold32(fold_mul(key ^ K0, seed ^ K2))
}

/// A seeded hash of a packed short word (see `index::pack_word`).
pub(super) fn hash_u128(seed: u64, key: u128) -> u64 {
    fold_mul((key as u64) ^ seed ^ K1, ((key >> 64) as u64) ^ K2)
}

fn fold32(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The table agrees with a `HashMap` of multisets under inserts and removals,
        /// with tags drawn from a tiny range so clusters, wrap-around and backward shifts
        /// are the common case.
        #[test]
        fn table_is_a_multimap(ops in proptest::collection::vec((any::<bool>(), 0u32..40, 0u32..6), 1..400)) {
            let mut table = Table::default();
            let mut model: HashMap<u32, Vec<u32>> = HashMap::new();
            for (insert, tag, value) in ops {
                // Tags near the top wrap around the end of the array.
                let tag = tag.wrapping_sub(5);
                if insert {
                    table.insert(tag, value);
                    model.entry(tag).or_default().push(value);
                } else {
                    let present = model.get(&tag).is_some_and(|v| v.contains(&value));
                    prop_assert_eq!(table.remove(tag, value), present);
                    if let Some(values) = model.get_mut(&tag)
                        && let Some(at) = values.iter().position(|v| *v == value)
                    {
                        values.swap_remove(at);
                    }
                }
                prop_assert_eq!(table.len(), model.values().map(Vec::len).sum::<usize>());
                for (tag, values) in &model {
                    let mut found = Vec::new();
                    table.find(*tag, |v| {
                        found.push(v);
                        false
                    });
                    found.sort_unstable();
                    let mut expected = values.clone();
                    expected.sort_unstable();
                    prop_assert_eq!(found, expected);
                }
            }
        }
    }

    #[test]
    fn hashes_depend_on_every_byte_and_the_seed() {
        let base = hash_bytes(1, b"src/parser/store_12.rs");
        assert_ne!(base, hash_bytes(1, b"src/parser/store_13.rs"));
        assert_ne!(base, hash_bytes(2, b"src/parser/store_12.rs"));
        assert_ne!(hash_bytes(1, b""), hash_bytes(1, b"\0"));
        assert_ne!(hash_u64(1, 7), hash_u64(1, 8));
    }
}

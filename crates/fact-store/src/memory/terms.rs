//! [`Terms`]: the in-memory store's inverted index over its valid facts, keyed by record
//! number.
//!
//! It answers exactly as `index::TermIndex` (which the SQLite store's cache keeps) and as
//! the brute-force `scan_scores`: the same analyzer, the same statistics (live document
//! frequency, document count, total length), and the same arithmetic, term at a time in
//! query order through [`TermWeighting::accumulate`]. What differs is the layout:
//!
//! - a fact's slot is its record number, so there is no slot table and no slot field;
//! - a posting is one `u32`, the record number shifted left by 4 and the term frequency in
//!   the low 4 bits (15 means "15 or more": the exact count is in `big_tf`), so the index
//!   holds 4 bytes per posting instead of 8 (the record number is below 2^28, a limit of
//!   268 million versions per store; beyond it facts are stored but not indexed);
//! - a fact's term list is not kept (it would cost as much as its postings): removing a
//!   fact analyzes its text again, a dictionary lookup per word, since every word of an
//!   indexed fact is in the dictionaries;
//! - words and term texts are kept in small dictionaries of the index's own, not in the
//!   store's arena: they are few (tens of thousands in a store of a million facts), so
//!   they stay in cache while every word of every fact is looked up, where probing the
//!   store's large symbol table would miss the cache. A word of at most 16 bytes (nearly
//!   all of them) is its own key, packed into an integer ([`ShortWords`]: one probe, an
//!   integer compare, the term in the slot); a longer one goes through a [`Dict`] (one
//!   string, end offsets and a [`Table`]), as do term texts. Each distinct word is stemmed
//!   once.
//!
//! Scoring decodes postings 256 at a time into `(slot, tf)` pairs on the stack and hands
//! them to `accumulate`. Postings of facts that stopped being valid stay in their lists
//! (their length is [`DEAD`]) until dead postings outnumber live ones; then
//! [`Terms::drop_dead`] removes them.

use super::symbols::NIL;
use super::table::{IntMap, Table, hash_bytes, hash_u128};
use crate::index::pack_word;
use crate::{Analyzer, TermWeighting};

/// One slot of [`ShortWords`]: a packed word and its term, or empty (`term` [`NIL`]).
#[derive(Debug, Clone, Copy)]
struct WordSlot {
    key: [u64; 2],
    term: u32,
}

const EMPTY_WORD: WordSlot = WordSlot {
    key: [0, 0],
    term: NIL,
};

/// Words of at most 16 bytes → their term, keyed by the word packed into an integer
/// (`index::pack_word`): linear probing in a power-of-two array at most 7/8 full.
#[derive(Debug, Default)]
struct ShortWords {
    seed: u64,
    slots: Vec<WordSlot>,
    len: usize,
}

fn split(key: u128) -> [u64; 2] {
    [key as u64, (key >> 64) as u64]
}

impl ShortWords {
    fn home(&self, key: u128) -> usize {
        hash_u128(self.seed, key) as usize & self.slots.len().wrapping_sub(1)
    }

    fn find(&self, key: u128) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        let key = split(key);
        loop {
            let slot = self.slots.get(at)?;
            if slot.term == NIL {
                return None;
            }
            if slot.key == key {
                return Some(slot.term);
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds a word that is not present.
    fn insert(&mut self, key: u128, term: u32) {
        if (self.len + 1) * 8 > self.slots.len() * 7 {
            let capacity = (self.slots.len() * 2).max(64);
            let old = std::mem::replace(&mut self.slots, vec![EMPTY_WORD; capacity]);
            self.len = 0;
            for slot in old.into_iter().filter(|s| s.term != NIL) {
                self.insert(
                    u128::from(slot.key[0]) | (u128::from(slot.key[1]) << 64),
                    slot.term,
                );
            }
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        while let Some(slot) = self.slots.get_mut(at) {
            if slot.term == NIL {
                *slot = WordSlot {
                    key: split(key),
                    term,
                };
                self.len += 1;
                return;
            }
            at = (at + 1) & mask;
        }
    }
}

/// A small interner: text → dense index, the texts back to back in one string.
#[derive(Debug, Default)]
struct Dict {
    seed: u64,
    table: Table,
    text: String,
    /// By index: where its text ends in `text` (it starts where the previous one ends).
    ends: Vec<u32>,
}

impl Dict {
    fn new(seed: u64) -> Dict {
        Dict {
            seed,
            ..Dict::default()
        }
    }

    fn get(&self, index: u32) -> &str {
        let at = index as usize;
        let start = match at.checked_sub(1) {
            Some(before) => self.ends.get(before).map_or(0, |e| *e as usize),
            None => 0,
        };
        let end = self.ends.get(at).map_or(start, |e| *e as usize);
        self.text.get(start..end).unwrap_or_default()
    }

    fn tag(&self, text: &str) -> u32 {
        hash_bytes(self.seed, text.as_bytes())
    }

    fn find(&self, tag: u32, text: &str) -> Option<u32> {
        self.table.find(tag, |index| self.get(index) == text)
    }

    /// Adds `text` (not yet present) under `tag`; returns its index.
    fn add(&mut self, tag: u32, text: &str) -> u32 {
        let index = u32::try_from(self.ends.len()).unwrap_or(NIL);
        self.text.push_str(text);
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
        self.table.insert(tag, index);
        index
    }
}

/// The length of a record that is not indexed.
const DEAD: u32 = u32::MAX;

/// Low bits of a posting that hold the term frequency.
const TF_BITS: u32 = 4;
const TF_MASK: u32 = (1 << TF_BITS) - 1;

/// The largest record number a posting can hold.
pub(super) const MAX_RID: u32 = (1 << (32 - TF_BITS)) - 1;

/// Postings decoded per call of `accumulate`.
const BATCH: usize = 256;

/// One term: its live document frequency and its postings (in insertion order, mostly
/// record order; dead ones included until [`Terms::drop_dead`]).
#[derive(Debug, Default)]
struct Term {
    df: u32,
    postings: Vec<u32>,
}

/// The texts of a fact the index holds, in the order `Analyzer::analyze_fact` reads them.
pub(super) type Texts<'a> = [Option<&'a str>; 4];

/// The inverted index; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Terms {
    /// By term id.
    terms: Vec<Term>,
    /// The texts of the terms, indexed by term id.
    texts: Dict,
    /// Analyzed (lowercased) words of at most 16 bytes, with their terms.
    short_words: ShortWords,
    /// Longer analyzed words.
    words: Dict,
    /// By index in `words`: its term.
    word_term: Vec<u32>,
    /// `term << 32 | rid` → the frequency, for frequencies of 15 or more.
    big_tf: IntMap<u64, u32>,
    /// By record number: the length in terms of an indexed fact, or [`DEAD`].
    lens: Vec<u32>,
    docs: usize,
    total_len: u64,
    live_postings: usize,
    dead_postings: usize,
    /// Scratch: the `(term, count)` pairs of the fact being indexed.
    counts: Vec<(u32, u32)>,
}

fn posting(rid: u32, tf: u32) -> u32 {
    (rid << TF_BITS) | tf.min(TF_MASK)
}

fn big_key(term: u32, rid: u32) -> u64 {
    (u64::from(term) << 32) | u64::from(rid)
}

/// Adds one occurrence of `term` to `counts`.
fn count(counts: &mut Vec<(u32, u32)>, term: u32) {
    match counts.iter_mut().find(|(t, _)| *t == term) {
        Some((_, n)) => *n += 1,
        None => counts.push((term, 1)),
    }
}

impl Terms {
    /// An empty index whose dictionaries hash with `seed`.
    pub(super) fn new(seed: u64) -> Terms {
        Terms {
            texts: Dict::new(seed ^ 3),
            short_words: ShortWords {
                seed: seed ^ 5,
                ..ShortWords::default()
            },
            words: Dict::new(seed ^ 4),
            ..Terms::default()
        }
    }

    /// Whether `rid` is indexed.
    #[cfg(test)]
    pub(super) fn is_indexed(&self, rid: u32) -> bool {
        self.lens.get(rid as usize).is_some_and(|len| *len != DEAD)
    }

    /// The live document frequency of every term whose text is `term`, for tests.
    #[cfg(test)]
    pub(super) fn df(&self, term: &str) -> u32 {
        self.texts
            .find(self.texts.tag(term), term)
            .and_then(|id| self.terms.get(id as usize))
            .map_or(0, |t| t.df)
    }

    /// The number of indexed facts.
    #[cfg(test)]
    pub(super) fn docs(&self) -> usize {
        self.docs
    }

    /// The term of an analyzed word, created on first sight (each distinct word is
    /// stemmed once).
    fn term_for_word(&mut self, word: &str, analyzer: &Analyzer) -> u32 {
        let packed = pack_word(word.as_bytes());
        if let Some(key) = packed {
            if let Some(term) = self.short_words.find(key) {
                return term;
            }
        } else if let Some(w) = self.words.find(self.words.tag(word), word) {
            return self.word_term.get(w as usize).copied().unwrap_or(NIL);
        }
        let text = analyzer.term_of(word);
        let text_tag = self.texts.tag(&text);
        let term = match self.texts.find(text_tag, &text) {
            Some(term) => term,
            None => {
                self.terms.push(Term::default());
                self.texts.add(text_tag, &text)
            }
        };
        match packed {
            Some(key) => self.short_words.insert(key, term),
            None => {
                self.words.add(self.words.tag(word), word);
                self.word_term.push(term);
            }
        }
        term
    }

    /// The term of an analyzed word if the index has it, else the term's text.
    fn find_word(&self, word: &str, analyzer: &Analyzer) -> Result<u32, String> {
        let found = match pack_word(word.as_bytes()) {
            Some(key) => self.short_words.find(key),
            None => self
                .words
                .find(self.words.tag(word), word)
                .and_then(|w| self.word_term.get(w as usize).copied()),
        };
        if let Some(term) = found {
            return Ok(term);
        }
        let text = analyzer.term_of(word);
        self.texts.find(self.texts.tag(&text), &text).ok_or(text)
    }

    /// The `(term, count)` pairs of `texts` for a fact that is indexed (so every term
    /// exists), into `out`; returns the length in terms.
    fn existing_counts(
        &self,
        texts: Texts<'_>,
        analyzer: &Analyzer,
        out: &mut Vec<(u32, u32)>,
    ) -> u32 {
        out.clear();
        let mut len = 0u32;
        for text in texts.into_iter().flatten() {
            analyzer.for_each_word(text, |word| {
                len = len.saturating_add(1);
                if let Ok(term) = self.find_word(word, analyzer) {
                    count(out, term);
                }
            });
        }
        len
    }

    /// Indexes the valid fact in record `rid` with texts `texts`. A record number beyond
    /// [`MAX_RID`] is not indexed.
    pub(super) fn insert(&mut self, rid: u32, texts: Texts<'_>, analyzer: &Analyzer) {
        if rid > MAX_RID {
            tracing::error!(
                rid,
                "record number beyond the term index's limit: not indexed"
            );
            return;
        }
        let mut counts = std::mem::take(&mut self.counts);
        counts.clear();
        let mut len = 0u32;
        for text in texts.into_iter().flatten() {
            analyzer.for_each_word(text, |word| {
                len = len.saturating_add(1);
                let term = self.term_for_word(word, analyzer);
                count(&mut counts, term);
            });
        }
        for &(term, tf) in &counts {
            self.add_posting(term, rid, tf);
        }
        self.live_postings += counts.len();
        self.counts = counts;
        let at = rid as usize;
        if self.lens.len() <= at {
            self.lens.resize(at + 1, DEAD);
        }
        if let Some(slot) = self.lens.get_mut(at) {
            *slot = len.min(DEAD - 1);
        }
        self.docs += 1;
        self.total_len += u64::from(len);
    }

    fn add_posting(&mut self, term: u32, rid: u32, tf: u32) {
        if let Some(t) = self.terms.get_mut(term as usize) {
            t.df += 1;
            t.postings.push(posting(rid, tf));
            if tf >= TF_MASK {
                self.big_tf.insert(big_key(term, rid), tf);
            }
        }
    }

    /// Unindexes the fact in record `rid`, whose texts are `texts` (it stopped being
    /// valid or was removed); its postings die.
    pub(super) fn remove(&mut self, rid: u32, texts: Texts<'_>, analyzer: &Analyzer) {
        let Some(&len) = self.lens.get(rid as usize) else {
            return;
        };
        if len == DEAD {
            return;
        }
        let mut counts = std::mem::take(&mut self.counts);
        self.existing_counts(texts, analyzer, &mut counts);
        for &(term, _) in &counts {
            if let Some(t) = self.terms.get_mut(term as usize) {
                t.df = t.df.saturating_sub(1);
            }
        }
        if let Some(slot) = self.lens.get_mut(rid as usize) {
            *slot = DEAD;
        }
        self.total_len = self.total_len.saturating_sub(u64::from(len));
        self.live_postings = self.live_postings.saturating_sub(counts.len());
        self.dead_postings += counts.len();
        self.docs = self.docs.saturating_sub(1);
        self.counts = counts;
    }

    /// Re-indexes the fact in record `rid` whose texts changed from those with the term
    /// counts `old_counts` (from [`counts_of`](Self::counts_of)) to `new`: its postings
    /// are edited in place, so its record number stays its slot.
    pub(super) fn replace(
        &mut self,
        rid: u32,
        old_counts: Vec<(u32, u32)>,
        new: Texts<'_>,
        analyzer: &Analyzer,
    ) {
        let Some(&old_len) = self.lens.get(rid as usize) else {
            return;
        };
        if old_len == DEAD {
            return;
        }
        let mut counts = std::mem::take(&mut self.counts);
        counts.clear();
        let mut len = 0u32;
        for text in new.into_iter().flatten() {
            analyzer.for_each_word(text, |word| {
                len = len.saturating_add(1);
                let term = self.term_for_word(word, analyzer);
                count(&mut counts, term);
            });
        }
        for &(term, tf) in &old_counts {
            let now = counts.iter().find(|(t, _)| *t == term).map(|(_, n)| *n);
            if now == Some(tf) {
                continue;
            }
            let Some(t) = self.terms.get_mut(term as usize) else {
                continue;
            };
            let Some(at) = t.postings.iter().rposition(|p| p >> TF_BITS == rid) else {
                continue;
            };
            self.big_tf.remove(&big_key(term, rid));
            match now {
                Some(tf) => {
                    if let Some(p) = t.postings.get_mut(at) {
                        *p = posting(rid, tf);
                    }
                    if tf >= TF_MASK {
                        self.big_tf.insert(big_key(term, rid), tf);
                    }
                }
                None => {
                    // Posting order does not matter to scoring: every slot has one
                    // accumulator.
                    t.postings.swap_remove(at);
                    t.df = t.df.saturating_sub(1);
                    self.live_postings = self.live_postings.saturating_sub(1);
                }
            }
        }
        for &(term, tf) in &counts {
            if !old_counts.iter().any(|(t, _)| *t == term) {
                self.add_posting(term, rid, tf);
                self.live_postings += 1;
            }
        }
        self.counts = counts;
        if let Some(slot) = self.lens.get_mut(rid as usize) {
            *slot = len.min(DEAD - 1);
        }
        self.total_len = self.total_len - u64::from(old_len) + u64::from(len);
    }

    /// The `(term, count)` pairs of an indexed fact's `texts`, for
    /// [`replace`](Self::replace).
    pub(super) fn counts_of(&self, texts: Texts<'_>, analyzer: &Analyzer) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        self.existing_counts(texts, analyzer, &mut out);
        out
    }

    /// Whether enough postings are dead that dropping them pays off.
    pub(super) fn wants_rebuild(&self) -> bool {
        self.dead_postings > 1024 && self.dead_postings > self.live_postings
    }

    /// Drops the postings of records that are no longer indexed.
    pub(super) fn drop_dead(&mut self) {
        let lens = &self.lens;
        let live = |rid: u32| lens.get(rid as usize).is_some_and(|len| *len != DEAD);
        for term in &mut self.terms {
            term.postings.retain(|p| live(p >> TF_BITS));
            if term.postings.capacity() > 2 * term.postings.len() + 4 {
                term.postings.shrink_to_fit();
            }
        }
        self.big_tf.retain(|key, _| live(*key as u32));
        self.dead_postings = 0;
    }

    /// Scores every indexed fact that contains a term of `text`; calls `each(rid, score)`
    /// for those with a score above zero, in record order.
    pub(super) fn score(
        &self,
        text: &str,
        analyzer: &Analyzer,
        weighting: &dyn TermWeighting,
        mut each: impl FnMut(u32, f64),
    ) {
        // The distinct terms of the query in first-appearance order: known ones by id,
        // unknown ones only counted (they still dilute a keyword-overlap score).
        let mut known: Vec<u32> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        analyzer.for_each_word(text, |word| match self.find_word(word, analyzer) {
            Ok(id) => {
                if !known.contains(&id) {
                    known.push(id);
                }
            }
            Err(term) => {
                if !unknown.contains(&term) {
                    unknown.push(term);
                }
            }
        });
        let query_terms = known.len() + unknown.len();
        let avg = if self.docs == 0 {
            0.0
        } else {
            self.total_len as f64 / self.docs as f64
        };
        let mut scores = vec![0.0f64; self.lens.len()];
        let mut decoded = [(0u32, 0u32); BATCH];
        for id in known {
            let Some(term) = self.terms.get(id as usize) else {
                continue;
            };
            if term.df == 0 {
                continue;
            }
            let weight = weighting.term_weight(term.df as usize, self.docs, query_terms);
            // Dead slots are scored too (their postings stay until they are dropped) and
            // left out below: cheaper than a branch per posting.
            for chunk in term.postings.chunks(BATCH) {
                for (out, &p) in decoded.iter_mut().zip(chunk) {
                    let (rid, tf) = (p >> TF_BITS, p & TF_MASK);
                    *out = (rid, tf);
                    if tf == TF_MASK {
                        out.1 = self.big_tf.get(&big_key(id, rid)).copied().unwrap_or(tf);
                    }
                }
                let pairs = decoded.get(..chunk.len()).unwrap_or_default();
                weighting.accumulate(weight, avg, pairs, &self.lens, &mut scores);
            }
        }
        for (rid, (&score, &len)) in (0u32..).zip(scores.iter().zip(&self.lens)) {
            if score > 0.0 && len != DEAD {
                each(rid, score);
            }
        }
    }
}

//! The term index: an [`Analyzer`] that turns text into terms, and the inverted index the
//! in-memory store keeps over its valid facts, so retrieval scores only the facts that
//! share a term with the query.
//!
//! Scoring formulas are not the store's business: a [`TermWeighting`] (keyword overlap,
//! BM25, …) supplies them, and the store applies them term at a time over its postings.
//! Every score is a sum, in query-term order, of `term_weight × tf_weight` over the query
//! terms a fact contains, so a brute-force scan with the same weighting gives the same
//! numbers bit for bit.

use std::collections::HashMap;
use std::fmt::Debug;

use fact_model::{FactId, SessionFact, Tag, Tags, Timestamp};
use rust_stemmers::{Algorithm, Stemmer};

/// The words of `text`: runs of letters and digits, where a run of ASCII letters followed
/// by `:` and digits is one word, an id (`task:12`, `issue:7`). Ids name things: `task:12`
/// matches `task:12`, not every text that says "task".
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.char_indices().find(|(_, c)| c.is_alphanumeric())?.0;
        let from_start = rest.get(start..)?;
        let len = from_start
            .char_indices()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(from_start.len(), |(i, _)| i);
        let mut end = start + len;
        let word = rest.get(start..end)?;
        if word.bytes().all(|b| b.is_ascii_alphabetic()) {
            let after = rest.get(end..).unwrap_or_default();
            let digits = after
                .strip_prefix(':')
                .map_or(0, |d| d.bytes().take_while(u8::is_ascii_digit).count());
            if digits > 0 {
                end += 1 + digits;
            }
        }
        let word = rest.get(start..end)?;
        rest = rest.get(end..).unwrap_or_default();
        Some(word)
    })
}

/// Words too common to say anything about relevance (compared after lowercasing), sorted
/// so that lookups are a binary search: English function words, and the parts every file
/// path shares (`src`, extensions such as `rs`, `ts`, `md`), which would otherwise tie every
/// file fact to every query naming a file.
pub const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "did", "do", "does",
    "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "js", "json", "jsx", "md", "me", "my", "of", "on", "or", "our", "py", "rs", "s",
    "she", "so", "src", "t", "that", "the", "their", "them", "there", "they", "this", "to", "toml",
    "ts", "tsx", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will",
    "with", "would", "yaml", "yml", "you", "your",
];

/// How text becomes index terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalyzerConfig {
    /// Reduce English words to their Snowball (Porter2) stem, so `parsers`, `parsing` and
    /// `parse` meet (default true).
    pub stemming: bool,
}

impl Default for AnalyzerConfig {
    fn default() -> Self {
        AnalyzerConfig { stemming: true }
    }
}

/// Turns text into terms: lowercase, split on every character that is not a letter or a
/// digit (this covers the seed's `/ - _ . , : ; ( ) [ ] { }` and whitespace, and also `?`,
/// `'` and the like) except that an id like `task:12` (ASCII letters, `:`, digits) stays
/// one term, drop [`STOPWORDS`], and optionally stem ASCII words.
///
/// The index and the queries must use one analyzer: a store exposes its own through
/// [`SessionFactStore::analyzer`](crate::SessionFactStore::analyzer).
///
/// ```
/// use fact_store::{Analyzer, AnalyzerConfig};
///
/// let plain = Analyzer::new(AnalyzerConfig { stemming: false });
/// assert_eq!(plain.analyze("What is src/core/parser_v2.ts?"), ["core", "parser", "v2"]);
/// let stemmed = Analyzer::default();
/// assert_eq!(stemmed.analyze("Parsing the parsers"), ["pars", "parser"]);
/// ```
pub struct Analyzer {
    config: AnalyzerConfig,
    stemmer: Stemmer,
}

impl Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("config", &self.config)
            .finish()
    }
}

impl Clone for Analyzer {
    fn clone(&self) -> Self {
        Analyzer::new(self.config)
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer::new(AnalyzerConfig::default())
    }
}

impl Analyzer {
    /// An analyzer with this configuration.
    #[must_use]
    pub fn new(config: AnalyzerConfig) -> Self {
        Analyzer {
            config,
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> AnalyzerConfig {
        self.config
    }

    /// The terms of `text`, in order, repeats included.
    #[must_use]
    pub fn analyze(&self, text: &str) -> Vec<String> {
        let mut terms = Vec::new();
        self.analyze_into(text, &mut terms);
        terms
    }

    /// The terms of a fact: its subject, relation, object and statement, each analyzed on
    /// its own. This is the text the index holds for the fact.
    #[must_use]
    pub fn analyze_fact(&self, fact: &SessionFact) -> Vec<String> {
        let mut terms = Vec::new();
        for field in [fact.subject(), fact.relation(), fact.object()] {
            self.analyze_into(field, &mut terms);
        }
        if let Some(statement) = fact.statement() {
            self.analyze_into(statement, &mut terms);
        }
        terms
    }

    fn analyze_into(&self, text: &str, terms: &mut Vec<String>) {
        self.for_each_word(text, |word| terms.push(self.term_of(word)));
    }

    /// Calls `f` with every lowercased, non-stopword word of `text`, in order.
    pub(crate) fn for_each_word(&self, text: &str, mut f: impl FnMut(&str)) {
        let mut lower = String::new();
        for word in words(text) {
            // Words already lowercase ASCII (most of them) need no copy.
            if word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':')
            {
                if STOPWORDS.binary_search(&word).is_err() {
                    f(word);
                }
                continue;
            }
            lower.clear();
            if word.is_ascii() {
                lower.push_str(word);
                lower.make_ascii_lowercase();
            } else {
                lower.extend(word.chars().flat_map(char::to_lowercase));
            }
            if STOPWORDS.binary_search(&lower.as_str()).is_err() {
                f(&lower);
            }
        }
    }

    /// The term of a lowercased word: its stem when stemming is on and it is an ASCII word
    /// (the Snowball English stemmer is for English); the word itself otherwise.
    pub(crate) fn term_of(&self, word: &str) -> String {
        if self.config.stemming && word.bytes().all(|b| b.is_ascii_alphabetic()) {
            self.stemmer.stem(word).into_owned()
        } else {
            word.to_owned()
        }
    }
}

/// A scoring formula, applied by the store's [`search`](crate::SessionFactStore::search):
/// a fact's score is the sum, over the distinct query terms it contains, in query order,
/// of `term_weight(…) × tf_weight(…)`.
pub trait TermWeighting: Send + Sync + Debug {
    /// The weight of a query term that `df` of `docs` valid facts contain, in a query of
    /// `query_terms` distinct terms.
    fn term_weight(&self, df: usize, docs: usize, query_terms: usize) -> f64;

    /// The weight of a term occurring `tf` times in a fact of `doc_len` terms, when valid
    /// facts average `avg_doc_len` terms.
    fn tf_weight(&self, tf: u32, doc_len: u32, avg_doc_len: f64) -> f64;

    /// Adds `weight × tf_weight(tf, doc_lens[slot], avg_doc_len)` to `scores[slot]` for
    /// every `(slot, tf)` of `postings`: the inner loop of index scoring, called once per
    /// query term.
    ///
    /// The default is the definition, compiled per implementation so `tf_weight` is
    /// inlined; an override must do the same arithmetic, or index and scan disagree.
    fn accumulate(
        &self,
        weight: f64,
        avg_doc_len: f64,
        postings: &[(u32, u32)],
        doc_lens: &[u32],
        scores: &mut [f64],
    ) {
        for &(slot, tf) in postings {
            if let (Some(&len), Some(score)) =
                (doc_lens.get(slot as usize), scores.get_mut(slot as usize))
            {
                *score += weight * self.tf_weight(tf, len, avg_doc_len);
            }
        }
    }
}

/// What to search for; see [`SessionFactStore::search`](crate::SessionFactStore::search).
#[derive(Debug, Clone, Default)]
pub struct TermQuery<'a> {
    /// The query text; the store analyzes it with its own [`Analyzer`], and repeated
    /// terms count once.
    pub text: &'a str,
    /// Keep only facts carrying any of these tags (`None`: no tag filter).
    pub tags: Option<&'a [Tag]>,
    /// Leave out facts whose source task is this one.
    pub exclude_source_task: Option<&'a str>,
    /// Search the facts valid at this instant instead of the valid ones (a scan, not the index).
    pub as_of: Option<Timestamp>,
    /// The most facts to return.
    pub limit: usize,
}

/// A fact and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredFact {
    /// The fact.
    pub fact: SessionFact,
    /// Its score, greater than zero.
    pub score: f64,
}

/// The distinct terms of `terms`, in first-appearance order.
pub(crate) fn distinct(terms: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::with_capacity(terms.len());
    for term in terms {
        if !out.contains(&term.as_str()) {
            out.push(term);
        }
    }
    out
}

/// The order of results: higher score, then newer `valid_from`, then smaller id.
pub(crate) fn rank_order(
    a: (f64, Timestamp, FactId),
    b: (f64, Timestamp, FactId),
) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2))
}

/// What the index keeps of one indexed fact that scoring does not touch: enough to rank
/// and filter it by tag without looking the fact up, and to unindex it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub(crate) seq: u64,
    pub(crate) valid_from: Timestamp,
    pub(crate) id: FactId,
    pub(crate) tags: Tags,
    /// Where its `(term id, count)` pairs start in [`TermIndex::fact_terms`].
    terms_at: usize,
    /// How many pairs it has.
    terms_len: u32,
}

/// One term of the index: its live document frequency and its postings.
#[derive(Debug, Default)]
struct Term {
    df: u32,
    /// `(slot, tf)`, in slot order; may hold dead slots until a rebuild.
    postings: Vec<(u32, u32)>,
}

/// The length of a dead slot in [`TermIndex::lens`].
const DEAD: u32 = u32::MAX;

/// The inverted index over the valid facts of a store.
///
/// Postings are appended as facts become valid; a fact that stops being valid is marked
/// dead and its postings are skipped until the index is rebuilt, which happens when dead
/// postings outnumber live ones. Scoring reads only `terms`, `lens` and a score array, so
/// its memory traffic is a few bytes per posting.
#[derive(Debug, Default)]
pub(crate) struct TermIndex {
    ids: HashMap<String, u32>,
    /// Lowercased word → its term id: each distinct word is stemmed once.
    words: HashMap<String, u32>,
    /// By term id.
    terms: Vec<Term>,
    /// By slot: the fact's length in terms, or [`DEAD`].
    lens: Vec<u32>,
    /// By slot.
    slots: Vec<Slot>,
    /// The `(term id, count)` pairs of every slot, back to back: one arena instead of an
    /// allocation per fact.
    fact_terms: Vec<(u32, u32)>,
    docs: usize,
    total_len: u64,
    live_postings: usize,
    dead_postings: usize,
}

impl TermIndex {
    /// The id of `term`, created on first sight.
    fn term_id(&mut self, term: String) -> u32 {
        if let Some(id) = self.ids.get(&term) {
            return *id;
        }
        let id = u32::try_from(self.terms.len()).unwrap_or(u32::MAX);
        self.ids.insert(term, id);
        self.terms.push(Term::default());
        id
    }

    /// The id of an analyzed word, if the index has its term.
    fn lookup(&self, word: &str, analyzer: &Analyzer) -> Option<u32> {
        match self.words.get(word) {
            Some(id) => Some(*id),
            None => self.ids.get(&analyzer.term_of(word)).copied(),
        }
    }

    /// Indexes a valid fact stored under `seq` with the terms `analyzer` gives it (as
    /// [`Analyzer::analyze_fact`] would); returns its slot.
    pub(crate) fn insert(&mut self, seq: u64, fact: &SessionFact, analyzer: &Analyzer) -> u32 {
        let slot = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        let mut len = 0u32;
        let terms_at = self.fact_terms.len();
        let fields = [fact.subject(), fact.relation(), fact.object()];
        for field in fields.into_iter().chain(fact.statement()) {
            analyzer.for_each_word(field, |word| {
                let id = match self.words.get(word) {
                    Some(id) => *id,
                    None => {
                        let id = self.term_id(analyzer.term_of(word));
                        self.words.insert(word.to_owned(), id);
                        id
                    }
                };
                len = len.saturating_add(1);
                let counts = self.fact_terms.get_mut(terms_at..).unwrap_or_default();
                match counts.iter_mut().find(|(t, _)| *t == id) {
                    Some((_, count)) => *count += 1,
                    None => self.fact_terms.push((id, 1)),
                }
            });
        }
        let counts = self.fact_terms.get(terms_at..).unwrap_or_default();
        for &(id, tf) in counts {
            if let Some(term) = self.terms.get_mut(id as usize) {
                term.df += 1;
                term.postings.push((slot, tf));
            }
        }
        let terms_len = u32::try_from(counts.len()).unwrap_or(u32::MAX);
        self.live_postings += counts.len();
        self.docs += 1;
        self.total_len += u64::from(len);
        self.lens.push(len.min(DEAD - 1));
        self.slots.push(Slot {
            seq,
            valid_from: fact.valid_from(),
            id: fact.id(),
            tags: *fact.tags(),
            terms_at,
            terms_len,
        });
        slot
    }

    /// Unindexes the fact in `slot` (it stopped being valid or was removed).
    pub(crate) fn remove(&mut self, slot: u32) {
        let (Some(len), Some(entry)) = (
            self.lens.get_mut(slot as usize),
            self.slots.get(slot as usize),
        ) else {
            return;
        };
        if *len == DEAD {
            return;
        }
        self.total_len = self.total_len.saturating_sub(u64::from(*len));
        *len = DEAD;
        let pairs = entry.terms_len as usize;
        let counts = self
            .fact_terms
            .get(entry.terms_at..entry.terms_at + pairs)
            .unwrap_or_default();
        for &(id, _) in counts {
            if let Some(term) = self.terms.get_mut(id as usize) {
                term.df = term.df.saturating_sub(1);
            }
        }
        self.live_postings = self.live_postings.saturating_sub(pairs);
        self.dead_postings += pairs;
        self.docs = self.docs.saturating_sub(1);
    }

    /// Whether enough postings are dead that a rebuild pays off.
    pub(crate) fn wants_rebuild(&self) -> bool {
        self.dead_postings > 1024 && self.dead_postings > self.live_postings
    }

    /// Drops dead slots and postings; returns the new slot of every live fact's `seq`.
    pub(crate) fn rebuild(&mut self) -> Vec<(u64, u32)> {
        let mut renumber = vec![u32::MAX; self.slots.len()];
        let mut slots = Vec::with_capacity(self.docs);
        let mut lens = Vec::with_capacity(self.docs);
        let mut fact_terms = Vec::with_capacity(self.live_postings);
        let old_slots = std::mem::take(&mut self.slots);
        for (old, (mut slot, len)) in old_slots
            .into_iter()
            .zip(std::mem::take(&mut self.lens))
            .enumerate()
        {
            if len != DEAD {
                if let Some(entry) = renumber.get_mut(old) {
                    *entry = u32::try_from(slots.len()).unwrap_or(u32::MAX);
                }
                let end = slot.terms_at + slot.terms_len as usize;
                let pairs = self.fact_terms.get(slot.terms_at..end).unwrap_or_default();
                slot.terms_at = fact_terms.len();
                fact_terms.extend_from_slice(pairs);
                slots.push(slot);
                lens.push(len);
            }
        }
        self.fact_terms = fact_terms;
        for term in &mut self.terms {
            term.postings
                .retain_mut(|(slot, _)| match renumber.get(*slot as usize) {
                    Some(&new) if new != u32::MAX => {
                        *slot = new;
                        true
                    }
                    _ => false,
                });
        }
        self.slots = slots;
        self.lens = lens;
        self.dead_postings = 0;
        self.slots
            .iter()
            .enumerate()
            .map(|(slot, entry)| (entry.seq, u32::try_from(slot).unwrap_or(u32::MAX)))
            .collect()
    }

    /// The live fact in `slot`.
    pub(crate) fn entry(&self, slot: u32) -> Option<&Slot> {
        let live = self.lens.get(slot as usize).is_some_and(|len| *len != DEAD);
        self.slots.get(slot as usize).filter(|_| live)
    }

    /// Scores every live fact that contains a term of `text`; returns `(slot, score)`
    /// pairs with a score above zero, in slot order.
    pub(crate) fn score(
        &self,
        text: &str,
        analyzer: &Analyzer,
        weighting: &dyn TermWeighting,
    ) -> Vec<(u32, f64)> {
        // The distinct terms of the query in first-appearance order: known ones by id,
        // unknown ones only counted (they still dilute a keyword-overlap score).
        let mut known: Vec<u32> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        analyzer.for_each_word(text, |word| match self.lookup(word, analyzer) {
            Some(id) => {
                if !known.contains(&id) {
                    known.push(id);
                }
            }
            None => {
                let term = analyzer.term_of(word);
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
        for id in known {
            let Some(term) = self.terms.get(id as usize) else {
                continue;
            };
            if term.df == 0 {
                continue;
            }
            let weight = weighting.term_weight(term.df as usize, self.docs, query_terms);
            // Dead slots are scored too (their postings stay until a rebuild) and dropped
            // below: cheaper than a branch per posting.
            weighting.accumulate(weight, avg, &term.postings, &self.lens, &mut scores);
        }
        scores
            .iter()
            .zip(&self.lens)
            .enumerate()
            .filter(|(_, (score, len))| **score > 0.0 && **len != DEAD)
            .map(|(at, (score, _))| (u32::try_from(at).unwrap_or(u32::MAX), *score))
            .collect()
    }
}

/// Scores `facts` by a brute-force scan, exactly as the index does: statistics over all of
/// `facts`, terms in query order. Used for `as_of` searches and by tests as the reference.
pub(crate) fn scan_scores<'f>(
    analyzer: &Analyzer,
    facts: impl Iterator<Item = &'f SessionFact>,
    text: &str,
    weighting: &dyn TermWeighting,
) -> Vec<(&'f SessionFact, f64)> {
    let analyzed = analyzer.analyze(text);
    let terms = distinct(&analyzed);
    let terms = terms.as_slice();
    let docs: Vec<(&SessionFact, Vec<String>)> =
        facts.map(|f| (f, analyzer.analyze_fact(f))).collect();
    let total: u64 = docs.iter().map(|(_, t)| t.len() as u64).sum();
    let avg = if docs.is_empty() {
        0.0
    } else {
        total as f64 / docs.len() as f64
    };
    let df = |term: &str| {
        docs.iter()
            .filter(|(_, t)| t.iter().any(|x| x == term))
            .count()
    };
    let weights: Vec<Option<f64>> = terms
        .iter()
        .map(|term| {
            let df = df(term);
            (df > 0).then(|| weighting.term_weight(df, docs.len(), terms.len()))
        })
        .collect();
    docs.iter()
        .filter_map(|(fact, doc)| {
            let mut score = 0.0;
            let len = u32::try_from(doc.len()).unwrap_or(u32::MAX);
            for (term, weight) in terms.iter().zip(&weights) {
                let tf = doc.iter().filter(|t| t == term).count();
                if let (Some(weight), true) = (weight, tf > 0) {
                    score += weight
                        * weighting.tf_weight(u32::try_from(tf).unwrap_or(u32::MAX), len, avg);
                }
            }
            (score > 0.0).then_some((*fact, score))
        })
        .collect()
}

/// The best `k` results seen so far, by [`rank_order`].
pub(crate) struct TopK {
    k: usize,
    heap: std::collections::BinaryHeap<Ranked>,
}

/// A result in a max-heap whose top is the worst kept result.
struct Ranked(f64, Timestamp, FactId, u64);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        rank_order((self.0, self.1, self.2), (other.0, other.1, other.2))
    }
}

impl TopK {
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: std::collections::BinaryHeap::with_capacity(k.min(1024) + 1),
        }
    }

    /// Whether a result with this score could be kept (ties need the full rank).
    pub(crate) fn may_admit(&self, score: f64) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|worst| score >= worst.0)
    }

    /// Whether a result with this rank would be kept.
    pub(crate) fn admits(&self, score: f64, valid_from: Timestamp, id: FactId) -> bool {
        self.heap.len() < self.k
            || self.heap.peek().is_some_and(|worst| {
                rank_order((score, valid_from, id), (worst.0, worst.1, worst.2)).is_lt()
            })
    }

    pub(crate) fn push(&mut self, score: f64, valid_from: Timestamp, id: FactId, seq: u64) {
        if self.admits(score, valid_from, id) {
            self.heap.push(Ranked(score, valid_from, id, seq));
            if self.heap.len() > self.k {
                self.heap.pop();
            }
        }
    }

    /// `(score, seq)` pairs, best first.
    pub(crate) fn into_sorted(self) -> Vec<(f64, u64)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| (r.0, r.3))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn analyzer_splits_lowercases_drops_stopwords_and_stems() {
        let plain = Analyzer::new(AnalyzerConfig { stemming: false });
        let check = |analyzer: &Analyzer, text: &str, expect: &[&str]| {
            assert_eq!(analyzer.analyze(text), expect, "{text:?}");
        };
        check(&plain, "", &[]);
        check(&plain, "The Parser's tests", &["parser", "tests"]);
        check(
            &plain,
            "task:12 modified_by src/a-b.rs (x){y}[z];w,v",
            &["task:12", "modified", "b", "x", "y", "z", "w", "v"],
        );
        // What every path shares says nothing: `src` and the extension go.
        check(
            &plain,
            "src/store.rs docs/api.md web/app.tsx",
            &["store", "docs", "api", "web", "app"],
        );
        // `word:digits` is one id term; anything else splits at the colon.
        check(
            &plain,
            "Task:7 and task: 8, v2:3 and a:b",
            &["task:7", "task", "8", "v2", "3", "b"],
        );
        check(&plain, "ÉCOLE über 日本語", &["école", "über", "日本語"]);
        let stemmed = Analyzer::default();
        check(&stemmed, "running runs parsers", &["run", "run", "parser"]);
        check(&stemmed, "école v2 2024", &["école", "v2", "2024"]);
    }
}
